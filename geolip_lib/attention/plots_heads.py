"""Figures of notebooks 13 (pentachoron CV against head dimension, over training) and 14
(triple-product attention: resilience, loss curves, copy accuracy, cost per step)."""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .plots_mixers import BAND, BAND_COLORS, _band, bar_pair


# ------------------------------------------------------------------ notebook 13
def _bands(band: Sequence[float] | None, bands: Mapping[str, Sequence[float]] | None) -> dict:
    """``{label: (lo, hi)}`` to shade: ``bands`` when given, else the one unlabelled ``band``."""
    if bands:
        return {str(k): tuple(v) for k, v in bands.items()}
    return {None: tuple(band)} if band is not None else {}


def _shade_bands(fig: Figure, axes, bands: dict) -> None:
    """Shade every band on every axis (widest first, so a narrow band shows on top) and,
    when the bands are labelled, name them in one legend under the figure."""
    order = sorted(bands.items(), key=lambda kv: -(kv[1][1] - kv[1][0]))
    colors = {lab: BAND_COLORS[i % len(BAND_COLORS)] for i, lab in enumerate(bands)}
    for ax in axes:
        for row, (lab, b) in enumerate(order):
            _band(ax, b, color=colors[lab], alpha=0.13 if lab is None or len(bands) == 1 else 0.16, note_row=row)
    if any(lab is not None for lab in bands):
        handles = [Patch(color=colors[lab], alpha=0.3, label=f"{lab}: {b[0]:.2f}–{b[1]:.2f}") for lab, b in bands.items()]
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False,
                   title="CV bands (shaded)", title_fontsize=8)


def cv_vs_head_dim(post_heads: pd.DataFrame, *, band: Sequence[float] | None = BAND, col_wrap: int = 4,
                   groups: Sequence[str] | None = None, bands: Mapping[str, Sequence[float]] | None = None) -> Figure:
    """Post-training CV against head_dim, one panel per quantity, one line per width.

    Parameters
    ----------
    post_heads : DataFrame
        Columns ``group, head_dim, dim, cv`` (one row per run: seeds are aggregated as
        mean ± sd); with a ``mode`` column holding several modes ("varied", "fixed"),
        each mode gets its own line style.
    groups : sequence of str, optional
        Panel order (default: order of appearance).
    band : (lo, hi), optional
        One unlabelled band to shade (ignored when ``bands`` is given).
    bands : {label: (lo, hi)}, optional
        Labelled bands (the project's 0.20–0.23, seed 002's 0.13–0.30), shaded in
        different colours and named in a legend under the panels.

    Returns
    -------
    Figure
        One axis per ``group`` titled with the group, x "head_dim" (log2), y "CV";
        suptitle "post-training CV vs head_dim ...".
    """
    groups = [g for g in (groups or dict.fromkeys(post_heads["group"])) if g in set(post_heads["group"])]
    ncol = min(col_wrap, max(len(groups), 1))
    nrow = int(np.ceil(max(len(groups), 1) / ncol))
    shade = _bands(band, bands)
    labelled = any(lab is not None for lab in shade)
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.9 * ncol, 2.6 * nrow + (0.5 if labelled else 0)), squeeze=False)
    dims = sorted(post_heads["dim"].unique())
    palette = dict(zip(dims, sns.color_palette("viridis", len(dims))))
    style = "mode" if "mode" in post_heads and post_heads["mode"].nunique() > 1 else None
    present = list(dict.fromkeys(post_heads["mode"])) if style else []
    style_order = [m for m in ("varied", "fixed") if m in present] + [m for m in present if m not in ("varied", "fixed")]
    for ax, g in zip(axes.flat, groups):
        sub = post_heads[post_heads["group"] == g]
        sns.lineplot(data=sub, x="head_dim", y="cv", hue="dim", palette=palette, style=style,
                     style_order=style_order or None, marker="o", errorbar="sd", ax=ax, legend=ax is axes.flat[0])
        ax.set_xscale("log", base=2)
        ax.set_title(g)
        ax.set_xlabel("head_dim")
        ax.set_ylabel("CV")
    for ax in list(axes.flat)[len(groups):]:
        ax.remove()
    _shade_bands(fig, fig.axes, shade)
    if style and fig.axes and fig.axes[0].get_legend() is not None:
        sns.move_legend(fig.axes[0], "upper left", fontsize=6, title=None)
    what = "bands shaded" if len(shade) > 1 else "band shaded"
    modes = f"; line style: {' solid / '.join(style_order)} dashed data and init" if style else ""
    fig.suptitle(f"post-training CV vs head_dim (mean ± sd over seeds, heads averaged; {what}{modes})")
    fig.tight_layout(rect=(0, 0.07 if labelled else 0, 1, 1))
    return fig


