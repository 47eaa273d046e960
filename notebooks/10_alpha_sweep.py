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
# 0.01 and 0.5, compared with the static embeddings and the unmodulated encoder) and §11
# (talk to the modulated T5: side-by-side generation, token-difference counts, alpha
# sensitivity on one prompt). The seed's summary calls 0.29154 a "phase boundary" found in
# "multiple systems"; nothing in the seed measured where a transition lies. Section 4 does:
# a fine alpha sweep over several seeds and a change-point test.
#
# **Seed-comparable modes.** Relational correlations are computed on pairs over all entries
# ("project") and on the seed's sample, pairs within a 3000-entry subset drawn by
# `default_rng(42)` ("seed"); both are shown.

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 42  # [0 ≤ x < 2**32] seed of the subset, the pairs and the modulator init
ALPHAS = [0.0, 0.01, 0.05, 0.1, 0.2, 0.29154, 0.5]  # [len(x) ≥ 1 and all(0 ≤ a ≤ 1 for a in x)] static alphas (seed §10: 0.01, 0.29154, 0.5, §11: 0.01-0.5)
SEED_N_REL = 3000  # [2 ≤ x ≤ 10**7] entries of the seed's relational subset (seed definition of the pairs)
N_MATCH_MAX = 200  # [x is None or 5 ≤ x ≤ 10**7] matched WordNet entries used (a seeded random subset), None for all
N_ANCHOR = 60  # [2 ≤ x ≤ 10**7] anchors of the Procrustes initialisation (seed: 3000)
N_GEO = 8  # [1 ≤ x ≤ 2**16] geometric dimensions (seed: 64)
N_PAIRS = 5000  # [1 ≤ x ≤ 10**8] random pairs for the correlations (seed: 50000)
N_SIMPLICES = 300  # [2 ≤ x ≤ 10**6] pentachora for the CV
TRAINED = "seed"  # [x is None or x in ("seed", "project")] also sweep the §9-trained modulator (the seed's cell order): "seed" (§9 as written; T5), "project", None
TRAIN_EPOCHS = 2  # [1 ≤ x ≤ 10**5] epochs of that training (seed §9: 10)
PROMPTS = [  # [all(len(p) ≥ 1 for p in x)] seed §10's coherence test at 0.29154 (the paper profile: all 5)
    "summarize: The cat is a small domesticated carnivorous mammal with soft fur.",
    "translate English to German: The geometric structure of language is a universal attractor.",
    "summarize: Seven is a prime number that comes after six and before eight.",
]
TALK_PROMPTS = [  # [all(len(p) ≥ 1 for p in x)] seed §11's "talk to the modulated T5" (the paper profile: all 7)
    "summarize: A dog is a domesticated descendant of the wolf, characterized by loyalty and trainability.",
]
SWEEP_PROMPT = "summarize: A triangle is a polygon with three edges and three vertices."  # [len(x) ≥ 1] sensitivity prompt
MAX_NEW_TOKENS = 16  # [1 ≤ x ≤ 10**5] greedy generation length (seed: 64 in §10, 128 in §11)
PHASE_ALPHAS = [0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]  # [len(x) ≥ 3 and all(0 ≤ a ≤ 1 for a in x)] grid of the phase-boundary sweep (paper: a fine one)
PHASE_SEEDS = [42, 1, 2]  # [len(x) ≥ 1 and all(0 ≤ s < 2**32 for s in x)] one modulator (anchor draw) and one relational sample per seed; 42 is the seed's
PHASE_N_ENTRIES = 100  # [2 ≤ x ≤ 10**7] entries of each seed's relational sample in the phase sweep (seed: 3000)
PHASE_QUANTITY = "pearson"  # [x in ("pearson", "spearman", "gradient", "preservation")] quantity whose change point is located ("pearson", "spearman", "preservation")
PHASE_METHOD = "segmented"  # [x in ("segmented", "step")] change-point model: "segmented" (continuous hinge) or "step"
PHASE_NULL = "quadratic"  # [x in ("quadratic", "line")] no-change model of the claim's test: "quadratic" (a kink beyond smooth curvature) or "line"
PHASE_N_BOOT = 1000  # [1 ≤ x ≤ 10**6] resamples of the change-point test and interval

# %%
import numpy as np
import pandas as pd

from geolip_lib import modulators as gm
from geolip_lib import results, runtime
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations, static_representations
from geolip_lib.modulators import plots, stats

