"""Experimental attention modules of the seeds.

* seed 000 (constellation relay): :class:`HybridRelay`, :class:`PureRelay`,
  :class:`VanillaAttention` - ``relay.py``; test helpers in ``experiments.py``.
* figures of notebooks 12-14: ``plots.py``; their tables and interval samples: ``tables.py``.
* seed 002 (head_dim vs CV): :class:`MHAClassifier`, :func:`noise_pattern_data` -
  ``mha_classifier.py``; :func:`train_classifier` in ``training.py``.
* seed 003 (triple-product attention): :class:`TripleProductAttention`,
  :class:`StandardAttention`, :class:`RoPE`, :func:`gram_det3`, the copy task and
  :func:`train_comparison` - ``triple_product.py`` and ``training.py``.
"""
from .experiments import (MIXERS, build_mixer, causal_intervention, forward_ms, geometry_samples, mean_row_cosine,
                          n_params, row_cosines, run_stack, singular_value_pr, stack_geometry, unit_rows)
from .mha_classifier import (FIXED_SEED, MODES, PROJECT_BAND, SEED_BAND, MHAClassifier, band_mark, cv_profile,
                             data_modes, head_dim_run, head_dim_runs, in_band, noise_pattern_data)
from .relay import HybridRelay, PureRelay, VanillaAttention, anchor_distances, slerp_anchors, topk_gather
from .training import (autograd_saved_bytes, copy_accuracy, step_memory_bytes, time_call, train_classifier,
                       train_comparison, train_copy)
from .triple_product import (ATTENTION_TYPES, CopyModel, RoPE, StandardAttention, TripleProductAttention,
                             apply_rope, copied_half_mask, copy_batch, gram_det3, gram_det3_vectors,
                             resilience_table)

__all__ = [
    "HybridRelay", "PureRelay", "VanillaAttention", "slerp_anchors", "anchor_distances", "topk_gather",
    "run_stack", "mean_row_cosine", "row_cosines", "unit_rows", "MIXERS", "build_mixer", "stack_geometry",
    "geometry_samples", "causal_intervention", "forward_ms", "n_params", "singular_value_pr",
    "MHAClassifier", "noise_pattern_data", "train_classifier", "cv_profile", "head_dim_run", "band_mark",
    "head_dim_runs", "data_modes", "in_band", "MODES", "FIXED_SEED", "PROJECT_BAND", "SEED_BAND",
    "TripleProductAttention", "StandardAttention", "RoPE", "apply_rope", "gram_det3", "gram_det3_vectors",
    "CopyModel", "ATTENTION_TYPES", "copy_batch", "copied_half_mask", "resilience_table",
    "train_copy", "train_comparison", "copy_accuracy", "autograd_saved_bytes", "step_memory_bytes", "time_call",
]
