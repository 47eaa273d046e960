"""Figures of notebook 01's embedding probes: the terrain map, pentachoron volumes, the digit and
category heatmaps, and the palette they share."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

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
