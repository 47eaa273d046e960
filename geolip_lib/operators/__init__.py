"""Per-head QK operators ``g_L^h = W_Q^hᵀ W_K^h``, kept factored.

* :mod:`.factored` — the layer-pair gram, and thin aliases (``sym_eig``, ``operator_fro_sq``,
  ``split_heads``, ``kv_head_index``) of the one factored QK type
  :class:`geolip_lib.metrics.factored_qk.FactoredQK` (head_dim-sized problems), plus dense
  references for tests and benchmarks;
* :mod:`.measure` — :func:`measure_layers` (plain tensors), :class:`QKOperators`,
  :func:`save` / :func:`load` (JSON + safetensors);
* :mod:`.analyse` — seed 004's analyses (operator cosine, spectral cosine, rescale,
  curvature sign, principal angles, the verdict's mean by the seed's arithmetic and by the
  project's) and :func:`headline_samples` (the items each headline averages, for its bootstrap
  interval);
* :mod:`.model` — :func:`measure_model` over a model's weight catalog (every attention
  group: self / cross, encoder / decoder / vision / text);
* :mod:`.tables` — the notebook's tables (one row per group / layer) from the analyses;
* :mod:`.plots` — the figures of notebooks 06 (QK operators) and 07 (cross-scale projection).
"""
from .analyse import (analyse, depth_bands, fraction_positive, headline_samples, operator_cosine,
                      principal_angles, rescale_residual, seed_cos_to_anchor, sign_agreement, spectral_cosine,
                      top1_overlap, verdict)
from .factored import (dense_layer_gram, dense_operators, dense_sym_eigvals, kv_head_index,
                       layer_gram, operator_fro_sq, split_heads, stack_layers, sym_eig)
from .measure import QKOperators, load, measure_layers, save
from .model import attention_groups, load_group_weights, measure_model, measure_null_over_seeds
from . import nulls  # noqa: E402 - the random-init null from sampled layers (operators.nulls.operator_null)
