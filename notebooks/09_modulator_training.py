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
# # 09 · Modulator training: does alpha find itself?
#
# **Question.** With the base model frozen and only the geometric residual modulator
# trained on a definition → lemma task, where do the per-layer alphas settle (the seed
# watched for 0.29154), and what happens to relational alignment, per-token preservation
# and generation?
#
# **Seed.** Seed 001 §9 (Section VII.3–VII.4 of the statistics composite).
#
# Objective by family: T5 — sequence-to-sequence cross-entropy of the lemma given
# `summarize: {definition}` (labels shifted right by the model; the seed fed the unshifted
# target as decoder input, which leaks the answer); decoder LMs — cross-entropy on the lemma
# after `{definition} =>`; encoder-only models (BERT), which cannot emit the lemma —
# `1 − cos(pooled modulated definition, the lemma token's frozen input-embedding row)`.

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json, PNGs and the checkpoint; None -> reports/adhoc/...
SEED = 42  # seed of the subset, the split, the batches and the modulator init
N_MATCH_MAX = 160  # matched WordNet entries used (a seeded random subset), None for all
N_ANCHOR = 60  # anchors of the Procrustes initialisation (seed: 3000)
N_GEO = 8  # geometric dimensions (seed: 64)
INIT = "procrustes"  # "procrustes" (the §8 pipeline) or "random"
INITIAL_ALPHA = 0.01  # starting alpha at every layer (the seed reset alpha to 0.01)
N_EPOCHS = 2  # epochs (seed: 10)
BATCH_SIZE = 32  # examples per step
LR = 1e-3  # AdamW learning rate (cosine schedule over all steps)
WEIGHT_DECAY = 0.01  # AdamW decay (never applied to the alpha logits)
GRAD_CLIP = 1.0  # max global gradient norm
VAL_FRACTION = 0.1  # held-out fraction
MAX_INPUT_LEN = 128  # truncation of the definitions
MAX_TARGET_LEN = 16  # truncation of the lemmas
N_PAIRS = 5000  # random pairs for the relational correlations (seed: 50000)
N_SIMPLICES = 300  # pentachora for the CV
PROMPTS = [  # prompts generated before / after training (greedy)
    "summarize: The cat is a small domesticated carnivorous mammal with soft fur.",
    "summarize: A triangle is a polygon with three edges and three vertices.",
    "summarize: Seven is a prime number that comes after six and before eight.",
]
MAX_NEW_TOKENS = 16  # generation length
CHECKPOINT_DIR = None  # where checkpoints go, None means OUT_DIR/checkpoint
RESUME = False  # resume from CHECKPOINT_DIR when a checkpoint exists there

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from geolip_lib import metrics, models, plotting, results
from geolip_lib import modulators as gm
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations, static_representations

NOTEBOOK = "09_modulator_training"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
ckpt = Path(CHECKPOINT_DIR) if CHECKPOINT_DIR else Path(out) / "checkpoint"
plotting.setup()
torch.manual_seed(SEED)
lm = models.load(MODEL)
metrics_out: dict = {}

# %% [markdown]
# ## 1. Data: matched WordNet entries, train/val split, representations before training

# %%
matched = match_lemmas(lm.tokenizer)
if N_MATCH_MAX is not None and len(matched) > N_MATCH_MAX:
    matched = matched.subset(np.sort(np.random.default_rng(SEED).choice(len(matched), N_MATCH_MAX, replace=False)))
M = len(matched)
train_idx, val_idx = gm.split_indices(M, VAL_FRACTION, seed=SEED)
enc_reps = definition_representations(lm, matched.definitions, max_length=MAX_INPUT_LEN, progress=False)
static_reps = static_representations(lm, matched.token_ids)
metrics_out["data"] = {"n": M, "n_train": len(train_idx), "n_val": len(val_idx),
                       "example": [matched.definitions[train_idx[0]], matched.lemmas[train_idx[0]]]}
print(metrics_out["data"])

