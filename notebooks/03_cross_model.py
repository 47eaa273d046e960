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
# # 03 · Cross-model comparison of frozen-weight topology
#
# **Question.** Are the seed's "universal" weight properties — near-total Q sparsity,
# QK sign balance, ~zero cross-layer correlation, few dead neurons — shared across
# architectures and training objectives, and do they differ from the same
# architectures at random initialisation?
#
# **Seed.** Seed 001 §5 (cross-model comparison tables), §6 and the summary table. This
# notebook runs once per profile and reads every `02_weight_topology` job's
# `metrics.json` under `REPORT_ROOT`. Numbers the seed *reported* (measured on the real
# checkpoints in 2026-03) are shown in their own table, never mixed with measured rows.
# Like with like: sparsity and QK balance are compared per stack and attention kind
# (T5 encoder self, decoder self, decoder cross; CLIP vision and text towers), as the
# seed measured them, not pooled over stacks.

# %% tags=["parameters"]
REPORT_ROOT = None  # profile output root holding 02_weight_topology/<job>/metrics.json; None -> compute below
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
MODELS = ["tiny-t5", "tiny-bert"]  # [len(x) ≥ 1] models to run the battery on when REPORT_ROOT has no 02 results
SEED = 0  # [0 ≤ x < 2**32] seed of the random-init baselines computed here (fallback path only) and of the bootstraps
N_BOOT = 1000  # [1 ≤ x ≤ 10**6] bootstrap resamples of the headline intervals (models, then the layers within each)

# %%
import pandas as pd

from geolip_lib import results, roots, runtime
from geolip_lib.weights import TensorStore, plots, run_battery
from geolip_lib.weights import tables as T

job = runtime.start("03_cross_model", globals(), load_model=False)  # job dir, style, inline figures, seeds

# %% [markdown]
# ## 1. Collect the per-model batteries
#
# Each `02_weight_topology` job recorded its battery summary and that of the same
# architecture at random initialisation. Without them (a notebook run on its own), the
# battery runs here on `MODELS`.

# %%
batteries: dict = {}  # model -> (trained summary, random-init summary or None)
items: dict = {}  # model -> {"trained", "random_init"}: the matrices / layers / pairs each headline pools
stack: dict = {}  # model -> {"trained", "random_init"}: per stack/attn and role, the matrices each sparsity pools
source_jobs: list = []  # the 02 jobs read
# finished jobs only, real folders inside the root, each file read bounded (roots.finished_metrics)
for d, m in roots.finished_metrics(REPORT_ROOT, "02_weight_topology") if REPORT_ROOT else []:
    name = m["model"] or d.name
    source_jobs.append(f"02_weight_topology/{d.name}")
    batteries[name] = (m["metrics"]["battery"], m["metrics"].get("random_init"))
    items[name] = m["metrics"].get("headline_items")  # absent in results older than this notebook
    stack[name] = m["metrics"].get("stack_items")
source = "02_weight_topology jobs" if batteries else "computed here"

# %%
if not batteries:
    print(f"No 02_weight_topology results under {REPORT_ROOT!r}: running the battery here on {MODELS}.")
    for name in MODELS:
        lm = job.load(name)  # recorded in the provenance
        res = run_battery(lm.weights_dir, config=lm.config, family=lm.family)
        rnd = lm.random_init(seed=SEED + 1000)
        null_res = run_battery(TensorStore(rnd.model.state_dict()), config=lm.config, family=lm.family)
        s, n = ({k: v for k, v in r.summary().items() if k != "seconds"} for r in (res, null_res))
        batteries[name] = (s, n)
        items[name] = {"trained": T.headline_items(res), "random_init": T.headline_items(null_res)}
        stack[name] = {"trained": T.stack_items(res), "random_init": T.stack_items(null_res)}

# %%
measured = T.cross_model_frame(batteries)
stacks = T.cross_model_stack_frame(batteries, stack, seed=SEED, n_boot=N_BOOT)  # one row per model × stack/attn
job.table(measured[["model", "family", "d_model"]].drop_duplicates(), caption=f"{len(batteries)} models ({source})",
          index=False)

# %% [markdown]
# ## 2. Measured per stack and attention kind: Q/K/V sparsity (|w| < 0.1) and the QK sign balance
#
# One row per model × stack/attn, trained beside the same architecture at random
# initialisation (tiny models are themselves random, so their two rows differ only by
# seed). Q sparsity with its 95 % bootstrap interval over that scope's Q matrices (none
# with fewer than 3). QK balance over the scope's layers in the seed's form (n_pos / inner
# of sym(W_q W_kᵀ): mean, min, max) and the project's (balance of sym(W_Qᵀ W_K), mean);
# what a 0.5 means: `geolip_lib.weights.spectral.QK_BALANCE_STATEMENT`. **Forced by
# shape**: under grouped-query attention with 2·n_kv_heads·head_dim ≤ d (Qwen, tiny-qwen)
# the shapes alone give exactly as many positive as negative nonzero eigenvalues, whatever
# the weights hold (`QK seed forced` / `QK project forced`); such rows are shown but kept
# out of the cross-model QK means below (the headline lists them).

