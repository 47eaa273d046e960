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
# # 04 · WordNet relational alignment
#
# **Question.** Does a text model's geometry agree with WordNet's hypernym graph? We
# compare two spaces per WordNet entry: the **static** input embedding of the entry's
# single token, and the **encoder** representation of its definition (mean-pooled last
# hidden state; T5 reads `summarize: {definition}`). Agreement is measured against NLTK's
# path similarity (computed by an exact, vectorized engine that equals NLTK bit for bit),
# by distance band, by pentachoron volume statistics, along hypernym chains and within
# WordNet's lexicographer categories — each beside null baselines (the same architecture
# at random initialisation; the entries' synsets shuffled). Every headline number carries
# a 95 % interval: the correlations resample the sampled *entries* (each with all its
# pairs: pairs share entries, so pairs are not independent), the pentachoron numbers
# resample the simplices, the per-entry cosine the entries.
#
# **Seed.** 001 §2 (T5-Small × WordNet, "Section V.2–V.4 of the statistics composite").
#
# Run it by hand in JupyterLab (the defaults use a tiny model and finish in seconds), or
# headless through `python run_all.py --profile demo --notebooks 04_wordnet_alignment`.

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name (a text model)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # [0 ≤ x < 2**32] seed of every random draw in this notebook
SEED_MODE = False  # True: every draw seeded with 42, as the seed's default_rng(42) (§2), in place of SEED
MAX_ENTRIES = 600  # [x is None or 5 ≤ x ≤ 10**7] matched entries kept (seeded random subset); None for all (seed: all 9,362 for T5-Small)
MIN_DEFINITION_CHARS = 10  # [x ≥ 0] keep entries whose definition is longer than this (seed: 10)
POS = None  # [x is None or (len(x) ≥ 1 and all(c in "nvasr" for c in x))] restrict entries to parts of speech, letters of "nvasr" (e.g. "n"), None for all as the seed
N_REL = 400  # [2 ≤ x ≤ 10**7] entries sampled for the relational pairs (seed: 3000)
N_PAIRS = 20000  # [1 ≤ x ≤ 10**8] random pairs among them, self-pairs dropped (seed: 500,000)
N_SIMPLICES = 300  # [2 ≤ x ≤ 10**6] pentachora for the CV and the per-simplex volume correlation (seed: 1000)
BATCH_SIZE = 64  # [1 ≤ x ≤ 2**16] definitions per forward pass (seed: 64)
MAX_LENGTH = 128  # [1 ≤ x ≤ 10**6] truncation length of a definition in tokens (seed: 128)
PROMPT = None  # [x is None or "{definition}" in x] template with {definition}; None for the family default (T5: "summarize: {definition}")
POOLING = "mean"  # [x in ("mean", "last")] "mean" over non-padding tokens, or "last" (decoder LMs)
ENCODING_CACHE = True  # reuse encodings of identical entries (notebooks 04 and 05 share them) from .cache/encodings
MAX_CHAIN_STEPS = 10  # [1 ≤ x ≤ 1000] hypernym steps walked per chain (seed: 10)
CHAIN_DEPTHS = 7  # [1 ≤ x ≤ MAX_CHAIN_STEPS] chain depths reported (seed: up to 7)
RANDOM_INIT_BASELINE = True  # encode the definitions again with the architecture at random init
N_BOOT = 1000  # [1 ≤ x ≤ 10**6] bootstrap resamples behind every 95 % interval

# %%
SEED = 42 if SEED_MODE else SEED  # seed mode: the seed's seed (the draws' order stays the project's)

# %%
import numpy as np
import pandas as pd

from geolip_lib import lexical, results, runtime
from geolip_lib import metrics as M
from geolip_lib.lexical import relational_battery as A
from geolip_lib.lexical import plots, tables

