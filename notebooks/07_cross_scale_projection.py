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
# # 07 · Cross-scale projection: PCA + orthogonal Procrustes between two models
#
# **Question.** Two models that share a tokenizer each learn an embedding table. Is the
# smaller model's token geometry a rotated, rescaled, lower-dimensional shadow of the
# larger one's? We reduce the wider table to the narrower width with PCA (how much
# variance survives?), fit an orthogonal Procrustes map on anchor tokens, and measure on
# held-out tokens: per-token cosine (with percentiles), relational correlation of pairwise
# cosines, digit structure, the worst and best aligned tokens, pentachoron volumes native
# vs projected, and the eigenspectrum of what the projection leaves unexplained — beside a
# shuffled-pairing null (the same fit with the token correspondence destroyed).
#
# **Seed.** Seed 001 §13b (Qwen3.5-4B → 0.8B). The machinery is generic
# (`geolip_lib.alignment`): any two paired matrices — two layers, two models — align the
# same way. Offline, no two real models share a tokenizer, so the demo aligns a tiny
# model pair sharing a vocabulary and MiniLM against itself at random init; the paper
# profile runs the seed's Qwen3.5 pair.
#
# Fixes relative to the seed: headline numbers use **held-out** tokens only (the seed's
# summary mixed in the anchor tokens the map was fitted on); `orthogonal_procrustes`'
# second output is the sum of singular values, not a scale (the least-squares scale is
# fitted here); per-simplex volumes are paired set by set (the seed truncated two
# independently filtered lists).
#
# Run it by hand in JupyterLab (the defaults below use a tiny model pair and finish in
# seconds), or headless through `python run_all.py --profile demo --notebooks 07_cross_scale_projection`.

# %% tags=["parameters"]
MODEL = "tiny-qwen-wide"  # model A: a params/models/<name>.yaml name; the wider one is projected
MODEL_B = "tiny-qwen"  # model B sharing A's tokenizer; may equal MODEL with B_RANDOM_INIT
B_RANDOM_INIT = False  # use model B at random init: a null comparison
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/<model>
SEED = 42  # seed of every random draw in this notebook; the seed used 42
N_PCA = 50000  # rows used to fit the PCA; capped at the vocabulary; seed: 50000
N_ANCHOR = 10000  # anchor tokens the Procrustes map is fitted on; seed: 10000
N_TEST = 5000  # held-out tokens for evaluation; seed: 5000
N_REL = 1000  # held-out tokens for the relational pairwise-cosine correlation; seed: 1000
N_SIMPLICES = 1000  # pentachora for the native vs projected volumes; seed: 1000
N_SHOW = 20  # worst / best aligned tokens listed; seed: 20
PROCRUSTES_SCALING = True  # fit an isotropic scale with the rotation

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from geolip_lib import alignment as al
from geolip_lib import metrics as M
from geolip_lib import models, plotting, results

NOTEBOOK = "07_cross_scale_projection"
out = results.job_dir(OUT_DIR, NOTEBOOK, f"{MODEL}__{MODEL_B}")
plotting.setup()
rng = np.random.default_rng(SEED)
lm_a = models.load(MODEL)
lm_b = models.load(MODEL_B)
if B_RANDOM_INIT:
    lm_b = lm_b.random_init()
metrics: dict = {"model_a": lm_a.name, "model_b": lm_b.name, "applicable": True}


def vocab_of(lm):
    tok = lm.tokenizer
    return tok.get_vocab() if tok is not None and hasattr(tok, "get_vocab") else None


va, vb = vocab_of(lm_a), vocab_of(lm_b)
reason = None
if va is None or vb is None:
    reason = "both models need a tokenizer (text models) for token-paired embeddings"
elif va != vb:
    reason = "the two models do not share a tokenizer (vocabularies differ)"
if reason:
    metrics["applicable"] = False
    print(f"{lm_a.name} vs {lm_b.name}: cross-scale projection does not apply — {reason}.")

# %% [markdown]
# ## 1. Embedding tables and roles
#
# The wider table is "large" (projected), the narrower one "small" (target), as in the
# seed (4B: 2560-d → 0.8B: 1024-d). Rows are tokens of the shared vocabulary.

