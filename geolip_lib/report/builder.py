"""Build one profile's report: per-job HTML, ``index.html`` and (optionally) ``report.pdf``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat

from ..params import load_profile
from ..results import REPORTS, atomic_write_text
from .notebook_doc import document_notebook, fill_placeholders, install_mathjax, notebook_html
from .pages import findings_body, index_html
from .printing import print_pdf
from .records import INCOMPLETE, collect
from .style import CSS, PRINT_CSS


def build(profile: str, out_root: Path | None = None, pdf: bool = True) -> list[Path]:
    """Build HTML for every job, ``index.html`` and (optionally) ``report.pdf``.

    Returns the paths of ``index.html`` and ``report.pdf`` (when produced).
    """
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
                try:
                    page = notebook_html(r.path / "executed.ipynb", "../../_static/mathjax")
                except Exception as exc:  # noqa: BLE001 - one unreadable notebook must not take the report down
                    (r.path / "executed.html").unlink(missing_ok=True)
                    r.problems.append(f"{r.path / 'executed.ipynb'}: cannot be converted to HTML "
                                      f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                                      f"rerun the job")
                    continue
                atomic_write_text(r.path / "executed.html", page)
    for recs in groups.values():  # one line per job that did not finish, per thing the report left out
        for r in recs:
            if r.status == INCOMPLETE:
                print(f"warning: {r.notebook} / {r.job_id}: {r.error}", file=sys.stderr)
            for line in r.problems:
                print(f"warning: {line}", file=sys.stderr)
    index = out_root / "index.html"
    atomic_write_text(index, index_html(profile, groups, description, out_root=out_root))
    paths = [index]
    if pdf:
        pdf_path = out_root / "report.pdf"
        try:
            findings = findings_body(profile, groups, description, embed=True, prefix="../", out_root=out_root)
            nb, own = document_notebook(profile, groups, findings)
            combined = out_root / "_static" / "report_document.ipynb"
            atomic_write_text(combined, nbformat.writes(nb))
            doc = fill_placeholders(notebook_html(combined, "mathjax", exclude_input=True), own)
            doc = doc.replace("</head>", f"<style>{CSS}{PRINT_CSS}</style></head>", 1)
            doc_html = out_root / "_static" / "report_document.html"
            atomic_write_text(doc_html, doc)
            print_pdf(doc_html, pdf_path)
            paths.append(pdf_path)
        except (RuntimeError, OSError, ValueError) as exc:
            # a report.pdf of an older run would pass for this one: it goes
            stale = pdf_path.exists()
            pdf_path.unlink(missing_ok=True)
            print(f"warning: report.pdf not written: {exc}"
                  + (" (the report.pdf of an earlier run was removed)" if stale else ""), file=sys.stderr)
    return paths
