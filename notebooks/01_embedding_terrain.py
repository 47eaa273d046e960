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
# # 01 · Embedding terrain
#
# **Question.** What does the geometry of a model's embedding table look like — its
# norms, cosine distribution, intrinsic dimensionality (participation ratio), the spread
# of random 4-simplex (pentachoron) volumes — and how far is it from an isotropic Gaussian
# of the same shape and scale, and from the same architecture at random initialisation?
# How do hidden states evolve through the layers?
#
# **Seed.** Seed 001 §1 (T5-Small embedding + layer geometry) and §13a (Qwen3.5 embedding
# probes), made generic over model families: text models analyse their token embedding;
# vision models (DINOv2, open_clip's vision tower) their position and patch embeddings;
# open_clip analyses its text tower's token embedding plus the vision tables.
#
# **Which matrix and sample** (so that the numbers can be recomputed independently):
# `E = lm.input_embeddings()` — the float32 token-embedding table (MiniLM / BERT:
# `embeddings.word_embeddings.weight`, 30 522 × 384; T5: `shared.weight`; open_clip:
# `token_embedding.weight`; DINOv2: the learned position embeddings). PR uses the centred
# covariance of **all** rows (or a `default_rng(SEED).choice(V, PCA_ROWS, replace=False)`
# sample when `PCA_ROWS` is set). The pentachoron CV draws `N_SIMPLICES` sets of 5
# distinct rows from the whole table (`metrics.sample_distinct_rows(V, N_SIMPLICES, 5,
# SEED)`) and reports population std / mean of the volumes. Cosine statistics use the
# upper triangle of the cosine matrix of `default_rng(SEED).choice(V, N_COS_SAMPLE,
# replace=False)` rows.
#
# Run it by hand in JupyterLab (the defaults below use a tiny model and finish in
# seconds), or headless through `python run_all.py --profile demo --notebooks 01_embedding_terrain`.

# %% tags=["parameters"]
MODEL = "tiny-bert"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 0  # seed of every random draw in this notebook
N_COS_SAMPLE = 2000  # rows sampled for the pairwise-cosine distribution (seed: 5000)
N_SIMPLICES = 1000  # pentachora drawn for the volume CV (seed: 1000)
N_DIST_SAMPLE = 1000  # rows sampled for Euclidean distances (seed: 2000)
PCA_ROWS = None  # rows for the eigenspectrum; None = every row (seed §1), 10000 in seed §13a
RANDOM_INIT_BASELINE = True  # also measure the same architecture at random init (null baseline)
N_IMAGES = 8  # synthetic probe images for vision stacks
MAX_LENGTH = 64  # token truncation for the probe sentences

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from geolip_lib import metrics as M
from geolip_lib import models, plotting, probes, results

NOTEBOOK = "01_embedding_terrain"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
lm = models.load(MODEL)
E = lm.input_embeddings()
V_, D_ = E.shape
metrics: dict = {"model": {"name": lm.name, "family": lm.family, "is_text": lm.is_text,
                           "stacks": list(lm.stacks)}}
twin = lm.random_init() if RANDOM_INIT_BASELINE else None
E_init = twin.input_embeddings() if twin is not None else None
E_gauss = M.gaussian_like(E, seed=SEED + 1)
table = "token embedding" if lm.is_text else "position embedding"
print(f"{lm.name} ({lm.family}): {table} table E = {V_} x {D_}")

# %% [markdown]
# ## 1. Architecture introspection
#
# Parameter census by component (first two name parts, tied tensors counted once), and
# which parameters alias the input embedding (weight tying).

# %%
census = probes.parameter_census(lm.model)
tying = probes.weight_tying(lm.model)
metrics["census"] = census
metrics["tying"] = tying
metrics["embedding_shape"] = [V_, D_]
print(pd.Series(census["components"], name="params").to_frame()
      .assign(share=lambda d: (100 * d.params / census["total"]).round(1)).head(12))
