"""Seed 004's analyses of measured QK operators across layers.

(a) operator cosine similarity between layers averaged over heads (adjacent, to an anchor);
(b) scalar-rescale residual ``√(1 − cos²)`` and optimal scalar ``T = gram / ‖g_anchor‖²``;
(c) curvature-sign agreement of the top-k eigenvalues with the anchor's, and the fraction
    of positive eigenvalues per layer;
(d) principal angles between top-k eigen-subspaces and top-1 eigenvector overlap;
(e) the question the seed asks beside (a): the *spectral* cosine, between the sorted
    eigen-spectra of two layers' symmetric parts — equal to 1 whenever the operators differ
    only by an orthogonal change of basis (same spectrum, other eigenvectors), while the
    operator cosine of (a) is then below 1;
and the verdict line.

Two readings of the verdict's mean cosine to the anchor are kept side by side:

* the seed's (:func:`seed_cos_to_anchor`, ``analyse(...)["seed"]``): its verdict cell as its code
  computes it — per layer the mean over heads of the signed cosine to the anchor, then the mean
  over **every** layer, the anchor's cosine with itself (1) included;
* the project's (``analyse(...)["mean_cos_to_anchor"]``): the same mean with the anchor left
  out, since its self-cosine says nothing about alignment and lifts the mean by
  ``(1 − mean)/n_layers``. With equal heads per layer the two are tied exactly:
  ``seed = ((n_layers − 1)·project + anchor's self-cosine) / n_layers``.

Other differences from the seed: normalisation uses the gram diagonal (the seed's own note); the
early / mid / late depth bands are thirds of the stack instead of the hard-coded 12/24 of Qwen3-4B.
"""
from __future__ import annotations

import numpy as np
import torch

from ..validation import as_tensor, check_positive_int, fail
from .measure import QKOperators

__all__ = ["operator_cosine", "spectral_cosine", "rescale_residual", "sign_agreement", "fraction_positive",
           "principal_angles", "top1_overlap", "depth_bands", "verdict", "seed_cos_to_anchor", "analyse",
           "headline_samples"]

#: a headline is bootstrapped over its layer pairs (each pair's mean over heads) when it
#: averages at least this many; below that (2- or 3-layer stacks) over (layer pair, head) cells
MIN_PAIRS = 4

#: the seed's floor (its ``np.maximum(…, 1e-20)``) on each ‖g‖² and on the cosine's denominator
SEED_FLOOR = 1e-20

VERDICTS = ((0.9, "STRONG", "same operator up to scalar across all layers"),
            (0.5, "MEDIUM", "substantial shared operator, but layer-specific drift"),
            (0.1, "WEAK", "some alignment; far from single-operator interpretation"),
            (-np.inf, "REJECTED", "operators are effectively orthogonal across layers"))


def operator_cosine(gram, eps: float = 1e-300) -> torch.Tensor:
    """Per-head operator cosine ``gram[L, L', h] / (‖g_L^h‖ ‖g_L'^h‖)``.

    Parameters
    ----------
    gram : array, shape (n_layers, n_layers, n_heads)

    Returns
    -------
    torch.Tensor, shape (n_layers, n_layers, n_heads), float64; average over the last axis
    for the seed's layer × layer matrix.
    """
    gram = as_tensor(gram, "gram", ndim=3, dtype=torch.float64)
    if gram.shape[0] != gram.shape[1]:
        fail("gram", f"expected shape (n_layers, n_layers, n_heads), got {tuple(gram.shape)}")
    norm = gram.diagonal(dim1=0, dim2=1).T.clamp_min(0).sqrt()      # (L, H)
    return gram / (norm[:, None, :] * norm[None, :, :]).clamp_min(eps)


