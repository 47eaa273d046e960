"""Per-head QK operators kept factored.

For one attention layer with query projection ``W_Q`` (``n_heads * head_dim, hidden``)
and key projection ``W_K`` (``n_kv_heads * head_dim, hidden``), query head ``h`` reads
the key head ``h // (n_heads // n_kv_heads)`` (grouped-query attention, GQA). The
bilinear form of head ``h`` is

    g^h = W_Q^hᵀ W_K^h          (hidden × hidden, rank ≤ head_dim)

so that the pre-softmax score is ``x_iᵀ g^h x_j``. Every quantity here is computed from
the ``head_dim``-row factors ``Q = W_Q^h`` and ``K = W_K^h``; the hidden × hidden matrix
is never built (except by the ``dense_*`` reference functions used by tests and the
benchmark):

* ``‖g‖_F² = tr((Q Qᵀ)(K Kᵀ))`` — two head_dim × head_dim Grams.
* ``⟨g_L, g_L'⟩_F = tr((Q_L Q_L'ᵀ)(K_L' K_Lᵀ))`` — for every layer pair at once, the
  block sums of ``(Qs Qsᵀ) ⊙ (Ks Ksᵀ)`` with ``Qs`` the layers' ``Q`` stacked; only
  the upper block triangle is computed (BLAS ``syrk``).
* the symmetric part ``S = (g + gᵀ)/2 = ½ Mᵀ J M`` with ``M = [Q; K]`` (2·head_dim ×
  hidden) and ``J = [[0, I], [I, 0]]``; its nonzero eigenvalues are those of the
  2·head_dim × 2·head_dim matrix ``½ Cᵀ J C`` with ``C Cᵀ = M Mᵀ`` (Cholesky in float64;
  an eigendecomposition when ``M`` is rank-deficient), and its eigenvectors are
  ``Mᵀ C⁻ᵀ y``.

Pitfall recorded by seed 004: ``‖W_K W_Qᵀ‖_F`` (the head_dim × head_dim product) is *not*
``‖g‖_F = ‖W_Qᵀ W_K‖_F``; use :func:`operator_fro_sq` (equal to the gram diagonal).

Note (Sylvester's law of inertia): ``J`` has head_dim eigenvalues +1 and head_dim −1, so
whenever ``M`` has full rank 2·head_dim the symmetric part has exactly head_dim positive
and head_dim negative eigenvalues: the fraction of positive eigenvalues over all
2·head_dim of them is exactly 0.5 for every head of every model. Only the sign pattern of
the top-k (by magnitude) carries information. This is part (1) of
:data:`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT` and holds per head only: it is
not seed 001's layer-level "QK balance locked at 0.500" (a form of inner width d, where
nothing forces 0.5, and where independent random weights give 0.5 up to a fluctuation) —
see that statement, the one place the project states the QK sign balance.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..metrics.threads import one_torch_thread
from ..validation import as_tensor, check_positive_int, fail

__all__ = [
    "kv_head_index", "split_heads", "operator_fro_sq", "layer_gram", "sym_eig",
    "dense_operators", "dense_sym_eigvals", "dense_layer_gram",
]


def kv_head_index(n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """Key/value head used by each query head under grouped-query attention.

    Parameters
    ----------
    n_heads, n_kv_heads : int
        Numbers of query and key/value heads; ``n_heads`` must be a multiple of
        ``n_kv_heads``.

    Returns
    -------
    torch.LongTensor, shape (n_heads,)
        ``h // (n_heads // n_kv_heads)``.
    """
    n_heads = check_positive_int(n_heads, "n_heads")
    n_kv_heads = check_positive_int(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads:
        fail("n_kv_heads", f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}")
    return torch.arange(n_heads) // (n_heads // n_kv_heads)


def split_heads(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None,
                dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Split projections into per-head factors, mapping query heads to their kv head.

    Parameters
    ----------
    W_Q : array, shape (..., n_heads * head_dim, hidden)
    W_K : array, shape (..., n_kv_heads * head_dim, hidden)
        Leading batch dimensions (e.g. layers) must match.
    n_heads, n_kv_heads : int
        ``n_kv_heads`` defaults to ``n_heads`` (no GQA).

    Returns
    -------
    Q, K : torch.Tensor, shape (..., n_heads, head_dim, hidden)
        ``K[..., h]`` is the key head that query head ``h`` reads (a view-free gather).
    """
    Q, K, idx = _split(W_Q, W_K, n_heads, n_kv_heads, dtype)
    return Q, K[..., idx, :, :]