# %% [markdown]
# ## 2. Modulator and frozen base
#
# Every base parameter is frozen; the modulator is attached by hooks to every encoder block
# (decoder LMs: every block). The base weights' SHA-256 is taken now and after training.

# %%
n_geo = min(N_GEO, N_ANCHOR, enc_reps.shape[1], M)
if INIT == "procrustes":
    modulator, info = gm.build_procrustes_modulator(lm, matched, enc_reps, static_reps, n_anchor=N_ANCHOR,
                                                    n_geo=n_geo, initial_alpha=INITIAL_ALPHA, seed=SEED)
else:
    cfg = lm.model.config
    modulator = gm.GeometricResidualModulator(enc_reps.shape[1], cfg.vocab_size, n_geo, gm.stack_size(lm),
                                              initial_alpha=INITIAL_ALPHA, seed=SEED)
n_frozen = gm.freeze(lm.model)
hash_before = gm.state_hash(lm.model)
n_train = sum(p.numel() for p in modulator.parameters() if p.requires_grad)
metrics_out["params"] = {"frozen": n_frozen, "trainable": n_train, "ratio_percent": 100 * n_train / n_frozen}
print(metrics_out["params"])


def loss_fn(idx):
    return gm.definition_lemma_loss(lm, matched, idx, max_input_len=MAX_INPUT_LEN, max_target_len=MAX_TARGET_LEN)


is_generative = lm.family in ("t5", "t5_v1_1", "decoder_lm")
gen_before = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS) if is_generative else []
if not is_generative:
    print(f"generation does not apply to {lm.family} (encoder-only); skipped")

# %% [markdown]
# ## 3. Gradients reach only the modulator

# %%
handle = gm.attach(lm, modulator)
loss0 = loss_fn(train_idx[:BATCH_SIZE])
loss0.backward()
base_grads = sum(p.grad is not None for p in lm.model.parameters())
mod_grads = sum(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in modulator.parameters())
modulator.zero_grad(set_to_none=True)
metrics_out["gradient_check"] = {"base_params_with_grad": base_grads, "modulator_params_with_grad": mod_grads,
                                 "n_modulator_params": len(list(modulator.parameters()))}
assert base_grads == 0, "a base parameter received a gradient"
print(metrics_out["gradient_check"])

# %% [markdown]
# ## 4. Training (checkpoint every epoch; `RESUME=True` continues from the last one)

# %%
steps_per_epoch = len(gm.batches(train_idx, BATCH_SIZE))
trainer = gm.ModulatorTrainer(modulator, lr=LR, weight_decay=WEIGHT_DECAY, gradient_clip=GRAD_CLIP,
                              total_steps=N_EPOCHS * steps_per_epoch)
if RESUME and (ckpt / gm.trainer.MODULATOR_FILE).exists():
    trainer.load(ckpt)
    print(f"resumed at epoch {trainer.epoch}, step {trainer.step_count}")
val_batches = gm.batches(val_idx, BATCH_SIZE)
epochs = []
while trainer.epoch < N_EPOCHS:
    train_loss = trainer.train_epoch(gm.batches(train_idx, BATCH_SIZE, seed=SEED + trainer.epoch), loss_fn)
    val_loss = trainer.evaluate(val_batches, loss_fn)
    trainer.save(ckpt)
    epochs.append({"epoch": trainer.epoch, "train_loss": train_loss, "val_loss": val_loss,
                   "alpha_mean": float(modulator.alphas.detach().mean())})
    print(epochs[-1])
handle.remove()
hash_after = gm.state_hash(lm.model)
metrics_out["training"] = {"epochs": epochs, "steps": trainer.step_count,
                           "loss_history": trainer.loss_history, "val_history": trainer.val_history,
                           "base_hash_before": hash_before, "base_hash_after": hash_after,
                           "base_unchanged": hash_before == hash_after}
assert hash_before == hash_after, "base weights changed during training"

# %% [markdown]
# ## 5. Alpha convergence

