"""Embedding-matrix probes (seed 001 sections 1 and 13a), generic over model families.

Each probe is a small function returning a JSON-friendly dict, ready for ``metrics.json``.
Where a figure or an interval needs the per-item data (row norms, eigenvalues, volumes,
distances), ``return_data=True`` returns it separately: ``(summary, data)``; the summary
never carries arrays for plotting. Probes that need a tokenizer return
``{"applicable": False, "reason": ...}`` when the model has none, so notebooks can say so
in one sentence and go on.

The probes live by topic: :mod:`.embedding_stats` (norms, eigenspectrum, distances,
pentachoron volumes), :mod:`.token_probes` (digits, categories, id ranges, special tokens),
:mod:`.architecture` (census, tying, input vs output, position bias, vision tables); this
module re-exports them.
"""
from __future__ import annotations

from ..models.tokens import single_token_id
from .architecture import embed_vs_output, parameter_census, relative_position_bias, vision_embedding_tables, weight_tying
from .embedding_stats import (PERCENTILES, content_pentachoron, cumulative_variance, eigenspectrum, euclidean_distances,
                              norm_stats, pentachoron_cv_of_rows, pentachoron_probe)
from .token_probes import (CATEGORIES, ID_RANGE_CHARS, ID_RANGES, TAIL, TAIL_NAME, category_probe, char_token_id,
                           content_rows, digit_manifold, special_tokens, token_range_categories, token_range_probe,
                           token_strings)

__all__ = ["CATEGORIES", "ID_RANGES", "ID_RANGE_CHARS", "PERCENTILES", "TAIL", "TAIL_NAME", "category_probe",
           "char_token_id", "content_pentachoron", "content_rows", "cumulative_variance", "digit_manifold",
           "eigenspectrum", "embed_vs_output", "euclidean_distances", "norm_stats", "parameter_census",
           "pentachoron_cv_of_rows", "pentachoron_probe", "relative_position_bias",
           "single_token_id", "special_tokens", "token_range_categories", "token_range_probe", "token_strings",
           "vision_embedding_tables", "weight_tying"]
