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
# at random initialisation; the entries' synsets shuffled).
#
# **Seed.** 001 §2 (T5-Small × WordNet, "Section V.2–V.4 of the statistics composite").
#
# Run it by hand in JupyterLab (the defaults use a tiny model and finish in seconds), or
# headless through `python run_all.py --profile demo --notebooks 04_wordnet_alignment`.

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name (a text model)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # seed of every random draw in this notebook
MAX_ENTRIES = 600  # matched entries kept (seeded random subset); None for all (seed: all 9,362 for T5-Small)
MIN_DEFINITION_CHARS = 10  # keep entries whose definition is longer than this (seed: 10)
POS = None  # restrict entries to parts of speech, letters of "nvasr" (e.g. "n"), None for all as the seed
N_REL = 400  # entries sampled for the relational pairs (seed: 3000)
N_PAIRS = 20000  # random pairs among them, self-pairs dropped (seed: 500,000)
N_SIMPLICES = 300  # pentachora for the CV and the per-simplex volume correlation (seed: 1000)
BATCH_SIZE = 64  # definitions per forward pass (seed: 64)
MAX_LENGTH = 128  # truncation length of a definition in tokens (seed: 128)
PROMPT = None  # template with {definition}; None for the family default (T5: "summarize: {definition}")
POOLING = "mean"  # "mean" over non-padding tokens, or "last" (decoder LMs)
ENCODING_CACHE = True  # reuse encodings of identical entries (notebooks 04 and 05 share them) from .cache/encodings
MAX_CHAIN_STEPS = 10  # hypernym steps walked per chain (seed: 10)
CHAIN_DEPTHS = 7  # chain depths reported (seed: up to 7)
RANDOM_INIT_BASELINE = True  # encode the definitions again with the architecture at random init

# %%
import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from geolip_lib import lexical, models, plotting, results
from geolip_lib.lexical import alignment as A

NOTEBOOK = "04_wordnet_alignment"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
lm = models.load(MODEL)
if not lm.is_text or lm.tokenizer is None:
    raise ValueError(f"MODEL: {MODEL} ({lm.family}) has no tokenizer; this notebook needs a text model")
lx = lexical.load_lexicon()
engine = lexical.get_engine()
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
print(metrics["matched"])
print("sample:", [(w, d[:50]) for w, d in zip(m.lemmas[:4], m.definitions[:4])])

# %% [markdown]
# ## 2. Encoder and static representations
#
# Encoder: each definition through the model (prompt per family), pooled over non-padding
# tokens. Static: the input-embedding row of the matched token. Their per-entry cosine
# says how far the encoder moves a word's representation from its token embedding (only
# meaningful where both live in the same space, i.e. same width).

# %%
prompt = PROMPT if PROMPT is not None else lexical.prompt_for(lm.family)
E = lexical.definition_representations(lm, m.definitions, prompt=prompt, pooling=POOLING,
                                       batch_size=BATCH_SIZE, max_length=MAX_LENGTH, cache=ENCODING_CACHE)
S = lexical.static_representations(lm, m.token_ids)
Sn, En = A.normalize(S), A.normalize(E)
cos_se = A.rowwise_cosine(S, E) if S.shape == E.shape else np.full(len(S), np.nan)
metrics["representations"] = {
    "prompt": prompt, "pooling": POOLING, "dim_static": S.shape[1], "dim_encoder": E.shape[1],
    "static_norm_mean": float(np.linalg.norm(S, axis=1).mean()), "static_norm_std": float(np.linalg.norm(S, axis=1).std()),
    "encoder_norm_mean": float(np.linalg.norm(E, axis=1).mean()), "encoder_norm_std": float(np.linalg.norm(E, axis=1).std()),
    "cos_static_encoder_mean": float(np.mean(cos_se)), "cos_static_encoder_std": float(np.std(cos_se)),
    "static_mean_cosine": A.mean_offdiag_cosine(Sn), "encoder_mean_cosine": A.mean_offdiag_cosine(En),
}
metrics["representations"]

# %% [markdown]
# ## 3. Relational correlation with WordNet path similarity
#
# `N_PAIRS` random pairs among `N_REL` random entries; NLTK path similarity (exact fast
# engine) against the cosine of the two entries in each space. NLTK's defaults put a fake
# root above every non-noun synset (`simulate_root`), so two adjectives always score 1/3
# and cross-POS pairs get small values: with all parts of speech the correlation partly
# measures POS separation (set `POS = "n"` for nouns only).

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
metrics["relational"]