print(f"total parameters: {census['total']:,}")
print("tying:", tying if tying.get("applicable") else tying["reason"])

# %% [markdown]
# ## 2. Global embedding statistics
#
# Row norms (mean, spread, percentiles, zero rows) and per-dimension means and stds.

# %%
ns = probes.norm_stats(E)
metrics["norms"] = probes.strip_private(ns)
print({k: round(v, 6) for k, v in ns["norm"].items() if isinstance(v, float)}, "zero rows:", ns["n_zero"])
print("per-dim:", {k: round(v, 8) for k, v in ns["per_dim"].items()})

# %% [markdown]
# ## 3. Cosine-similarity distribution
#
# Pairwise cosines on a seeded row sample, their percentiles, and the share of pairs
# within ±0.01 of the seed's named constants (0, 0.19471, 0.29514, 0.5). The Gaussian
# baseline centres on 0 with std ≈ 1/√D.

# %%
cos = M.cosine_stats(E, n_sample=N_COS_SAMPLE, seed=SEED, return_values=True)
cos_g = M.cosine_stats(E_gauss, n_sample=N_COS_SAMPLE, seed=SEED, return_values=True)
cos_vals, cos_g_vals = cos.pop("values"), cos_g.pop("values")
metrics["cosine"] = cos
metrics["cosine_gaussian"] = cos_g
if E_init is not None:
    metrics["cosine_random_init"] = M.cosine_stats(E_init, n_sample=N_COS_SAMPLE, seed=SEED)
print(f"pairs={cos['n_pairs']:,} mean={cos['mean']:.6f} std={cos['std']:.6f} "
      f"(gaussian mean={cos_g['mean']:.6f} std={cos_g['std']:.6f})")
print(pd.DataFrame(cos["near_constants"]).T)

# %% [markdown]
# ## 4. Eigenspectrum and intrinsic dimensionality
#
# Participation ratio `(Σλ)² / Σλ²` of the centred covariance, entropy effective
# dimension, and the number of components for 80/90/95/99 % of the variance.

# %%
eig = probes.eigenspectrum(E, max_rows=PCA_ROWS, seed=SEED)
eig_g = probes.eigenspectrum(E_gauss, max_rows=PCA_ROWS, seed=SEED)
metrics["eigenspectrum"] = probes.strip_private(eig)
metrics["eigenspectrum_gaussian"] = probes.strip_private(eig_g)
if E_init is not None:
    metrics["eigenspectrum_random_init"] = probes.strip_private(probes.eigenspectrum(E_init, max_rows=PCA_ROWS, seed=SEED))
print(f"PR={eig['pr']:.2f} (PR/D={eig['pr_over_dim']:.3f}; gaussian PR={eig_g['pr']:.2f}) "
      f"effective dim={eig['effective_dimension']:.2f} dims for variance={eig['dims_for_variance']}")

# %% [markdown]
# ## 5. Pentachoron geometry (Cayley–Menger)
#
# Volumes of random 4-simplices drawn from the whole table; the coefficient of
# variation (std / mean) and the mean-volume ratio against the Gaussian baseline (and the
# random-init table).

# %%
pent = probes.pentachoron_probe(E, N_SIMPLICES, seed=SEED, random_init=E_init)
metrics["pentachoron"] = probes.strip_private(pent)
for k in ("embedding", "gaussian", "random_init"):
    if k in pent:
        r = pent[k]
        print(f"{k:12s} cv={r['cv']:.4f} valid={r['n_valid']}/{r['n_sampled']} mean vol={r['mean']:.6g}"
              + (f"  ({r['reason']})" if r["reason"] else ""))
print(f"volume ratio vs gaussian: {pent['volume_ratio_gaussian']:.4f}")

# %%
fig, ax = plt.subplots(2, 2, figsize=(12, 8))
sns.histplot(ns["_norms"], bins=100, ax=ax[0, 0], color="steelblue")
ax[0, 0].set(title="Row-norm distribution", xlabel="L2 norm")
sns.histplot({"embedding": cos_vals, "gaussian": cos_g_vals}, bins=200, stat="density",
             element="step", ax=ax[0, 1], common_norm=False)
