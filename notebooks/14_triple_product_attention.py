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
# # 14 · Triple-product attention vs standard attention
#
# **Question.** Can attention be scored by *volume* instead of a dot product? Triple-product
# attention scores key `j` for query `i` by the negative Gram determinant
# `-det G(q_i, k_j, r_i)`, the squared volume of the parallelepiped spanned by the query,
# the key and a second query-side vector `r_i` (all with RoPE). A key scores high when it
# lies in the plane of `(q_i, r_i)`, whatever its length. Does it learn the copy
# (induction) task as well as standard dot-product attention, at what cost in time and
# memory, and how does its score react to a loud, misaligned key?
#
# **Seed.** Seed 003 ("Triple Product Attention"): RoPE, the two attention modules, the copy
# task and the resilience analysis. Its `train_comparison()` was referenced but missing
# from the capture; `geolip_lib.attention.train_comparison` writes it: both attention types
# train with identical steps, learning rate, batch size, seeds and data stream.
#
# This is an architecture experiment: no pretrained model (`MODEL = None`, job id `all`).

# %% tags=["parameters"]
MODEL = None  # no pretrained model: architecture experiment (kept for the run_all contract)
REPORT_ROOT = None  # profile output root (injected by run_all, unused here)
OUT_DIR = None  # job directory for metrics.json and PNGs; None -> reports/adhoc/<notebook>/all
SEED = 0  # [0 ≤ x < 2**32] seed of the example batch shown in section 1
SEEDS = [0, 1, 2]  # [len(x) ≥ 1 and all(0 ≤ s < 2**32 for s in x)] training seeds; each attention type trains once per seed (same data stream)
VOCAB = 8  # [2 ≤ x ≤ 2**24] token vocabulary of the copy task
SEQ_LEN = 16  # [2 ≤ x ≤ 2**20 and not x % 2] sequence length (even: the second half copies the first)
D_MODEL = 32  # [1 ≤ x ≤ 2**16] model width
N_HEAD = 2  # [1 ≤ x ≤ D_MODEL and not D_MODEL % x and not D_MODEL // x % 2] attention heads (d_model / n_head must be even for RoPE)
STEPS = 150  # [1 ≤ x ≤ 10**7] optimizer steps (identical for both attention types)
LR = 3e-3  # [0 < x ≤ 10] Adam learning rate (identical)
BATCH = 32  # [1 ≤ x ≤ 2**16] batch size (identical)
EVAL_SIZE = 256  # [1 ≤ x ≤ 2**16] sequences in the fixed evaluation batch
LOG_EVERY = 5  # [1 ≤ x ≤ STEPS] record the training loss every LOG_EVERY steps
MAGNITUDES = [1.0, 5.0, 10.0, 50.0, 100.0]  # [len(x) ≥ 1 and all(m ≥ 0 for m in x)] noise-key magnitudes of the resilience table
LEAK = 0.1  # [0 ≤ x ≤ 1] alignment of the noise key with q in the resilience table
TORCH_THREADS = 1  # [0 ≤ x ≤ 1024] torch intra-op threads (0: the torch default), 1 is fastest for tiny models

# %%
import json

import numpy as np
import pandas as pd
import torch

from geolip_lib import metrics as M
from geolip_lib import results, runtime
from geolip_lib.attention import copy_batch, copied_half_mask, plots, resilience_table, tables, train_comparison

job = runtime.start("14_triple_product_attention", globals(), load_model=False)  # job dir, style, seeds
if TORCH_THREADS:
    torch.set_num_threads(TORCH_THREADS)
device = "cuda" if torch.cuda.is_available() else "cpu"
metrics: dict = {"config": {"vocab": VOCAB, "seq_len": SEQ_LEN, "d_model": D_MODEL, "n_head": N_HEAD,
                            "steps": STEPS, "lr": LR, "batch": BATCH, "seeds": SEEDS, "device": device}}
timing: dict = {"device": device, "note": "wall-clock, machine-dependent; kept out of metrics.json"}

# %% [markdown]
# ## 1. The copy (induction) task
#
# Each sequence is `first_half + first_half`; the model predicts the next token. Targets in
# the copied half are predictable exactly (the token appeared `SEQ_LEN/2` positions
# earlier); the `SEQ_LEN/2 - 1` targets in the first half are uniform noise, so the best
# achievable mean loss is `(SEQ_LEN/2 - 1)/(SEQ_LEN - 1) * ln(VOCAB)`. The model is embedding -> one causal attention layer (RoPE,
# no positional embedding) -> unembedding. Accuracy is reported on the copied half.

