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
SEED = 0  # [0 ≤ x < 2**32] seed of every random draw (inputs, module initialisation, simplex sampling)
BATCH = 2  # [1 ≤ x ≤ 2**16] B: sequences per input (seed: 4)
SEQ_LEN = 32  # [N_DYNAMIC < x ≤ 2**20] S: tokens per sequence (seed: 256)
DIM = 32  # [1 ≤ x ≤ 2**16 and not x % PATCH_DIM] D: model width, a multiple of PATCH_DIM (seed: 128)
PATCH_DIM = 16  # [1 ≤ x ≤ 2**16] d: features per patch (seed: 16)
N_FIXED = 8  # [1 ≤ x ≤ 2**16] hybrid: fixed anchors per patch (seed: 8)
N_DYNAMIC = 8  # [1 ≤ x ≤ 2**16] hybrid: top-k tokens each token selects per patch (seed: 8; needs SEQ_LEN > N_DYNAMIC)
N_ANCHORS = 16  # [1 ≤ x ≤ 2**16] pure relay: anchors per patch (seed: 16)
N_PHASES = 3  # [1 ≤ x ≤ 1000] SLERP phases home -> anchors (seed: 3)
PW_HIDDEN = 32  # [1 ≤ x ≤ 2**16] hidden width of the per-patch MLPs (seed: 32)
ATTN_HEADS = 8  # [1 ≤ x ≤ DIM and not DIM % x] vanilla attention heads (seed: 8)
N_CV = 500  # [2 ≤ x ≤ 10**6] pentachora per CV estimate (seed: 1500)
DEPTH = 16  # [1 ≤ x ≤ 10_000] depth of the stacks in test 2 (seed: 16)
CHECKPOINTS = [1, 2, 4, 8, 12, 16]  # [len(x) ≥ 1 and all(1 ≤ c ≤ DEPTH for c in x)] depths at which test 2 and 3 measure (seed: 1, 2, 4, 8, 12, 16)
N_INTERLEAVED = 8  # [1 ≤ x ≤ 10_000] test 3: attention/hybrid pairs (seed: 8 -> 16 layers)
CAUSAL_SEQ_LEN = 32  # [2 ≤ x ≤ 2**20] test 4: tokens of the intervention sequence (seed: 32)
CAUSAL_STACK = 4  # [1 ≤ x ≤ 10_000] test 4: layers of the stacked intervention (seed: 4)
N_TIMING = 5  # [1 ≤ x ≤ 10**6] timed forward passes per measurement in tests 5 and 6 (seed: 100 / 50)
SCALING_SEQ_LENS = [32, 64, 128]  # [len(x) ≥ 1 and all(N_DYNAMIC < s ≤ 2**20 for s in x)] test 6 sequence lengths (seed: 64 ... 1024)
SCALING_BATCH = 2  # [1 ≤ x ≤ 2**16] test 6 batch (seed: 2)
TORCH_THREADS = 1  # [0 ≤ x ≤ 1024] torch intra-op threads (0: the torch default), 1 is fastest for tiny models

# %%
import json

import pandas as pd
import torch

from geolip_lib import metrics as M
from geolip_lib import results, runtime
from geolip_lib.attention import (MIXERS, build_mixer, causal_intervention, forward_ms, geometry_samples,
                                  mean_row_cosine, n_params, run_stack, stack_geometry, unit_rows)
from geolip_lib.attention import plots, tables

job = runtime.start("12_constellation_relay", globals(), load_model=False)  # job dir, style, seeds (torch too)
if TORCH_THREADS:
    torch.set_num_threads(TORCH_THREADS)
device = "cuda" if torch.cuda.is_available() else "cpu"
mix = dict(dim=DIM, patch_dim=PATCH_DIM, n_fixed=N_FIXED, n_dynamic=N_DYNAMIC, n_anchors=N_ANCHORS,
           n_phases=N_PHASES, pw_hidden=PW_HIDDEN, attn_heads=ATTN_HEADS, device=device)

