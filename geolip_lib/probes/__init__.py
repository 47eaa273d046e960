"""Embedding-matrix and hidden-state probes used by notebook 01 (seed 001 §1, §13a)."""
from .embedding import (
    CATEGORIES,
    category_probe,
    digit_manifold,
    eigenspectrum,
    embed_vs_output,
    euclidean_distances,
    norm_stats,
    parameter_census,
    pentachoron_probe,
    relative_position_bias,
    single_token_id,
    special_tokens,
    strip_private,
    vision_embedding_tables,
    weight_tying,
)
from .hidden import SENTENCES, layer_geometry, synthetic_images

__all__ = [
    "CATEGORIES", "SENTENCES", "category_probe", "digit_manifold", "eigenspectrum",
    "embed_vs_output", "euclidean_distances", "layer_geometry", "norm_stats",
    "parameter_census", "pentachoron_probe", "relative_position_bias", "single_token_id",
    "special_tokens", "strip_private", "synthetic_images", "vision_embedding_tables",
    "weight_tying",
]
