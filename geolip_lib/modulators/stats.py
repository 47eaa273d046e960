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
- :func:`modulator_lift` — the relative lift ``(mod − orig) / |orig|`` of the relational
  Pearson / Spearman of a modulated encoder over the unmodulated one (the seed's "+152 % /
  +189 %"), paired bootstrap over the scored pairs; :func:`lift_claims` records it in the
  claims contract in the seed's definition (the seed's 3000-entry subset) and the project's
  (pairs over all entries).

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


LIFT_LABELS = {"project": "project: pairs over all entries", "seed": "seed: 3000-entry subset"}
TRAINING_LABELS = {"project": "project: no decay on the alpha logits", "seed": "seed: AdamW decay on the alpha logits"}


def lift_frame(lift: Mapping[str, Mapping[str, Mapping]], seed_values: Mapping[str, float] = SEED_LIFT):
    """One row per (training run, pair definition) of ``lift[run][definition]`` =
    :func:`modulator_lift` output: the lift and its interval per kind, the two correlations,
    and the seed's reported lift beside them (columns ``<kind>_lift``, ``<kind>_lo``, ``<kind>_hi``
    for plots, ``<Kind> lift [95 %]`` formatted)."""
    import pandas as pd

    rows = []
    for run, by_def in lift.items():
        for defn, res in by_def.items():
            row = {"training": TRAINING_LABELS.get(run, run), "pairs": LIFT_LABELS.get(defn, defn),
                   "n_pairs": res["n_pairs"]}
            for kind in (k for k in ("pearson", "spearman") if k in res):
                r = res[kind]
                row.update({f"{kind}_lift": r["value"], f"{kind}_lo": r["interval"].lo, f"{kind}_hi": r["interval"].hi,
                            f"{kind.capitalize()} lift [95 %]": iv_text(r["value"], r["interval"]),
                            f"{kind} orig → mod": f"{r['original']:.4f} → {r['modulated']:.4f}",
                            f"seed's {kind} lift": seed_values.get(kind)})
            rows.append(row)
    return pd.DataFrame(rows)


def lift_claims(lift: Mapping[str, Mapping[str, Mapping]], *, kinds: Sequence[str] = ("pearson", "spearman")) -> dict:
    """``metrics["claims"]["modulator_lift"]``: per kind, the seed's definition of the lift as
    the headline and the project's under ``"project"``.

    Seed definition: pairs drawn within the seed's 3000-entry subset (``lift[run]["seed"]``),
    on the run trained the seed's way (decay on the alpha logits, ``run = "seed"``) when it
    ran, else on the project's run (the note says which). Project definition: pairs over all
    entries on the project's run (``lift["project"]["project"]``). Values are fractions
    (1.52 is +152 %); the null "no lift" is 0.
    """
    from ..results import headline

    run = "seed" if "seed" in lift else "project"
    out = {}
    for kind in kinds:
        s, p = lift[run]["seed"], lift["project"]["project"]
        note = (f"Seed definition: {s['n_pairs']} scored pairs within the seed's 3000-entry subset, modulator trained "
                + ("with the seed's weight decay on the alpha logits." if run == "seed" else
                   "without weight decay on the alpha logits (the seed-mode training run was off in this profile).")
                + f" Seed reported {SEED_LIFT[kind]:+.0%}. Lift = (mod − orig) / |orig|; the interval resamples pairs.")
        h = headline(s[kind]["value"], interval=s[kind]["interval"], fmt=".3f", nulls={"no lift": 0.0},
                     label=f"{kind.capitalize()} lift (seed definition)", note=note)
        h["project"] = headline(p[kind]["value"], interval=p[kind]["interval"], fmt=".3f", nulls={"no lift": 0.0},
                                label=f"{kind.capitalize()} lift (project definition)",
                                note=f"{p['n_pairs']} scored pairs over all entries, modulator trained without decay "
                                     "on the alpha logits.")
        h["original"], h["modulated"] = s[kind]["original"], s[kind]["modulated"]
        out[kind] = h
    return out


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


__all__ = ["CORRELATIONS", "LIFT_LABELS", "SEED_LIFT", "TRAINING_LABELS", "lift_claims", "lift_frame", "lift_interval",
           "modulator_lift", "relative_lift", "argmax_interval", "correlation_interval", "cv_interval", "iv_text", "matrix_r",
           "matrix_r_interval", "pair_bootstrap", "pearson", "reconstruction_null", "relational_frame", "relational_intervals",
           "spearman", "weighted_matrix_r"]
