"""Intervals of the relational battery's numbers (seed §2/§3): bootstraps over the sampled
WordNet entries (each with its pairs), over simplices, and over seeds.

The weighted statistics here (:func:`weighted_pair_correlation`) let
:func:`geolip_lib.metrics.intervals.bootstrap_weighted` resample the *entries* behind pair
correlations without materialising the resampled pairs.
"""
from __future__ import annotations

import numpy as np

from ..metrics import intervals
from ..metrics.intervals import Interval, seed_intervals, spread_interval  # noqa: F401 - re-exported; their home is metrics.intervals
from ..procrustes.agreement import paired_pearson

__all__ = ["weighted_pair_correlation", "pair_correlation_interval", "relational_intervals",
           "pentachoron_intervals", "spread_interval", "seed_intervals"]


def _tie_groups(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``order`` (argsort of x), ``starts`` (first sorted position of each run of equal values)
    and ``gid`` (each item's run, in the original order)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    gid = np.empty(len(x), dtype=np.int64)
    gid[order] = np.cumsum(new) - 1
    return order, np.flatnonzero(new), gid


def _weighted_ranks(C: np.ndarray, order: np.ndarray | None, starts: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) of each item in the sample where item ``p`` occurs
    ``C[b, p]`` times -> (b, P); equals ``scipy.stats.rankdata`` when ``C`` is all ones.
    ``order=None``: the items are already in sorted order."""
    cum = np.cumsum(C if order is None else C[:, order], axis=1)
    if len(starts) == C.shape[1]:  # no ties: every item its own run
        ranks = cum - (cum - np.concatenate([np.zeros((len(C), 1)), cum[:, :-1]], axis=1) - 1) / 2
        return ranks if order is None else ranks[:, gid]
    cum = cum[:, np.r_[starts[1:], C.shape[1]] - 1]  # count up to each run's end
    gsum = np.diff(cum, axis=1, prepend=0.0)  # count of each run
    return (cum - (gsum - 1) / 2)[:, gid]  # mean of the ranks cum - gsum + 1 ... cum


def _weighted_pearson(a: np.ndarray, b: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Pearson r of ``a`` and ``b`` (each (P,) or (B, P)) with item counts ``C`` (B, P) -> (B,)."""
    def wsum(u):  # sum_p C[b, p] u[(b,) p], a matrix-vector product when u is shared by the rows
        return C @ u if u.ndim == 1 else np.einsum("bp,bp->b", C, u)

    n = C.sum(1)
    ma, mb = wsum(a) / n, wsum(b) / n
    cov = wsum(a * b) / n - ma * mb
    return cov / np.sqrt((wsum(a * a) / n - ma ** 2) * (wsum(b * b) / n - mb ** 2))


def weighted_pair_correlation(pi, pj, x, y, method: str = "pearson"):
    """Weighted statistic for ``metrics.intervals.bootstrap_weighted``: the correlation of
    ``x`` and ``y`` over pairs of entries, on a resample of the *entries*.

    The battery samples entries, then random pairs among them; pairs share entries, so the
    entries are what is resampled. A resample gives entry ``i`` a count ``w_i`` and pair
    ``(i, j)`` (``i != j``) the count ``w_i w_j`` (pairs of distinct draws; the same entry
    drawn twice is not a pair, as self-pairs are dropped in the battery). Pearson is the
    weighted Pearson r; Spearman ranks each resample with ties averaged (as
    ``scipy.stats.spearmanr``) from one sort of ``x`` and of ``y``. At ``w = 1`` both equal
    :func:`correlations`.

    Parameters
    ----------
    pi, pj : array of int, shape (P,)
        The two entries of each pair (positions among the sampled entries).
    x, y : array, shape (P,)
        The paired values (path similarity, pair cosine).
    method : {"pearson", "spearman"}
    """
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method: expected 'pearson' or 'spearman', got {method!r}")
    pi, pj = np.asarray(pi, dtype=np.int64), np.asarray(pj, dtype=np.int64)
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    tx = ty = None
    if method == "spearman":  # pairs in the order of y: its ranks then need no scattered reads
        o = np.argsort(y, kind="stable")
        pi, pj, x, y = pi[o], pj[o], x[o], y[o]
        tx, ty = _tie_groups(x), _tie_groups(y)

    def stat(W: np.ndarray) -> np.ndarray:
        C = W[:, pi] * W[:, pj]
        if method == "pearson":
            return _weighted_pearson(x, y, C)
        return _weighted_pearson(_weighted_ranks(C, *tx), _weighted_ranks(C, *ty), C)

    return stat


def pair_correlation_interval(rp: dict, key: str, method: str = "pearson", *, n_boot: int = 1000, seed: int = 0):
    """95 % interval of the correlation of path similarity with ``rp[key]`` (``"enc_cos"`` or
    ``"static_cos"``) for the pairs of :func:`relational_pairs`: a percentile bootstrap over
    the sampled entries (each resampled entry brings its pairs along; see
    :func:`weighted_pair_correlation`). The same ``seed`` gives every call the same resamples.
    """
    stat = weighted_pair_correlation(rp["pi"], rp["pj"], rp["sims"], rp[key], method)
    return intervals.bootstrap_weighted(rp["n_entries"], stat, n_boot=n_boot, seed=seed, batch=20,
                                        what=f"entries with their pairs ({len(rp['sims'])} pairs)")


def relational_intervals(rp: dict, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """``{static_pearson, static_spearman, encoder_pearson, encoder_spearman: Interval}`` for the
    pairs of :func:`relational_pairs` (:func:`pair_correlation_interval`), all four on the same
    entry resamples."""
    return {f"{space}_{method}": pair_correlation_interval(rp, key, method, n_boot=n_boot, seed=seed)
            for space, key in (("static", "static_cos"), ("encoder", "enc_cos"))
            for method in ("pearson", "spearman")}


def pentachoron_intervals(volumes: dict, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """Bootstrap intervals over the simplices of :func:`pentachoron_pair`'s volumes:
    ``static_cv`` and ``encoder_cv`` (each over its space's valid simplices, BCa) and
    ``volume_corr`` (the simplices valid in both, each resampled with both its volumes)."""
    vs, ve = np.asarray(volumes["static"], np.float64), np.asarray(volumes["encoder"], np.float64)
    both = np.isfinite(vs) & np.isfinite(ve)
    return {"static_cv": intervals.bootstrap(vs, intervals.cv, n_boot=n_boot, seed=seed, what="simplices"),
            "encoder_cv": intervals.bootstrap(ve, intervals.cv, n_boot=n_boot, seed=seed, what="simplices"),
            "volume_corr": intervals.bootstrap(np.column_stack([vs[both], ve[both]]), paired_pearson, n_boot=n_boot,
                                               seed=seed, what="simplices (paired volumes)")}
