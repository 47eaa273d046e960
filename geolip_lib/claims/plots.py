"""Figures of the seed-claims findings (notebook 15 and the top of the report)."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from .registry import CLAIMS, claim
from .rules import HELD, NOT_HELD, NOT_TESTABLE

VERDICT_COLORS = {HELD: "#1a7f37", NOT_HELD: "#c62828"}
UNDECIDED = "#8a8a8a"
NULL_MARKERS = {"gaussian": "s", "random init": "D", "unit sphere": "^"}


def claims_forest(rows: list[dict], max_rows: int = 10):
    """One panel per claim: every measured model/scope as value ± 95 % interval, coloured by
    verdict (green held, red not held, grey not testable), the seed's value or band shaded,
    the nulls as hollow markers. Claims with nothing measured say so in their panel.

    Parameters
    ----------
    rows : list of dict
        :func:`geolip_lib.claims.evaluate` rows.
    max_rows : int
        At most this many model/scope rows per panel (seed models first).
    """
    n = len(CLAIMS)
    ncol = 2
    nrow = math.ceil(n / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(11, 2.3 * nrow), squeeze=False)
    for ax, c in zip(axes.flat, CLAIMS):
        mine = [r for r in rows if r["claim"] == c.id and r["value"] is not None]
        mine = sorted(mine, key=lambda r: (not r["seed model"], r["model"], r["scope"]))[:max_rows]
        ax.set_title(f"{c.title} — seed: {c.seed_value}", fontsize=9, loc="left")
        _reference(ax, c)
        if not mine:
            tested = [r for r in rows if r["claim"] == c.id and r["verdict"] != NOT_TESTABLE]
            msg = ("\n".join(f"{r['model']}: {r['verdict']} ({r['reason']})" for r in tested[:3]) if tested
                   else "not measured on this profile")
            ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, color="grey", fontsize=8,
                    wrap=True)
            ax.set_yticks([])
            ax.xaxis.set_major_locator(MaxNLocator(5))
            continue
        labels = []
        for i, r in enumerate(mine):
            s = c.scale
            col = VERDICT_COLORS.get(r["verdict"], UNDECIDED)
            v = float(r["value"]) * s
            if r["lo"] is not None:
                ax.errorbar(v, i, xerr=[[v - r["lo"] * s], [r["hi"] * s - v]], fmt="o", color=col, ms=5,
                            capsize=2, lw=1.2)
            else:
                ax.plot(v, i, "o", color=col, ms=5)
            for k, nv in (r.get("null values") or {}).items():
                if isinstance(nv, (int, float)) and math.isfinite(nv):
                    ax.plot(float(nv) * s, i, NULL_MARKERS.get(k, "x"), mfc="none", mec="0.35", ms=5,
                            label=k if i == 0 or k not in {h.get_label() for h in ax.lines} else None)
            star = "" if r["seed model"] else " (stand-in)"
            labels.append(f"{r['model']}{' ' + r['scope'] if r['scope'] not in ('', 'embedding') else ''}{star}")
        ax.set_yticks(range(len(mine)), labels, fontsize=7)
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
    fig.suptitle("Seed 001's claims: measured value ± 95 % interval (green held, red not held, grey undecided); "
                 "shaded: the seed's value", fontsize=9)
    fig.tight_layout()
    return fig


def _reference(ax, c) -> None:
    """Shade the seed's band, or draw its value(s)."""
    r, s = c.rule, c.scale
    if r.kind in ("band", "all_within"):
        ax.axvspan(r.lo * s, r.hi * s, color="#f3d36b", alpha=0.45, lw=0)
    elif r.kind == "at_least":
        ax.axvline(r.lo * s, color="#b8860b", ls="--", lw=1)
    elif r.kind == "equals" or (r.kind == "contains" and r.target is not None and math.isfinite(r.target)):
        ax.axvline(r.target * s, color="#b8860b", ls="--", lw=1)
    for v in c.seed_reference.values():
        ax.axvline(v * s, color="#b8860b", ls=":", lw=1)


__all__ = ["claims_forest", "claim"]