# %%
x_ex, y_ex = copy_batch(2, SEQ_LEN, VOCAB, torch.Generator().manual_seed(SEED))
job.table(tables.example_sequences(x_ex, y_ex, copied_half_mask(SEQ_LEN)), caption="An example sequence")
chance = 1.0 / VOCAB
loss_floor = (SEQ_LEN // 2 - 1) / (SEQ_LEN - 1) * np.log(VOCAB)
print(f"Chance accuracy 1/VOCAB = {chance:.3f}; loss floor = {loss_floor:.3f} nats (first-half targets unpredictable).")

# %% [markdown]
# ## 2. Resilience: dot product vs Gram score for a loud, misaligned key
#
# `q = e1`, `r = e2` define the concept plane; the true match `(q + r)/sqrt 2` lies in it
# (Gram score 0, the maximum). A noise key points along `e3` with magnitude `m` and leaks
# towards `q`. With the seed's fixed leak (`m*e3 + 0.1 q`) the dot product stays 0.1; with a
# leak that scales with the key (`m*(e3 + 0.1 q)`) the dot product grows linearly, so a
# loud key eventually out-scores the true match, while the Gram score falls as `-m^2`
# (the volume grows with the orthogonal component). The seed's interpretation claimed the
# linear growth but its table used the fixed leak; both are shown. These are closed forms:
# no sampling, no interval.

# %%
res = resilience_table(MAGNITUDES, leak=LEAK)
metrics["resilience"] = res
print(f"True match: dot = {res['match']['dot']:.4f}, Gram score = {res['match']['gram'] + 0.0:.4f}.")  # + 0.0: no "-0.0000"
job.table(pd.DataFrame(res["rows"]).set_index("magnitude"), caption="Scores of the noise key by magnitude")
job.figure(plots.resilience(res), "resilience", key=True)

# %% [markdown]
# ## 3. Training comparison (seed 003's missing `train_comparison`)
#
# Both attention types, every seed: Adam, same learning rate, steps, batch size and the same
# sequence of training batches; the evaluation batch is fixed per seed. Each seed is one
# full repetition (data stream, evaluation batch, initialisation), so accuracies get a
# Student-t interval over the per-seed values (clipped to [0, 1] where few seeds push it past).

# %%
runs = train_comparison(("standard", "triple"), seeds=SEEDS, vocab=VOCAB, seq_len=SEQ_LEN, d_model=D_MODEL,
                        n_head=N_HEAD, steps=STEPS, lr=LR, batch_size=BATCH, eval_size=EVAL_SIZE,
                        log_every=LOG_EVERY, device=device, progress=True)
curves = tables.loss_curves_frame(runs)
final = tables.copy_runs_frame(runs)
job.table(final.set_index(["attention", "seed"])[["acc_copied", "acc_first_half", "acc_copied_init", "final_loss"]],
          caption="Per seed: accuracy on the evaluation batch and the last logged training loss",
          formats={c: "{:.1%}" for c in ("acc_copied", "acc_first_half", "acc_copied_init")})

# %%
acc_ivs = {a: tables.clipped(M.intervals.over_seeds(final[final.attention == a].acc_copied)) for a in ("standard", "triple")}
init_ivs = {a: tables.clipped(M.intervals.over_seeds(final[final.attention == a].acc_copied_init))
            for a in ("standard", "triple")}
paired = final.pivot(index="seed", columns="attention", values="acc_copied")
diff_iv = tables.clipped(M.intervals.over_seeds(paired["triple"] - paired["standard"]), -1.0, 1.0)
job.figure(plots.loss_curves(curves, loss_floor=loss_floor, uniform=float(np.log(VOCAB))), "loss_curves", key=True)
job.figure(plots.copy_accuracy(final, chance=chance, intervals={a: (iv.lo, iv.hi) for a, iv in acc_ivs.items()}),
           "accuracy", key=True)

# %%
for a in ("standard", "triple"):
    sub = final[final.attention == a]
    metrics[a] = {
        "acc_copied_mean": sub.acc_copied.mean(), "acc_copied_std": sub.acc_copied.std(),
        "acc_copied_per_seed": sub.acc_copied.tolist(),
        "acc_first_half_mean": sub.acc_first_half.mean(),
        "acc_copied_init_mean": sub.acc_copied_init.mean(),
        "final_loss_mean": sub.final_loss.mean(), "final_loss_std": sub.final_loss.std(),
        "loss_floor": loss_floor,
        "n_params": int(sub.n_params.iloc[0]),
        "memory_bytes_per_step": int(sub.memory_bytes.iloc[0]), "memory_kind": sub.memory_kind.iloc[0],
        "loss_steps": runs[a][0]["loss_steps"],
        "loss_curve_mean": curves[curves.attention == a].groupby("step").loss.mean().tolist(),
    }
metrics["acc_copied_diff_per_seed"] = (paired["triple"] - paired["standard"]).tolist()

# %% [markdown]
# ## 4. Time and memory per step
#
# Memory is measured once per model on its first step: on a GPU the peak allocated during
# forward + backward, on CPU the bytes of the tensors autograd saves for backward (the
# activation memory; deterministic). Time is the median wall time of a step after
# warm-up (machine-dependent, so it goes to `timing.json`, not `metrics.json`). The
# triple-product layer computes two `T x T` products (`Q K^T`, `R K^T`) and an
# element-wise determinant instead of one product, and has one more projection.

# %%
# NBVAL_IGNORE_OUTPUT
# (wall-clock timings differ between runs: nbval does not compare this cell)
cost = final.groupby("attention").agg(ms_per_step=("ms_per_step", "median"), memory_bytes=("memory_bytes", "first"),
                                      n_params=("n_params", "first"))
cost["memory_MiB"] = cost.memory_bytes / 2 ** 20
mem_ratio = cost.loc["triple", "memory_bytes"] / cost.loc["standard", "memory_bytes"]
time_ratio = cost.loc["triple", "ms_per_step"] / cost.loc["standard", "ms_per_step"]
metrics["memory_ratio_triple_over_standard"] = mem_ratio
timing.update({"ms_per_step": cost.ms_per_step.to_dict(), "time_ratio_triple_over_standard": time_ratio})
print(f"Triple / standard: memory x{mem_ratio:.2f} ({final.memory_kind.iloc[0]}), time x{time_ratio:.2f} (this machine).")
job.table(cost, caption="Cost per training step (time: this machine)", formats={"ms_per_step": "{:.3f}"})
job.figure(plots.cost_per_step(cost, device=device, memory_kind=final.memory_kind.iloc[0]), "cost_per_step")

# %% [markdown]
# ## Results
#
# Headline: accuracy on the copied half for both attention types (t interval over seeds)
# beside chance (1/VOCAB, exact) and the same models before training (random init, t
# interval over seeds); the paired per-seed difference triple − standard beside "no
# difference"; and the memory ratio, a deterministic function of the shapes (exact).
# Timings are written to `timing.json` beside `metrics.json`.

# %%
headline = {
    f"acc_copied_{a}": results.headline(
        metrics[a]["acc_copied_mean"], interval=acc_ivs[a], label=f"copy acc ({a})", fmt=".3f",
        nulls={"chance": {"value": chance, "interval": M.intervals.Interval(chance, chance, "exact (1/VOCAB)", 1.0)},
               "random_init": {"value": metrics[a]["acc_copied_init_mean"], "interval": init_ivs[a]}})
    for a in ("triple", "standard")
}
headline["acc_copied_diff"] = results.headline(
    float((paired["triple"] - paired["standard"]).mean()), interval=diff_iv, label="copy acc triple − standard",
    fmt=".3f", nulls={"no difference": 0.0}, note="Paired by seed: both types see the same data stream.")
headline["memory_ratio"] = results.headline(mem_ratio, interval="exact", label="memory triple/standard", fmt=".3f",
    nulls={"standard attention": 1.0}, note="Exact: bytes per step are a deterministic function of the shapes.")
results.atomic_write_text(job.out / "timing.json", json.dumps(results.to_jsonable(timing), indent=1) + "\n")
job.finish(metrics, headline)

# %% [markdown]
# ## References
#
# - Seed 003, "Triple Product Attention" (falseywinchnet gist): RoPE, `TripleProductAttention`,
#   `StandardAttention`, `TestModel`, the copy task, `analyze_gram_resilience`.
# - Su et al., *RoFormer: Enhanced Transformer with Rotary Position Embedding* (2021).
# - Olsson et al., *In-context Learning and Induction Heads* (2022).
