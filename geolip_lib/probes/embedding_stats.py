"""Global statistics of an embedding matrix (seed 001 §1): norms, eigenspectrum, distances,
pentachoron volumes. Each returns a JSON-friendly dict (``return_data=True``: also the
per-item data)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from .. import metrics as M
from .. import validation as V
from ._common import _matrix
from .uncertainty import pentachoron_cv_interval, rows_text

PERCENTILES = (1, 5, 25, 50, 75, 95, 99)


def norm_stats(E: Any, percentiles: Sequence[float] = PERCENTILES, zero_tol: float = 1e-6, *,
               return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Row-norm and per-dimension statistics of an embedding matrix.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)

    Returns
    -------
    dict
        ``norm`` {mean, std, min, max, median, argmin, argmax, percentiles}, ``n_zero``
        (rows with norm < ``zero_tol``), ``per_dim`` {mean_of_means, mean_of_stds,
        std_of_means, std_of_stds} (population stds), ``shape``.
    norms : ndarray, shape (V,)
        The row norms, only with ``return_data=True`` (the summary comes first).
    """
    t = _matrix(E)
    norms = t.norm(dim=1).numpy()
    dm, ds = t.mean(0), t.std(0, unbiased=False)
    out = {
        "shape": list(t.shape),
        "norm": {"mean": float(norms.mean()), "std": float(norms.std()), "min": float(norms.min()),
                 "max": float(norms.max()), "median": float(np.median(norms)),
                 "argmin": int(norms.argmin()), "argmax": int(norms.argmax()),
                 "percentiles": {str(p): float(v) for p, v in zip(percentiles, np.percentile(norms, percentiles))}},
        "n_zero": int((norms < zero_tol).sum()),
        "per_dim": {"mean_of_means": float(dm.mean()), "mean_of_stds": float(ds.mean()),
                    "std_of_means": float(dm.std(unbiased=False)), "std_of_stds": float(ds.std(unbiased=False))},
    }
    return (out, norms) if return_data else out