# %%
if metrics["applicable"]:
    EA, EB = lm_a.input_embeddings().double().numpy(), lm_b.input_embeddings().double().numpy()
    V = min(EA.shape[0], EB.shape[0], len(va))  # padded tables: keep the real vocabulary rows
    EA, EB = EA[:V], EB[:V]
    swap = EA.shape[1] < EB.shape[1]
    (name_l, E_large), (name_s, E_small) = ((lm_b.name, EB), (lm_a.name, EA)) if swap else \
        ((lm_a.name, EA), (lm_b.name, EB))
    d_small = E_small.shape[1]
    metrics["tables"] = {"vocab": V, "large": name_l, "small": name_s, "d_large": E_large.shape[1],
                         "d_small": d_small}
    print(f"large = {name_l} {E_large.shape}, small = {name_s} {E_small.shape}")
    pd.DataFrame([metrics["tables"]])

# %% [markdown]
# ## 2. PCA of the larger table down to the smaller width
#
# Fitted on `N_PCA` random tokens; the share of variance retained by the top `d_small`
# components says how much of the larger geometry can survive the projection at all.

# %%
if metrics["applicable"]:
    pca_rows = rng.choice(V, size=min(N_PCA, V), replace=False)
    pca = al.pca_fit(E_large[pca_rows], d_small)
    E_proj = al.pca_transform(pca, E_large)
    metrics["pca"] = {"n_rows": len(pca_rows), "variance_retained": pca.variance_retained,
                      "components": d_small}
    print(f"variance retained ({E_large.shape[1]} → {d_small}): {pca.variance_retained:.4f}")

# %% [markdown]
# ## 3. Orthogonal Procrustes on anchor tokens
#
# Centre both sets on the anchor means, fit rotation `R` (and an isotropic scale), apply
# to every token: `aligned = s · (proj − μ_l) R + μ_s`. The null: the same fit after
# shuffling which small-model token each anchor is paired with.

# %%
if metrics["applicable"]:
    anchors, test = al.split_indices(V, N_ANCHOR, N_TEST, seed=SEED)
    fit = al.procrustes_fit(E_proj[anchors], E_small[anchors], scaling=PROCRUSTES_SCALING)
    E_aligned = al.procrustes_apply(fit, E_proj)
    perm = np.random.default_rng(SEED + 1).permutation(V)          # destroys the token pairing
    fit_null = al.procrustes_fit(E_proj[anchors], E_small[perm][anchors], scaling=PROCRUSTES_SCALING)
    E_aligned_null = al.procrustes_apply(fit_null, E_proj)
    metrics["procrustes"] = {"n_anchor": len(anchors), "n_test": len(test), "scale": fit.scale,
                             "singular_sum": fit.singular_sum, "scale_null": fit_null.scale}
    print(f"anchors {len(anchors)}, held-out {len(test)}; fitted scale {fit.scale:.4f} "
          f"(seed's printed 'scale' = singular-value sum {fit.singular_sum:.4f})")

# %% [markdown]
# ## 4. Projection quality on held-out tokens
#
# Per-token cosine and L2 distance between the native small embedding and the aligned
# projection of the large one.

# %%
if metrics["applicable"]:
    cos_test = al.row_cosine(E_small[test], E_aligned[test])
    cos_null = al.row_cosine(E_small[perm][test], E_aligned_null[test])
    dist_test = np.linalg.norm(E_small[test] - E_aligned[test], axis=1)
    metrics["heldout"] = {"cosine": al.percentiles(cos_test), "cosine_shuffled": al.percentiles(cos_null),
                          "l2": al.percentiles(dist_test, ps=(50,)),
                          "worst_test_token": int(test[cos_test.argmin()])}
    pd.DataFrame({"aligned": metrics["heldout"]["cosine"], "shuffled pairing": metrics["heldout"]["cosine_shuffled"]})

# %% [markdown]
# ## 5. Relational structure after projection
#
# Pearson correlation between the pairwise cosines of `N_REL` held-out tokens in the
# native small space and in the aligned projection (and, before any projection, in the
# native large space: pairwise cosines need no alignment).

# %%
if metrics["applicable"]:
    rel_idx = test[:N_REL]
    rel = al.relational_correlation(E_small[rel_idx], E_aligned[rel_idx])
    rel_native = al.relational_correlation(E_small[rel_idx], E_large[rel_idx])
    rel_null = al.relational_correlation(E_small[perm][rel_idx], E_aligned[rel_idx])
    metrics["relational"] = {"r": rel["r"], "mean_abs_diff": rel["mean_abs_diff"], "r_native_large": rel_native["r"],
                             "r_shuffled": rel_null["r"], "n": len(rel_idx)}
    pd.DataFrame([metrics["relational"]])

# %% [markdown]
# ## 6. Digit geometry after projection
#
# Tokens "0"–"9" (single-token digits of the shared tokenizer): per-digit cosine and the
# correlation of the 10 × 10 pairwise-cosine structure.

