"""Executed notebooks as HTML (nbconvert, local MathJax) and the one notebook the PDF prints."""
from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

import jupyter_server_mathjax
import nbformat
from nbconvert import HTMLExporter

from .records import JobRecord
from .sections import CLAIMS_NOTEBOOK, _img_src, lead_record
from .style import MATHJAX_CONFIG, MATHJAX_PRECONFIG


def install_mathjax(out_root: Path) -> Path:
    """Copy MathJax 2.7 (from the jupyter-server-mathjax package) into ``_static/mathjax``."""
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = out_root / "_static" / "mathjax"
    if not (dest / "MathJax.js").exists():
        tmp = out_root / "_static" / ".mathjax.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest


def _with_preconfig(page_html: str) -> str:
    """Insert the MathJax font configuration before the first script of an nbconvert page."""
    return page_html.replace("<script", MATHJAX_PRECONFIG + "<script", 1)


def notebook_html(executed: Path, mathjax_rel: str, exclude_input: bool = False) -> str:
    """An executed notebook as a lab-template HTML page with local MathJax."""
    exp = HTMLExporter(template_name="lab", exclude_input=exclude_input)
    exp.mathjax_url = f"{mathjax_rel}/MathJax.js?config={MATHJAX_CONFIG}"
    body, _ = exp.from_filename(str(executed))
    return _with_preconfig(body)


def _is_displayed_result(out: dict) -> bool:
    """Figures and tables stay in the PDF; printed streams, errors and plain-text dumps do not."""
    if out.get("output_type") not in ("display_data", "execute_result"):
        return False
    data = out.get("data") or {}
    return "image/png" in data or "text/html" in data or "text/markdown" in data


def _is_headline_table(out: dict) -> bool:
    """The runtime's headline table (and its notes): the findings already show them."""
    data = out.get("data") or {}
    html_text = "".join(data.get("text/html", ""))
    return "Headline numbers: value [95 % interval]" in html_text or (
        "text/markdown" in data and out.get("metadata", {}).get("geolip") == "headline-notes")


def narrative_cells(rec: JobRecord) -> list:
    """The executed notebook's markdown cells and its displayed figures/tables (no code,
    no printed streams, no plain-text dumps; the references section is left to the HTML)."""
    nb = nbformat.read(str(rec.path / "executed.ipynb"), as_version=4)
    cells = []
    for c in nb.cells:
        tags = c.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            continue
        if c.cell_type == "markdown":
            if not c.source.lstrip().startswith("## References"):
                cells.append(c)
            continue
        if c.cell_type != "code":
            continue
        outs = [o for o in c.get("outputs", []) if _is_displayed_result(o) and not _is_headline_table(o)]
        if outs:
            cc = nbformat.v4.new_code_cell("")
            cc.outputs = outs
            cells.append(cc)
    return cells


def key_figure_grid(records: list[JobRecord]) -> str:
    """The key figures of several jobs in one grid, three per row, embedded (the other models
    of a notebook in the PDF; their numbers are in the findings' composite table)."""
    items = []
    for rec in records:
        figs = [f for f in rec.figures if f.get("key")] or rec.figures[:1]
        items += [f"<figure class='thumb small'><img src='{_img_src(rec, f, True, '')}' "
                  f"alt='{html.escape(f['title'])}'><figcaption><b>{html.escape(rec.job_id)}</b>: "
                  f"{html.escape(f.get('title') or f['file'])}</figcaption></figure>" for f in figs]
    return f"<div class='figs'>{''.join(items)}</div>"


def document_notebook(profile: str, groups: dict[str, list[JobRecord]], findings: str):
    """One notebook for the PDF: the findings, then per notebook the lead job's narrative,
    figures and tables, then the other jobs' key figures (their numbers are in the findings'
    composite tables; everything else is in their executed HTML)."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(findings))
    for name, recs in groups.items():
        if name == CLAIMS_NOTEBOOK:
            continue  # its tables and figure are the findings' first pages
        ok = [r for r in recs if r.ok and (r.path / "executed.ipynb").exists()]
        lead = lead_record(ok)
        if lead is None:
            continue
        nb.cells.append(nbformat.v4.new_markdown_cell(
            f"<h2 class='appendix'>Appendix · {html.escape(name)} — {html.escape(lead.job_id)}</h2>"))
        nb.cells.extend(narrative_cells(lead))
        others = [r for r in ok if r is not lead]
        if others:
            nb.cells.append(nbformat.v4.new_markdown_cell(
                f"<h3>{html.escape(name)} — the other models' key figures</h3>{key_figure_grid(others)}"))
    for i, cell in enumerate(nb.cells):  # cells of different notebooks may share ids
        cell["id"] = f"cell-{i}"
    return nb
