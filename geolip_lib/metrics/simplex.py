"""Simplex volumes (Cayley–Menger / Gram determinant) and the pentachoron CV.

The squared volume of a k-simplex with vertices ``p_0 .. p_k`` in ``R^D`` is

    vol^2 = det(G) / (k!)^2,     G_ij = <p_i - p_0, p_j - p_0>   (k x k Gram of edges),

which equals the Cayley–Menger form ``(-1)^(k+1) det(CM) / (2^k (k!)^2)`` exactly. The
edge vectors are formed *before* any inner product, i.e. each simplex is translated to
its own vertex (a per-simplex centring), in float64. For float32 input the float64
differences are exact, so points that share a large common offset keep full accuracy
(forming an uncentred Gram ``p_i . p_j`` in float32 loses ~3e-3 relative on such data).

Everything is batched: no Python loop over simplices, only over memory-bounded chunks.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import validation as V
from ._kernels import HAVE_NUMBA, gather_volumes_sq
from ._util import contig, is_torch, rng_for, to_output
from .threads import one_torch_thread

#: simplices processed per chunk (bounds memory to chunk * (k+1) * D float64 values); small
#: chunks keep the gathered rows in cache, which is what makes the batched path fast on CPU
DEFAULT_CHUNK = 128
#: a table with at most this many distinct 5-row subsets is measured on every one of them (exact: no
#: sampling) where a caller passes ``exact_max`` (notebook 01: a 25-row table has C(25, 5) = 53130)
EXACT_MAX = 200_000


def _edge_gram(points: torch.Tensor) -> torch.Tensor:
    """(n, k+1, D) float64 -> (n, k, k) Gram of edges from vertex 0."""
    edges = points[:, 1:, :] - points[:, :1, :]
    return torch.bmm(edges, edges.transpose(1, 2))


def _gram_det_rel(gram: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """det(G) and det(G) / prod(diag G) (Hadamard ratio in [0, 1]; 0 = degenerate)."""
    det = torch.linalg.det(gram)
    diag = torch.diagonal(gram, dim1=-2, dim2=-1).prod(-1)
    rel = torch.where(diag > 0, det / torch.where(diag > 0, diag, torch.ones_like(diag)),
                      torch.zeros_like(det))
    return det, rel


def _volumes_sq_flat(flat: torch.Tensor, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, k+1, D) any float dtype -> (vol^2 (n,), Hadamard ratio (n,)) in float64."""
    n, kp1, _ = flat.shape
    k = kp1 - 1
    denom = float(math.factorial(k)) ** 2
    vol_sq = torch.empty(n, dtype=torch.float64, device=flat.device)
    rel = torch.empty(n, dtype=torch.float64, device=flat.device)
    with one_torch_thread(flat.device.type == "cpu"):
        for s in range(0, n, chunk):
            pts = flat[s:s + chunk].to(torch.float64)
            det, r = _gram_det_rel(_edge_gram(pts))
            vol_sq[s:s + chunk] = det / denom
            rel[s:s + chunk] = r
    return vol_sq, rel


def cayley_menger_volume_sq(points: Any, *, chunk: int = DEFAULT_CHUNK) -> Any:
    """Squared volume of k-simplices, batched over leading axes.

    Parameters
    ----------
    points : array-like or torch.Tensor, shape (..., k+1, D)
        Vertices of each simplex, ``k >= 1`` (so at least 2 points) in ``D`` dimensions.
    chunk : int
        Simplices per batched chunk (memory bound only; the result does not depend on it).

    Returns
    -------
    ndarray or torch.Tensor, shape (...)
        ``vol^2`` in float64 (a tensor when ``points`` is a tensor). It may be a tiny
        negative number for degenerate simplices (round-off); it is exactly the
        Cayley–Menger value ``(-1)^(k+1) det(CM) / (2^k (k!)^2)``.
    """
    t = V.as_tensor(contig(points), "points", min_ndim=2, min_shape={-2: 2, -1: 1})
    V.check_positive_int(chunk, "chunk")
    lead = t.shape[:-2]
    flat = t.reshape(-1, t.shape[-2], t.shape[-1])
    vol_sq, _ = _volumes_sq_flat(flat, chunk)
    return to_output(vol_sq.reshape(lead), is_torch(points))


