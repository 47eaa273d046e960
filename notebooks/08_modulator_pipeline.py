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
# # 08 · Geometric residual modulator: the Procrustes-initialised pipeline
#
# **Question.** If WordNet's Wu–Palmer geometry is written into the residual stream of a
# frozen encoder by a small LERP (`h' = (1 - a) h + a P(G[token])`), does the encoder's
# relational alignment with WordNet improve, and how much of each representation survives?
#
# **Seed.** Seed 001 §7 (the LERP modulator) and §8 (the self-contained pipeline): matched
# WordNet tokens → Wu–Palmer matrix over anchors → eigen-embedding → softmax-kNN projection →
# PCA + orthogonal Procrustes → projection initialisation → encode → Static / Original /
# Procrustes comparison.
#
# The modulator is injected with forward hooks on the model's blocks
# (`geolip_lib.modulators.attach`), not with a copy of the encoder loop; with alpha = 0 the
# model's outputs are reproduced exactly (tested).

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 42  # [0 ≤ x < 2**32] seed of the anchor draw, the pair sample and the modulator init
N_MATCH_MAX = 400  # [x is None or 5 ≤ x ≤ 10**7] matched WordNet entries kept (a seeded random subset), None for all
POS = None  # [x is None or (len(x) ≥ 1 and all(c in "nvasr" for c in x))] restrict the matching to parts of speech, e.g. "n" (None for all, as the seed)
N_ANCHOR = 120  # [2 ≤ x ≤ 10**7] anchors of the Wu-Palmer matrix (seed: 3000)
N_GEO = 16  # [1 ≤ x ≤ 2**16] geometric dimensions (seed: 64), at most min(N_ANCHOR, d_model)
K_NEIGHBORS = 10  # [1 ≤ x ≤ N_ANCHOR] anchors per softmax-kNN projection
KNN_TEMPERATURE = 10.0  # [x > 0] softmax temperature of the kNN weights
PROJ_SCALE = 0.1  # [x ≥ 0] projection scale as a fraction of the mean encoder norm
INITIAL_ALPHA = 0.01  # [0 ≤ x ≤ 1] LERP alpha at every layer
N_REL = 3000  # [2 ≤ x ≤ 10**7] entries used for the relational comparison (clipped to the matched count)
N_PAIRS = 20000  # [1 ≤ x ≤ 10**8] random pairs for the correlations (seed: 50000)
REL_SIMILARITY = "path"  # [x in ("path", "wup")] WordNet similarity of the comparison: "path" (seed) or "wup"
N_SIMPLICES = 500  # [2 ≤ x ≤ 10**6] pentachora for the CV
BATCH_SIZE = 64  # [1 ≤ x ≤ 2**16] definitions per forward pass
MAX_LEN = 128  # [1 ≤ x ≤ 10**6] truncation length of the definitions
QUICK_TEST_SENTENCES = [  # [all(len(p) ≥ 1 for p in x)] seed §7's quick test of a random-init modulator
    "summarize: The cat sat on the mat.",
    "summarize: Quantum mechanics describes particles at atomic scale.",
    "summarize: The derivative of x squared is two x.",
    "summarize: Love is patient, love is kind.",
    "summarize: Mount Everest is the tallest mountain.",
]
QUICK_TEST_ALPHA = 0.01  # [0 ≤ x ≤ 1] alpha of the random-init modulator in the quick test (seed: 0.01)

# %%
from functools import partial

import numpy as np
import pandas as pd

from geolip_lib import metrics as M
from geolip_lib import modulators as gm
from geolip_lib import results, runtime
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations, static_representations
from geolip_lib.modulators import plots, stats

