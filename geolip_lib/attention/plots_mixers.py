"""Figures of notebook 12 (constellation relay vs attention: depth, interleaving, causal
intervention, throughput, sequence scaling) and the CV-band shading the attention figures share."""
from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter


#: the project's pentachoron-CV band, shaded in the CV panels
BAND = (0.20, 0.23)


#: shading of the labelled CV bands of notebook 13 (the project's band over seed 002's wider one)
BAND_COLORS = ("tab:green", "tab:orange", "tab:purple")


def _band(ax, band: Sequence[float] | None, label: str | None = None, color: str = "tab:green",
          alpha: float = 0.13, note_row: int = 0) -> None:
    """Shade the CV band without letting it set the y range (a band far from the data would
    squash the curves into a thin strip). A band outside the data's range keeps its legend
    entry, marked "above/below this range", when ``label`` is given (the caller draws the
    legend afterwards); otherwise a corner note names it."""
    if band is None:
        return
    lo, hi = ax.get_ylim()
    outside = "above" if band[0] >= hi else "below" if band[1] <= lo else None
    text = label if outside is None or label is None else f"{label} ({outside} this range)"
    ax.axhspan(*band, color=color, alpha=alpha, label=text)
    ax.set_ylim(lo, hi)
    if outside and label is None:  # note_row stacks the notes of several bands
        y = 0.97 - 0.08 * note_row if outside == "above" else 0.03 + 0.08 * note_row
        ax.text(0.98, y, f"band {band[0]:g}–{band[1]:g} {outside} this range",
                transform=ax.transAxes, ha="right", va="top" if outside == "above" else "bottom", fontsize=7,
                color=color)


