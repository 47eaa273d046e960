"""Batched spectral statistics of weight matrices and of factored QK operators.

All functions take torch tensors with arbitrary leading batch dimensions and compute in
the dtype they are given (the battery passes float64).

Every symmetric eigenproblem goes to ``torch.linalg.eigvalsh``. Measured here (2-core
CPU): SciPy's LAPACK ``dsyevd`` (OpenBLAS) is 1.3-1.6x faster in isolation, but inside
the battery OpenBLAS's busy-waiting threads fight torch's OpenMP threads for the cores
(T5-small battery 7.5 s with it vs 3.0 s with torch), so everything stays in torch's
thread pool.
"""
from __future__ import annotations

import torch

from ..validation import as_tensor

#: The project's one statement on the QK sign balance (seed 001's "cross-attention QK
#: balance locked at 0.500"). Notebooks 02, 03, 06 and 15 and the docstrings of
#: ``weights.battery`` and ``operators.factored`` cite this text rather than their own.
#: Checked by ``tests/unit/test_qk_balance_statement.py`` on constructed matrices of known
#: inertia, on random Gaussian weights and on the trained all-MiniLM-L6-v2 weights.
QK_BALANCE_STATEMENT = (
    "QK sign balance: (1) per head, the scoring form W_Q^hᵀ W_K^h (d × d, rank head_dim ≤ d/2) "
    "has a symmetric part with exactly head_dim positive and head_dim negative nonzero eigenvalues "
    "(Sylvester's law of inertia), so a per-head balance of 0.5 is forced by the shapes, not learned. "
    "(2) At layer level, in the corrected form W_Qᵀ W_K (d × d) and in the seed's form W_q W_kᵀ "
    "(inner × inner), nothing forces 0.5 when the inner width equals d (T5, BERT, MiniLM): trained "
    "all-MiniLM-L6-v2 gives 0.42–0.49 in the seed's form. (3) Independent random weights give 0.5 up to "
    "a small fluctuation, because W_K → −W_K leaves their distribution unchanged (0.5002 at d = 4096), "
    "so a layer-level 0.500 is what random initialisation already gives; only a departure from 0.5 "
    "is a learned property."
)


def svdvals(W: torch.Tensor, method: str = "gram", cond_limit: float = 1e6,
            chunk_bytes: int = 64 << 20) -> torch.Tensor:
    """Singular values of a matrix (m, n) or a batch of matrices (..., m, n), descending, float64.

    ``method="gram"``: square roots of the eigenvalues of the Gram matrix on the smaller
    side (W Wᵀ or Wᵀ W) in float64, several times faster than an SVD; its absolute error
    is ~eps·σ_max²/σ, so matrices whose σ_min/σ_max < 1/``cond_limit`` are recomputed
    with ``torch.linalg.svdvals`` (exact to float64 round-off everywhere). For a single
    matrix the Gram is accumulated ``chunk_bytes`` at a time (:func:`gram64`), so a
    large float32 ``W`` is never copied to float64 whole.
    ``method="svd"``: ``torch.linalg.svdvals`` for all.
    """
    if method == "svd":
        return torch.linalg.svdvals(W.to(torch.float64))
    if method != "gram":
        raise ValueError(f"method: expected 'gram' or 'svd', got {method!r}")
    m, n = W.shape[-2:]
    if W.ndim == 2:
        G = gram64(W, chunk_bytes)
    else:
        W = W.to(torch.float64)
        G = W @ W.mT if m <= n else W.mT @ W
    S = torch.linalg.eigvalsh(G).flip(-1).clamp_min(0).sqrt()
    if S.shape[-1] == 0:
        return S
    bad = S[..., -1] * cond_limit < S[..., 0]
    if bool(bad.any()):
        flat = S.reshape(-1, S.shape[-1])
        Wf = W.reshape(-1, m, n)
        idx = bad.reshape(-1).nonzero().flatten()
        flat[idx] = torch.linalg.svdvals(Wf[idx].to(torch.float64))
        S = flat.reshape(S.shape)
    return S


