"""Headless Chromium: print the report to PDF, read a page's console; read a PDF back (pypdf)."""
from __future__ import annotations

import math
import os
import re
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


#: run first in the printed page: a dialog (alert, confirm, prompt, print) or a "leave page?" prompt
#: would stall headless Chromium until it is killed; the page printed is sanitised already, this
#: keeps any script that got into it from blocking the print
NO_DIALOGS = ("<script>(function(){var f=function(){return null;};['alert','confirm','prompt','print']"
              ".forEach(function(n){Object.defineProperty(window,n,{value:f,writable:false,configurable:false});});"
              "window.addEventListener('beforeunload',function(e){e.stopImmediatePropagation();},true);})();</script>")

#: seconds to print: a base for Chromium's start and MathJax, and an allowance per estimated page
PRINT_BASE_S, PRINT_PER_PAGE_S, PRINT_MAX_S = 60, 3, 600


def estimated_pages(page_html: str) -> int:
    """A generous A4 page count of the printed page: text at ~2500 characters a page, four
    figures or ten table rows a page."""
    body = re.sub(r"<(style|script)\b.*?</\1>", "", page_html, flags=re.S | re.I)  # CSS and MathJax are not text
    text = len(re.sub(r"<[^>]+>", "", body))
    n_img = page_html.count("<img")
    n_rows = page_html.count("<tr")
    return max(1, math.ceil(text / 2500 + n_img / 4 + n_rows / 10))


def print_budget(page_html: str) -> int:
    """The time the PDF step gets for this page: bounded, and scaled to its page count."""
    return min(PRINT_MAX_S, PRINT_BASE_S + PRINT_PER_PAGE_S * estimated_pages(page_html))


def with_no_dialogs(page_html: str) -> str:
    """``page_html`` with :data:`NO_DIALOGS` as the first script of its ``<head>``."""
    m = re.search(r"<head[^>]*>", page_html, flags=re.I)
    if m:
        return page_html[:m.end()] + NO_DIALOGS + page_html[m.end():]
    return NO_DIALOGS + page_html


def print_pdf(html_path: Path, pdf_path: Path, timeout: int | None = None) -> None:
    """Print an HTML file to PDF with headless Chromium (MathJax gets a virtual-time budget).

    The page is printed from a copy with :data:`NO_DIALOGS` first in its head; the time is
    :func:`print_budget` unless ``timeout`` is given. Any failure raises ``RuntimeError`` with
    one line naming the cause; the PDF is written to a temporary file and renamed into place
    only when Chromium succeeded.
    """
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("report.pdf needs Chromium: install Debian's 'chromium' package "
                           "(make setup does it as root), or rerun with --no-pdf")
    page_html = html_path.read_text(encoding="utf-8")
    if timeout is None:
        timeout = print_budget(page_html)
    printed = html_path.with_name(f".{html_path.stem}.print.html")  # beside it: relative paths still resolve
    tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
    try:
        printed.write_text(with_no_dialogs(page_html), encoding="utf-8")
        with tempfile.TemporaryDirectory() as profile_dir:
            cmd = chromium_cmd(chromium, profile_dir, "--virtual-time-budget=30000",
                               "--run-all-compositor-stages-before-draw", "--no-pdf-header-footer",
                               f"--print-to-pdf={tmp_pdf}", printed.resolve().as_uri())
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"chromium did not finish printing {html_path.name} within {timeout} s (the "
                                   f"budget for ~{estimated_pages(page_html)} pages); the HTML report is complete, "
                                   f"rerun with --report-only to try again") from None
        if r.returncode != 0 or not tmp_pdf.exists() or tmp_pdf.stat().st_size == 0:
            last = next((ln.strip() for ln in reversed((r.stderr or "").splitlines())
                         if ln.strip() and "dbus" not in ln), "no message")
            raise RuntimeError(f"chromium failed to print {html_path.name} (exit {r.returncode}): {last}")
        os.replace(tmp_pdf, pdf_path)
    finally:
        tmp_pdf.unlink(missing_ok=True)
        printed.unlink(missing_ok=True)


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