job = runtime.start("10_alpha_sweep", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
metrics: dict = {}
alphas = sorted({float(a) for a in ALPHAS} | {gm.GOLDEN_ALPHA})  # the seed's constant, tested as one alpha

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
si, sj, seed_subset = gm.seed_relational_pairs(n_used, SEED_N_REL, N_PAIRS, seed=SEED)
sim_seed = gm.wordnet_pair_similarity(matched, si, sj, "path")
print(f"{n_used} entries, {int(np.isfinite(sim).sum())} scored pairs over all entries and "
      f"{int(np.isfinite(sim_seed).sum())} within the seed's {len(seed_subset)}-entry subset; "
      f"reconstruction r = {info['recon_corr']:.3f}.")

# %% [markdown]
# ## 1b. The trained modulator: the seed's cell order
#
# The seed's §10 cell runs "after the full pipeline": in its cell order (§8 → §9 → §10) the
# `modulator` it sets to alpha = 0.29154 is the one §9 has just trained, not the
# Procrustes-initialised one of §8. Both are swept here and labelled: "procrustes" (§8's
# initialisation, as the project has measured so far) and "trained" (a copy of it, alpha
# reset to 0.01 and trained as `TRAINED` says for `TRAIN_EPOCHS` epochs: "seed" is §9 as
# written, whose unshifted target leaks the answer; on a family §9 did not train — MiniLM,
# encoder-only — the project's objective is used and the label says so). The §11 prompts
# then run on the trained one, as in the seed.

# %%
modulators = {"procrustes": modulator}
trained_mod, metrics["trained"] = gm.trained_copy(lm, matched, modulator, requested=TRAINED, n_epochs=TRAIN_EPOCHS,
                                                  seed=SEED)  # alpha reset to 0.01 as §9 did; the base frozen
if trained_mod is not None:
    modulators["trained"] = trained_mod
    job.table(pd.DataFrame(metrics["trained"]["epochs"]),
              caption=f"Trained modulator ({metrics['trained']['objective']}): epochs", index=False)
if "why_not_seed" in metrics["trained"]:
    print(f"Not the seed's training: {metrics['trained']['why_not_seed']}.")
LABELS = {"procrustes": "Procrustes-initialised (§8)",
          "trained": f"trained ({metrics['trained'].get('mode', '–')} mode, §8 → §9 → §10)"}

# %% [markdown]
# ## 2. Relational metrics at each static alpha
#
# For each modulator and each alpha: encode every definition through the modulated encoder;
# Pearson / Spearman / gradient against WordNet path similarity, per-token preservation
# against alpha = 0 (the unmodified model), pentachoron CV. The static embeddings (the
# seed's "Static" row) are scored on the same pairs. Intervals: Pearson — paired bootstrap
# over the scored pairs (in the §10 table, ΔPearson against the unmodulated encoder
# recomputed on each resample); preservation — bootstrap over the entries; the alpha of the
# largest Pearson — the arg-max over the grid on each pair resample. Every correlation is
# computed on both pair samples. `metrics.sweep` is the Procrustes-initialised modulator's,
# `metrics.sweep_trained` the trained one's.

# %%
pairs = {"project": (sim, pi, pj), "seed": (sim_seed, si, sj)}
sweeps = {name: gm.phase.static_sweep(lm, mod, matched.definitions, alphas, enc_reps, static_reps, pairs,
                                      n_simplices=N_SIMPLICES, seed=SEED) for name, mod in modulators.items()}
# the Procrustes-initialised modulator's results under the names the rest of the notebook reads
sweep, rel_all, rel_iv, rel_seed, pres_iv, best_iv, all_reps = (sweeps["procrustes"][k] for k in (
    "frame", "rel", "rel_iv", "rel_seed", "pres_iv", "best_iv", "reps"))
metrics["sweep"] = sweeps["procrustes"]["rows"]
metrics["sweep_trained"] = sweeps["trained"]["rows"] if "trained" in sweeps else None
metrics["alpha_zero_is_identity"] = bool(np.allclose(all_reps[0.0], enc_reps, atol=1e-6)) if 0.0 in alphas else None

# %%
for name, sw in sweeps.items():
    f = sw["frame"]
    shown = f.assign(**{
        "Pearson [95 %] (project)": [stats.iv_text(r["pearson"], sw["rel_iv"][k]["pearson"]) for k, r in f.iterrows()],
        "preservation [95 %]": [stats.iv_text(r["preservation"], sw["pres_iv"][k]) for k, r in f.iterrows()]})
    job.table(shown[["Pearson [95 %] (project)", "pearson_seed_pairs", "spearman", "spearman_seed_pairs", "gradient",
                     "delta_pearson", "preservation [95 %]", "pentachoron_cv"]],
              caption=f"Static alpha sweep, {LABELS[name]} modulator ({n_used} entries; project: "
                      f"{sw['rel']['n_pairs']} scored pairs over all entries; seed: {sw['rel_seed']['n_pairs']} within "
                      f"the {len(seed_subset)}-entry subset)")
job.figure(plots.alpha_sweep(sweep.drop(columns="bands")), "alpha_sweep", key=True)
if "trained" in sweeps:
    job.figure(plots.alpha_sweep(sweeps["trained"]["frame"].drop(columns="bands")), "alpha_sweep_trained")

# %% [markdown]
# ### The seed's §10 table: Static / Original / alpha = 0.29154
#
# The seed compared three rows on the same pairs: the static token embeddings, the
# unmodulated encoder and the encoder modulated at 0.29154 (ΔPearson against Original) —
# in its cell order, with the trained modulator. Both modulators are shown.
# `metrics.seed_table` is the Procrustes-initialised one's, `metrics.seed_table_trained` the
# trained one's (the seed's).

# %%
names = ["Static", "Original", gm.GOLDEN_ALPHA]
for name, sw in sweeps.items():
    seed_table, metrics["seed_table" if name == "procrustes" else "seed_table_trained"] = gm.phase.section10_table(
        sw, names, pairs, seed=SEED, label=LABELS[name])
    seed_table = seed_table.rename(index={gm.GOLDEN_ALPHA: f"α = {gm.GOLDEN_ALPHA}"})
    job.table(seed_table.drop(columns=["pearson", "lo", "hi"]),
              caption=f"Correlation with WordNet path similarity: Static, Original and alpha = 0.29154 (seed §10), "
                      f"{LABELS[name]} modulator")

# %% [markdown]
# ## 3. Generation side by side at 0.29154, and the sensitivity sweep on one prompt
#
# Seed §10's coherence test (`PROMPTS`) and §11's "talk to the modulated T5"
# (`TALK_PROMPTS`), both greedy at alpha = 0.29154, up to `MAX_NEW_TOKENS` tokens: greedy is
# the seed's own decoding — its §11 helper defaults to temperature 0.7 with sampling, but
# every call passes `temperature=0.0`, so `do_sample=False`. Run with each modulator
# (`metrics.generation`: Procrustes-initialised; `metrics.generation_trained`: trained, the
# seed's).

# %%
metrics["generation"] = metrics["generation_trained"] = None
if lm.is_generative:
    both = list(PROMPTS) + list(TALK_PROMPTS)
    original = gm.greedy_generate(lm.model, lm.tokenizer, both + [SWEEP_PROMPT], MAX_NEW_TOKENS)
    for name, mod in modulators.items():
        gen = gm.golden_and_sensitivity(lm, mod, original, both, ["§10"] * len(PROMPTS) + ["§11"] * len(TALK_PROMPTS),
                                        SWEEP_PROMPT, alphas, gm.GOLDEN_ALPHA, MAX_NEW_TOKENS)
        metrics["generation" if name == "procrustes" else "generation_trained"] = {"modulator": LABELS[name], **gen}
        job.table(pd.DataFrame(gen["side_by_side"]), caption=f"Greedy generation ({MAX_NEW_TOKENS} new tokens at most), "
                  f"original vs alpha = {gm.GOLDEN_ALPHA}, {LABELS[name]} modulator: seed §10's prompts, then §11's",
                  index=False)
        job.table(pd.DataFrame(gen["sensitivity"]), caption=f"Alpha sensitivity ({LABELS[name]}) on: {SWEEP_PROMPT}",
                  index=False)
else:
    print(f"Generation does not apply to {lm.family} (encoder-only); skipped.")

# %% [markdown]
# ## 4. The phase boundary as a measurement
#
# The seed's constant 0.29154 is a claim, not an input: here it is only a labelled reference
# line. For each of `PHASE_SEEDS`, a modulator is built with that seed's anchors and the
# seed's relational sample is drawn with that seed (seed 42 is the sample the seed scored);
# the `PHASE_QUANTITY` (relational Pearson by default) is measured at every alpha of the
# fine grid `PHASE_ALPHAS`. One change point of the seed-mean curve is located by
# `geolip_lib.metrics.changepoint.locate` (method in the table: a hinge fitted by exact
# search, tested against a no-change model, its breakpoint given an interval by resampling
# seeds). A boundary between two regimes is a kink that smooth curvature does not explain,
# so the claim's test (`PHASE_NULL`) is against a quadratic; the test against one straight
# line is shown beside it — a smoothly bending curve (preservation falls like
# 1 − c·alpha²) rejects the line too, at a breakpoint that moves with the grid's span.
# The test's noise is the spread between seeds: where seeds agree almost exactly (the
# preservation curve), any smooth shape that is neither a line nor a quadratic is "found",
# so those rows locate where the curve bends, not a boundary.

# %%
phase = gm.phase.phase_sweep(lm, matched, enc_reps, static_reps, PHASE_ALPHAS, PHASE_SEEDS, n_entries=PHASE_N_ENTRIES,
                             n_pairs=N_PAIRS, n_anchor=N_ANCHOR, n_geo=N_GEO)
located = {(q, nl): gm.phase.locate_boundary(phase, q, null=nl, seed=SEED, n_boot=PHASE_N_BOOT, method=PHASE_METHOD)
           for q in dict.fromkeys([PHASE_QUANTITY, "preservation"]) for nl in dict.fromkeys([PHASE_NULL, "line"])}
boundary = located[PHASE_QUANTITY, PHASE_NULL]
claim = gm.phase.boundary_claim(boundary, phase, PHASE_QUANTITY, seed_value=gm.GOLDEN_ALPHA)
claim.update(test="project", modulator="Procrustes-initialised (§8), one per seed",
             representation=f"{lm.family} encoder, mean-pooled definitions")  # the seed defined no test

metrics["phase"] = {"sweep": phase, "located": {f"{q}|{nl}": r for (q, nl), r in located.items()}}
metrics["claims"] = {"phase_boundary": {"alpha": claim}}
job.figure(plots.phase_boundary(phase, boundary, PHASE_QUANTITY, seed_value=gm.GOLDEN_ALPHA), "phase_boundary",
           key=True)
job.table(gm.phase.boundary_table(located, seed_value=gm.GOLDEN_ALPHA),
          caption="Change point per quantity (seed's constant 0.29154 for reference)", index=False)

# %% [markdown]
# ## Results
#
# The value at 0.29154 beside the unmodulated encoder (alpha = 0, the exact identity), each
# with its own interval; the best alpha of the grid with the spread of the arg-max over pair
# resamples; the located phase boundary (none when the test finds no change point).

# %%
g = sweep.loc[gm.GOLDEN_ALPHA]
trained_head = {} if "trained" not in sweeps else {"pearson_at_0.29154_trained": results.headline(
    sweeps["trained"]["frame"].loc[gm.GOLDEN_ALPHA, "pearson"],
    interval=sweeps["trained"]["rel_iv"][gm.GOLDEN_ALPHA]["pearson"], fmt=".4f",
    label=f"Pearson @ 0.29154, {LABELS['trained']}", note="The seed's cell order: §10 set alpha on the modulator "
    "§9 had trained.", nulls={"original (alpha=0)": {"value": rel_all["Original"]["pearson"],
                                                     "interval": rel_iv["Original"]["pearson"]}})}

# %%
job.finish(metrics, {
    "pearson_at_0.29154": results.headline(g["pearson"], interval=rel_iv[gm.GOLDEN_ALPHA]["pearson"], fmt=".4f",
        label="Pearson @ 0.29154", nulls={"original (alpha=0)": {"value": rel_all["Original"]["pearson"],
                                                                 "interval": rel_iv["Original"]["pearson"]}}),
    "preservation_at_0.29154": results.headline(g["preservation"], interval=pres_iv[gm.GOLDEN_ALPHA], fmt=".4f",
        label="preservation @ 0.29154", nulls={"original (identity)": 1.0}),
    "best_alpha_pearson": results.headline(float(sweep["pearson"].idxmax()), interval=best_iv, fmt=".5g",
        label="alpha of max Pearson", note="The interval's bounds are grid alphas: where the arg-max lands on "
        "95 % of pair resamples."),
    "phase_boundary_alpha": claim,
    **trained_head,

})

# %% [markdown]
# ## References
#
# - Seed 001, §10 and §11. The seed's reference points on T5-small (α=0.01: Pearson 0.099,
#   gradient 0.022, preservation 0.9998; α=0.5: Pearson 0.185, gradient 0.076,
#   preservation 0.176) were reported by the seed, not measured here.
# - Differences: alphas are a parameter list (0 included as the exact identity); greedy
#   decoding everywhere, as in the seed (its §11 helper defaults to temperature 0.7 with
#   sampling, but every call passes `temperature=0.0`, which means `do_sample=False`);
#   both the Procrustes-initialised and the §9-trained modulator are swept (the seed's
#   cell order gives §10 the trained one); the phase-boundary sweep uses one
#   Procrustes-initialised modulator per seed (no training per seed);
#
#   the seed's "0.29514" label typo is gone; the seed's 3000-entry relational subset is kept
#   beside pairs over all entries; the phase boundary is measured (section 4), 0.29154 being
#   only the seed's reference.
# - Change point: continuous two-segment regression with an exact breakpoint search
#   (Hudson 1966), sup-F / max-|t| test against one line with a bootstrap null, seed-bootstrap
#   interval (`geolip_lib.metrics.changepoint`).