# %%
alpha_hist = np.stack(trainer.alpha_history)  # (steps + 1, n_layers)
final_alpha = modulator.alphas.detach().double().numpy()
metrics_out["alpha"] = {"final": final_alpha, "mean": float(final_alpha.mean()), "std": float(final_alpha.std()),
                        "history": alpha_hist,
                        "distance_to": {str(c): float(abs(final_alpha.mean() - c))
                                        for c in (gm.GOLDEN_ALPHA, 0.5, 1 - gm.GOLDEN_ALPHA)}}
fig, axes = plt.subplots(1, 3, figsize=(16, 4))
for layer in range(alpha_hist.shape[1]):
    axes[0].plot(alpha_hist[:, layer], label=f"L{layer}")
axes[0].axhline(gm.GOLDEN_ALPHA, color="red", ls="--", label="0.29154")
axes[0].set(title="alpha per layer", xlabel="step", ylabel="alpha")
axes[0].legend(fontsize=7)
axes[1].plot(trainer.loss_history, label="train (per step)")
axes[1].plot([v["step"] for v in trainer.val_history], [v["loss"] for v in trainer.val_history], "o-", label="val")
axes[1].set(title="loss", xlabel="step")
axes[1].legend()
axes[2].bar(range(len(final_alpha)), final_alpha, color="teal")
axes[2].axhline(gm.GOLDEN_ALPHA, color="red", ls="--")
axes[2].set(title="final alpha per layer", xlabel="layer")
plotting.savefig(fig, out, "training")
plt.show()

# %% [markdown]
# ## 6. After training: relational measures, preservation, pentachoron CV, generation

# %%
with gm.attach(lm, modulator):
    trained_reps = definition_representations(lm, matched.definitions, max_length=MAX_INPUT_LEN, progress=False)
    gen_after = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS) if is_generative else []
pi, pj = gm.sample_pairs(M, N_PAIRS, seed=SEED)
sim = gm.wordnet_pair_similarity(matched, pi, pj, "path")
rel = gm.relational_comparison(sim, {"Original": enc_reps, "Trained": trained_reps}, pi, pj)
pres = gm.per_token_preservation(enc_reps, trained_reps)
cv = {k: metrics.pentachoron_cv(v, N_SIMPLICES, seed=SEED).as_dict()
      for k, v in {"Original": enc_reps, "Trained": trained_reps}.items()}
generation = gm.compare_generations(gen_before, gen_after)
metrics_out.update(relational=rel, preservation=pres, pentachoron=cv, generation=generation,
                   health=modulator.geometric_residuals(seed=SEED))
display_cols = ("pearson", "spearman", "gradient")
print(pd.DataFrame({k: {c: rel[k][c] for c in display_cols} for k in ("Original", "Trained")}).T)
print(f"per-token preservation {pres['mean']:.6f}")
pd.DataFrame(generation)

# %% [markdown]
# ## Results

# %%
headline = {
    "final_alpha_mean": results.headline(float(final_alpha.mean()), baseline=INITIAL_ALPHA,
                                         baseline_kind="initial alpha", label="final alpha (mean)"),
    "val_loss": results.headline(trainer.val_history[-1]["loss"] if trainer.val_history else float("nan"),
                                 label="val loss"),
    "trained_pearson": results.headline(rel["Trained"]["pearson"], baseline=rel["Original"]["pearson"],
                                        baseline_kind="unmodulated", label="Pearson (trained)"),
    "per_token_preservation": results.headline(pres["mean"], label="per-token cos(orig, trained)"),
}
results.record(out, metrics_out, notebook=NOTEBOOK, model=MODEL, headline=headline,
               parameters={"N_EPOCHS": N_EPOCHS, "LR": LR, "INIT": INIT, "N_GEO": n_geo, "SEED": SEED})
print({k: v["value"] for k, v in headline.items()})

# %% [markdown]
# ## References
#
# - Seed 001, §9. Differences: hooks instead of a re-implemented encoder; labels shifted by
#   the model (the seed's decoder input was the unshifted target); no weight decay on the
#   alpha logits (decay pulls alpha toward 0.5); a cosine schedule per step rather than per
#   epoch; safetensors checkpoints with resume; base weights verified unchanged by hash.
