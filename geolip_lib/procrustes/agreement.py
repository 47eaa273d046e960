"""Agreement of two paired point clouds (after a fit, or natively): per-row and pairwise
cosines, relational correlation, residual spectrum, paired simplex volumes, and the
statistics behind the intervals of these headline numbers.

:func:`paired_pearson` is the statistic for a bootstrap over paired items (simplices),
:func:`weighted_relational_r` resamples the *tokens* behind a pairwise-cosine correlation,
and :func:`variance_retained_interval` is the covariance group bootstrap of the PCA's
retained variance share (:mod:`geolip_lib.metrics.intervals` does the resampling).
"""
from __future__ import annotations

import numpy as np
import torch

from ..metrics import cosine
from ..metrics.covariance_bootstrap import bootstrap_covariance_stat
from ..metrics.simplex import cayley_menger_volume_sq
from ..validation import check_positive_int, fail
from .fit import _np64

__all__ = ["VARIANCE_RETAINED_NOTE", "row_cosine", "pairwise_cosine", "relational_correlation", "residual_spectrum",
           "threshold_fractions", "percentiles", "paired_volumes", "paired_pearson",
           "weighted_relational_r", "variance_retained_interval"]


def row_cosine(A, B, eps: float = 1e-12) -> np.ndarray:
    """Cosine between paired rows: (n, d), (n, d) -> (n,); ``a·b / max(|a| |b|, eps)``
    (:func:`geolip_lib.metrics.cosine.row_cosine`)."""
    return cosine.row_cosine(A, B, eps)


def pairwise_cosine(X, eps: float = 1e-12) -> np.ndarray:
    """Cosine matrix of the rows of ``X`` (n, d) -> (n, n); rows divided by ``max(|x|, eps)``,
    a zero row's cosines 0 (:func:`geolip_lib.metrics.cosine.cosine_matrix`)."""
    return cosine.cosine_matrix(X, eps=eps, zero_rows="keep").numpy()


def relational_correlation(A, B) -> dict:
    """Agreement of the pairwise-cosine structure of two paired sets (any widths).

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)

    Returns
    -------
    dict with ``r`` (Pearson of the upper-triangular pairwise cosines), ``mean_abs_diff``,
    and the two flattened vectors ``a``, ``b`` (n(n−1)/2,).
    """
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    if A.shape[0] < 3:
        fail("A", f"expected at least 3 paired rows, got {A.shape[0]}")
    iu = np.triu_indices(A.shape[0], k=1)
    a, b = pairwise_cosine(A)[iu], pairwise_cosine(B)[iu]
    r = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return {"r": r, "mean_abs_diff": float(np.abs(a - b).mean()), "a": a, "b": b}


def residual_spectrum(A, B) -> np.ndarray:
    """Eigenvalues (descending) of the residual second-moment ``(A−B)ᵀ(A−B)/n``; (n, d) -> (d,)."""
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape != B.shape:
        fail("B", f"shape {B.shape} differs from A's {A.shape}")
    R = A - B
    return np.clip(np.linalg.eigvalsh(R.T @ R / R.shape[0])[::-1], 0, None)


def threshold_fractions(values, thresholds=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)) -> dict:
    """``{threshold: fraction of values > threshold}``."""
    v = _np64(values, "values", ndim=1)
    return {float(t): float((v > t).mean()) for t in thresholds}


