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
# **Seed.** Seed 001 §5 (cross-model comparison tables) and the summary table. This
# notebook runs once per profile and reads every `02_weight_topology` job's
# `metrics.json` under `REPORT_ROOT`. Numbers the seed *reported* (measured on the real
# checkpoints in 2026-03) are shown in their own table, never mixed with measured rows.

# %% tags=["parameters"]
REPORT_ROOT = None  # profile output root holding 02_weight_topology/<job>/metrics.json; None -> compute below
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
MODELS = ["tiny-t5", "tiny-bert"]  # models to run the battery on when REPORT_ROOT has no 02 results
SEED = 0  # seed of the random-init baselines computed here (fallback path only) and of the bootstraps
N_BOOT = 1000  # bootstrap resamples of the headline intervals (models, then the layers within each)

# %%
import json
from pathlib import Path

import pandas as pd

from geolip_lib import results, runtime
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
files = sorted(Path(REPORT_ROOT).glob("02_weight_topology/*/metrics.json")) if REPORT_ROOT else []
files = [f for f in files if not f.parent.name.startswith(".")]  # skip unfinished .partial jobs
for f in files:
    m = json.loads(f.read_text(encoding="utf-8"))
    name = m["model"] or f.parent.name
    batteries[name] = (m["metrics"]["battery"], m["metrics"].get("random_init"))
    items[name] = m["metrics"].get("headline_items")  # absent in results older than this notebook
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

# %%
measured = T.cross_model_frame(batteries)
job.table(measured[["model", "family", "d_model"]].drop_duplicates(), caption=f"{len(batteries)} models ({source})",
          index=False)

# %% [markdown]
# ## 2. Measured: Q/K/V sparsity (|w| < 0.1), stable ranks, QK manifold, dead neurons, cross-layer correlation
#
# Each model's trained weights beside the same architecture at random initialisation
# (tiny models are themselves random, so their two rows differ only by seed).

# %%
cols, pct = T.CROSS_MODEL_COLUMNS, {c: "{:.1%}" for c in T.CROSS_MODEL_COLUMNS["sparsity"]}
job.table(measured[["model", "weights"] + cols["sparsity"]], caption="Fraction of |w| < 0.1", formats=pct,
          index=False)
job.table(measured[["model", "weights"] + cols["stable_rank"]], caption="Mean stable rank per role", index=False)
job.table(measured[["model", "weights"] + cols["qk"]], caption="QK form: positive-eigenvalue fraction", index=False)
job.table(measured[["model", "weights"] + cols["mlp_cross"]], caption="Dead / weak MLP neurons, adjacent-layer cosine",
          formats={"dead MLP": "{:.2%}", "weak MLP": "{:.2%}"}, index=False)

# %% [markdown]
# ## 3. Reported by the seed (not measured here)
#
# Transcribed from seed 001 (§5 comparison print-out, §6 notes and the summary table).
# The seed's QK numbers come from W_q·W_kᵀ (a Gram of weight rows), not from the
# scoring form W_Qᵀ W_K measured above, so they are not directly comparable.

# %%
SEED_REPORTED = [
    {"model": "t5-small", "Q sparsity": 0.937, "K sparsity": 0.192, "V sparsity": 0.121, "note": "§5 reference row"},
    {"model": "t5-base", "Q sparsity": 0.994, "K sparsity": 0.300, "V sparsity": 0.162, "note": "§5 reference row"},
    {"model": "bert-large-uncased", "Q sparsity": 0.991, "note": "§6 'Ref' line"},
    {"model": "dinov2-large", "Q sparsity": 1.000, "note": "§6 'Ref' line"},
    {"model": "t5-v1_1-xxl", "Q sparsity": 1.000, "note": "§6: encoder and decoder, self and cross attention"},
    {"model": "t5-v1_1-xxl", "QK cross-attn balance": 0.500, "note": "§6: 'locked at 0.500/0.500 all 24 layers'"},
    {"model": "t5-small, t5-v1_1-xxl", "decoder mixed position heads": 0, "note": "summary table"},
    {"model": "all 8 models", "adj-layer cos (attn)": 0.000, "note": "summary table: '~0.000'"},
]
reported = pd.DataFrame(SEED_REPORTED)
reported.insert(1, "source", "reported by the seed")
job.table(reported, caption="Reported by seed 001 (not measured here)",
          formats={"decoder mixed position heads": "{:.0f}", **{c: "{:.3f}" for c in cols["sparsity"]}}, index=False)

# %% [markdown]
# ## 4. Figures

# %%
job.figure(plots.cross_model(measured), "cross_model", key=True)

# %% [markdown]
# ## Results
#
# Each headline is a mean over the trained models. Its interval is a two-stage bootstrap:
# resample the models, then within each drawn model the matrices / layers / layer pairs
# its value pools (recorded by `02_weight_topology` as `headline_items`), so it reflects
# both which models and which layers were compared. The layer-0 QK fraction pools
# nothing (it is exact per model): only the models are resampled. The null is the same
# mean over the random-init copies, with its own interval.

# %%
hl = {"seed": SEED, "n_boot": N_BOOT, "items": items}
headline = {
    "n_models": results.headline(int(len(batteries)), interval="exact", label="models compared", fmt="d",
                                 note="A count."),
    "q_sparsity_mean": T.cross_model_headline(measured, "Q sparsity", key="q_sparsity", label="mean Q sparsity",
                                              note="|w| < 0.1 is a scale statement: compare with the random-init null.",
                                              **hl),
    "qk_pos_frac_first_mean": T.cross_model_headline(measured, "QK pos first", label="mean QK pos. eig. frac (L0)",
                                                     note="0.5 is sign balance.", **hl),
    "mlp_dead_frac_mean": T.cross_model_headline(measured, "dead MLP", key="mlp_dead_frac", fmt=".4f",
                                                 label="mean dead MLP fraction", **hl),
    "cross_layer_adj_mean": T.cross_model_headline(measured, "adj-layer cos (attn)", key="cross_layer_adj", fmt=".4f",
                                                   label="mean adjacent-layer cos (attn)", **hl),
}

# %%
metrics = {"measured": measured.to_dict(orient="records"), "reported_by_seed": reported.to_dict(orient="records"),
           "n_models": int(len(batteries)), "source": source,
           "source_jobs": [f"02_weight_topology/{f.parent.name}" for f in files]}
job.finish(metrics, headline)

# %% [markdown]
# ## References
#
# - Seed 001, section 5 (cross-model comparison print-out) and the closing summary table.
