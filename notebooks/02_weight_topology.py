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
SEED = 0  # seed of the random-init null baseline
DEVICE = "auto"  # where SVDs / QK problems run: "auto" (CUDA if available), "cpu", "cuda"
NULL_BASELINE = True  # also run the battery on the same architecture at random init
SPARSITY_THRESHOLDS = [1e-6, 1e-4, 1e-3, 1e-2, 1e-1]  # |w| thresholds of the sparsity tables
SHOW_LAYERS = 6  # rows of per-layer tables printed (all are recorded)

# %%
import warnings

import pandas as pd
from IPython.display import display

from geolip_lib import models, plotting, results
from geolip_lib.models.adapters import catalog
from geolip_lib.weights import TensorStore, run_battery
from geolip_lib.weights.plots import battery_panel

NOTEBOOK = "02_weight_topology"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
pd.set_option("display.width", 160, "display.max_columns", 30, "display.precision", 4)
lm = models.load(MODEL)
store = TensorStore(lm.weights_dir)  # reads safetensors headers only
metrics: dict = {}

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
    print("WARNING:", w.message)
print(f"{MODEL}: family={cat.family}, d_model={cat.d_model}, {len(cat.stored())} tensors, "
      f"{sum(e.numel for e in cat.stored()):,} parameters")
display(cat.summary())

# %%
res = run_battery(store, cat=cat, device=DEVICE, thresholds=SPARSITY_THRESHOLDS)
summary = res.summary()
summary.pop("seconds", None)  # wall times are not deterministic; not recorded
null = None
if NULL_BASELINE:
    rnd = lm.random_init(seed=SEED + 1000)
    null_res = run_battery(TensorStore(rnd.model.state_dict()), config=lm.config, family=lm.family,
                           device=DEVICE, thresholds=SPARSITY_THRESHOLDS)
    null = null_res.summary()
    null.pop("seconds", None)
    del rnd
metrics["battery"] = summary
metrics["random_init"] = null


def beside(a, b):
    """(trained, random-init) pair for a table."""
    return a, (b if null is not None else None)


# %% [markdown]
# ## 2. SVD effective rank
#
# Per matrix: stable rank ‖W‖²_F/‖W‖²₂, participation ratio of the singular values,
# fraction of singular values above 1 % of the largest, rank at 90 % of the energy
# Σσ², condition number. Spectra are float64 (Gram eigenvalues, exact SVD where the
# matrix is ill-conditioned).

# %%
cols = ["stable_rank", "pr", "active_frac", "rank_90", "condition"]
tab = pd.DataFrame(summary.get("svd_by_stack_role", {})).T
if null is not None and null.get("svd_by_stack_role"):
    nt = pd.DataFrame(null["svd_by_stack_role"]).T.add_suffix(" (random)")
    tab = tab.join(nt[["stable_rank (random)", "pr (random)"]])
display(tab)

# %% [markdown]
# ## 3. Sparsity topology — the negative space
#
# Fraction of weights with |w| below each threshold, per role and for the whole model,
# and the Q vs K vs V contrast the seed highlights (threshold 0.1). Beware: at a fixed
# absolute threshold this is mostly a statement about weight *scale*; the random-init
# column shows what the initialiser alone gives.

# %%
sp = pd.DataFrame(summary["sparsity_by_role"]).T
if null is not None:
    sp = sp.join(pd.DataFrame(null["sparsity_by_role"]).T[[summary["qkv_sparsity_threshold"]]]
                 .rename(columns=lambda c: f"{c} (random)"))
display(sp)
print("whole model:", {k: round(v, 4) for k, v in summary["sparsity_model"].items()})
thr = summary["qkv_sparsity_threshold"]
for r in ("q", "k", "v"):
    v = summary["qkv_sparsity"][r]
    b = null["qkv_sparsity"][r] if null else None
    print(f"  {r.upper()} |w|{thr}: {'-' if v is None else f'{100 * v:.1f} %'}"
          + ("" if b is None else f"   (random init {100 * b:.1f} %)"))

# %% [markdown]
# ## 4. QK similarity manifold
#
# The attention score of residual vectors x, y is xᵀ W_Qᵀ W_K y (per head, summed over
# heads for the layer; keys repeated per query head under grouped-query attention).
# Spectra come from the factored form (a 2·inner-sized problem), never a d_model²
# product. Positive eigenvalues of the symmetric part are "similarity" directions,
# negative ones "anti-similarity". Note: per head (rank head_dim ≤ d_model/2) the sign
# balance is exactly 0.5 by Sylvester's law of inertia — a structural fact, not a
# learned one; only the layer-level form can depart from it. The seed multiplied
# W_q·W_kᵀ (an inner×inner Gram of weight rows), which is not the scoring form.

# %%
qk = res.qk["layers"]
if qk.empty:
    print(f"{MODEL}: no attention block with separate or fused Q/K in the catalog — QK manifold skipped.")
