"""The frozen-weight ("inactive weight topology") battery over a canonical catalog.

Every function reads tensors from a :class:`~geolip_lib.weights.TensorStore` one step
at a time (one batch of same-shape matrices, one attention block, one MLP block, a row
chunk of one role across layers), so the memory a step needs is bounded by
``batch_bytes`` or by the tensors of one block, never by the model.

:func:`run_battery` (:mod:`.engine`) has two engines with the same results (tested
equal): "fused" (default) reads each stored tensor once per block and runs sparsity, SVD,
QK and MLP statistics while it is in memory (cross-layer cosines re-read row chunks);
"reference" runs the per-analysis functions one after the other, each with its own pass.
:func:`battery_summary` (:mod:`.summary`) aggregates a result for ``metrics.json``.

One module per analysis: :mod:`.svd`, :mod:`.sparsity`, :mod:`.qk`, :mod:`.mlp`,
:mod:`.cross_layer`, :mod:`.norms`, :mod:`.position_bias`.

Measurements (seed 001 §4–6), per matrix and aggregated by role / stack / layer:

- ``svd_table``: stable rank, PR of singular values, active fraction (> 1 % of max),
  rank at 90 % (``rank_90`` of the energy S², ``rank_90_seed`` of S as the seed had it),
  condition number of every attention, MLP and embedding matrix; float64 spectra from
  Gram eigenvalues (exact SVD where the matrix is ill-conditioned).
- ``sparsity_tables``: exact fraction of |w| below thresholds per role, per (stack,
  attn, role), for the whole model, plus a |w| histogram (1/8-octave bins).
- ``qk_tables``: the QK bilinear form M = W_Qᵀ W_K per layer (self and cross), from its
  factored form (never a d_model² product): stable rank, PR, symmetry deviation, sign
  counts of the eigenvalues of its symmetric part, top eigenvalues; and per head. Beside
  it, per layer, the seed's own form (``seed_*`` columns, see the notes).
- ``mlp_tables``: dead / weak neurons (|gate|·|up|·|down| < 1 % / 10 % of the mean).
- ``cross_layer``: cosine of flattened weights between layers per role.
- ``norm_table``: LayerNorm / RMSNorm scale statistics.
- ``position_bias_table``: relative-position-bias head topology (T5).

Notes on departures from the seed (fixed bugs; the seed's definition is kept beside each):

- The seed's QK matrix was ``W_q @ W_k.T`` with HF (out, in) weights: an
  (inner × inner) Gram of query/key *rows*, not the form xᵀ W_Qᵀ W_K y that scores
  tokens. Here M = W_Qᵀ W_K, per layer (sum over heads) and per head; the seed's form is
  computed too (:func:`~geolip_lib.weights.spectral.qk_seed_form`: ``seed_n_pos``,
  ``seed_n_neg``, ``seed_dim`` = inner, ``seed_pos_frac`` = n_pos / inner per layer).
- The seed's "rank_90" used the cumulative sum of S, not of the energy S²: both are
  recorded (``rank_90_seed`` and ``rank_90``).
- The seed's sign counts counted round-off noise of the zero eigenvalues of a
  rank-deficient M as signs; here |λ| <= 10·m·eps·max|λ| is zero (the ``seed_*`` counts
  keep the seed's rule: ``> 0`` / ``< 0``, no tolerance).
- Position-bias heads: the seed's local/global test used the raw bucket index, which
  mixes the two directions of the bidirectional encoder buckets; here buckets are
  mapped to distance classes first (the seed's raw definition is kept as ``*_seed``).
- What a QK sign balance of 0.5 means, per head and per layer, in either form: the one
  statement :data:`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT` (tested in
  ``tests/unit/weights/test_qk_balance_statement.py``).
"""
from __future__ import annotations

from ..spectral import svdvals
from .cross_layer import cross_layer
from .engine import BatteryResult, BlockReader, FusedAccumulator, run_battery
from .mlp import mlp_tables
from .norms import norm_table
from .position_bias import position_bias_table
from .qk import qk_tables
from .sparsity import HIST_EDGES, THRESHOLDS, sparsity_tables
from .summary import battery_summary
from .svd import SVD_ROLES, svd_table

__all__ = ["BatteryResult", "BlockReader", "FusedAccumulator", "HIST_EDGES", "SVD_ROLES", "THRESHOLDS",
           "battery_summary", "cross_layer", "mlp_tables", "norm_table", "position_bias_table", "qk_tables",
           "run_battery", "sparsity_tables", "svd_table", "svdvals"]