def cayley_menger_volume(points: Any, *, chunk: int = DEFAULT_CHUNK) -> Any:
    """Volume of k-simplices, batched over leading axes.

    Parameters
    ----------
    points : array-like or torch.Tensor, shape (..., k+1, D)
        Vertices of each simplex (``k >= 1``).
    chunk : int
        Simplices per batched chunk.

    Returns
    -------
    ndarray or torch.Tensor, shape (...)
        ``sqrt(max(vol^2, 0))`` in float64. For ``k = 1`` this is the edge length, for
        ``k = 2`` the triangle area, for ``k = 4`` the pentachoron 4-volume.
    """
    sq = cayley_menger_volume_sq(points, chunk=chunk)
    if isinstance(sq, torch.Tensor):
        return sq.clamp_min(0).sqrt()
    return np.sqrt(np.maximum(sq, 0.0))


def sample_distinct_rows(n_rows: int, n_sets: int, size: int, seed: Any = 0) -> np.ndarray:
    """Draw ``n_sets`` sets of ``size`` distinct row indices from ``range(n_rows)``.

    Uses Robert Floyd's algorithm, vectorised over sets: ``size`` batched steps, no
    rejection loop, every ``size``-subset equally likely, any ``n_rows >= size``.

    Parameters
    ----------
    n_rows : int
        Population size (rows of the matrix); the whole range is sampled.
    n_sets : int
        Number of sets.
    size : int
        Distinct indices per set.
    seed : int or numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (n_sets, size)
        Each row holds distinct indices in ``[0, n_rows)``.
    """
    V.check_positive_int(size, "size")
    V.check_positive_int(n_sets, "n_sets")
    V.check_positive_int(n_rows, "n_rows", minimum=size)
    rng = rng_for(seed)
    out = np.empty((n_sets, size), dtype=np.int64)
    for col, j in enumerate(range(n_rows - size, n_rows)):
        t = rng.integers(0, j + 1, size=n_sets, dtype=np.int64)
        taken = (out[:, :col] == t[:, None]).any(axis=1) if col else np.zeros(n_sets, bool)
        out[:, col] = np.where(taken, j, t)
    return out


def all_subsets(n_rows: int, size: int) -> np.ndarray:
    """Every ``size``-subset of ``range(n_rows)`` in lexicographic order, shape (C(n_rows, size), size), int64."""
    V.check_positive_int(size, "size")
    V.check_positive_int(n_rows, "n_rows", minimum=size)
    n = math.comb(n_rows, size)
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n_rows), size)),
                       dtype=np.int64, count=n * size)
    return flat.reshape(n, size)


@dataclass
class SimplexCVResult:
    """Result of :func:`pentachoron_cv` / :func:`simplex_volume_cv`.

    Attributes
    ----------
    cv : float
        ``std / mean`` of the valid volumes (population std, ``ddof=0``, as in the seed);
        NaN when fewer than ``min_valid`` simplices are valid (see ``reason``).
    n_valid : int
        Simplices whose volume is non-degenerate.
    n_sampled : int
        Simplices drawn.
    volumes : ndarray, shape (n_valid,)
        Volumes of the valid simplices (float64), in draw order.
    mean, std : float
        Mean and population std of ``volumes`` (NaN when none).
    k : int
        Simplex dimension (4 for a pentachoron: 5 vertices).
    reason : str or None
        Why ``cv`` is NaN, else None.
    indices : ndarray, shape (n_sampled, k+1)
        Row indices of every drawn simplex (for reproduction).
    valid : ndarray of bool, shape (n_sampled,)
    exact : bool
        Every distinct subset was measured once (``exact_max``): the CV of the whole table, no
        sampling (``n_sampled`` = C(n, k+1)).
    """

    cv: float
    n_valid: int
    n_sampled: int
    volumes: np.ndarray = field(repr=False)
    mean: float
    std: float
    k: int
    reason: str | None = None
    indices: np.ndarray | None = field(default=None, repr=False)
    valid: np.ndarray | None = field(default=None, repr=False)
    exact: bool = False

    def as_dict(self) -> dict:
        """Scalar summary for ``metrics.json`` (no per-simplex arrays)."""
        return {"cv": self.cv, "n_valid": self.n_valid, "n_sampled": self.n_sampled,
                "mean": self.mean, "std": self.std, "k": self.k, "reason": self.reason, "exact": self.exact}


