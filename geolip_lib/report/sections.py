"""HTML sections of the findings: composite tables of headline numbers, notebook titles and
questions, key figures, the provenance footer and the seed-claims section."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from urllib.parse import quote

import mistune
import nbformat

from .. import claims
from ..metrics.intervals import format_value
from ..results import nonempty_columns  # one rule for every table (job.table too)
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


def composite_table(records: list[JobRecord], link_prefix: str = "") -> str:
    """HTML table: one row per job, one column per headline metric.

    Each cell holds ``value [lo, hi]`` and, below it, each null model's value; ``✱`` marks
    a null that the interval excludes.
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
    head = "".join(f"<th>{html.escape(labels[k])}</th>" for k in keys)
    rows = []
    for r in ok:
        cells = "".join(f"<td>{_cell(r.headline[k])}</td>" if r.headline.get(k) else "<td>n/a</td>" for k in keys)
        rows.append(f"<tr><td class='model'>{linked(r.job_id, executed_link(r, link_prefix))}</td>{cells}</tr>")
    methods = sorted({(r.headline[k].get("interval") or {}).get("method") or "" for r in ok for k in keys
                      if r.headline.get(k) and r.headline[k].get("value") is not None} - {""})
    note_items = "".join(f"<li><b>{html.escape(labels[k])}</b>: {html.escape(v)}</li>" for k, v in notes.items()
                         if k in keys)
    foot = ("<p class='note'>Intervals: " + html.escape("; ".join(_shorten_methods(methods))) + ".</p>") if methods else ""
    return (f"<div class='tablewrap'><table class='composite'><thead><tr><th>job</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>{foot}"
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
    items = []
    for rec, fig in key_figures(records):
        link = executed_link(rec, prefix)
        title = html.escape(figure_title(fig))
        img = f"<img src='{_img_src(rec, fig, embed, prefix)}' alt='{title}'>"
        cap = f"{title} — {linked(rec.job_id, link)}"
        body = f"<a href='{link}'>{img}</a>" if link else img
        items.append(f"<figure class='thumb'>{body}<figcaption>{cap}</figcaption></figure>")
    return f"<div class='figs'>{''.join(items)}</div>" if items else ""


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
            digest = ", ".join(f"{name}: {(info.get('sha256') or '')[:12]}" for name, info in w.items()) \
                or (m.get("weights_note") or "–")
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
    cls = claims.VERDICT_CLASS.get(v, "v-not-testable")
    return f"<span class='{cls}'>{html.escape(v)}</span>"


def _claims_table(rows: list[dict], columns: list[str]) -> str:
    columns = nonempty_columns(rows, columns)
    head = "".join(f"<th class='{c.replace(' ', '-')}'>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td class='{c.replace(' ', '-')}'>"
                                    f"{_verdict(str(r[c])) if c == 'verdict' else html.escape(str(r.get(c) or ''))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def claims_record(groups: dict[str, list[JobRecord]]) -> JobRecord | None:
    """Notebook 15's finished job under this root, if it ran."""
    return next((r for r in groups.get(CLAIMS_NOTEBOOK) or [] if r.ok), None)


def seed_claims_section(out_root: Path, groups: dict[str, list[JobRecord]], *, embed: bool = False,
                        prefix: str = "") -> str:
    """The findings' lead: seed 001's summary table with a verdict and reason per claim
    (:mod:`geolip_lib.claims`, read from every job under ``out_root``), notebook 15's
    figure, and every model's measured value beside the seed's.

    Shown only where notebook 15 ran on this root; otherwise one line says where to see it.
    """
    rec15 = claims_record(groups)
    if rec15 is None:
        return ("<p class='note' id='seed-claims'>Whether the seed's claims hold is tested by notebook "
                f"<code>{CLAIMS_NOTEBOOK}</code>, which did not run on this output root: run it after the other "
                f"notebooks (<code>python run_all.py --profile &lt;profile&gt; --notebooks {CLAIMS_NOTEBOOK}</code>; "
                "it is in the tiny, demo, shapes and paper profiles) and its verdicts lead this "
                "page.</p>")
    try:
        rows = claims.evaluate(out_root)
        summary = claims.summarize(rows)
    except (AttributeError, KeyError, TypeError, ValueError, OSError) as exc:  # a job's record of the wrong shape
        return (f"<p class='problem' id='seed-claims'>The seed's claims could not be evaluated from {html.escape(str(out_root))} "
                f"({html.escape(type(exc).__name__)}: {html.escape(str(exc))}); the rest of the report is built. "
                "Rerun the job whose metrics.json is named, then --report-only.</p>")
    measured = [r for r in rows if r["value"] is not None]
    details = linked("notebook 15", executed_link(rec15, prefix))
    parts = ["<section class='claims' id='seed-claims'><h2 class='first'>Do the seed's claims hold?</h2>",
             "<p class='note'>Seed 001's summary table of \"universal constants\" and its best modulator result, "
             "each read as the table says and as the seed's cells measured it, on this profile's jobs. "
             "<b>held</b>: the rule is satisfied and the value is separated from every null that bears on it; "
             "<b>held, but the null gives it too</b>: a null (random init, a Gaussian, the unmodulated encoder) "
             "satisfies it as well, so training did not produce it; <b>not held</b>: the exact value or the whole "
             "interval contradicts it; <b>undecided</b>: the interval straddles the rule, a bearing null is "
             "missing or the test lacks power (the reason says what would decide it); <b>not tested on this "
             "profile</b>: no job of the reading's models ran; <b>forced by shape</b>: fixed by the weight "
             "shapes, kept out. Exact values are compared at the seed's printed precision. Stand-ins are the "
             "models the seed did not measure (the demo's MiniLM and tiny random models): whether the property "
             f"holds there, not a verdict on the seed's claim. Details: {details}.</p>",
             _claims_table(claims.readings(summary), claims.READINGS_COLUMNS),
             _claims_table(summary, claims.SUMMARY_COLUMNS)]
    for rec, fig in key_figures([rec15])[:1]:
        parts.append(f"<figure class='wide'><img src='{_img_src(rec, fig, embed, prefix)}' "
                     f"alt='{html.escape(figure_title(fig))}'></figure>")
    if measured:
        parts.append("<h3>Measured values, per model and scope</h3>")
        parts.append(_claims_table(measured, [c for c in claims.DETAIL_COLUMNS if c != "null explains"]))
    parts.append("</section>")
    return "\n".join(p for p in parts if p)