def _split(W_Q, W_K, n_heads, n_kv_heads, dtype, finite=True):
    """Shared validation: (..., H, d, n) Q, (..., Hkv, d, n) K, kv index (H,).

    ``finite=False`` skips the elementwise NaN/Inf scan (callers then check their
    head_dim-sized Grams instead, which carry any non-finite weight).
    """
    W_Q = as_tensor(W_Q, "W_Q", min_ndim=2, finite=finite)
    W_K = as_tensor(W_K, "W_K", min_ndim=2, finite=finite)
    n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
    idx = kv_head_index(n_heads, n_kv_heads)
    if W_Q.shape[-2] % n_heads:
        fail("W_Q", f"{W_Q.shape[-2]} rows are not divisible by n_heads={n_heads}")
    d = W_Q.shape[-2] // n_heads
    if W_K.shape[-2] != n_kv_heads * d:
        fail("W_K", f"expected n_kv_heads*head_dim = {n_kv_heads}*{d} = {n_kv_heads * d} rows, "
                    f"got shape {tuple(W_K.shape)}")
    if W_K.shape[-1] != W_Q.shape[-1]:
        fail("W_K", f"hidden size {W_K.shape[-1]} differs from W_Q's {W_Q.shape[-1]}")
    if W_K.shape[:-2] != W_Q.shape[:-2]:
        fail("W_K", f"leading (batch) shape {tuple(W_K.shape[:-2])} differs from W_Q's "
                    f"{tuple(W_Q.shape[:-2])}")
    n = W_Q.shape[-1]
    Q = W_Q.to(dtype).reshape(*W_Q.shape[:-2], n_heads, d, n)
    K = W_K.to(dtype).reshape(*W_K.shape[:-2], n_kv_heads, d, n)
    return Q, K, idx


def operator_fro_sq(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None) -> torch.Tensor:
    """Squared Frobenius norm of every head's operator, ``‖W_Q^hᵀ W_K^h‖_F²``.

    Computed as ``tr((Q Qᵀ)(K Kᵀ))`` from head_dim × head_dim Grams (float64).

    Parameters
    ----------
    W_Q : array, shape (..., n_heads * head_dim, hidden)
    W_K : array, shape (..., n_kv_heads * head_dim, hidden)
    n_heads, n_kv_heads : int

    Returns
    -------
    torch.Tensor, shape (..., n_heads), float64
    """
    Q, K, idx = _split(W_Q, W_K, n_heads, n_kv_heads, torch.float64)
    QQ = Q @ Q.transpose(-1, -2)                 # (..., H, d, d)
    KK = (K @ K.transpose(-1, -2))[..., idx, :, :]
    return (QQ * KK).sum((-1, -2))               # both symmetric: tr(AB) = sum(A ⊙ B)


def _syrk(A: np.ndarray) -> np.ndarray:
    """Upper triangle of ``A Aᵀ`` (lower triangle zero) via BLAS dsyrk, float64."""
    from scipy.linalg.blas import dsyrk

    A = np.ascontiguousarray(A, dtype=np.float64)
    # A is C-contiguous (m, n), i.e. Aᵀ is Fortran-contiguous (n, m): no copy.
    return dsyrk(1.0, A.T, trans=1)


