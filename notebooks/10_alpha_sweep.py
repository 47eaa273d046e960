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
# # 10 · Static alphas: the 0.29154 constant and the sensitivity sweep
#
# **Question.** With the Procrustes-initialised modulator held at a static alpha, how do
# relational alignment with WordNet, per-token preservation, pentachoron CV and greedy
# generation change with alpha — and is anything special at the seed's constant 0.29154?
#
# **Seed.** Seed 001 §10 (alpha = 0.29154 as a static alpha, with the reference points
# 0.01 and 0.5) and §11 (talk to the modulated T5: side-by-side generation, token-difference
# counts, alpha sensitivity on one prompt).

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 42  # seed of the subset, the pairs and the modulator init
ALPHAS = [0.0, 0.01, 0.05, 0.1, 0.2, 0.29154, 0.5]  # static alphas (seed §10: 0.01, 0.29154, 0.5, §11: 0.01-0.5)
N_MATCH_MAX = 200  # matched WordNet entries used (a seeded random subset), None for all
N_ANCHOR = 60  # anchors of the Procrustes initialisation (seed: 3000)
N_GEO = 8  # geometric dimensions (seed: 64)
N_PAIRS = 5000  # random pairs for the correlations (seed: 50000)
N_SIMPLICES = 300  # pentachora for the CV
PROMPTS = [  # side-by-side generation prompts (seed §11)
    "summarize: The cat is a small domesticated carnivorous mammal with soft fur.",
    "translate English to German: The geometric structure of language is a universal attractor.",
    "summarize: Seven is a prime number that comes after six and before eight.",
]
SWEEP_PROMPT = "summarize: A triangle is a polygon with three edges and three vertices."  # sensitivity prompt
MAX_NEW_TOKENS = 16  # greedy generation length (seed: 64)

# %%
import numpy as np
import pandas as pd

from geolip_lib import metrics as M
from geolip_lib import modulators as gm
from geolip_lib import results, runtime
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations, static_representations
from geolip_lib.modulators import plots, stats

job = runtime.start("10_alpha_sweep", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
metrics: dict = {}
alphas = sorted({float(a) for a in ALPHAS} | {gm.GOLDEN_ALPHA})

# %% [markdown]
# ## 1. The Procrustes-initialised modulator (notebook 08's pipeline)

# %%
matched = match_lemmas(lm.tokenizer)
if N_MATCH_MAX is not None and len(matched) > N_MATCH_MAX:
    matched = matched.subset(np.sort(np.random.default_rng(SEED).choice(len(matched), N_MATCH_MAX, replace=False)))
n_used = len(matched)
enc_reps = definition_representations(lm, matched.definitions, progress=False)
static_reps = static_representations(lm, matched.token_ids)
modulator, info = gm.build_procrustes_modulator(lm, matched, enc_reps, static_reps, n_anchor=N_ANCHOR,
                                                n_geo=min(N_GEO, N_ANCHOR, enc_reps.shape[1], n_used), seed=SEED)
pi, pj = gm.sample_pairs(n_used, N_PAIRS, seed=SEED)
sim = gm.wordnet_pair_similarity(matched, pi, pj, "path")
print(f"{n_used} entries, {int(np.isfinite(sim).sum())} scored pairs, reconstruction r = {info['recon_corr']:.3f}.")

# %% [markdown]
# ## 2. Relational metrics at each static alpha
#
# For each alpha: encode every definition through the modulated encoder; Pearson / Spearman
# / gradient against WordNet path similarity, per-token preservation against alpha = 0
# (the unmodified model), pentachoron CV. Intervals: Pearson — paired bootstrap over the
# scored pairs; preservation — bootstrap over the entries; the alpha of the largest
# Pearson — the arg-max over the grid on each pair resample.

# %%
reps_at = {}
for a in alphas:
    modulator.set_alpha(a)
    with gm.attach(lm, modulator):
        reps_at[a] = definition_representations(lm, matched.definitions, progress=False)
rel_all = gm.relational_comparison(sim, {"Original": enc_reps, **reps_at}, pi, pj)
rel_iv = stats.relational_intervals(sim, {"Original": enc_reps, **reps_at}, pi, pj, reference=None, seed=SEED)
pres_cos = {a: gm.per_token_cosines(enc_reps, reps_at[a]) for a in alphas}
pres_iv = {a: M.intervals.bootstrap(c, seed=SEED, what="entries") for a, c in pres_cos.items()}
best_iv = stats.argmax_interval(sim, reps_at, pi, pj, seed=SEED)

# %%
rows = []
for a in alphas:
    r = rel_all[a]
    rows.append({"alpha": a, "pearson": r["pearson"], "pearson_lo": rel_iv[a]["pearson"].lo,
                 "pearson_hi": rel_iv[a]["pearson"].hi, "spearman": r["spearman"], "gradient": r["gradient"],
                 "delta_pearson": r["delta_pearson"], "delta_gradient": r["delta_gradient"],
                 "preservation": float(pres_cos[a].mean()), "preservation_lo": pres_iv[a].lo,
                 "preservation_hi": pres_iv[a].hi,
                 "pentachoron_cv": M.pentachoron_cv(reps_at[a], N_SIMPLICES, seed=SEED).cv, "bands": r["bands"]})
sweep = pd.DataFrame(rows).set_index("alpha")
metrics["sweep"] = rows
metrics["alpha_zero_is_identity"] = bool(np.allclose(reps_at[0.0], enc_reps, atol=1e-6)) if 0.0 in reps_at else None

# %%
shown = sweep.assign(**{"Pearson [95 %]": [stats.iv_text(a["pearson"], rel_iv[k]["pearson"]) for k, a in sweep.iterrows()],
                        "preservation [95 %]": [stats.iv_text(a["preservation"], pres_iv[k]) for k, a in sweep.iterrows()]})
job.table(shown[["Pearson [95 %]", "spearman", "gradient", "delta_pearson", "delta_gradient", "preservation [95 %]",
                 "pentachoron_cv"]], caption=f"Static alpha sweep ({rel_all['n_pairs']} scored pairs, {n_used} entries)")
job.figure(plots.alpha_sweep(sweep.drop(columns="bands")), "alpha_sweep", key=True)

# %% [markdown]
# ## 3. Generation side by side at 0.29154, and the sensitivity sweep on one prompt

# %%
generative = lm.family in ("t5", "t5_v1_1", "decoder_lm")
metrics["generation"] = None
if generative:
    original = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS + [SWEEP_PROMPT], MAX_NEW_TOKENS)
    modulator.set_alpha(gm.GOLDEN_ALPHA)
    with gm.attach(lm, modulator):
        golden = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS)
    side = gm.compare_generations(original[:len(PROMPTS)], golden)
    job.table(pd.DataFrame(side), caption=f"Greedy generation, original vs alpha = {gm.GOLDEN_ALPHA}", index=False)
