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
#
# **Seed-comparable modes.** The project's corrections change numbers the seed reported,
# so both trainings are computed and labelled. "project": the objective above (labels
# shifted right by the model), no weight decay on the alpha logits, a cosine schedule per
# step. "seed" (`SEED_MODE_TRAINING`): §9 as written, from the same initial modulator —
# the unshifted target fed as decoder input and scored at the same positions (**it leaks
# the answer**: position t reads the token it must predict), the decoder output sent to
# `lm_head` without T5's `d_model ** -0.5` rescaling, AdamW decay 0.01 on every parameter
# including the alpha logits, a cosine schedule stepped once per epoch, and the split and
# batch order drawn draw for draw from one `default_rng(SEED)` as the seed's cell did. The
# seed's objective exists for T5 only: on other families (MiniLM, the encoder-only stand-in)
# the seed-mode run cannot be made and the notebook says so. Relational correlations use
# pairs over all entries ("project") and pairs within the seed's 3000-entry subset
# ("seed"). The modulator lift, the seed's best result (+152 % Pearson, +189 % Spearman),
# is reported for every combination; "as the seed measured" is the seed-mode run on the
# seed's pairs.

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json, PNGs and the checkpoint; None -> reports/adhoc/...
SEED = 42  # [0 ≤ x < 2**32] seed of the subset, the split, the batches and the modulator init
N_MATCH_MAX = 160  # [x is None or 5 ≤ x ≤ 10**7] matched WordNet entries used (a seeded random subset), None for all
N_ANCHOR = 60  # [2 ≤ x ≤ 10**7] anchors of the Procrustes initialisation (seed: 3000)
N_GEO = 8  # [1 ≤ x ≤ 2**16] geometric dimensions (seed: 64)
INIT = "procrustes"  # [x in ("procrustes", "random")] "procrustes" (the §8 pipeline) or "random"
INITIAL_ALPHA = 0.01  # [0 < x < 1] starting alpha at every layer (the seed reset alpha to 0.01)
N_EPOCHS = 2  # [1 ≤ x ≤ 10**5] epochs (seed: 10)
BATCH_SIZE = 32  # [1 ≤ x ≤ 2**16] examples per step
LR = 1e-3  # [0 < x ≤ 10] AdamW learning rate (cosine schedule over all steps)
WEIGHT_DECAY = 0.01  # [x ≥ 0] AdamW decay (project: never applied to the alpha logits)
SEED_MODE_TRAINING = True  # also train a copy (same init and batches) with the seed's decay on the alpha logits
SEED_N_REL = 3000  # [2 ≤ x ≤ 10**7] entries of the seed's relational subset (the seed's definition of the lift)
GRAD_CLIP = 1.0  # [x is None or x > 0] max global gradient norm
VAL_FRACTION = 0.1  # [0 < x < 1] held-out fraction
MAX_INPUT_LEN = 128  # [1 ≤ x ≤ 10**6] truncation of the definitions
MAX_TARGET_LEN = 16  # [1 ≤ x ≤ 10**6] truncation of the lemmas
N_PAIRS = 5000  # [1 ≤ x ≤ 10**8] random pairs for the relational correlations (seed: 50000)
N_SIMPLICES = 300  # [2 ≤ x ≤ 10**6] pentachora for the CV
PROMPTS = [  # [all(len(p) ≥ 1 for p in x)] prompts generated before / after training (greedy; seed §9's four)
    "summarize: The cat is a small domesticated carnivorous mammal with soft fur.",
    "translate English to German: The geometric structure of language is a universal attractor.",
    "summarize: A triangle is a polygon with three edges and three vertices.",
    "summarize: Seven is a prime number that comes after six and before eight.",
]
MAX_NEW_TOKENS = 16  # [1 ≤ x ≤ 10**5] generation length
CHECKPOINT_DIR = None  # where checkpoints go, None means OUT_DIR/checkpoint
RESUME = False  # resume from CHECKPOINT_DIR when a checkpoint exists there