def spectral_cosine(sym_eigs, eps: float = 1e-300) -> torch.Tensor:
    """Per-head cosine between the sorted eigen-spectra of two layers' symmetric parts.

    For each layer ``L`` and head ``h`` the 2·head_dim eigenvalues of
    ``S_L^h = (g_L^h + g_L^hᵀ)/2`` (from the factored form, :func:`.factored.sym_eig`) are
    sorted by signed value, descending, into a vector ``λ_L^h``; the spectral cosine is
    ``⟨λ_L^h, λ_L'^h⟩ / (‖λ_L^h‖ ‖λ_L'^h‖)``.

    Properties (the tests check them): invariant under ``g → Oᵀ g O`` for orthogonal
    ``O`` (``W_Q → W_Q O``, ``W_K → W_K O``: same spectrum, other eigenvectors), where the
    operator cosine of :func:`operator_cosine` drops below 1; 1 for ``g → c g`` with
    ``c > 0``, like the operator cosine; and for symmetric operators (``W_K = W_Q``) never
    below the operator cosine (von Neumann's trace inequality ``tr(AB) ≤ Σ λ_i(A) λ_i(B)``).
    Sorted spectra of independent random matrices of one shape are close to each other, so
    the spectral cosine of random-init weights is near 1 as well: read it beside that null.

    Parameters
    ----------
    sym_eigs : array, shape (n_layers, n_heads, n_eigs)
        Eigenvalues in any order (``QKOperators.sym_eigs`` is sorted by magnitude).

    Returns
    -------
    torch.Tensor, shape (n_layers, n_layers, n_heads), float64; symmetric in (L, L'),
    1 on the diagonal (0 for an all-zero spectrum).
    """
    ev = as_tensor(sym_eigs, "sym_eigs", ndim=3, dtype=torch.float64)
    lam = ev.sort(dim=-1, descending=True).values                       # (L, H, n) by signed value
    lam = lam / lam.norm(dim=-1, keepdim=True).clamp_min(eps)
    return torch.einsum("ahn,bhn->abh", lam, lam)


def rescale_residual(gram, anchor: int) -> dict:
    """Best scalar rescale of each layer's operator onto the anchor's.

    ``T[L, h] = ⟨g_L, g_a⟩ / ‖g_a‖²`` minimises ``‖g_L − T g_a‖_F``, and the residual
    fraction ``‖g_L − T g_a‖_F / ‖g_L‖_F`` is ``√(1 − cos²(g_L, g_a))``.

    Returns
    -------
    dict with ``T`` (n_layers, n_heads), ``cos`` (n_layers, n_heads), ``resid_frac``
    (n_layers, n_heads), all float64 tensors.
    """
    gram = as_tensor(gram, "gram", ndim=3, dtype=torch.float64)
    a = _anchor(anchor, gram.shape[0])
    cos = operator_cosine(gram)[:, a, :]
    T = gram[:, a, :] / gram[a, a, :].clamp_min(1e-300)
    return {"T": T, "cos": cos, "resid_frac": (1 - cos ** 2).clamp(0, 1).sqrt()}


def sign_agreement(sym_eigs, anchor: int, k: int) -> torch.Tensor:
    """Fraction of the top-k eigenvalues (by magnitude) whose sign matches the anchor's i-th.

    Parameters
    ----------
    sym_eigs : array, shape (n_layers, n_heads, n_eigs), sorted by decreasing magnitude
    anchor : int
    k : int, 1 <= k <= n_eigs

    Returns
    -------
    torch.Tensor, shape (n_layers, n_heads)
    """
    ev = as_tensor(sym_eigs, "sym_eigs", ndim=3, dtype=torch.float64)
    k = check_positive_int(k, "k")
    if k > ev.shape[-1]:
        fail("k", f"expected k <= {ev.shape[-1]} eigenvalues, got {k}")
    a = _anchor(anchor, ev.shape[0])
    s = torch.sign(ev[..., :k])
    return (s == s[a][None]).double().mean(-1)


def fraction_positive(sym_eigs, k: int | None = None) -> torch.Tensor:
    """Fraction of positive eigenvalues per layer (over heads and the top-k, default all).

    With ``[Q; K]`` of full rank the fraction over all 2·head_dim eigenvalues is exactly
    0.5 (Sylvester's law of inertia, see :mod:`.factored`); the top-k fraction is the
    informative one.

    Returns
    -------
    torch.Tensor, shape (n_layers,)
    """
    ev = as_tensor(sym_eigs, "sym_eigs", ndim=3, dtype=torch.float64)
    k = ev.shape[-1] if k is None else check_positive_int(k, "k")
    return (ev[..., :k] > 0).double().mean((1, 2))


def principal_angles(A, B) -> torch.Tensor:
    """Principal angles between the row spans of ``A`` and ``B`` (batched).

    Parameters
    ----------
    A : array, shape (..., k, n)
    B : array, shape (..., m, n)
        Rows span the subspaces (need not be orthonormal).

    Returns
    -------
    torch.Tensor, shape (..., min(k, m)), radians in [0, π/2], ascending.
    """
    A = as_tensor(A, "A", min_ndim=2, dtype=torch.float64)
    B = as_tensor(B, "B", min_ndim=2, dtype=torch.float64)
    if A.shape[-1] != B.shape[-1]:
        fail("B", f"ambient dimension {B.shape[-1]} differs from A's {A.shape[-1]}")
    Qa = torch.linalg.qr(A.transpose(-1, -2)).Q
    Qb = torch.linalg.qr(B.transpose(-1, -2)).Q
    s = torch.linalg.svdvals(Qa.transpose(-1, -2) @ Qb).clamp(0, 1)
    return torch.arccos(s)


