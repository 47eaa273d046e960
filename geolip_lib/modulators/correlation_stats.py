"""Intervals of relational correlations over the scored (i, j) pairs, and the modulator lift
(see :mod:`geolip_lib.modulators.stats`)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..metrics import intervals
from ..metrics.correlation import pearson, spearman  # noqa: F401 - their one home, re-exported
from ..metrics.intervals import Interval, pair_bootstrap  # noqa: F401 - the one home of the paired bootstrap
from ..validation import fail
from .pipeline import pair_cosines, relational_pairs

CORRELATIONS: dict[str, Callable[..., np.ndarray]] = {"pearson": pearson, "spearman": spearman}


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


SEED_LIFT = {"pearson": 1.52, "spearman": 1.89}  # seed 001's summary: "Pearson +152 %, Spearman +189 %"


def relative_lift(value, reference):
    """``(value − reference) / |reference|`` (elementwise; a fraction: 1.52 is +152 %)."""
    value = np.asarray(value, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (value - reference) / np.abs(reference)
    return float(out) if out.ndim == 0 else out


def lift_interval(similarity, cosines, reference, *, kind: str = "pearson", n_boot: int = intervals.N_BOOT,
                  seed: int = 0) -> Interval:
    """Interval of :func:`relative_lift` of ``corr(similarity, cosines)`` over
    ``corr(similarity, reference)``: both correlations are recomputed on each paired
    resample of the pairs (each pair keeps its similarity and both cosines)."""
    _corr(kind)
    data = [np.asarray(a, dtype=np.float64) for a in (similarity, cosines, reference)]
    if kind == "spearman":  # resample dense ranks; each resample's average ranks come from counts (no sort)
        data = [dense_ranks(a) for a in data]

    def stat(s, c, r, axis=-1):
        if kind == "spearman":
            s, c, r = (resample_ranks(x) for x in (s, c, r))
        return relative_lift(pearson(s, c, axis), pearson(s, r, axis))

    return pair_bootstrap(stat, *data, n_boot=n_boot, seed=seed, what="pairs (both representations on each)")


def dense_ranks(x) -> np.ndarray:
    """0-based dense ranks of a 1-D array (equal values share one), as float64."""
    _, inv = np.unique(np.asarray(x, dtype=np.float64), return_inverse=True)
    return inv.reshape(-1).astype(np.float64)


def resample_ranks(D) -> np.ndarray:
    """Average ranks (1-based, ties share the mean rank, as ``scipy.stats.rankdata``) along the
    last axis of resampled dense ranks ``D`` (b, n): from per-row counts, in O(n) per row."""
    D = np.asarray(D).astype(np.int64)
    squeeze = D.ndim == 1
    D = np.atleast_2d(D)
    b, m = D.shape[0], int(D.max()) + 1 if D.size else 0
    cnt = np.bincount((D + m * np.arange(b)[:, None]).ravel(), minlength=b * m).reshape(b, m)
    avg = np.cumsum(cnt, axis=1) - cnt + (cnt + 1) / 2
    out = np.take_along_axis(avg, D, axis=1)
    return out[0] if squeeze else out


def modulator_lift(similarity, modulated, original, i, j, *, kinds: Sequence[str] = ("pearson", "spearman"),
                   n_boot: int = intervals.N_BOOT, seed: int = 0) -> dict:
    """Relative lift of the modulated over the unmodulated representation's correlation with
    a WordNet similarity over pairs (i, j).

    The pairs kept are :func:`~geolip_lib.modulators.relational_comparison`'s (finite,
    positive similarity).

    Returns
    -------
    dict: ``n_pairs`` and per kind ``{"value": lift, "interval": Interval, "modulated": r_mod,
    "original": r_orig}``.
    """
    s, i, j = relational_pairs(similarity, i, j)
    cm, co = pair_cosines(modulated, i, j), pair_cosines(original, i, j)
    out: dict = {"n_pairs": int(s.size)}
    for kind in kinds:
        f = _corr(kind)
        rm, ro = (float(f(s, c)) if s.size > 2 else float("nan") for c in (cm, co))
        out[kind] = {"value": relative_lift(rm, ro), "modulated": rm, "original": ro,
                     "interval": lift_interval(s, cm, co, kind=kind, n_boot=n_boot, seed=seed)}
    return out