# %%
import copy
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from geolip_lib import metrics as M
from geolip_lib import modulators as gm
from geolip_lib import results, runtime
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations, static_representations
from geolip_lib.modulators import plots, stats

job = runtime.start("09_modulator_training", globals())  # job dir, style, inline figures, seeds, job.lm = MODEL
lm = job.lm
ckpt = Path(CHECKPOINT_DIR) if CHECKPOINT_DIR else job.out / "checkpoint"
metrics: dict = {}

# %% [markdown]
# ## 1. Data: matched WordNet entries, train/val split, representations before training

# %%
matched = match_lemmas(lm.tokenizer)
if N_MATCH_MAX is not None and len(matched) > N_MATCH_MAX:
    matched = matched.subset(np.sort(np.random.default_rng(SEED).choice(len(matched), N_MATCH_MAX, replace=False)))
n_used = len(matched)
train_idx, val_idx = gm.split_indices(n_used, VAL_FRACTION, seed=SEED)
encode = partial(definition_representations, lm, matched.definitions, max_length=MAX_INPUT_LEN, progress=False)
enc_reps = encode()
static_reps = static_representations(lm, matched.token_ids)
metrics["data"] = {"n": n_used, "n_train": len(train_idx), "n_val": len(val_idx),
                   "example": [matched.definitions[train_idx[0]], matched.lemmas[train_idx[0]]]}
job.table({k: v for k, v in metrics["data"].items() if k != "example"}, caption="Entries and the train/val split")
job.table({"definition": [metrics["data"]["example"][0]], "lemma": [metrics["data"]["example"][1]]},
          caption="A training example (definition → lemma)", index=False)

# %% [markdown]
# ## 2. Modulator and frozen base
#
# Every base parameter is frozen; the modulator is attached by hooks to every encoder block
# (decoder LMs: every block). The base weights' SHA-256 is taken now and after training.

# %%
n_geo = min(N_GEO, N_ANCHOR, enc_reps.shape[1], n_used)
if INIT == "procrustes":
    modulator, info = gm.build_procrustes_modulator(lm, matched, enc_reps, static_reps, n_anchor=N_ANCHOR,
                                                    n_geo=n_geo, initial_alpha=INITIAL_ALPHA, seed=SEED)
else:
    modulator = gm.GeometricResidualModulator(enc_reps.shape[1], lm.model.config.vocab_size, n_geo,
                                              gm.stack_size(lm), initial_alpha=INITIAL_ALPHA, seed=SEED)
initial_modulator = copy.deepcopy(modulator)  # the seed-mode run starts from the same weights
n_frozen = gm.freeze(lm.model)
hash_before = gm.state_hash(lm.model)
n_train = sum(p.numel() for p in modulator.parameters() if p.requires_grad)
metrics["params"] = {"frozen": n_frozen, "trainable": n_train, "ratio_percent": 100 * n_train / n_frozen}
job.table(metrics["params"], caption="Parameters: frozen base vs trainable modulator")

# %%
loss_fn = partial(gm.definition_lemma_loss, lm, matched, max_input_len=MAX_INPUT_LEN, max_target_len=MAX_TARGET_LEN)
is_generative = lm.is_generative
gen_before = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS) if is_generative else []
if not is_generative:
    print(f"Generation does not apply to {lm.family} (encoder-only); skipped.")

# %% [markdown]
# ## 3. Gradients reach only the modulator

# %%
handle = gm.attach(lm, modulator)
loss0 = loss_fn(train_idx[:BATCH_SIZE])
loss0.backward()
base_grads = sum(p.grad is not None for p in lm.model.parameters())
mod_grads = sum(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in modulator.parameters())
modulator.zero_grad(set_to_none=True)
metrics["gradient_check"] = {"base_params_with_grad": base_grads, "modulator_params_with_grad": mod_grads,
                             "n_modulator_params": len(list(modulator.parameters()))}
