"""Intervals over anchors and simplices: the eigen-embedding's reconstruction correlation,
its null, and the pentachoron CV (see :mod:`geolip_lib.modulators.stats`)."""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..metrics import intervals, simplex_volume_cv
from ..metrics.intervals import Interval
from ..validation import fail
from .correlation_stats import pair_bootstrap, pearson


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
