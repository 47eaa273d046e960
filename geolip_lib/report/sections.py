"""HTML sections of the findings: composite tables of headline numbers, notebook titles and
questions, key figures, the provenance footer and the seed-claims section."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import mistune
import nbformat

from .. import claims
from ..metrics.intervals import format_value
from .records import JobRecord
from .style import BIAS_MARK, MAX_KEY_FIGURES, SEPARATED


# ------------------------------------------------------------------------------ tables
def _cell(h: dict) -> str:
    iv = h.get("interval") or {}
    value = format_value(h.get("value"), iv, h.get("fmt"))
    parts = [f"<span class='val' title='{html.escape(iv.get('method', ''), quote=True)}'>{html.escape(value)}</span>"]
    v, lo, hi = h.get("value"), iv.get("lo"), iv.get("hi")
    if v is not None and lo is None:
        parts.append(f"<span class='null' title='{html.escape(iv.get('method') or '', quote=True)}'>(no interval)</span>")
    elif isinstance(v, (int, float)) and lo is not None and hi is not None and not lo <= v <= hi:
        parts[0] = parts[0].replace("</span>", f" {BIAS_MARK}</span>", 1)
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
    if not ok or not keys:
        return "<p class='note'>No headline metrics recorded.</p>"
    head = "".join(f"<th>{html.escape(labels[k])}</th>" for k in keys)
    rows = []
    for r in ok:
        cells = "".join(f"<td>{_cell(r.headline[k])}</td>" if r.headline.get(k) else "<td>n/a</td>" for k in keys)
        link = f"{link_prefix}{r.notebook}/{r.job_id}/executed.html"
        rows.append(f"<tr><td class='model'><a href='{link}'>{html.escape(r.job_id)}</a></td>{cells}</tr>")
    methods = sorted({(r.headline[k].get("interval") or {}).get("method", "") for r in ok for k in keys
                      if r.headline.get(k) and r.headline[k].get("value") is not None} - {""})
    note_items = "".join(f"<li><b>{html.escape(labels[k])}</b>: {html.escape(v)}</li>" for k, v in notes.items())
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


def _md_inline(text: str) -> str:
    """Markdown of one paragraph -> HTML (bold, code, math left for MathJax)."""
    try:
        return mistune.html(text)
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
        for f in keys:
            if len(picked) < MAX_KEY_FIGURES and all(f["file"] != p[1]["file"] for p in picked):
                picked.append((r, f))
    return picked


def _img_src(rec: JobRecord, fig: dict, embed: bool, prefix: str) -> str:
    if embed:
        data = base64.b64encode((rec.path / fig["file"]).read_bytes()).decode()
        return f"data:image/png;base64,{data}"
    return f"{prefix}{rec.notebook}/{rec.job_id}/{fig['file']}"


def figures_html(records: list[JobRecord], embed: bool = False, prefix: str = "") -> str:
    items = []
    for rec, fig in key_figures(records):
        link = f"{prefix}{rec.notebook}/{rec.job_id}/executed.html"
        cap = f"{html.escape(fig.get('title') or fig['file'])} — <a href='{link}'>{html.escape(rec.job_id)}</a>"
        items.append(f"<figure class='thumb'><a href='{link}'><img src='{_img_src(rec, fig, embed, prefix)}' "
                     f"alt='{html.escape(fig.get('title') or fig['file'])}'></a><figcaption>{cap}</figcaption></figure>")
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
            digest = ", ".join(f"{name}: {info.get('sha256', '')[:12]}" for name, info in w.items()) \
                or (m.get("weights_note") or "–")
            src = m.get("id") or m.get("local_dir") or "–"
            rev = m.get("commit_hash") or m.get("revision") or "–"
            models[m.get("name")] = (m.get("source"), src, rev, m.get("dtype"), digest)
        rows.append(f"<tr><td>{html.escape(r.notebook)}</td><td>{html.escape(r.job_id)}</td>"
                    f"<td>{p.get('wall_time_s', '–')}</td><td>{html.escape(str(p.get('dtype') or '–'))}</td>"
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
    cls = {"held": "v-held", "not held": "v-not-held"}.get(v, "v-not-testable")
    return f"<span class='{cls}'>{html.escape(v)}</span>"


def _claims_table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th class='{c.replace(' ', '-')}'>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td class='{c.replace(' ', '-')}'>"
                                    f"{_verdict(r[c]) if c == 'verdict' else html.escape(str(r.get(c) or ''))}</td>"
                                    for c in columns) + "</tr>" for r in rows)
    return f"<div class='tablewrap'><table class='claims'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def seed_claims_section(out_root: Path, groups: dict[str, list[JobRecord]], *, embed: bool = False,
                        prefix: str = "") -> str:
    """The findings' lead: seed 001's summary table with a verdict and reason per claim
    (:mod:`geolip_lib.claims`, read from every job under ``out_root``), notebook 15's
    figure, and every model's measured value beside the seed's."""
    rows = claims.evaluate(out_root)
    summary = claims.summarize(rows)
    measured = [r for r in rows if r["value"] is not None]
    parts = ["<section class='claims' id='seed-claims'><h2 class='first'>Do the seed's claims hold?</h2>",
             "<p class='note'>Seed 001's summary table of \"universal constants\" and its best modulator result, "
             "each tested in the seed's own definition on this profile's jobs. <b>held</b>: the 95 % interval "
             "satisfies the claim's rule on every tested seed model; <b>not held</b>: an interval contradicts it; "
             "<b>not testable on this profile</b>: a seed model's job is missing, the quantity does not apply, or "
             "an interval straddles the threshold. Stand-ins are the models the seed did not measure (the demo's "
             "MiniLM and tiny random models): whether the property holds there, not a verdict on the seed's "
             f"claim. Details: <a href='{prefix}{CLAIMS_NOTEBOOK}/all/executed.html'>notebook 15</a>.</p>",
             _claims_table(summary, ["title", "seed value", "seed models", "verdict", "reason", "stand-ins",
                                     "null explains"])]
    for rec, fig in key_figures([r for r in groups.get(CLAIMS_NOTEBOOK) or [] if r.ok])[:1]:
        parts.append(f"<figure class='wide'><img src='{_img_src(rec, fig, embed, prefix)}' "
                     f"alt='{html.escape(fig.get('title') or fig['file'])}'></figure>")
    if measured:
        parts.append("<h3>Measured values, per model and scope</h3>")
        parts.append(_claims_table(measured, ["title", "model", "scope", "seed value", "measured",
                                              "project definition", "nulls", "verdict", "reason"]))
    parts.append("</section>")
    return "\n".join(p for p in parts if p)
