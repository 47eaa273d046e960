"""Batched spectral statistics of weight matrices and of factored QK operators.

All functions take torch tensors with arbitrary leading batch dimensions and compute in
the dtype they are given (the battery passes float64).
"""
from __future__ import annotations

import torch

from ..validation import as_tensor


def spectrum_stats(S: torch.Tensor, active: float = 0.01, energy: float = 0.9) -> dict:
    """Statistics of singular-value spectra.

    Parameters
    ----------
    S : (..., n) tensor
        Singular values, sorted in descending order along the last axis.
    active : float
        A singular value is *active* when it exceeds ``active * S[0]``.
    energy : float
        Fraction of the energy ``sum(S**2)`` for ``rank_energy``.

    Returns
    -------
    dict of (...) tensors
        ``stable_rank`` = sum S² / S₀²; ``pr`` = (sum S)² / sum S² (participation ratio
        of the singular values); ``active_frac``; ``rank_energy`` = smallest k with
        sum_{i<k} S_i² >= energy · sum S²; ``condition`` = S₀ / S_min (inf when S_min = 0);
        ``max_sv``, ``min_sv``.
    """
    S = as_tensor(S, "S", min_ndim=1, min_shape={-1: 1})
    s0 = S[..., 0]
    s2 = S.square()
    tot2 = s2.sum(-1)
    safe0 = torch.where(s0 > 0, s0, torch.ones_like(s0))
    stable = torch.where(s0 > 0, tot2 / safe0.square(), torch.zeros_like(s0))
    pr = torch.where(tot2 > 0, S.sum(-1).square() / torch.where(tot2 > 0, tot2, torch.ones_like(tot2)),
                     torch.zeros_like(tot2))
    act = (S > active * s0[..., None]).to(S.dtype).mean(-1)
    cum = s2.cumsum(-1) / torch.where(tot2 > 0, tot2, torch.ones_like(tot2))[..., None]
    # tolerance: the last cumsum entry can fall short of 1 by rounding
    rank_e = (cum < energy - 1e-12).sum(-1) + 1
    rank_e = torch.clamp(rank_e, max=S.shape[-1])
    smin = S[..., -1]
    cond = torch.where(smin > 0, s0 / torch.where(smin > 0, smin, torch.ones_like(smin)),
                       torch.full_like(s0, float("inf")))
    return {"stable_rank": stable, "pr": pr, "active_frac": act, "rank_energy": rank_e,
            "condition": cond, "max_sv": s0, "min_sv": smin}


def qk_factored(A: torch.Tensor, B: torch.Tensor) -> dict:
    """Spectrum of the bilinear form M = Aᵀ B without building the (d, d) matrix.

    ``A`` and ``B`` are query and key weights (rows = head dimensions, columns = the
    model dimension), so the attention score of residual vectors x, y is xᵀ M y.

    Parameters
    ----------
    A, B : (..., r, d) tensors
        Query and key weights (for a full layer r = n_heads·head_dim with keys repeated
        per query head under GQA; for one head r = head_dim).

    Returns
    -------
    dict
        ``svals`` (..., m) singular values of M, descending (m = min(r, d); the other
        d - m are zero); ``eig`` (..., m2) eigenvalues of the symmetric part
        (M + Mᵀ)/2, descending, m2 = min(2r, d) (the other d - m2 are exactly zero);
        ``fro`` (...) = ‖M‖_F; ``sym_dev`` (...) = ‖M − Mᵀ‖_F / ‖M‖_F; ``d`` = d.

    Notes
    -----
    With Aᵀ = Q_a R_a and Bᵀ = Q_b R_b (reduced QR), M = Q_a (R_a R_bᵀ) Q_bᵀ, so the
    singular values of M are those of the small R_a R_bᵀ. With C = [A; B] and
    J = [[0, I/2], [I/2, 0]], (M + Mᵀ)/2 = Cᵀ J C; with Cᵀ = Q R the nonzero eigenvalues
    are those of the symmetric (min(2r, d))-sized R J Rᵀ. ‖M − Mᵀ‖²_F = 2‖M‖²_F − 2 tr(M²)
    and tr(M²) = tr((B Aᵀ)²).
    """
    A = as_tensor(A, "A", min_ndim=2)
    B = as_tensor(B, "B", min_ndim=2)
    if A.shape != B.shape:
        raise ValueError(f"B: expected the shape of A {tuple(A.shape)}, got {tuple(B.shape)}")
    r, d = A.shape[-2:]
    Ra = torch.linalg.qr(A.transpose(-1, -2), mode="r").R  # (..., min(d,r), r)
    Rb = torch.linalg.qr(B.transpose(-1, -2), mode="r").R
    core = Ra @ Rb.transpose(-1, -2)  # singular values of M
    svals = torch.linalg.svdvals(core)
    C = torch.cat([A, B], dim=-2)  # (..., 2r, d)
    R = torch.linalg.qr(C.transpose(-1, -2), mode="r").R  # (..., m2, 2r)
    RJ = torch.cat([R[..., r:], R[..., :r]], dim=-1) * 0.5  # R J  (J swaps the halves, / 2)
    S = RJ @ R.transpose(-1, -2)
    S = 0.5 * (S + S.transpose(-1, -2))
    eig = torch.linalg.eigvalsh(S).flip(-1)
    fro2 = svals.square().sum(-1)
    N = B @ A.transpose(-1, -2)  # (..., r, r)
    tr_m2 = (N * N.transpose(-1, -2)).sum((-1, -2))
    dev2 = torch.clamp(2 * fro2 - 2 * tr_m2, min=0)
    fro = fro2.sqrt()
    sym_dev = torch.where(fro > 0, dev2.sqrt() / torch.where(fro > 0, fro, torch.ones_like(fro)),
                          torch.zeros_like(fro))
    return {"svals": svals, "eig": eig, "fro": fro, "sym_dev": sym_dev, "d": d}


def sign_counts(eig: torch.Tensor, d: int, rtol: float | None = None) -> dict:
    """Counts of positive / negative / zero eigenvalues out of ``d``.

    Parameters
    ----------
    eig : (..., m) tensor
        The nonzero-candidate eigenvalues (``qk_factored(...)["eig"]``); the remaining
        ``d - m`` eigenvalues are exactly zero.
    d : int
        Full dimension of the operator (d_model).
    rtol : float, optional
        |λ| <= rtol · max|λ| counts as zero; default ``m · eps(dtype) · 10``.

    Returns
    -------
    dict of (...) tensors: n_pos, n_neg, n_zero, pos_frac (n_pos / d, the seed's
    convention), balance (n_pos / (n_pos + n_neg)).
    """
    m = eig.shape[-1]
    if rtol is None:
        rtol = 10 * m * torch.finfo(eig.dtype).eps
    scale = eig.abs().amax(-1, keepdim=True)
    tol = rtol * scale
    n_pos = (eig > tol).sum(-1)
    n_neg = (eig < -tol).sum(-1)
    n_zero = d - n_pos - n_neg
    nz = (n_pos + n_neg).clamp(min=1)
    return {"n_pos": n_pos, "n_neg": n_neg, "n_zero": n_zero, "pos_frac": n_pos.to(eig.dtype) / d,
            "balance": n_pos.to(eig.dtype) / nz}
