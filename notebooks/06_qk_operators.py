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
# # 06 · Per-head QK operators across layers
#
# **Question.** Every attention head scores token pairs with a bilinear form
# $x_i^\top g_L^h x_j$, where $g_L^h = W_Q^{h\top} W_K^h$ (hidden × hidden, rank ≤ head_dim;
# with grouped-query attention query head $h$ reads kv head $h \,/\!/\, (H/H_{kv})$).
# Is head $h$ the *same operator* in every layer, up to a scalar? Or do layers share only
# the spectral shape, with different eigenvectors? We measure (a) the operator cosine
# between layers, (b) the residual after the best scalar rescale, (c) whether the signs of
# the largest eigenvalues of the symmetric part ("curvature signs") agree with an anchor
# layer, and (d) the principal angles between top-k eigen-subspaces — each beside the
# same architecture at random initialisation.
#
# **Seed.** Seed 004 (analysis of Qwen3-4B's QK operators), plus its missing measuring
# step, written here: `geolip_lib.operators` keeps every operator factored, so
# $\|g\|_F^2 = \mathrm{tr}((QQ^\top)(KK^\top))$, the layer-pair gram
# $\langle g_L, g_{L'}\rangle_F = \mathrm{tr}((Q_LQ_{L'}^\top)(K_{L'}K_L^\top))$ and the
# 2·head_dim nonzero eigenvalues of $S=(g+g^\top)/2$ come from head_dim-sized problems —
# no hidden² matrix is ever built. Works for every attention group a model has
# (decoder LMs, BERT/MiniLM, T5 self **and** cross attention, ViTs) through the weight
# catalog.
#
# Run it by hand in JupyterLab (the defaults below use a tiny model and finish in
# seconds), or headless through `python run_all.py --profile demo --notebooks 06_qk_operators`.

# %% tags=["parameters"]
MODEL = "tiny-qwen"  # a params/models/<name>.yaml name
OUT_DIR = None  # job directory for metrics.json, PNGs and the saved operators; None -> reports/adhoc/...
SEED = 0  # unused by the (deterministic) measurement; kept for the template's contract
TOP_K = 8  # eigen-directions per layer and head kept for the principal angles (seed: topk of measure.py)
ANCHOR = -1  # anchor layer position within each group; -1 = last layer as in the seed
SIGN_KS = [2, 4, 8, 16, 32, 64, 128, 256]  # top-k sizes for the curvature-sign agreement (seed's list)
RANDOM_INIT_BASELINE = True  # also measure the same architecture at random init (null baseline)
GROUPS = None  # list of attention groups to measure such as decoder.self; None = all
SAVE_OPERATORS = True  # write qk_<group>.json + .safetensors into the job directory

# %%
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from geolip_lib import models, operators, plotting, results

NOTEBOOK = "06_qk_operators"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
lm = models.load(MODEL)
metrics: dict = {"model": {"name": lm.name, "family": lm.family}}
print(f"{lm.name} ({lm.family})")

# %% [markdown]
# ## 1. Measure (the seed's missing `measure.py`)
#
# For every attention group and every layer × head: $\|g\|_F^2$, the layer-pair gram,
# all 2·head_dim nonzero eigenvalues of the symmetric part sorted by magnitude, and the
# top-k eigen-directions (hidden-dim unit vectors). Saved as JSON + safetensors (never
# pickle). The seed's own pitfall is respected: $\|W_K W_Q^\top\|_F$ is *not*
# $\|g\|_F$; normalisation uses the gram diagonal.

# %%
def measure(model, tag):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # q/k-norm notice is recorded in each group's meta
        res = operators.measure_model(model, top_k=TOP_K, groups=GROUPS, meta={"model": MODEL, "variant": tag})
    return res, time.perf_counter() - t0


ops, t_measure = measure(lm, "trained")
null_ops, t_null = measure(lm.random_init(), "random_init") if RANDOM_INIT_BASELINE else ({}, 0.0)
if not ops:
    print(f"{MODEL}: no query/key weights found — the QK-operator probe does not apply to this model.")
