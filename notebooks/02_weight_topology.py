# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · Frozen-weight topology
#
# **Question.** Without running the model on any data, what structure did training
# carve into the weight matrices: how many directions each matrix really uses (SVD
# ranks), how many weights are near zero (sparsity), what similarity function the
# attention learned (the QK bilinear form W_Qᵀ W_K and the signs of its symmetric
# part), which MLP neurons are dead, whether layers resemble each other, and how the
# norms and relative position biases are shaped — and which of these properties a
# randomly initialised copy of the same architecture already has?
#
# **Seed.** Seed 001 §4 (T5-small/base), §5 (BERT-large, CLIP ViT-B/16, DINOv2-large,
# CLIP ViT-bigG) and §6 (T5-v1.1-XXL). One battery over one canonical catalog
# (`geolip_lib.models.adapters`), streamed tensor by tensor from safetensors
# (`geolip_lib.weights`), so an 11B model needs the memory of one tensor, not the model.
#
# Run it by hand in JupyterLab (the defaults use a tiny model and finish in seconds),
# or headless through `python run_all.py --profile demo --notebooks 02_weight_topology`.

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
REPORT_ROOT = None  # the profile's output root (unused here; 03_cross_model reads it)
SEED = 0  # [0 ≤ x < 2**32] seed of the random-init null baseline and of the bootstrap intervals
DEVICE = "auto"  # [x in ("auto", "cpu", "cuda") or x[:5] in ("cuda:",)] where SVDs / QK problems run: "auto" (CUDA if available), "cpu", "cuda"
NULL_BASELINE = True  # also run the battery on the same architecture at random init
TWIN_MAX_PARAMS = 1_000_000_000  # [x ≥ 0] above this many parameters the random-init twin is generated tensor by tensor
SPARSITY_THRESHOLDS = [1e-6, 1e-4, 1e-3, 1e-2, 1e-1]  # [len(x) ≥ 1 and all(t > 0 for t in x)] |w| thresholds of the sparsity tables
SHOW_LAYERS = 6  # [x ≥ 1] rows per group of the per-layer tables shown (all are recorded)
N_BOOT = 1000  # [1 ≤ x ≤ 10**6] bootstrap resamples of the headline intervals (over matrices / layers / layer pairs)

# %%
import warnings

from geolip_lib import families, quantization_effect, runtime, trajectory
from geolip_lib.families import catalog
from geolip_lib.weights import TensorStore, nulls, plots, run_battery
from geolip_lib.weights import tables as T
from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT
from geolip_lib.metrics.intervals import N_NULL_SEEDS  # seeds of the random-init null (5)

