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
# # 12 · Constellation relay: geometry preservation and cross-token routing
#
# **Question.** The constellation relay replaces attention by a per-patch comparison with a
# constellation of anchors (cosine distances at several points of a SLERP path between the
# "home" anchors and the learnable ones, read by a small MLP and gated against the
# identity). The hybrid relay adds a dynamic path: each token selects its top-k other
# tokens by `Q.K` and gathers their values. Do these mixers preserve the geometry of their
# input (pentachoron CV, cosine to the input, effective dimension) better than attention
# when stacked, does the hybrid really route information *between* tokens (causal
# intervention), and what does it cost?
#
# **Seed.** Seed 000 ("Constellation Core V11", hybrid constellation relay v2): the six
# tests - single pass, depth 16, interleaved attention/hybrid, causal intervention,
# throughput, sequence-length scaling. All modules are at random initialisation, as in
# the seed.
#
# This is an architecture experiment: no pretrained model (`MODEL = None`, job id `all`).

# %% tags=["parameters"]
MODEL = None  # no pretrained model: architecture experiment (kept for the run_all contract)
REPORT_ROOT = None  # profile output root (injected by run_all, unused here)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
SEED = 0  # seed of every random draw (inputs, module initialisation, simplex sampling)
BATCH = 2  # B: sequences per input (seed: 4)
SEQ_LEN = 32  # S: tokens per sequence (seed: 256)
DIM = 32  # D: model width, a multiple of PATCH_DIM (seed: 128)
PATCH_DIM = 16  # d: features per patch (seed: 16)
N_FIXED = 8  # hybrid: fixed anchors per patch (seed: 8)
N_DYNAMIC = 8  # hybrid: top-k tokens each token selects per patch (seed: 8; needs SEQ_LEN > N_DYNAMIC)
N_ANCHORS = 16  # pure relay: anchors per patch (seed: 16)
N_PHASES = 3  # SLERP phases home -> anchors (seed: 3)
PW_HIDDEN = 32  # hidden width of the per-patch MLPs (seed: 32)
ATTN_HEADS = 8  # vanilla attention heads (seed: 8)
N_CV = 500  # pentachora per CV estimate (seed: 1500)
DEPTH = 16  # depth of the stacks in test 2 (seed: 16)
CHECKPOINTS = [1, 2, 4, 8, 12, 16]  # depths at which test 2 and 3 measure (seed: 1, 2, 4, 8, 12, 16)
N_INTERLEAVED = 8  # test 3: attention/hybrid pairs (seed: 8 -> 16 layers)
CAUSAL_SEQ_LEN = 32  # test 4: tokens of the intervention sequence (seed: 32)
CAUSAL_STACK = 4  # test 4: layers of the stacked intervention (seed: 4)
N_TIMING = 5  # timed forward passes per measurement in tests 5 and 6 (seed: 100 / 50)
SCALING_SEQ_LENS = [32, 64, 128]  # test 6 sequence lengths (seed: 64 ... 1024)
SCALING_BATCH = 2  # test 6 batch (seed: 2)
TORCH_THREADS = 1  # torch intra-op threads (0: the torch default), 1 is fastest for tiny models

# %%
import json

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
import torch
import torch.nn.functional as F

from geolip_lib import metrics as gm
from geolip_lib import plotting, results
from geolip_lib.attention import (HybridRelay, PureRelay, VanillaAttention, causal_intervention, forward_ms,
                                  mean_row_cosine, n_params, run_stack, singular_value_pr)

NOTEBOOK = "12_constellation_relay"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
if TORCH_THREADS:
    torch.set_num_threads(TORCH_THREADS)
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(SEED)

BUILDERS = {
    "vanilla_attn": lambda: VanillaAttention(DIM, ATTN_HEADS),
    "pure_relay": lambda: PureRelay(DIM, PATCH_DIM, N_ANCHORS, N_PHASES, PW_HIDDEN),
    "hybrid": lambda: HybridRelay(DIM, PATCH_DIM, N_FIXED, N_DYNAMIC, N_PHASES, PW_HIDDEN),
}


