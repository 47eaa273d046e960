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
# layer, (d) the principal angles between top-k eigen-subspaces, and (e) the question the
# seed asks: operator cosine vs *spectral* cosine (the cosine between the sorted
# eigen-spectra of two layers' operators) — each beside the same architecture at random
# initialisation.
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
SEED = 0  # [0 ≤ x < 2**32] seed of the bootstrap behind the intervals (the measurement itself is deterministic)
TOP_K = 8  # [1 ≤ x ≤ 2**16] eigen-directions per layer and head kept for the principal angles (seed: topk of measure.py)
ANCHOR = -1  # [any] anchor layer position within each group; -1 is the last layer, as in the seed
SIGN_KS = [2, 4, 8, 16, 32, 64, 128, 256]  # [len(x) ≥ 1 and all(k ≥ 1 for k in x)] top-k sizes for the curvature-sign agreement (seed's list)
RANDOM_INIT_BASELINE = True  # also measure the same architecture at random init (null baseline)
TWIN_MAX_PARAMS = 1_000_000_000  # [x ≥ 0] above this many parameters the random-init twin is generated tensor by tensor
GROUPS = None  # [x is None or len(x) ≥ 1] list of attention groups to measure, such as decoder.self; None measures all
SAVE_OPERATORS = True  # write qk_<group>.json + .safetensors into the job directory

# %%
import time
import warnings

import numpy as np
import pandas as pd

from geolip_lib import metrics as M
from geolip_lib import families, operators, results, runtime
from geolip_lib.operators import plots, tables
from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT

job = runtime.start("06_qk_operators", globals())  # job dir, plot style, inline figures, seeds, job.lm = MODEL
lm = job.lm
metrics: dict = {"model": {"name": lm.name, "family": lm.family}}
not_run: dict = {}  # section title -> why it cannot run on this model (recorded in metrics.json, shown on the index)
print(f"Measuring {lm.name} ({lm.family}).")

# %% [markdown]
# ## 1. Measure (the seed's missing `measure.py`)
#
# For every attention group and every layer × head: $\|g\|_F^2$, the layer-pair gram,
# all 2·head_dim nonzero eigenvalues of the symmetric part sorted by magnitude, and the
# top-k eigen-directions (hidden-dim unit vectors). Saved as JSON + safetensors (never
# pickle). The seed's own pitfall is respected: $\|W_K W_Q^\top\|_F$ is *not*
# $\|g\|_F$; normalisation uses the gram diagonal. The null is the same architecture at
# random initialisation (`lm.random_init_weights`): built whole in memory up to
# `TWIN_MAX_PARAMS` parameters; above (Qwen3-4B, T5-v1.1-XXL, CLIP ViT-bigG) each query/key
# matrix is generated when it is read, with the model's own initialisation and a seed of
# its own (`geolip_lib.models.twin`), so the twin is never held whole nor written to disk.
# The null is a distribution over 5 init seeds; at initialisation the layers are i.i.d., so
# only the first seed's twin is measured whole (what the tables and figures show), and the
# other seeds measure a sample of each group's layers (position 0 and `m − 1` more,
# `m = max(2, ⌈L / 5⌉)`, generated alone): about two models' cost, not five. Every seed
# enters the headline null with the same number of sampled layers (the first seed's sample
# is read from its whole measurement), and the interval is the prediction interval of one
# whole model (`operators.nulls`, `metrics.sampled_null`). The layers sampled are recorded
# as `metrics["random_init_null"]`; the sampled seeds are shared through the null cache.

# %%
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the q/k-norm notice is recorded in each group's meta
    ops = operators.measure_model(lm, top_k=TOP_K, groups=GROUPS, meta={"model": MODEL, "variant": "trained"})
    t_measure = time.perf_counter() - t0
    # the null is a distribution: the random-init twin with N_NULL_SEEDS init seeds (params.seed + 1 + k)
    o0 = next(iter(ops.values()), None)  # the headline's top-k of the sign agreement (first group's eigenvalues)
    k0 = max([k for k in SIGN_KS if o0 is not None and k <= min(TOP_K, 2 * o0.head_dim)] or [None])
    rnull = operators.nulls.operator_null(lm, M.intervals.N_NULL_SEEDS if RANDOM_INIT_BASELINE and ops else 0,
                                          k=k0, top_k=TOP_K, groups=GROUPS, max_params=TWIN_MAX_PARAMS, model=MODEL)
    null_ops = rnull.first  # the first seed, every layer: the one tables and figures show
