"""95 % intervals for the modulator notebooks (08–11) and the nulls they are compared with.

Each function names what was sampled, and resamples exactly that:

- :func:`pair_bootstrap` — a statistic of the random (i, j) pairs a relational comparison
  scored (Pearson / Spearman with WordNet, their difference between two representations,
  the alpha that maximises Pearson): ``scipy.stats.bootstrap(paired=True)``, percentile
  (BCa's jackknife over tens of thousands of pairs costs more than it gives).
- :func:`relational_intervals` — those intervals for every representation of a
  :func:`~geolip_lib.modulators.relational_comparison`, on the same kept pairs.
- :func:`matrix_r_interval` — the eigen-embedding's reconstruction correlation over all
  anchor pairs: the *anchors* are resampled (each brings its pairs; pairs that share an
  anchor are not independent), through :func:`geolip_lib.metrics.intervals.bootstrap_weighted`.
- :func:`cv_interval` — pentachoron CV and its CV-band verdict, bootstrapped over the simplices.

Per-token preservation and per-item losses are plain means of items:
``metrics.intervals.bootstrap`` covers them directly.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..metrics import intervals
from ..metrics.intervals import Interval
from ..validation import fail
from .pipeline import pair_cosines, relational_pairs


def pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson r along ``axis`` (vectorised over the other axes)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(axis, keepdims=True)
    y = y - y.mean(axis, keepdims=True)
    return (x * y).sum(axis) / np.sqrt((x * x).sum(axis) * (y * y).sum(axis))


def spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman rho along ``axis``: Pearson r of the average ranks (ties share a rank)."""
    from scipy.stats import rankdata

    return pearson(rankdata(x, axis=axis), rankdata(y, axis=axis), axis=axis)


CORRELATIONS: dict[str, Callable[..., np.ndarray]] = {"pearson": pearson, "spearman": spearman}


def pair_bootstrap(statistic: Callable[..., Any], *arrays: np.ndarray, n_boot: int = intervals.N_BOOT,
                   seed: int = 0, what: str = "pairs", batch: int = 100, discrete: bool = False) -> Interval:
    """Percentile bootstrap of ``statistic(*arrays, axis=-1)`` over paired items.

    Parameters
    ----------
    statistic : callable
        Vectorised: receives each array resampled with the same indices, shape
        ``(batch, n)``, and returns ``batch`` values.
    *arrays : (n,) arrays
        Paired per-item values (a pair's similarity and its cosine in each representation).
    n_boot, seed : int
    what : str
        Name of the items in the method string.
    batch : int
        Resamples evaluated at once (memory ``batch × n`` per array).
    discrete : bool
        The statistic takes values on a grid: the bounds are the resampled values at the
        2.5 % / 97.5 % ranks (no interpolation between grid points).

    Returns
    -------
    Interval (NaN bounds when fewer than 3 items or a degenerate statistic).
    """
    from scipy import stats

    data = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    n = data[0].shape[0]
    label = f"{'paired ' if len(data) > 1 else ''}bootstrap percentile, {n_boot} resamples of {n} {what}"
    if n < 3 or any(a.shape != (n,) for a in data):
        return Interval(float("nan"), float("nan"), label)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = stats.bootstrap(data, statistic, paired=True, vectorized=True, n_resamples=n_boot,
                              batch=batch, method="percentile", random_state=np.random.default_rng(seed))
    if discrete:
        v = np.asarray(res.bootstrap_distribution, dtype=np.float64)
        a = (1 - intervals.LEVEL) / 2
        return Interval(float(np.quantile(v, a, method="lower")), float(np.quantile(v, 1 - a, method="higher")), label)
    return Interval(float(res.confidence_interval.low), float(res.confidence_interval.high), label)


def _corr(kind: str) -> Callable[..., np.ndarray]:
    if kind not in CORRELATIONS:
        fail("kind", f"expected one of {sorted(CORRELATIONS)}, got {kind!r}")
    return CORRELATIONS[kind]


def correlation_interval(similarity, cosines, *, kind: str = "pearson", reference=None, n_boot: int = intervals.N_BOOT,
                         seed: int = 0) -> Interval:
    """Interval of ``corr(similarity, cosines)`` over the pairs — or, with ``reference``
    (the cosines of another representation on the same pairs), of the difference
    ``corr(similarity, cosines) − corr(similarity, reference)``, both taken on each resample."""
    f = _corr(kind)
    if reference is None:
        return pair_bootstrap(lambda s, c, axis=-1: f(s, c, axis), similarity, cosines, n_boot=n_boot, seed=seed)
    return pair_bootstrap(lambda s, c, r, axis=-1: f(s, c, axis) - f(s, r, axis), similarity, cosines, reference,
                          n_boot=n_boot, seed=seed, what="pairs (both representations on each)")