def simplex_volume_cv(
    X: Any,
    n_simplices: int = 1000,
    seed: Any = 0,
    *,
    n_vertices: int = 5,
    min_valid: int = 10,
    rtol: float = 1e-12,
    chunk: int = DEFAULT_CHUNK,
    exact_max: int | None = None,
    indices: Any = None,
) -> SimplexCVResult:
    """Coefficient of variation of random simplex volumes over the rows of ``X``.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
        Point cloud (e.g. an embedding matrix); every row may be drawn.
    n_simplices : int
        Simplices to draw.
    seed : int or numpy.random.Generator
        Seed of ``numpy.random.default_rng`` used by :func:`sample_distinct_rows`.
    n_vertices : int
        Vertices per simplex (``k + 1``), >= 2.
    min_valid : int
        Minimum number of valid simplices for a CV; below it ``cv`` is NaN with a reason.
    rtol : float
        A simplex is valid when ``det(G) > rtol * prod(diag(G))`` (Hadamard ratio; scale
        invariant, so duplicate or collinear rows are excluded whatever the units).
    chunk : int
        Simplices per batched chunk.
    exact_max : int, optional
        When ``X`` has at most this many distinct ``n_vertices``-row subsets, measure every one
        of them once instead of drawing ``n_simplices`` (``exact=True``: the CV of the whole
        table, no sampling error; ``seed`` and ``n_simplices`` are then unused). None: always draw.
    indices : array-like of int, shape (m, n_vertices), optional
        Measure these row sets instead of drawing (each row distinct; ``n_simplices`` and ``seed``
        unused): the draws of another table mapped onto these rows, for example.

    Returns
    -------
    SimplexCVResult
    """
    V.check_positive_int(n_vertices, "n_vertices", minimum=2)
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: n_vertices, 1: 1})
    V.check_positive_int(n_simplices, "n_simplices")
    V.check_positive_int(min_valid, "min_valid")
    V.check_positive_int(chunk, "chunk")
    if not (0 <= rtol < 1):
        V.fail("rtol", f"expected 0 <= rtol < 1, got {rtol!r}")
    if math.comb(t.shape[0], n_vertices) < min_valid:
        nan = float("nan")
        return SimplexCVResult(cv=nan, n_valid=0, n_sampled=0, volumes=np.empty(0), mean=nan, std=nan,
                               k=n_vertices - 1, reason=(f"X has {t.shape[0]} rows: only "
                                                         f"{math.comb(t.shape[0], n_vertices)} distinct "
                                                         f"{n_vertices}-row simplices exist (need min_valid={min_valid})"))
    scale = float(max(t.max(), -t.min()))  # = t.abs().max() (finite rows), without a whole-table |t| copy beside it
    if not (1e-30 < scale < 1e30):  # Gram determinants scale as scale^(2k): rescale so they neither
        if scale == 0:              # underflow to 0 (a false "degenerate") nor overflow; CV is scale-free
            nan = float("nan")
            return SimplexCVResult(cv=nan, n_valid=0, n_sampled=n_simplices, volumes=np.empty(0), mean=nan,
                                   std=nan, k=n_vertices - 1, reason="every row of X is zero")
        t = t.to(torch.float64) / scale
    else:
        scale = 1.0
    exact = indices is None and exact_max is not None and math.comb(t.shape[0], n_vertices) <= exact_max
    if indices is not None:
        idx = np.ascontiguousarray(np.asarray(indices), dtype=np.int64)
        if idx.ndim != 2 or idx.shape[1] != n_vertices or idx.shape[0] < 1:
            V.fail("indices", f"expected shape (m, {n_vertices}) with m >= 1, got {idx.shape}")
        if idx.min() < 0 or idx.max() >= t.shape[0] or (np.diff(np.sort(idx, axis=1), axis=1) == 0).any():
            V.fail("indices", f"expected distinct row indices in [0, {t.shape[0]}) in each set")
        n_simplices = idx.shape[0]
    elif exact:
        idx = all_subsets(t.shape[0], n_vertices)
        n_simplices = idx.shape[0]
    else:
        idx = sample_distinct_rows(t.shape[0], n_simplices, n_vertices, seed)
    vol_sq, rel = simplex_volumes_sq_at(t, idx, chunk=chunk)
    vol_sq, rel = vol_sq.cpu(), rel.cpu()
    valid = (rel > rtol) & (vol_sq > 0)
    unit = vol_sq[valid].sqrt().numpy()  # volumes of X / scale
    n_valid = int(unit.size)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        vols = unit * np.float64(scale) ** (n_vertices - 1) if scale != 1.0 else unit  # X's units (inf/0 at extremes)
        mean = float(vols.mean()) if n_valid else float("nan")
        std = float(vols.std()) if n_valid else float("nan")
    reason = None
    if n_valid < min_valid:
        cv = float("nan")
        reason = (f"only {n_valid} of {n_simplices} simplices are non-degenerate "
                  f"(need min_valid={min_valid}); the rows of X span too few dimensions "
                  f"or repeat")
    elif float(unit.mean()) <= 0:
        cv, reason = float("nan"), "mean volume is zero"
    else:
        cv = float(unit.std() / unit.mean())
    return SimplexCVResult(cv=cv, n_valid=n_valid, n_sampled=n_simplices, volumes=vols,
                           mean=mean, std=std, k=n_vertices - 1, reason=reason,
                           indices=idx, valid=valid.numpy(), exact=exact)