t_null = time.perf_counter() - t0 - t_measure

# %%
if not ops:
    not_run["QK operators (every section)"] = families.attention_skipped(lm, 'QK-operator probe',
                                                                         'no query/key weights found')
    print(f"{not_run['QK operators (every section)']}")
metrics["random_init_null"] = rnull.drivers  # seeds, layers sampled per group (the plan counts them)
metrics["measure"] = {"groups": tables.group_rows(ops)}  # timings are printed, not recorded: metrics.json stays deterministic
print(f"Measured in {t_measure:.2f} s (random init {t_null:.2f} s).")
job.table(pd.DataFrame(metrics["measure"]["groups"]), caption="Attention groups measured", index=False)

# %%
if SAVE_OPERATORS:
    for g, o in ops.items():
        operators.save(o, job.out / f"qk_{g.replace('#', '_')}")
        if g in null_ops:
            operators.save(null_ops[g], job.out / f"qk_{g.replace('#', '_')}_random_init")

# %% [markdown]
# A structural fact worth knowing before reading (c): $S = \tfrac12 M^\top J M$ with
# $M=[Q;K]$ and $J=\left(\begin{smallmatrix}0&I\\I&0\end{smallmatrix}\right)$, whose inertia is
# (head_dim, head_dim). By Sylvester's law of inertia, whenever $M$ has full rank every
# head has exactly head_dim positive and head_dim negative eigenvalues — the fraction of
# positive eigenvalues over all 2·head_dim is **0.5 per head by construction**, so only the
# sign pattern among the *top-k* is informative here. This per-head identity is *not* the
# seed's "cross-attention QK balance locked at 0.500": the seed measured a layer-level
# form, where nothing forces 0.5. The project's one statement on the QK sign balance
# (`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT`, measured by notebook 02):

# %%
print(f"{QK_BALANCE_STATEMENT}")
analyses = {g: operators.analyse(o, anchor=ANCHOR, ks=SIGN_KS) for g, o in ops.items()}
null_an = {g: operators.analyse(o, anchor=ANCHOR, ks=SIGN_KS) for g, o in null_ops.items()}

# %% [markdown]
# ## 2. (a) Operator cosine similarity between layers
#
# $\cos(g_L^h, g_{L'}^h) = \mathrm{gram}/\sqrt{\mathrm{gram}_{LL}\,\mathrm{gram}_{L'L'}}$,
# averaged over heads: ≈ 1 means the same operator up to a scalar, ≈ 0 distinct operators.

# %%
if ops:  # no attention group: no figure (the reason is in not_run)
    job.figure(plots.cosine_matrices(analyses, null_an), "cos_matrix", key=True)
job.table(tables.cosine_table(analyses, null_an), caption="Operator cosine between layers (means over heads)",
          index=False)

# %% [markdown]
# ## 3. (b) Scalar-rescale residual to the anchor
#
# The best scalar $T = \langle g_L, g_a\rangle / \|g_a\|^2$ and the fraction of
# $\|g_L\|$ it leaves unexplained, $\sqrt{1-\cos^2}$, per layer (means over heads).

# %%
job.table(tables.rescale_table(analyses, null_an), caption="Scalar rescale onto the anchor, per layer "
          "(means over heads)", index=False)

# %% [markdown]
# ## 4. (c) Curvature-sign agreement with the anchor
#
# For each layer and head, the fraction of the top-k eigenvalues (by magnitude) whose
# sign matches the anchor's i-th eigenvalue; 0.5 is chance. Bands are thirds of the stack.

# %%
if ops:  # no attention group: no figure (the reason is in not_run)
    job.figure(plots.sign_agreement(analyses, null_an, TOP_K), "sign_agreement")
