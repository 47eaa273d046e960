"""Embedding-matrix and hidden-state probes used by notebook 01 (seed 001 §1, §13a).

``probes.plots`` draws the notebook's figures (imported on its own: ``from geolip_lib.probes
import plots``), ``probes.tables`` turns probe results into DataFrames, ``probes.uncertainty``
gives the headline numbers their 95 % intervals.
"""
from . import tables, uncertainty
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
    vision_embedding_tables,
    weight_tying,
)
from .hidden import SENTENCES, layer_geometry, synthetic_images
from .uncertainty import (
    digit_corr_interval,
    dimension_note,
    mean_cosine_interval,
    pr_interval,
    scale_interval,
    volume_ratio_interval,
)

__all__ = [
    "CATEGORIES", "SENTENCES", "category_probe", "digit_corr_interval", "digit_manifold", "dimension_note",
    "eigenspectrum", "embed_vs_output", "euclidean_distances", "layer_geometry", "mean_cosine_interval",
    "norm_stats", "parameter_census", "pentachoron_probe", "pr_interval", "relative_position_bias",
    "scale_interval", "single_token_id", "special_tokens", "synthetic_images", "tables", "uncertainty",
    "vision_embedding_tables", "volume_ratio_interval", "weight_tying",
]
