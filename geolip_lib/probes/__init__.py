"""Embedding-matrix and hidden-state probes used by notebook 01 (seed 001 §1, §13a).

``probes.plots`` draws the notebook's figures (imported on its own: ``from geolip_lib.probes
import plots``), ``probes.tables`` turns probe results into DataFrames, ``probes.uncertainty``
gives the headline numbers their 95 % intervals.
"""
from . import tables, uncertainty
from .embedding import (
    CATEGORIES,
    ID_RANGES,
    category_probe,
    char_token_id,
    content_pentachoron,
    content_rows,
    cumulative_variance,
    digit_manifold,
    eigenspectrum,
    embed_vs_output,
    euclidean_distances,
    norm_stats,
    parameter_census,
    pentachoron_cv_of_rows,
    pentachoron_probe,
    relative_position_bias,
    single_token_id,
    special_tokens,
    token_range_categories,
    token_range_probe,
    vision_embedding_tables,
    weight_tying,
)
from .hidden import (
    SENTENCES,
    TRANSLATION_PAIR,
    encoder_decoder_cosine,
    encoder_decoder_states,
    is_encoder_decoder,
    layer_geometry,
    position_cosines,
    seed_layers,
    synthetic_images,
)
from .uncertainty import (
    digit_corr_interval,
    dimension_note,
    mean_cosine_interval,
    position_interval,
    pr_interval,
    scale_interval,
    token_cosine_interval,
    volume_ratio_interval,
)

__all__ = [
    "CATEGORIES", "ID_RANGES", "SENTENCES", "TRANSLATION_PAIR", "category_probe", "char_token_id",
    "content_pentachoron", "content_rows",
    "cumulative_variance", "digit_corr_interval", "digit_manifold", "dimension_note", "eigenspectrum",
    "embed_vs_output", "encoder_decoder_cosine", "encoder_decoder_states", "euclidean_distances",
    "is_encoder_decoder", "layer_geometry", "mean_cosine_interval", "norm_stats", "parameter_census",
    "pentachoron_cv_of_rows", "pentachoron_probe", "position_cosines", "position_interval", "pr_interval",
    "relative_position_bias",
    "scale_interval", "seed_layers", "single_token_id", "special_tokens", "synthetic_images", "tables",
    "token_cosine_interval", "token_range_categories", "token_range_probe", "uncertainty",
    "vision_embedding_tables", "volume_ratio_interval", "weight_tying",
]