def layer_gram(W_Qs, W_Ks, n_heads: int, n_kv_heads: int | None = None,
               progress: bool = False) -> torch.Tensor:
    """Frobenius inner products of every head's operator between every pair of layers.

    ``gram[L, L', h] = ⟨g_L^h, g_L'^h⟩_F = tr((Q_L Q_L'ᵀ)(K_L' K_Lᵀ))``.

    For each head, the layers' factors are stacked (``Qs``: layers·head_dim × hidden) and
    ``gram`` is the block sum of ``(Qs Qsᵀ) ⊙ (Ks Ksᵀ)``; both Grams are symmetric, so
    only their upper triangles are computed (BLAS ``dsyrk``), and the key Gram is computed
    once per kv head and shared by its query heads. Cost per head:
    (layers·head_dim)²·hidden multiply-adds, never a hidden × hidden matrix.

    Parameters
    ----------
    W_Qs : array, shape (n_layers, n_heads * head_dim, hidden)
    W_Ks : array, shape (n_layers, n_kv_heads * head_dim, hidden)
    n_heads, n_kv_heads : int
    progress : bool
        Show a tqdm bar over kv heads.

    Returns
    -------
    torch.Tensor, shape (n_layers, n_layers, n_heads), float64, symmetric in (L, L');
    its diagonal ``gram[L, L, h]`` equals :func:`operator_fro_sq`.
    """
    W_Qs = as_tensor(W_Qs, "W_Qs", ndim=3)
    W_Ks = as_tensor(W_Ks, "W_Ks", ndim=3)
    Q, K, idx = _split(W_Qs, W_Ks, n_heads, n_kv_heads, W_Qs.dtype)
    n_layers, H, d, n = Q.shape
    gram = np.zeros((n_layers, n_layers, H))
    iu = np.triu_indices(n_layers, k=1)
    groups = range(K.shape[1])
    if progress:
        from tqdm.auto import tqdm

        groups = tqdm(groups, desc="layer gram (kv heads)", unit="head")
    for kv in groups:
        Rk = _syrk(K[:, kv].reshape(n_layers * d, n).numpy())          # upper triangle
        for h in np.flatnonzero(idx.numpy() == kv):
            P = _syrk(Q[:, h].reshape(n_layers * d, n).numpy())
            E = (P * Rk).reshape(n_layers, d, n_layers, d)
            blocks = E.sum(axis=(1, 3))                              # upper block triangle
            diag_el = np.einsum("lili->l", E)                        # diagonal of diag blocks
            g = np.zeros((n_layers, n_layers))
            g[iu] = blocks[iu]
            g = g + g.T
            g[np.diag_indices(n_layers)] = 2.0 * np.diagonal(blocks) - diag_el
            gram[:, :, h] = g
    return torch.from_numpy(gram)