for c in M.NAMED_CONSTANTS.values():
    ax[0, 1].axvline(c, color="grey", ls=":", lw=0.8)
ax[0, 1].set(title="Pairwise cosine (seeded sample)", xlabel="cosine")
ev = eig["_eigenvalues"]
ax[1, 0].semilogy(np.arange(1, min(len(ev), 200) + 1), ev[:200], label=f"embedding (PR={eig['pr']:.1f})")
ax[1, 0].semilogy(np.arange(1, min(len(ev), 200) + 1), eig_g["_eigenvalues"][:200], label=f"gaussian (PR={eig_g['pr']:.1f})")
ax[1, 0].set(title="Covariance eigenspectrum", xlabel="component", ylabel="eigenvalue")
ax[1, 0].legend()
vols = {k: np.log10(v) for k, v in pent["_volumes"].items() if len(v)}
if vols:
    sns.histplot(vols, bins=60, element="step", stat="density", common_norm=False, ax=ax[1, 1])
ax[1, 1].set(title=f"Pentachoron volumes (ratio vs gaussian {pent['volume_ratio_gaussian']:.3f})", xlabel="log10 volume")
fig.suptitle(f"{lm.name}: embedding terrain ({V_} x {D_})")
fig.tight_layout()
plotting.savefig(fig, out, "terrain_map")

# %% [markdown]
# ## 6. Digit manifold
#
# Cosine between the embeddings of the digits 0–9 and its correlation with `|i − j|`
# (a number line shows as a negative correlation, adjacent digits closer).

# %%
dig = probes.digit_manifold(E, lm.tokenizer)
metrics["digits"] = dig
if dig["applicable"]:
    if E_init is not None:
        metrics["digits_random_init"] = probes.digit_manifold(E_init, lm.tokenizer)
    print(f"|i-j| correlation={dig['corr_abs_diff']:.4f} adjacent={dig['adjacent_mean']:.4f} "
          f"non-adjacent={dig['nonadjacent_mean']:.4f} gap={dig['gap']:.4f}")
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    sns.heatmap(dig["cosine"], annot=False, cmap="YlOrRd", ax=ax, xticklabels=range(10), yticklabels=range(10))
    ax.set_title(f"Digit cosine (|i-j| corr={dig['corr_abs_diff']:.3f})")
    plotting.savefig(fig, out, "digits")
else:
    print("Digit manifold: not applicable —", dig["reason"])

# %% [markdown]
# ## 7. Semantic categories
#
# Mean intra-category cosine of single-token words (eight categories from the seed), its
# lift over the global mean cosine, and the cosine matrix of the category centroids.

# %%
cat = probes.category_probe(E, lm.tokenizer, global_mean_cos=cos["mean"])
metrics["categories"] = cat
if cat["applicable"]:
    print(pd.DataFrame(cat["categories"]).T[["n", "intra_cos", "lift"]])
    fig, ax = plt.subplots(figsize=(6.5, 5))
    sns.heatmap(cat["centroid_cosine"], annot=True, fmt=".2f", cmap="RdBu_r", center=0, ax=ax,
                xticklabels=cat["centroid_names"], yticklabels=cat["centroid_names"])
    ax.set_title("Category-centroid cosine")
    plotting.savefig(fig, out, "categories")
else:
    print("Semantic categories: not applicable —", cat["reason"])

# %% [markdown]
# ## 8. Layer-by-layer hidden-state geometry
#
# Mean token norm and mean pairwise cosine between positions of each sequence, per layer
# (embedding output = layer 0), for the seed's ten sentences — every stack the model has
# (T5: encoder and decoder; open_clip: text and vision). Vision stacks read deterministic
# synthetic images (gratings and noise).

