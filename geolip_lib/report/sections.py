"""HTML sections of the findings: composite tables of headline numbers, notebook titles and
questions, key figures, the provenance footer and the seed-claims section."""
from __future__ import annotations

import base64
import functools
import html
import re
from pathlib import Path
from urllib.parse import quote

import matplotlib.pyplot as plt
import mistune
import nbformat
import yaml

from .. import claims, params, plotting, quantization_effect, trajectory
from ..claims import plots as claims_plots
from ..claims import tables as claims_tables
from ..metrics.intervals import format_value
from ..paths import PARAMS
from ..results import nonempty_columns  # one rule for every table (job.table too)
from . import glossary
from .records import FIGURE_TYPES, JobRecord
from .style import BIAS_MARK, MAX_KEY_FIGURES, SEPARATED


# ------------------------------------------------------------------------------ safe HTML
def href(*parts: str, prefix: str = "") -> str:
    """A relative link to ``parts`` (a notebook, a job id, a file), safe inside a quoted attribute.

    Each part is percent-encoded (``urllib.parse.quote``) and the whole is HTML-escaped: a job id
    such as ``a'><img src=x onerror=alert(1)>`` stays one path step, never markup. ``prefix``
    is the report's own ``""`` or ``"../"``.
    """
    return html.escape(prefix + "/".join(quote(str(p), safe="") for p in parts), quote=True)


def anchor(name: str) -> str:
    """The ``id`` of a notebook's section (escaped; :func:`fragment` links to it)."""
    return html.escape(name, quote=True)


def fragment(name: str) -> str:
    return "#" + html.escape(quote(name, safe=""), quote=True)


def executed_link(rec: JobRecord, prefix: str = "") -> str | None:
    """The job's executed-notebook page, when it has one (the builder writes it from executed.ipynb
    before the index, and removes it where the notebook cannot be converted)."""
    if not rec.ok or not (rec.path / "executed.html").is_file():
        return None
    return href(rec.notebook, rec.job_id, "executed.html", prefix=prefix)


def linked_html(inner: str, link: str | None) -> str:
    """Markup ``inner`` (already safe) as a link to ``link`` (already safe), or as it is."""
    return f"<a href='{link}'>{inner}</a>" if link else inner


def linked(text: str, link: str | None) -> str:
    """``text`` (escaped) as a link to ``link`` (already safe), or plain where there is none."""
    return f"<a href='{link}'>{html.escape(text)}</a>" if link else html.escape(text)


# ------------------------------------------------------------------------------ tables
def _cell(h: dict) -> str:
    iv = h.get("interval") or {}
    value = format_value(h.get("value"), iv, h.get("fmt"))
    parts = [f"<span class='val' title='{html.escape(iv.get('method') or '', quote=True)}'>{html.escape(value)}</span>"]
    v, lo, hi = h.get("value"), iv.get("lo"), iv.get("hi")
    if v is not None and lo is None:
        parts.append(f"<span class='null' title='{html.escape(iv.get('method') or '', quote=True)}'>(no interval)</span>")
    elif isinstance(v, (int, float)) and lo is not None and hi is not None and not lo <= v <= hi:
        parts[0] = parts[0].replace("</span>", f" {BIAS_MARK}</span>", 1)
    # what kind of number it is (issue 22 §1): an exact value says over what; a bias-corrected
    # estimate names its plug-in; a value the weight shapes force is marked and kept out of verdicts
    if (h.get("kind") or iv.get("kind")) == "exact" and v is not None:
        parts.append(f"<span class='kind exact'>{html.escape(iv.get('method') or 'exact')}</span>")
    if h.get("plug_in") is not None:
        pv = format_value(h.get("plug_in"), None, h.get("fmt"))
        parts.append(f"<span class='kind'>plug-in {html.escape(pv)}</span>")
    if h.get("forced_by_shape"):
        parts.append(f"<span class='kind forced' title='{html.escape(str(h['forced_by_shape']), quote=True)}'>"
                     "forced by shape</span>")
    for kind, n in (h.get("nulls") or {}).items():
        if n is None or n.get("value") is None:
            continue
        nv = format_value(n.get("value"), n.get("interval"), h.get("fmt"))
        sep = n.get("separated")
        mark = f" {SEPARATED}" if sep else ""
        parts.append(f"<span class='null{' sep' if sep else ''}'>{html.escape(kind)}: {html.escape(nv)}{mark}</span>")
    return "".join(parts)


#: at most this many value columns in one table (about 130 px each: a 1280 px window holds them);
#: a composite table with more is transposed or split into several
MAX_TABLE_COLUMNS = 7


def duplicate_columns(records: list[JobRecord], keys: list[str]) -> dict[str, str]:
    """``{dropped: kept}``: a headline column whose value and interval equal an earlier column's in
    every job, and whose nulls that earlier column shows too, repeats it (notebook 01 recorded
    "pentachoron CV vs init" as the CV again with only its random-init null, which "pentachoron
    CV" already shows)."""
    def same(a: dict | None, b: dict | None) -> bool:
        if not a or not b:
            return not a and not b
        ia, ib = a.get("interval") or {}, b.get("interval") or {}
        if (a.get("value"), ia.get("lo"), ia.get("hi")) != (b.get("value"), ib.get("lo"), ib.get("hi")):
            return False
        na, nb = a.get("nulls") or {}, b.get("nulls") or {}
        return all(k in na and (na[k] or {}).get("value") == (n or {}).get("value") for k, n in nb.items())
    out: dict[str, str] = {}
    for i, k in enumerate(keys):
        for j in keys[:i]:
            if j not in out and all(same(r.headline.get(j), r.headline.get(k)) for r in records) and \
                    any(r.headline.get(k) for r in records):
                out[k] = j
                break
    return out


