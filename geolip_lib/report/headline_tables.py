"""Composite tables of headline numbers: one row per job, one column per metric (or transposed),
each cell ``value [95 % interval]`` with its nulls below it."""
from __future__ import annotations

import html
import re

from ..metrics.intervals import format_value
from ..results import nonempty_columns  # one rule for every table (job.table too)
from . import glossary
from .markup import executed_link, linked, tip
from .records import JobRecord
from .style import BIAS_MARK, SEPARATED


def _cell(h: dict) -> str:
    iv = h.get("interval") or {}
    value = format_value(h.get("value"), iv, h.get("fmt"))
    parts = [f"<span class='val' title='{html.escape(iv.get('method') or '', quote=True)}'>{html.escape(value)}</span>"]
    v, lo, hi = h.get("value"), iv.get("lo"), iv.get("hi")
    if v is not None and lo is None:
        parts.append(f"<span class='null' title='{html.escape(iv.get('method') or '', quote=True)}'>(no interval)</span>")
    elif isinstance(v, (int, float)) and lo is not None and hi is not None and not lo <= v <= hi:
        parts[0] = parts[0].replace("</span>", f" {BIAS_MARK}</span>", 1)
    # what kind of number it is: an exact value says over what; a bias-corrected
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

