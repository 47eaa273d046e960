"""Geometric initialisation of the Procrustes modulator (seed 001 §8): WordNet similarity over
anchors, softmax-kNN projection of the other entries, PCA + orthogonal Procrustes onto the
encoder's space, and writing the result into a :class:`GeometricResidualModulator`.

``procrustes_projection`` uses :mod:`geolip_lib.procrustes` (``pca_fit(method="svd")``,
``procrustes_fit(scaling=False)``): the same SVD and scipy solve as the seed's code.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..lexical.engine import similarity_matrix
from ..procrustes import pca_fit, pca_transform, procrustes_apply, procrustes_fit
from ..validation import as_tensor, check_positive_int, fail


def knn_project(static, anchor_idx, anchor_geo, k: int = 10, temperature: float = 10.0,
                batch: int = 1024) -> torch.Tensor:
    """Place non-anchor items in the geometric space by softmax-weighted kNN over anchors.

    Neighbours are the ``k`` anchors of highest cosine in the ``static`` space; weights are
    ``softmax(temperature * cos)``; the interpolated vector is normalised. Anchors keep
    their own geometric vector.

    Parameters
    ----------
    static : (N, D) array
        Proxy space where neighbours are found (e.g. static token embeddings).
    anchor_idx : (A,) int array
        Rows of ``static`` that are anchors (distinct).
    anchor_geo : (A, n_geo) array
        Geometric vectors of the anchors.
    k : int
        Neighbours (clipped to A).
    temperature : float
    batch : int

    Returns
    -------
    (N, n_geo) float64 tensor.
    """
    S = F.normalize(as_tensor(static, "static", ndim=2, dtype=torch.float64), dim=1, eps=1e-12)
    G = as_tensor(anchor_geo, "anchor_geo", ndim=2, dtype=torch.float64).to(S.device)
    idx = torch.as_tensor(np.asarray(anchor_idx), dtype=torch.long, device=S.device).reshape(-1)
    if G.shape[0] != idx.numel():
        fail("anchor_geo", f"expected {idx.numel()} rows (one per anchor), got {G.shape[0]}")
    if idx.unique().numel() != idx.numel() or int(idx.min()) < 0 or int(idx.max()) >= S.shape[0]:
        fail("anchor_idx", f"expected distinct indices in [0, {S.shape[0]})")
    k = min(check_positive_int(k, "k"), idx.numel())
    out = torch.zeros(S.shape[0], G.shape[1], dtype=torch.float64, device=S.device)  # where the table lives
    out[idx] = G
    rest = torch.ones(S.shape[0], dtype=torch.bool, device=S.device)
    rest[idx] = False
    rest = torch.nonzero(rest).squeeze(1)
    A = S[idx]
    for s in range(0, rest.numel(), batch):
        rows = rest[s:s + batch]
        vals, nb = (S[rows] @ A.T).topk(k, dim=1)
        w = torch.softmax(vals * temperature, dim=1)
        out[rows] = F.normalize((G[nb] * w.unsqueeze(-1)).sum(1), dim=1, eps=1e-12)
    return out


def procrustes_projection(encoder_anchor, geo_anchor, scale_fraction: float = 0.1) -> dict:
    """Projection n_geo -> d_model aligning the geometric space with the encoder's PCA space.

    PCA (top ``n_geo`` components) of the centred encoder representations of the anchors;
    both point sets are row-normalised and centred; ``R = argmin ||G R - E||`` over
    orthogonal ``R`` (scipy); the projection is ``W = (R @ PCs).T * scale_fraction *
    mean ||enc||`` (d_model, n_geo), i.e. the seed's initialisation of ``proj.weight``.

    Parameters
    ----------
    encoder_anchor : (A, d_model) array
    geo_anchor : (A, n_geo) array, n_geo <= min(A, d_model)
    scale_fraction : float

    Returns
    -------
    dict with ``weight`` (d_model, n_geo) float64 tensor, ``rotation`` (n_geo, n_geo),
    ``alignment_cos`` (A,) cosines of the aligned geometric points with the encoder's
    PCA points, ``singular_value_sum`` (scipy's second output; not a scale factor),
    ``pca_components`` (n_geo, d_model), ``explained_variance`` (fraction kept by the PCA).
    """
    E = as_tensor(encoder_anchor, "encoder_anchor", ndim=2, dtype=torch.float64).cpu().numpy()
    Gm = as_tensor(geo_anchor, "geo_anchor", ndim=2, dtype=torch.float64).cpu().numpy()
    if E.shape[0] != Gm.shape[0]:
        fail("geo_anchor", f"expected {E.shape[0]} rows (one per encoder anchor), got {Gm.shape[0]}")
    n_geo = Gm.shape[1]
    if n_geo > min(E.shape):
        fail("geo_anchor", f"n_geo={n_geo} exceeds min(n_anchors, d_model)={min(E.shape)}; lower N_GEO")
    pca = pca_fit(E, n_geo, method="svd")  # numpy's SVD of the centred rows, numpy's signs (as the seed)
    pcs = pca.components.T
    Ep = pca_transform(pca, E)
    Ep = Ep / (np.linalg.norm(Ep, axis=1, keepdims=True) + 1e-12)
    Gn = Gm / (np.linalg.norm(Gm, axis=1, keepdims=True) + 1e-12)
    fit = procrustes_fit(Gn, Ep, scaling=False)  # centred orthogonal Procrustes (scipy), no scale
    R = fit.R
    aligned = procrustes_apply(fit, Gn)
    cos = (aligned * Ep).sum(1) / (np.linalg.norm(aligned, axis=1) * np.linalg.norm(Ep, axis=1) + 1e-12)
    W = (R @ pcs).T * (scale_fraction * np.linalg.norm(E, axis=1).mean())
    return {"weight": torch.from_numpy(W), "rotation": torch.from_numpy(R), "alignment_cos": cos,
            "singular_value_sum": fit.singular_sum, "pca_components": pcs,
            "explained_variance": float(pca.explained.sum() / max(pca.total_variance, 1e-300))}


def init_modulator_from_pipeline(modulator, token_ids, geo, proj_weight) -> None:
    """Write the pipeline's geometric rows (at ``token_ids``) and projection into a
    :class:`GeometricResidualModulator`."""
    W = as_tensor(proj_weight, "proj_weight", ndim=2)
    if tuple(W.shape) != tuple(modulator.proj.weight.shape):
        fail("proj_weight", f"expected shape {tuple(modulator.proj.weight.shape)}, got {tuple(W.shape)}")
    modulator.init_from_cayley_menger(as_tensor(geo, "geo", ndim=2), token_ids=token_ids)
    with torch.no_grad():
        modulator.proj.weight.copy_(W.to(modulator.proj.weight.dtype))


def anchor_similarity(synset_ids, kind: str = "wup") -> np.ndarray:
    """Symmetric WordNet similarity matrix over anchors (seed §8).

    The upper triangle ``sim(a_r, a_c)`` for r < c is mirrored (NLTK's Wu–Palmer is not
    always symmetric; the seed filled both halves from r < c), the diagonal is 1 and
    pairs NLTK does not score (None/NaN) are 0, as in the seed.

    Returns
    -------
    (A, A) float64 array.
    """
    M = np.asarray(similarity_matrix(np.asarray(synset_ids), kind), dtype=np.float64)
    M = np.nan_to_num(M, nan=0.0)
    U = np.triu(M, k=1)
    S = U + U.T
    np.fill_diagonal(S, 1.0)
    return S