def _chunks(items: list, n: int) -> list[list]:
    k = -(-len(items) // n)  # as few tables as fit, of even widths
    size = -(-len(items) // k) if items else 1
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


def composite_table(records: list[JobRecord], link_prefix: str = "") -> str:
    """HTML table of the headline numbers: one row per job, one column per metric — or, when the
    metrics outnumber the jobs and are too many for a 1280 px window, transposed (a row per
    metric); still too many columns and it is split into several tables of at most
    :data:`MAX_TABLE_COLUMNS`.

    Each cell holds ``value [lo, hi]`` and, below it, each null model's value; ``✱`` marks
    a null that the interval excludes. Each header's tooltip says what the metric is (its note,
    the glossary's terms); a column that repeats another is left out, with a line saying so.
    """
    ok = [r for r in records if r.ok]
    keys: list[str] = []
    labels: dict[str, str] = {}
    notes: dict[str, str] = {}
    for r in ok:
        for k, h in r.headline.items():
            if k not in keys:
                keys.append(k)
                labels[k] = (h or {}).get("label") or k
            if (h or {}).get("note") and k not in notes:
                notes[k] = h["note"]
    keys = nonempty_columns([{k: (r.headline.get(k) or {}).get("value") for k in keys} for r in ok], keys)
    if not ok or not keys:
        return "<p class='note'>No headline metrics recorded.</p>"
    dup = duplicate_columns(ok, keys)
    keys = [k for k in keys if k not in dup]

    def head(k: str, cls: bool = False) -> str:
        words = "; ".join(x for x in (glossary.explain(labels[k]), notes.get(k, "")) if x)
        klass = " class='metric'" if cls else ""
        return f"<th{klass}{tip(words)}>{html.escape(labels[k])}</th>"

    def cell(r: JobRecord, k: str) -> str:
        return f"<td>{_cell(r.headline[k])}</td>" if r.headline.get(k) else "<td>n/a</td>"

    def job(r: JobRecord) -> str:
        return linked(r.job_id, executed_link(r, link_prefix))

    transpose = len(keys) > MAX_TABLE_COLUMNS and len(ok) < len(keys)
    tables = []
    if transpose:
        for part in _chunks(ok, MAX_TABLE_COLUMNS):
            hrow = "".join(f"<th class='model'>{job(r)}</th>" for r in part)
            rows = "".join(f"<tr>{head(k, True)}"
                           + "".join(cell(r, k) for r in part) + "</tr>" for k in keys)
            tables.append(f"<table class='composite transposed'><thead><tr><th>metric</th>{hrow}</tr></thead>"
                          f"<tbody>{rows}</tbody></table>")
    else:
        for part in _chunks(keys, MAX_TABLE_COLUMNS):
            rows = "".join(f"<tr><td class='model'>{job(r)}</td>{''.join(cell(r, k) for k in part)}</tr>" for r in ok)
            tables.append(f"<table class='composite'><thead><tr><th>job</th>{''.join(head(k) for k in part)}</tr>"
                          f"</thead><tbody>{rows}</tbody></table>")
    methods = sorted({(r.headline[k].get("interval") or {}).get("method") or "" for r in ok for k in keys
                      if r.headline.get(k) and r.headline[k].get("value") is not None} - {""})
    note_items = "".join(f"<li><b>{html.escape(labels[k])}</b>: {html.escape(v)}</li>" for k, v in notes.items()
                         if k in keys)
    foot = ("<p class='note'>Intervals: " + html.escape("; ".join(_shorten_methods(methods))) + ".</p>") if methods else ""
    if dup:
        foot += ("<p class='note'>Left out, as they repeat another column in every job: "
                 + html.escape("; ".join(f"{labels[d]} (= {labels[k]})" for d, k in dup.items())) + ".</p>")
    return (f"<div class='tablewrap'>{''.join(tables)}</div>{foot}"
            + (f"<ul class='note'>{note_items}</ul>" if note_items else ""))


def _shorten_methods(methods: list[str]) -> list[str]:
    """Distinct interval methods with the sample counts dropped (they differ per job)."""
    out: list[str] = []
    for m in methods:
        s = re.sub(r"\b\d+ (?=resamples)", "", m)
        s = re.sub(r"of \d+ ", "of ", s)
        s = re.sub(r"\(\d+ rows\)", "", s).strip()
        s = re.sub(r"over \d+ ", "over ", s)
        if s not in out:
            out.append(s)
    return out


# ------------------------------------------------------------------------------ notebook facts
def _markdown_cells(rec: JobRecord) -> list[str]:
    try:
        nb = nbformat.read(str(rec.path / "executed.ipynb"), as_version=4)
    except Exception:  # noqa: BLE001 - a missing notebook only costs the title
        return []
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def title_and_question(records: list[JobRecord], notebook: str) -> tuple[str, str]:
    """The notebook's first heading and its **Question.** paragraph (markdown)."""
    for rec in records:
        if not rec.ok:
            continue
        cells = _markdown_cells(rec)
        if not cells:
            continue
        first = cells[0]
        title = next((ln.lstrip("# ").strip() for ln in first.splitlines() if ln.startswith("#")), notebook)
        q = next((p for p in re.split(r"\n\s*\n", first) if p.strip().startswith("**Question")), "")
        return title, q.strip()
    return notebook, ""


#: markdown of a notebook's question: raw HTML escaped (``escape=True``: a ``<script>`` in a notebook
#: is shown as text), ``javascript:`` links dropped by mistune, and TeX kept verbatim for MathJax by the
#: math plugin (without it, markdown's backslash escapes eat ``\,`` and ``\!``)
_MARKDOWN = mistune.create_markdown(escape=True, plugins=["math", "strikethrough"])


def _md_inline(text: str) -> str:
    """Markdown of one paragraph -> HTML (bold, code, math left for MathJax), raw HTML escaped."""
    try:
        return _MARKDOWN(text)
    except Exception:  # noqa: BLE001 - plain text is a fine fallback
        return f"<p>{html.escape(text)}</p>"


def lead_record(records: list[JobRecord]) -> JobRecord | None:
    """The job whose figures represent the notebook: a real model before tiny ones."""
    ok = [r for r in records if r.ok]
    real = [r for r in ok if not r.job_id.startswith("tiny")]
    return (real or ok or [None])[0]


def key_figures(records: list[JobRecord]) -> list[tuple[JobRecord, dict]]:
    """One to three key figures of a notebook: the lead job's first, then other jobs'."""
    lead = lead_record(records)
    order = ([lead] if lead else []) + [r for r in records if r.ok and r is not lead]
    picked: list[tuple[JobRecord, dict]] = []
    for r in order:
        figs = r.figures
        keys = [f for f in figs if f.get("key")] or figs[:1]
        if r is not lead:  # another job's trajectory over checkpoints (issue 24 §4) before what the lead shows too
            keys.sort(key=lambda f: f["file"].rsplit(".", 1)[0] != "trajectory")
        for f in keys:
            if len(picked) < MAX_KEY_FIGURES and all(f["file"] != p[1]["file"] for p in picked):
                picked.append((r, f))
    return picked


def _img_src(rec: JobRecord, fig: dict, embed: bool, prefix: str) -> str:
    """A figure's ``src``: its file (percent-encoded, escaped) or, embedded, a ``data:`` URI.

    ``fig`` is an entry of :attr:`JobRecord.figures`, which :func:`.records.check_figures` has
    confined to the job's own directory: nothing else is ever read here.
    """
    if embed:
        mime = FIGURE_TYPES[Path(fig["file"]).suffix.lower()]
        data = base64.b64encode((rec.path / fig["file"]).read_bytes()).decode()
        return f"data:{mime};base64,{data}"
    return href(rec.notebook, rec.job_id, *fig["file"].split("/"), prefix=prefix)


def figure_title(fig: dict) -> str:
    return str(fig.get("title") or fig["file"])


def figures_html(records: list[JobRecord], embed: bool = False, prefix: str = "") -> str:
    """The notebook's key figures at a readable size: the first across the page, the others two
    to a row; each image links to its file at full size (the caption links the executed notebook)."""
    items = []
    for i, (rec, fig) in enumerate(key_figures(records)):
        link = executed_link(rec, prefix)
        title = html.escape(figure_title(fig))
        src = _img_src(rec, fig, embed, prefix)
        img = f"<img src='{src}' alt='{title}'>"
        full = None if embed else href(rec.notebook, rec.job_id, *fig["file"].split("/"), prefix=prefix)
        cap = f"{title} — {linked(rec.job_id, link)}" + (" (click the figure for full size)" if full and not i else "")
        items.append(f"<figure class='thumb{' lead' if i == 0 else ''}'>{linked_html(img, full)}"
                     f"<figcaption>{cap}</figcaption></figure>")
    return f"<div class='figs'>{''.join(items)}</div>" if items else ""


# ------------------------------------------------------------------------------ sections not run
def not_run(records: list[JobRecord]) -> list[tuple[str, str, list[str]]]:
    """``[(section, reason, [job, ...])]``: the sections a notebook could not run on some jobs, as
    each job's ``metrics.json`` records them (``"not_run": {section: reason}``), jobs with the
    same reason together."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in records:
        nr = r.data.get("not_run") if r.ok else None
        if isinstance(nr, dict):
            for section, reason in nr.items():
                out.setdefault((str(section), str(reason)), []).append(r.job_id)
    return [(s, why, jobs) for (s, why), jobs in out.items()]


def not_run_html(records: list[JobRecord]) -> str:
    """One line per section not run, with its reason, where the section's figures would be."""
    items = "".join(f"<li><b>{html.escape(s)}</b> — not run on {html.escape(', '.join(jobs))}: {html.escape(why)}</li>"
                    for s, why, jobs in not_run(records))
    return f"<ul class='notrun'>{items}</ul>" if items else ""


# ------------------------------------------------------------------------------ trajectories
def trajectory_html(records: list[JobRecord]) -> str:
    """Each job's geometry over training (``metrics.trajectory``, notebooks 01 and 02) as a table
    of readable names, each value's kind and the random-init null (:func:`geolip_lib.trajectory.table`)."""
    parts = []
    for r in records:
        traj = ((r.data.get("metrics") or {}).get("trajectory") if r.ok else None)
        if not isinstance(traj, dict) or not traj.get("points"):
            continue
        try:
            frame = trajectory.table(traj, r.headline)
        except (KeyError, TypeError, ValueError) as exc:
            parts.append(f"<p class='problem'>{html.escape(r.job_id)}: the trajectory could not be tabled "
                         f"({html.escape(str(exc))}).</p>")
            continue
        heads = "".join(_th(str(c)) for c in frame.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_traj_cell(v))}</td>" for v in row) + "</tr>"
                       for row in frame.itertuples(index=False))
        parts.append(f"<h3>Geometry over training — {html.escape(r.job_id)}</h3>"
                     f"<div class='tablewrap'><table class='composite traj'><thead><tr>{heads}</tr></thead>"
                     f"<tbody>{body}</tbody></table></div>"
                     f"<p class='note'>{html.escape(trajectory.TABLE_NOTE)}</p>")
    return "".join(parts)