# %%
digit = None
if metrics["applicable"]:
    tok = lm_a.tokenizer
    ids = [tok.encode(str(d), add_special_tokens=False) for d in range(10)]
    if all(len(i) == 1 and i[0] < V for i in ids):
        dig = np.array([i[0] for i in ids])
        cs, ca = al.pairwise_cosine(E_small[dig]), al.pairwise_cosine(E_aligned[dig])
        dr = al.relational_correlation(E_small[dig], E_aligned[dig])
        digit = {"token_ids": dig, "per_digit_cos": al.row_cosine(E_small[dig], E_aligned[dig]),
                 "r": dr["r"], "mean_abs_diff": dr["mean_abs_diff"], "diff": cs - ca}
        print(f"digit pairwise-structure correlation r = {dr['r']:.4f}")
    else:
        print("digit structure: not applicable — digits are not single tokens of this tokenizer")
    metrics["digits"] = None if digit is None else {k: v for k, v in digit.items() if k != "diff"}

# %% [markdown]
# ## 7. Largest divergences and the alignment distribution
#
# Per-token cosine over the whole vocabulary (anchor tokens flagged: the map was fitted on
# them), the worst and best aligned tokens, and the share of tokens above thresholds.

# %%
if metrics["applicable"]:
    all_cos = al.row_cosine(E_small, E_aligned)
    is_anchor = np.zeros(V, bool)
    is_anchor[anchors] = True
    order = np.argsort(all_cos, kind="stable")
    ids_to_tok = lm_a.tokenizer.convert_ids_to_tokens

    def token_rows(idx):
        return pd.DataFrame({"token_id": idx, "token": ids_to_tok([int(i) for i in idx]),
                             "cos": all_cos[idx], "anchor": is_anchor[idx]})

    worst, best = token_rows(order[:N_SHOW]), token_rows(order[::-1][:N_SHOW])
    metrics["divergences"] = {"worst": worst.to_dict("records"), "best": best.to_dict("records"),
                              "all_tokens_cosine": al.percentiles(all_cos, ps=(50,)),
                              "fraction_above_heldout": al.threshold_fractions(cos_test),
                              "fraction_above_all": al.threshold_fractions(all_cos)}
    print("worst aligned tokens")
    display(worst)
    best

# %%
if metrics["applicable"]:
    pd.DataFrame({"held-out": metrics["divergences"]["fraction_above_heldout"],
                  "all tokens": metrics["divergences"]["fraction_above_all"]}).rename_axis("cos >")

# %% [markdown]
# ## 8. Pentachoron geometry in projected vs native space
#
# The same `N_SIMPLICES` random 5-token sets measured in the native small space and in the
# aligned projection (Cayley–Menger volumes, `geolip_lib.metrics`): volume ratio, CVs and
# per-simplex correlation.

# %%
if metrics["applicable"]:
    sets = M.sample_distinct_rows(V, N_SIMPLICES, 5, seed=SEED)
    vol = al.paired_volumes(E_small, E_aligned, sets)
    metrics["pentachoron"] = {k: v for k, v in vol.items() if k not in ("vol_a", "vol_b")}
    pd.DataFrame([metrics["pentachoron"]])

# %% [markdown]
# ## 9. Eigenspectrum of the residual and the seed's 2 × 3 figure
#
# What the small model has that the aligned projection of the large one does not: the
# spectrum of the held-out residual `native − projected`.