def relational_intervals(similarity, reps: Mapping[str, Any], i, j, *, reference: str | None = "Original",
                         kinds: Sequence[str] = ("pearson",), n_boot: int = intervals.N_BOOT,
                         seed: int = 0) -> dict:
    """Intervals of :func:`~geolip_lib.modulators.relational_comparison`'s correlations.

    The same kept pairs (finite, positive similarity) are resampled for every
    representation. Returns ``{name: {kind: Interval, "delta_<kind>": Interval | None}}``;
    the delta is against ``reference`` (``None`` for the reference itself).
    """
    s, i, j = relational_pairs(similarity, i, j)
    cos = {name: pair_cosines(X, i, j) for name, X in reps.items()}
    out: dict = {}
    for name, c in cos.items():
        out[name] = {}
        for kind in kinds:
            out[name][kind] = correlation_interval(s, c, kind=kind, n_boot=n_boot, seed=seed)
            ref = cos.get(reference) if reference is not None and name != reference else None
            out[name][f"delta_{kind}"] = None if ref is None else correlation_interval(
                s, c, kind=kind, reference=ref, n_boot=n_boot, seed=seed)
    return out


def argmax_interval(similarity, reps_by_value: Mapping[float, Any], i, j, *, kind: str = "pearson",
                    n_boot: int = intervals.N_BOOT, seed: int = 0) -> Interval:
    """Interval of the grid value (e.g. alpha) whose representation correlates best with
    ``similarity`` over the pairs (i, j).

    Each pair resample recomputes the correlation at every grid value and keeps the
    arg-max; the percentile interval of those grid values is returned (its bounds are grid
    points). ``reps_by_value`` maps grid value -> (N, D) representation; the pairs kept are
    those of :func:`~geolip_lib.modulators.relational_comparison`.
    """
    f = _corr(kind)
    s, i, j = relational_pairs(similarity, i, j)
    grid = np.asarray(list(reps_by_value), dtype=np.float64)
    cos = [pair_cosines(X, i, j) for X in reps_by_value.values()]

    def stat(s, *cs, axis=-1):
        r = np.stack([f(s, c, axis) for c in cs])
        return grid[np.argmax(np.nan_to_num(r, nan=-np.inf), axis=0)]

    return pair_bootstrap(stat, s, *cos, n_boot=n_boot, seed=seed, what="pairs (every grid value on each)",
                          discrete=True)


def weighted_matrix_r(A, B) -> Callable[[np.ndarray], np.ndarray]:
    """Weighted statistic for ``bootstrap_weighted``: Pearson r of the off-diagonal entries
    of two symmetric ``n × n`` matrices over a resample of the ``n`` items.

    Item ``i`` drawn ``w_i`` times gives pair (i, j ≠ i) weight ``w_i w_j`` (two draws of
    the same item are not a pair); at ``w = 1`` it is the upper-triangle Pearson r.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape != B.shape:
        fail("B", f"expected two square matrices of one shape, got {A.shape} and {B.shape}")
    mats = [m.copy() for m in (A, B, A * A, B * B, A * B)]
    for m in mats:
        np.fill_diagonal(m, 0.0)

    def stat(W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        n0 = W.sum(1) ** 2 - (W * W).sum(1)
        sa, sb, saa, sbb, sab = [np.einsum("bi,bi->b", W @ m, W) / n0 for m in mats]
        return (sab - sa * sb) / np.sqrt((saa - sa * sa) * (sbb - sb * sb))

    return stat


def matrix_r(A, B) -> float:
    """Pearson r of the upper-triangle entries of two symmetric matrices."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    iu = np.triu_indices(A.shape[0], 1)
    return float(pearson(A[iu], B[iu]))


def matrix_r_interval(A, B, *, n_boot: int = intervals.N_BOOT, seed: int = 0, what: str = "anchors") -> Interval:
    """Interval of :func:`matrix_r` by resampling the items (rows/columns) of both matrices."""
    return intervals.bootstrap_weighted(np.asarray(A).shape[0], weighted_matrix_r(A, B), n_boot=n_boot, seed=seed,
                                        what=f"{what} (with all their pairs)")