# %%
metrics: dict = {"config": {"B": BATCH, "S": SEQ_LEN, "D": DIM, "patch_dim": PATCH_DIM, "n_fixed": N_FIXED,
                            "n_dynamic": N_DYNAMIC, "n_anchors": N_ANCHORS, "n_phases": N_PHASES,
                            "pw_hidden": PW_HIDDEN, "attn_heads": ATTN_HEADS, "n_cv": N_CV, "device": device}}
timing: dict = {"device": device, "note": "wall-clock, machine-dependent; kept out of metrics.json"}
print(f"B={BATCH} S={SEQ_LEN} D={DIM} = {DIM // PATCH_DIM} patches x {PATCH_DIM}; device {device}.")

# %% [markdown]
# ## 1. Single pass
#
# One layer of each mixer on isotropic Gaussian tokens. `CV_n` is the pentachoron CV of the
# output rows projected to the unit sphere (the input's CV is the Gaussian null baseline);
# `cos_to_input` is the mean cosine between each output token and its input token.

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)  # the first draw after runtime.start seeded torch with SEED
base = M.pentachoron_cv(unit_rows(x), n_simplices=N_CV, seed=SEED)
cv_base, cv_input_iv = base.cv, M.intervals.bootstrap(base.volumes, M.intervals.cv, seed=SEED, what="simplices")
rows = []
with torch.no_grad():
    for name in MIXERS:
        m = build_mixer(name, **mix)
        z = m(x)
        rows.append({"arch": name, "params": n_params(m), "cv_n": M.pentachoron_cv(unit_rows(z), N_CV, seed=SEED).cv,
                     "cos_to_input": mean_row_cosine(unit_rows(z), unit_rows(x))})
    _, diag = build_mixer("hybrid", **mix)(x, return_diagnostics=True)
metrics["single_pass"] = {"cv_input": cv_base, "rows": rows, "hybrid_diagnostics": diag}
job.table(pd.DataFrame(rows).set_index("arch"), caption=f"One layer on Gaussian tokens (input CV_n = {cv_base:.4f})")
job.table(diag, caption="Hybrid relay at init: gates, anchor drift and top-k relevances")

# %% [markdown]
# ## 2. Depth sweep (stacked layers at random init)
#
# Effective dimension twice: the seed's `eff_dim` (participation ratio of the singular
# values of the centred rows, `(sum s)^2 / sum s^2`) and the entropy effective rank of the
# covariance spectrum (`geolip_lib.metrics.effective_dimension`). The shaded band around each
# CV curve is its 95 % bootstrap interval over the sampled pentachora (for this input draw
# and this initialisation).

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
checks = sorted(c for c in CHECKPOINTS if c <= DEPTH)
depth_rows, samples = [], {}
for name in MIXERS:
    stack = [build_mixer(name, **mix) for _ in range(DEPTH)]
    for d, z in run_stack(stack, x, checks).items():
        depth_rows.append({"arch": name, "depth": d, **stack_geometry(z, x, N_CV, SEED)})
        samples[(name, d)] = geometry_samples(z, x, N_CV, SEED)
depth_df = pd.DataFrame(depth_rows)
metrics["depth_sweep"] = {"input": stack_geometry(x, x, N_CV, SEED), "rows": depth_rows}
job.table(tables.depth_table(depth_rows), caption="Depth sweep: CV_n, cosine to input, effective dimension")

# %%
cv_ivs = {k: M.intervals.bootstrap(s["volumes"], M.intervals.cv, seed=SEED, what="simplices")
          for k, s in samples.items()}
cv_iv_df = pd.DataFrame([{"arch": a, "depth": d, "lo": iv.lo, "hi": iv.hi} for (a, d), iv in cv_ivs.items()])
job.figure(plots.depth_sweep(depth_df, cv_base, cv_intervals=cv_iv_df), "depth_sweep", key=True)

# %% [markdown]
# ## 3. Interleaved: attention -> hybrid -> attention -> hybrid ...

# %%
x = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
layers, kinds = [], []
for _ in range(N_INTERLEAVED):
    layers += [build_mixer("vanilla_attn", **mix), build_mixer("hybrid", **mix)]
    kinds += ["attn", "hybrid"]