def top1_overlap(A, B) -> torch.Tensor:
    """Squared overlap ``⟨a_0, b_0⟩²`` of unit top eigenvectors; A, B shape (..., k, n)."""
    A = as_tensor(A, "A", min_ndim=2, dtype=torch.float64)
    B = as_tensor(B, "B", min_ndim=2, dtype=torch.float64)
    a = A[..., 0, :] / A[..., 0, :].norm(dim=-1, keepdim=True).clamp_min(1e-300)
    b = B[..., 0, :] / B[..., 0, :].norm(dim=-1, keepdim=True).clamp_min(1e-300)
    return (a * b).sum(-1) ** 2


def depth_bands(n_layers: int, n_bands: int = 3) -> list[np.ndarray]:
    """Split layer positions into contiguous bands (early / mid / late for 3)."""
    n_layers = check_positive_int(n_layers, "n_layers")
    return [b for b in np.array_split(np.arange(n_layers), min(n_bands, n_layers))]


def verdict(mean_cos_to_anchor: float) -> str:
    """The seed's verdict line for the mean operator cosine to the anchor."""
    for thr, word, text in VERDICTS:
        if mean_cos_to_anchor > thr:
            return f"{word}: {text}."
    return f"{VERDICTS[-1][1]}: {VERDICTS[-1][2]}."  # NaN


def seed_cos_to_anchor(gram, anchor: int) -> torch.Tensor:
    """Per layer and head, the operator cosine to the anchor exactly as seed 004's verdict cell
    computes it.

    The seed's lines: ``diag = np.sqrt(np.maximum(diag_sq, 1e-20))`` with ``diag_sq`` the gram
    diagonal, then per layer ``(gram[L, anchor] / np.maximum(diag[L] * diag[anchor], 1e-20)).mean()``
    over its heads, and ``mean_cos_to_anchor = to_anchor_per_head.mean()`` over every layer. The
    cosine is signed (no absolute value), head ``h`` of every layer is the same query head (under
    grouped-query attention with the key head it reads, as the gram is measured), and the anchor's
    row is its cosine with itself (1 for a nonzero operator).

    Parameters
    ----------
    gram : array, shape (n_layers, n_layers, n_heads)
    anchor : int
        Anchor layer position (``-1`` = last, the seed's default).

    Returns
    -------
    torch.Tensor, shape (n_layers, n_heads), float64: average over heads, then over **every**
    layer, for the seed's verdict value.
    """
    gram = as_tensor(gram, "gram", ndim=3, dtype=torch.float64)
    a = _anchor(anchor, gram.shape[0])
    diag = gram.diagonal(dim1=0, dim2=1).T.clamp_min(SEED_FLOOR).sqrt()      # (L, H): ‖g_L^h‖_F
    return gram[:, a, :] / (diag * diag[a][None, :]).clamp_min(SEED_FLOOR)


def _anchor(anchor: int, n_layers: int) -> int:
    a = int(anchor)
    if not -n_layers <= a < n_layers:
        fail("anchor", f"expected a layer position in [-{n_layers}, {n_layers - 1}], got {anchor}")
    return a % n_layers


