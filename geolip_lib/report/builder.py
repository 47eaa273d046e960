"""Build one profile's report: per-job HTML, ``index.html`` and (optionally) ``report.pdf``."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat

from ..params import load_profile
from ..results import REPORTS, atomic_write_text
from ..roots import RootReadError
from ..runner.jobs import ROOT_PROFILE
from .notebook_doc import (document_notebook, fill_placeholders, glossary_html, install_mathjax, notebook_html,
                           read_executed)
from .pages import findings_body, index_html
from .printing import print_pdf
from .records import INCOMPLETE, collect
from .style import CSS, PRINT_CSS


def recorded_selection(out_root: Path) -> dict | None:
    """The ``--models`` / ``--notebooks`` selection of the root's runs together, as the runner records it
    in ``.profile.json`` (``{"selection": {"models": [...] | None, "notebooks": [...] | None}}``)."""
    try:
        data = json.loads((Path(out_root) / ROOT_PROFILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sel = data.get("selection") if isinstance(data, dict) else None
    if not isinstance(sel, dict):
        return None
    return {k: [str(x) for x in v] if isinstance(v, list) else None for k, v in sel.items()
            if k in ("models", "notebooks")}


def build(profile: str, out_root: Path | None = None, pdf: bool = True) -> list[Path]:
    """Build HTML for every job, ``index.html`` and (optionally) ``report.pdf``.

    Returns the paths of ``index.html`` and ``report.pdf`` (when produced).
    """
    out_root = Path(out_root) if out_root else REPORTS / profile
    out_root.mkdir(parents=True, exist_ok=True)
    run: dict = {}
    try:
        prof = load_profile(profile, notebooks_dir=os.environ.get("GEOLIP_NOTEBOOKS") or None)
        profile, description = prof.name, prof.description
        run["profile models"] = sorted({m for e in prof.notebooks.values() for m in e.models}
                                       | {j.model for e in prof.notebooks.values() for j in e.jobs if j.model})
    except Exception:  # noqa: BLE001 - the report of an ad-hoc output root has no profile
        description = ""
    run["selection"] = recorded_selection(out_root)
    install_mathjax(out_root)
    groups = collect(out_root)
    for recs in groups.values():
        for r in recs:
            if r.ok and (r.path / "executed.ipynb").exists():
                try:
                    page = notebook_html(read_executed(r.path / "executed.ipynb"), "../../_static/mathjax")
                except RootReadError as exc:  # too large, a link, not a notebook: the line names file and remedy
                    (r.path / "executed.html").unlink(missing_ok=True)
                    r.problems.append(f"no page for this job: {exc}")
                    continue
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
    atomic_write_text(index, index_html(profile, groups, description, out_root=out_root, run=run))
    paths = [index]
    if pdf:
        pdf_path = out_root / "report.pdf"
        try:
            details: list[str] = []
            findings = findings_body(profile, groups, description, embed=True, prefix="../", out_root=out_root,
                                     run=run, details=details)
            nb, own = document_notebook(profile, groups, findings, appendix=details + [glossary_html()])
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