inter_rows = [{"step": s, "type": kinds[s - 1], **stack_geometry(z, x, N_CV, SEED)}
              for s, z in run_stack(layers, x).items()]
inter_df = pd.DataFrame(inter_rows)
metrics["interleaved"] = {"rows": inter_rows}
job.table(inter_df[inter_df.step.isin(checks)].set_index("step"), caption="Interleaved stack at the checkpoints")
job.figure(plots.interleaved(inter_df), "interleaved")

# %% [markdown]
# ## 4. Causal intervention: does changing token 0 change the other tokens?
#
# The same sequence runs twice; only token 0 is replaced by a fresh Gaussian vector. A
# per-token mixer (pure relay) must leave tokens 1..S-1 *exactly* unchanged
# (`other_delta_max = 0`); a mixer that routes information across tokens (attention, the
# hybrid's dynamic path) changes them. One layer, then a stack of `CAUSAL_STACK` layers.
# The interval of the mean change is a bootstrap over the `S-1` other tokens.

# %%
x_a = torch.randn(1, CAUSAL_SEQ_LEN, DIM, device=device)
causal_rows, deltas = [], {}
for depth in (1, CAUSAL_STACK):
    for name in MIXERS:
        stack = [build_mixer(name, **mix) for _ in range(depth)]
        r, deltas[(name, depth)] = causal_intervention(stack, x_a, token=0, return_deltas=True,
                                                       generator=torch.Generator().manual_seed(SEED + 1))
        causal_rows.append({"arch": name, "layers": depth, **r})
causal_df = pd.DataFrame(causal_rows)
metrics["causal"] = {"rows": causal_rows,
                     "pure_relay_exact": bool((causal_df[causal_df.arch == "pure_relay"].other_delta_max == 0).all()),
                     "hybrid_routes": bool((causal_df[causal_df.arch == "hybrid"].other_delta_norm > 0).all())}

# %%
causal_ivs = {k: M.intervals.bootstrap(v, seed=SEED, what="other tokens") for k, v in deltas.items()}
causal_df["lo"] = [causal_ivs[(a, d)].lo for a, d in zip(causal_df.arch, causal_df.layers)]
causal_df["hi"] = [causal_ivs[(a, d)].hi for a, d in zip(causal_df.arch, causal_df.layers)]
print(f"Pure relay leaves the other tokens exactly unchanged: {metrics['causal']['pure_relay_exact']}; "
      f"the hybrid changes them: {metrics['causal']['hybrid_routes']}.")
job.table(causal_df.set_index(["layers", "arch"])[["other_delta_norm", "lo", "hi", "other_delta_max",
                                                   "other_one_minus_cos", "token_delta_norm"]],
          caption="Causal intervention on token 0 (lo, hi: 95 % bootstrap interval over the other tokens)")
job.figure(plots.causal_intervention(causal_df), "causal_intervention", key=True)

# %% [markdown]
# ## 5. Throughput
#
# Median no-grad forward time at the test-1 sizes (machine-dependent: `timing.json`).

# %%
# NBVAL_IGNORE_OUTPUT
# (wall-clock timings differ between runs: nbval does not compare this cell)
x_bench = torch.randn(BATCH, SEQ_LEN, DIM, device=device)
thr = pd.DataFrame([{"arch": name, "ms": forward_ms(build_mixer(name, **mix), x_bench, N_TIMING),
                     "params": n_params(build_mixer(name, **mix))} for name in MIXERS]).set_index("arch")
timing["throughput_ms"] = thr.ms.to_dict()
metrics["params"] = thr.params.to_dict()
job.figure(plots.throughput(thr, batch=BATCH, seq_len=SEQ_LEN, device=device), "throughput")
job.table(thr, caption="Median forward time (this machine) and parameters per layer", formats={"ms": "{:.3f}"})

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
    h_ms = forward_ms(build_mixer("hybrid", **mix), xs, N_TIMING)
    a_ms = forward_ms(build_mixer("vanilla_attn", **mix), xs, N_TIMING)
    scale_rows.append({"S": sl, "hybrid_ms": h_ms, "attn_ms": a_ms, "ratio": h_ms / a_ms})