else:
    show = ["stack", "attn", "layer", "inner", "stable_rank", "pr", "sym_dev", "n_pos", "n_neg", "n_zero",
            "pos_frac", "balance", "head_balance_mean"]
    for (s, a), g in qk.groupby(["stack", "attn"]):
        print(f"--- {s} / {a}-attention ---")
        display(g[show].head(SHOW_LAYERS))
        if null is not None and f"{s}/{a}" in null["qk"]:
            n = null["qk"][f"{s}/{a}"]
            print(f"  random init: pos_frac first={n['pos_frac_first']:.3f} last={n['pos_frac_last']:.3f}")
    if qk["qk_norm"].any():
        print("note: q and k are RMS-normalised per head before the product (q_norm/k_norm): "
              "W_Qᵀ W_K gives the scores only up to that per-token normalisation.")

# %% [markdown]
# ## 5. MLP dead neurons
#
# Importance of neuron i = ‖up_i‖·‖down_i‖ (·‖gate_i‖ for gated MLPs such as GeGLU /
# SwiGLU). Dead: < 1 % of the mean importance; weak: < 10 %.

# %%
ml = res.mlp["layers"]
if ml.empty:
    print(f"{MODEL}: no MLP blocks in the catalog — dead-neuron analysis skipped.")
else:
    display(ml.head(2 * SHOW_LAYERS))
    m, n = summary["mlp"], (null or {}).get("mlp", {})
    print(f"dead {m['dead']}/{m['neurons']} ({100 * m['dead_frac']:.2f} %), weak {100 * m['weak_frac']:.2f} %"
          + (f"   (random init: dead {100 * n['dead_frac']:.2f} %, weak {100 * n['weak_frac']:.2f} %)" if n else ""))

# %% [markdown]
# ## 6. Cross-layer weight correlation
#
# Cosine of the flattened weights of the same role between layers (accumulated over
# row chunks, so no layer pair is ever materialised twice).

# %%
cl = pd.DataFrame({k: {c: v[c] for c in ("adj_mean", "adj_min", "adj_max", "offdiag_abs_mean")}
                   for k, v in summary["cross_layer"].items()}).T
if cl.empty:
    print(f"{MODEL}: fewer than two layers per role — cross-layer correlation skipped.")
else:
    display(cl)

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
    display(res.norms.drop(columns=["name"]).head(2 * SHOW_LAYERS))
if res.pos_bias.empty:
    print(f"{MODEL}: no relative position bias (absolute / rotary positions) — section 8 does not apply.")
else:
    display(res.pos_bias)
    print(summary["position_bias"])

# %% [markdown]
# ## 9. The seed's 3×3 panel

# %%
for stack in cat.stacks():
    fig = battery_panel(res, title=MODEL, stack=stack)
    plotting.savefig(fig, out, f"weight_panel_{stack}")

# %% [markdown]
# ## Results

# %%
def _qk_first(s):
    if not s or not s.get("qk"):
        return None
    k = sorted(s["qk"])[0] if not any(k.endswith("/self") for k in s["qk"]) else \
        sorted(k for k in s["qk"] if k.endswith("/self"))[0]
    return s["qk"][k]["pos_frac_first"]


def _get(s, *path):
    for p in path:
        if not isinstance(s, dict) or p not in s:
            return None
        s = s[p]
    return s


B = "random_init"
headline = {
    "q_sparsity": results.headline(_get(summary, "qkv_sparsity", "q"), baseline=_get(null, "qkv_sparsity", "q"),
                                   baseline_kind=B, label=f"Q |w|{thr}", fmt=".3f"),
    "k_sparsity": results.headline(_get(summary, "qkv_sparsity", "k"), baseline=_get(null, "qkv_sparsity", "k"),
                                   baseline_kind=B, label=f"K |w|{thr}", fmt=".3f"),
    "q_stable_rank": results.headline(_get(summary, "svd_by_role", "q", "stable_rank"),
                                      baseline=_get(null, "svd_by_role", "q", "stable_rank"), baseline_kind=B,
                                      label="Q stable rank", fmt=".2f"),
    "qk_pos_frac_first": results.headline(_qk_first(summary), baseline=_qk_first(null), baseline_kind=B,
                                          label="QK pos. eig. frac (L0)", fmt=".3f"),
    "mlp_dead_frac": results.headline(_get(summary, "mlp", "dead_frac"), baseline=_get(null, "mlp", "dead_frac"),
                                      baseline_kind=B, label="dead MLP neurons", fmt=".4f"),
    "cross_layer_adj": results.headline(summary.get("cross_layer_attn_adj_mean"),
                                        baseline=(null or {}).get("cross_layer_attn_adj_mean"), baseline_kind=B,
                                        label="adjacent-layer cos (attn)", fmt=".4f"),
}
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL, headline=headline,
               parameters={"SEED": SEED, "NULL_BASELINE": NULL_BASELINE, "SPARSITY_THRESHOLDS": SPARSITY_THRESHOLDS})

# %% [markdown]
# ## References
#
# - Seed 001, sections 4 (T5-small/base), 5 (cross-architecture battery) and 6
#   (T5-v1.1-XXL).
# - C. H. Martin & M. W. Mahoney, *Implicit self-regularization in deep neural networks*
#   (WeightWatcher), JMLR 2021 — the peer tool; it skips fused QKV tensors silently.
# - N. Elhage et al., *A Mathematical Framework for Transformer Circuits*, 2021 — the
#   W_Qᵀ W_K bilinear form per head.