# %%
layers = {}
for stack in lm.stacks:
    if stack == "vision":
        hs = lm.hidden_states(probes.synthetic_images(N_IMAGES, lm.image_size, seed=SEED), stack=stack)
    else:
        hs = lm.hidden_states(probes.SENTENCES, stack=stack, max_length=MAX_LENGTH)
    layers[stack] = probes.layer_geometry(hs.layers, hs.mask)
metrics["layers"] = layers
fig, ax = plt.subplots(1, 2, figsize=(12, 4))
for stack, g in layers.items():
    ax[0].plot(g["layer"], g["mean_norm"], "o-", label=stack)
    ax[1].plot(g["layer"], g["mean_cos"], "s-", label=stack)
    print(stack, pd.DataFrame(g)[["layer", "mean_norm", "std_norm", "mean_cos", "std_cos"]].round(4).to_string(index=False), sep="\n")
ax[0].set(title="Mean token norm by layer", xlabel="layer")
ax[1].set(title="Mean pairwise cosine by layer", xlabel="layer")
ax[0].legend()
plotting.savefig(fig, out, "layers")

# %% [markdown]
# ## 9. Special tokens
#
# Norms (and their z-score within the vocabulary) and pairwise cosines of the
# tokenizer's special tokens (T5: pad/eos/unk and sentinels; BERT: [CLS]/[SEP]/...).

# %%
sp = probes.special_tokens(E, lm.tokenizer)
metrics["special_tokens"] = sp
if sp["applicable"]:
    print(pd.DataFrame(sp["tokens"]).T)
else:
    print("Special tokens: not applicable —", sp["reason"])

# %% [markdown]
# ## 10. Relative position bias
#
# T5's learned relative-position bias per head (buckets × heads), one table per stack.

# %%
rpb = probes.relative_position_bias(lm.model)
metrics["position_bias"] = probes.strip_private(rpb)
if rpb["applicable"]:
    w = rpb["_weights"]
    fig, axes = plt.subplots(1, len(w), figsize=(6 * len(w), 3.5), squeeze=False)
    for a, (name, tab) in zip(axes[0], w.items()):
        sns.heatmap(tab.T, cmap="RdBu_r", center=0, ax=a)
        a.set(title=name.split(".")[0] + " bias (heads × buckets)", xlabel="bucket", ylabel="head")
        print(name, {k: round(v, 4) for k, v in rpb["tables"][name].items() if isinstance(v, float)})
    plotting.savefig(fig, out, "position_bias")
else:
    print("Relative position bias: not applicable —", rpb["reason"])

# %% [markdown]
# ## 11. Euclidean distance structure
#
# Pairwise Euclidean distances on a seeded row sample: mean, spread, CV, and mean / √D.

# %%
dist = probes.euclidean_distances(E, n_sample=N_DIST_SAMPLE, seed=SEED)
metrics["distances"] = probes.strip_private(dist)
print({k: round(v, 6) for k, v in dist.items() if isinstance(v, float)})

# %% [markdown]
# ## 12. Input vs output embedding
#
# Where the unembedding (LM head) is a separate matrix: per-token cosine between the two
# tables and the relative Frobenius distance (seed §13a).

# %%
O = lm.output_embeddings()
if O is not None and tuple(O.shape) == tuple(E.shape):
    evo = probes.embed_vs_output(E, O)
    metrics["embed_vs_output"] = probes.strip_private(evo)
    print(f"per-token cosine mean={evo['per_token_cosine']['mean']:.4f}; relative difference="
          f"{evo['frobenius']['relative']:.4f}")
else:
    metrics["embed_vs_output"] = {"applicable": False, "reason": "output embedding tied or absent"}
    print("Input vs output embedding: not applicable — output embedding tied or absent")

# %% [markdown]
# ## 13. Vision-tower embedding tables
#
# For ViTs (DINOv2, open_clip's vision tower): the learned position embeddings and the
# patch-projection filters, with the same PR / cosine / pentachoron measurements.

