"""Executed notebooks as HTML (nbconvert, local MathJax) and the one notebook the PDF prints."""
from __future__ import annotations

import html
import json
import os
import re
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

from .. import roots
from ..claims import tables as claims_tables
from . import glossary
from .claims_section import CLAIMS_NOTEBOOK
from .notebook_sections import _img_src, figure_title, lead_record
from .records import JobRecord
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


def _copy_tree(src: Path, dst: Path) -> None:
    """``src``'s files into ``dst``, stopping at the first error, which names the file it was writing
    (``shutil.copytree`` goes on past a full disk and raises one ``shutil.Error`` listing every file
    that failed: a "line" of 3-247 KB)."""
    for folder, _, files in os.walk(src):
        here = dst / Path(folder).relative_to(src)
        here.mkdir(parents=True, exist_ok=True)
        for name in files:
            try:
                shutil.copyfile(Path(folder) / name, here / name)
            except OSError as exc:
                if exc.filename is None:  # a write that failed (ENOSPC, EFBIG): name the file being written
                    raise OSError(exc.errno, exc.strerror, str(here / name)) from None
                raise


def install_mathjax(out_root: Path) -> Path:
    """Copy MathJax 2.7 (from the jupyter-server-mathjax package) into ``_static/mathjax``."""
    src = Path(jupyter_server_mathjax.__file__).parent / "static"
    dest = out_root / "_static" / "mathjax"
    if not (dest / "MathJax.js").exists():
        tmp = out_root / "_static" / ".mathjax.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _copy_tree(src, tmp)
        except BaseException:  # a full disk or a stop: leave no half copy behind
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest


def _with_preconfig(page_html: str) -> str:
    """Insert the MathJax font configuration before the first script of an nbconvert page."""
    return page_html.replace("<script", MATHJAX_PRECONFIG + "<script", 1)


#: what a job's ``executed.ipynb`` may weigh before the report converts it (the largest the
#: notebooks write, with every figure inline, is a few MB; a 1.2 GB one took the report down)
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024


def read_executed(path: Path) -> nbformat.NotebookNode:
    """A job's ``executed.ipynb``, read bounded (:func:`geolip_lib.roots.read_json_file`: a regular
    file, no link, at most :data:`MAX_NOTEBOOK_BYTES`, 64 levels deep) and as nbformat 4; one-line
    :class:`~geolip_lib.roots.RootReadError` otherwise. The one reader of an executed notebook for
    the report (its HTML page and the PDF's narrative)."""
    data = roots.read_json_file(Path(path), MAX_NOTEBOOK_BYTES, follow=False, what="an executed notebook",
                                remedy="rerun the job")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise roots.RootReadError(f"{path}: not a notebook (no list of cells); rerun the job")
    # nbformat's own reader (it rejoins the multi-line sources): the text is bounded and parsed once already
    return nbformat.reads(json.dumps(data), as_version=4)


def notebook_html(executed: Path | nbformat.NotebookNode, mathjax_rel: str, exclude_input: bool = False) -> str:
    """An executed notebook (a path, or one :func:`read_executed` read) as a self-contained
    lab-template HTML page with local MathJax.

    nbconvert's ``sanitize_html`` is on, with :func:`clean_html` as its ``clean_html`` filter:
    a ``<script>`` or ``onerror=`` in a notebook's markdown or outputs never becomes live markup.
    :data:`OFFLINE_TEMPLATE` leaves out every script or style from the network.
    """
    exp = HTMLExporter(template_name="lab", exclude_input=exclude_input, sanitize_html=True,
                       filters={"clean_html": clean_html}, extra_loaders=[DictLoader({"geolip.html.j2": OFFLINE_TEMPLATE})],
                       template_file="geolip.html.j2")
    exp.register_preprocessor(OutputMetadataGuard(), enabled=True)
    exp.mathjax_url = f"{mathjax_rel}/MathJax.js?config={MATHJAX_CONFIG}"
    if isinstance(executed, nbformat.NotebookNode):
        body, _ = exp.from_notebook_node(executed, resources={"metadata": {"name": "executed"}})
    else:
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


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _heading(cell) -> tuple[int, str] | None:
    """(level, text) of a markdown cell that opens with a heading, else None."""
    if cell.cell_type != "markdown":
        return None
    m = _HEADING.match(cell.source.lstrip().split("\n", 1)[0])
    return (len(m.group(1)), m.group(2).strip()) if m else None


def _norm(title: str) -> str:
    """A section title without its number and punctuation, lower case (``"13. Vision-tower
    tables"`` -> ``"vision tower tables"``): how a heading and a ``not_run`` key are matched."""
    return " ".join(re.sub(r"[^\w]+", " ", re.sub(r"^\s*[\d.()a-z]*\d[\d.()a-z]*\s+", "", title.lower())).split())