def build(name):
    return BUILDERS[name]().to(device).eval()


def unit_rows(z):
    """(B, S, D) -> (B*S, D) rows on the unit sphere (the seed's CV_n is measured there)."""
    return F.normalize(z.reshape(-1, z.shape[-1]).float(), dim=-1).cpu()


def cv_n(z):
    return gm.pentachoron_cv(unit_rows(z), n_simplices=N_CV, seed=SEED).cv


def geometry(z, x):
    """CV on the sphere, mean cosine to the input, effective dimensions of the rows."""
    rows = z.reshape(-1, z.shape[-1]).cpu()
    return {"cv_n": cv_n(z), "cos_to_input": mean_row_cosine(unit_rows(z), unit_rows(x)),
            "eff_dim_sv_pr": singular_value_pr(rows), "eff_dim_entropy": gm.effective_dimension(rows)}


metrics: dict = {"config": {"B": BATCH, "S": SEQ_LEN, "D": DIM, "patch_dim": PATCH_DIM, "n_fixed": N_FIXED,
                            "n_dynamic": N_DYNAMIC, "n_anchors": N_ANCHORS, "n_phases": N_PHASES,
                            "pw_hidden": PW_HIDDEN, "attn_heads": ATTN_HEADS, "n_cv": N_CV, "device": device}}
timing: dict = {"device": device, "note": "wall-clock, machine-dependent; kept out of metrics.json"}
print(f"B={BATCH} S={SEQ_LEN} D={DIM} = {DIM // PATCH_DIM} patches x {PATCH_DIM}; device {device}")

# %% [markdown]
# ## 1. Single pass
#
# One layer of each mixer on isotropic Gaussian tokens. `CV_n` is the pentachoron CV of the
# output rows projected to the unit sphere (the input's CV is the Gaussian null baseline);
# `cos_to_input` is the mean cosine between each output token and its input token.

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
cv_base = cv_n(x)
rows = []
with torch.no_grad():
    for name in BUILDERS:
        m = build(name)
        z = m(x)
        rows.append({"arch": name, "params": n_params(m), "cv_n": cv_n(z),
                     "cos_to_input": mean_row_cosine(unit_rows(z), unit_rows(x))})
    _, diag = build("hybrid")(x, return_diagnostics=True)
single = pd.DataFrame(rows).set_index("arch")
metrics["single_pass"] = {"cv_input": cv_base, "rows": rows, "hybrid_diagnostics": diag}
print(f"input (Gaussian) CV_n = {cv_base:.4f}")
print("hybrid gates: " + ", ".join(f"{k}={v:.4f}" for k, v in diag.items()))
single

# %% [markdown]
# ## 2. Depth sweep (16 stacked layers at random init)
#
# Effective dimension twice: the seed's `eff_dim` (participation ratio of the singular
# values of the centred rows, `(sum s)^2 / sum s^2`) and the entropy effective rank of the
# covariance spectrum (`geolip_lib.metrics.effective_dimension`).

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
checks = sorted(c for c in CHECKPOINTS if c <= DEPTH)
depth_rows = []
for name in BUILDERS:
    stack = [build(name) for _ in range(DEPTH)]
    for d, z in run_stack(stack, x, checks).items():
        depth_rows.append({"arch": name, "depth": d, **geometry(z, x)})
depth_df = pd.DataFrame(depth_rows)
metrics["depth_sweep"] = {"input": geometry(x, x), "rows": depth_rows}
depth_df.pivot(index="depth", columns="arch", values=["cv_n", "cos_to_input", "eff_dim_sv_pr"]).round(4)

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
for ax, col, title in zip(axes, ["cv_n", "cos_to_input", "eff_dim_sv_pr"],
                          ["pentachoron CV (unit rows)", "cosine to input", "effective dim (seed: s-PR)"]):
    sns.lineplot(data=depth_df, x="depth", y=col, hue="arch", marker="o", ax=ax)
    ax.set(title=title, ylabel="")