def reconstruction_null(similarity, geo, *, seed: int = 0, n_boot: int = intervals.N_BOOT) -> dict:
    """Shuffled-anchor null of the eigen-embedding reconstruction r.

    The anchors' geometric vectors are permuted before their cosines are correlated with
    the similarity matrix (same vectors and spectrum, correspondence destroyed).
    Returns ``{"value", "interval"}``.
    """
    G = np.asarray(geo, dtype=np.float64)
    G = G[np.random.default_rng(seed).permutation(G.shape[0])]
    C = G @ G.T
    return {"value": matrix_r(similarity, C), "interval": matrix_r_interval(similarity, C, n_boot=n_boot, seed=seed)}


def cv_interval(X, n_simplices: int, *, seed: int = 0, columns=None, cv_target: float | None = None,
                cv_tolerance: float | None = None, n_boot: int = intervals.N_BOOT) -> dict:
    """Pentachoron CV of ``X`` (optionally restricted to ``columns``) with its bootstrap over
    the simplices; with a band, also the band verdict's interval.

    The same draw as :func:`~geolip_lib.modulators.pentachoron_cv_check` (``n_simplices``
    sets of 5 distinct rows, ``seed``). The in-band interval is the percentile interval of
    the 0/1 verdict over CV resamples: ``[1, 1]`` or ``[0, 0]`` when at least 97.5 % of
    them agree, ``[0, 1]`` when the verdict is not settled by the sample.

    Returns
    -------
    dict with ``cv``, ``interval``, ``n_valid`` and, with a band, ``in_band`` and
    ``in_band_interval``.
    """
    import torch

    from ..metrics import simplex_volume_cv

    Xt = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X).detach().cpu().double()
    if columns is not None:
        Xt = Xt[:, torch.as_tensor(np.asarray(columns), dtype=torch.long)]
    r = simplex_volume_cv(Xt, n_simplices, seed, n_vertices=5, min_valid=2)
    out: dict = {"cv": float(r.cv), "n_valid": int(r.n_valid),
                 "interval": intervals.bootstrap(r.volumes, intervals.cv, seed=seed, what="simplices")}
    if cv_target is not None and cv_tolerance is not None:
        def in_band(v, axis=-1):
            return (np.abs(intervals.cv(v, axis=axis) - cv_target) < cv_tolerance).astype(np.float64)

        out["in_band"] = bool(r.cv == r.cv and abs(r.cv - cv_target) < cv_tolerance)
        out["in_band_interval"] = pair_bootstrap(in_band, r.volumes, n_boot=n_boot, seed=seed, discrete=True,
                                                 what="simplices (band verdict per resample)")
    return out


def relational_frame(relational: Mapping[str, Any], ivs: Mapping[str, Any], names: Sequence[str] | None = None):
    """One row per representation: Pearson with its interval (``pearson``, ``lo``, ``hi`` and
    the formatted ``Pearson [95 %]``), Spearman, gradient, and ΔPearson against the
    reference with its interval.

    Parameters
    ----------
    relational : dict
        :func:`~geolip_lib.modulators.relational_comparison` output.
    ivs : dict
        :func:`relational_intervals` output on the same pairs.
    names : sequence of str, optional
        Rows (default: every name in ``ivs``).
    """
    import pandas as pd

    rows = {}
    for name in names or list(ivs):
        r, iv = relational[name], ivs[name]
        d_iv = iv.get("delta_pearson")
        rows[name] = {"pearson": r["pearson"], "lo": iv["pearson"].lo, "hi": iv["pearson"].hi,
                      "Pearson [95 %]": iv_text(r["pearson"], iv["pearson"]), "spearman": r["spearman"],
                      "gradient": r["gradient"],
                      "ΔPearson [95 %]": "–" if d_iv is None else iv_text(r.get("delta_pearson"), d_iv)}
    return pd.DataFrame(rows).T.astype({"pearson": float, "lo": float, "hi": float, "spearman": float,
                                        "gradient": float})


def iv_text(value: Any, interval: Any) -> str:
    """``value [lo, hi]`` at the precision the interval supports (for table cells)."""
    return intervals.format_value(value, interval)


__all__ = ["CORRELATIONS", "argmax_interval", "correlation_interval", "cv_interval", "iv_text", "matrix_r",
           "matrix_r_interval", "pair_bootstrap", "pearson", "reconstruction_null", "relational_frame", "relational_intervals",
           "spearman", "weighted_matrix_r"]