def _printed_line(cells: list) -> str:
    """The first printed line of a section's code cells (its "not applicable: ..." line), if short."""
    for c in cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            if o.get("output_type") == "stream" and o.get("name") == "stdout":
                line = "".join(o.get("text", "")).strip().split("\n", 1)[0]
                if line and len(line) <= 300:
                    return line
    return ""


def _reason(title: str, not_run: dict, cells: list) -> str:
    want = _norm(title)
    for k, why in (not_run or {}).items():
        got = _norm(str(k))
        if got and (got == want or got in want or want in got):
            return str(why)
    return _printed_line(cells) or "nothing was measured on this model"


def narrative_cells(rec: JobRecord) -> list:
    """The executed notebook's markdown cells and its displayed figures/tables (no code,
    no printed streams, no plain-text dumps; the references section is left to the HTML).

    A numbered section (a ``##``/``###`` heading) under which nothing was displayed is left out,
    with one line saying why: the job's ``not_run`` reason for it, else the line its cells
    printed, else "nothing was measured" (a GPT-2 report's "13. Vision-tower embedding tables").
    """
    nb = read_executed(rec.path / "executed.ipynb")
    not_run = rec.data.get("not_run") if isinstance(rec.data.get("not_run"), dict) else {}
    kept: list = []
    for c in nb.cells:
        tags = c.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            continue
        if c.cell_type == "markdown":
            if not c.source.lstrip().startswith("## References"):
                kept.append((c, c))
            continue
        if c.cell_type != "code":
            continue
        outs = [o for o in c.get("outputs", []) if _is_displayed_result(o) and not _is_headline_table(o)]
        cc = None
        if outs:
            cc = nbformat.v4.new_code_cell("")
            cc.outputs = outs
        kept.append((cc, c))
    # group into sections by heading; a section (level >= 2) with no displayed output -> one line
    cells: list = []
    i = 0
    while i < len(kept):
        shown, orig = kept[i]
        h = _heading(orig)
        if h is None or h[0] < 2:
            if shown is not None:
                cells.append(shown)
            i += 1
            continue
        j = i + 1
        while j < len(kept) and not ((hh := _heading(kept[j][1])) and hh[0] <= h[0]):
            j += 1
        body = kept[i + 1:j]
        has_code = any(o.cell_type == "code" for _, o in body)
        shows = any(s is not None and s.cell_type == "code" for s, _ in body)
        if has_code and not shows:
            why = _reason(h[1], not_run, [o for _, o in body])
            cells.append(nbformat.v4.new_markdown_cell(
                f"<p class='notrun-line'><b>{html.escape(h[1])}</b> — left out: {html.escape(why)}</p>"))
            i = j
            continue
        cells.append(shown)
        i += 1
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


def glossary_html() -> str:
    """The PDF's glossary (the HTML shows the same lines as tooltips): verdicts, then terms."""
    verdicts = "".join(f"<dt>{glyph} {html.escape(v)}</dt><dd>{html.escape(claims_tables.VERDICT_MEANING[v])}</dd>"
                       for v, glyph in claims_tables.VERDICT_GLYPHS.items())
    terms = "".join(f"<dt>{html.escape(t)}</dt><dd>{html.escape(x)}</dd>" for t, x in glossary.TERMS.items()
                    if t != "random_init")
    return (f"<h2 class='appendix' id='glossary'>Appendix · glossary</h2><dl class='glossary'>{verdicts}{terms}</dl>")


def document_notebook(profile: str, groups: dict[str, list[JobRecord]], findings: str,
                      appendix: list[str] | None = None):
    """One notebook for the PDF: the findings, then per notebook the lead job's narrative,
    figures and tables, then the other jobs' key figures (their numbers are in the findings'
    composite tables; everything else is in their executed HTML), then ``appendix`` (the
    claims in detail, the glossary).

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
        try:
            nb.cells.extend(narrative_cells(lead))
        except roots.RootReadError as exc:  # its page lists the same problem; the rest of the PDF is built
            nb.cells.append(mine(f"<p class='problem'>{html.escape(str(exc))}</p>"))
        others = [r for r in ok if r is not lead]
        if others:
            nb.cells.append(mine(f"<h3>{html.escape(name)} — the other models' key figures</h3>{key_figure_grid(others)}"))
    for part in appendix or []:
        nb.cells.append(mine(part))
    for i, cell in enumerate(nb.cells):  # cells of different notebooks may share ids
        cell["id"] = f"cell-{i}"
    return nb, own


def fill_placeholders(page_html: str, own: dict[str, str]) -> str:
    """Put the report's own HTML back where :func:`document_notebook` left its placeholders."""
    for key, fragment in own.items():
        page_html = page_html.replace(f"<p>{key}</p>", fragment, 1)
    return page_html