#: the columns of :func:`geolip_lib.quantization_effect.table` shown on the index (the numbers behind them
#: stay in the frame)
QUANT_COLUMNS = ["notebook", "headline", "fp32 model", "quantized model", "fp32", "quantized", "difference",
                 "difference / half-width", "relative difference"]


def quantization_html(out_root: Path) -> str:
    """How far simulated quantization (a params file's ``quantize: q4_1``) moves each headline of 01,
    02 and 06: :func:`geolip_lib.quantization_effect.table` of the root, or nothing without such a pair."""
    try:
        frame = quantization_effect.table(out_root)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"<p class='problem'>The quantization table could not be built ({html.escape(str(exc))}).</p>"
    if frame is None or not len(frame):
        return ""
    cols = [c for c in QUANT_COLUMNS if c in frame.columns]
    heads = "".join(_th(c) for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_quant_cell(v))}</td>" for v in row) + "</tr>"
                   for row in frame[cols].itertuples(index=False))
    return ("<h2 id='quantization'>How far quantization moves the headlines</h2>"
            "<p class='note'>Each model's fp32 weights rounded to the GGUF block scheme and back (Q4_1: blocks "
            "of 32 with a scale and a minimum, 4-bit codes), then measured by the same notebooks. 'difference / "
            "half-width' is the move in units of the fp32 interval's half-width (|x| &lt; 1: less than the "
            "value's own uncertainty; 'moved (exact)' where the fp32 value is exact and has no interval, so any "
            "move is beyond it). Values measured on dequantized "
            "weights are marked in the tables and kept out of verdicts whose rule such a move could decide.</p>"
            f"<div class='tablewrap'><table class='composite'><thead><tr>{heads}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _quant_cell(v) -> str:
    """A quantization-table cell: an exact fp32 value has no half-width, so a move is infinite in
    its units; said in words, not as ``inf``."""
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return f"{'+' if v > 0 else '−'}moved (exact)"
    return _traj_cell(v)


def _traj_cell(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# ------------------------------------------------------------------------------ provenance
def provenance_footer(groups: dict[str, list[JobRecord]]) -> str:
    """Commits, package versions, devices, models (source, revision, weight digests), wall times."""
    ok = [r for rs in groups.values() for r in rs if r.ok]
    commits, versions, devices, models = {}, {}, {}, {}
    rows = []
    for r in ok:
        p = r.provenance
        g = p.get("git") or {}
        if g.get("commit"):
            commits[g["commit"][:12] + (" (dirty)" if g.get("dirty") else "")] = None
        v = p.get("versions") or {}
        if v:
            versions[", ".join(f"{k} {val}" for k, val in v.items() if val)] = None
        d = p.get("device") or {}
        if d:
            devices[f"{d.get('kind')} × {d.get('count')} ({d.get('name')})"] = None
        for m in p.get("models") or []:
            w = m.get("weights") or {}
            digest = ", ".join(f"{name}: {(info.get('sha256') or '')[:12]}" for name, info in w.items()
                               if isinstance(info, dict) and "sha256" in info) or (m.get("weights_note") or "–")
            if w.get("dequantized") is True or m.get("dequantized") is True:  # loaded from GGUF (shared conventions)
                q = w.get("quantization") if isinstance(w.get("quantization"), dict) else {}
                digest += f" (dequantized {', '.join(sorted({str(t) for t in q.values()})[:4])})".replace(" )", ")")
            src = m.get("id") or m.get("local_dir") or "–"
            rev = m.get("commit_hash") or m.get("revision") or "–"
            models[m.get("name")] = (m.get("source"), src, rev, m.get("dtype"), digest)
        rows.append(f"<tr><td>{html.escape(r.notebook)}</td><td>{html.escape(r.job_id)}</td>"
                    f"<td>{html.escape(str(p.get('wall_time_s', '–')))}</td>"
                    f"<td>{html.escape(str(p.get('dtype') or '–'))}</td>"
                    f"<td>{html.escape(str(p.get('model_device') or '–'))}</td></tr>")
    if not ok:
        return ""
    mrows = "".join(f"<tr><td>{html.escape(str(n))}</td>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in vals)
                    + "</tr>" for n, vals in sorted(models.items(), key=lambda kv: str(kv[0])))
    return ("<footer><h3>Provenance</h3>"
            f"<p>Commit: <code>{html.escape(' / '.join(commits) or 'unknown')}</code><br>"
            f"Packages: {html.escape(' / '.join(versions) or 'unknown')}<br>"
            f"Devices: {html.escape(' / '.join(devices) or 'unknown')}</p>"
            "<table><thead><tr><th>model</th><th>source</th><th>id / directory</th><th>revision</th><th>dtype</th>"
            f"<th>weights sha256</th></tr></thead><tbody>{mrows}</tbody></table>"
            "<details><summary>Jobs: wall time, dtype, device</summary><table><thead><tr><th>notebook</th>"
            "<th>job</th><th>wall s</th><th>dtype</th><th>device</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></details></footer>")


# ------------------------------------------------------------------------------ seed claims
CLAIMS_NOTEBOOK = "15_seed_claims"


def _verdict(v: str) -> str:
    """A verdict word, coloured, with its glyph and its meaning as a tooltip. The status is
    matched exactly (issue 37: a prefix match gave "held, but the null gives it too" the glyph and
    meaning of "held"); any other text gets no glyph and no meaning."""
    cls = claims.VERDICT_CLASS.get(v, "v-not-testable")
    glyph = claims_tables.VERDICT_GLYPHS.get(v, "")
    return f"<span class='{cls}'{tip(claims_tables.VERDICT_MEANING.get(v, ''))}>{glyph + ' ' if glyph else ''}{html.escape(v)}</span>"


def tip(text: str) -> str:
    """`` title='...'`` (escaped) for an element's tooltip, or nothing."""
    return f" title='{html.escape(text, quote=True)}'" if text else ""


def _th(label: str, cls: str = "", attrs: str = "") -> str:
    """A column header with its explanation as a tooltip (:func:`.glossary.explain`)."""
    klass = f" class='{html.escape(cls, quote=True)}'" if cls else ""
    return f"<th{klass}{tip(glossary.explain(label))}{attrs}>{html.escape(label)}</th>"


def breakable(text: str) -> str:
    """Escaped ``text`` whose long identifiers (paths, ``metrics.claims.x['y']``) may wrap after
    ``/ . _ , :`` (``<wbr>``): a narrow column breaks them there, never inside a word."""
    out = []
    for tok in re.split(r"(\s+)", str(text)):
        if len(tok) > 18 and not tok.isspace():
            out.append("<wbr>".join(html.escape(p) for p in re.split(r"(?<=[/._,:])", tok)))
        else:
            out.append(html.escape(tok))
    return "".join(out)


def _claims_table(rows: list[dict], columns: list[str], whose: str = "the seed's") -> str:
    """A claims table; a paper's claims (``whose`` "the paper's") head its columns "paper's value", "paper's
    models" where a seed's read "seed value", "seed models"."""
    columns = nonempty_columns(rows, columns)
    word = claims_tables.owner_word(whose)
    label = {c: c.replace("seed ", f"{word}'s ", 1) if word != "seed" and c.startswith("seed ") else c
             for c in columns}
    head = "".join(_th(label[c], c.replace(' ', '-')) for c in columns)
    body = "".join("<tr>" + "".join(f"<td class='{html.escape(c.replace(' ', '-'), quote=True)}'>"
                                    f"{_verdict(str(r[c])) if c == 'verdict' else breakable(str(r.get(c) or ''))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


#: the claims file of the report's lead matrix ("Do the seed's claims hold?")
SEED_CLAIMS = "seed-001"


def claims_file_of(rec: JobRecord) -> str:
    """The claims file a notebook-15 job evaluated: a name under params/claims/ when it is one
    (its metrics' ``claims_file``, else its ``CLAIMS`` parameter; default seed 001), else the path."""
    f = str((rec.data.get("metrics") or {}).get("claims_file") or (rec.data.get("parameters") or {}).get("CLAIMS")
            or SEED_CLAIMS)
    return Path(f).stem if Path(f).stem in claims.claim_files() else f


def claims_records(groups: dict[str, list[JobRecord]]) -> list[tuple[JobRecord, str]]:
    """Notebook 15's finished jobs under this root with the claims file each evaluated, seed 001's
    first: one verdict matrix each (a second claims job, e.g. ``CLAIMS: ethayarajh-2019``, is a
    second matrix)."""
    recs = [(r, claims_file_of(r)) for r in groups.get(CLAIMS_NOTEBOOK) or [] if r.ok]
    return sorted(recs, key=lambda t: t[1] != SEED_CLAIMS)


def claims_record(groups: dict[str, list[JobRecord]]) -> JobRecord | None:
    """Notebook 15's finished job of seed 001's claims under this root, if it ran."""
    return next((r for r, f in claims_records(groups) if f == SEED_CLAIMS), None)


SEEDS_MODELS = "seed's models"
#: at most this many model columns; more and the matrix is transposed (models down, claims across)
MATRIX_MAX_COLUMNS = 8


def _mx_cell(cell: dict, model: str, claim_title: str) -> str:
    v = cell["verdict"]
    words = f"{model} · {claim_title}: {v} ({claims_tables.VERDICT_MEANING.get(v, '')})"
    if cell["reading"]:
        words += f". Reading: {cell['reading']}"
    if cell["reason"]:
        words += f". {cell['reason']}"
    if cell["other readings"]:
        words += f". Also measured: {', '.join(cell['other readings'])} (details below)"
    deq = f"<span class='kind'>({html.escape(cell['dequantized'])})</span>" if cell["dequantized"] else ""
    return (f"<td class='mx {claims.VERDICT_CLASS.get(v, 'v-not-testable')}'{tip(words)}>"
            f"<span class='glyph'>{claims_tables.VERDICT_GLYPHS.get(v, '')}</span>"
            f"<span class='mv'>{html.escape(cell['text'])}</span>{deq}</td>")


#: what tests a claim the seed's models did not run for here (issue 38 §4): the paper profile on a GPU box
PAPER_RUN = "make report PROFILE=paper, with hub access, on a GPU box"


@functools.lru_cache(maxsize=1)
def _paper_jobs() -> frozenset:
    """(notebook, model) of every job the paper profile lists (its YAML read as it stands; empty if unreadable)."""
    try:
        data = yaml.safe_load((PARAMS / "profiles" / "paper.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return frozenset()
    return frozenset((nb, m) for nb, e in (data.get("notebooks") or {}).items() if isinstance(e, dict)
                     for m in list(e.get("models") or []) + [j.get("model") for j in e.get("jobs") or []
                                                              if isinstance(j, dict)])


def untested_hint(c) -> str:
    """For a claim no model of the seed's tested on this root: what would test it (the notebooks and
    seed models of its readings that the paper profile runs), as a small line under its verdict; where the
    paper profile runs none of them, the models this project has no params file for (a paper's BERT-base,
    GPT-2, ELMo), or nothing."""
    pairs = [(f.notebook, x) for f in c.forms for x in f.models if (f.notebook, x) in _paper_jobs()]
    if not pairs:
        known = set(params.model_names())
        missing = list(dict.fromkeys(x for f in c.forms for x in f.models if x not in known))
        if not missing:
            return ""
        words = (f"{', '.join(missing)}: no params file in params/models/, so no profile runs "
                 f"{'it' if len(missing) == 1 else 'them'} (params/README.md says how to add a model)")
        return (f"<span class='kind untested'{tip(words)}>not in this project's model set: "
                f"{html.escape(', '.join(missing))}</span>")
    nbs = list(dict.fromkeys(nb.split("_", 1)[0] for nb, _ in pairs))
    models = list(dict.fromkeys(x for _, x in pairs))
    who = models[0] if len(models) == 1 else f"{len(models)} seed models"
    words = f"What would test it: notebook {', '.join(nbs)} on {', '.join(models)}, the paper profile ({PAPER_RUN})."
    return (f"<span class='kind untested'{tip(words)}>tested by the paper profile: {html.escape(' and '.join(nbs))} "
            f"on {html.escape(who)} (hub, GPU box)</span>")


def _seed_verdict(m: dict, c) -> str:
    """The "verdict on the seed's models" cell: the verdict, and where it is "not tested", what would test it."""
    v = m["verdict"][c.id]
    return _verdict(v) + (untested_hint(c) if v == claims.NOT_TESTED else "")


def matrix_table(m: dict, whose: str = "the seed's") -> str:
    """The verdict matrix as HTML: claims down and models across (the seed's models, then the
    trained stand-ins); transposed when there are more than :data:`MATRIX_MAX_COLUMNS` models.
    ``whose``: who the claims' own models belong to, in the headers ("the paper's" for a paper's file)."""
    cols = m["seed"] + m["stand-ins"]
    empty = "" if cols else ("<p class='note'>No model of the seed's and no trained stand-in ran a notebook the "
                             "claims read: no model columns.</p>")
    what = m.get("descriptions") or {}
    group = {x: (f"{whose} model" if x in m["seed"] else "trained stand-in") for x in cols}
    hover = {x: group[x] + (f": {what[x]}" if what.get(x) else "") for x in cols}
    if len(cols) <= MATRIX_MAX_COLUMNS:
        spans = ""
        if m["seed"]:
            spans += (f"<th colspan='{len(m['seed'])}' class='grp'{tip(glossary.TERMS[SEEDS_MODELS])}>"
                      f"{html.escape(whose, quote=False)} models</th>")
        if m["stand-ins"]:
            spans += (f"<th colspan='{len(m['stand-ins'])}' class='grp'{tip(glossary.TERMS['stand-in'])}>"
                      "trained stand-ins</th>")
        span = " rowspan='2'" if cols else ""
        head = ("<tr>" + _th("claim", attrs=span) + _th(claims_tables.value_head(whose), attrs=span)
                + _th(f"verdict on {whose} models", attrs=span) + spans + "</tr>"
                + ("<tr>" + "".join(f"<th class='model'{tip(hover[x])}>{html.escape(x)}</th>" for x in cols) + "</tr>"
                   if cols else ""))
        body = "".join(
            f"<tr><td class='claim'{tip(c.definition)}>{html.escape(c.title)}</td>"
            f"<td class='seedv'>{html.escape(c.seed_value)}</td><td class='seedverdict'>{_seed_verdict(m, c)}</td>"
            + "".join(_mx_cell(m["cells"][(c.id, x)], x, c.title) for x in cols) + "</tr>" for c in m["claims"])
    else:  # transposed: one row per model
        head = ("<tr><th>model</th>" + "".join(
            f"<th class='claimh'{tip(c.definition)}>{html.escape(c.title)}"
            f"<br><span class='kind'>{claims_tables.owner_word(whose)}: {html.escape(c.seed_value)}</span></th>"
            for c in m["claims"]) + "</tr>")
        body = (f"<tr><td class='model'>verdict on {html.escape(whose, quote=False)} models</td>"
                + "".join(f"<td class='seedverdict'>{_seed_verdict(m, c)}</td>" for c in m["claims"]) + "</tr>")
        body += "".join(f"<tr><td class='model'{tip(hover[x])}>{html.escape(x)}"
                        f"<span class='kind'>{html.escape(group[x])}</span></td>"
                        + "".join(_mx_cell(m["cells"][(c.id, x)], x, c.title) for c in m["claims"]) + "</tr>"
                        for x in cols)
    stand = [x for x in m["stand-ins"] if what.get(x)]
    named = ("<p class='note standins'>What the trained stand-ins are (a verdict on one is about that model, not "
             f"{html.escape(whose)} models): "
             + "; ".join(f"<b>{html.escape(x)}</b>: {html.escape(what[x].rstrip().rstrip('.'))}" for x in stand)
             + ".</p>") if stand else ""
    return (f"{empty}<div class='tablewrap'><table class='matrix'><thead>{head}</thead><tbody>{body}</tbody></table>"
            f"</div>{named}")


def verdict_legend() -> str:
    items = "".join(f"<li>{_verdict(v)}<span class='meaning'>: {html.escape(claims_tables.VERDICT_MEANING[v])}</span></li>"
                    for v in claims_tables.VERDICT_GLYPHS)
    return f"<ul class='legend'>{items}</ul>"


def what_this_tests(m: dict | None = None) -> str:
    """The "What this report tests" paragraph: the seed documents, the claims table, stand-ins."""
    seeds = "".join(f"<li>{html.escape(line)}</li>" for line in glossary.seed_lines())
    return ("<div class='about'><h3>What this report tests</h3>"
            "<p>geolip measures the geometry of neural networks (embedding spectra, simplex volumes, weight "
            "statistics, attention operators) to test the claims of five <b>seed documents</b>, the research notebooks "
            f"the project was created from:</p><ul class='seeds'>{seeds}</ul>"
            "<p>The claims tested below are seed 001's summary table of \"universal constants\" and its best "
            "modulator result (<code>params/claims/seed-001.yaml</code>). Only the models the seed measured (T5, "
            "BERT-large, CLIP, DINOv2, Qwen) decide a claim's verdict. A <b>trained stand-in</b> is a pretrained model "
            "the seed did not measure: it shows whether the property holds there, not whether the seed's claim does. "
            "Tiny random models only check that the pipeline runs; they are never given a verdict. Every number is "
            "<b>value [95 % interval]</b> (an exact value has none) beside its <b>nulls</b>, what the same "
            "measurement gives without training.</p></div>")


def _claims_data(out_root: Path, claims_file: str | None = None):
    """(rows, summary, matrix) of the claims under ``out_root`` (:mod:`geolip_lib.claims`);
    ``claims_file``: a name under params/claims/ or a path (default seed 001)."""
    extra = () if claims_file is None else (claims_file,)
    rows = claims.evaluate(out_root, *extra)
    summary = claims.summarize(rows, *extra)
    pipeline = getattr(claims.evaluation, "pipeline_checks", None)
    tiny = pipeline(out_root, *extra) if pipeline else []
    m = claims_tables.matrix(rows, summary, *extra, pipeline_checks=tiny)  # its rows are that file's claims
    m["descriptions"] = claims.model_descriptions(out_root, *extra)  # what each model is (issue 36 §5)
    return rows, summary, m


def claims_matrix_figure(m: dict, out_root: Path, embed: bool, prefix: str, name: str = "claims_matrix.png",
                         title: str = "") -> str:
    """The matrix figure (:func:`geolip_lib.claims.plots.claims_matrix`), written to
    ``_static/<name>`` under the root (one per claims file); a link to it at full size. ``title``: another
    claims file's heading (default: seed 001's)."""
    fig = claims_plots.claims_matrix(m, title)
    data = plotting.png_bytes(fig)
    plt.close(fig)
    path = Path(out_root) / "_static" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    src = ("data:image/png;base64," + base64.b64encode(data).decode()) if embed else href("_static", name,
                                                                                            prefix=prefix)
    img = f"<img src='{src}' alt='the claims matrix: verdict and value per claim and model'>"
    return f"<figure class='matrixfig'>{img if embed else linked_html(img, src)}</figure>"


def seed_claims_section(out_root: Path, groups: dict[str, list[JobRecord]], *, embed: bool = False,
                        prefix: str = "", details: list[str] | None = None, claims_file: str | None = None) -> str:
    """The findings' lead: the claims matrix (claims down, models across, a status and value per
    cell: :func:`geolip_lib.claims.matrix`), its figure, one bottom-line sentence per claim; then
    the details (readings side by side, the verdict and reason per reading, every measured value
    with its nulls, notebook 15's figure) in a ``<details>`` block — or, when ``details`` is a
    list (the PDF), appended there for an appendix.

    Shown only where notebook 15 ran on this root; otherwise one line says where to see it.
    ``claims_file``: another claims file a notebook-15 job evaluated (:func:`claims_records`): the
    same section, headed "Do <its source>'s claims hold?" (the text of its title before ':').
    """
    other = claims_file not in (None, SEED_CLAIMS)
    rec15 = next((r for r, f in claims_records(groups) if f == claims_file), None) if other else claims_record(groups)
    if other:
        table = claims.load(claims_file)
        who = table.title.split(":")[0].strip()
        whose = claims_tables.owner(table)  # another seed document (seed 004) or a paper's table
        sid, heading = f"claims-{re.sub(r'[^a-z0-9]+', '-', str(claims_file).lower()).strip('-')}", \
            f"Do {who}'s claims hold?"
        lead = (f"Each row is a claim of {html.escape(who)} (<code>{html.escape(table.file)}</code>, the same verdict "
                f"rules as seed 001's table); each column a model that ran here: first {whose} own models, then "
                f"trained stand-ins (their verdict says whether the property holds there, not whether {whose} claim "
                "about its models does). A cell's mark gives the verdict (colour and shape), the number under it the "
                "measured value [95 % interval]")
    else:
        sid, heading, whose = "seed-claims", "Do the seed's claims hold?", "the seed's"
        lead = ("Each row is a claim of seed 001's table; each column a model that ran here: first the "
                "seed's own models, then trained stand-ins. A cell's mark gives the verdict (colour and shape), the "
                "number under it the measured value [95 % interval]")
    if rec15 is None:
        return ("<p class='note' id='seed-claims'>Whether the seed's claims hold is tested by notebook "
                f"<code>{CLAIMS_NOTEBOOK}</code>, which did not run on this output root: run it after the other "
                f"notebooks (<code>python run_all.py --profile &lt;profile&gt; --notebooks {CLAIMS_NOTEBOOK}</code>; "
                "it is in the tiny, demo, shapes and paper profiles) and its verdicts lead this "
                "page.</p>")
    try:
        rows, summary, m = _claims_data(out_root, claims_file if other else None)
    except (AttributeError, KeyError, TypeError, ValueError, OSError) as exc:  # a job's record of the wrong shape
        return (f"<p class='problem' id='{sid}'>{'The claims of ' + html.escape(who) if other else 'The seed' + chr(39) + 's claims'} could not be evaluated from {html.escape(str(out_root))} "
                f"({html.escape(type(exc).__name__)}: {html.escape(str(exc))}); the rest of the report is built. "
                "Rerun the job whose metrics.json is named, then --report-only.</p>")
    link = linked("notebook 15", executed_link(rec15, prefix))
    bottom = "".join(f"<li>{_verdict_glyph(m['verdict'][c.id])}{html.escape(m['bottom line'][c.id])}</li>"
                     for c in m["claims"])
    tiny = m["pipeline checks"]
    parts = [f"<section class='claims' id='{sid}'><h2 class='{'' if other else 'first'}'>{html.escape(heading, quote=False)}</h2>",
             f"<p class='note'>{lead}"
             + ("; hover a cell for its reading and reason" if details is None else
                "; the appendix \"the claims in detail\" gives each one's reading and reason")
             + f". Exact values are compared at {whose} printed precision.</p>",
             matrix_table(m, whose), verdict_legend(),
             "<h3>The bottom line, claim by claim</h3>", f"<ul class='bottom'>{bottom}</ul>"]
    if tiny:
        parts.append(f"<p class='note'>The pipeline also ran on {len(tiny)} tiny random model(s) "
                     f"({html.escape(', '.join(tiny))}): pipeline checks, never given a verdict.</p>")
    try:
        if m["seed"] or m["stand-ins"]:  # an empty matrix is said in one line above, not drawn
            parts.append(claims_matrix_figure(m, out_root, embed, prefix,
                                              f"claims_matrix-{sid}.png" if other else "claims_matrix.png",
                                              f"{heading} Trained stand-ins (not {whose} models)" if other else ""))
    except (OSError, ValueError) as exc:
        parts.append(f"<p class='problem'>The matrix figure could not be drawn ({html.escape(str(exc))}).</p>")
    measured = [r for r in rows if r["value"] is not None]
    more = [f"<p class='note'>Each claim read as the table says and as {whose} cells measured it, with the rule, "
            f"the verdict and its reason; then every measured value beside its nulls. Computed by {link}.</p>",
            _claims_table(claims.readings(summary), claims.READINGS_COLUMNS, whose),
            _claims_table(summary, [c for c in claims.SUMMARY_COLUMNS if c != "stand-ins"], whose)]
    for rec, fig in key_figures([rec15])[:1]:
        more.append(f"<figure class='wide'><img src='{_img_src(rec, fig, embed, prefix)}' "
                    f"alt='{html.escape(figure_title(fig))}'></figure>")
    if measured:
        more.append("<h3>Measured values, per claim</h3>")
        cols = [c for c in claims.DETAIL_COLUMNS if c not in ("title", "null explains", "seed value")]
        for c in m["claims"]:
            mine = [r for r in measured if r["claim"] == c.id]
            if mine:
                more.append(f"<h4>{html.escape(c.title)} <span class='kind'>{claims_tables.owner_word(whose)}: "
                            f"{html.escape(c.seed_value)}</span></h4>")
                more.append(_claims_table(mine, cols, whose))
    if details is None:
        parts.append("<details class='claims-details'><summary>Details: readings, rules, reasons and nulls, per "
                     "claim and model</summary>" + "".join(more) + "</details>")
    else:
        details.append(f"<h2 class='appendix' id='{sid + '-details' if other else 'claims-details'}'>Appendix · "
                       f"{'the claims of ' + html.escape(who) if other else 'the claims'} in detail</h2>" + "".join(more))
        parts.append("<p class='note'>The readings, rules, reasons and nulls per claim and model are in the "
                     "appendix \"the claims in detail\".</p>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _verdict_glyph(v: str) -> str:
    cls = claims.VERDICT_CLASS.get(v, "v-not-testable")
    return f"<span class='{cls} glyph'{tip(v + ': ' + claims_tables.VERDICT_MEANING.get(v, ''))}>{claims_tables.VERDICT_GLYPHS.get(v, '')}</span> "
