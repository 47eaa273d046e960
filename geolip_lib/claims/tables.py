"""The claims as display tables and notebook 15's headline counts."""
from __future__ import annotations

import math
from typing import Any, Iterable, Optional, Sequence

import pandas as pd

from ..metrics.intervals import format_value
from ..results import headline as _headline
from .evaluation import readings, summarize
from .summary import READING_DISAGREES
from .power import hinge_absorbed
from .registry import Claim, load
from .rules import FORCED, HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, NOT_TESTED, STATUSES, UNDECIDED, VERDICTS, display_null

__all__ = ["SUMMARY_COLUMNS", "DETAIL_COLUMNS", "READINGS_COLUMNS", "summary_frame", "detail_frame", "readings_frame",
           "headline", "power_sentences", "HEADLINE_KEYS", "VERDICT_GLYPHS", "VERDICT_COLORS", "VERDICT_MEANING", "fold_verdicts", "matrix", "bottom_line", "for_owner",
           "matrix_frame", "owner", "owner_word", "value_head", "value_range"]

#: one row per (claim, reading): the report's lead table
SUMMARY_COLUMNS = ["title", "reading", "seed value", "seed models", "measured as", "verdict", "reason", "stand-ins",
                   "null explains"]
#: one row per (claim, reading, model, scope)
DETAIL_COLUMNS = ["title", "reading", "model", "scope", "seed value", "measured", "project definition", "nulls",
                  "verdict", "reason", "null explains"]
#: one row per claim: each reading's verdict side by side
READINGS_COLUMNS = ["title", "seed value", "as the table says", "as the seed measured", "the project's own reading",
                    "over the readings"]
#: notebook 15's headline keys per status
HEADLINE_KEYS = {"held": "claims_held", "held, but the null gives it too": "claims_held_null_too",
                 "not held": "claims_not_held", "not held, nor by the null": "claims_not_held_nor_null",
                 "undecided": "claims_undecided",
                 "not tested on this profile": "claims_not_tested", "forced by shape": "claims_forced_by_shape"}


def summary_frame(summary: list[dict]):
    """The (claim, reading) table as a DataFrame with the display columns."""
    return pd.DataFrame(summary, columns=list(summary[0]) if summary else SUMMARY_COLUMNS)[SUMMARY_COLUMNS]


def detail_frame(rows: list[dict], seed_models: Optional[bool] = None):
    """Per (claim, reading, model, scope) rows with the display columns (``seed_models``: only
    the readings' own models (True), only the stand-ins (False), or all (None))."""
    rows = [r for r in rows if seed_models is None or r["seed model"] == seed_models]
    return pd.DataFrame(rows, columns=DETAIL_COLUMNS + ["seed model"])[DETAIL_COLUMNS]


def readings_frame(summary: list[dict]):
    """One row per claim: "as the table says" beside "as the seed measured" (verdicts)."""
    return pd.DataFrame(readings(summary), columns=READINGS_COLUMNS)[READINGS_COLUMNS]


#: the grid notebook 10 sweeps by default (its PHASE_ALPHAS), described beside the grids the jobs used
DEFAULT_PHASE_GRID = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def power_sentences(rows: list[dict], table) -> list[str]:
    """Notebook 15's sentences on the change-point test's power: per alpha grid, how much of a hinge
    at the claim's breakpoint a quadratic (and a line) absorbs; the kink tested and whose it is; each
    job's power and the injected kinks found (:mod:`geolip_lib.claims.power`). Empty without a power spec."""
    spec = next((f.power for c in table.claims for f in c.forms if f.power is not None), None)
    if spec is None:
        return []
    grids = {tuple(r["power"]["grid"]): r["job"] for r in rows if r["power"]}
    grids.setdefault(DEFAULT_PHASE_GRID, "notebook 10's default PHASE_ALPHAS")
    out = []
    for grid, where in grids.items():
        quad, line = hinge_absorbed(grid, spec.at, "quadratic"), hinge_absorbed(grid, spec.at, "line")
        out.append(f"{where}: on the {len(grid)}-point grid {grid[0]:g}–{grid[-1]:g}, a hinge at {spec.at:g} keeps "
                   f"{1 - quad:.0%} of its energy beyond a quadratic (absorbed {quad:.0%}; by a line {line:.0%}).")
    out.append(f"The kink tested: slope change {spec.slope_change:g} at {spec.at:g} — {spec.basis}.")
    for r in rows:
        p = r["power"]
        if p and p.get("power") is not None:
            inj = ", ".join(f"{i['multiple']:g}x {'found' if i['found'] else 'not found'}" for i in p["injected"])
            out.append(f"{r['job']}: power {p['power']:.0%} ({p['reps']} experiments); observed sd of the per-seed "
                       f"hinge coefficient {p['hinge_sd']:.3g}; the kink added to the observed curves: {inj}.")
    return out


