"""Cosine-similarity statistics of a point cloud on a seeded row sample."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import validation as V
from ._util import contig, rng_for

#: the constants the seed checks pairwise cosines against (seed 001, sections 1 and 13a)
NAMED_CONSTANTS: dict[str, float] = {
    "zero": 0.0,
    "qwen_mean": 0.19471,
    "phil_constant": 0.29514,
    "half": 0.5,
}
#: percentiles reported by :func:`cosine_stats`
PERCENTILES = (1, 5, 25, 50, 75, 95, 99)


def normalize_rows(X: Any, eps: float = 1e-8) -> torch.Tensor:
    """Rows of ``X`` (n, D) divided by ``max(||row||, eps)`` in float64 -> (n, D) tensor."""
    t = V.as_tensor(contig(X), "X", ndim=2, dtype=torch.float64)
    return t / t.norm(dim=1, keepdim=True).clamp_min(eps)


def cosine_matrix(X: Any, Y: Any = None) -> torch.Tensor:
    """Pairwise cosine similarities ``(n, m)`` between rows of ``X`` (n, D) and ``Y`` (m, D).

    ``Y=None`` uses ``X``. Float64. The cosine of a zero row is undefined: its row / column
    is NaN (not 0, which would read as "orthogonal").
    """
    xn = normalize_rows(X)
    yn = xn if Y is None else normalize_rows(Y)
    if yn.shape[1] != xn.shape[1]:
        V.fail("Y", f"expected {xn.shape[1]} columns like X, got {yn.shape[1]}")
    c = xn @ yn.T
    xz, yz = xn.abs().sum(dim=1) == 0, yn.abs().sum(dim=1) == 0
    if bool(xz.any()) or bool(yz.any()):
        c[xz, :] = float("nan")
        c[:, yz] = float("nan")
    return c


def pairwise_cosines(X: Any) -> np.ndarray:
    """Upper-triangle (``i < j``) cosines of the rows of ``X`` (n, D) -> (n(n-1)/2,) float64."""
    c = cosine_matrix(X)
    i, j = torch.triu_indices(c.shape[0], c.shape[0], offset=1)
    return c[i, j].numpy()


def sample_rows(n_rows: int, n_sample: int | None, seed: Any = 0) -> np.ndarray:
    """Row indices of the seeded sample used by :func:`cosine_stats`.

    ``numpy.random.default_rng(seed).choice(n_rows, size=n_sample, replace=False)``, or
    ``arange(n_rows)`` when ``n_sample`` is None or ``>= n_rows`` (no draw).
    """
    V.check_positive_int(n_rows, "n_rows")
    if n_sample is None or n_sample >= n_rows:
        return np.arange(n_rows)
    V.check_positive_int(n_sample, "n_sample", minimum=2)
    return rng_for(seed).choice(n_rows, size=n_sample, replace=False)


def distribution_stats(values: Any, percentiles: Sequence[float] = PERCENTILES) -> dict:
    """Mean, population std, median, min, max and percentiles of a 1-D sample."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        V.fail("values", "empty sample")
    return {
        "n": int(v.size), "mean": float(v.mean()), "std": float(v.std()),
        "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
        "percentiles": {str(p): float(q) for p, q in zip(percentiles, np.percentile(v, percentiles))},
    }


def constant_proximity(values: Any, constants: Mapping[str, float] | None = None,
                       tol: float = 0.01) -> dict:
    """For each named constant: fraction of ``values`` within ``±tol`` and nearest distance."""
    v = np.asarray(values, dtype=np.float64).ravel()
    consts = NAMED_CONSTANTS if constants is None else dict(constants)
    out = {}
    for name, c in consts.items():
        d = np.abs(v - c)
        out[name] = {"value": float(c), "frac_within": float((d < tol).mean()),
                     "nearest": float(d.min()), "tol": float(tol)}
    return out


def cosine_stats(
    X: Any,
    n_sample: int | None = 5000,
    seed: Any = 0,
    *,
    constants: Mapping[str, float] | None = None,
    tol: float = 0.01,
    percentiles: Sequence[float] = PERCENTILES,
    return_values: bool = False,
) -> dict:
    """Distribution of pairwise cosine similarities on a seeded sample of rows.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
    n_sample : int or None
        Rows drawn without replacement by ``default_rng(seed).choice(n, n_sample,
        replace=False)`` (see :func:`sample_rows`); ``None`` or ``>= n`` uses all rows.
        Every unordered pair ``i < j`` of the sample enters the statistics.
    seed : int or numpy.random.Generator
    constants : mapping name -> value, optional
        Constants to test proximity to (default :data:`NAMED_CONSTANTS`).
    tol : float
        Half-width of the proximity window.
    percentiles : sequence of float
    return_values : bool
        Also return the flat cosine array under ``"values"`` (not JSON-friendly).

    Returns
    -------
    dict
        ``n_rows``, ``n_sample``, ``seed``, ``n_pairs``, ``mean``, ``std`` (population),
        ``median``, ``min``, ``max``, ``percentiles`` ({"1": .., ...}),
        ``near_constants`` ({name: {value, frac_within, nearest, tol}}).
    """
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: 2, 1: 1})
    idx = sample_rows(t.shape[0], n_sample, seed)
    vals = pairwise_cosines(t[torch.from_numpy(idx)])
    defined = np.isfinite(vals)
    if not defined.any():
        V.fail("X", "every sampled row is zero: cosines are undefined")
    vals = vals[defined]
    out = {"n_rows": int(t.shape[0]), "n_sample": int(idx.size),
           "seed": seed if isinstance(seed, (int, np.integer)) else None,
           "n_undefined": int((~defined).sum())}  # pairs with a zero row (no direction, no cosine)
    st = distribution_stats(vals, percentiles)
    out["n_pairs"] = st.pop("n")
    out.update(st)
    out["near_constants"] = constant_proximity(vals, constants, tol)
    if return_values:
        out["values"] = vals
    return out
