"""Executed notebooks as HTML (nbconvert, local MathJax) and the one notebook the PDF prints."""
from __future__ import annotations

import html
import os
import shutil
import uuid
from pathlib import Path

import bleach
import jupyter_server_mathjax
import nbformat
from bleach.css_sanitizer import CSSSanitizer
from jinja2 import DictLoader
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor

from .records import JobRecord
from .sections import CLAIMS_NOTEBOOK, _img_src, figure_title, lead_record
from .style import FALLBACK_FONT_CSS, MATHJAX_CONFIG, MATHJAX_PRECONFIG

#: nbconvert's lab template with every network load taken out: require.js (a CDN script the
#: report never needs), the widget manager (unpkg), mermaid (an ES-module import from a CDN);
#: widget views render as nothing (the run disables progress widgets)
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block data_widget_view scoped -%}{%- endblock data_widget_view -%}
{%- block html_head_css -%}<style>""" + FALLBACK_FONT_CSS + """</style>{%- endblock html_head_css -%}
"""

#: what a notebook's markdown and HTML outputs may keep (bleach, the sanitiser nbconvert itself
#: uses for ``sanitize_html``; nbconvert's own list has no headings, paragraphs or images)
SAFE_TAGS = sorted({*bleach.ALLOWED_TAGS, "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "div", "span",
                    "pre", "code", "table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption", "colgroup",
                    "col", "img", "figure", "figcaption", "sup", "sub", "del", "s", "u", "details", "summary",
                    "dl", "dt", "dd", "small", "kbd", "var", "samp"})
_CELL_ATTRS = {"class", "id", "title", "colspan", "rowspan", "align", "style", "scope"}
_CSS = CSSSanitizer()


def _safe_attribute(tag: str, name: str, value: str) -> bool:
    """Attributes kept by :func:`clean_html`: layout ones; a link's ``href`` (bleach then checks
    its protocol: http, https, mailto or relative); an image's ``src`` only as an inline
    ``data:image/`` (never fetched from the network, never a broken path). No ``on*`` handler."""
    if name in _CELL_ATTRS:
        return True
    if tag == "a":
        return name == "href" and not value.strip().lower().startswith("data:")
    if tag == "img":  # a relative path would be relative to the notebook's folder, not the report's
        if name == "src":
            return value.strip().lower().startswith("data:image/")
        return name in ("alt", "width", "height")
    return False


class OutputMetadataGuard(Preprocessor):
    """The output metadata nbconvert's template writes into ``<img>`` unchecked: a width or height
    goes in *unquoted* (``width=1 onerror=alert(1)`` became a live handler) and a ``filenames``
    entry becomes the image's ``src`` (a URL on the network). Keep a width/height only when it
    is a number; drop ``filenames`` and ``svg_filename`` (the report embeds every image)."""

    def preprocess_cell(self, cell, resources, index):
        for out in cell.get("outputs", []):
            out.pop("svg_filename", None)
            md = out.get("metadata")
            if not isinstance(md, dict):
                continue
            md.pop("filenames", None)
            for scope in [md, *(v for v in md.values() if isinstance(v, dict))]:
                for key in ("width", "height"):
                    if key in scope and (isinstance(scope[key], bool) or not isinstance(scope[key], (int, float))):
                        del scope[key]
        return cell, resources


def clean_html(fragment) -> str:
    """A notebook's HTML (rendered markdown, ``text/html`` outputs, highlighted code) with scripts,
    event handlers, frames, forms and remote images removed (bleach; text is kept)."""
    fragment = fragment.decode() if isinstance(fragment, bytes) else str(fragment)
    return bleach.clean(fragment, tags=SAFE_TAGS, attributes=_safe_attribute, protocols=["http", "https", "mailto",
                        "data"], strip=True, strip_comments=True, css_sanitizer=_CSS)


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
    """An executed notebook as a self-contained lab-template HTML page with local MathJax.

    nbconvert's ``sanitize_html`` is on, with :func:`clean_html` as its ``clean_html`` filter:
    a ``<script>`` or ``onerror=`` in a notebook's markdown or outputs never becomes live markup.
    :data:`OFFLINE_TEMPLATE` leaves out every script or style from the network.
    """
    exp = HTMLExporter(template_name="lab", exclude_input=exclude_input, sanitize_html=True,
                       filters={"clean_html": clean_html}, extra_loaders=[DictLoader({"geolip.html.j2": OFFLINE_TEMPLATE})],
                       template_file="geolip.html.j2")
    exp.register_preprocessor(OutputMetadataGuard(), enabled=True)
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
                  f"alt='{html.escape(figure_title(f))}'><figcaption><b>{html.escape(rec.job_id)}</b>: "
                  f"{html.escape(figure_title(f))}</figcaption></figure>" for f in figs]
    return f"<div class='figs'>{''.join(items)}</div>"


def document_notebook(profile: str, groups: dict[str, list[JobRecord]], findings: str):
    """One notebook for the PDF: the findings, then per notebook the lead job's narrative,
    figures and tables, then the other jobs' key figures (their numbers are in the findings'
    composite tables; everything else is in their executed HTML).

    Returns ``(notebook, own)``: the report's own HTML (findings, headings, figure grids, built
    from escaped text) stands in the notebook as placeholder paragraphs, so that nbconvert's
    sanitiser treats only the notebooks' content; :func:`fill_placeholders` puts it back.
    """
    nb = nbformat.v4.new_notebook()
    own: dict[str, str] = {}

    def mine(fragment: str):
        key = f"geolip-own-{uuid.uuid4().hex}"
        own[key] = fragment
        return nbformat.v4.new_markdown_cell(key)

    nb.cells.append(mine(findings))
    for name, recs in groups.items():
        if name == CLAIMS_NOTEBOOK:
            continue  # its tables and figure are the findings' first pages
        ok = [r for r in recs if r.ok and (r.path / "executed.ipynb").exists()]
        lead = lead_record(ok)
        if lead is None:
            continue
        nb.cells.append(mine(f"<h2 class='appendix'>Appendix · {html.escape(name)} — {html.escape(lead.job_id)}</h2>"))
        nb.cells.extend(narrative_cells(lead))
        others = [r for r in ok if r is not lead]
        if others:
            nb.cells.append(mine(f"<h3>{html.escape(name)} — the other models' key figures</h3>{key_figure_grid(others)}"))
    for i, cell in enumerate(nb.cells):  # cells of different notebooks may share ids
        cell["id"] = f"cell-{i}"
    return nb, own


def fill_placeholders(page_html: str, own: dict[str, str]) -> str:
    """Put the report's own HTML back where :func:`document_notebook` left its placeholders."""
    for key, fragment in own.items():
        page_html = page_html.replace(f"<p>{key}</p>", fragment, 1)
    return page_html
