"""Cosine-similarity statistics of a point cloud on a seeded row sample."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import validation as V
from ._util import contig
from .sampling import sample_rows

#: the constants the seed checks pairwise cosines against (seed 001, sections 1 and 13a)
NAMED_CONSTANTS: dict[str, float] = {
    "zero": 0.0,
    "qwen_mean": 0.19471,
    "phil_constant": 0.29514,
    "half": 0.5,
}
#: percentiles reported by :func:`cosine_stats`
PERCENTILES = (1, 5, 25, 50, 75, 95, 99)


#: how a row norm is kept away from zero: ``"clamp"`` divides by ``max(norm, eps)`` (torch's
#: ``F.normalize``), ``"add"`` by ``norm + eps`` (the seed's ``x / (|x| + eps)``)
EPS_MODES = ("clamp", "add")


def _guard(norms: torch.Tensor, eps: float, eps_mode: str) -> torch.Tensor:
    if eps_mode == "clamp":
        return norms.clamp_min(eps)
    if eps_mode == "add":
        return norms + eps
    V.fail("eps_mode", f"expected one of {list(EPS_MODES)}, got {eps_mode!r}")


def _f64(X: Any, name: str) -> torch.Tensor:
    return V.as_tensor(contig(X), name, ndim=2, dtype=torch.float64)


def normalize_rows(X: Any, eps: float = 1e-8, *, eps_mode: str = "clamp", as_numpy: bool = False):
    """Rows of ``X`` (n, D) scaled to unit norm in float64 -> (n, D) tensor (ndarray with ``as_numpy``).

    ``eps_mode="clamp"`` divides by ``max(||row||, eps)``, ``"add"`` by ``||row|| + eps``
    (the seed's form, kept where a result was computed that way).
    """
    t = _f64(X, "X")
    out = t / _guard(t.norm(dim=1, keepdim=True), eps, eps_mode)
    return out.numpy() if as_numpy else out


def cosine_matrix(X: Any, Y: Any = None, *, eps: float = 1e-8, eps_mode: str = "clamp",
                  zero_rows: str = "nan") -> torch.Tensor:
    """Pairwise cosine similarities ``(n, m)`` between rows of ``X`` (n, D) and ``Y`` (m, D).

    ``Y=None`` uses ``X``. Float64. The cosine of a zero row is undefined: with
    ``zero_rows="nan"`` (default) its row / column is NaN (not 0, which would read as
    "orthogonal"); ``zero_rows="keep"`` leaves what the guarded division gives (0).
    """
    V.check_choice(zero_rows, "zero_rows", ("nan", "keep"))
    xn = normalize_rows(X, eps, eps_mode=eps_mode)
    yn = xn if Y is None else normalize_rows(Y, eps, eps_mode=eps_mode)
    if yn.shape[1] != xn.shape[1]:
        V.fail("Y", f"expected {xn.shape[1]} columns like X, got {yn.shape[1]}")
    c = xn @ yn.T
    if zero_rows == "nan":
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


def row_cosine(A: Any, B: Any, eps: float = 1e-12, *, eps_mode: str = "clamp",
               normalize_each: bool = False) -> np.ndarray:
    """Cosine between paired rows of ``A`` and ``B`` (n, D) -> (n,) float64 ndarray.

    ``normalize_each=False``: ``a·b / guard(|a| |b|)`` (the product of the norms guarded by
    ``eps`` per ``eps_mode``); ``True``: each row normalised first (:func:`normalize_rows`
    with ``eps``, ``eps_mode``), then the dot product.
    """
    a, b = _f64(A, "A"), _f64(B, "B")
    if a.shape != b.shape:
        V.fail("B", f"shape {tuple(b.shape)} differs from A's {tuple(a.shape)}")
    if normalize_each:
        a = a / _guard(a.norm(dim=1, keepdim=True), eps, eps_mode)
        b = b / _guard(b.norm(dim=1, keepdim=True), eps, eps_mode)
        return (a * b).sum(1).numpy()
    return ((a * b).sum(1) / _guard(a.norm(dim=1) * b.norm(dim=1), eps, eps_mode)).numpy()


def mean_offdiag_cosine(Xn: Any) -> float:
    """Mean of ``x_i . x_j`` over all ordered pairs ``i != j`` of the (unit) rows of ``Xn``, in O(n d)."""
    Xn = np.asarray(Xn)
    n = len(Xn)
    if n < 2:
        return float("nan")
    return float((np.square(Xn.sum(0)).sum() - np.square(Xn).sum()) / (n * (n - 1)))


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
