"""Figures of the claims findings (notebook 15 and the top of the report)."""
from __future__ import annotations

import functools
import math
import re
import textwrap
from typing import Callable, Union

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from .registry import ClaimSet, load
from .rules import FORCED, HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, NOT_TESTED, UNDECIDED
from .tables import VERDICT_COLORS, for_owner, owner, owner_word

__all__ = ["claims_forest", "claims_matrix", "VERDICT_COLORS", "VERDICT_MARKERS"]

#: one marker per status (beside its colour, tables.VERDICT_COLORS: the HTML's too), so that a verdict reads
#: without colour
VERDICT_MARKERS = {HELD: "o", HELD_NULL: "s", NOT_HELD: "X", NOT_HELD_NULL: "v", UNDECIDED: "D", NOT_TESTED: "o",
                   FORCED: "P"}
NULL_MARKERS = {"gaussian": "s", "random init": "D", "unit sphere": "^", "unmodulated": "v", "no lift": "|"}
_SHORT = {"as the table says = as the seed measured": "table = seed", "as the table says": "table",
          "as the seed measured": "seed", "the project's own reading": "project"}


#: characters per line of a panel's title (its axes' width) and of a row's label or a panel's message
TITLE_CHARS, LABEL_CHARS = 46, 44


def _short(reading: str) -> str:
    for k, v in _SHORT.items():
        if reading.startswith(k):
            return v
    return reading


def _plain_text(draw: Callable) -> Callable:
    """Draw with every string taken literally: a claims file's title, a model's name or a seed value with a
    "$" would otherwise be parsed by matplotlib as mathtext (an unmatched "$" raised and stopped notebook 15).
    The setting is read when each text is created, so it holds when the figure is saved later."""
    @functools.wraps(draw)
    def wrapped(*args, **kwargs):
        with plt.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)
    return wrapped