assert base_grads == 0, "a base parameter received a gradient"
job.table(metrics["gradient_check"], caption="Gradient check after one backward pass")

# %% [markdown]
# ## 4. Training (checkpoint every epoch; `RESUME=True` continues from the last one)
#
# Checkpoints go to `CHECKPOINT_DIR` (default: `checkpoint/` in the job directory).

# %%
steps_per_epoch = len(gm.batches(train_idx, BATCH_SIZE))
trainer = gm.ModulatorTrainer(modulator, lr=LR, weight_decay=WEIGHT_DECAY, gradient_clip=GRAD_CLIP,
                              total_steps=N_EPOCHS * steps_per_epoch)
if RESUME and (ckpt / gm.trainer.MODULATOR_FILE).exists():
    trainer.load(ckpt)
    print(f"Resumed at epoch {trainer.epoch}, step {trainer.step_count}.")
epochs = gm.run_epochs(trainer, loss_fn, train_idx, val_idx, n_epochs=N_EPOCHS, batch_size=BATCH_SIZE, seed=SEED,
                       checkpoint=ckpt)
job.table(pd.DataFrame(epochs), caption="Epochs run in this session", index=False)

# %%
handle.remove()
hash_after = gm.state_hash(lm.model)
metrics["training"] = {"epochs": epochs, "steps": trainer.step_count,
                       "loss_history": trainer.loss_history, "val_history": trainer.val_history,
                       "base_hash_before": hash_before, "base_hash_after": hash_after,
                       "base_unchanged": hash_before == hash_after}
assert hash_before == hash_after, "base weights changed during training"
print(f"Base weights unchanged by training (SHA-256 {hash_after[:12]}…); checkpoint in {ckpt.name}/.")

# %% [markdown]
# ### Seed mode: §9's training as written
#
# From the same initial modulator (alpha reset to `INITIAL_ALPHA`, as §9 did), with §9's
# objective (`gm.seed_section9_loss`: the unshifted target as decoder input and labels, so
# the answer leaks; no `d_model ** -0.5` before the tied head), its optimiser
# (`AdamW(modulator.parameters(), weight_decay=0.01)`: the alpha logits decay too, which
# pulls alpha toward 0.5), its schedule (`CosineAnnealingLR(T_max=N_EPOCHS)` stepped per
# epoch) and its draws (`gm.seed_training_schedule`: split, then each epoch's order, from
# one `default_rng(SEED)`). Its training and validation losses are of the leaky objective,
# so they are not comparable with the project's. Not checkpointed.

# %%
seed_trainer, metrics["seed_mode"] = gm.seed_mode_training(
    lm, matched, initial_modulator, enabled=SEED_MODE_TRAINING, n_epochs=N_EPOCHS, batch_size=BATCH_SIZE, lr=LR,
    weight_decay=WEIGHT_DECAY, gradient_clip=GRAD_CLIP, val_fraction=VAL_FRACTION, seed=SEED,
    max_input_len=MAX_INPUT_LEN, max_target_len=MAX_TARGET_LEN)
seed_mod = initial_modulator if metrics["seed_mode"]["ran"] else None
seed_mode_reason = metrics["seed_mode"].get("reason")
assert gm.state_hash(lm.model) == hash_before, "base weights changed during seed-mode training"
if seed_mod is not None:
    job.table(pd.DataFrame(metrics["seed_mode"]["epochs"]),
              caption="Seed-mode run (§9 as written; leaky objective): epochs", index=False)
else:
    print(f"Seed-mode training not run: {seed_mode_reason}. Only the project's run is measured.")


# %% [markdown]
# ## 5. Alpha convergence