def simplex_volumes_sq_at(X: torch.Tensor, indices: Any, *, chunk: int = DEFAULT_CHUNK
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared volumes of the simplices whose vertices are rows ``indices`` of ``X``.

    The rows are gathered chunk by chunk (never all at once), differenced in float64 and
    reduced to the ``k x k`` edge Gram. On CPU this runs the fused numba kernel
    (:mod:`geolip_lib.metrics._kernels`); on other devices, batched torch ops.

    Parameters
    ----------
    X : torch.Tensor, shape (n, D)
    indices : array-like of int, shape (m, k+1)
    chunk : int

    Returns
    -------
    vol_sq : torch.Tensor, shape (m,), float64
    hadamard : torch.Tensor, shape (m,), float64
        ``det(G) / prod(diag G)`` in [0, 1] (0 for a degenerate simplex).
    """
    if X.device.type == "cpu" and HAVE_NUMBA and X.dtype in (torch.float32, torch.float64):
        idx_np = np.ascontiguousarray(np.asarray(indices), dtype=np.int64)
        vs, r = gather_volumes_sq(np.ascontiguousarray(X.numpy()), idx_np)
        return torch.from_numpy(vs), torch.from_numpy(r)
    idx_t = torch.as_tensor(np.asarray(indices), dtype=torch.long).to(X.device)
    m, kp1 = idx_t.shape
    denom = float(math.factorial(kp1 - 1)) ** 2
    vol_sq = torch.empty(m, dtype=torch.float64, device=X.device)
    rel = torch.empty(m, dtype=torch.float64, device=X.device)
    with one_torch_thread(X.device.type == "cpu"):
        for s in range(0, m, chunk):
            rows = idx_t[s:s + chunk]
            pts = torch.index_select(X, 0, rows.reshape(-1)).reshape(rows.shape[0], kp1, -1)
            det, r = _gram_det_rel(_edge_gram(pts.to(torch.float64)))
            vol_sq[s:s + chunk] = det / denom
            rel[s:s + chunk] = r
    return vol_sq, rel


def pentachoron_cv(X: Any, n_simplices: int = 1000, seed: Any = 0, **kwargs: Any) -> SimplexCVResult:
    """Pentachoron CV: :func:`simplex_volume_cv` with 5 vertices (4-simplices).

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D), n >= 5
        Rows to sample from: the **whole** matrix (the seed sampled only the first 512
        rows in places; this function never truncates).
    n_simplices : int
        Pentachora to draw (5 distinct rows each, Floyd sampling, ``default_rng(seed)``).
    seed : int or numpy.random.Generator
    **kwargs
        ``min_valid``, ``rtol``, ``chunk``, ``exact_max`` (see :func:`simplex_volume_cv`).

    Returns
    -------
    SimplexCVResult
        ``.cv``, ``.n_valid``, ``.volumes``, ``.reason`` ...
    """
    if "n_vertices" in kwargs:
        V.fail("n_vertices", "pentachoron_cv always uses 5 vertices; call simplex_volume_cv")
    return simplex_volume_cv(X, n_simplices, seed, n_vertices=5, **kwargs)


def regular_simplex_volume(k: int, edge: float = 1.0) -> float:
    """Closed-form volume of the regular k-simplex with edge length ``edge``.

    ``vol = edge^k / k! * sqrt((k + 1) / 2^k)``.
    """
    V.check_positive_int(k, "k")
    return float(edge) ** k / math.factorial(k) * math.sqrt((k + 1) / 2.0 ** k)


def cayley_menger_volume_sq_reference(points: Any) -> float:
    """Slow per-simplex reference (the seed's approach): bordered Cayley–Menger determinant.

    Parameters
    ----------
    points : array-like, shape (k+1, D)

    Returns
    -------
    float
        ``(-1)^(k+1) det(CM) / (2^k (k!)^2)`` computed with ``numpy.linalg.det`` in float64.
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 2:
        V.fail("points", f"expected shape (k+1, D) with k >= 1, got {p.shape}")
    n = p.shape[0]
    cm = np.ones((n + 1, n + 1))
    cm[0, 0] = 0.0
    diff = p[:, None, :] - p[None, :, :]
    cm[1:, 1:] = np.einsum("ijd,ijd->ij", diff, diff)
    k = n - 1
    return float((-1) ** (k + 1) * np.linalg.det(cm) / (2 ** k * math.factorial(k) ** 2))