# %%
vis = {}
for name, T in probes.vision_embedding_tables(lm).items():
    entry = {"shape": list(T.shape), "pr": M.participation_ratio(T),
             "pr_gaussian": M.gaussian_baseline(M.participation_ratio, T, seed=SEED + 1),
             "cosine": M.cosine_stats(T, n_sample=N_COS_SAMPLE, seed=SEED),
             "pentachoron": M.pentachoron_cv(T, N_SIMPLICES, seed=SEED).as_dict() if T.shape[0] >= 5 else None}
    vis[name] = entry
    print(f"{name}: {tuple(T.shape)} PR={entry['pr']:.2f} (gaussian {entry['pr_gaussian']:.2f}) "
          f"cos mean={entry['cosine']['mean']:.4f}")
if not vis:
    print("Vision-tower tables: not applicable — text-only model")
metrics["vision_tables"] = vis

# %% [markdown]
# ## Results
#
# Headline numbers for the composite table, each beside its null baseline: the
# isotropic Gaussian of matched shape and total variance, or the same architecture at
# random init.

# %%
init = lambda key, sub: (metrics.get(key) or {}).get(sub)  # noqa: E731
headline = {
    "pr": results.headline(eig["pr"], baseline=eig_g["pr"], baseline_kind="gaussian", label="PR", fmt=".1f"),
    "pr_over_dim": results.headline(eig["pr_over_dim"], baseline=eig_g["pr_over_dim"], baseline_kind="gaussian",
                                    label="PR / D", fmt=".3f"),
    "pentachoron_cv": results.headline(pent["embedding"]["cv"], baseline=pent["gaussian"]["cv"],
                                       baseline_kind="gaussian", label="pentachoron CV", fmt=".4f"),
    "volume_ratio": results.headline(pent["volume_ratio_gaussian"], baseline=1.0, baseline_kind="gaussian",
                                     label="volume ratio", fmt=".3f"),
    "cosine_mean": results.headline(cos["mean"], baseline=cos_g["mean"], baseline_kind="gaussian",
                                    label="mean cosine", fmt=".4f"),
    "digit_corr": results.headline(dig.get("corr_abs_diff"), baseline=init("digits_random_init", "corr_abs_diff"),
                                   baseline_kind="random_init", label="digit |i-j| corr", fmt=".3f"),
}
if "random_init" in pent:
    headline["pentachoron_cv_init"] = results.headline(pent["embedding"]["cv"], baseline=pent["random_init"]["cv"],
                                                       baseline_kind="random_init", label="pentachoron CV vs init",
                                                       fmt=".4f")
params = {"SEED": SEED, "N_COS_SAMPLE": N_COS_SAMPLE, "N_SIMPLICES": N_SIMPLICES, "N_DIST_SAMPLE": N_DIST_SAMPLE,
          "PCA_ROWS": PCA_ROWS, "RANDOM_INIT_BASELINE": RANDOM_INIT_BASELINE, "N_IMAGES": N_IMAGES,
          "MAX_LENGTH": MAX_LENGTH}
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL, headline=headline, parameters=params)
pd.DataFrame(headline).T[["value", "baseline", "baseline_kind"]]

# %% [markdown]
# ## References
#
# - Seed 001 §1 (T5-Small embedding + layer geometry) and §13a (Qwen3.5 embedding probes).
# - Seed bugs fixed here: pentachora are drawn from the *whole* table (some seed code drew
#   from the first 512 rows); multi-piece digit encodings no longer pick SentencePiece's
#   bare `▁` piece; single-token sequences no longer enter the layer cosine as 0; the
#   Gaussian baseline is isotropic with matched total variance (the seed used the scalar
#   std of all entries in §1 and per-dimension stds — not isotropic — in §13a).
# - P. Gao et al., "A theory of multineuronal dimensionality" (participation ratio);
#   O. Roy & M. Vetterli, "The effective rank" (2007); L. M. Blumenthal, *Theory and
#   Applications of Distance Geometry* (Cayley–Menger determinants).