job.table(tables.sign_table(analyses, null_an), caption="Top-k sign agreement with the anchor (0.5 = chance), "
          "by depth band", index=False)

# %% [markdown]
# ## 5. (d) Principal angles between top-k eigen-subspaces
#
# Per head, the principal angles between span{top-k eigen-directions of layer L} and the
# anchor's; reported as the mean and min cosine of the angles and the top-1 overlap
# $\langle u_0^L, u_0^a\rangle^2$. For random k-subspaces of a hidden-dim space the
# expected squared overlap is k/hidden.

# %%
if ops:  # no attention group: no figure (the reason is in not_run)
    job.figure(plots.principal_angles(analyses, null_an, TOP_K), "principal_angles", key=True)
job.table(tables.principal_angle_table(analyses, null_an), caption=f"Top-{TOP_K} eigen-subspace principal angles "
          "to the anchor, per layer", index=False)

# %% [markdown]
# ## 6. Verdict
#
# The seed's grades of the mean operator cosine to the anchor: above 0.9 STRONG, above 0.5
# MEDIUM, above 0.1 WEAK, else REJECTED. The table gives that mean two ways. **The seed's
# arithmetic**, as its verdict cell computes it: per layer the mean over heads of the signed
# cosine to the anchor, then the mean over *every* layer, the anchor's cosine with itself (1)
# included. **The project's**: the same with the anchor left out, since its self-cosine says
# nothing about alignment and lifts the mean by $(1-\text{mean})/L$ — about $1/L$ where the
# operators are orthogonal, so a 6-layer stack reads WEAK by the seed's arithmetic even at
# random init. The two are tied exactly: seed $= ((L-1)\cdot$project$ + 1)/L$. Both are
# recorded for the claims (`metrics.claims`: the seed's as the headline, the project's as
# `project`).
#
# Each headline below is a mean over **every** layer pair and head of the group: an exact
# function of the weights, with nothing sampled, so the headline shows it as exact ("exact
# (all N layer pairs …)"). The bootstrap over what it averages — the layer pairs (each
# pair's mean over its heads) when a stack has at least four, else the (layer pair, head)
# cells (`operators.headline_samples`) — is kept in the verdict and spectral tables: it
# says how much the average rests on which pairs and heads the model happens to have. The
# random-init null is a distribution: the same analysis on 5 random-init twins (init
# seeds `params.seed + 1 + k`), its interval the 95 % prediction interval over them.

# %%
samples = {g: operators.headline_samples(o, anchor=ANCHOR, k=k0) for g, o in ops.items()}
null_samples = {g: operators.headline_samples(o, anchor=ANCHOR, k=k0) for g, o in null_ops.items()}
intervals = {g: {k: M.intervals.bootstrap(s["values"], seed=SEED, what=s["what"]) for k, s in gs.items()}
             for g, gs in samples.items()}
null_intervals = {g: {k: M.intervals.bootstrap(s["values"], seed=SEED, what=s["what"]) for k, s in gs.items()}
                  for g, gs in null_samples.items()}
null_samples_seeds = rnull.samples  # the random-init null over its init seeds (sampled layers)
verdicts = tables.verdict_rows(analyses, null_an)
shown = pd.DataFrame(verdicts)
shown.insert(min(4, shown.shape[1]), "project's cos→anchor [95 % interval]", [M.intervals.format_value(
    v[tables.PROJECT_MEAN], intervals[v["group"]].get("cos_to_anchor")) for v in verdicts])
job.table(shown, caption="Verdict per attention group: the mean operator cosine to the anchor by the seed's "
          "arithmetic (anchor included) and by the project's (anchor excluded)", index=False)