@_plain_text
def claims_forest(rows: list[dict], max_rows: int = 10, claims: Union[str, ClaimSet, None] = None):
    """One panel per claim: every measured (reading, model, scope) as value ± 95 % interval (an
    exact value as a point, marked "exact"), coloured and shaped by its verdict (held, held but
    the null gives it too, not held, undecided, forced by shape), the rule's region shaded, the
    seed's own values as dotted lines, the nulls as hollow markers. A claim with nothing
    measured says so in its panel, with each reading's status.

    Parameters
    ----------
    rows : list of dict
        :func:`geolip_lib.claims.evaluate` rows.
    max_rows : int
        At most this many rows per panel (the readings' own models first); a panel that leaves rows
        out says how many.
    claims : claims file (name, path or loaded set); default seed 001
    """
    cs = load(claims)
    n = len(cs.claims)
    ncol = 2
    nrow = math.ceil(n / ncol)
    # a panel's height follows its rows (a pair's label takes two lines); titles and labels are wrapped to the
    # panel's width, so a long claim title or pair name never runs over the next panel
    per = [min(max_rows, sum(1 for r in rows if r["claim"] == c.id and isinstance(r["value"], (int, float))))
           for c in cs.claims]
    heights = [max(2.4, 1.3 + 0.42 * max(per[i * ncol:(i + 1) * ncol] or [0])) for i in range(nrow)]
    fig, axes = plt.subplots(nrow, ncol, figsize=(11, sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, c in zip(axes.flat, cs.claims):
        mine = [r for r in rows if r["claim"] == c.id and isinstance(r["value"], (int, float))
                and not isinstance(r["value"], bool)]
        total = len(mine)
        mine = sorted(mine, key=lambda r: (not r["seed model"], r["form"], r["model"], r["scope"]))[:max_rows]
        ax.set_title(textwrap.fill(f"{c.title} — seed: {c.seed_value}", TITLE_CHARS), fontsize=8.5, loc="left")
        if total > len(mine):  # never cut silently: the panel says how many rows it leaves out
            ax.text(1.0, -0.02, f"{total - len(mine)} more of {total} rows not shown (the details table has all)",
                    ha="right", va="top", transform=ax.transAxes, fontsize=6, color="0.3")
        _reference(ax, c)
        if not mine:
            status = [r for r in rows if r["claim"] == c.id]
            msg = "\n".join(textwrap.fill(for_owner(t, owner(cs)), LABEL_CHARS, break_on_hyphens=False) for t in sorted(
                {f"[{_short(r['reading'])}] {r['model']}: {r['verdict']}" for r in status if r["seed model"]})[:4]
            ) or "not measured on this profile"
            ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, color="0.3", fontsize=7,
                    wrap=True)
            ax.set_yticks([])
            ax.set_xticks([])  # nothing measured: no scale to read
            continue
        labels, seen_nulls = [], set()
        for i, r in enumerate(mine):
            s = c.scale
            col = VERDICT_COLORS.get(r["verdict"], VERDICT_COLORS[NOT_TESTED])
            mk = VERDICT_MARKERS.get(r["verdict"], "o")
            v = float(r["value"]) * s
            if r["lo"] is not None and r.get("kind") != "exact" and not r["lo"] == r["hi"] == r["value"]:
                ax.errorbar(v, i, xerr=[[max(v - r["lo"] * s, 0)], [max(r["hi"] * s - v, 0)]], fmt=mk, color=col,
                            ms=5, capsize=2, lw=1.2)
            else:
                ax.plot(v, i, mk, color=col, ms=6)
                ax.annotate("exact", (v, i), xytext=(4, 3), textcoords="offset points", fontsize=5.5, color=col)
            for k, nv in (r.get("null values") or {}).items():
                if isinstance(nv, (int, float)) and math.isfinite(nv):
                    ax.plot(float(nv) * s, i, NULL_MARKERS.get(k, "x"), mfc="none", mec="0.35", ms=5,
                            label=None if k in seen_nulls else k)
                    seen_nulls.add(k)
            star = "" if r["seed model"] else " (stand-in)"
            scope = f" {r['scope']}" if r["scope"] not in ("", "embedding") else ""
            labels.append(textwrap.fill(for_owner(f"[{_short(r['reading'])}] {r['model']}{scope}{star}", owner(cs)),
                                        LABEL_CHARS,
                                        break_on_hyphens=False))
        ax.set_yticks(range(len(mine)), labels, fontsize=6.5)
        ax.set_ylim(-0.7, len(mine) - 0.3)
        ax.invert_yaxis()
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        if c.unit:
            ax.set_xlabel(c.unit, fontsize=7)
        handles = [h for h in ax.lines if h.get_label() and not h.get_label().startswith("_")]
        if handles:
            ax.legend(handles=handles, fontsize=6, loc="best", frameon=False)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    key = [Line2D([], [], color=VERDICT_COLORS[v], marker=VERDICT_MARKERS[v], ls="", label=v)
           for v in (HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, UNDECIDED, FORCED)]
    fig.legend(handles=key, loc="lower center", ncol=6, fontsize=7, frameon=False)
    fig.suptitle(f"{cs.title}\nvalue ± 95 % interval (a point: exact), by verdict; shaded: the rule's region; "
                 "dotted: the seed's own values; hollow: nulls", fontsize=9)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    return fig


def _reference(ax, c) -> None:
    """Shade the first reading's rule region (finite part), draw the seed's own values."""
    s = c.scale
    for f in c.forms[:1]:
        r = f.rule
        if r.kind in ("band", "all_within") and r.lo is not None and r.hi is not None:
            if r.hi > r.lo:
                ax.axvspan(r.lo * s, r.hi * s, color="#f3d36b", alpha=0.45, lw=0)
            else:
                ax.axvline(r.lo * s, color="#b8860b", ls="--", lw=1)
        elif r.kind == "at_least":
            ax.axvline(r.lo * s, color="#b8860b", ls="--", lw=1)
        elif r.kind == "at_most":
            ax.axvline(r.hi * s, color="#b8860b", ls="--", lw=1)
        elif r.kind == "contains" and r.target is not None:
            ax.axvline(r.target * s, color="#b8860b", ls="--", lw=1)
    for f in c.forms:
        for mr in f.model_rules.values():
            if mr.target is not None:
                ax.axvline(mr.target * s, color="#b8860b", ls=":", lw=1)
        for v in f.reference.values():
            ax.axvline(v * s, color="#b8860b", ls=":", lw=1)


FIGURE_CELL_CHARS = 22  # a cell's text in the figure: wider would run into the next column or the claim labels


#: width of one character of the matrix figure's 7 pt labels, in inches (DejaVu Sans digits and lower case
#: average about 0.55 em; a little more, so that the longest label clears the edge)
CHAR_IN = 0.06


def short_cell_text(text: str, width: int = FIGURE_CELL_CHARS) -> str:
    """A matrix cell's text as the figure prints it under its marker: whole when short, else its value
    without the interval, the counts or the reading (" [", " (", " · "), cut with "…" if still too wide;
    the HTML matrix beside it keeps the whole text."""
    if len(text) <= width:
        return text
    text = re.split(r" \[| \(| · ", text)[0]
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


@_plain_text
def claims_matrix(m: dict, title: str = ""):
    """The verdict matrix (:func:`geolip_lib.claims.tables.matrix`): claims down, models across
    (the seed's models, a dashed line, then the trained stand-ins); each cell a marker whose
    colour and shape give the status (readable in greyscale) and the value under it."""
    cols = m["seed"] + m["stand-ins"]
    rows = m["claims"]
    ncol = max(len(cols), 1)
    texts = {(c.id, x): short_cell_text(m["cells"][(c.id, x)]["text"])
             + (" (deq.)" if m["cells"][(c.id, x)]["dequantized"] else "") for c in rows for x in cols}
    owner = owner_word(m.get("whose", "the seed's"))
    labels = [f"{c.title}\n{owner}: {c.seed_value}" for c in rows]
    # widths from the texts (inches per character at 6.5 / 7 pt): a fixed 1.25 in per column let a value with
    # its interval run into the next column's, and long row labels squeezed the axes
    col_w = max(1.25, CHAR_IN * 6.5 / 7 * max((len(t) for t in texts.values()), default=0) + 0.2)
    left = max(3.2, CHAR_IN * max((len(part) for lab in labels for part in lab.split("\n")), default=0) + 0.3)
    fig, ax = plt.subplots(figsize=(left + col_w * ncol, 1.0 + 0.62 * len(rows)))
    ax.set_xlim(-0.5, ncol - 0.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    for i, c in enumerate(rows):
        for j, x in enumerate(cols):
            cell = m["cells"][(c.id, x)]
            v = cell["verdict"]
            col = VERDICT_COLORS.get(v, VERDICT_COLORS[NOT_TESTED])
            ax.plot(j, i - 0.12, VERDICT_MARKERS.get(v, "o"), color=col, ms=11,
                    mec="black" if v != NOT_TESTED else col, mew=0.6, mfc="none" if v == NOT_TESTED else col)
            ax.text(j, i + 0.26, texts[(c.id, x)], ha="center", va="center", fontsize=6.5, color="0.15")
        if i:
            ax.axhline(i - 0.5, color="0.85", lw=0.6)
    if m["seed"] and m["stand-ins"]:
        ax.axvline(len(m["seed"]) - 0.5, color="0.3", ls="--", lw=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.set_xticks(range(len(cols)), cols, fontsize=7, rotation=25, ha="left")
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    if not cols:
        ax.text(0, (len(rows) - 1) / 2, "no model of the seed's and no trained stand-in ran here", ha="center",
                va="center", fontsize=8, color="0.3")
        ax.set_xticks([])
    groups = []
    if m["seed"]:
        groups.append("left of the dashed line: the seed's models")
    if m["stand-ins"]:
        groups.append(("right: " if m["seed"] else "") + "trained stand-ins (not the seed's models)")
    key = [Line2D([], [], color=VERDICT_COLORS[v], marker=VERDICT_MARKERS[v], ls="", ms=8, mec="black", mew=0.6,
                  label=v) for v in (HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, UNDECIDED, FORCED)]
    key.append(Line2D([], [], color=VERDICT_COLORS[NOT_TESTED], marker=VERDICT_MARKERS[NOT_TESTED], ls="", ms=8,
                      mfc="none", label="not tested"))
    fig.legend(handles=key, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.suptitle(title or ("Do the seed's claims hold? " + "; ".join(groups)), fontsize=8.5, y=0.995)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    return fig