def sym_eig(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None, top_k: int = 0,
            rel_tol: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor | None]:
    """All nonzero eigenvalues of each head's symmetric part ``S = (g + gᵀ)/2``.

    Solved as a 2·head_dim problem in float64: ``G = M Mᵀ`` for ``M = [αQ; K/α]``
    (``α`` balances the two norms; ``g`` is unchanged), ``G = C Cᵀ`` (Cholesky; an
    eigendecomposition with a pseudo-inverse where ``M`` is rank-deficient, e.g.
    2·head_dim > hidden), eigenvalues of ``½ Cᵀ J C``, eigenvectors ``Mᵀ C⁻ᵀ y``.

    Parameters
    ----------
    W_Q : array, shape (..., n_heads * head_dim, hidden)
    W_K : array, shape (..., n_kv_heads * head_dim, hidden)
    n_heads, n_kv_heads : int
    top_k : int
        Number of eigen-directions (by eigenvalue magnitude) to return; 0 for none.
    rel_tol : float
        Eigenvalues of ``G`` below ``rel_tol · max`` count as zero (rank-deficient case).

    Returns
    -------
    eigvals : torch.Tensor, shape (..., n_heads, 2 * head_dim), float64
        Sorted by decreasing magnitude; exact zeros pad the rank-deficient case.
    eigdirs : torch.Tensor, shape (..., n_heads, top_k, hidden), float64, or None
        Unit eigenvectors of ``S`` matching ``eigvals[..., :top_k]``, sign fixed so that
        the largest-magnitude component is positive.
    """
    Q, K, idx = _split(W_Q, W_K, n_heads, n_kv_heads, torch.float64, finite=False)
    H, d, n = Q.shape[-3:]
    Hk = K.shape[-3]
    top_k = int(top_k)
    if top_k < 0 or top_k > 2 * d:
        fail("top_k", f"expected 0 <= top_k <= 2*head_dim = {2 * d}, got {top_k}")
    # Grams with GQA sharing: K Kᵀ once per kv head.
    QQ = Q @ Q.transpose(-1, -2)                              # (..., H, d, d)
    KK = (K @ K.transpose(-1, -2))[..., idx, :, :]            # (..., H, d, d)
    # query heads of one kv group are contiguous: one (group·d × n)(n × d) product per group
    Qg = Q.reshape(*Q.shape[:-3], Hk, (H // Hk) * d, n)
    QK = (Qg @ K.transpose(-1, -2)).reshape(*Q.shape[:-3], H, d, d)
    if not (bool(torch.isfinite(QQ).all()) and bool(torch.isfinite(KK).all())):
        fail("W_Q" if not bool(torch.isfinite(QQ).all()) else "W_K", "contains NaN or Inf values")
    nq = QQ.diagonal(dim1=-2, dim2=-1).sum(-1).sqrt()
    nk = KK.diagonal(dim1=-2, dim2=-1).sum(-1).sqrt()
    alpha = torch.where((nq > 0) & (nk > 0), (nk / nq.clamp_min(1e-300)).sqrt(), torch.ones_like(nq))
    a2 = (alpha * alpha)[..., None, None]
    G = torch.cat([torch.cat([QQ * a2, QK], -1), torch.cat([QK.transpose(-1, -2), KK / a2], -1)], -2)
    G = 0.5 * (G + G.transpose(-1, -2))
    with one_torch_thread(G.device.type == "cpu"):  # batched small LAPACK calls
        return _sym_eig_from_gram(G, Q, K, idx, alpha, d, top_k, rel_tol)


def _sym_eig_from_gram(G, Q, K, idx, alpha, d, top_k, rel_tol):
    """Eigen-solve of the 2·head_dim problem given the balanced Gram ``G`` (see sym_eig)."""
    C, info = torch.linalg.cholesky_ex(G)
    Cinv_T = None
    bad = info != 0
    if bool(bad.any()):  # rank-deficient heads: C = V Λ^½ with a pseudo-inverse
        lam, V = torch.linalg.eigh(G[bad])
        keep = lam > rel_tol * lam.amax(-1, keepdim=True).clamp_min(1e-300)
        sq = torch.where(keep, lam.clamp_min(0).sqrt(), torch.zeros_like(lam))
        inv = torch.where(keep, 1.0 / sq.clamp_min(1e-300), torch.zeros_like(lam))
        C = C.clone()
        C[bad] = V * sq[..., None, :]
        if top_k:
            Cinv_T = torch.zeros_like(G)
            Cinv_T[bad] = V * inv[..., None, :]
    JC = torch.cat([C[..., d:, :], C[..., :d, :]], -2)       # J C: swap halves of rows
    T = C.transpose(-1, -2) @ JC
    T = 0.5 * (T + T.transpose(-1, -2))
    if top_k:
        lam_T, Y = torch.linalg.eigh(T)
    else:
        lam_T, Y = torch.linalg.eigvalsh(T), None
    order = lam_T.abs().argsort(dim=-1, descending=True, stable=True)
    eigvals = 0.5 * lam_T.gather(-1, order)
    if not top_k:
        return eigvals, None
    Y = Y.gather(-1, order[..., None, :].expand_as(Y))[..., :top_k]          # (..., H, 2d, k)
    # u = Mᵀ C⁻ᵀ y: solve Cᵀ z = y (triangular) or use the pseudo-inverse factor.
    Z = torch.linalg.solve_triangular(C.transpose(-1, -2), Y, upper=True) if Cinv_T is None else None
    if Cinv_T is not None:
        Z = torch.empty_like(Y)
        good = ~bad
        if bool(good.any()):
            Z[good] = torch.linalg.solve_triangular(C[good].transpose(-1, -2), Y[good], upper=True)
        Z[bad] = Cinv_T[bad] @ Y[bad]
    M = torch.cat([Q * alpha[..., None, None], K[..., idx, :, :] / alpha[..., None, None]], -2)  # (..., H, 2d, n)
    U = (M.transpose(-1, -2) @ Z).transpose(-1, -2)         # (..., H, k, n)
    U = U / U.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    sgn = torch.sign(U.gather(-1, U.abs().argmax(-1, keepdim=True)))
    U = U * torch.where(sgn == 0, torch.ones_like(sgn), sgn)
    return eigvals, U


# --------------------------------------------------------------------------------------
# Dense references (tests and benchmark only: they build hidden × hidden matrices)
# --------------------------------------------------------------------------------------

def dense_operators(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None) -> torch.Tensor:
    """Materialized operators ``g^h = W_Q^hᵀ W_K^h`` (reference only).

    Returns
    -------
    torch.Tensor, shape (..., n_heads, hidden, hidden), float64
    """
    Q, K = split_heads(W_Q, W_K, n_heads, n_kv_heads)
    return Q.transpose(-1, -2) @ K


def dense_sym_eigvals(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None,
                      n_keep: int | None = None) -> torch.Tensor:
    """Reference: ``eigvalsh`` of the materialized symmetric part, top by magnitude.

    Returns
    -------
    torch.Tensor, shape (..., n_heads, n_keep), float64, ``n_keep`` defaults to 2·head_dim.
    """
    g = dense_operators(W_Q, W_K, n_heads, n_kv_heads)
    S = 0.5 * (g + g.transpose(-1, -2))
    lam = torch.linalg.eigvalsh(S)
    order = lam.abs().argsort(dim=-1, descending=True, stable=True)
    d = as_tensor(W_Q, "W_Q").shape[-2] // n_heads
    n_keep = n_keep or 2 * d
    lam = lam.gather(-1, order)[..., :n_keep]
    if lam.shape[-1] < n_keep:  # hidden < 2·head_dim: the remaining eigenvalues are zero
        lam = torch.nn.functional.pad(lam, (0, n_keep - lam.shape[-1]))
    return lam


def dense_layer_gram(W_Qs, W_Ks, n_heads: int, n_kv_heads: int | None = None) -> torch.Tensor:
    """Reference: ``gram[L, L', h]`` from materialized, flattened operators.

    Returns
    -------
    torch.Tensor, shape (n_layers, n_layers, n_heads), float64
    """
    g = dense_operators(W_Qs, W_Ks, n_heads, n_kv_heads)        # (L, H, n, n)
    flat = g.flatten(-2).transpose(0, 1)                        # (H, L, n²)
    return (flat @ flat.transpose(-1, -2)).permute(1, 2, 0)


def stack_layers(mats: Sequence, name: str) -> torch.Tensor:
    """Stack per-layer 2-D weights into (n_layers, rows, cols), checking shapes agree."""
    if len(mats) == 0:
        fail(name, "expected at least one layer")
    ts = [as_tensor(m, f"{name}[{i}]", ndim=2) for i, m in enumerate(mats)]
    shape = ts[0].shape
    for i, t in enumerate(ts):
        if t.shape != shape:
            fail(f"{name}[{i}]", f"shape {tuple(t.shape)} differs from layer 0's {tuple(shape)}")
    return torch.stack(ts)