scale_df = pd.DataFrame(scale_rows).set_index("S")
timing["seq_scaling"] = scale_rows
job.figure(plots.seq_scaling(scale_df, device=device), "seq_scaling")
job.table(scale_df, caption="Forward time against sequence length (this machine)")

# %% [markdown]
# ## Results
#
# Headline: CV of the deepest hybrid stack beside the Gaussian input's CV and the other two
# mixers at the same depth (interval: bootstrap over the sampled pentachora), cosine to the
# input after the deepest stack beside attention and the pure relay (interval: bootstrap
# over tokens), and the causal-intervention change of the other tokens through the
# `CAUSAL_STACK`-layer hybrid stack beside the pure relay's (exactly 0) and attention's
# (interval: bootstrap over the other tokens). All intervals hold the input draw and the
# initialisation fixed: they measure the sampling of simplices / tokens, not seed-to-seed
# variation. Timings: `timing.json`.

# %%
top = max(checks)
deep = depth_df[depth_df.depth == top].set_index("arch")
stacked = causal_df[causal_df.layers == CAUSAL_STACK].set_index("arch")
cos_ivs = {a: M.intervals.bootstrap(samples[(a, top)]["cosines"], seed=SEED, what="tokens") for a in MIXERS}
job.table(tables.interval_table({a: {f"CV_n x{top}": (deep.loc[a, "cv_n"], cv_ivs[(a, top)]),
                                     f"cos to input x{top}": (deep.loc[a, "cos_to_input"], cos_ivs[a]),
                                     f"other-token Δ x{CAUSAL_STACK}": (stacked.loc[a, "other_delta_norm"],
                                                                         causal_ivs[(a, CAUSAL_STACK)])}
                                 for a in MIXERS}), caption="Deepest stacks: value [95 % interval]")

# %%
headline = {
    "cv_hybrid_deep": results.headline(deep.loc["hybrid", "cv_n"], interval=cv_ivs[("hybrid", top)],
        label=f"CV_n hybrid x{top}", fmt=".4f",
        nulls={"gaussian": {"value": cv_base, "interval": cv_input_iv},
               **{a: {"value": deep.loc[a, "cv_n"], "interval": cv_ivs[(a, top)]} for a in ("vanilla_attn", "pure_relay")}},
        note="gaussian: the CV of isotropic Gaussian tokens (the single-pass input); the other mixers: same depth, same input."),
    "cos_hybrid_deep": results.headline(deep.loc["hybrid", "cos_to_input"], interval=cos_ivs["hybrid"],
        label=f"cos to input hybrid x{top}", fmt=".4f",
        nulls={a: {"value": deep.loc[a, "cos_to_input"], "interval": cos_ivs[a]} for a in ("vanilla_attn", "pure_relay")}),
}

# %%
exact_zero = M.intervals.Interval(0.0, 0.0, "exact (a per-token mixer: no sampling)", 1.0)
headline["causal_hybrid"] = results.headline(
    stacked.loc["hybrid", "other_delta_norm"], interval=causal_ivs[("hybrid", CAUSAL_STACK)],
    label=f"other-token Δ hybrid x{CAUSAL_STACK}", fmt=".4g",
    nulls={"pure_relay": {"value": stacked.loc["pure_relay", "other_delta_norm"], "interval": exact_zero},
           "vanilla_attn": {"value": stacked.loc["vanilla_attn", "other_delta_norm"],
                            "interval": causal_ivs[("vanilla_attn", CAUSAL_STACK)]}},
    note="pure_relay never reads another token: its other tokens cannot change (exactly 0).")
results.atomic_write_text(job.out / "timing.json", json.dumps(results.to_jsonable(timing), indent=1) + "\n")
job.finish(metrics, headline)

# %% [markdown]
# ## References
#
# - Seed 000, "Constellation Core V11 / Hybrid Constellation Relay v2" (geolip-constellation-core,
#   `constelation_v11_cross_token_preservation.py`).
# - Pearl, *Causality* (2009): interventions as the test of a causal path.