# %%
alpha_hist = np.stack(trainer.alpha_history)  # (steps + 1, n_layers)
final_alpha = modulator.alphas.detach().cpu().double().numpy()
seed_alpha = seed_mod.alphas.detach().cpu().double().numpy() if seed_mod is not None else None
metrics["alpha"] = {"final": final_alpha, "mean": float(final_alpha.mean()), "std": float(final_alpha.std()),
                    "history": alpha_hist,
                    "distance_to": {str(c): float(abs(final_alpha.mean() - c))
                                    for c in (gm.GOLDEN_ALPHA, 0.5, 1 - gm.GOLDEN_ALPHA)},
                    "seed_mode": None if seed_alpha is None else {"final": seed_alpha, "mean": float(seed_alpha.mean()),
                                                                  "history": np.stack(seed_trainer.alpha_history)}}
job.figure(plots.training_summary(alpha_hist, trainer.loss_history, trainer.val_history, final_alpha), "training",
           key=True)

# %%
job.table(pd.DataFrame({"project (no decay on alpha)": final_alpha, **({} if seed_alpha is None else
                        {"seed (§9 as written)": seed_alpha})}).rename_axis("layer"),
          caption="Final alpha per layer", formats={"project (no decay on alpha)": "{:.4f}",
                                                    "seed (§9 as written)": "{:.4f}"})
job.table(metrics["alpha"]["distance_to"], caption="|mean final alpha − c| for the seed's reference points")

# %% [markdown]
# ## 6. After training: validation loss, relational measures, preservation, pentachoron CV, generation
#
# The validation loss is re-measured item by item (the mean over the validation entries, so
# its interval resamples them), with the trained modulator and, as the null, without it.
# Correlations with WordNet path similarity: paired bootstrap over the scored pairs;
# preservation: bootstrap over the entries.

# %%
modulator.eval()
with gm.attach(lm, modulator):
    trained_reps = encode()
    gen_after = gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS) if is_generative else []
    val_items = gm.per_item_losses(lm, matched, val_idx, max_input_len=MAX_INPUT_LEN, max_target_len=MAX_TARGET_LEN)
val_items_orig = gm.per_item_losses(lm, matched, val_idx, max_input_len=MAX_INPUT_LEN, max_target_len=MAX_TARGET_LEN)
val_iv = {k: M.intervals.bootstrap(v, seed=SEED, what="validation entries")
          for k, v in {"trained": val_items, "unmodulated": val_items_orig}.items()}
metrics["val_items"] = {"trained_mean": float(val_items.mean()), "unmodulated_mean": float(val_items_orig.mean()),
                        "n": len(val_items), "trainer_val_loss": trainer.val_history[-1]["loss"] if trainer.val_history else None}
job.table({"trained modulator": stats.iv_text(val_items.mean(), val_iv["trained"]),
           "unmodulated": stats.iv_text(val_items_orig.mean(), val_iv["unmodulated"])},
          caption=f"Validation loss: mean over {len(val_items)} entries [95 % interval]")

# %%
pi, pj = gm.sample_pairs(n_used, N_PAIRS, seed=SEED)
sim = gm.wordnet_pair_similarity(matched, pi, pj, "path")
reps = {"Original": enc_reps, "Trained": trained_reps}
rel = gm.relational_comparison(sim, reps, pi, pj)
rel_iv = stats.relational_intervals(sim, reps, pi, pj, seed=SEED)
pres_cos = gm.per_token_cosines(enc_reps, trained_reps)
pres_iv = M.intervals.bootstrap(pres_cos, seed=SEED, what="entries")
pres = gm.per_token_preservation(enc_reps, trained_reps)
cv = {k: M.pentachoron_cv(v, N_SIMPLICES, seed=SEED).as_dict() for k, v in reps.items()}
generation = gm.compare_generations(gen_before, gen_after)
metrics.update(relational=rel, preservation=pres, pentachoron=cv, generation=generation,
               health=modulator.geometric_residuals(seed=SEED))
rel_table = stats.relational_frame(rel, rel_iv)

# %%
job.table(rel_table.drop(columns=["pearson", "lo", "hi"]),
          caption=f"Correlation with WordNet path similarity over {rel['n_pairs']} scored pairs")