def headline(summary: list[dict]) -> dict:
    """Notebook 15's headline: how many (claim, reading) rows have each verdict (exact counts)."""
    return {HEADLINE_KEYS[v]: _headline(sum(s["verdict"] == v for s in summary), interval="exact",
                                        label=f"claim readings {v}", fmt="d",
                                        note="Counted over (claim, reading) rows, on each reading's own models "
                                             "(stand-ins excluded).")
            for v in STATUSES}


# ------------------------------------------------------------------------------ the verdict matrix
#: one glyph per status, the same shapes as the figure's markers (plots.VERDICT_MARKERS), so a
#: cell reads in greyscale: held ●, held but the null gives it too ■, not held ✖, not held nor by the null ▼,
#: undecided ◆, not tested ○, forced by shape ✚
VERDICT_GLYPHS = {HELD: "●", HELD_NULL: "■", NOT_HELD: "✖", NOT_HELD_NULL: "▼", UNDECIDED: "◆", NOT_TESTED: "○",
                  FORCED: "✚"}
#: one colour per status, for the HTML matrix, its legend and verdict words (report.style's CSS is made from it)
#: and the figures (claims.plots): the same verdict reads the same colour on the page and in its figure.
#: Dark enough to read as text on white (each at least 4.5:1), and told apart by shape too (the glyphs)
VERDICT_COLORS = {HELD: "#1a7f37", HELD_NULL: "#8a6d00", NOT_HELD: "#c62828", NOT_HELD_NULL: "#8d4f3f", UNDECIDED: "#1f5fa8",
                  NOT_TESTED: "#757575", FORCED: "#6a3d9a"}
#: what each status means, in one line (the report's tooltips, legend and glossary)
VERDICT_MEANING = {
    HELD: "the rule is satisfied and the value is separated from every null that bears on it",
    HELD_NULL: "held, but a null model (random init, a Gaussian, the unmodulated encoder) gives the same value: "
               "not evidence of learning",
    NOT_HELD: "the exact value, or the whole 95 % interval, contradicts the rule",
    NOT_HELD_NULL: "the rule fails, and a null (random init of the same shape) fails it too: this model's size or "
                   "shape cannot show the claim, so the verdict says nothing about training",
    UNDECIDED: "the interval straddles the rule, a bearing null is missing, the readings disagree or the test "
               "lacks power; the reason says what would decide it",
    NOT_TESTED: "no job of this model measured this quantity here",
    FORCED: "the weight shapes fix the value (grouped-query attention): kept out of every verdict",
}


def fold_verdicts(verdicts: Iterable[str]) -> str:
    """One status for several scopes of one model (the rule of :func:`summarize` over scopes):
    not held if any is, else undecided if any is, else not-held-nor-by-the-null if any is, else
    held-but-null if any is, else held if any is; forced by shape when only forced values were measured; else not tested.

    ``verdicts`` may be a generator: it is read once (it was read twice, so a forced
    cell came out "not tested")."""
    verdicts = list(verdicts)
    for v in (NOT_HELD, UNDECIDED, NOT_HELD_NULL, HELD_NULL, HELD):
        if v in verdicts:
            return v
    return FORCED if FORCED in verdicts else NOT_TESTED


def _g(x: float) -> str:
    """A number at 3 significant digits, no exponent for the magnitudes the claims use."""
    return f"{x:.3g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2g}"


def _signed(x: float) -> str:
    """:func:`_g` with a true minus sign (U+2212): beside a range's dash or "to", "-" read as a hyphen."""
    t = _g(x)
    return "−" + t[1:] if t.startswith("-") else t


