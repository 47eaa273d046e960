"""Display tables and headline intervals of the weight battery (notebooks 02 and 03).

The battery itself (:mod:`geolip_lib.weights.battery`) measures; this module only
arranges its results for a reader:

- tables (pandas DataFrames) of a :class:`~geolip_lib.weights.BatteryResult` summary
  beside the same architecture at random initialisation (``null``: the random-init
  summary, or ``None`` when no null was run);
- 95 % intervals of the headline numbers. A statistic of the *full* weights involves no
  sampling, but the headlines pool many matrices (Q sparsity over every Q matrix, mean
  stable rank over Q matrices, dead fraction over MLP layers, adjacent-layer cosine over
  layer pairs): their interval is a bootstrap over the matrices / layers / pairs they
  pool, i.e. how much the number depends on which layers this model happens to have
  (:func:`headline_items` writes each pooled headline as a ratio of sums over its items);
- like with like, as the seed measured: Q/K/V sparsity per (stack, attention kind) with
  a bootstrap over that scope's matrices (:func:`stack_items`, :func:`sparsity_by_stack`),
  the encoder/decoder × self/cross table of seed §6 (:func:`stack_attn_table`), the QK
  sign counts of the seed's form sym(W_q W_kᵀ) beside the corrected W_Qᵀ W_K
  (:func:`qk_layers`), and the seed claims as ``metrics["claims"]`` (:func:`battery_claims`);
- the cross-model rows and headlines of notebook 03: a two-stage bootstrap over the models
  and, within each, over the items its value pools (:func:`two_stage_interval`); per
  (model, stack, attention kind) rows (:func:`cross_model_stack_frame`).

One module per topic: :mod:`.overview` (notebook 02's tables), :mod:`.headlines`
(headline intervals), :mod:`.by_stack` (like with like), :mod:`.claims`, :mod:`.cross_model`
(notebook 03); :mod:`._common` holds the shared look-ups.
"""
from __future__ import annotations

from ._common import first_qk_group, get  # noqa: F401
from .overview import catalog_overview, catalog_summary, cross_layer_overview, mlp_overview, position_bias_overview, qk_layers, qk_random_init, qkv_sparsity, sparsity_by_role, sparsity_model, svd_by_stack_role  # noqa: F401
from .headlines import adjacent_pairs, battery_headline, headline_items, items_interval  # noqa: F401
from .by_stack import sparsity_by_stack, stack_attn_table, stack_items  # noqa: F401
from .claims import battery_claims, claims_table  # noqa: F401
from .cross_model import CROSS_MODEL_COLUMNS, SEED_REPORTED, STACK_COLUMNS, cross_model_frame, cross_model_headline, cross_model_row, cross_model_stack_frame, cross_stack_headline, seed_reported_stacks, seed_vs_measured, two_stage_interval  # noqa: F401

__all__ = [
    "get", "first_qk_group", "catalog_overview", "catalog_summary", "svd_by_stack_role", "sparsity_by_role",
    "sparsity_model", "qkv_sparsity", "qk_layers", "qk_random_init", "mlp_overview", "cross_layer_overview",
    "position_bias_overview", "adjacent_pairs", "headline_items", "items_interval", "battery_headline",
    "two_stage_interval", "cross_model_row", "cross_model_frame", "cross_model_headline", "CROSS_MODEL_COLUMNS",
    "stack_items", "sparsity_by_stack", "stack_attn_table", "battery_claims", "claims_table",
    "cross_model_stack_frame", "cross_stack_headline", "STACK_COLUMNS", "SEED_REPORTED", "seed_reported_stacks",
    "seed_vs_measured",
]