# %% [markdown]
# ## 4. Cosine by WordNet distance band

# %%
bands = A.band_table(rp["sims"], rp["static_cos"], rp["enc_cos"])
metrics["bands"] = bands
import pandas as pd  # noqa: E402

pd.DataFrame(bands)

# %% [markdown]
# ## 5. Pentachoron geometry: static vs encoder
#
# CV (std/mean) of the volumes of `N_SIMPLICES` random 4-simplices over all entries, in
# each space, on the **same** vertex sets; and the correlation of the two volumes per
# simplex (the seed correlated two lists misaligned by separately dropped simplices).

# %%
penta = A.pentachoron_pair(S, E, N_SIMPLICES, SEED)
metrics["pentachoron"] = {k: v for k, v in penta.items() if not k.startswith("_")}
metrics["pentachoron"]

# %% [markdown]
# ## 6. Hypernym chain geometry
#
# For each entry, the matched synsets met along its first-hypernym path (≤ 10 steps);
# depth d = the d-th matched ancestor. Does the cosine to the chain's start decay?

# %%
chains = A.hypernym_chains(m.synset_ids, lx, max_steps=MAX_CHAIN_STEPS)
decay = A.chain_decay(Sn, En, chains, range(1, CHAIN_DEPTHS + 1))
metrics["hypernym_chains"] = {"n_chains": len(chains), "by_depth": decay}
print(f"{len(chains)} chains of length >= 3")
pd.DataFrame(decay)

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
pd.DataFrame(lex).head(15)

# %% [markdown]
# ## 8. Null baselines
#
# * **shuffled**: the same pairs and cosines, with the entries' synsets permuted (any
#   WordNet structure in the geometry is destroyed; correlations should vanish);
# * **random init**: the definitions encoded by the same architecture at random
#   initialisation (what the architecture alone, untrained, gives).

# %%
perm = np.random.default_rng(SEED + 1).permutation(len(m))
rp_shuf = A.relational_pairs(m.synset_ids[perm], Sn, En, rel_idx, N_PAIRS, np.random.default_rng(SEED + 2), engine)
shuf_s, shuf_e = A.correlations(rp_shuf["sims"], rp_shuf["static_cos"]), A.correlations(rp_shuf["sims"], rp_shuf["enc_cos"])
baselines = {"shuffled": {"static_pearson": shuf_s["pearson"], "static_spearman": shuf_s["spearman"],
                          "encoder_pearson": shuf_e["pearson"], "encoder_spearman": shuf_e["spearman"]}}
if RANDOM_INIT_BASELINE:
    lm0 = lm.random_init()
    E0 = lexical.definition_representations(lm0, m.definitions, prompt=prompt, pooling=POOLING,
                                            batch_size=BATCH_SIZE, max_length=MAX_LENGTH, cache=ENCODING_CACHE)
    S0 = lexical.static_representations(lm0, m.token_ids)
    S0n, E0n = A.normalize(S0), A.normalize(E0)
    rp0 = A.relational_pairs(m.synset_ids, S0n, E0n, rel_idx, N_PAIRS, np.random.default_rng(SEED + 3), engine)
    c0s, c0e = A.correlations(rp0["sims"], rp0["static_cos"]), A.correlations(rp0["sims"], rp0["enc_cos"])
    p0 = A.pentachoron_pair(S0, E0, N_SIMPLICES, SEED)
    lex0 = A.lexname_table(m.synset_ids, S0n, E0n, lx)
    baselines["random_init"] = {
        "model": lm0.name, "static_pearson": c0s["pearson"], "static_spearman": c0s["spearman"],
        "encoder_pearson": c0e["pearson"], "encoder_spearman": c0e["spearman"],
        "static_cv": p0["static_cv"], "encoder_cv": p0["encoder_cv"], "volume_corr": p0["volume_corr"],
        "mean_encoder_contrast": float(np.mean([r["encoder_contrast"] for r in lex0])) if lex0 else float("nan"),
    }
    del lm0
else:
    print("random-init baseline skipped (RANDOM_INIT_BASELINE = False)")