def eigenspectrum(E: Any, fractions: Sequence[float] = (0.8, 0.9, 0.95, 0.99), *,
                  max_rows: int | None = None, seed: int = 0, top: int = 20,
                  return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Covariance eigenspectrum: PR, PR / D, entropy effective dimension, dims per variance.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)
    fractions : sequence of float
    max_rows : int, optional
        Use a seeded sample of this many rows (``metrics.sample_rows``; the seed's 13a used
        10 000 for a 248k vocabulary); ``None`` uses every row (the seed's section 1).
    seed : int
    top : int
        How many leading eigenvalues to record.

    Returns
    -------
    dict
        ``pr``, ``pr_over_dim``, ``effective_dimension``, ``dims_for_variance`` {"0.95": n},
        ``top_eigenvalues``, ``top_fraction`` (share of the first), ``total_variance``,
        ``n_rows_used``.
    eigenvalues : ndarray, shape (D,)
        The full spectrum (descending), only with ``return_data=True``.
    """
    t = _matrix(E)
    idx = M.sample_rows(t.shape[0], max_rows, seed)
    ev = M.covariance_eigenvalues(t if idx.size == t.shape[0] else t[torch.from_numpy(idx)])  # every row: no copy
    pr = M.participation_ratio_from_eigenvalues(ev)
    dims = M.dims_for_variance_from_eigenvalues(ev, list(fractions))
    out = {
        "pr": pr, "pr_over_dim": pr / t.shape[1],
        "effective_dimension": M.effective_dimension_from_eigenvalues(ev),
        "dims_for_variance": {f"{f:g}": d for f, d in zip(fractions, dims)},
        "top_eigenvalues": ev[:top].tolist(), "top_fraction": float(ev[0] / ev.sum()),
        "total_variance": float(ev.sum()), "n_rows_used": int(idx.size),
    }
    return (out, ev) if return_data else out


def cumulative_variance(eigenvalues: Any, top: int | None = None) -> np.ndarray:
    """Cumulative explained variance of a covariance spectrum (the seed's ``cumsum(λ) / Σλ``).

    Parameters
    ----------
    eigenvalues : array-like, shape (m,)
        Covariance eigenvalues (any order; sorted descending here). Negative round-off
        (above ``-1e-12·max``) is clipped to 0; a clearly negative value is an error.
    top : int, optional
        Return only the first ``top`` entries (the seed's panel drew 200).

    Returns
    -------
    ndarray, shape (min(m, top),)
        Non-decreasing, in (0, 1]; the full curve ends at exactly 1. Entry ``k - 1`` is
        the share of the variance in the first ``k`` principal components (PCA's
        cumulative ``explained_variance_ratio_``).
    """
    e = V.as_tensor(eigenvalues, "eigenvalues", ndim=1, min_shape={0: 1}, dtype=torch.float64).numpy()
    if (e < -1e-12 * max(1.0, float(np.abs(e).max()))).any():
        V.fail("eigenvalues", "expected non-negative eigenvalues (a covariance spectrum)")
    e = np.sort(np.clip(e, 0, None))[::-1]
    tot = e.sum()
    if not tot > 0:
        V.fail("eigenvalues", "all eigenvalues are zero; no variance to explain")
    cum = np.minimum(np.cumsum(e) / tot, 1.0)
    cum[-1] = 1.0
    if top is not None:
        cum = cum[:V.check_positive_int(top, "top")]
    return cum


def euclidean_distances(E: Any, n_sample: int | None = 2000, seed: int = 0,
                        percentiles: Sequence[float] = PERCENTILES, *,
                        return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Pairwise Euclidean distances on a seeded row sample (``metrics.sample_rows``).

    Returns
    -------
    dict
        ``n_sample``, ``n_pairs``, ``mean``, ``std``, ``cv`` (std / mean), ``min``, ``max``,
        ``median``, ``percentiles``, ``mean_over_sqrt_dim``.
    distances : ndarray, shape (n_pairs,)
        The pairwise distances (upper triangle), only with ``return_data=True``.
    """
    t = _matrix(E)
    idx = M.sample_rows(t.shape[0], n_sample, seed)
    s = t[torch.from_numpy(idx)]
    if s.shape[0] < 2:
        V.fail("E", "need at least 2 rows for distances")
    i, j = torch.triu_indices(s.shape[0], s.shape[0], offset=1)
    d = torch.cdist(s, s, compute_mode="donot_use_mm_for_euclid_dist")[i, j].numpy()
    st = M.distribution_stats(d, percentiles)
    out = {"n_sample": int(idx.size), "n_pairs": st.pop("n"), **st,
           "cv": st["std"] / st["mean"] if st["mean"] > 0 else float("nan"),
           "mean_over_sqrt_dim": st["mean"] / float(np.sqrt(t.shape[1]))}
    return (out, d) if return_data else out


def pentachoron_cv_of_rows(E: Any, rows: Any, drawn: Any, n_simplices: int = 1000, seed: int = 0, *,
                           exact_max: int | None = M.EXACT_MAX) -> Any:
    """Pentachoron CV of the rows ``rows`` of ``E`` on the draws of the whole table where it can:
    the measured subsets of ``drawn`` (``metrics.pentachoron_cv(E, n_simplices, seed)``) that use
    only those rows, topped up to ``n_simplices`` with fresh subsets of those rows (seed
    ``[seed, 41]``).

    A uniform 5-row subset of the table that avoids the left-out rows is a uniform subset of the
    kept rows, so the union is ``n_simplices`` uniform draws from the kept rows; where few rows
    are left out (5 special tokens of 30 522) nearly every subset is shared, and the two CVs
    differ by what the left-out rows contribute, not by two independent samples. At most
    ``exact_max`` distinct subsets of the kept rows (20 rows: 15 504): every one (exact).

    Returns
    -------
    SimplexCVResult
        On the table ``E[rows]`` (its ``indices`` index the kept rows).
    """
    # the table as it is stored: the volumes take float64 only of the drawn rows, so the same values come without a
    # float64 copy of the whole table and of its kept rows (3.7 GB for a 152k x 1536 table)
    t = V.as_tensor(E, "E", ndim=2, min_shape={0: 1, 1: 1})
    t = t if t.is_floating_point() else t.to(torch.float64)
    keep = np.asarray(rows, dtype=np.int64)
    sub = t[torch.from_numpy(keep)]
    if exact_max is not None and len(keep) >= 5 and math.comb(len(keep), 5) <= exact_max:
        return M.pentachoron_cv(sub, n_simplices, seed=seed, exact_max=exact_max)
    pos = np.full(t.shape[0], -1, dtype=np.int64)
    pos[keep] = np.arange(len(keep))
    sets = np.empty((0, 5), dtype=np.int64)
    if getattr(drawn, "indices", None) is not None and not getattr(drawn, "exact", False):
        mapped = pos[np.asarray(drawn.indices)]
        sets = mapped[(mapped >= 0).all(axis=1)][:n_simplices]
    if len(sets) < n_simplices and len(keep) >= 5:
        extra = M.sample_distinct_rows(len(keep), n_simplices - len(sets), 5, seed=np.random.default_rng([int(seed), 41]))
        sets = np.concatenate([sets, extra])
    if len(sets) == 0:
        return M.pentachoron_cv(sub, n_simplices, seed=seed)  # too few rows: its own reason
    return M.pentachoron_cv(sub, len(sets), seed=seed, indices=sets)


def content_pentachoron(E: Any, rows: Any, content: Mapping[str, Any], n_simplices: int = 1000, seed: int = 0, *,
                        n_redraws: int = M.intervals.N_REDRAWS) -> dict:
    """Notebook 01's second pentachoron CV: the rows ``rows`` of ``E`` (the table less its special
    tokens, :func:`geolip_lib.probes.content_rows`), on the whole table's draws where they avoid the
    left-out rows (:func:`pentachoron_cv_of_rows`), with its own interval drawn
    from those rows (:func:`geolip_lib.probes.uncertainty.pentachoron_cv_interval`).

    Returns ``{"result": SimplexCVResult, "interval": Interval, "text": rows in words, "record":
    JSON summary for metrics.json (the CV's summary, ``n_rows``, ``rows``, ``interval``, ``redrawn``)}``.
    """
    t = E if isinstance(E, torch.Tensor) else torch.as_tensor(np.asarray(E))
    keep = np.asarray(rows, dtype=np.int64)
    drawn = M.pentachoron_cv(t, n_simplices, seed=seed, exact_max=M.EXACT_MAX)  # = pentachoron_probe's embedding draws
    res = pentachoron_cv_of_rows(t, keep, drawn, n_simplices, seed=seed)
    iv, info = pentachoron_cv_interval(t[torch.from_numpy(keep)], res, seed=seed, n_redraws=n_redraws)
    record = {**res.as_dict(), "n_rows": int(len(keep)), "rows": dict(content), "interval": iv.as_dict(),
              "redrawn": info}
    return {"result": res, "interval": iv, "text": rows_text(content, t.shape[0]), "record": record}


def pentachoron_probe(E: Any, n_simplices: int = 1000, seed: int = 0, random_init: Any = None, *,
                      sphere: bool = True, return_data: bool = False, exact_max: int | None = M.EXACT_MAX,
                      intervals: bool = False, n_redraws: int = M.intervals.N_REDRAWS) -> dict | tuple[dict, dict]:
    """Pentachoron CV of ``E`` beside its null models, on the same index draws.

    Every table is measured on the same ``n_simplices`` sets of 5 row indices
    (``metrics.sample_distinct_rows(V, n_simplices, 5, seed)``), so volumes are paired
    simplex by simplex across the tables.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)
    n_simplices : int
    seed : int
        Seeds the simplex draw (``seed``), the Gaussian matrix (``seed + 1``), the sphere
        points (``seed + 2``) and the random-init table's Gaussian (``seed + 3``).
    random_init : array-like, shape (V, D), optional
        The same table from the architecture at random init.
    sphere : bool
        Also measure ``V`` points uniform on the unit sphere ``S^{D-1}``
        (:func:`geolip_lib.metrics.sphere_like`): the CV that the dimension alone gives.
    return_data : bool
        Also return the per-simplex volumes.
    exact_max : int, optional
        A table with at most this many distinct 5-row subsets (25 rows: 53130) is measured on
        every one of them (``exact: true``, no sampling); None: always ``n_simplices`` draws.
    intervals : bool
        Also give each table its 95 % interval (``interval``, an
        :class:`~geolip_lib.metrics.intervals.Interval` record) and what it was drawn from
        (``redrawn``): :func:`geolip_lib.probes.uncertainty.pentachoron_cv_interval`, fresh
        draws of ``n_simplices`` subsets from the table itself (``n_redraws`` of them); exact
        for an enumerated table.

    Returns
    -------
    summary : dict
        ``embedding`` / ``gaussian`` / ``sphere`` / ``random_init`` /
        ``random_init_gaussian`` (:meth:`SimplexCVResult.as_dict`), ``volume_ratio_gaussian``
        (mean volume / Gaussian mean volume), ``volume_ratio_random_init`` (mean volume /
        random-init mean volume) and ``volume_ratio_gaussian_random_init`` (the random-init
        table's mean volume / its own Gaussian's: the volume ratio without training).
    volumes : dict, only with ``return_data=True``
        ``{name: (n_simplices,) ndarray}`` in draw order, NaN where a simplex is degenerate.
    """
    # each null table is drawn, measured and let go before the next (same seeds, so the same values): a 152k-row
    # table's Gaussian, sphere and random-init Gaussian held at once were 2.8 GB beside the model
    tables = {"embedding": lambda: E, "gaussian": lambda: M.gaussian_like(E, seed=seed + 1)}
    if sphere:
        tables["sphere"] = lambda: M.sphere_like(E, seed=seed + 2)
    if random_init is not None:
        tables["random_init"] = lambda: random_init
        tables["random_init_gaussian"] = lambda: M.gaussian_like(random_init, seed=seed + 3)
    res, out = {}, {}
    for k, make in tables.items():
        T = make()
        res[k] = M.pentachoron_cv(T, n_simplices, seed=seed, exact_max=exact_max)
        out[k] = {**res[k].as_dict(), "n_rows": int(T.shape[0])}
        if intervals:
            iv, info = pentachoron_cv_interval(T, res[k], seed=seed, n_redraws=n_redraws)
            out[k]["interval"], out[k]["redrawn"] = iv.as_dict(), info
        del T
    out["volume_ratio_gaussian"] = M.ratio(res["embedding"].mean, res["gaussian"].mean)
    if random_init is not None:
        out["volume_ratio_random_init"] = M.ratio(res["embedding"].mean, res["random_init"].mean)
        out["volume_ratio_gaussian_random_init"] = M.ratio(res["random_init"].mean,
                                                           res["random_init_gaussian"].mean)
    if not return_data:
        return out
    volumes = {}
    for k, r in res.items():
        v = np.full(r.n_sampled, np.nan)
        v[r.valid] = r.volumes
        volumes[k] = v
    return out, volumes