job.figure(plots.correlation_intervals(rel_table), "relational_correlations", key=True)
job.table({**pres, "mean [95 %]": stats.iv_text(pres["mean"], pres_iv)},
          caption="Per-token preservation cos(original, trained) over the entries")
job.table(pd.DataFrame(cv).T[["cv", "mean", "n_valid"]], caption=f"Pentachoron volume CV ({N_SIMPLICES} simplices)")
if generation:
    job.table(pd.DataFrame(generation), caption="Greedy generation before / after training", index=False)

# %% [markdown]
# ## 7. Modulator lift: (modulated − unmodulated) / |unmodulated|, seed and project definitions
#
# The seed's best modulator result is a relative lift of the relational correlation with
# WordNet path similarity: Pearson +152 %, Spearman +189 % (T5-small). It was measured on
# pairs drawn within a 3000-entry subset (`default_rng(42)`: the subset, then the pairs, from
# one generator); the project draws pairs over all entries. Both pair definitions are applied
# to both training runs: "seed" training is §9 as written (the leaky unshifted target),
# "project" the corrected one. Intervals: paired bootstrap over the scored pairs, both
# correlations recomputed on each resample. Values are fractions (1.52 = +152 %).
#
# **Recorded for the claims** (`metrics["claims"]`, read by `geolip_lib.claims`):
# - `modulator_lift.{pearson,spearman}`: the lift *as the seed measured it* (seed-mode run,
#   seed's pairs; `as_seed_measured: true`), or — where the seed-mode run cannot be made —
#   the project's run on the seed's pairs (`as_seed_measured: false`, the reason in its
#   note); `.project` is the corrected run on pairs over all entries; `.variants` holds all
#   four `"<training>_training|<pairs>_pairs"` combinations;
# - `modulator_lift_cv.{original,project,seed}`: pentachoron CV of the encoder
#   representations (the seed's "CV stayed in the universal band"), interval over the
#   simplices, with `band` = [0.20, 0.23], `in_band` and `in_band_interval`;
# - `modulator_lift_coherence`: `<run>_preservation` (per-token cos, interval over the
#   entries) and `<run>_generation_identical` (fraction of prompts whose greedy generation
#   is unchanged, exact over the prompts; absent for encoder-only models, reason under
#   `generation`) and `<run>_generation_coherent` (the text read: of the prompts whose
#   unmodulated generation is coherent, the fraction whose modulated one is unchanged or
#   coherent too — not empty, no repetition loop, `stats.text_degeneracy`) — what
#   "coherence preserved" can be measured by; the claim reads the cosine and the text.

# %%
si, sj, seed_subset = gm.seed_relational_pairs(n_used, SEED_N_REL, N_PAIRS, seed=SEED)
pair_defs = {"project": (pi, pj, sim), "seed": (si, sj, gm.wordnet_pair_similarity(matched, si, sj, "path"))}
runs, gens = {"project": trained_reps}, {"project": generation}
if seed_mod is not None:
    seed_mod.eval()
    with gm.attach(lm, seed_mod):
        runs["seed"] = encode()
        gens["seed"] = gm.compare_generations(
            gen_before, gm.greedy_generate(lm.model, lm.tokenizer, PROMPTS, MAX_NEW_TOKENS) if is_generative else [])
    metrics["seed_mode"]["generation"] = gens["seed"]

# %%
lift = {run: {d: stats.modulator_lift(s_, R, enc_reps, i_, j_, seed=SEED) for d, (i_, j_, s_) in pair_defs.items()}
        for run, R in runs.items()}
lift_table = stats.lift_frame(lift)
metrics["lift"] = {"seed_subset_size": len(seed_subset), "runs": lift, "table": lift_table.to_dict("records")}
metrics["claims"] = stats.modulator_claims(
    lift, enc_reps, runs, gens, N_SIMPLICES, seed=SEED, seed_mode_reason=seed_mode_reason,
    why_no_generation=None if is_generative else f"{lm.family} is encoder-only: it generates no text")


