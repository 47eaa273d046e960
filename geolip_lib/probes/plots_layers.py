"""Figures of notebook 01's layer and model-level probes: hidden-state layers, position bias,
cumulative variance, encoder vs decoder, headline numbers against their nulls."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from .embedding import cumulative_variance as cumvar
from .plots_terrain import _color


def layers(geometry: Mapping[str, Mapping]):
    """Mean token norm and mean within-sequence cosine by layer, one line per stack.

    Parameters
    ----------
    geometry : {stack: layer_geometry(...)}
        Lists ``layer``, ``mean_norm``, ``mean_cos`` (and ``std_norm``, ``std_cos`` drawn as bands).

    Returns
    -------
    matplotlib.figure.Figure
        Two axes: norm by layer, cosine by layer.
    """
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    for stack, g in geometry.items():
        x = np.asarray(g["layer"])
        for a, m, s, mk in ((ax[0], "mean_norm", "std_norm", "o-"), (ax[1], "mean_cos", "std_cos", "s-")):
            y, sd = np.asarray(g[m], dtype=float), np.asarray(g[s], dtype=float)
            a.plot(x, y, mk, label=stack)
            a.fill_between(x, y - sd, y + sd, alpha=0.15)
    ax[0].set(title="Mean token norm by layer (± mean within-sequence std)", xlabel="layer", ylabel="norm")
    ax[1].set(title="Mean pairwise cosine by layer (± std)", xlabel="layer", ylabel="cosine")
    for a in ax:
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax[0].legend()
    fig.tight_layout()
    return fig


def position_bias(weights: Mapping[str, np.ndarray]):
    """Relative-position-bias tables as heads × buckets heatmaps, one axes per table.

    Parameters
    ----------
    weights : {module name: ndarray (buckets, heads)}
        ``relative_position_bias(model, return_data=True)[1]``.

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap axes per table (plus colour bars).
    """
    if not weights:
        raise ValueError("weights: expected at least one position-bias table")
    fig, axes = plt.subplots(1, len(weights), figsize=(6 * len(weights), 3.5), squeeze=False)
    for a, (name, tab) in zip(axes[0], weights.items()):
        sns.heatmap(np.asarray(tab).T, cmap="RdBu_r", center=0, ax=a, cbar_kws={"label": "bias"})
        a.set(title=f"{name.split('.')[0]} bias (heads × buckets)", xlabel="bucket", ylabel="head")
    fig.tight_layout()
    return fig


def cumulative_variance(eigenvalues: Mapping[str, np.ndarray], *, top: int = 200,
                        marks: Sequence[float] = (0.95, 0.99), title: str = ""):
    """Cumulative explained variance of the covariance spectra (seed 001 §13a's panel).

    Parameters
    ----------
    eigenvalues : {name: ndarray}
        Covariance spectra per table (``eigenspectrum(..., return_data=True)[1]``).
    top : int
        Components drawn (the seed drew 200).
    marks : sequence of float
        Variance shares marked by horizontal lines (the seed: 95 % and 99 %); the legend
        gives each table's components for the first mark.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One axes: cumulative share of the variance against the number of components.
    """
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    styles = ("-", "--", ":", "-.")  # the nulls often coincide with the table: dashes keep each line visible
    for j, (name, ev) in enumerate(eigenvalues.items()):
        full = cumvar(ev)
        k = int(np.searchsorted(full, marks[0] - 1e-12) + 1) if len(marks) else None
        lab = name + (f" ({k} components for {marks[0]:.0%})" if k is not None else "")
        c = full[:top]
        ax.plot(np.arange(1, len(c) + 1), c, styles[j % len(styles)], label=lab, color=_color(name), lw=1.6)
    for m in marks:
        ax.axhline(m, color="grey", ls=(0, (1, 3)), lw=0.8)
        ax.annotate(f"{m:.0%}", (0.01, m), xycoords=("axes fraction", "data"), xytext=(0, -2),
                    textcoords="offset points", va="top", fontsize=7, color="grey")
    ax.set(title=title or f"Cumulative explained variance (first {top} components)", xlabel="components",
           ylabel="share of the variance", ylim=(0, 1.02))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def encoder_decoder(result: Mapping[str, Any], intervals: Sequence[Any] | None = None,
                    random_init: Mapping[str, Any] | None = None,
                    random_init_intervals: Sequence[Any] | None = None, *, title: str = ""):
    """Seed 001 §1's encoder-vs-decoder comparison: per-position cosine at layers 0, middle, last.

    Parameters
    ----------
    result : dict
        ``encoder_decoder_cosine(lm)`` (applicable).
    intervals : sequence of Interval, optional
        95 % interval of each layer's mean over positions (``position_interval``).
    random_init, random_init_intervals : optional
        The same for the random-init model (null).
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        Left: cosine per position, one line per layer (x ticks: source | target token);
        right: mean over positions per layer with its interval, beside the random init.
    """
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
    layer_colors = dict(zip([b["layer"] for b in result["by_layer"]], sns.color_palette("viridis", len(result["by_layer"]))))
    n = max(b["n_positions"] for b in result["by_layer"])
    for b in result["by_layer"]:
        ax[0].plot(np.arange(b["n_positions"]), b["cosine"], "o-", color=layer_colors[b["layer"]], label=f"layer {b['layer']}")
    ax[0].axhline(0, color="grey", lw=0.6)
    ax[0].set_xticks(range(n), [f"{result['source_tokens'][t]} | {result['target_tokens'][t]}" for t in range(n)],
                     rotation=60, ha="right", fontsize=7)
    ax[0].set(title="Encoder vs decoder: cosine per position", xlabel="position: source | target token",
              ylabel="cosine")
    ax[0].legend(fontsize=8)
    sets = [("measured", result, intervals, _color("embedding"))]
    if random_init is not None and random_init.get("applicable"):
        sets.append(("random init", random_init, random_init_intervals, _color("random_init")))
    for j, (name, res, ivs, col) in enumerate(sets):
        x = np.arange(len(res["by_layer"])) + (j - (len(sets) - 1) / 2) * 0.18
        for k, b in enumerate(res["by_layer"]):
            iv = ivs[k] if ivs is not None and k < len(ivs) else None
            lo, hi = (iv.lo, iv.hi) if hasattr(iv, "lo") else ((iv or {}).get("lo"), (iv or {}).get("hi"))
            if lo is not None and np.isfinite(lo) and np.isfinite(hi):
                ax[1].plot([x[k], x[k]], [lo, hi], "_-", color=col, lw=1.5, ms=8)
            ax[1].plot([x[k]], [b["mean"]], "o", color=col, label=name if k == 0 else None)
    ax[1].axhline(0, color="grey", lw=0.6)
    ax[1].set_xticks(range(len(result["by_layer"])), [f"layer {b['layer']}" for b in result["by_layer"]])
    ax[1].set(title="Mean over positions (95 % interval)", ylabel="cosine")
    ax[1].legend(fontsize=8)
    fig.suptitle(title or "Encoder vs decoder hidden states")
    fig.tight_layout()
    return fig


def headline_nulls(headline: Mapping[str, Mapping], *, title: str = ""):
    """Each headline number with its 95 % interval beside every null model (and its interval).

    Parameters
    ----------
    headline : {key: results.headline(...)}
        Entries with ``value`` None are skipped.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One small axes per headline number (each on its own scale): the measured value
        and the nulls as points, their intervals as bars; a null without an interval
        (exact by construction) is a diamond.
    """
    items = [(k, h) for k, h in headline.items() if h.get("value") is not None]
    if not items:
        raise ValueError("headline: no entry has a value")
    per = []
    for _key, h in items:
        rows = [("measured", h["value"], h.get("interval"))]
        rows += [(kind, n.get("value"), n.get("interval")) for kind, n in (h.get("nulls") or {}).items()]
        per.append([r for r in rows if r[1] is not None])
    heights = [len(rows) + 1.5 for rows in per]
    fig, axes = plt.subplots(len(items), 1, figsize=(7.5, 0.26 * sum(heights) + 0.8), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for a, (key, h), rows in zip(axes[:, 0], items, per):
        for y, (name, v, iv) in enumerate(rows):
            col = _color("embedding" if name == "measured" else name)
            lo, hi = (iv or {}).get("lo"), (iv or {}).get("hi")
            if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi):
                # the bar is the interval itself (a basic bootstrap interval need not contain the point)
                a.plot([lo, hi], [y, y], "|-", color=col, lw=1.5, ms=9)
                a.plot([v], [y], "o", color=col)
            else:
                a.plot([v], [y], "D", color=col)
        a.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
        a.set_ylim(-0.6, len(rows) - 0.4)
        a.set_title(h.get("label") or key, fontsize=9, loc="left")
        a.tick_params(axis="x", labelsize=8)
    fig.suptitle(title or "Headline numbers and their null models (95 % intervals)", fontsize=11)
    fig.tight_layout()
    return fig


def contextual_layers(stats: Mapping[str, Mapping[str, Any]], *, title: str = ""):
    """Ethayarajh (2019)'s measurements by layer (:meth:`geolip_lib.probes.contextual.
    ContextualGeometry.layer_stats`), one line per model or null, 95 % intervals as bands.

    Parameters
    ----------
    stats : {name: layer_stats}
        ``"model"``, ``"random init"``, ``"gaussian"`` ... each with ``layer`` and lists of
        ``{value, lo, hi}`` under ``anisotropy``, ``self_similarity``,
        ``adjusted_self_similarity``, ``mev``, ``adjusted_mev``.

    Returns
    -------
    matplotlib.figure.Figure
        Four axes: anisotropy; self-similarity (raw dashed, adjusted solid); MEV (raw dashed,
        adjusted solid) with the paper's 5 % line; layer 0 is the embedding output.
    """
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    panels = ((ax[0], ("anisotropy",), "anisotropy (mean cosine, random words)"),
              (ax[1], ("self_similarity", "adjusted_self_similarity"), "self-similarity (dashed: raw; solid: adjusted)"),
              (ax[2], ("mev", "adjusted_mev"), "max. explainable variance (dashed: raw; solid: adjusted)"))
    for i, (name, st) in enumerate(stats.items()):
        color = sns.color_palette()[i % 10]
        x = np.asarray(st["layer"])
        for a, keys, _ in panels:
            for k in keys:
                rows = st[k]
                y = np.array([r["value"] for r in rows], dtype=float)
                lo = np.array([r["lo"] for r in rows], dtype=float)
                hi = np.array([r["hi"] for r in rows], dtype=float)
                raw = len(keys) == 2 and not k.startswith("adjusted")
                a.plot(x, y, "--" if raw else "o-", color=color, label=None if raw else name, lw=1.2 if raw else 1.8,
                       ms=4)
                a.fill_between(x, lo, hi, color=color, alpha=0.08 if raw else 0.18)
    for a, _, t in panels:
        a.axhline(0, color="0.6", lw=0.8)
        a.set(title=t, xlabel="layer (0: embedding output)")
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax[2].axhline(0.05, color="0.3", lw=0.9, ls=":", label="5 % (the paper)")
    ax[0].legend(fontsize=8)
    ax[2].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
