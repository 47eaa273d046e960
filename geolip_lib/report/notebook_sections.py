"""Per-notebook sections of the findings: title and question, key figures, sections not run,
trajectories over checkpoints, the quantization table and the provenance footer."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import mistune
import nbformat

from .. import quantization_effect, trajectory
from .markup import _th, executed_link, href, linked, linked_html
from .records import FIGURE_TYPES, JobRecord
from .style import MAX_KEY_FIGURES


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
        if r is not lead:  # another job's trajectory over checkpoints before what the lead shows too
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

