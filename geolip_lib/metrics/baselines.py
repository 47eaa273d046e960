"""Null baselines: the same metric on an isotropic Gaussian of matched shape and scale,
on points uniform on the unit sphere of the same dimension, or on the same architecture
at random initialisation.

Matched scale means matched *total variance*: the Gaussian is ``N(0, s^2 I_D)`` with
``s^2 = trace(Cov(X)) / D`` (the mean per-dimension variance of ``X``). Its mean is zero,
so cosine statistics of the baseline centre on 0 while translation-invariant metrics
(PR, simplex volumes) are unaffected by the choice.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from .. import validation as V
from ._util import contig, is_torch, rng_for


def matched_scale(X: Any) -> float:
    """``sqrt(trace(Cov(X)) / D)`` for ``X`` of shape (n, D), population covariance."""
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: 1, 1: 1})
    d = t.shape[1]
    if t.numel() <= SCALE_WHOLE_MAX or d < 2 * SCALE_COLUMNS:
        var = t.to(torch.float64).var(dim=0, unbiased=False)
    else:  # each column's variance alone is the same number: float64 copies of 256+ columns at a time
        cuts = list(range(0, d - SCALE_COLUMNS + 1, SCALE_COLUMNS))[:-1] + [d]  # the last block 256-511 wide
        var = torch.cat([t[:, a:b].to(torch.float64).var(dim=0, unbiased=False) for a, b in zip(cuts, cuts[1:])])
    return float(var.mean().sqrt())


#: :func:`matched_scale` of a table up to this many values reads a whole float64 copy; above,
#: ``SCALE_COLUMNS`` columns at a time (a 152k x 1536 table: 4.3 GB of float64 temporaries before)
SCALE_WHOLE_MAX = 1 << 26
SCALE_COLUMNS = 256


def gaussian_like(X: Any, seed: Any = 0, *, n_rows: int | None = None,
                  scale: float | None = None) -> Any:
    """An isotropic Gaussian sample with ``X``'s shape and scale.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
    seed : int or numpy.random.Generator
        ``numpy.random.default_rng(seed).standard_normal`` draws the sample.
    n_rows : int, optional
        Rows of the sample (default ``n``); the scale is still measured on all of ``X``.
    scale : float, optional
        Per-dimension std (default :func:`matched_scale`).

    Returns
    -------
    ndarray or torch.Tensor, shape (n_rows, D)
        Same container and floating dtype as ``X``.
    """
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: 1, 1: 1})
    s = matched_scale(t) if scale is None else float(scale)
    n = t.shape[0] if n_rows is None else V.check_positive_int(n_rows, "n_rows")
    dtype = t.dtype if t.is_floating_point() else torch.float64
    g = _normal_rows(rng_for(seed), n, t.shape[1], dtype, lambda g: g * s)
    return g if is_torch(X) else g.numpy()


#: float64 draws per step of :func:`_normal_rows`
DRAW_CHUNK = 1 << 22


def _normal_rows(rng: np.random.Generator, n: int, d: int, dtype: torch.dtype, f: Callable) -> torch.Tensor:
    """``torch.from_numpy(f(rng.standard_normal((n, d)))).to(dtype)`` drawn ``DRAW_CHUNK`` values
    (whole rows) at a time: the same values (the generator's stream is filled row after row,
    ``f`` acts on rows alone) without an ``(n, d)`` float64 draw beside the result."""
    out = torch.empty((n, d), dtype=dtype)
    step = max(1, DRAW_CHUNK // max(d, 1))
    for i in range(0, n, step):
        k = min(step, n - i)
        out[i:i + k] = torch.from_numpy(f(rng.standard_normal((k, d))))
    return out


def sphere_like(X: Any, seed: Any = 0, *, n_rows: int | None = None) -> Any:
    """Points uniform on the unit sphere ``S^{D-1}`` with ``X``'s dimension ``D``.

    The null of a scale-free statistic (a CV of simplex volumes, cosines) that only the
    dimension sets: normalised rows of ``numpy.random.default_rng(seed).standard_normal``.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
        Only its shape (and container / floating dtype) is used.
    seed : int or numpy.random.Generator
    n_rows : int, optional
        Rows of the sample (default ``n``).

    Returns
    -------
    ndarray or torch.Tensor, shape (n_rows, D)
        Unit rows, same container and floating dtype as ``X``.
    """
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: 1, 1: 1})
    n = t.shape[0] if n_rows is None else V.check_positive_int(n_rows, "n_rows")
    dtype = t.dtype if t.is_floating_point() else torch.float64
    g = _normal_rows(rng_for(seed), n, t.shape[1], dtype, lambda g: g / np.linalg.norm(g, axis=1, keepdims=True))
    return g if is_torch(X) else g.numpy()


def gaussian_baseline(fn: Callable[..., Any], X: Any, seed: Any = 0, **kwargs: Any) -> Any:
    """``fn`` evaluated on :func:`gaussian_like` ``(X, seed)``.

    Parameters
    ----------
    fn : callable
        A metric taking the matrix first, e.g. ``metrics.participation_ratio``.
    X : array-like or torch.Tensor, shape (n, D)
    seed : int or numpy.random.Generator
        Seed of the Gaussian draw (the metric's own seed, if any, goes in ``kwargs``).
    **kwargs
        Passed to ``fn``.

    Returns
    -------
    whatever ``fn`` returns.

    Examples
    --------
    >>> gaussian_baseline(pentachoron_cv, E, seed=1, n_simplices=1000).cv  # doctest: +SKIP
    """
    if not callable(fn):
        V.fail("fn", f"expected a callable metric, got {type(fn).__name__}")
    return fn(gaussian_like(X, seed), **kwargs)


def random_init_baseline(fn: Callable[..., Any], loaded_model: Any,
                         extract: Callable[[Any], Any] | None = None, **kwargs: Any) -> Any:
    """``fn`` evaluated on the same architecture at random initialisation.

    Parameters
    ----------
    fn : callable
        Metric taking a matrix first.
    loaded_model : geolip_lib.models.LoadedModel
        Its ``random_init()`` gives the untrained twin.
    extract : callable, optional
        ``LoadedModel -> matrix``; default ``lm.input_embeddings()``.
    **kwargs
        Passed to ``fn``.
    """
    if not hasattr(loaded_model, "random_init"):
        V.fail("loaded_model", "expected a LoadedModel with a random_init() method")
    twin = loaded_model.random_init()
    get = extract or (lambda m: m.input_embeddings())
    return fn(get(twin), **kwargs)


def ratio(value: float, baseline: float) -> float:
    """``value / baseline`` (NaN when the baseline is 0 or not finite)."""
    b = float(baseline)
    return float(value) / b if np.isfinite(b) and b != 0 else float("nan")