def value_range(vals: Sequence[float], unit: str = "") -> str:
    """Several values as one range for a reader: ``43–48 %``; where a bound is negative ``−0.535 to −0.204 %``
    (a dash beside a minus sign read as "-0.535--0.204"); one value when both ends print alike. Display
    text only: the numbers a job records are never rewritten."""
    u = f" {unit}" if unit else ""
    lo, hi = min(vals), max(vals)
    if _g(lo) == _g(hi):
        return f"{_signed(lo)}{u}"
    return f"{_signed(lo)}{' to ' if lo < 0 else '–'}{_signed(hi)}{u}"


def _ispan(v: Sequence[int]) -> str:
    return f"{min(v)}" if min(v) == max(v) else f"{min(v)}–{max(v)}"


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _cell(c: Claim, mine: list[dict]) -> dict:
    """One (claim, model) cell: the first reading measured on the model (the others are named),
    its status folded over scopes, and its value (one scope: value [interval]; several: the range)."""
    forms = sorted({r["form"] for r in mine})
    measured = [f for f in forms if any(r["verdict"] != NOT_TESTED for r in mine if r["form"] == f)]
    fi = (measured or forms or [None])[0]
    rows = [r for r in mine if r["form"] == fi]
    verdict = fold_verdicts(r["verdict"] for r in rows)
    # another fair reading of the claim's words that gives this model another verdict: the cell may not show the
    # first reading's alone (MiniLM's rarest words nearer the cone's axis, yet not further out)
    by_form = {f: fold_verdicts(r["verdict"] for r in mine if r["form"] == f) for f in measured}
    split = len({v for v in by_form.values() if v in VERDICTS}) > 1
    if split:
        verdict = UNDECIDED
    nums = [r for r in rows if _is_num(r.get("value")) and r["verdict"] != NOT_TESTED]
    unit = f" {c.unit}" if c.unit else ""
    if len(nums) == 1:
        r = nums[0]
        iv = None if r.get("lo") is None or r.get("kind") == "exact" else (r["lo"] * c.scale, r["hi"] * c.scale)
        text = format_value(r["value"] * c.scale, iv) + unit
    elif nums:
        text = f"{value_range([r['value'] * c.scale for r in nums], c.unit)} ({len(nums)} scopes)"
    else:
        text = "–"
    fb = next((r["forced"] for r in rows if r.get("forced")), None)
    if verdict == FORCED and fb:  # not 0.5001 (n_pos / inner, round-off zeros' signs in it): the nonzero balance
        text = f"nonzero balance {fb['balance']:.4g}" + (
            f" ({_ispan(fb['n_pos'])}+ / {_ispan(fb['n_neg'])}− / {_ispan(fb['n_zero'])} zero per layer, "
            f"{fb['layers']} layers)" if fb.get("layers") else "")
    stand_in = next((r["stand-in reading"] for r in rows if r.get("stand-in reading")), "")
    if stand_in and text != "–":  # the cell says which attention it read
        text += f" · read on {stand_in.split(' (')[0].rsplit(' of ', 1)[-1]}"
    # the weights' rounding is named only where it bears on the claim (its claims file says how): a modulator's
    # phase boundary measured on a dequantized model is no statement about its weights
    deq = next((r.get("dequantized") for r in rows if r.get("dequantized")), None) if c.quantization else None
    reading = rows[0]["reading"] if rows else ""
    others = sorted({r["reading"] for r in mine if r["form"] in measured and r["form"] != fi})
    why = "; ".join(dict.fromkeys(f"{r['scope'] + ': ' if r['scope'] else ''}{r['reason']}" for r in rows
                                  if r.get("reason")))
    if split:
        text += " · readings disagree"  # said in the cell too: a PDF shows no tooltip
        names = {r["form"]: r["reading"] for r in mine}
        why = f"{READING_DISAGREES}: " + "; ".join(f"{names[f]}: {v}" for f, v in by_form.items())
    return {"verdict": verdict, "text": text, "forced": fb, "stand-in reading": stand_in, "values": [r["value"] * c.scale for r in nums],
            "dequantized": deq, "reading": reading, "other readings": others, "reason": why,
            "null values": [(k, v * c.scale) for r in nums for k, v in (r.get("null values") or {}).items()
                            if _is_num(v)]}