else:
    print(f"Generation does not apply to {lm.family} (encoder-only); skipped.")

# %%
if generative:
    sensitivity = []
    for a in alphas:
        modulator.set_alpha(a)
        with gm.attach(lm, modulator):
            g = gm.greedy_generate(lm.model, lm.tokenizer, [SWEEP_PROMPT], MAX_NEW_TOKENS)
        row = gm.compare_generations(original[-1:], g)[0]
        sensitivity.append({"alpha": a, "text": row["modulated"], "token_diffs": row["token_diffs"],
                            "identical": row["identical"]})
    metrics["generation"] = {"side_by_side": side, "sensitivity": sensitivity}
    job.table(pd.DataFrame(sensitivity), caption=f"Alpha sensitivity on: {SWEEP_PROMPT}", index=False)

# %% [markdown]
# ## Results
#
# The value at 0.29154 beside the unmodulated encoder (alpha = 0, the exact identity), each
# with its own interval; the best alpha of the grid with the spread of the arg-max over pair
# resamples.

# %%
g = sweep.loc[gm.GOLDEN_ALPHA]
job.finish(metrics, {
    "pearson_at_0.29154": results.headline(g["pearson"], interval=rel_iv[gm.GOLDEN_ALPHA]["pearson"], fmt=".4f",
        label="Pearson @ 0.29154", nulls={"original (alpha=0)": {"value": rel_all["Original"]["pearson"],
                                                                 "interval": rel_iv["Original"]["pearson"]}}),
    "preservation_at_0.29154": results.headline(g["preservation"], interval=pres_iv[gm.GOLDEN_ALPHA], fmt=".4f",
        label="preservation @ 0.29154", nulls={"original (identity)": 1.0}),
    "best_alpha_pearson": results.headline(float(sweep["pearson"].idxmax()), interval=best_iv, fmt=".5g",
        label="alpha of max Pearson", note="The interval's bounds are grid alphas: where the arg-max lands on "
        "95 % of pair resamples."),
})

# %% [markdown]
# ## References
#
# - Seed 001, §10 and §11. The seed's reference points on T5-small (α=0.01: Pearson 0.099,
#   gradient 0.022, preservation 0.9998; α=0.5: Pearson 0.185, gradient 0.076,
#   preservation 0.176) were reported by the seed, not measured here.
# - Differences: alphas are a parameter list (0 included as the exact identity); greedy
#   decoding everywhere (the seed's §11 helper sampled with temperature 0.7 by default);
#   the seed's "0.29514" label typo is gone.