# ------------------------------------------------------------------ notebook 12
def bar_pair(frame: pd.DataFrame, xlabel: str, left: tuple, right: tuple) -> Figure:
    """Two bar charts side by side over ``frame``'s index; ``left`` / ``right`` are
    ``(column, ylabel, title)``."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, (col, ylabel, title) in zip(axes, (left, right)):
        sns.barplot(x=list(frame.index), y=frame[col].to_numpy(float), ax=ax)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    fig.tight_layout()
    return fig


def depth_sweep(depth_df: pd.DataFrame, cv_input: float, *, cv_intervals: pd.DataFrame | None = None,
                band: Sequence[float] | None = BAND) -> Figure:
    """Geometry of three stacked mixers against depth: CV_n, cosine to input, effective dimension.

    Parameters
    ----------
    depth_df : DataFrame
        Columns ``arch, depth, cv_n, cos_to_input, eff_dim_sv_pr``.
    cv_input : float
        CV_n of the Gaussian input (dotted line: the null).
    cv_intervals : DataFrame, optional
        Columns ``arch, depth, lo, hi``: 95 % intervals of ``cv_n`` drawn as error bars.
    band : (lo, hi) or None
        Shaded CV band.

    Returns
    -------
    Figure
        Three axes titled "pentachoron CV (unit rows)", "cosine to input",
        "effective dim (singular-value PR)", x label "depth (layers)".
    """
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    archs = list(dict.fromkeys(depth_df["arch"]))
    colors = dict(zip(archs, sns.color_palette("deep", len(archs))))
    cols = [("cv_n", "pentachoron CV (unit rows)"), ("cos_to_input", "cosine to input"),
            ("eff_dim_sv_pr", "effective dim (singular-value PR)")]
    for ax, (col, title) in zip(axes, cols):
        for a in archs:
            sub = depth_df[depth_df["arch"] == a].sort_values("depth")
            ax.plot(sub["depth"], sub[col], "o-", color=colors[a], label=a, ms=4)
            if col == "cv_n" and cv_intervals is not None:
                iv = cv_intervals[cv_intervals["arch"] == a].set_index("depth").loc[sub["depth"]]
                ax.fill_between(sub["depth"], iv["lo"], iv["hi"], color=colors[a], alpha=0.2, lw=0)
        ax.set_title(title)
        ax.set_xlabel("depth (layers)")
        ax.set_ylabel(col)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].axhline(cv_input, color="k", ls=":", lw=1, label="Gaussian input")
    _band(axes[0], band, f"band {band[0]:g}–{band[1]:g}" if band is not None else None)
    axes[0].legend(fontsize=8)
    fig.suptitle("Stacked mixers at random init (shaded: 95 % bootstrap interval over simplices)"
                 if cv_intervals is not None else "Stacked mixers at random init")
    fig.tight_layout()
    return fig


def interleaved(inter_df: pd.DataFrame, *, band: Sequence[float] | None = BAND) -> Figure:
    """CV_n and cosine to input along an attention/hybrid interleaved stack.

    Parameters
    ----------
    inter_df : DataFrame
        Columns ``step, type, cv_n, cos_to_input``.

    Returns
    -------
    Figure
        Two axes titled "interleaved stack: cv_n" and "interleaved stack: cos_to_input",
        x label "layer".
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col in zip(axes, ["cv_n", "cos_to_input"]):
        ax.plot(inter_df["step"], inter_df[col], "-", color="grey", lw=1)
        sns.scatterplot(data=inter_df, x="step", y=col, hue="type", s=40, ax=ax)
        ax.set_title(f"interleaved stack: {col}")
        ax.set_xlabel("layer")
        ax.set_ylabel(col)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _band(axes[0], band, f"band {band[0]:g}–{band[1]:g}" if band is not None else None)
    for ax in axes:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def causal_intervention(causal_df: pd.DataFrame, *, floor: float = 1e-12) -> Figure:
    """Mean change of the other tokens when token 0 is replaced, per mixer and stack depth.

    Parameters
    ----------
    causal_df : DataFrame
        Columns ``arch, layers, other_delta_norm`` (and optionally ``lo, hi``: a 95 %
        interval drawn as an error bar).
    floor : float
        Exact zeros (the pure relay) are drawn at ``floor`` on the log axis.

    Returns
    -------
    Figure
        One axis, log y, y label "mean |Δ| of tokens 1..S-1", x label "mixer".
    """
    fig, ax = plt.subplots(figsize=(6.8, 3.8))
    archs = list(dict.fromkeys(causal_df["arch"]))
    depths = sorted(causal_df["layers"].unique())
    width = 0.8 / max(len(depths), 1)
    for j, d in enumerate(depths):
        sub = causal_df[causal_df["layers"] == d].set_index("arch").reindex(archs)
        xs = np.arange(len(archs)) + (j - (len(depths) - 1) / 2) * width
        vals = sub["other_delta_norm"].clip(lower=floor).to_numpy(float)
        err = None
        if {"lo", "hi"} <= set(sub.columns):
            lo = sub["lo"].clip(lower=floor).to_numpy(float)
            hi = sub["hi"].clip(lower=floor).to_numpy(float)
            err = np.vstack([np.clip(vals - lo, 0, None), np.clip(hi - vals, 0, None)])
        ax.bar(xs, vals, width=width, label=f"{d} layer{'s' if d != 1 else ''}", yerr=err, capsize=3)
    ax.set_xticks(np.arange(len(archs)), archs)
    ax.set_yscale("log")
    ax.set_xlabel("mixer")
    ax.set_ylabel("mean |Δ| of tokens 1..S-1")
    ax.set_title(f"causal intervention on token 0 (exact 0 drawn at {floor:g})")
    ax.legend(fontsize=8)
    return fig


def throughput(thr: pd.DataFrame, *, batch: int, seq_len: int, device: str) -> Figure:
    """Forward time and parameter count of each mixer.

    Parameters
    ----------
    thr : DataFrame
        Index ``arch``; columns ``ms`` (median ms per forward) and ``params``.

    Returns
    -------
    Figure
        Two axes: "throughput, B=.. S=.. (device)" (y "ms / forward (median)") and
        "parameters per layer" (y "parameters").
    """
    return bar_pair(thr, "mixer", ("ms", "ms / forward (median)", f"throughput, B={batch} S={seq_len} ({device})"),
                    ("params", "parameters", "parameters per layer"))


def seq_scaling(scale_df: pd.DataFrame, *, device: str) -> Figure:
    """Forward time against sequence length, hybrid relay vs attention (log-log).

    Parameters
    ----------
    scale_df : DataFrame
        Index ``S``; columns ``hybrid_ms``, ``attn_ms``.

    Returns
    -------
    Figure
        One axis titled "sequence-length scaling (device)", x "sequence length S",
        y "ms / forward".
    """
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(scale_df.index, scale_df["hybrid_ms"], "o-", label="hybrid relay")
    ax.plot(scale_df.index, scale_df["attn_ms"], "s-", label="vanilla attention")
    ax.set(xscale="log", yscale="log", xlabel="sequence length S", ylabel="ms / forward",
           title=f"sequence-length scaling ({device})")
    ax.set_xticks(list(scale_df.index), [str(v) for v in scale_df.index])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend()
    return fig