def cv_trajectory(traj: pd.DataFrame, *, band: Sequence[float] | None = BAND,
                  bands: Mapping[str, Sequence[float]] | None = None) -> Figure:
    """Activation CV before / mid / after training, one panel per quantity, one line per config.

    Parameters
    ----------
    traj : DataFrame
        Columns ``group, phase`` (pre/mid/post), ``dim, heads, cv`` (one row per run).
    band, bands : optional
        The CV band(s) to shade, as in :func:`cv_vs_head_dim`.

    Returns
    -------
    Figure
        One axis per ``group`` titled with the group, x "training phase", y "CV";
        suptitle "activation CV before / mid / after training".
    """
    traj = traj.assign(config=[f"D{d}/H{h}" for d, h in zip(traj["dim"], traj["heads"])])
    traj["phase"] = pd.Categorical(traj["phase"], ["pre", "mid", "post"], ordered=True)
    groups = list(dict.fromkeys(traj["group"]))
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(3.6 * max(len(groups), 1), 3.4), squeeze=False)
    configs = list(dict.fromkeys(traj.sort_values(["dim", "heads"])["config"]))
    palette = dict(zip(configs, sns.color_palette("viridis", len(configs))))
    for ax, g in zip(axes[0], groups):
        sub = traj[traj["group"] == g]
        sns.pointplot(data=sub, x="phase", y="cv", hue="config", hue_order=configs, palette=palette, errorbar="sd",
                      dodge=0.5, markersize=3.5, linewidth=1.1, err_kws={"linewidth": 0.8, "alpha": 0.6}, ax=ax,
                      legend=ax is axes[0, -1])
        ax.set_title(g)
        ax.set_xlabel("training phase")
        ax.set_ylabel("CV")
    shade = _bands(band, bands)
    _shade_bands(fig, axes[0], shade)
    if axes[0, -1].get_legend() is not None:
        sns.move_legend(axes[0, -1], "upper left", bbox_to_anchor=(1.02, 1), fontsize=7, title="config")
    fig.suptitle("activation CV before / mid / after training (mean ± sd over seeds)")
    fig.tight_layout(rect=(0, 0.1 if any(lab is not None for lab in shade) else 0, 1, 1))
    return fig