metrics["baselines"] = baselines
baselines

# %% [markdown]
# ## 9. Figure: static vs encoder geometry against WordNet (the seed's 2×3 panel)

# %%
fig, axes = plt.subplots(2, 3, figsize=(18, 10))
fig.suptitle(f"{MODEL} × WordNet: static vs encoder geometry", fontsize=14)
sub = rng.choice(len(rp["sims"]), size=min(50000, len(rp["sims"])), replace=False)
axes[0, 0].scatter(rp["sims"][sub], rp["enc_cos"][sub], alpha=0.05, s=2, color="darkgreen")
axes[0, 0].set(xlabel="WordNet path similarity", ylabel="encoder cosine",
               title=f"Encoder vs WordNet (r={c_enc['pearson']:.4f})")
axes[0, 1].scatter(rp["sims"][sub], rp["static_cos"][sub], alpha=0.05, s=2, color="steelblue")
axes[0, 1].set(xlabel="WordNet path similarity", ylabel="static cosine",
               title=f"Static vs WordNet (r={c_static['pearson']:.4f})")
if np.isfinite(cos_se).any():
    sns.histplot(cos_se, bins=100, ax=axes[0, 2], color="darkorange")
    axes[0, 2].set_title(f"cosine(static, encoder), mean={np.mean(cos_se):.3f}")
else:
    axes[0, 2].text(0.5, 0.5, "static and encoder widths differ", ha="center", va="center")
    axes[0, 2].set_axis_off()
axes[1, 0].scatter(penta["_static_volumes"], penta["_encoder_volumes"], alpha=0.3, s=5, color="purple")
axes[1, 0].set(xlabel="static volume", ylabel="encoder volume",
               title=f"Pentachoron volumes (r={penta['volume_corr']:.4f})")
if decay:
    d = [r["depth"] for r in decay]
    axes[1, 1].plot(d, [r["static_cos"] for r in decay], "o-", label="static", color="steelblue")
    axes[1, 1].plot(d, [r["encoder_cos"] for r in decay], "s-", label="encoder", color="crimson")
    axes[1, 1].legend()
axes[1, 1].set(xlabel="hypernym chain depth", ylabel="mean cosine to start", title="Hypernym chain cosine decay")
top = lex[:15]
y = np.arange(len(top))
axes[1, 2].barh(y - 0.15, [r["static_intra"] for r in top], 0.3, label="static", color="steelblue", alpha=0.7)
axes[1, 2].barh(y + 0.15, [r["encoder_intra"] for r in top], 0.3, label="encoder", color="crimson", alpha=0.7)
axes[1, 2].set_yticks(y, [r["lexname"][:18] for r in top])
axes[1, 2].set_title("Intra-category cosine by WordNet lexname")
axes[1, 2].legend()
fig.tight_layout()
plotting.savefig(fig, out, "wordnet_geometry")

# %% [markdown]
# ## Results

# %%
rel, pen = metrics["relational"], metrics["pentachoron"]
ri = baselines.get("random_init", {})
headline = {
    "wn_encoder_pearson": results.headline(rel["encoder_pearson"], baseline=baselines["shuffled"]["encoder_pearson"],
                                           baseline_kind="shuffled", label="encoder r (path sim)"),
    "wn_encoder_spearman": results.headline(rel["encoder_spearman"], baseline=ri.get("encoder_spearman"),
                                            baseline_kind="random_init", label="encoder ρ (path sim)"),
    "wn_static_pearson": results.headline(rel["static_pearson"], baseline=ri.get("static_pearson"),
                                          baseline_kind="random_init", label="static r (path sim)"),
    "wn_encoder_cv": results.headline(pen["encoder_cv"], baseline=ri.get("encoder_cv"),
                                      baseline_kind="random_init", label="encoder pentachoron CV"),
    "wn_cos_static_encoder": results.headline(metrics["representations"]["cos_static_encoder_mean"],
                                              label="cos(static, encoder)"),
}
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL, headline=headline,
               parameters={"SEED": SEED, "MAX_ENTRIES": MAX_ENTRIES, "N_REL": N_REL, "N_PAIRS": N_PAIRS,
                           "N_SIMPLICES": N_SIMPLICES, "PROMPT": prompt, "POOLING": POOLING})

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