# %%
job.table(lift_table[["training", "pairs", "n_pairs", "Pearson lift [95 %]", "pearson orig → mod",
                      "Spearman lift [95 %]", "spearman orig → mod"]],
          caption="Modulator lift (fractions; seed: Pearson +1.52, Spearman +1.89)", index=False)
job.figure(plots.lift_intervals(lift_table, stats.SEED_LIFT), "modulator_lift", key=True)

# %% [markdown]
# ### The rest of the seed's claim: "coherence preserved, CV stayed in universal band"
#
# The CV is that of the encoder representations (the mean-pooled definitions §9 measured),
# before and after training, against the seed's band 0.20–0.23; coherence is read from
# per-token preservation and from the greedy generations before / after training.

# %%
cv_claims, coh_claims = metrics["claims"]["modulator_lift_cv"], metrics["claims"]["modulator_lift_coherence"]
job.table(pd.DataFrame({k: {"CV [95 %]": stats.iv_text(h["value"], h["interval"]),
                            "in band 0.20–0.23": h["in_band"],
                            "band verdict over resamples": f"[{h['in_band_interval'].lo:g}, {h['in_band_interval'].hi:g}]"}
                        for k, h in cv_claims.items()}).T.rename_axis("representations"),
          caption=f"Pentachoron CV of the encoder representations ({N_SIMPLICES} simplices)")
job.table(pd.DataFrame({k: {"value": stats.iv_text(h["value"], h["interval"]), "what": h["label"]}
                        for k, h in coh_claims.items() if k != "generation"}).T,
          caption="Coherence measures" + ("" if coh_claims["generation"]["applies"] else
                                          f" (no generation: {coh_claims['generation']['reason']})"))


# %% [markdown]
# ## Results
#
# Numbers from one training run: the final alpha is a deterministic outcome of that run
# (one run gives no seed spread, so it is marked exact); the validation loss and the
# post-training measures carry bootstrap intervals over their items.

# %%
job.finish(metrics, {
    "final_alpha_mean": results.headline(float(final_alpha.mean()), interval="exact", label="final alpha (mean)",
        fmt=".4f", nulls={"initial alpha": INITIAL_ALPHA},
        note="One training run: no interval over seeds; the value is exact for this run and seed."),
    "val_loss": results.headline(float(val_items.mean()), interval=val_iv["trained"], label="val loss", fmt=".4f",
        nulls={"unmodulated": {"value": float(val_items_orig.mean()), "interval": val_iv["unmodulated"]}},
        note="Mean of per-entry losses (the trainer's batch-weighted value is metrics.val_items.trainer_val_loss)."),
    "trained_pearson": results.headline(rel["Trained"]["pearson"], interval=rel_iv["Trained"]["pearson"],
        label="Pearson (trained)", fmt=".4f",
        nulls={"original": {"value": rel["Original"]["pearson"], "interval": rel_iv["Original"]["pearson"]}}),
    "per_token_preservation": results.headline(float(pres_cos.mean()), interval=pres_iv, fmt=".6f",
        label="per-token cos(orig, trained)", nulls={"original (identity)": 1.0}),
    **stats.lift_headlines(metrics["claims"]),

})

# %% [markdown]
# ## References
#
# - Seed 001, §9. Differences: hooks instead of a re-implemented encoder; labels shifted by
#   the model (the seed's decoder input was the unshifted target); no weight decay on the
#   alpha logits (decay pulls alpha toward 0.5); a cosine schedule per step rather than per
#   epoch; safetensors checkpoints with resume; base weights verified unchanged by hash.
#   The seed's training as written (unshifted target, no rescaling before the tied head,
#   decay on the alpha logits, per-epoch schedule, its own draws) and its 3000-entry
#   relational subset are kept computable (seed-mode run, seed definition of the lift) and
#   labelled "seed"; on families §9 did not train (MiniLM) the seed-mode run is not made
#   and `metrics.seed_mode.reason` says why.