rows = []
for g, o in ops.items():
    rows.append({"group": g, "layers": len(o.layers), "heads": o.n_heads, "kv_heads": o.n_kv_heads,
                 "head_dim": o.head_dim, "hidden": o.hidden, "top_k": o.top_k,
                 "qk_norm": bool(o.meta.get("qk_norm")), "layer_ids": str(o.layers)})
    if SAVE_OPERATORS:
        operators.save(o, out / f"qk_{g.replace('#', '_')}")
        if g in null_ops:
            operators.save(null_ops[g], out / f"qk_{g.replace('#', '_')}_random_init")
metrics["measure"] = {"groups": rows}  # timings are printed, not recorded: metrics.json stays deterministic
print(f"measured in {t_measure:.2f}s (random init {t_null:.2f}s)")
pd.DataFrame(rows)

# %% [markdown]
# A structural fact worth knowing before reading (c): $S = \tfrac12 M^\top J M$ with
# $M=[Q;K]$ and $J=\begin{psmallmatrix}0&I\\I&0\end{psmallmatrix}$, whose inertia is
# (head_dim, head_dim). By Sylvester's law of inertia, whenever $M$ has full rank every
# head has exactly head_dim positive and head_dim negative eigenvalues — the fraction of
# positive eigenvalues over all 2·head_dim is **0.5 by construction** (the seed's "locked
# 0.500 QK balance" is this identity). Only the sign pattern among the *top-k* is
# informative.

# %%
analyses = {g: operators.analyse(o, anchor=ANCHOR, ks=SIGN_KS) for g, o in ops.items()}
null_an = {g: operators.analyse(o, anchor=ANCHOR, ks=SIGN_KS) for g, o in null_ops.items()}


def pair(g, key):
    """(trained, random-init) value of a scalar analysis key."""
    return analyses[g][key], (null_an[g][key] if g in null_an else None)


# %% [markdown]
# ## 2. (a) Operator cosine similarity between layers
#
# $\cos(g_L^h, g_{L'}^h) = \mathrm{gram}/\sqrt{\mathrm{gram}_{LL}\,\mathrm{gram}_{L'L'}}$,
# averaged over heads: ≈ 1 means the same operator up to a scalar, ≈ 0 distinct operators.

# %%
ng = max(len(ops), 1)
fig, axes = plt.subplots(ng, 2, figsize=(10, 4.2 * ng), squeeze=False)
for i, (g, a) in enumerate(analyses.items()):
    for j, (an, title) in enumerate([(a, "trained"), (null_an.get(g), "random init")]):
        ax = axes[i, j]
        if an is None:
            ax.axis("off")
            continue
        sns.heatmap(np.asarray(an["cos_matrix"]), ax=ax, cmap="RdBu_r", vmin=-1, vmax=1, square=True,
                    xticklabels=an["layers"], yticklabels=an["layers"], cbar_kws={"shrink": 0.7})
        ax.set_title(f"{g} · {title}: operator cos-sim (mean over heads)")
        ax.set_xlabel("layer")
        ax.set_ylabel("layer")
fig.tight_layout()
plotting.savefig(fig, out, "cos_matrix")