def percentiles(values, ps=(1, 5, 10, 25, 50, 75, 90, 95, 99)) -> dict:
    """Summary of a 1-D sample: mean, std, min, max and the given percentiles."""
    v = _np64(values, "values", ndim=1)
    out = {"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()), "max": float(v.max())}
    out.update({f"p{p}": float(np.percentile(v, p)) for p in ps})
    return out


def paired_volumes(A, B, sets) -> dict:
    """Simplex volumes of the same vertex sets in two paired spaces (e.g. native vs projected).

    The seed filtered degenerate simplices in each space separately and then truncated both
    lists to the shorter length, which mis-pairs volumes; here a set counts only when its
    simplex is non-degenerate in *both* spaces, so the correlation compares like with like.

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)
    sets : int array, shape (n_sets, k+1)
        Row indices of each simplex (e.g. ``metrics.sample_distinct_rows(n, 1000, 5)``).

    Returns
    -------
    dict with ``vol_a``, ``vol_b`` (valid sets only), ``n_valid``, ``mean_a``, ``mean_b``,
    ``cv_a``, ``cv_b`` (population std / mean), ``ratio`` (mean_b / mean_a), ``corr``
    (Pearson over the valid sets).
    """
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    sets = np.asarray(sets)
    if sets.ndim != 2 or not np.issubdtype(sets.dtype, np.integer):
        fail("sets", f"expected an integer array (n_sets, k+1), got {sets.dtype} shape {sets.shape}")
    va, vb = cayley_menger_volume_sq(A[sets]), cayley_menger_volume_sq(B[sets])
    ok = (va > 0) & (vb > 0)
    va, vb = np.sqrt(va[ok]), np.sqrt(vb[ok])
    out = {"vol_a": va, "vol_b": vb, "n_valid": int(ok.sum()), "n_sets": int(len(sets))}
    if ok.sum() >= 2:
        out.update(mean_a=float(va.mean()), mean_b=float(vb.mean()), cv_a=float(va.std() / va.mean()),
                   cv_b=float(vb.std() / vb.mean()), ratio=float(vb.mean() / va.mean()),
                   corr=float(np.corrcoef(va, vb)[0, 1]) if va.std() > 0 and vb.std() > 0 else float("nan"))
    return out


# ---------------------------------------------------------------- statistics for intervals of the headline numbers
def paired_pearson(x, axis: int = -1):
    """Pearson r of paired samples, the statistic for a bootstrap over paired items.

    ``x`` holds the two paired variables on its first axis and the items on ``axis``:
    ``metrics.intervals.bootstrap(np.column_stack([a, b]), paired_pearson)`` resamples the
    rows ``(a_i, b_i)`` together (scipy moves the item axis last, so the statistic sees
    ``(2, ..., n)``).
    """
    x = np.asarray(x, dtype=np.float64)
    a, b = np.moveaxis(x[0], axis, -1), np.moveaxis(x[1], axis, -1)
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def weighted_relational_r(A, B):
    """Weighted statistic for ``metrics.intervals.bootstrap_weighted``: the relational
    correlation of :func:`relational_correlation` on a resample of the *rows*.

    The correlated items are pairs of rows, which share rows, so the rows (tokens) are what
    was sampled and what is resampled. A resample gives row ``i`` a count ``w_i``; the pair
    of distinct draws of rows ``i ≠ j`` gets weight ``w_i w_j`` (two draws of the same row
    are not a pair, as in the unresampled statistic), and the weighted Pearson r of the two
    spaces' pairwise cosines follows from quadratic forms ``wᵀ M w`` of five n × n matrices.
    At ``w = 1`` it equals :func:`relational_correlation`'s ``r``.

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)
        Paired rows.

    Returns
    -------
    callable ``stat(W)``: ``(b, n)`` counts -> ``(b,)`` values.
    """
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    Ca, Cb = pairwise_cosine(A), pairwise_cosine(B)
    mats = [Ca, Cb, Ca * Ca, Cb * Cb, Ca * Cb]
    diags = [np.diag(m).copy() for m in mats]

    def stat(W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        W2 = W * W
        n0 = W.sum(1) ** 2 - W2.sum(1)
        sa, sb, saa, sbb, sab = [(np.einsum("bi,bi->b", W @ m, W) - W2 @ d) / n0 for m, d in zip(mats, diags)]
        return (sab - sa * sb) / np.sqrt((saa - sa * sa) * (sbb - sb * sb))

    return stat


VARIANCE_RETAINED_NOTE = ("An isotropic table keeps d_small / d_large of its variance. On a row sample the value is the "
                          "bias-corrected estimate (the centre of the basic interval) and the plug-in is recorded beside "
                          "it: a PCA of a finite sample overstates its top components' share.")  # notebook 07's headline


def variance_retained_interval(X, n_components: int, *, seed: int = 0, n_boot: int | None = None):
    """95 % interval of the share of variance the top ``n_components`` principal components
    of ``X`` retain (:attr:`PCA.variance_retained`), by the covariance group bootstrap.

    ``"exact"`` when ``n_components`` equals the width (the share is 1 by construction).
    Each resample needs one ``eigvalsh`` of a D × D covariance, so ``n_boot`` defaults to
    1000 up to D = 512 and 200 beyond (2560-d tables).

    Returns
    -------
    :class:`~geolip_lib.metrics.intervals.Interval` or ``"exact"``.
    """
    X = _np64(X, "X")
    k = check_positive_int(n_components, "n_components")
    D = X.shape[1]
    if k >= D:
        return "exact"

    def share(C):
        lam = torch.linalg.eigvalsh(C)                      # ascending
        return lam[..., -k:].sum(-1) / lam.sum(-1)

    return bootstrap_covariance_stat(X, share, seed=seed, n_boot=n_boot or (1000 if D <= 512 else 200))