def matrix(rows: list[dict], summary: Optional[list[dict]] = None, claims: Any = None,
           pipeline_checks: Sequence[str] = ()) -> dict:
    """The claims as a matrix: claims down, models across — the seed's models that ran here (in
    the claims file's order), then the trained stand-ins — each cell a status and a value
    (:func:`_cell`), and one bottom-line sentence per claim (:func:`bottom_line`).

    ``rows``: :func:`geolip_lib.claims.evaluate`; ``summary``: :func:`~geolip_lib.claims.summarize`
    of them (computed when not given); ``pipeline_checks``: the tiny random models that also ran
    (never columns: :func:`geolip_lib.claims.evaluation.pipeline_checks`).
    Returns ``{"claims": [...], "seed": [model, ...], "stand-ins": [...], "cells": {(claim, model): cell},
    "verdict": {claim: status over the seed's models}, "bottom line": {claim: sentence},
    "pipeline checks": [...]}``.
    """
    cs = load(claims)
    summary = summary if summary is not None else summarize(rows, claims)
    tiny = set(pipeline_checks)
    seed_names = list(dict.fromkeys(m for c in cs.claims for f in c.forms for m in f.models))
    ran = {r["model"] for r in rows
           if not (r["verdict"] == NOT_TESTED and str(r.get("reason", "")).startswith("no finished"))}
    seed = [m for m in seed_names if m in ran]
    stand = sorted({r["model"] for r in rows if r["model"] not in seed_names and r["model"] not in tiny})
    cells = {(c.id, m): _cell(c, [r for r in rows if r["claim"] == c.id and r["model"] == m])
             for c in cs.claims for m in seed + stand}
    verdict = {}
    for c in cs.claims:
        mine = [s for s in summary if s["claim"] == c.id]
        tested = list(dict.fromkeys(s["verdict"] for s in mine if s["verdict"] in VERDICTS))
        verdict[c.id] = (tested[0] if len(tested) == 1 else UNDECIDED if tested else
                         fold_verdicts(s["verdict"] for s in mine))
    out = {"claims": list(cs.claims), "seed": seed, "stand-ins": stand, "cells": cells, "verdict": verdict,
           "summary": summary, "pipeline checks": sorted(tiny), "whose": owner(cs)}
    out["bottom line"] = {c.id: bottom_line(c, out) for c in cs.claims}
    return out


def owner(cs: Any) -> str:
    """Whose claims a claims file holds, for the page's words: "the seed's" (seed 001, seed 004) or "the
    paper's" (a published paper's table, Ethayarajh 2019): read from its title's text before ':'."""
    return "the seed's" if str(getattr(cs, "title", "")).split(":")[0].strip().lower().startswith("seed") \
        else "the paper's"


def owner_word(whose: str) -> str:
    """"seed" or "paper", for labels (``whose``: :func:`owner`'s words)."""
    return "seed" if whose == "the seed's" else "paper"


#: the seed's words in the readings' names, and a paper's for them (a paper has no "seed" that measured)
_OWNER_WORDS = (("as the seed measured", "as the paper measured"), ("[seed's]", "[paper's]"),
                ("table = seed", "table = paper"), ("the seed's cells", "the paper's text"))


def for_owner(text: str, whose: str) -> str:
    """``text`` (a reading's name, a cell, a column head) in the words of the claims' owner: unchanged for a
    seed's claims, "as the paper measured" for a paper's."""
    if owner_word(whose) == "seed":
        return text
    for a, b in _OWNER_WORDS:
        text = text.replace(a, b)
    return text


def value_head(whose: str) -> str:
    """The head of the claimed value's column: "seed value" / "paper's value"."""
    return "seed value" if whose == "the seed's" else "paper's value"


def _where(c: Claim, vals: list[float], whose: str = "the seed's") -> str:
    """Where values lie against the claim's (first reading's) rule: below, above, inside or around it."""
    r = c.forms[0].rule
    lo = None if r.lo is None else r.lo * c.scale
    hi = None if r.hi is None else r.hi * c.scale
    if r.kind == "contains" and r.target is not None:
        lo = hi = r.target * c.scale
    if lo is None and hi is None:
        return ""
    if lo is not None and max(vals) < lo:
        return f", below {whose} value ({c.seed_value})"
    if hi is not None and min(vals) > hi:
        return f", above {whose} value ({c.seed_value})"
    if (lo is None or min(vals) >= lo) and (hi is None or max(vals) <= hi):
        return f", inside {whose} value ({c.seed_value})"
    return f", around {whose} value ({c.seed_value})"