axes[0].axhline(cv_base, color="k", ls=":", lw=1, label="Gaussian input")
axes[0].axhspan(0.20, 0.23, color="tab:green", alpha=0.12, label="band 0.20-0.23")
axes[0].legend(fontsize=8)
fig.tight_layout()
plotting.savefig(fig, out, "depth_sweep")

# %% [markdown]
# ## 3. Interleaved: attention -> hybrid -> attention -> hybrid ...

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
layers, kinds = [], []
for _ in range(N_INTERLEAVED):
    layers += [build("vanilla_attn"), build("hybrid")]
    kinds += ["attn", "hybrid"]
inter_rows = [{"step": s, "type": kinds[s - 1], **geometry(z, x)} for s, z in run_stack(layers, x).items()]
inter_df = pd.DataFrame(inter_rows)
metrics["interleaved"] = {"rows": inter_rows}
inter_df[inter_df.step.isin(checks)].set_index("step").round(4)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
for ax, col in zip(axes, ["cv_n", "cos_to_input"]):
    ax.plot(inter_df.step, inter_df[col], "-", color="grey", lw=1)
    sns.scatterplot(data=inter_df, x="step", y=col, hue="type", s=40, ax=ax)
    ax.set(title=f"interleaved stack: {col}")
axes[0].axhspan(0.20, 0.23, color="tab:green", alpha=0.12)
fig.tight_layout()
plotting.savefig(fig, out, "interleaved")

# %% [markdown]
# ## 4. Causal intervention: does changing token 0 change the other tokens?
#
# The same sequence runs twice; only token 0 is replaced by a fresh Gaussian vector. A
# per-token mixer (pure relay) must leave tokens 1..S-1 *exactly* unchanged
# (`other_delta_max = 0`); a mixer that routes information across tokens (attention, the
# hybrid's dynamic path) changes them. One layer, then a stack of `CAUSAL_STACK` layers.

# %%
x_a = torch.randn(1, CAUSAL_SEQ_LEN, DIM, device=device)
causal_rows = []
for depth in (1, CAUSAL_STACK):
    for name in BUILDERS:
        stack = [build(name) for _ in range(depth)]
        r = causal_intervention(stack, x_a, token=0, generator=torch.Generator().manual_seed(SEED + 1))
        causal_rows.append({"arch": name, "layers": depth, **r})
causal_df = pd.DataFrame(causal_rows)
metrics["causal"] = {"rows": causal_rows,
                     "pure_relay_exact": bool((causal_df[causal_df.arch == "pure_relay"].other_delta_max == 0).all()),
                     "hybrid_routes": bool((causal_df[causal_df.arch == "hybrid"].other_delta_norm > 0).all())}
print("pure relay leaves other tokens exactly unchanged:", metrics["causal"]["pure_relay_exact"])
print("hybrid changes other tokens:", metrics["causal"]["hybrid_routes"])
causal_df.set_index(["layers", "arch"])[["other_delta_norm", "other_delta_max", "other_one_minus_cos",
                                         "token_delta_norm"]]

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.6))
plot_df = causal_df.assign(other_delta_norm=causal_df.other_delta_norm.clip(lower=1e-12))
sns.barplot(data=plot_df, x="arch", y="other_delta_norm", hue="layers", ax=ax)
ax.set(yscale="log", ylabel="mean |delta| of tokens 1..S-1", title="causal intervention on token 0 (0 shown at 1e-12)")
plotting.savefig(fig, out, "causal_intervention")

# %% [markdown]
# ## 5. Throughput
#
# Median no-grad forward time at the test-1 sizes (machine-dependent: `timing.json`).

# %%
# NBVAL_IGNORE_OUTPUT
# (wall-clock timings differ between runs: nbval does not compare this cell)
x_bench = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
thr = pd.DataFrame([{"arch": name, "ms": forward_ms(build(name), x_bench, N_TIMING),
                     "params": n_params(build(name))} for name in BUILDERS]).set_index("arch")