job = runtime.start("04_wordnet_alignment", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
if not lm.is_text or lm.tokenizer is None:
    raise ValueError(f"MODEL: {MODEL} ({lm.family}) has no tokenizer; this notebook needs a text model")
lx, engine = lexical.load_lexicon(), lexical.get_engine()
rng = np.random.default_rng(SEED)
metrics: dict = {}

# %% [markdown]
# ## 1. WordNet entries matched to single tokens
#
# Walk WordNet in NLTK's order; a lemma matches when the tokenizer encodes it as exactly
# one token that no earlier entry claimed, and its definition is longer than
# `MIN_DEFINITION_CHARS` characters (the seed's rule).

# %%
matched_all = lexical.match_lemmas(lm.tokenizer, lx, min_definition_chars=MIN_DEFINITION_CHARS, pos=POS)
if MAX_ENTRIES is not None and MAX_ENTRIES < len(matched_all):
    m = matched_all.subset(np.sort(rng.choice(len(matched_all), MAX_ENTRIES, replace=False)))
else:
    m = matched_all
pos_counts = {c: int((lx.pos[m.synset_ids] == k).sum()) for k, c in enumerate("nvasr")}
metrics["matched"] = {"n_matched": len(matched_all), "n_used": len(m),
                      "n_distinct_synsets": int(len(np.unique(m.synset_ids))), "pos_counts": pos_counts}
job.table(pd.Series({"matched entries": len(matched_all), "entries used": len(m),
                     "distinct synsets": metrics["matched"]["n_distinct_synsets"],
                     **{f"part of speech {c}": n for c, n in pos_counts.items()}}, name="count"),
          caption="WordNet entries matched to single tokens")
job.table(pd.DataFrame({"lemma": m.lemmas[:5], "definition": [d[:80] for d in m.definitions[:5]]}),
          caption="First entries used", index=False)

# %% [markdown]
# ## 2. Encoder and static representations
#
# Encoder: each definition through the model (prompt per family), pooled over non-padding
# tokens. Static: the input-embedding row of the matched token. Their per-entry cosine
# says how far the encoder moves a word's representation from its token embedding (only
# meaningful where both live in the same space, i.e. same width; interval: bootstrap over
# the entries).

# %%
prompt = PROMPT if PROMPT is not None else lexical.prompt_for(lm.family)
E = lexical.definition_representations(lm, m.definitions, prompt=prompt, pooling=POOLING,
                                       batch_size=BATCH_SIZE, max_length=MAX_LENGTH, cache=ENCODING_CACHE)
S = lexical.static_representations(lm, m.token_ids)
Sn, En = A.normalize(S), A.normalize(E)
cos_se = A.rowwise_cosine(S, E) if S.shape == E.shape else np.full(len(S), np.nan)
cos_se_iv = M.intervals.bootstrap(cos_se, seed=SEED, n_boot=N_BOOT, what="entries")
metrics["representations"] = {
    "prompt": prompt, "pooling": POOLING, "dim_static": S.shape[1], "dim_encoder": E.shape[1],
    "static_norm_mean": float(np.linalg.norm(S, axis=1).mean()), "static_norm_std": float(np.linalg.norm(S, axis=1).std()),
    "encoder_norm_mean": float(np.linalg.norm(E, axis=1).mean()), "encoder_norm_std": float(np.linalg.norm(E, axis=1).std()),
    "cos_static_encoder_mean": float(np.mean(cos_se)), "cos_static_encoder_std": float(np.std(cos_se)),
    "static_mean_cosine": A.mean_offdiag_cosine(Sn), "encoder_mean_cosine": A.mean_offdiag_cosine(En),
}

# %%
rep = metrics["representations"]
job.table(pd.DataFrame({space: {"width": rep[f"dim_{space}"], "norm mean": rep[f"{space}_norm_mean"],
                                "norm std": rep[f"{space}_norm_std"], "mean pair cosine": rep[f"{space}_mean_cosine"]}
                        for space in ("static", "encoder")}).T, formats={"width": "{:.0f}"},
          caption=f"Representations (prompt {prompt!r}, {POOLING} pooling)")
print(f"cos(static, encoder) per entry: {M.intervals.format_value(rep['cos_static_encoder_mean'], cos_se_iv)} "
      f"(std {rep['cos_static_encoder_std']:.3f}; NaN when the widths differ).")

# %% [markdown]
# ## 3. Relational correlation with WordNet path similarity
#
# `N_PAIRS` random pairs among `N_REL` random entries; NLTK path similarity (exact fast
# engine) against the cosine of the two entries in each space. NLTK's defaults put a fake
# root above every non-noun synset (`simulate_root`), so two adjectives always score 1/3
# and cross-POS pairs get small values: with all parts of speech the correlation partly
# measures POS separation (set `POS = "n"` for nouns only). The interval is a percentile
# bootstrap over the `N_REL` entries: a resampled entry brings all its pairs along
# (`alignment.relational_intervals`); resampling pairs as if independent would be too narrow.

# %%
rel_idx = rng.choice(len(m), size=min(N_REL, len(m)), replace=False)
rp = A.relational_pairs(m.synset_ids, Sn, En, rel_idx, N_PAIRS, rng, engine)
c_static = A.correlations(rp["sims"], rp["static_cos"])
c_enc = A.correlations(rp["sims"], rp["enc_cos"])
metrics["relational"] = {
    "n_pairs_drawn": rp["n_drawn"], "n_pairs_valid": len(rp["sims"]),
    "static_pearson": c_static["pearson"], "static_spearman": c_static["spearman"],
    "encoder_pearson": c_enc["pearson"], "encoder_spearman": c_enc["spearman"],
    "lift_pearson": c_enc["pearson"] - c_static["pearson"], "lift_spearman": c_enc["spearman"] - c_static["spearman"],
}
rel_iv = A.relational_intervals(rp, n_boot=N_BOOT, seed=SEED)
REL_KEYS = ("encoder_pearson", "encoder_spearman", "static_pearson", "static_spearman")
job.table(tables.interval_table(tables.interval_rows({"model": (metrics["relational"], rel_iv)}, REL_KEYS)),
          caption=f"Path similarity vs cosine over {len(rp['sims'])} pairs: value [95 % interval]")

# %% [markdown]
# ## 4. Cosine by WordNet distance band

# %%
bands = A.band_table(rp["sims"], rp["static_cos"], rp["enc_cos"])
metrics["bands"] = bands
job.table(pd.DataFrame(bands).drop(columns=["lo", "hi"]), caption="Mean pair cosine per path-similarity band",
          index=False)
job.figure(plots.distance_bands(bands, title=f"{MODEL}: pair cosine by WordNet path-similarity band"),
           "distance_bands")

# %% [markdown]
# ## 5. Pentachoron geometry: static vs encoder
#
# CV (std/mean) of the volumes of `N_SIMPLICES` random 4-simplices over all entries, in
# each space, on the **same** vertex sets; and the correlation of the two volumes per
# simplex (the seed correlated two lists misaligned by separately dropped simplices).
# Intervals: bootstrap (BCa) over the simplices, each resampled with both its volumes.

# %%
penta, vols = A.pentachoron_pair(S, E, N_SIMPLICES, SEED, return_volumes=True)
pen_iv = A.pentachoron_intervals(vols, n_boot=N_BOOT, seed=SEED)
metrics["pentachoron"] = penta
PEN_KEYS = ("encoder_cv", "static_cv", "volume_corr")
job.table(tables.interval_table(tables.interval_rows({"model": (penta, pen_iv)}, PEN_KEYS)),
          caption=f"Pentachoron volumes ({penta['n_valid_both']} simplices valid in both spaces): value [95 % interval]")

# %% [markdown]
# ## 6. Hypernym chain geometry
#
# For each entry, the matched synsets met along its first-hypernym path (≤ 10 steps);
# depth d = the d-th matched ancestor. Does the cosine to the chain's start decay?

# %%
chains = A.hypernym_chains(m.synset_ids, lx, max_steps=MAX_CHAIN_STEPS)
decay = A.chain_decay(Sn, En, chains, range(1, CHAIN_DEPTHS + 1))
metrics["hypernym_chains"] = {"n_chains": len(chains), "by_depth": decay}
job.table(pd.DataFrame(decay), caption=f"Mean cosine to the chain's start by depth ({len(chains)} chains of "
          "length >= 3)", index=False)

# %% [markdown]
# ## 7. WordNet category (lexname) clustering
#
# Mean intra-category cosine per lexicographer file (first 200 members). The seed's
# `lift` is encoder minus static; `*_contrast` subtracts each space's overall mean cosine
# (the two spaces differ in anisotropy, so contrasts are the comparable numbers).

# %%
lex = A.lexname_table(m.synset_ids, Sn, En, lx)
metrics["lexname"] = {
    "categories": lex,
    "mean_lift": float(np.mean([r["lift"] for r in lex])) if lex else float("nan"),
    "mean_static_contrast": float(np.mean([r["static_contrast"] for r in lex])) if lex else float("nan"),
    "mean_encoder_contrast": float(np.mean([r["encoder_contrast"] for r in lex])) if lex else float("nan"),
}
job.table(pd.DataFrame(lex).head(15), caption="Intra-category cosine by lexname (15 largest categories)", index=False)

# %% [markdown]
# ## 8. Null baselines
#
# * **shuffled**: the same entries and cosines, with the entries' synsets permuted (any
#   WordNet structure in the geometry is destroyed; correlations should vanish);
# * **random init**: the definitions encoded by the same architecture at random
#   initialisation (what the architecture alone, untrained, gives).
#
# Each null's numbers get the same intervals as the model's (same resampling).

# %%
perm = np.random.default_rng(SEED + 1).permutation(len(m))
rp_shuf = A.relational_pairs(m.synset_ids[perm], Sn, En, rel_idx, N_PAIRS, np.random.default_rng(SEED + 2), engine)
shuf_s, shuf_e = A.correlations(rp_shuf["sims"], rp_shuf["static_cos"]), A.correlations(rp_shuf["sims"], rp_shuf["enc_cos"])
baselines = {"shuffled": {"static_pearson": shuf_s["pearson"], "static_spearman": shuf_s["spearman"],
                          "encoder_pearson": shuf_e["pearson"], "encoder_spearman": shuf_e["spearman"]}}
shuf_iv = A.relational_intervals(rp_shuf, n_boot=N_BOOT, seed=SEED)
ri_values, ri_iv = {}, {}  # the random-init battery (next cell)

# %%
if RANDOM_INIT_BASELINE:
    lm0 = lm.random_init()
    E0 = lexical.definition_representations(lm0, m.definitions, prompt=prompt, pooling=POOLING,
                                            batch_size=BATCH_SIZE, max_length=MAX_LENGTH, cache=ENCODING_CACHE)
    S0 = lexical.static_representations(lm0, m.token_ids)
    S0n, E0n = A.normalize(S0), A.normalize(E0)
    rp0 = A.relational_pairs(m.synset_ids, S0n, E0n, rel_idx, N_PAIRS, np.random.default_rng(SEED + 3), engine)
    c0s, c0e = A.correlations(rp0["sims"], rp0["static_cos"]), A.correlations(rp0["sims"], rp0["enc_cos"])
    p0, vols0 = A.pentachoron_pair(S0, E0, N_SIMPLICES, SEED, return_volumes=True)
    lex0 = A.lexname_table(m.synset_ids, S0n, E0n, lx)
    cos_se0 = A.rowwise_cosine(S0, E0) if S0.shape == E0.shape else np.full(len(S0), np.nan)
    ri_name, lm0 = lm0.name, None  # the random-init model is not needed any more
else:
    print("The random-init baseline is skipped (RANDOM_INIT_BASELINE = False).")

# %%
if RANDOM_INIT_BASELINE:
    ri_iv = {**A.relational_intervals(rp0, n_boot=N_BOOT, seed=SEED), **A.pentachoron_intervals(vols0, n_boot=N_BOOT, seed=SEED),
             "cos_static_encoder": M.intervals.bootstrap(cos_se0, seed=SEED, n_boot=N_BOOT, what="entries")}
    baselines["random_init"] = {
        "model": ri_name, "static_pearson": c0s["pearson"], "static_spearman": c0s["spearman"],
        "encoder_pearson": c0e["pearson"], "encoder_spearman": c0e["spearman"],
        "static_cv": p0["static_cv"], "encoder_cv": p0["encoder_cv"], "volume_corr": p0["volume_corr"],
        "mean_encoder_contrast": float(np.mean([r["encoder_contrast"] for r in lex0])) if lex0 else float("nan"),
    }
    ri_values = {**baselines["random_init"], "cos_static_encoder": float(np.mean(cos_se0))}
metrics["baselines"] = baselines
nulls = {"shuffled": (baselines["shuffled"], shuf_iv), **({"random_init": (ri_values, ri_iv)} if ri_values else {})}

# %% [markdown]
# ### Model beside its nulls
#
# Every number with its 95 % interval; a null whose interval overlaps the model's does not
# separate from it.

# %%
ALL_KEYS = REL_KEYS + PEN_KEYS + ("cos_static_encoder",)
model_values = {**metrics["relational"], **penta, "cos_static_encoder": rep["cos_static_encoder_mean"]}
model_iv = {**rel_iv, **pen_iv, "cos_static_encoder": cos_se_iv}
iv_rows = tables.interval_rows({"model": (model_values, model_iv), **nulls}, ALL_KEYS)
metrics["intervals"] = {name: {k: iv.as_dict() for k, iv in ivs.items()}
                        for name, (_, ivs) in {"model": (None, model_iv), **nulls}.items()}
job.table(tables.interval_table(iv_rows), caption="Model and null baselines: value [95 % interval]")
job.figure(plots.interval_forest(iv_rows, title=f"{MODEL} × WordNet: model vs nulls (95 % intervals)",
                                 xlabel="value"), "model_vs_nulls", key=True)

# %% [markdown]
# ## 9. Figure: static vs encoder geometry against WordNet (the seed's 2×3 panel)

# %%
job.figure(plots.wordnet_geometry(
    rp["sims"], rp["enc_cos"], rp["static_cos"], r_enc=c_enc["pearson"], r_static=c_static["pearson"],
    cos_static_encoder=cos_se, vol_static=vols["static"], vol_enc=vols["encoder"], vol_corr=penta["volume_corr"],
    decay=decay, lexnames=lex, title=f"{MODEL} × WordNet: static vs encoder geometry", seed=SEED),
    "wordnet_geometry", key=True)

# %% [markdown]
# ## Results
#
# Headline numbers with their 95 % intervals (entries resampled with their pairs for the
# correlations; simplices for the CV; entries for the per-entry cosine), beside the
# shuffled-synset and random-init nulls with their own intervals.

# %%
rel, cse = metrics["relational"], rep["cos_static_encoder_mean"]
headline = {
    "wn_encoder_pearson": results.headline(rel["encoder_pearson"], interval=rel_iv["encoder_pearson"],
                                           nulls=tables.nulls("encoder_pearson", nulls), label="encoder r (path sim)"),
    "wn_encoder_spearman": results.headline(rel["encoder_spearman"], interval=rel_iv["encoder_spearman"],
                                            nulls=tables.nulls("encoder_spearman", nulls), label="encoder ρ (path sim)"),
    "wn_static_pearson": results.headline(rel["static_pearson"], interval=rel_iv["static_pearson"],
                                          nulls=tables.nulls("static_pearson", nulls), label="static r (path sim)"),
    "wn_encoder_cv": results.headline(penta["encoder_cv"], interval=pen_iv["encoder_cv"], label="encoder pentachoron CV",
                                      nulls=tables.nulls("encoder_cv", nulls),
                                      note="Shuffling synsets leaves the geometry unchanged: the CV's null is random init."),
    "wn_cos_static_encoder": results.headline(cse if np.isfinite(cse) else None, interval=cos_se_iv,
                                              nulls=tables.nulls("cos_static_encoder", nulls), label="cos(static, encoder)"),
}
job.finish(metrics, headline)

# %% [markdown]
# ## References
#
# - Seed 001, section 2 ("T5-Small × WordNet Relational Alignment").
# - Fixes relative to the seed: per-simplex volume correlation on the same valid
#   simplices (the seed truncated two independently filtered lists); hypernym chains
#   follow the first hypernym *by name* (NLTK's `hypernyms()[0]` depends on the process's
#   string-hash seed); the distance bands partition [0, 1] (the seed's `[0.9, 1.0)` left
#   out path similarity 1 — distinct entries of one synset — and its `(0, 0.05]` counted
#   0.05 in two bands).
# - Miller (1995), WordNet; Wu & Palmer (1994); NLTK 3.10 `wordnet.py`.