def _span(vals: list[float], unit: str) -> str:
    """The values' range (:func:`value_range`)."""
    return value_range(vals, unit)


def _tally(cells: list[dict], names: Sequence[str] = ()) -> str:
    """How many cells have each status; the models forced by shape are named (``names``: the
    cells' models, in order), since their value is no verdict."""
    counts = {v: sum(cl["verdict"] == v for cl in cells) for v in STATUSES}
    forced = [x for x, cl in zip(names, cells) if cl["verdict"] == FORCED]
    parts = [f"{n} {v}" + (f": {', '.join(forced)}" if v == FORCED and forced else "")
             for v, n in counts.items() if n and v != NOT_TESTED]
    if len(parts) == 1 and len(cells) > 1:
        return f"{parts[0].split(' ', 1)[1]} on {'both' if len(cells) == 2 else f'all {len(cells)}'}"
    return ", ".join(parts)


def bottom_line(c: Claim, m: dict) -> str:
    """One sentence from the data: the verdict on the seed's models (or that none ran), what the
    trained stand-ins measure against the seed's value, and what the bearing nulls give."""
    seed_cells = [m["cells"][(c.id, x)] for x in m["seed"] if m["cells"][(c.id, x)]["verdict"] != NOT_TESTED]
    v = m["verdict"][c.id]
    whose = m.get("whose", "the seed's")
    if v == NOT_TESTED or not seed_cells:
        first = f"not tested on {whose} models here"
    else:
        vals = [x for cl in seed_cells if cl["verdict"] != FORCED for x in cl["values"]]
        first = f"{v} on {whose} models" + (f" ({_span(vals, c.unit)}{_where(c, vals, whose)})" if vals else "")
    named = [(x, m["cells"][(c.id, x)]) for x in m["stand-ins"]]
    named = [(x, cl) for x, cl in named if cl["verdict"] != NOT_TESTED]
    stand = [cl for _, cl in named]
    if stand:
        # a value forced by shape is counted and named, never part of the range (it is no measurement)
        vals = [x for cl in stand if cl["verdict"] != FORCED for x in cl["values"]]
        n = len(stand)
        second = (f"on {n} trained stand-in{'s' if n > 1 else ''} it is "
                  + (_span(vals, c.unit) + _where(c, vals, whose) if vals else "measured")
                  + f" ({_tally(stand, [x for x, _ in named])})")
        other = {}  # the stand-ins that read a different quantity (self- for cross-attention), by reading
        for x, cl in named:
            if cl.get("stand-in reading"):
                other.setdefault(cl["stand-in reading"].split(" (")[0], []).append(x)
        for what, xs in other.items():
            second += (f" — {'all' if len(xs) == n else f'{len(xs)} of'} {'them' if n > 1 else 'it'}: "
                       f"{what} ({', '.join(xs)}), not the claim's own quantity")
    else:
        second = "no trained stand-in measured it"
    bearing = [display_null(n) for n in c.nulls]
    nulls = [(k, x) for cl in seed_cells + stand for k, x in cl["null values"] if k in bearing]
    third = "; ".join(f"{k} gives {_span([x for kk, x in nulls if kk == k], c.unit)}"
                      for k in dict.fromkeys(k for k, _ in nulls))
    return f"{c.title}: {first}; {second}" + (f", and {third}" if third else "") + "."


def matrix_frame(m: dict):
    """The matrix as a DataFrame (claims down, models across; each cell "glyph value")."""
    cols = m["seed"] + m["stand-ins"]
    data = [{"claim": c.title, "seed value": c.seed_value, "seed's models": m["verdict"][c.id],
             **{x: f"{VERDICT_GLYPHS[m['cells'][(c.id, x)]['verdict']]} {m['cells'][(c.id, x)]['text']}"
                for x in cols}} for c in m["claims"]]
    return pd.DataFrame(data, columns=["claim", "seed value", "seed's models", *cols])
