"""Figures of the attention notebooks: 12 (constellation relay), 13 (head_dim vs CV) and
14 (triple-product attention).

Every function takes data (DataFrames or dicts the notebook already holds) and returns a
:class:`matplotlib.figure.Figure`; the notebook shows and saves it with
``job.figure(fig, name)``. Nothing here calls ``plt.show``.

Modules: :mod:`.plots_mixers` (notebook 12, the CV-band shading), :mod:`.plots_heads`
(notebooks 13 and 14).
"""
from .plots_heads import copy_accuracy, cost_per_step, cv_trajectory, cv_vs_head_dim, loss_curves, resilience
from .plots_mixers import BAND, BAND_COLORS, causal_intervention, depth_sweep, interleaved, seq_scaling, throughput

__all__ = ["depth_sweep", "interleaved", "causal_intervention", "throughput", "seq_scaling",
           "cv_vs_head_dim", "cv_trajectory", "resilience", "loss_curves", "copy_accuracy", "cost_per_step",
           "BAND", "BAND_COLORS"]