def analyse(ops: QKOperators, anchor: int = -1, ks=(2, 4, 8, 16, 32, 64, 128, 256)) -> dict:
    """All of seed 004's analyses for one measured group, as plain numbers and arrays.

    Parameters
    ----------
    ops : QKOperators
    anchor : int
        Anchor layer *position* (``-1`` = last).
    ks : sequence of int
        Top-k sizes for the sign agreement (those above 2·head_dim are skipped).

    Returns
    -------
    dict with keys ``anchor_layer``, ``cos_matrix`` (L, L), ``diag_cos_mean``,
    ``adjacent_cos`` (L−1,), ``cos_to_anchor`` (L,), ``rescale`` (per layer: mean cos,
    mean T, mean resid_frac), ``sign_agreement`` {k: {"per_layer", "mean", "bands"}},
    ``frac_positive`` (L,), ``frac_positive_topk`` (L,), ``principal_angles``
    (per layer: mean cos PA, min cos PA, mean angle in degrees, top-1 overlap),
    ``mean_cos_to_anchor`` (the project's: anchor excluded), ``adjacent_mean``, ``verdict`` (the
    seed's grades on the project's mean), ``seed`` (the seed's verdict cell, anchor included:
    ``cos_to_anchor`` (L,) from :func:`seed_cos_to_anchor` averaged over heads,
    ``mean_cos_to_anchor`` their mean over every layer, ``verdict``, and the spectral cosine's
    ``spectral_cos_to_anchor`` (L,) and ``spectral_mean_cos_to_anchor`` by the same arithmetic), and
    ``spectral`` (:func:`spectral_cosine`, means over heads): ``cos_matrix`` (L, L),
    ``adjacent_cos`` (L−1,), ``adjacent_mean``, ``cos_to_anchor`` (L,),
    ``mean_cos_to_anchor`` (anchor excluded), ``all_pairs_mean`` and, for the operator
    cosine beside it, ``operator_all_pairs_mean`` (both over the L(L−1)/2 distinct pairs).
    """
    L = ops.n_layers
    a = _anchor(anchor, L)
    cos_h = operator_cosine(ops.gram)
    cos_mat = cos_h.mean(-1)
    adj = torch.stack([cos_mat[i, i + 1] for i in range(L - 1)]) if L > 1 else cos_mat.new_zeros(0)
    resc = rescale_residual(ops.gram, a)
    bands = depth_bands(L)
    band_names = ["early", "mid", "late"] if len(bands) == 3 else [f"band{i}" for i in range(len(bands))]
    signs = {}
    for k in ks:
        if k > ops.sym_eigs.shape[-1]:
            continue
        agree = sign_agreement(ops.sym_eigs, a, k)
        signs[int(k)] = {"per_layer": agree.mean(-1), "mean": float(agree.mean()),
                         "bands": {n: float(agree[b].mean()) for n, b in zip(band_names, bands)}}
    pa = principal_angles(ops.eig_dirs, ops.eig_dirs[a][None].expand_as(ops.eig_dirs))  # (L, H, k)
    cpa = torch.cos(pa)
    t1 = top1_overlap(ops.eig_dirs, ops.eig_dirs[a][None].expand_as(ops.eig_dirs))
    others = [i for i in range(L) if i != a]
    mean_to_anchor = float(resc["cos"][others].mean()) if others else float("nan")
    kt = min(ops.top_k or 8, ops.sym_eigs.shape[-1])
    spec_h = spectral_cosine(ops.sym_eigs)
    spec_mat = spec_h.mean(-1)
    spec_adj = torch.stack([spec_mat[i, i + 1] for i in range(L - 1)]) if L > 1 else spec_mat.new_zeros(0)
    iu = torch.triu_indices(L, L, offset=1, device=spec_mat.device)
    nan = float("nan")
    spectral = {"cos_matrix": spec_mat, "adjacent_cos": spec_adj,
                "adjacent_mean": float(spec_adj.mean()) if L > 1 else nan, "cos_to_anchor": spec_mat[:, a],
                "mean_cos_to_anchor": float(spec_h[others, a].mean()) if others else nan,
                "all_pairs_mean": float(spec_mat[iu[0], iu[1]].mean()) if L > 1 else nan,
                "operator_all_pairs_mean": float(cos_mat[iu[0], iu[1]].mean()) if L > 1 else nan}
    seed_cta = seed_cos_to_anchor(ops.gram, a).mean(-1)                      # (L,), anchor included
    seed = {"cos_to_anchor": seed_cta, "mean_cos_to_anchor": float(seed_cta.mean()),
            "verdict": verdict(float(seed_cta.mean())), "spectral_cos_to_anchor": spec_mat[:, a],
            "spectral_mean_cos_to_anchor": float(spec_mat[:, a].mean()), "n_heads": ops.n_heads}
    return {
        "anchor_position": a, "anchor_layer": ops.layers[a], "layers": list(ops.layers),
        "cos_matrix": cos_mat, "diag_cos_mean": float(cos_mat.diagonal().mean()),
        "adjacent_cos": adj, "adjacent_mean": float(adj.mean()) if L > 1 else float("nan"),
        "cos_to_anchor": cos_mat[:, a],
        "rescale": {"mean_cos": resc["cos"].mean(-1), "mean_T": resc["T"].mean(-1),
                    "mean_resid_frac": resc["resid_frac"].mean(-1)},
        "sign_agreement": signs,
        "frac_positive": fraction_positive(ops.sym_eigs),
        "frac_positive_topk": fraction_positive(ops.sym_eigs, kt), "frac_positive_k": kt,
        "principal_angles": {"mean_cos": cpa.mean((1, 2)), "min_cos": cpa.amin(-1).mean(-1),
                             "mean_deg": torch.rad2deg(pa).mean((1, 2)), "top1_overlap": t1.mean(-1)},
        "mean_cos_to_anchor": mean_to_anchor,
        "verdict": verdict(mean_to_anchor),
        "spectral": spectral,
        "seed": seed,
    }