def gram64(W: torch.Tensor, chunk_bytes: int = 64 << 20) -> torch.Tensor:
    """float64 Gram matrix of one (m, n) matrix on its smaller side (W Wᵀ if m <= n, else Wᵀ W).

    The float64 copy is made ``chunk_bytes`` at a time (row chunks of a tall matrix,
    column chunks of a wide one) and accumulated, so a float32 embedding of a large
    model never exists in float64 all at once.
    """
    m, n = W.shape
    if W.dtype == torch.float64 or m * n * 8 <= chunk_bytes:
        W = W.to(torch.float64)
        return W.mT @ W if m > n else W @ W.mT
    if m > n:
        G = torch.zeros(n, n, dtype=torch.float64, device=W.device)
        step = max(1, chunk_bytes // (8 * n))
        for a in range(0, m, step):
            C = W[a:a + step].to(torch.float64)
            G.addmm_(C.mT, C)
        return G
    G = torch.zeros(m, m, dtype=torch.float64, device=W.device)
    step = max(1, chunk_bytes // (8 * m))
    for a in range(0, n, step):
        C = W[:, a:a + step].to(torch.float64)
        G.addmm_(C, C.mT)
    return G


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
        sum_{i<k} S_i² >= energy · sum S² (the project's rank_90); ``rank_seed`` = seed
        001's rank_90, ``np.searchsorted(np.cumsum(S) / S.sum(), energy) + 1``: the same
        count on S instead of the energy S², with no tolerance (a spectrum with sum 0 gives
        1); ``condition`` = S₀ / S_min (inf when S_min = 0); ``max_sv``, ``min_sv``.
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
    tot1 = S.sum(-1)
    cum1 = S.cumsum(-1) / torch.where(tot1 > 0, tot1, torch.ones_like(tot1))[..., None]
    rank_s = torch.where(tot1 > 0, (cum1 < energy).sum(-1) + 1, torch.ones_like(rank_e))
    smin = S[..., -1]
    cond = torch.where(smin > 0, s0 / torch.where(smin > 0, smin, torch.ones_like(smin)),
                       torch.full_like(s0, float("inf")))
    return {"stable_rank": stable, "pr": pr, "active_frac": act, "rank_energy": rank_e, "rank_seed": rank_s,
            "condition": cond, "max_sv": s0, "min_sv": smin}


def qk_factored(A: torch.Tensor, B: torch.Tensor, method: str = "auto") -> dict:
    """Spectrum of the bilinear form M = Aᵀ B without building the (d, d) matrix.

    ``A`` and ``B`` are query and key weights (rows = head dimensions, columns = the
    model dimension), so the attention score of residual vectors x, y is xᵀ M y.

    Parameters
    ----------
    A, B : (..., r, d) tensors
        Query and key weights (for a full layer r = n_heads·head_dim with keys repeated
        per query head under GQA; for one head r = head_dim).
    method : "auto" | "factored" | "dense"
        "factored" always uses the small problems below; "dense" forms M (d, d);
        "auto" (default) uses the factored problem for a quantity only when it is
        smaller than d (singular values: r < d; symmetric part: 2r < d) and M
        otherwise, which skips QR factorizations that would not shrink anything
        (T5, BERT: r = d). Both give the same numbers to float64 round-off (tested).

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
    if method not in ("auto", "factored", "dense"):
        raise ValueError(f"method: expected 'auto', 'factored' or 'dense', got {method!r}")
    r, d = A.shape[-2:]
    dense_sv = method == "dense" or (method == "auto" and r >= d)
    dense_eig = method == "dense" or (method == "auto" and 2 * r >= d)
    M = A.transpose(-1, -2) @ B if (dense_sv or dense_eig) else None
    if dense_sv:
        # Gram eigenvalues without the ill-conditioning fallback: M = AᵀB is often
        # ill-conditioned (cond(A)·cond(B)), which would send every layer to a full SVD,
        # while the statistics taken from these values (stable rank, PR) only see the
        # small ones through sums: their absolute error ~sqrt(d·eps)·σ_max moves PR by
        # < 1e-6 relative (tested against the exact SVD).
        svals = svdvals(M, cond_limit=float("inf"))[..., : min(r, d)]
    else:
        Ra = torch.linalg.qr(A.transpose(-1, -2), mode="r").R  # (..., min(d,r), r)
        Rb = torch.linalg.qr(B.transpose(-1, -2), mode="r").R
        core = Ra @ Rb.transpose(-1, -2)  # singular values of M
        svals = torch.linalg.svdvals(core)
    if dense_eig:
        S = 0.5 * (M + M.transpose(-1, -2))
        eig = torch.linalg.eigvalsh(S).flip(-1)
        if 2 * r < d:  # keep the 2r nonzero candidates (largest |λ|), descending
            idx = eig.abs().argsort(dim=-1, descending=True)[..., : 2 * r]
            eig = eig.gather(-1, idx).sort(dim=-1, descending=True).values
    else:
        C = torch.cat([A, B], dim=-2)  # (..., 2r, d)
        R = torch.linalg.qr(C.transpose(-1, -2), mode="r").R  # (..., m2, 2r)
        RJ = torch.cat([R[..., r:], R[..., :r]], dim=-1) * 0.5  # R J  (J swaps the halves, / 2)
        S = RJ @ R.transpose(-1, -2)
        S = 0.5 * (S + S.transpose(-1, -2))
        eig = torch.linalg.eigvalsh(S).flip(-1)
    fro2 = svals.square().sum(-1)
    if M is not None:
        dev2 = (M - M.transpose(-1, -2)).square().sum((-1, -2))
    else:
        N = B @ A.transpose(-1, -2)  # (..., r, r)
        tr_m2 = (N * N.transpose(-1, -2)).sum((-1, -2))
        dev2 = torch.clamp(2 * fro2 - 2 * tr_m2, min=0)
    fro = fro2.sqrt()
    sym_dev = torch.where(fro > 0, dev2.sqrt() / torch.where(fro > 0, fro, torch.ones_like(fro)),
                          torch.zeros_like(fro))
    return {"svals": svals, "eig": eig, "fro": fro, "sym_dev": sym_dev, "d": d}


def qk_seed_form(A: torch.Tensor, B: torch.Tensor) -> dict:
    """Seed 001's QK form: the sign counts of sym(A Bᵀ), an (inner × inner) matrix.

    Seed 001 (§4–6) multiplied ``W_q @ W_k.T`` with HF (out, in) weights, i.e. the Gram
    of query rows against key rows (inner × inner), not the scoring form Aᵀ B (d × d,
    :func:`qk_factored`); it took the symmetric part and counted eigenvalues ``> 0`` and
    ``< 0`` with no tolerance, over ``dim`` = inner ("n_positive / dim"). This function
    reproduces that definition exactly (dense ``eigvalsh`` in the dtype given; the
    battery passes float64). Where the rank is below inner (inner > d, or GQA keys
    repeated per query head), the seed's rule counts the round-off signs of the zero
    eigenvalues too; that is part of its definition and is kept.

    Parameters
    ----------
    A, B : (..., inner, d) tensors
        Query and key weights (under GQA: keys repeated per query head, so that A Bᵀ is square).

    Returns
    -------
    dict
        ``eig`` (..., inner) eigenvalues of (A Bᵀ + B Aᵀ)/2, descending; ``n_pos``, ``n_neg``
        (...) counts of ``eig > 0`` and ``eig < 0``; ``dim`` = inner; ``pos_frac`` = n_pos / dim
        and ``neg_frac`` = n_neg / dim (the seed's printed "pos" and "neg" fractions).

    Notes
    -----
    Which of the two forms is "balanced" and why: :data:`QK_BALANCE_STATEMENT`.
    """
    A = as_tensor(A, "A", min_ndim=2)
    B = as_tensor(B, "B", min_ndim=2)
    if A.shape != B.shape:
        raise ValueError(f"B: expected the shape of A {tuple(A.shape)}, got {tuple(B.shape)}")
    M = A @ B.transpose(-1, -2)
    eig = torch.linalg.eigvalsh(0.5 * (M + M.transpose(-1, -2))).flip(-1)
    dim = A.shape[-2]
    n_pos, n_neg = (eig > 0).sum(-1), (eig < 0).sum(-1)
    return {"eig": eig, "n_pos": n_pos, "n_neg": n_neg, "dim": dim, "pos_frac": n_pos.to(eig.dtype) / dim,
            "neg_frac": n_neg.to(eig.dtype) / dim}


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
