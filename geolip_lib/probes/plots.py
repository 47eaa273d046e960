"""Figures of notebook 01 (embedding terrain), drawn from what the probes return.

Every function takes data (arrays, probe summaries, intervals) and returns a
:class:`matplotlib.figure.Figure`; the notebook shows and saves it with ``job.figure``.

Modules: :mod:`.plots_terrain` (embedding matrix: terrain, volumes, heatmaps),
:mod:`.plots_layers` (layers, position bias, variance, encoder vs decoder, headline nulls).
"""
from .plots_layers import (contextual_layers, cumulative_variance, encoder_decoder, headline_nulls, layers,
                           position_bias)
from .plots_terrain import PALETTE, categories_heatmap, digits_heatmap, pentachoron_volumes, terrain_map

__all__ = ["PALETTE", "categories_heatmap", "contextual_layers", "cumulative_variance", "digits_heatmap", "encoder_decoder",
           "headline_nulls", "layers", "pentachoron_volumes", "position_bias", "terrain_map"]