def headline_samples(ops: QKOperators, anchor: int = -1, k: int | None = None,
                     min_pairs: int = MIN_PAIRS) -> dict:
    """The items each headline of :func:`analyse` averages, for a bootstrap interval.

    Every headline is a mean over layer pairs and heads: ``cos_to_anchor`` over (layer ≠
    anchor, head) of the operator cosine to the anchor, ``cos_adjacent`` over (adjacent
    layer pair, head), ``spec_cos_to_anchor`` / ``spec_cos_adjacent`` the same for the
    spectral cosine (:func:`spectral_cosine`), ``spec_minus_op`` over (layer ≠ anchor, head)
    of spectral − operator cosine to the anchor (paired: the seed's question whether the
    spectra agree more than the operators), ``pa_deg`` over (layer ≠ anchor, head) of the mean top-k principal
    angle to the anchor (degrees), ``sign_agree`` over (layer, head) of the top-``k`` sign
    agreement (the anchor's own layer included, as in :func:`analyse`). The items are the
    layer pairs — each pair's mean over heads, so that the heads of one pair, which share
    its layers, stay together — when there are at least ``min_pairs`` of them, else the
    (layer pair, head) cells. All groups have equal sizes, so the mean of the items is the
    headline value exactly.

    Returns
    -------
    dict ``{key: {"values": ndarray, "what": str}}``; ``what`` names the items for the
    interval's method string, which :func:`geolip_lib.metrics.intervals.bootstrap`
    prefixes with their number ("5 layer pairs with the anchor, each the mean over 12
    heads"; "4 (layer pair, head) cells (1 layer pair with the anchor × 4 heads)"). Keys
    whose stack has no layer pair (a single layer) are left out; ``sign_agree`` only when
    ``k`` is given.
    """
    L, H = ops.n_layers, ops.n_heads
    a = _anchor(anchor, L)
    others = [i for i in range(L) if i != a]
    cos_h = operator_cosine(ops.gram)                                         # (L, L, H)
    spec_h = spectral_cosine(ops.sym_eigs)                                    # (L, L, H)
    cells = {}  # key: (values (n, H), unit, qualifier)
    if others:
        cells["cos_to_anchor"] = (cos_h[others, a, :], "layer pair", "with the anchor")
        cells["spec_cos_to_anchor"] = (spec_h[others, a, :], "layer pair", "with the anchor")
        cells["spec_minus_op"] = (spec_h[others, a, :] - cos_h[others, a, :], "layer pair", "with the anchor")
        pa = principal_angles(ops.eig_dirs, ops.eig_dirs[a][None].expand_as(ops.eig_dirs))
        cells["pa_deg"] = (torch.rad2deg(pa).mean(-1)[others], "layer pair", "with the anchor")
    if L > 1:
        cells["cos_adjacent"] = (torch.stack([cos_h[i, i + 1] for i in range(L - 1)]), "adjacent layer pair", "")
        cells["spec_cos_adjacent"] = (torch.stack([spec_h[i, i + 1] for i in range(L - 1)]), "adjacent layer pair", "")
    if k is not None and k <= ops.sym_eigs.shape[-1]:
        cells["sign_agree"] = (sign_agreement(ops.sym_eigs, a, k), "layer", "vs the anchor (anchor included)")
    out = {}
    for key, (v, unit, qual) in cells.items():
        v = v.double()                                                         # (n, H)
        n = v.shape[0]
        units = f"{n} {unit}{'' if n == 1 else 's'}{' ' + qual if qual else ''}"
        if n >= min_pairs:
            out[key] = {"values": v.mean(-1).cpu().numpy(),
                        "what": f"{unit}s{' ' + qual if qual else ''}, each the mean over {H} heads"}
        else:
            out[key] = {"values": v.reshape(-1).cpu().numpy(), "what": f"({unit}, head) cells ({units} × {H} heads)"}
    return out