# %% [markdown]
# ## 7. (e) The seed's question: operator cosine vs spectral cosine
#
# Seed 004 asks whether layers share the *spectral shape* of their operators while their
# eigenvectors differ. Per head, the 2·head_dim eigenvalues of the symmetric part (from the
# factored form) are sorted by value, and the **spectral cosine** is the cosine between two
# layers' sorted spectra: 1 whenever one operator is the other in a rotated basis
# ($g \to O^\top g\,O$), where the operator cosine of §2 is below 1; both are 1 for a
# rescaled operator. Spectral − operator is their paired difference over the same
# (layer pair, head) cells. Each mean is over every layer pair and head (exact); the table's
# interval is the same bootstrap over layer pairs as §6, and the random-init column the
# mean over the 5 init seeds with its prediction interval. Sorted
# spectra of independent random matrices of one shape are already close, so the
# random-init column is the baseline to beat. The same records are this job's
# `metrics.claims` (`operators.tables.operator_claims`): seed 004's question as data,
# `params/claims/seed-004.yaml`, given verdicts by notebook 15 beside the random-init null.
# The means here are the project's (anchor excluded); each claims record also holds the
# seed's arithmetic (every layer, anchor included) as its headline.

# %%
spectral = tables.spectral_records(analyses, null_an, intervals, null_intervals, samples, null_samples_seeds)
metrics["spectral_vs_operator"] = spectral
metrics["claims"] = tables.operator_claims(spectral, analyses, null_an)  # params/claims/seed-004.yaml, notebook 15
if ops:  # no attention group: no figure (the reason is in not_run)
    job.figure(plots.spectral_vs_operator(analyses, null_an), "spectral_vs_operator", key=True)
job.table(tables.spectral_table(spectral), caption="Operator vs spectral cosine between layers (means over "
          "layer pairs and heads; 95 % bootstrap intervals)", index=False)

# %% [markdown]
# ## Results
#
# Headline numbers for the first attention group (decoder self-attention for LMs,
# encoder for BERT/T5, vision for ViTs): exact means over every layer pair and head,
# beside the same architecture at random init over its 5 init seeds (95 % prediction
# interval over those seeds) and, for the sign agreement, chance (0.5); every group's full
# analysis is in `metrics.json`.

# %%
metrics["groups"] = {g: {"analysis": analyses[g], "random_init": null_an.get(g),
                         "fro_sq_mean": float(ops[g].fro_sq.mean()),
                         "abs_eig_top8_mean_over_heads": ops[g].sym_eigs[..., :8].abs().mean(1)}
                     for g in ops}
metrics["verdicts"] = verdicts
g0 = next(iter(ops), None)
a0, b0 = analyses.get(g0), null_an.get(g0)
not_anchor = [i for i in range(len(a0["layers"])) if i != a0["anchor_position"]] if a0 else []
pa0 = {k: float(np.asarray(an["principal_angles"]["mean_deg"])[not_anchor].mean()) if an and not_anchor else None
       for k, an in (("trained", a0), ("random_init", b0))}
spectral0 = spectral.get(g0, {})

# %%
values0 = {} if a0 is None else {"cos_to_anchor": a0["mean_cos_to_anchor"], "cos_adjacent": a0["adjacent_mean"],
                                  "pa_deg": pa0["trained"],
                                  "sign_agree": a0["sign_agreement"][k0]["mean"] if k0 is not None else None}
headline = {} if a0 is None else tables.first_group_headline(g0, values0, samples[g0], null_samples_seeds.get(g0),
                                                             k0=k0, top_k=TOP_K)
headline.update({k: spectral0[r] for k, r in (("spec_cos_to_anchor", "spectral_cos_to_anchor"),
                                             ("spec_minus_op", "spectral_minus_operator")) if r in spectral0})
job.finish(metrics, headline, not_run=not_run)

# %% [markdown]
# ## References
#
# - Seed 004: operator-level inter-layer alignment of Qwen3-4B's QK operators (the
#   analysis script; its `measure.py` is re-implemented by `geolip_lib.operators`).
# - Seed 001 summary table ("cross-attention QK balance locked at 0.500" — tested in the
#   seed's layer-level form by notebook 02; the per-head Sylvester identity of §1 is a
#   different quantity, see `QK_BALANCE_STATEMENT`).
# - Björck & Golub (1973), numerical methods for computing angles between linear subspaces.