job = runtime.start("08_modulator_pipeline", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
metrics: dict = {}
print(f"{lm.name} ({lm.family}).")

# %% [markdown]
# ## 1. Match WordNet lemmas to single tokens, encode the definitions
#
# The seed's rule (one token, first occurrence wins, definition longer than 10 characters);
# encoder representation = mean-pooled last hidden state of the family prompt
# (T5: `summarize: {definition}`); static representation = the token's input-embedding row.

# %%
matched = match_lemmas(lm.tokenizer, pos=POS)
n_all = len(matched)
if N_MATCH_MAX is not None and n_all > N_MATCH_MAX:
    matched = matched.subset(np.sort(np.random.default_rng(SEED).choice(n_all, N_MATCH_MAX, replace=False)))
n_used = len(matched)
encode = partial(definition_representations, lm, matched.definitions, batch_size=BATCH_SIZE, max_length=MAX_LEN,
                 progress=False)
enc_reps = encode()
static_reps = static_representations(lm, matched.token_ids)
metrics["matched"] = {"n_matched": n_all, "n_used": n_used, "d_model": enc_reps.shape[1]}
job.table(metrics["matched"], caption="Matched WordNet entries (single-token lemmas) and the encoder width")

# %% [markdown]
# ### Seed §7's quick test: a random-init modulator on five sentences
#
# Before any WordNet structure is written in, the seed attached a randomly initialised
# modulator (alpha = 0.01 at every block, projection weights ~ N(0, 0.01²)) and compared the
# last hidden state of five sentences token by token with and without it: per-token cosine
# (mean and std), norm ratio |mod| / |orig|, and the shift of every token pair's cosine
# (mean and std). Its expectation: cosine near 1, "whispering, not shouting". Each sentence
# is encoded alone (no padding); the interval of the mean cosine resamples the tokens
# (tokens of one sentence are not independent, so it is optimistic).

# %%
random_mod = gm.GeometricResidualModulator(enc_reps.shape[1], lm.model.config.vocab_size, min(N_GEO, enc_reps.shape[1]),
                                           gm.stack_size(lm), initial_alpha=QUICK_TEST_ALPHA, seed=SEED)
quick = gm.modulator_impact(lm, random_mod, QUICK_TEST_SENTENCES)
quick_iv = M.intervals.bootstrap(quick["cos"], seed=SEED, what="tokens")
metrics["quick_test"] = {k: quick[k] for k in ("cos_mean", "cos_std", "norm_ratio_mean", "pairwise_shift_mean",
                                               "pairwise_shift_std", "n_tokens", "n_pairs", "per_sentence")}
metrics["quick_test"].update(alpha=QUICK_TEST_ALPHA, cos_mean_interval=quick_iv,
                             health=random_mod.geometric_residuals(seed=SEED))
job.table({"cos_mean [95 %]": stats.iv_text(quick["cos_mean"], quick_iv),
           **{k: metrics["quick_test"][k] for k in ("cos_std", "norm_ratio_mean", "pairwise_shift_mean",
                                                    "pairwise_shift_std", "n_tokens", "n_pairs")}},
          caption=f"Seed §7 quick test: random-init modulator at alpha = {QUICK_TEST_ALPHA} on "
                  f"{len(QUICK_TEST_SENTENCES)} sentences, token by token")

# %% [markdown]
# ## 2. Wu–Palmer matrix over anchors → eigen-embedding → kNN projection → Procrustes
#
# Top-`N_GEO` eigenpairs of the anchors' Wu–Palmer matrix give unit vectors whose cosines
# reproduce it (reconstruction correlation); the other entries are placed by a softmax-kNN
# over anchors in the static-embedding space; the PCA of the anchors' encoder
# representations is aligned with the geometric space by orthogonal Procrustes, which fixes
# the projection `P` (scaled to `PROJ_SCALE` × the mean encoder norm). The reconstruction
# correlation is taken over all anchor pairs, which share anchors, so its interval
# resamples the *anchors* (each with all its pairs); its null correlates the same
# similarity matrix with the anchors' vectors shuffled among them.

# %%
n_geo = min(N_GEO, N_ANCHOR, enc_reps.shape[1], n_used)
modulator, info = gm.build_procrustes_modulator(
    lm, matched, enc_reps, static_reps, n_anchor=N_ANCHOR, n_geo=n_geo, k_neighbors=K_NEIGHBORS,
    temperature=KNN_TEMPERATURE, scale_fraction=PROJ_SCALE, initial_alpha=INITIAL_ALPHA, seed=SEED)
ev, anchor_geo = info["eigenvalues"], info["geo"][info["anchor_idx"]].numpy()
recon_iv = stats.matrix_r_interval(info["similarity"], anchor_geo @ anchor_geo.T, seed=SEED)
recon_null = stats.reconstruction_null(info["similarity"], anchor_geo, seed=SEED)
metrics["pipeline"] = {
    "n_anchor": len(info["anchor_idx"]), "n_geo": n_geo, "recon_corr": info["recon_corr"],
    "recon_corr_shuffled_anchors": recon_null["value"], "top_eigenvalues": ev[:10],
    "eigen_energy_kept": float(ev[:n_geo].clip(min=0).sum() / ev.clip(min=0).sum()),
    "alignment_cos_mean": float(info["alignment_cos"].mean()), "alignment_cos_std": float(info["alignment_cos"].std()),
    "procrustes_singular_value_sum": info["singular_value_sum"], "pca_explained_variance": info["explained_variance"],
    "proj_norm": info["proj_norm"], "modulator_params": sum(p.numel() for p in modulator.parameters()),
    "health": modulator.geometric_residuals(seed=SEED)}

# %%
job.table({k: v for k, v in metrics["pipeline"].items() if np.isscalar(v)}, caption="Pipeline summary "
          "(singular-value sum: what the seed printed as the Procrustes 'scale')")
job.table(pd.DataFrame(metrics["pipeline"]["health"]["alpha"], columns=["alpha"]).rename_axis("layer"),
          caption="Initial alpha per encoder block", formats={"alpha": "{:.4f}"})
job.figure(plots.pipeline_summary(ev, n_geo, info["similarity"], anchor_geo, info["recon_corr"],
                                  info["alignment_cos"]), "pipeline", key=True)

# %% [markdown]
# ## 3. Encode through the modulated encoder
#
# The same definitions through the model with the modulator attached to every block of the
# encoder stack (pre-block LERP, the seed's intervention point). A null comparison uses the
# same modulator with the geometric rows of the matched tokens shuffled (same norms and
# projection, WordNet structure destroyed). Per-token preservation is the mean over the
# entries of cos(original, modulated); its interval resamples the entries.

# %%
with gm.attach(lm, modulator, stack="encoder"):
    proc_reps = encode()
shuffled = gm.GeometricResidualModulator(modulator.d_model, modulator.vocab_size, n_geo, modulator.n_layers,
                                         initial_alpha=INITIAL_ALPHA, seed=SEED)
shuffled.load_state_dict(modulator.state_dict())
perm = np.random.default_rng(SEED + 1).permutation(n_used)
gm.init_modulator_from_pipeline(shuffled, np.asarray(matched.token_ids), info["geo"][perm], modulator.proj.weight.detach())
with gm.attach(lm, shuffled, stack="encoder"):
    shuf_reps = encode()
pres_cos = {"procrustes": gm.per_token_cosines(enc_reps, proc_reps), "shuffled": gm.per_token_cosines(enc_reps, shuf_reps)}
pres_iv = {k: M.intervals.bootstrap(c, seed=SEED, what="entries") for k, c in pres_cos.items()}
metrics["preservation"] = {"procrustes": gm.per_token_preservation(enc_reps, proc_reps),
                           "shuffled": gm.per_token_preservation(enc_reps, shuf_reps)}

# %%
job.table(pd.DataFrame({k: {**v, "mean [95 %]": stats.iv_text(v["mean"], pres_iv[k])}
                        for k, v in metrics["preservation"].items()}).T,
          caption="Per-token preservation cos(original, modulated) over the entries")

# %% [markdown]
# ## 4. Static / Original / Procrustes: correlations with WordNet, distance bands, gradients
#
# Random pairs among `N_REL` entries; WordNet similarity by the exact engine (path, as in the
# seed's comparison); Pearson and Spearman of each representation's cosines with it; mean
# cosine per similarity band; gradient = mean cosine of close pairs (sim ≥ 0.25) minus
# distant pairs (sim < 0.10). Intervals: a paired bootstrap over the scored pairs (each
# resampled pair keeps its similarity and its cosine in every representation; ΔPearson is
# recomputed against Original on each resample). The unmodulated encoder (Original), the
# static embeddings and the shuffled-geometry modulator are the nulls of the modulated one.

# %%
rng = np.random.default_rng(SEED)
rel_idx = rng.choice(n_used, size=min(N_REL, n_used), replace=False)
pi, pj = gm.sample_pairs(len(rel_idx), N_PAIRS, seed=SEED)
sim = gm.wordnet_pair_similarity(matched, rel_idx[pi], rel_idx[pj], REL_SIMILARITY)
reps = {"Static": static_reps, "Original": enc_reps, "Procrustes": proc_reps, "Shuffled": shuf_reps}
rel = gm.relational_comparison(sim, {k: v[rel_idx] for k, v in reps.items()}, pi, pj, reference="Original")
rel_iv = stats.relational_intervals(sim, {k: v[rel_idx] for k, v in reps.items()}, pi, pj, seed=SEED)
metrics["relational"] = rel
rel_table = stats.relational_frame(rel, rel_iv)
job.table(rel_table.drop(columns=["pearson", "lo", "hi"]),
          caption=f"Correlation with WordNet {REL_SIMILARITY} similarity over {rel['n_pairs']} scored pairs")

# %%
job.figure(plots.correlation_intervals(rel_table, similarity_kind=REL_SIMILARITY), "relational_correlations", key=True)
job.figure(plots.distance_bands(rel, list(reps), REL_SIMILARITY), "distance_bands", key=True)
job.table(pd.DataFrame({k: {f"[{b['lo']:.2f}, {b['hi']:.2f}]": b["mean_cos"] for b in rel[k]["bands"]} for k in reps}),
          caption="Mean cosine per similarity band (– : fewer than 5 pairs)")

# %% [markdown]
# ## 5. Pentachoron geometry
#
# CV of random pentachoron volumes (5 distinct rows of the whole matrix), beside an
# isotropic Gaussian of the same shape and scale.

# %%
cv = {k: M.pentachoron_cv(v, N_SIMPLICES, seed=SEED).as_dict() for k, v in reps.items()}
cv["gaussian_of_original"] = M.pentachoron_cv(M.gaussian_like(enc_reps, SEED), N_SIMPLICES, seed=SEED).cv
metrics["pentachoron"] = cv
job.table(pd.DataFrame({k: v for k, v in cv.items() if isinstance(v, dict)}).T[["cv", "mean", "n_valid"]],
          caption=f"Pentachoron volume CV ({N_SIMPLICES} simplices); isotropic Gaussian of the original: "
                  f"{cv['gaussian_of_original']:.4f}")

# %% [markdown]
# ## Results
#
# Headline numbers with their 95 % intervals: correlations over the scored pairs (paired
# bootstrap), preservation over the entries, the reconstruction r over the anchors; each
# beside its nulls with their own intervals.

# %%
null_r = {k.lower(): {"value": rel[k]["pearson"], "interval": rel_iv[k]["pearson"]} for k in ("Original", "Shuffled", "Static")}
job.finish(metrics, {
    "procrustes_pearson": results.headline(rel["Procrustes"]["pearson"], interval=rel_iv["Procrustes"]["pearson"],
        nulls=null_r, label="Pearson (modulated)", fmt=".4f",
        note="Original is the same encoder unmodulated: the modulator's effect is the gap to it, not to 0."),
    "procrustes_delta_pearson": results.headline(rel["Procrustes"]["delta_pearson"],
        interval=rel_iv["Procrustes"]["delta_pearson"], label="ΔPearson vs original", fmt=".4f",
        nulls={"no change": 0.0, "shuffled": {"value": rel["Shuffled"]["delta_pearson"],
                                              "interval": rel_iv["Shuffled"]["delta_pearson"]}}),
    "per_token_preservation": results.headline(pres_cos["procrustes"].mean(), interval=pres_iv["procrustes"],
        label="per-token cos(orig, mod)", fmt=".6f", nulls={"original (identity)": 1.0, "shuffled": {
            "value": float(pres_cos["shuffled"].mean()), "interval": pres_iv["shuffled"]}}),
    "recon_corr": results.headline(info["recon_corr"], interval=recon_iv, label="eigen reconstruction r", fmt=".3f",
        nulls={"shuffled anchors": recon_null}),
})

# %% [markdown]
# ## References
#
# - Seed 001, §7 (GeometricResidualModulator and its quick test on five sentences) and §8
#   (self-contained pipeline).
# - Schönemann (1966), orthogonal Procrustes; `scipy.linalg.orthogonal_procrustes`.
# - Wu & Palmer (1994); NLTK WordNet similarity (reproduced exactly by `geolip_lib.lexical`).
# - Differences from the seed: hooks instead of a re-implemented encoder loop; the kNN
#   projection, PCA and Procrustes run batched in float64; the pair correlations use the exact
#   vectorised WordNet engine; the pentachoron CV samples distinct rows of the whole matrix;
#   a shuffled-geometry null modulator is added; every headline carries a 95 % interval
#   (paired bootstrap over pairs, bootstrap over entries, anchor bootstrap) and its nulls; scipy's second Procrustes output is reported
#   as the singular-value sum it is (the seed printed it as a "scale").