# ------------------------------------------------------------------ notebook 14
def resilience(res: Mapping) -> Figure:
    """Dot product vs Gram score of a loud misaligned key (:func:`~geolip_lib.attention.resilience_table`).

    Returns
    -------
    Figure
        Two axes: "dot-product score" (y "q · k") and "Gram score (true match: det G = 0)"
        (y "det G (= −score)"), both x "noise key magnitude m" (log).
    """
    df = pd.DataFrame(res["rows"])
    m = df["magnitude"].to_numpy(float)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    axes[0].plot(m, df["dot_fixed"], "o-", label="fixed leak (seed)")
    axes[0].plot(m, df["dot_scaled"], "s-", label="scaled leak")
    axes[0].axhline(res["match"]["dot"], color="k", ls="--", lw=1, label="true match")
    axes[0].set(xscale="log", xlabel="noise key magnitude m", ylabel="q · k", title="dot-product score")
    axes[1].plot(m, -df["gram_fixed"], "o-", label="fixed leak (seed)")
    axes[1].plot(m, -df["gram_scaled"], "s--", label="scaled leak")
    axes[1].set(xscale="log", yscale="log", xlabel="noise key magnitude m", ylabel="det G (= −score)",
                title="Gram score (true match: det G = 0)")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def loss_curves(curves: pd.DataFrame, *, loss_floor: float, uniform: float) -> Figure:
    """Training loss of both attention types (mean ± sd over seeds) with the floor and a uniform guess.

    Parameters
    ----------
    curves : DataFrame
        Columns ``attention, seed, step, loss``.
    loss_floor : float
        Best achievable mean loss (first-half targets are noise).
    uniform : float
        ``ln(vocab)``: the loss of a uniform guess.

    Returns
    -------
    Figure
        One axis titled "copy task: training loss (mean ± sd over N seeds)", x "step",
        y "cross-entropy (nats)".
    """
    fig, ax = plt.subplots(figsize=(7, 4))
    sns.lineplot(data=curves, x="step", y="loss", hue="attention", errorbar="sd", ax=ax)
    ax.axhline(loss_floor, color="k", ls=":", lw=1, label="floor (first half random)")
    ax.axhline(uniform, color="grey", ls="--", lw=1, label="uniform guess")
    ax.set(title=f"copy task: training loss (mean ± sd over {curves['seed'].nunique()} seeds)", xlabel="step",
           ylabel="cross-entropy (nats)")
    ax.legend(loc="upper right", fontsize=8)
    return fig


def copy_accuracy(final: pd.DataFrame, *, chance: float, intervals: Mapping[str, tuple] | None = None) -> Figure:
    """Accuracy on the copied half per attention type: seeds as points, mean with its 95 % interval.

    Parameters
    ----------
    final : DataFrame
        Columns ``attention, seed, acc_copied, acc_copied_init``.
    chance : float
        ``1 / vocab`` (dotted line).
    intervals : dict, optional
        ``{attention: (lo, hi)}``: the 95 % interval of the mean over seeds (error bar).

    Returns
    -------
    Figure
        One axis titled "after training", x "attention", y "accuracy on the copied half".
    """
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    types = list(dict.fromkeys(final["attention"]))
    for i, a in enumerate(types):
        sub = final[final["attention"] == a]
        mean = float(sub["acc_copied"].mean())
        ax.bar(i, mean, color=sns.color_palette("deep")[i], alpha=0.6, width=0.6)
        if intervals and a in intervals:
            lo, hi = intervals[a]
            ax.errorbar(i, mean, yerr=[[mean - max(lo, 0.0)], [min(hi, 1.0) - mean]], color="k", capsize=5,
                        label="95 % interval (seeds)" if i == 0 else None)
        ax.scatter(np.full(len(sub), i) + np.linspace(-0.12, 0.12, len(sub)), sub["acc_copied"], color="k", s=14,
                   zorder=3, label="seed" if i == 0 else None)
        ax.scatter(i, float(sub["acc_copied_init"].mean()), marker="x", color="tab:red", zorder=3,
                   label="at init (mean)" if i == 0 else None)
    ax.axhline(chance, color="k", ls=":", lw=1, label="chance")
    ax.set_xticks(range(len(types)), types)
    ax.set(ylim=(0, 1.02), xlabel="attention", ylabel="accuracy on the copied half", title="after training")
    ax.legend(fontsize=8)
    return fig


def cost_per_step(cost: pd.DataFrame, *, device: str, memory_kind: str) -> Figure:
    """Time and memory per training step of each attention type.

    Parameters
    ----------
    cost : DataFrame
        Index attention type; columns ``ms_per_step``, ``memory_MiB``.

    Returns
    -------
    Figure
        Two axes: "time per step (device)" (y "ms / step (median)") and
        "memory per step (kind)" (y "MiB").
    """
    return bar_pair(cost, "attention", ("ms_per_step", "ms / step (median)", f"time per step ({device})"),
                    ("memory_MiB", "MiB", f"memory per step ({memory_kind})"))
