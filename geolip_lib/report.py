"""Assemble the findings report of one profile: per-job HTML, ``index.html``, ``report.pdf``.

Reads back what the jobs recorded (``reports/<profile>/<notebook>/<job>/``):

- each ``executed.ipynb`` -> ``executed.html`` (nbconvert, lab template);
- ``index.html``: one section per notebook with the composite table of headline metrics
  across models, each beside its null baseline, links to every executed notebook, and the
  failed jobs with their one-line errors;
- ``report.pdf``: the index followed by every executed notebook (code hidden), printed
  by headless Chromium (Debian ``chromium``), or by nbconvert's LaTeX route when Chromium
  is missing but ``xelatex`` is present.

Math renders offline: MathJax 2.7 is copied from the ``jupyter-server-mathjax`` package
into ``<profile>/_static/mathjax`` and every HTML page points at that copy (the default
CDN is unreachable on a machine without network).
"""
from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .results import REPORTS, atomic_write_text

MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #446;padding-bottom:.2em}h2{margin-top:2em;color:#335}
table.composite{border-collapse:collapse;font-size:.88em;margin:.6em 0 1em}
table.composite th,table.composite td{border:1px solid #ccd;padding:.25em .55em;text-align:right}
table.composite th{background:#eef;text-align:center}table.composite td.model{text-align:left;font-weight:600}
span.base{color:#777;font-size:.85em}.fail{color:#b00}.note{color:#555;font-size:.9em}
a{color:#2a5db0}
"""


@dataclass
class JobRecord:
    notebook: str
    job_id: str
    path: Path
    data: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def collect(out_root: Path) -> dict[str, list[JobRecord]]:
    """Every completed and failed job under ``out_root``, grouped by notebook (sorted)."""
    groups: dict[str, list[JobRecord]] = {}
    for nb_dir in sorted(p for p in out_root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        recs = []
        for job in sorted(nb_dir.iterdir()):
            if job.name.startswith("."):
                continue  # .partial (running or killed) and .old directories never count
            if job.name.endswith(".failed"):
                err = (job / "error.txt").read_text(encoding="utf-8").split("\n", 1)[0] \
                    if (job / "error.txt").exists() else "failed"
                recs.append(JobRecord(nb_dir.name, job.name[:-7], job, error=err))
            elif (job / "metrics.json").exists():
                with open(job / "metrics.json", encoding="utf-8") as fh:
                    recs.append(JobRecord(nb_dir.name, job.name, job, json.load(fh)))
        if recs:
            groups[nb_dir.name] = recs
    return groups


def _fmt(v, fmt: str) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, float)):
        try:
            return format(v, fmt)
        except (ValueError, TypeError):
            return str(v)
    return html.escape(str(v))


def composite_table(records: list[JobRecord]) -> str:
    """HTML table: one row per job, one column per headline metric, 'value (null: b)'."""
    ok = [r for r in records if r.ok]
    keys: list[str] = []
    labels: dict[str, str] = {}
    for r in ok:
        for k, h in r.data.get("headline", {}).items():
            if k not in keys:
                keys.append(k)
                labels[k] = (h or {}).get("label") or k
    if not ok or not keys:
        return "<p class='note'>No headline metrics recorded.</p>"
    head = "".join(f"<th>{html.escape(labels[k])}</th>" for k in keys)
    rows = []
    for r in ok:
        cells = []
        for k in keys:
            h = r.data.get("headline", {}).get(k)
            if h is None:
                cells.append("<td>n/a</td>")
                continue
            fmt = h.get("fmt") or ".4g"
            cell = _fmt(h.get("value"), fmt)
            if h.get("baseline") is not None:
                kind = h.get("baseline_kind") or "null"
                cell += f"<br><span class='base'>{html.escape(kind)}: {_fmt(h['baseline'], fmt)}</span>"
            cells.append(f"<td>{cell}</td>")
        link = f"{r.notebook}/{r.job_id}/executed.html"
        rows.append(f"<tr><td class='model'><a href='{link}'>{html.escape(r.job_id)}</a></td>{''.join(cells)}</tr>")
    return (f"<table class='composite'><thead><tr><th>job</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _title_of(records: list[JobRecord], notebook: str) -> str:
    nb = records[0].path / "executed.ipynb" if records and records[0].ok else Path("/nonexistent")
    try:
        import nbformat

        first = next(c for c in nbformat.read(str(nb), as_version=4).cells if c.cell_type == "markdown")
        line = next(ln for ln in first.source.splitlines() if ln.startswith("#"))
        return line.lstrip("# ").strip()
    except Exception:  # noqa: BLE001 - a title is decoration
        return notebook


def index_html(profile: str, groups: dict[str, list[JobRecord]], description: str = "",
               mathjax: str = "_static/mathjax") -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n_ok = sum(r.ok for rs in groups.values() for r in rs)
    n_fail = sum(not r.ok for rs in groups.values() for r in rs)
    parts = [f"<h1>geolip findings report — profile <code>{html.escape(profile)}</code></h1>",
             f"<p>{html.escape(description)}</p>",
             f"<p class='note'>Generated {now}. {n_ok} completed job(s), {n_fail} failed. "
             "Each headline number is shown above its null baseline (gaussian: isotropic Gaussian "
             "of matched shape and scale; random_init: the same architecture at random init).</p>"]
    toc = "".join(f"<li><a href='#{nb}'>{html.escape(_title_of(rs, nb))}</a></li>" for nb, rs in groups.items())
    parts.append(f"<ol>{toc}</ol>")
    for nb, recs in groups.items():
        parts.append(f"<h2 id='{nb}'>{html.escape(_title_of(recs, nb))}</h2>")
        parts.append(composite_table(recs))
        for r in recs:
            if not r.ok:
                parts.append(f"<p class='fail'>FAILED {html.escape(r.job_id)}: {html.escape(r.error or '')} "
                             f"(<a href='{nb}/{r.job_id}.failed/error.txt'>log</a>)</p>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>geolip — {html.escape(profile)}</title>"
            f"<style>{CSS}</style>"
            f"<script src='{mathjax}/MathJax.js?config={MATHJAX_CONFIG}'></script>"
            f"</head><body>{body}</body></html>")


def install_mathjax(out_root: Path) -> Path:
    """Copy MathJax 2.7 (from the jupyter-server-mathjax package) into ``_static/mathjax``."""
    import jupyter_server_mathjax

    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = out_root / "_static" / "mathjax"
    if not (dest / "MathJax.js").exists():
        tmp = out_root / "_static" / ".mathjax.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest


def notebook_html(executed: Path, mathjax_rel: str, exclude_input: bool = False) -> str:
    from nbconvert import HTMLExporter

    exp = HTMLExporter(template_name="lab", exclude_input=exclude_input)
    exp.mathjax_url = f"{mathjax_rel}/MathJax.js?config={MATHJAX_CONFIG}"
    body, _ = exp.from_filename(str(executed))
    return body


def combined_notebook(profile: str, groups: dict[str, list[JobRecord]], index_body: str):
    """One notebook: the index tables, then every executed notebook (for the PDF)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(index_body))
    for name, recs in groups.items():
        for r in recs:
            if not r.ok:
                continue
            nb.cells.append(nbformat.v4.new_markdown_cell(f"<h1 style='page-break-before:always'>"
                                                          f"{html.escape(name)} — {html.escape(r.job_id)}</h1>"))
            ex = nbformat.read(str(r.path / "executed.ipynb"), as_version=4)
            nb.cells.extend(c for c in ex.cells if "parameters" not in c.get("metadata", {}).get("tags", []))
    for i, cell in enumerate(nb.cells):  # cells of different notebooks may share ids
        cell["id"] = f"cell-{i}"
    return nb


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        p = shutil.which(name)
        if p:
            return p
    return None


def print_pdf(html_path: Path, pdf_path: Path, timeout: int = 600) -> None:
    """Print an HTML file to PDF with headless Chromium (waits for MathJax via a time budget)."""
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("report.pdf needs Chromium: install Debian's 'chromium' package "
                           "(make setup does it as root), or rerun with --no-pdf")
    with tempfile.TemporaryDirectory() as profile_dir:
        tmp_pdf = pdf_path.with_name(f".{pdf_path.name}.tmp")
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}", "--virtual-time-budget=20000",
               "--run-all-compositor-stages-before-draw", "--no-pdf-header-footer",
               f"--print-to-pdf={tmp_pdf}", html_path.resolve().as_uri()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not tmp_pdf.exists() or tmp_pdf.stat().st_size == 0:
            tmp_pdf.unlink(missing_ok=True)
            raise RuntimeError(f"chromium failed to print {html_path.name} (exit {r.returncode}): "
                               f"{(r.stderr or '').strip().splitlines()[-1:] }")
        os.replace(tmp_pdf, pdf_path)


def build(profile: str, out_root: Path | None = None, pdf: bool = True) -> list[Path]:
    """Build HTML for every job, ``index.html`` and (optionally) ``report.pdf``.

    Returns the paths of ``index.html`` and ``report.pdf`` (when produced).
    """
    from .params import load_profile

    out_root = Path(out_root) if out_root else REPORTS / profile
    out_root.mkdir(parents=True, exist_ok=True)
    try:
        prof = load_profile(profile, notebooks_dir=os.environ.get("GEOLIP_NOTEBOOKS") or None)
        profile, description = prof.name, prof.description
    except Exception:  # noqa: BLE001 - the report of an ad-hoc output root has no profile
        description = ""
    install_mathjax(out_root)
    groups = collect(out_root)
    for recs in groups.values():
        for r in recs:
            if r.ok and (r.path / "executed.ipynb").exists():
                page = notebook_html(r.path / "executed.ipynb", "../../_static/mathjax")
                atomic_write_text(r.path / "executed.html", page)
    index = out_root / "index.html"
    index_page = index_html(profile, groups, description)
    atomic_write_text(index, index_page)
    paths = [index]
    if pdf:
        import nbformat

        body_start = index_page.split("<body>", 1)[1].rsplit("</body>", 1)[0]
        nb = combined_notebook(profile, groups, body_start)
        combined = out_root / "_static" / "report_combined.ipynb"
        atomic_write_text(combined, nbformat.writes(nb))
        page = notebook_html(combined, "mathjax", exclude_input=True)
        page = page.replace("</head>", f"<style>{CSS} body{{max-width:none}}</style></head>", 1)
        combined_html = out_root / "_static" / "report_combined.html"
        atomic_write_text(combined_html, page)
        pdf_path = out_root / "report.pdf"
        try:
            print_pdf(combined_html, pdf_path)
            paths.append(pdf_path)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"warning: report.pdf not written: {exc}", file=sys.stderr)
    return paths


def pdf_text(pdf_path: Path) -> str:
    """Extract the text of a PDF (pypdf) — used by tests to check the report is readable."""
    import unicodedata

    from pypdf import PdfReader

    text = "\n".join(page.extract_text() or "" for page in PdfReader(str(pdf_path)).pages)
    return unicodedata.normalize("NFKC", text)  # undo ligatures such as "fi"


__all__ = ["build", "collect", "composite_table", "index_html", "print_pdf", "pdf_text", "install_mathjax"]