timing["throughput_ms"] = thr.ms.to_dict()
metrics["params"] = thr.params.to_dict()
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
sns.barplot(x=thr.index, y=thr.ms, ax=axes[0])
axes[0].set(xlabel="", ylabel="ms / forward (median)", title=f"throughput, B={BATCH} S={SEQ_LEN} ({device})")
sns.barplot(x=thr.index, y=thr.params, ax=axes[1])
axes[1].set(xlabel="", ylabel="parameters", title="parameters per layer")
fig.tight_layout()
plotting.savefig(fig, out, "throughput")
thr

# %% [markdown]
# ## 6. Sequence-length scaling
#
# Both the hybrid's relevance matrix and attention are quadratic in S; the hybrid's top-k
# gather is linear (the seed's `(B, P, S, S, d)` expansion is avoided, see
# `benchmarks/attention.py`).

# %%
# NBVAL_IGNORE_OUTPUT
# (wall-clock timings differ between runs: nbval does not compare this cell)
scale_rows = []
for sl in SCALING_SEQ_LENS:
    xs = torch.randn(SCALING_BATCH, sl, DIM, device=device)
    h_ms, a_ms = forward_ms(build("hybrid"), xs, N_TIMING), forward_ms(build("vanilla_attn"), xs, N_TIMING)
    scale_rows.append({"S": sl, "hybrid_ms": h_ms, "attn_ms": a_ms, "ratio": h_ms / a_ms})
scale_df = pd.DataFrame(scale_rows).set_index("S")
timing["seq_scaling"] = scale_rows
fig, ax = plt.subplots(figsize=(5.5, 3.6))
ax.plot(scale_df.index, scale_df.hybrid_ms, "o-", label="hybrid relay")
ax.plot(scale_df.index, scale_df.attn_ms, "s-", label="vanilla attention")
ax.set(xscale="log", yscale="log", xlabel="sequence length S", ylabel="ms / forward", title=f"scaling ({device})")
ax.legend()
plotting.savefig(fig, out, "seq_scaling")
scale_df

# %% [markdown]
# ## Results
#
# Headline: CV of the 16-deep hybrid stack beside the Gaussian input's CV, cosine to the
# input after 16 layers, and the causal-intervention change of the other tokens through
# the 4-layer hybrid stack beside the pure relay's (exactly 0). Timings: `timing.json`.

# %%
deep = depth_df[depth_df.depth == max(checks)].set_index("arch")
stacked = causal_df[causal_df.layers == CAUSAL_STACK].set_index("arch")
results.atomic_write_text(out / "timing.json", json.dumps(results.to_jsonable(timing), indent=1) + "\n")
results.record(out, metrics, notebook=NOTEBOOK, model=MODEL,
               parameters={"BATCH": BATCH, "SEQ_LEN": SEQ_LEN, "DIM": DIM, "N_CV": N_CV, "DEPTH": DEPTH},
               headline={
                   "cv_hybrid_deep": results.headline(deep.loc["hybrid", "cv_n"], baseline=cv_base,
                                                      baseline_kind="gaussian", label=f"CV_n hybrid x{max(checks)}"),
                   "cos_hybrid_deep": results.headline(deep.loc["hybrid", "cos_to_input"],
                                                       baseline=deep.loc["vanilla_attn", "cos_to_input"],
                                                       baseline_kind="vanilla attention",
                                                       label=f"cos to input hybrid x{max(checks)}"),
                   "causal_hybrid": results.headline(stacked.loc["hybrid", "other_delta_norm"],
                                                     baseline=stacked.loc["pure_relay", "other_delta_norm"],
                                                     baseline_kind="pure relay",
                                                     label=f"other-token delta hybrid x{CAUSAL_STACK}"),
               })

# %% [markdown]
# ## References
#
# - Seed 000, "Constellation Core V11 / Hybrid Constellation Relay v2" (geolip-constellation-core,
#   `constelation_v11_cross_token_preservation.py`).
# - Pearl, *Causality* (2009): interventions as the test of a causal path.
