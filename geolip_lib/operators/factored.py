"""Per-head QK operators kept factored (the form itself: :class:`geolip_lib.metrics.factored_qk.FactoredQK`;
this module keeps the layer-pair gram, thin aliases of the type's methods and the dense references).

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
nothing forces 0.5 under full multi-head attention, and where independent random weights
give 0.5 up to a fluctuation). Under grouped-query attention with 2·n_kv_heads·head_dim ≤ d
the layer-level balance is forced too (part 2 of that statement;
:func:`geolip_lib.metrics.factored_qk.qk_balance_forced` detects it from the shapes) —
see that statement, the one place the project states the QK sign balance.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from scipy.linalg.blas import dsyrk
from tqdm.auto import tqdm

from ..metrics.factored_qk import FactoredQK, kv_head_index
from ..validation import as_tensor, fail

__all__ = [
    "kv_head_index", "split_heads", "operator_fro_sq", "layer_gram", "sym_eig",
    "dense_operators", "dense_sym_eigvals", "dense_layer_gram",
]


def split_heads(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None,
                dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head factors ``Q, K`` (..., n_heads, head_dim, hidden), ``K[..., h]`` the key head
    query head ``h`` reads (the factors of :meth:`FactoredQK.from_heads`, keys gathered)."""
    f = FactoredQK.from_heads(W_Q, W_K, n_heads, n_kv_heads, dtype)
    return f.A, f.B_full


def operator_fro_sq(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None) -> torch.Tensor:
    """``‖W_Q^hᵀ W_K^h‖_F²`` of every head, (..., n_heads) float64 (:meth:`FactoredQK.fro_sq`)."""
    return FactoredQK.from_heads(W_Q, W_K, n_heads, n_kv_heads).fro_sq()


def _syrk(A: np.ndarray) -> np.ndarray:
    """Upper triangle of ``A Aᵀ`` (lower triangle zero) via BLAS dsyrk, float64."""
    A = np.ascontiguousarray(A, dtype=np.float64)
    # A is C-contiguous (m, n), i.e. Aᵀ is Fortran-contiguous (n, m): no copy.
    return dsyrk(1.0, A.T, trans=1)


def layer_gram(W_Qs, W_Ks, n_heads: int, n_kv_heads: int | None = None,
               progress: bool = False, *, method: str = "auto", chunk_bytes: int = 1 << 30) -> torch.Tensor:
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
    method : "auto" | "syrk" | "torch"
        ``"syrk"``: BLAS ``dsyrk`` on the host (upper triangles only; the fastest on a CPU);
        ``"torch"``: batched torch matmuls where the weights are (the query heads of a kv
        group at once, at most ``chunk_bytes`` of Grams per call); ``"auto"``: ``"syrk"``
        for CPU tensors, ``"torch"`` for any other device (CUDA). Both agree to float64
        round-off (tested).
    chunk_bytes : int
        Bound on the float64 Gram bytes of one ``"torch"`` call.

    Returns
    -------
    torch.Tensor, shape (n_layers, n_layers, n_heads), float64, symmetric in (L, L'), on
    the device of ``W_Qs``; its diagonal ``gram[L, L, h]`` equals :func:`operator_fro_sq`.
    """
    W_Qs = as_tensor(W_Qs, "W_Qs", ndim=3)
    W_Ks = as_tensor(W_Ks, "W_Ks", ndim=3)
    if method not in ("auto", "syrk", "torch"):
        raise ValueError(f"method: expected 'auto', 'syrk' or 'torch', got {method!r}")
    f = FactoredQK.from_heads(W_Qs, W_Ks, n_heads, n_kv_heads, W_Qs.dtype)
    Q, K, idx = f.A, f.B, f.kv
    n_layers, H, d, n = Q.shape
    groups = range(K.shape[1])
    if progress:
        groups = tqdm(groups, desc="layer gram (kv heads)", unit="head")
    if method == "torch" or (method == "auto" and Q.device.type != "cpu"):
        return _layer_gram_torch(Q, K, groups, chunk_bytes)
    gram = np.zeros((n_layers, n_layers, H))
    iu = np.triu_indices(n_layers, k=1)
    heads_of = idx.cpu().numpy()
    for kv in groups:
        Rk = _syrk(K[:, kv].reshape(n_layers * d, n).cpu().numpy())          # upper triangle
        for h in np.flatnonzero(heads_of == kv):
            P = _syrk(Q[:, h].reshape(n_layers * d, n).cpu().numpy())
            E = (P * Rk).reshape(n_layers, d, n_layers, d)
            blocks = E.sum(axis=(1, 3))                              # upper block triangle
            diag_el = np.einsum("lili->l", E)                        # diagonal of diag blocks
            g = np.zeros((n_layers, n_layers))
            g[iu] = blocks[iu]
            g = g + g.T
            g[np.diag_indices(n_layers)] = 2.0 * np.diagonal(blocks) - diag_el
            gram[:, :, h] = g
    return torch.from_numpy(gram).to(Q.device)


def _layer_gram_torch(Q: torch.Tensor, K: torch.Tensor, groups, chunk_bytes: int) -> torch.Tensor:
    """:func:`layer_gram` with torch matmuls on the factors' device: per kv head, the key Gram
    ``Ks Ksᵀ`` once and the query Grams of its query heads (contiguous under GQA) batched,
    at most ``chunk_bytes`` of (layers·head_dim)² float64 Grams per call."""
    n_layers, H, d, n = Q.shape
    Hk = K.shape[1]
    per_group = H // Hk
    Ld = n_layers * d
    step = max(1, min(per_group, int(chunk_bytes // max(1, 2 * 8 * Ld * Ld))))
    gram = torch.empty(n_layers, n_layers, H, dtype=torch.float64, device=Q.device)
    for kv in groups:
        Ks = K[:, kv].reshape(Ld, n).to(torch.float64)
        R = Ks @ Ks.T                                                      # (Ld, Ld)
        for a in range(0, per_group, step):
            hs = slice(kv * per_group + a, kv * per_group + min(per_group, a + step))
            Qs = Q[:, hs].transpose(0, 1).reshape(-1, Ld, n).to(torch.float64)   # (h, Ld, n)
            P = Qs @ Qs.transpose(-1, -2)                                  # (h, Ld, Ld)
            P *= R
            gram[:, :, hs] = P.reshape(-1, n_layers, d, n_layers, d).sum((2, 4)).permute(1, 2, 0)
            del P, Qs
    return gram


def sym_eig(W_Q, W_K, n_heads: int, n_kv_heads: int | None = None, top_k: int = 0,
            rel_tol: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor | None]:
    """All nonzero eigenvalues of each head's symmetric part, by decreasing magnitude,
    (..., n_heads, 2·head_dim), and the top-``top_k`` unit eigen-directions
    (..., n_heads, top_k, hidden) or None (:meth:`FactoredQK.sym_eig`)."""
    f = FactoredQK.from_heads(W_Q, W_K, n_heads, n_kv_heads, finite=False)
    return f.sym_eig(top_k=top_k, rel_tol=rel_tol)


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
