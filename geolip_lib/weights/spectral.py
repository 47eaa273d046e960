"""Batched spectral statistics of weight matrices, and seed 001's QK form.

The factored QK form W_Qᵀ W_K itself (singular values, symmetric-part eigenvalues, sign
counts) is :class:`geolip_lib.metrics.factored_qk.FactoredQK`.

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
#: Checked by ``tests/unit/weights/test_qk_balance_statement.py`` on constructed matrices of known
#: inertia, on random Gaussian weights and on the trained all-MiniLM-L6-v2 weights.
QK_BALANCE_STATEMENT = (
    "QK sign balance: (1) per head, the scoring form W_Q^hᵀ W_K^h (d × d, rank head_dim ≤ d/2) "
    "has a symmetric part with exactly head_dim positive and head_dim negative nonzero eigenvalues "
    "(Sylvester's law of inertia), so a per-head balance of 0.5 is forced by the shapes, not learned. "
    "(2) At layer level, grouped-query attention forces it too: W_Qᵀ W_K = Pᵀ K with K the n_kv_heads·head_dim "
    "key rows and P the per-group sums of the query heads, so when 2·n_kv_heads·head_dim ≤ d (Qwen, "
    "tiny-qwen) the layer form has exactly as many positive as negative nonzero eigenvalues whatever the "
    "weights hold (d = 160, 16 query heads of 16, 4 KV heads: 64 and 64, even with Q aligned to K); in the "
    "seed's form W_q W_kᵀ (inner × inner), whose rank is at most r = min(n_kv_heads·head_dim, d), the same holds "
    "when 2·r ≤ inner — under GQA, and whenever inner ≥ 2·d (T5-3B: d 1024, inner 4096: 1024 positive, 1024 "
    "negative, 2048 zero eigenvalues) — and its n_pos / inner is then r / inner plus the signs of round-off "
    "zeros, not a learned number. Such values are marked "
    "'forced by shape' (metrics.factored_qk.qk_balance_forced) and kept out of pooled means and verdicts. "
    "Nothing forces 0.5 in full multi-head attention, where the inner width equals d (T5, BERT, MiniLM): "
    "trained all-MiniLM-L6-v2 gives 0.42–0.49 in the seed's form. (3) Independent random weights give 0.5 up to "
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


def svdvals_many(Ws: list, cond_limit: float = 1e6, chunk_bytes: int = 64 << 20,
                 batch_bytes: int = 1 << 30) -> list:
    """:func:`svdvals` (``method="gram"``) of several matrices of any shapes, on their device:
    each Gram is made as :func:`svdvals` makes it (:func:`gram64`), the Grams of one size go
    to ``torch.linalg.eigvalsh`` in batches (one call per size, at most ``batch_bytes`` of
    Grams per call), and ill-conditioned ones are redone with ``torch.linalg.svdvals``.
    Returns the spectra (descending float64) in the order given; equal to ``[svdvals(W) for W
    in Ws]`` (the batched LAPACK call solves each matrix alone: tested bit-equal on the CPU)."""
    out: list = [None] * len(Ws)
    by_size: dict = {}
    for i, W in enumerate(Ws):
        by_size.setdefault(min(W.shape[-2:]), []).append(i)
    for k, idx in by_size.items():
        if k == 0:
            for i in idx:
                out[i] = svdvals(Ws[i], cond_limit=cond_limit, chunk_bytes=chunk_bytes)
            continue
        per = max(1, int(batch_bytes // (8 * k * k)))
        for a in range(0, len(idx), per):
            part = idx[a:a + per]
            G = torch.stack([gram64(Ws[i], chunk_bytes) for i in part])
            S = torch.linalg.eigvalsh(G).flip(-1).clamp_min(0).sqrt()
            del G
            bad = (S[..., -1] * cond_limit < S[..., 0]).tolist()  # one host sync per batch
            for j, i in enumerate(part):
                out[i] = torch.linalg.svdvals(Ws[i].to(torch.float64)) if bad[j] else S[j]
    return out


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


def qk_seed_form(A: torch.Tensor, B: torch.Tensor) -> dict:
    """Seed 001's QK form: the sign counts of sym(A Bᵀ), an (inner × inner) matrix.

    Seed 001 (§4–6) multiplied ``W_q @ W_k.T`` with HF (out, in) weights, i.e. the Gram
    of query rows against key rows (inner × inner), not the scoring form Aᵀ B (d × d,
    :meth:`geolip_lib.metrics.factored_qk.FactoredQK.spectrum`); it took the symmetric part and counted eigenvalues ``> 0`` and
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