# %%
if metrics["applicable"]:
    res_eig = al.residual_spectrum(E_small[test], E_aligned[test])
    metrics["residual"] = {"eigenvalues_top": res_eig[:50], "pr": M.participation_ratio_from_eigenvalues(res_eig),
                           "total": float(res_eig.sum())}
    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    fig.suptitle(f"{name_l} → {name_s}: PCA + Procrustes projection", fontsize=14)
    ax = axes[0, 0]
    sns.histplot(cos_test, bins=60, ax=ax, color="steelblue", stat="density", label="held-out")
    sns.histplot(cos_null, bins=60, ax=ax, color="grey", stat="density", alpha=0.4, label="shuffled pairing")
    ax.axvline(cos_test.mean(), color="red", ls="--", label=f"mean={cos_test.mean():.3f}")
    ax.set_title("per-token cosine(native, projected)")
    ax.legend()
    ax = axes[0, 1]
    ax.scatter(rel["a"], rel["b"], s=1, alpha=0.05, color="darkgreen")
    lo, hi = float(rel["a"].min()), float(rel["a"].max())
    ax.plot([lo, hi], [lo, hi], "r--", alpha=0.5)
    ax.set(xlabel=f"native {name_s} pairwise cosine", ylabel=f"projected {name_l} pairwise cosine",
           title=f"relational structure (r={rel['r']:.4f})")
    ax = axes[0, 2]
    if digit is not None:
        sns.heatmap(digit["diff"], ax=ax, cmap="RdBu_r", center=0, square=True, cbar_kws={"shrink": 0.7})
        ax.set_title(f"digit cosine diff, native − projected (r={digit['r']:.3f})")
    else:
        ax.axis("off")
        ax.set_title("digits: not single tokens")
    ax = axes[1, 0]
    ax.scatter(vol["vol_a"], vol["vol_b"], s=5, alpha=0.3, color="purple")
    if vol["n_valid"]:
        lo_ = float(min(vol["vol_a"].min(), vol["vol_b"].min()))
        hi_ = float(max(vol["vol_a"].max(), vol["vol_b"].max()))
        ax.plot([lo_, hi_], [lo_, hi_], "r--", alpha=0.5)
        ax.set(xscale="log", yscale="log")  # volumes scale as s^4: log axes keep both visible
    ax.set(xlabel=f"native {name_s} volume", ylabel=f"projected {name_l} volume",
           title=f"pentachoron volumes (r={vol.get('corr', float('nan')):.4f}, "
                 f"ratio={vol.get('ratio', float('nan')):.3g})")
    ax = axes[1, 1]
    step = max(1, V // 5000)
    ax.scatter(np.arange(0, V, step), all_cos[::step], s=1, alpha=0.3, color="darkorange")
    ax.axhline(all_cos.mean(), color="red", ls="--", alpha=0.5)
    ax.set(xlabel="token id", ylabel="cosine alignment", title="alignment vs token id (anchors included)")
    ax = axes[1, 2]
    ax.semilogy(np.arange(min(200, len(res_eig))), np.maximum(res_eig[:200], 1e-300), color="crimson")
    ax.set(xlabel="component", ylabel="variance", title="eigenspectrum of residual (native − projected)")
    fig.tight_layout()
    plotting.savefig(fig, out, "projection_2x3")

# %% [markdown]
# ## Results
#
# Headline numbers (held-out tokens) beside the shuffled-pairing null.

# %%
headline = {}
if metrics["applicable"]:
    headline = {
        "variance_retained": results.headline(pca.variance_retained, label="PCA variance retained", fmt=".3f"),
        "cos_heldout": results.headline(float(cos_test.mean()), baseline=float(cos_null.mean()),
                                        baseline_kind="shuffled", label="held-out cosine", fmt=".4f"),
        "relational_r": results.headline(rel["r"], baseline=rel_null["r"], baseline_kind="shuffled",
                                         label="relational r", fmt=".4f"),
        "volume_corr": results.headline(vol.get("corr"), label="pentachoron vol corr", fmt=".4f"),
    }
    if digit is not None:
        headline["digit_r"] = results.headline(digit["r"], label="digit structure r", fmt=".4f")
    print(f"PCA variance retained: {pca.variance_retained * 100:.1f}%")
    print(f"held-out cosine: mean {cos_test.mean():.4f} median {np.median(cos_test):.4f} "
          f"(shuffled pairing {cos_null.mean():.4f})")
    print(f"relational r: {rel['r']:.4f} (native large {rel_native['r']:.4f}, shuffled {rel_null['r']:.4f})")
    print(f"pentachoron ratio (proj/native) {vol.get('ratio', float('nan')):.4f}, "
          f"per-simplex r {vol.get('corr', float('nan')):.4f}")
params = {"MODEL_B": MODEL_B, "B_RANDOM_INIT": B_RANDOM_INIT, "SEED": SEED, "N_PCA": N_PCA, "N_ANCHOR": N_ANCHOR,
          "N_TEST": N_TEST, "N_REL": N_REL, "N_SIMPLICES": N_SIMPLICES, "N_SHOW": N_SHOW,
          "PROCRUSTES_SCALING": PROCRUSTES_SCALING}
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL, headline=headline, parameters=params)
pd.DataFrame(headline).T[["value", "baseline", "baseline_kind"]] if headline else None

# %% [markdown]
# ## References
#
# - Seed 001 §13b: Qwen3.5 cross-scale projection (4B → 0.8B).
# - Schönemann (1966), a generalized solution of the orthogonal Procrustes problem;
#   `scipy.linalg.orthogonal_procrustes`.
