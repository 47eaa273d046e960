"""Headless Chromium: print the report to PDF, read a page's console; read a PDF back (pypdf)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unicodedata
from pathlib import Path

from pypdf import PdfReader

from .style import CHROMIUM_NAMES


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium_cmd(chromium: str, profile_dir: str, *extra: str) -> list[str]:
    """Headless Chromium that stays off the (closed) network."""
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}", *extra]


def print_pdf(html_path: Path, pdf_path: Path, timeout: int = 600) -> None:
    """Print an HTML file to PDF with headless Chromium (waits for MathJax via a time budget)."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("report.pdf needs Chromium: install Debian's 'chromium' package "
                           "(make setup does it as root), or rerun with --no-pdf")
    with tempfile.TemporaryDirectory() as profile_dir:
        tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
        cmd = chromium_cmd(chromium, profile_dir, "--virtual-time-budget=30000",
                           "--run-all-compositor-stages-before-draw", "--no-pdf-header-footer",
                           f"--print-to-pdf={tmp_pdf}", html_path.resolve().as_uri())
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not tmp_pdf.exists() or tmp_pdf.stat().st_size == 0:
            tmp_pdf.unlink(missing_ok=True)
            raise RuntimeError(f"chromium failed to print {html_path.name} (exit {r.returncode}): "
                               f"{(r.stderr or '').strip().splitlines()[-1:]}")
        os.replace(tmp_pdf, pdf_path)


def console_messages(html_path: Path, timeout: int = 120) -> list[str]:
    """Console messages (errors, warnings, failed loads) Chromium logs while loading a page."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("console_messages needs Chromium (Debian package 'chromium')")
    with tempfile.TemporaryDirectory() as profile_dir:
        cmd = chromium_cmd(chromium, profile_dir, "--enable-logging=stderr", "--v=0", "--log-level=0",
                           "--virtual-time-budget=15000", "--dump-dom", html_path.resolve().as_uri())
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln or "ERR_FILE_NOT_FOUND" in ln]


def pdf_text(pdf_path: Path) -> str:
    """Extract the text of a PDF (pypdf) — used by tests to check the report is readable."""
    text = "\n".join(page.extract_text() or "" for page in PdfReader(str(pdf_path)).pages)
    return unicodedata.normalize("NFKC", text)  # undo ligatures such as "fi"


def pdf_image_count(pdf_path: Path) -> int:
    """Number of images embedded in a PDF's pages (pypdf)."""
    return sum(len(page.images) for page in PdfReader(str(pdf_path)).pages)
