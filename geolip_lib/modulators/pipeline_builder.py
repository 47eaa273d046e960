"""Seed §8 in one call: :func:`build_procrustes_modulator` (anchors -> WordNet matrix ->
eigen-embedding -> kNN projection -> Procrustes -> an initialised modulator)."""
from __future__ import annotations

import numpy as np

from ..validation import as_tensor, check_positive_int, fail
from .hooks import locate_blocks
from .pipeline_geometry import anchor_similarity, init_modulator_from_pipeline, knn_project, procrustes_projection
from .residual import GeometricResidualModulator, eigen_embedding


def stack_size(model, stack: str = "encoder", family: str | None = None) -> int:
    """Number of blocks of ``stack`` (the modulator needs one alpha per block)."""
    return len(locate_blocks(model, stack, family)[1])


def build_procrustes_modulator(lm, matched, encoder_reps, static_reps, *, n_anchor: int = 3000, n_geo: int = 64,
                               k_neighbors: int = 10, temperature: float = 10.0, scale_fraction: float = 0.1,
                               initial_alpha: float = 0.01, seed: int = 42, similarity: str = "wup",
                               stack: str = "encoder"):
    """Seed §8 in one call: anchors -> WordNet matrix -> eigen-embedding -> kNN projection
    -> Procrustes -> an initialised :class:`GeometricResidualModulator`.

    Parameters
    ----------
    lm : LoadedModel
    matched : geolip_lib.lexical.matching.Matched
        M matched entries (synset_ids, token_ids).
    encoder_reps, static_reps : (M, d_model) arrays
        Encoder (definition) and static (token embedding) representations of the entries.
    n_anchor : int
        Anchors drawn at random (``default_rng(seed)``), clipped to M.
    n_geo : int
        Geometric dimensions (<= min(n_anchor, d_model)).
    k_neighbors, temperature : kNN projection settings.
    scale_fraction : float
        Projection scale as a fraction of the mean encoder norm (seed: 0.1).
    initial_alpha : float
    similarity : {"wup", "path"}
    stack : str

    Returns
    -------
    modulator : GeometricResidualModulator
    info : dict with anchor_idx, similarity (A, A), eigenvalues, recon_corr, geo (M, n_geo),
        alignment_cos, singular_value_sum, explained_variance, proj_norm
    """
    M = len(matched)
    E = as_tensor(encoder_reps, "encoder_reps", ndim=2).cpu().numpy()
    St = as_tensor(static_reps, "static_reps", ndim=2).cpu().numpy()
    if E.shape[0] != M or St.shape[0] != M:
        fail("encoder_reps", f"expected {M} rows (one per matched entry), got {E.shape[0]} and {St.shape[0]}")
    n_anchor = min(check_positive_int(n_anchor, "n_anchor", minimum=2), M)
    if n_geo > min(n_anchor, E.shape[1]):
        fail("n_geo", f"must be <= min(n_anchor={n_anchor}, d_model={E.shape[1]}), got {n_geo}")
    rng = np.random.default_rng(seed)
    anchor_idx = np.sort(rng.choice(M, size=n_anchor, replace=False))
    S = anchor_similarity(np.asarray(matched.synset_ids)[anchor_idx], similarity)
    anchor_geo, recon, ev = eigen_embedding(S, n_geo)
    geo = knn_project(St, anchor_idx, anchor_geo, k=k_neighbors, temperature=temperature)
    pr = procrustes_projection(E[anchor_idx], geo[anchor_idx], scale_fraction=scale_fraction)
    model = lm.model if hasattr(lm, "model") else lm
    cfg = model.config
    d_model = getattr(cfg, "d_model", None) or cfg.hidden_size
    n_layers = stack_size(lm, stack)
    mod = GeometricResidualModulator(d_model, cfg.vocab_size, n_geometric_dims=n_geo, n_layers=n_layers,
                                     initial_alpha=initial_alpha, seed=seed)
    init_modulator_from_pipeline(mod, np.asarray(matched.token_ids), geo, pr["weight"])
    info = {"anchor_idx": anchor_idx, "similarity": S, "eigenvalues": ev.cpu().numpy(), "recon_corr": recon,
            "geo": geo, "alignment_cos": pr["alignment_cos"], "singular_value_sum": pr["singular_value_sum"],
            "explained_variance": pr["explained_variance"], "proj_norm": float(pr["weight"].norm())}
    return mod, info