tab = []
for g, a in analyses.items():
    adj = np.asarray(a["adjacent_cos"])
    tab.append({"group": g, "diag (should be 1)": a["diag_cos_mean"],
                "adjacent mean": a["adjacent_mean"], "adjacent min": adj.min() if adj.size else np.nan,
                "adjacent max": adj.max() if adj.size else np.nan,
                "first→anchor": float(a["cos_to_anchor"][0]),
                "mid→anchor": float(a["cos_to_anchor"][len(a["layers"]) // 2]),
                "adjacent mean (random init)": pair(g, "adjacent_mean")[1]})
pd.DataFrame(tab)

# %% [markdown]
# ## 3. (b) Scalar-rescale residual to the anchor
#
# The best scalar $T = \langle g_L, g_a\rangle / \|g_a\|^2$ and the fraction of
# $\|g_L\|$ it leaves unexplained, $\sqrt{1-\cos^2}$, per layer (means over heads).

# %%
resc_rows = []
for g, a in analyses.items():
    for i, L in enumerate(a["layers"]):
        resc_rows.append({"group": g, "layer": L, "cos": float(a["rescale"]["mean_cos"][i]),
                          "T_opt": float(a["rescale"]["mean_T"][i]),
                          "resid_frac": float(a["rescale"]["mean_resid_frac"][i]),
                          "resid_frac (random init)": (float(null_an[g]["rescale"]["mean_resid_frac"][i])
                                                       if g in null_an else np.nan)})
resc = pd.DataFrame(resc_rows)
resc

# %% [markdown]
# ## 4. (c) Curvature-sign agreement with the anchor
#
# For each layer and head, the fraction of the top-k eigenvalues (by magnitude) whose
# sign matches the anchor's i-th eigenvalue; 0.5 is chance. Bands are thirds of the stack.

# %%
sign_rows = []
for g, a in analyses.items():
    for k, s in a["sign_agreement"].items():
        row = {"group": g, "k": k, "mean": s["mean"], **s["bands"]}
        if g in null_an and k in null_an[g]["sign_agreement"]:
            row["mean (random init)"] = null_an[g]["sign_agreement"][k]["mean"]
        sign_rows.append(row)
display_signs = pd.DataFrame(sign_rows)

fig, axes = plt.subplots(1, 2, figsize=(12, 4))
palette = dict(zip(analyses, sns.color_palette("deep", max(len(analyses), 1))))
for g, a in analyses.items():
    c = palette[g]
    kk = min(TOP_K, max(a["sign_agreement"]) if a["sign_agreement"] else TOP_K)
    k_use = max([k for k in a["sign_agreement"] if k <= kk] or [min(a["sign_agreement"] or [1])])
    if a["sign_agreement"]:
        axes[0].plot(a["layers"], np.asarray(a["sign_agreement"][k_use]["per_layer"]), "o-", color=c,
                     label=f"{g} (top-{k_use})")
        if g in null_an:
            axes[0].plot(a["layers"], np.asarray(null_an[g]["sign_agreement"][k_use]["per_layer"]), "x--",
                         color=c, alpha=0.6, label=f"{g} random init")
    axes[1].plot(a["layers"], np.asarray(a["frac_positive_topk"]), "o-", color=c, label=f"{g} top-{a['frac_positive_k']}")
    axes[1].plot(a["layers"], np.asarray(a["frac_positive"]), "k:", alpha=0.5)
axes[0].axhline(0.5, color="grey", lw=0.8)
axes[0].set(title="sign agreement with anchor, by depth", xlabel="layer", ylabel="fraction agreeing")
axes[1].set(title="fraction of positive eigenvalues (dotted: all 2·head_dim ≡ 0.5)", xlabel="layer",
            ylabel="fraction > 0")
for ax in axes:
    ax.legend(fontsize=8)
fig.tight_layout()
plotting.savefig(fig, out, "sign_agreement")
display_signs

# %% [markdown]
# ## 5. (d) Principal angles between top-k eigen-subspaces
#
# Per head, the principal angles between span{top-k eigen-directions of layer L} and the
# anchor's; reported as the mean and min cosine of the angles and the top-1 overlap
# $\langle u_0^L, u_0^a\rangle^2$. For random k-subspaces of a hidden-dim space the
# expected squared overlap is k/hidden.

# %%
pa_rows = []
for g, a in analyses.items():
    pa = a["principal_angles"]
    for i, L in enumerate(a["layers"]):
        pa_rows.append({"group": g, "layer": L, "meanCosPA": float(pa["mean_cos"][i]),
                        "minCosPA": float(pa["min_cos"][i]), "mean angle (deg)": float(pa["mean_deg"][i]),
                        "top1 overlap": float(pa["top1_overlap"][i]),
                        "mean angle (deg, random init)": (float(null_an[g]["principal_angles"]["mean_deg"][i])
                                                          if g in null_an else np.nan)})
pa_df = pd.DataFrame(pa_rows)
fig, ax = plt.subplots(figsize=(7, 4))
if len(pa_df):
    sns.lineplot(data=pa_df, x="layer", y="mean angle (deg)", hue="group", marker="o", ax=ax)
    for g in null_an:
        sub = pa_df[pa_df.group == g]
        ax.plot(sub["layer"], sub["mean angle (deg, random init)"], "x--", alpha=0.6, label=f"{g} random init")
    ax.axhline(90, color="grey", lw=0.8)
    ax.legend(fontsize=8)
ax.set(title=f"top-{TOP_K} eigen-subspace principal angles to the anchor", ylabel="mean angle (deg)")
fig.tight_layout()
plotting.savefig(fig, out, "principal_angles")
pa_df

# %% [markdown]
# ## 6. Verdict
#
# The seed's thresholds on the mean operator cosine to the anchor (the anchor itself
# excluded — the seed averaged its self-cosine 1.0 in): > 0.9 STRONG, > 0.5 MEDIUM,
# > 0.1 WEAK, else REJECTED.

# %%
verdicts = []
for g, a in analyses.items():
    b = null_an.get(g)
    verdicts.append({"group": g, "mean cos to anchor": a["mean_cos_to_anchor"], "adjacent": a["adjacent_mean"],
                     "verdict": a["verdict"],
                     "mean cos to anchor (random init)": b["mean_cos_to_anchor"] if b else np.nan,
                     "verdict (random init)": b["verdict"] if b else ""})
    print(f"{g}: mean operator cos-sim to anchor {a['mean_cos_to_anchor']:+.4f}, adjacent {a['adjacent_mean']:+.4f}"
          f" -> {a['verdict']}")
pd.DataFrame(verdicts)

# %% [markdown]
# ## Results
#
# Headline numbers for the first attention group (decoder self-attention for LMs,
# encoder for BERT/T5, vision for ViTs) beside the same architecture at random init;
# every group's full analysis is in `metrics.json`.

# %%
metrics["groups"] = {g: {"analysis": analyses[g], "random_init": null_an.get(g),
                         "fro_sq_mean": float(ops[g].fro_sq.mean()),
                         "abs_eig_top8_mean_over_heads": ops[g].sym_eigs[..., :8].abs().mean(1)}
                     for g in ops}
metrics["verdicts"] = verdicts
headline = {}
if ops:
    g0 = next(iter(ops))
    a0, b0 = analyses[g0], null_an.get(g0)
    not_anchor = [i for i in range(len(a0["layers"])) if i != a0["anchor_position"]]
    k0 = max([k for k in a0["sign_agreement"] if k <= TOP_K] or [None])

    def pa_mean(an):
        return float(np.asarray(an["principal_angles"]["mean_deg"])[not_anchor].mean()) if not_anchor else None

    headline = {
        "cos_to_anchor": results.headline(a0["mean_cos_to_anchor"], baseline=b0 and b0["mean_cos_to_anchor"],
                                          baseline_kind="random_init", label=f"{g0} cos→anchor", fmt="+.4f"),
        "cos_adjacent": results.headline(a0["adjacent_mean"], baseline=b0 and b0["adjacent_mean"],
                                         baseline_kind="random_init", label="cos adjacent", fmt="+.4f"),
        "pa_deg": results.headline(pa_mean(a0), baseline=b0 and pa_mean(b0), baseline_kind="random_init",
                                   label=f"top-{TOP_K} PA (deg)", fmt=".1f"),
    }
    if k0 is not None:
        headline["sign_agree"] = results.headline(
            a0["sign_agreement"][k0]["mean"], baseline=b0 and b0["sign_agreement"][k0]["mean"],
            baseline_kind="random_init", label=f"sign agree top-{k0}", fmt=".3f")
params = {"SEED": SEED, "TOP_K": TOP_K, "ANCHOR": ANCHOR, "SIGN_KS": SIGN_KS,
          "RANDOM_INIT_BASELINE": RANDOM_INIT_BASELINE, "GROUPS": GROUPS, "SAVE_OPERATORS": SAVE_OPERATORS}
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL, headline=headline, parameters=params)
pd.DataFrame(headline).T[["value", "baseline", "baseline_kind"]] if headline else None

# %% [markdown]
# ## References
#
# - Seed 004: operator-level inter-layer alignment of Qwen3-4B's QK operators (the
#   analysis script; its `measure.py` is re-implemented by `geolip_lib.operators`).
# - Seed 001 summary table ("cross-attention QK balance locked at 0.500" — see the
#   Sylvester-inertia note in §1).
# - Björck & Golub (1973), numerical methods for computing angles between linear subspaces.
