"""Figures of notebook 01 (embedding terrain), drawn from what the probes return.

Every function takes data (arrays, probe summaries, intervals) and returns a
:class:`matplotlib.figure.Figure`; the notebook shows and saves it with ``job.figure``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from .. import metrics as M
from ..metrics.intervals import format_value

#: one colour per table, shared by every figure
PALETTE = dict(zip(["embedding", "gaussian", "sphere", "random_init", "random_init_gaussian"],
                   sns.color_palette("deep", 5)))


def _color(name: str):
    return PALETTE.get(name, "grey")


def _empty(ax, msg: str) -> None:
    ax.text(0.5, 0.5, msg, ha="center", va="center", transform=ax.transAxes, color="grey", fontsize=9)


def _n_bins(n: int, most: int) -> int:
    """Histogram bins for ``n`` values: about 2·sqrt(n), between 10 and ``most``."""
    return int(np.clip(2 * np.sqrt(max(n, 1)), 10, most))


def _common_edges(samples: Sequence[np.ndarray], bins: int) -> np.ndarray:
    """Shared histogram bin edges over several samples (0.5-99.5 % range, so one outlier does not flatten all)."""
    if not samples:
        return np.linspace(0, 1, bins + 1)
    x = np.concatenate(samples)
    lo, hi = np.quantile(x, [0.005, 0.995])
    if not hi > lo:
        lo, hi = float(x.min()) - 0.5, float(x.max()) + 0.5
    return np.linspace(lo, hi, bins + 1)


def terrain_map(norms: np.ndarray, cosines: Mapping[str, np.ndarray], eigenvalues: Mapping[str, np.ndarray],
                volumes: Mapping[str, np.ndarray], *, title: str = "", volume_ratio: float | None = None,
                top: int = 200):
    """The 2 × 2 terrain map of an embedding table beside its null models.

    Parameters
    ----------
    norms : ndarray, shape (V,)
        Row norms (``norm_stats(E, return_data=True)[1]``).
    cosines : {name: ndarray}
        Pairwise cosines of the seeded row sample per table (``cosine_stats(..., return_values=True)``).
    eigenvalues : {name: ndarray}
        Full covariance spectra (descending) per table; the first ``top`` are drawn (numerical
        zeros of a rank-deficient table left out), the legend gives the PR of the full spectrum.
    volumes : {name: ndarray}
        Pentachoron volumes per table (NaN = degenerate); only the tables of the embedding's
        scale (embedding, gaussian, random_init) are drawn, as log10 volume.
    title : str
        Figure title (model, table shape).
    volume_ratio : float, optional
        Mean volume / Gaussian mean volume, shown in the panel title.

    Returns
    -------
    matplotlib.figure.Figure
        Panels: row-norm histogram; cosine densities; eigenspectra (log scale, PR in the
        legend); log10 pentachoron volumes.
    """
    fig, ax = plt.subplots(2, 2, figsize=(12, 8))
    a = ax[0, 0]
    sns.histplot(np.asarray(norms), bins=_n_bins(len(norms), 100), ax=a, color=_color("embedding"))
    a.set(title="Row-norm distribution", xlabel="L2 norm", ylabel="rows")
    a = ax[0, 1]
    for name, v in cosines.items():
        sns.histplot(np.asarray(v), bins=_n_bins(len(v), 200), stat="density", element="step", fill=False, ax=a,
                     label=name, color=_color(name))
    for c in M.NAMED_CONSTANTS.values():
        a.axvline(c, color="grey", ls=":", lw=0.8)
    a.set(title="Pairwise cosine (seeded row sample)", xlabel="cosine", ylabel="density")
    a.legend(fontsize=8)
    a = ax[1, 0]
    for name, ev in eigenvalues.items():
        ev = np.asarray(ev, dtype=np.float64)
        pr = M.participation_ratio_from_eigenvalues(np.clip(ev, 0, None)) if len(ev) else float("nan")
        shown_ev = ev[:top][ev[:top] > (ev[0] * 1e-12 if len(ev) else 0)]  # rank-deficient tail: numerical zeros
        a.semilogy(np.arange(1, len(shown_ev) + 1), shown_ev, label=f"{name} (PR {pr:.1f})", color=_color(name))
    a.set(title="Covariance eigenspectrum", xlabel="component", ylabel="eigenvalue")
    a.legend(fontsize=8)
    a = ax[1, 1]
    logv = {}
    for name in ("embedding", "gaussian", "random_init"):
        v = np.asarray(volumes.get(name, []), dtype=np.float64)
        v = v[np.isfinite(v) & (v > 0)]
        if len(v):
            logv[name] = np.log10(v)
    edges = _common_edges(list(logv.values()), _n_bins(max(map(len, logv.values()), default=0), 60))
    for name, lv in logv.items():
        sns.histplot(lv, bins=edges, element="step", stat="density", ax=a, label=name, color=_color(name), fill=False)
    if logv:
        a.legend(fontsize=8)
    else:
        _empty(a, "no non-degenerate pentachora")
    rt = f" (mean-volume ratio vs gaussian {volume_ratio:.3f})" if volume_ratio is not None else ""
    a.set(title=f"Pentachoron volumes{rt}", xlabel="log10 volume", ylabel="density")
    fig.suptitle(title or "Embedding terrain")
    fig.tight_layout()
    return fig


def pentachoron_volumes(volumes: Mapping[str, np.ndarray], cvs: Mapping[str, float],
                        intervals: Mapping[str, Any] | None = None, *, title: str = ""):
    """Distribution of pentachoron volume / mean volume per table: its spread is the CV.

    Parameters
    ----------
    volumes : {name: ndarray}
        Per-simplex volumes (NaN = degenerate), ``pentachoron_probe(..., return_data=True)[1]``.
    cvs : {name: float}
        The CV of each table (legend).
    intervals : {name: Interval}, optional
        95 % intervals of the CVs (legend shows ``CV [lo, hi]``).
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a step histogram of ``volume / mean`` per table, the scale-free view in
        which the embedding, its Gaussian, the unit sphere and the random init compare.
    """
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    rel = {}
    for name, v in volumes.items():
        v = np.asarray(v, dtype=np.float64)
        v = v[np.isfinite(v)]
        if name != "random_init_gaussian" and len(v) and v.mean() > 0:
            rel[name] = v / v.mean()
    edges = _common_edges(list(rel.values()), _n_bins(max(map(len, rel.values()), default=0), 50))
    for name, r in rel.items():
        lab = f"{name}: CV {format_value(cvs.get(name), (intervals or {}).get(name))}"
        sns.histplot(r, bins=edges, element="step", stat="density", fill=False, ax=ax, label=lab, color=_color(name))
    if rel:
        ax.legend(fontsize=8)
    else:
        _empty(ax, "no non-degenerate pentachora")
    ax.set(title=title or "Pentachoron volume / mean volume", xlabel="volume / mean volume", ylabel="density")
    fig.tight_layout()
    return fig


def _heatmap(matrix: np.ndarray, labels: Sequence[str], title: str, *, annot: bool, cmap: str,
             center: float | None, figsize: tuple[float, float], mask_diagonal: bool = False):
    fig, ax = plt.subplots(figsize=figsize)
    m = np.asarray(matrix, dtype=np.float64)
    mask = np.eye(len(m), dtype=bool) if mask_diagonal else None
    sns.heatmap(m, mask=mask, annot=annot, fmt=".2f", cmap=cmap, center=center, ax=ax,
                xticklabels=list(labels), yticklabels=list(labels), square=True,
                cbar_kws={"label": "cosine"})
    ax.set_title(title)
    fig.tight_layout()
    return fig


def digits_heatmap(cosine: np.ndarray, corr: float | None = None, interval: Any = None,
                   labels: Sequence[str] = tuple(str(d) for d in range(10))):
    """Cosine between the digit embeddings 0–9.

    Parameters
    ----------
    cosine : ndarray, shape (10, 10)
        ``digit_manifold(...)["cosine"]``.
    corr : float, optional
        Correlation of cosine with ``|i - j|`` (title).
    interval : Interval, optional
        Its 95 % interval (title).
    labels : sequence of str

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap axes (plus its colour bar); the diagonal (cosine 1) is left blank so
        that the colour scale shows the off-diagonal structure.
    """
    t = "Digit cosine"
    if corr is not None:
        t += f" (|i−j| corr {format_value(corr, interval, '.3f')})"
    fig = _heatmap(cosine, labels, t, annot=False, cmap="YlOrRd", center=None, figsize=(5.8, 4.8), mask_diagonal=True)
    fig.axes[0].set(xlabel="digit", ylabel="digit")
    return fig


def categories_heatmap(centroid_cosine: np.ndarray, names: Sequence[str]):
    """Cosine between the centroids of the semantic categories.

    Parameters
    ----------
    centroid_cosine : ndarray, shape (C, C)
        ``category_probe(...)["centroid_cosine"]``.
    names : sequence of str
        Category names, in matrix order.

    Returns
    -------
    matplotlib.figure.Figure
        One annotated heatmap axes (plus its colour bar).
    """
    fig = _heatmap(centroid_cosine, names, "Category-centroid cosine", annot=True, cmap="RdBu_r", center=0,
                   figsize=(6.8, 5.4))
    fig.axes[0].set(xlabel="category", ylabel="category")
    return fig


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
    from .embedding import cumulative_variance as cumvar

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


__all__ = ["PALETTE", "categories_heatmap", "cumulative_variance", "digits_heatmap", "encoder_decoder",
           "headline_nulls", "layers", "pentachoron_volumes", "position_bias", "terrain_map"]