job = runtime.start("02_weight_topology", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
store = TensorStore(lm.weights_dir)  # reads safetensors headers only
metrics: dict = {}
not_run: dict = {}  # section title -> why it cannot run on this model (recorded in metrics.json, shown on the index)

# %% [markdown]
# ## 1. Weight catalog
#
# Every tensor name is mapped by the family's adapter to a canonical role (q/k/v/o,
# fused qkv, mlp_in/gate/out, embed, norm, pos_bias, ...), stack, attention kind and
# layer. Any 2-D tensor the adapter cannot classify is listed in a warning.

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    cat = catalog(store, config=lm.config, family=lm.family)
for w in caught:
    print(f"Warning: {w.message}")
job.table(T.catalog_overview(cat), caption=f"{MODEL}: catalog", formats={"parameters": "{:,}"}, index=False)
job.table(T.catalog_summary(cat), caption="Tensors per (stack, attention kind, role)", formats={"params": "{:,}"},
          index=False)

# %% [markdown]
# The battery runs once on the checkpoint and, as the null, on the same architecture at
# random initialisation with `N_NULL_SEEDS` = 5 initialisation seeds (`SEED + 1000 + k`):
# every property the initialiser alone produces shows up in both, and the null is a
# distribution — its interval in the headlines is the 95 % prediction interval of one whole
# model at random init (where one more random init would land). At initialisation the
# layers are independent and identically distributed, so each seed's battery runs on a
# sample of its layers (layer 0 and `m − 1` more, `m = max(2, ⌈L / 5⌉)`): the 5 seeds
# together cost about one model, not five, and the interval accounts for the layers a seed
# did not see (`weights.nulls.battery_null`; `metrics.sampled_null`: mean ± t·s·√(f + 1/5),
# f the fraction of the layers or layer pairs a seed saw). Which layers each seed measured
# is recorded as `metrics["random_init_null"]`. Each sampled tensor is generated when the
# battery asks for it, with the model's own initialisation and a seed of its own
# (`geolip_lib.models.twin`), so no twin is held whole; the seeds after the first are
# shared through the project's null cache by every job that asks for the same null. The
# tables and figures show the first seed (its sampled layers, and the tensors outside the
# layers: embeddings, final norms).

# %%
res = run_battery(store, cat=cat, device=DEVICE, thresholds=SPARSITY_THRESHOLDS)
summary = res.summary()
summary.pop("seconds", None)  # wall times are not deterministic; not recorded
rnull = nulls.battery_null(lm, N_NULL_SEEDS if NULL_BASELINE else 0, seed=SEED, device=DEVICE,
                           thresholds=SPARSITY_THRESHOLDS, max_params=TWIN_MAX_PARAMS)
null_res, null_seeds, null_stack_seeds = rnull.first, rnull.seeds, rnull.stack_seeds
null = rnull.first_summary  # the first seed: what the tables and figures show
metrics["battery"] = summary
metrics["random_init"] = null
metrics["random_init_null"] = rnull.drivers  # seeds, layers sampled per seed (the plan counts them)

# %% [markdown]
# ## 2. SVD effective rank
#
# Per matrix: stable rank ‖W‖²_F/‖W‖²₂, participation ratio of the singular values,
# fraction of singular values above 1 % of the largest, rank at 90 %, condition number.
# Spectra are float64 (Gram eigenvalues, exact SVD where the matrix is ill-conditioned).
# Rank at 90 % in two definitions: `rank_90` (project) is the smallest k whose σ₁²…σ_k²
# hold 90 % of the energy Σσ²; `rank_90_seed` is seed 001's
# `np.searchsorted(np.cumsum(S)/S.sum(), 0.90) + 1`, the same count on σ instead of σ²
# (larger: small singular values weigh more in Σσ). Means per (stack, attention kind,
# role), with the stable rank and PR of the same matrices at random init.

# %%
job.table(T.svd_by_stack_role(summary, null), caption="SVD statistics: means per (stack, attn, role); rank_90 on σ² "
          "(project), rank_90_seed on σ (seed 001)", formats={"active_frac": "{:.3f}", "rank_90": "{:.1f}",
                                                             "rank_90_seed": "{:.1f}"})

# %% [markdown]
# ## 3. Sparsity topology — the negative space
#
# Fraction of weights with |w| below each threshold, per role and for the whole model,
# and the Q vs K vs V contrast the seed highlights (threshold 0.1). Beware: at a fixed
# absolute threshold this is mostly a statement about weight *scale*; the random-init
# column shows what the initialiser alone gives.

# %%
thr = summary["qkv_sparsity_threshold"]
pct = {c: "{:.2%}" for c in summary["sparsity_thresholds"] + [f"{thr} (random init)"]}
job.table(T.sparsity_by_role(summary, null), caption="Fraction of |w| below each threshold, per role",
          formats=pct)
job.table(T.sparsity_model(summary, null), caption="Whole model", formats=pct)
job.table(T.qkv_sparsity(summary, null), caption=f"Q vs K vs V: fraction |w| {thr}, pooled over all stacks",
          formats={"trained": "{:.1%}", "random init": "{:.1%}"})

# %% [markdown]
# **Like with like.** The seed reported Q/K/V sparsity per stack and attention kind
# (T5: encoder self, decoder self, decoder cross; CLIP: the vision tower, with the text
# tower here reported separately). Per (stack/attn, role): the fraction |w| < 0.1 pooled
# over that scope's matrices, a 95 % bootstrap interval over those matrices (none with
# fewer than 3), and the same at random init.

# %%
stack_items = T.stack_items(res)  # per (stack/attn, role): weights below the threshold per matrix
null_stack_items = T.stack_items(null_res) if null_res is not None else None
metrics["stack_items"] = {"trained": stack_items, "random_init": null_stack_items}
by_stack = T.sparsity_by_stack(summary, stack_items, null, null_stack_items, seed=SEED, n_boot=N_BOOT)
job.table(by_stack, caption=f"Fraction |w| {thr} per (stack/attn, role), 95 % bootstrap over the matrices",
          formats={c: "{:.2%}" for c in by_stack.columns if by_stack[c].dtype.kind == "f"}, index=False)

# %% [markdown]
# ## 4. QK similarity manifold
#
# The attention score of residual vectors x, y is xᵀ W_Qᵀ W_K y (per head, summed over
# heads for the layer; keys repeated per query head under grouped-query attention).
# Spectra come from the factored form (a 2·inner-sized problem), never a d_model²
# product. Positive eigenvalues of the symmetric part are "similarity" directions,
# negative ones "anti-similarity".
#
# Two forms are measured per layer, side by side. **Seed** (seed 001 §4–6): W_q·W_kᵀ
# with HF (out, in) weights, an inner × inner Gram of query rows against key rows; its
# symmetric part's eigenvalues counted > 0 with no tolerance, reported as n_pos / inner.
# **Project**: the scoring form W_Qᵀ W_K (d × d); balance n_pos / (n_pos + n_neg) with
# round-off zeros not counted; also per head. What a balance of 0.5 means in either form
# is the project's one statement (`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT`),
# printed below.

# %%
qk = res.qk["layers"]
if qk.empty:
    not_run["4. QK similarity manifold"] = families.attention_skipped(lm, 'QK manifold')  # family any: which adapter
    print(f"{not_run['4. QK similarity manifold']}")
else:
    print(f"{QK_BALANCE_STATEMENT}")
    job.table(T.qk_layers(res, SHOW_LAYERS), caption=f"QK sign counts per layer (first {SHOW_LAYERS} per group): "
              "seed = sym(W_q W_kᵀ), inner × inner; project = sym(W_Qᵀ W_K), d × d", index=False,
              formats={"seed: n_pos/inner": "{:.4f}", "project: balance": "{:.4f}", "project: n_pos/d": "{:.4f}"})
    job.table(T.qk_random_init(summary, null), caption="Project form: positive-eigenvalue fraction n_pos/d, trained "
              "vs random init")
    if qk["qk_norm"].any():
        print("Note: q and k are RMS-normalised per head before the product (q_norm/k_norm): "
              "W_Qᵀ W_K gives the scores only up to that per-token normalisation.")

# %% [markdown]
# **Seed §6's table.** Per stack and attention kind (encoder self, decoder self, decoder
# cross for T5): the Q/K/V sparsity at |w| < 0.1 and the QK sign balance over the layers
# of that group, in the seed's form (n_pos / inner of sym(W_q W_kᵀ): mean, min and max
# over layers, and n_neg / inner) and in the project's (balance of sym(W_Qᵀ W_K)), beside
# the random-init copy. Seed 001 reported Q sparsity 100 % in all three T5-v1.1-XXL
# groups and a cross-attention balance "locked at 0.500/0.500 all 24 layers".

# %%
if not qk.empty:
    job.table(T.stack_attn_table(summary, null), caption="Encoder/decoder × self/cross (seed §6): sparsity and QK "
              "sign balance per group", formats={"QK layers": "{:.0f}"})

# %% [markdown]
# ## 5. MLP dead neurons
#
# Importance of neuron i = ‖up_i‖·‖down_i‖ (·‖gate_i‖ for gated MLPs such as GeGLU /
# SwiGLU). Dead: < 1 % of the mean importance; weak: < 10 %.

# %%
ml = res.mlp["layers"]
if ml.empty:
    not_run["5. MLP dead neurons"] = f"{MODEL}: no MLP blocks in the catalog — dead-neuron analysis skipped."
    print(f"{not_run['5. MLP dead neurons']}")
else:
    job.table(ml.head(2 * SHOW_LAYERS), caption="MLP neurons per layer", index=False)
    job.table(T.mlp_overview(summary, null), caption="Dead and weak neurons, trained vs random init",
              formats={"dead_frac": "{:.2%}", "weak_frac": "{:.2%}"})

# %% [markdown]
# ## 6. Cross-layer weight correlation
#
# Cosine of the flattened weights of the same role between layers (accumulated over
# row chunks, so no layer pair is ever materialised twice).

# %%
cl = T.cross_layer_overview(summary, null)
if lm.spec.shared_layers:  # ALBERT: one stored layer runs at every depth
    print(f"{lm.spec.shared_layers}")  # the family's sentence on its shared layer
if cl.empty:
    not_run["6. Cross-layer weight correlation"] = f"{MODEL}: fewer than two layers per role — cross-layer " \
        "correlation skipped."
    print(f"{not_run['6. Cross-layer weight correlation']}")
else:
    job.table(cl, caption="Cosine between layers of the same role (adjacent pairs; mean |off-diagonal|)")

# %% [markdown]
# ## 7. Norm scales and 8. relative position bias
#
# LayerNorm / RMSNorm gains: counts above 1.5, below 0.5 and within (0.8, 1.2). T5's
# relative position bias per head: monotonic decay over the near buckets, correlation
# with distance, the bucket of its peak, and local / global / mixed head types (buckets
# mapped to distances per direction; the seed's raw-index rule is kept as `*_seed`).

# %%
if res.norms.empty:
    print(f"{MODEL}: no norm scales.")
else:
    job.table(res.norms.drop(columns=["name"]).head(2 * SHOW_LAYERS), caption="Norm gains", index=False)
if res.pos_bias.empty:
    print(f"{MODEL}: no relative position bias (absolute / rotary positions) — section 8 does not apply.")
else:
    job.table(res.pos_bias.drop(columns=["name"]), caption="Relative position bias per head", index=False)
    job.table(T.position_bias_overview(summary), caption="Position-bias head types per stack")

# %% [markdown]
# ## 9. The seed's 3×3 panel, and the random-init null
#
# One panel per stack (encoder, decoder, vision, ...), then the trained weights beside
# the random-init copy.

# %%
for i, stack in enumerate(cat.stacks()):
    job.figure(plots.battery_panel(res, title=MODEL, stack=stack), f"weight_panel_{stack}", key=i == 0)
job.figure(plots.random_init_comparison(res, null_res, title=MODEL), "random_init_comparison",
           key=null_res is not None)

# %% [markdown]
# ## Results
#
# **Seed claims measured here** (recorded as `metrics["claims"]`, read by the findings
# notebook): Q sparsity per stack/attn (over every Q weight: exact); the QK balance of
# cross- and self-attention groups in the seed's form (mean over every layer of n_pos /
# inner: exact; marked "forced by shape" under grouped-query attention) with the project's
# form beside it; the adjacent-layer cosine of attention weights (the project's pooling of
# Q, K, V and O: the signed mean, scope `attention`, and the mean of each group's |mean|,
# scope `attention|abs`, which no cancellation between groups of opposite sign can bring to
# 0) and, beside it, seed §5's pooling of self-attention Q and K (or the fused QKV tensor
# whole) and the MLP up projection (scope `seed:q,k,qkv,mlp_up`, signed, mlp_up included
# though the seed's row is "Attention"; `weights.tables.claims.seed_cross_layer`) and the
# seed's attention types each (scope `seed:q,k,qkv|each`: the largest |group mean|); each
# with every group's own mean (`groups`, the table of section 6); the
# number of mixed relative-position heads per stack (seed's raw-bucket rule; the project's
# distance-class rule beside it). Each beside the random-init copy. Measured on dequantized
# weights (a GGUF file, a simulated twin), the Q sparsity and cross-layer records also carry
# the range their unquantized value lies in (`quantization_bound`), from where each weight
# lay before rounding (`geolip_lib.weights.quant_bounds`: half a step of its block for
# round-to-nearest types, one step of its sub-block for K-quants, the end codes' clamped
# weights within one more range). The cross-layer range holds with probability ≥ 1 − 1e-6
# under independent, unbiased rounding errors within those intervals (Hoeffding's and
# Bernstein's inequalities over every weight a scope pools, the shrink towards 0 the errors'
# lengthening of each layer can cause, a bound on the remainder:
# `geolip_lib.weights.quant_bounds_prob`); the worst case, every error aligned against the
# other layer, is recorded beside it (`worst_case`), with the typical move.

# %%
items = T.headline_items(res)  # what each pooled headline averages (03_cross_model resamples them too)
null_items = T.headline_items(null_res) if null_res is not None else None
metrics["headline_items"] = {"trained": items, "random_init": null_items}
metrics["claims"] = T.battery_claims(summary, items, stack_items, null_seeds or None, null_items,
                                     null_stack_seeds or None, seed=SEED, n_boot=N_BOOT)
# dequantized weights (a GGUF file, a simulated twin, a CTranslate2 int8 file): the range each unquantized claim value
# lies in, from every weight's rounding (quantization_effect.attach_bounds; the cross-layer one with probability
# ≥ 1 − 1e-6 under independent unbiased errors, its worst case beside it); a verdict it cannot flip is kept
bounds = quantization_effect.attach_bounds(metrics["claims"], lm, store, cat, summary)
if not bounds.empty:
    job.table(bounds, caption="Where the unquantized claim values lie (quantization_bound of each record)", index=False)
job.table(T.claims_table(metrics["claims"]), caption="Seed claims: the seed's definition (exact: computed on every "
          "weight of the scope) beside the random-init copy (mean over its 5 init seeds) and the project's definition",
          index=False)

# %% [markdown]
# Each headline is computed on all of this model's weights — every Q (K) matrix for the
# sparsity and the stable rank, every MLP layer for the dead fraction, every adjacent layer
# pair for the cross-layer cosine, the whole layer-0 form for the QK sign fraction — so it
# is **exact**: there is nothing to resample, and it is shown as "exact (all N …)" without
# an interval. The null is the same architecture at random init over its 5 init seeds, with
# the 95 % prediction interval over those seeds. A QK value the shapes force (grouped-query
# attention with 2·n_kv_heads·head_dim ≤ d) is marked "forced by shape" and kept out of
# verdicts and cross-model means.

# %%
head = T.battery_headline(summary, items, null_seeds or None, seed=SEED, n_boot=N_BOOT)

# %% [markdown]
# ## Geometry over training
#
# Only when the params file lists checkpoints of one training run (`checkpoints:` folders or
# hub `revisions:`; `geolip_lib.trajectory`): the headline numbers above at every checkpoint,
# by the same calls (`trajectory.battery_values`), from initialisation to the end of
# training. The checkpoints are loaded one at a time (load, measure, drop), so memory stays
# that of one model: the resident memory while each is held is recorded beside one model's
# size. Drawn in: the random-init null of each headline (mean and 95 % prediction interval
# over its 5 init seeds) at step 0, and the bands of the seed's claims (Q sparsity ≥ 93.7 %,
# attention cross-layer correlation ~0.000; `params/claims/seed-001.yaml`).

# %%
traj = trajectory.section(job, lm, "02_weight_topology", head, f"{lm.name}: weight-battery headlines over training",
                          device=DEVICE, thresholds=SPARSITY_THRESHOLDS, seed=SEED, n_boot=N_BOOT)
if traj is not None:
    metrics["trajectory"] = traj

# %%
job.finish(metrics, head, not_run=not_run)

# %% [markdown]
# ## References
#
# - Seed 001, sections 4 (T5-small/base), 5 (cross-architecture battery) and 6
#   (T5-v1.1-XXL).
# - C. H. Martin & M. W. Mahoney, *Implicit self-regularization in deep neural networks*
#   (WeightWatcher), JMLR 2021 — the peer tool; it skips fused QKV tensors silently.
# - N. Elhage et al., *A Mathematical Framework for Transformer Circuits*, 2021 — the
#   W_Qᵀ W_K bilinear form per head.