# %%
scols = T.STACK_COLUMNS
job.table(stacks[["model", "weights", "stack/attn"] + scols["sparsity"]], caption="Fraction of |w| < 0.1 per "
          "stack/attn (Q with its 95 % interval)", formats={c: "{:.1%}" for c in scols["sparsity"]}, index=False)
job.table(stacks[["model", "weights", "stack/attn"] + scols["qk"]], caption="QK sign balance per stack/attn: seed "
          "form n_pos/inner of sym(W_q W_kᵀ), project form balance of sym(W_Qᵀ W_K)",
          formats={"QK layers": "{:.0f}"}, index=False)

# %% [markdown]
# ## 3. Measured per model: stable ranks, dead neurons, cross-layer correlation

# %%
cols = T.CROSS_MODEL_COLUMNS
job.table(measured[["model", "weights"] + cols["stable_rank"]], caption="Mean stable rank per role", index=False)
job.table(measured[["model", "weights"] + cols["mlp_cross"]], caption="Dead / weak MLP neurons, adjacent-layer cosine",
          formats={"dead MLP": "{:.2%}", "weak MLP": "{:.2%}"}, index=False)

# %% [markdown]
# ## 4. Reported by the seed (not measured here)
#
# Transcribed from seed 001 (§4/§5 print-outs, §6 notes and the summary table), on the
# same per-stack keys as the measured rows. The seed's T5-small / T5-base Q/K/V rows
# pooled the encoder and decoder self-attention (its `self_attn_q` type), hence the key
# `encoder+decoder/self`; its QK balance is the seed's form n_pos / inner. Where this
# profile measured one of the seed's models, the second table sets the seed's number
# beside the measurement on the same key.

# %%
reported = T.seed_reported_stacks()
job.table(reported, caption="Reported by seed 001 (not measured here)", index=False,
          formats={"mixed position heads": "{:.0f}", **{c: "{:.3f}" for c in scols["sparsity"]}})
versus = T.seed_vs_measured(batteries, stack)
if versus.empty:
    print(f"None of the seed's models is measured in this profile ({', '.join(batteries)}): no side-by-side rows.")
else:
    job.table(versus, caption="Seed's reported value beside this profile's measurement, same key", index=False)

# %% [markdown]
# ## 5. Figures
#
# Sparsity and QK balance per model · stack/attn; stable rank per model.

# %%
job.figure(plots.cross_model(measured, stacks), "cross_model", key=True)

# %% [markdown]
# ## Results
#
# The per-stack headlines are means over the trained model × stack/attn rows. Their
# interval is a two-stage bootstrap: resample the rows, then within each drawn row the Q
# matrices (sparsity) or the layers (QK balance) its value pools, so it reflects both
# which scopes and which layers were compared. The per-model headlines resample the
# models, then the MLP layers / layer pairs within each (recorded by
# `02_weight_topology` as `headline_items`). The null is the same mean over the
# random-init copies, with its own interval.

# %%
sh = {"seed": SEED, "n_boot": N_BOOT, "stack": stack, "batteries": batteries}
headline = {
    "n_models": results.headline(int(len(batteries)), interval="exact", label="models compared", fmt="d",
                                 note="A count."),
    "q_sparsity_mean": T.cross_stack_headline(stacks, "Q sparsity", label="mean Q sparsity (per stack/attn)",
                                              note="|w| < 0.1 per stack/attn is a scale statement: compare with the "
                                                   "random-init null.", **sh),
    "qk_seed_balance_mean": T.cross_stack_headline(stacks, "QK seed (mean)", fmt=".4f",
                                                   label="mean QK n_pos/inner, seed form (per stack/attn)",
                                                   note="n_pos / inner of sym(W_q W_kᵀ), mean over layers; 0.5 is "
                                                        "what random weights give (QK_BALANCE_STATEMENT); rows whose "
                                                        "shapes force it (GQA) are left out.", **sh),
}

# %%
hl = {"seed": SEED, "n_boot": N_BOOT, "items": items}
headline["mlp_dead_frac_mean"] = T.cross_model_headline(measured, "dead MLP", key="mlp_dead_frac", fmt=".4f",
                                                        label="mean dead MLP fraction", **hl)
headline["cross_layer_adj_mean"] = T.cross_model_headline(measured, "adj-layer cos (attn)", key="cross_layer_adj",
                                                          fmt=".4f", label="mean adjacent-layer cos (attn)", **hl)

# %%
metrics = {"measured": measured.to_dict(orient="records"), "measured_by_stack": stacks.to_dict(orient="records"),
           "reported_by_seed": reported.to_dict(orient="records"), "seed_vs_measured": versus.to_dict(orient="records"),
           "n_models": int(len(batteries)), "source": source,
           "source_jobs": source_jobs}
job.finish(metrics, headline)

# %% [markdown]
# ## References
#
# - Seed 001, section 5 (cross-model comparison print-out) and the closing summary table.
