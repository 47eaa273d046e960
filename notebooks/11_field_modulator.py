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
# # 11 · Geometric field modulator (multi-expert k-simplex gating)
#
# **Question.** Can k-simplex channel experts (edge, triangle, pentachoron) gate the
# residual stream multiplicatively — leaving a null space untouched, alphas clamped below
# the binding boundary — while the model learns a task, and does the representation's
# pentachoron CV stay inside the seed's universal band?
#
# **Seed.** Seed 001 §12 (GeometricFieldModulator, FieldModulatorTrainer, self-test).

# %% tags=["parameters"]
MODEL = "tiny-t5"  # a params/models/<name>.yaml name (text model with a tokenizer)
OUT_DIR = None  # job directory for metrics.json, PNGs and the checkpoint
SEED = 42  # seed of the subset, the split, the batches and the parameter init
EXPERT_KS = [1, 2, 4]  # simplex orders of the experts (edge, triangle, pentachoron)
EXPERT_EDIM = 8  # simplex embedding dimension (at least max k)
INITIAL_ALPHA = 0.01  # starting alpha of every (layer, expert)
ALPHA_MIN = 0.001  # alpha floor
ALPHA_MAX = 0.35  # alpha ceiling
NULL_FRACTION = 0.25  # fraction of residual dims never touched
NULL_POSITION = "tail"  # "tail" or "random" (seeded)
GRADIENT_SCALE = 0.1  # LR scale of the expert parameters
CV_TARGET = 0.21  # pentachoron CV band centre (seed: universal band 0.20-0.23)
CV_TOLERANCE = 0.05  # band half-width
PATIENCE = 5  # early stop after this many consecutive out-of-band checks
CHECK_EVERY = 2  # steps between CV checks
N_MATCH_MAX = 160  # matched WordNet entries used (a seeded random subset), None for all
N_EPOCHS = 2  # epochs
BATCH_SIZE = 32  # examples per step
LR = 1e-3  # base learning rate
N_SIMPLICES = 300  # pentachora per CV check
N_PAIRS = 5000  # random pairs for the relational correlations

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from geolip_lib import metrics, models, plotting, results
from geolip_lib import modulators as gm
from geolip_lib.lexical.matching import match_lemmas
from geolip_lib.lexical.representations import definition_representations

NOTEBOOK = "11_field_modulator"
out = results.job_dir(OUT_DIR, NOTEBOOK, MODEL)
plotting.setup()
torch.manual_seed(SEED)
lm = models.load(MODEL)
metrics_out: dict = {}
cfg_model = lm.model.config
d_model = getattr(cfg_model, "d_model", None) or cfg_model.hidden_size
config = gm.FieldModulatorConfig(d_model=d_model, n_layers=gm.stack_size(lm), expert_ks=tuple(EXPERT_KS),
                                 expert_edim=EXPERT_EDIM, initial_alpha=INITIAL_ALPHA, alpha_min=ALPHA_MIN,
                                 alpha_max=ALPHA_MAX, null_space_fraction=NULL_FRACTION,
                                 null_space_position=NULL_POSITION, gradient_scale=GRADIENT_SCALE,
                                 cv_target=CV_TARGET, cv_tolerance=CV_TOLERANCE, seed=SEED)
modulator = gm.GeometricFieldModulator(config)

# %% [markdown]
# ## 1. Self-test (the seed's checks, made exact)
#
# Parameter count of the seed's configuration (38,552), template edges all equal and
# centred, template volumes equal to the closed form, null space untouched bit for bit,
# alpha clamping, CV check on a Gaussian.

# %%
x = torch.randn(2, 16, d_model, generator=torch.Generator().manual_seed(SEED))
checks = {"seed_config_params": sum(p.numel() for p in gm.GeometricFieldModulator(gm.FieldModulatorConfig()).parameters())}
for k in EXPERT_KS:
    t = gm.regular_simplex(k, EXPERT_EDIM, torch.float64)
    e = torch.cdist(t, t)[torch.triu_indices(k + 1, k + 1, 1).unbind()]
    checks[f"template_k{k}_edge_spread"] = float(e.max() - e.min())
    checks[f"template_k{k}_centroid_norm"] = float(t.mean(0).norm())
    checks[f"template_k{k}_volume_rel_error"] = float(
        abs(gm.CMValidator(k)(t)[1].sqrt() - gm.regular_simplex_volume(k)) / gm.regular_simplex_volume(k))
with torch.no_grad():
    o = modulator(x, 0)
checks["null_space_untouched"] = bool(torch.equal(o.residual[..., modulator.null_mask], x[..., modulator.null_mask]))
checks["n_active"], checks["n_null"] = modulator.n_active, modulator.n_null
checks["alphas_within_clamp"] = bool(((modulator.alphas >= ALPHA_MIN) & (modulator.alphas <= ALPHA_MAX)).all())
checks["gaussian_cv"] = modulator.cv_check(torch.randn(1000, d_model, generator=torch.Generator().manual_seed(SEED)),
                                           n_simplices=N_SIMPLICES, seed=SEED)
checks["params"] = sum(p.numel() for p in modulator.parameters())
metrics_out["self_test"] = checks
assert checks["null_space_untouched"] and checks["alphas_within_clamp"]
checks

# %% [markdown]
# ## 2. Training on the definition → lemma task, with CV-band monitoring
#
# Base frozen (hash checked); the trainer uses three parameter groups (experts at
# `GRADIENT_SCALE`×LR, alphas at 0.5×LR without weight decay, gates at LR), gradient
# clipping, alpha history per step; every `CHECK_EVERY` steps the CV of the modulated
# definition representations (active dims) is checked; `PATIENCE` consecutive
# out-of-band checks stop training early.

# %%
matched = match_lemmas(lm.tokenizer)
if N_MATCH_MAX is not None and len(matched) > N_MATCH_MAX:
    matched = matched.subset(np.sort(np.random.default_rng(SEED).choice(len(matched), N_MATCH_MAX, replace=False)))
M = len(matched)
train_idx, val_idx = gm.split_indices(M, 0.1, seed=SEED)
enc_reps = definition_representations(lm, matched.definitions, progress=False)
gm.freeze(lm.model)
hash_before = gm.state_hash(lm.model)
trainer = gm.ModulatorTrainer(modulator, lr=LR)
metrics_out["lr_groups"] = {g["name"]: g["lr"] for g in trainer.optimizer.param_groups}


def loss_fn(idx):
    return gm.definition_lemma_loss(lm, matched, idx)


def probe_reps():
    modulator.eval()
    r = definition_representations(lm, matched.definitions, progress=False)
    modulator.train()
    return r


stopped_early = False
with gm.attach(lm, modulator):
    trainer.check_cv(probe_reps(), n_simplices=N_SIMPLICES, seed=SEED)
    for epoch in range(N_EPOCHS):
        modulator.train()
        for b in gm.batches(train_idx, BATCH_SIZE, seed=SEED + epoch):
            trainer.step(loss_fn(b))
            if trainer.step_count % CHECK_EVERY == 0:
                trainer.check_cv(probe_reps(), n_simplices=N_SIMPLICES, seed=SEED)
                if trainer.should_stop(PATIENCE):
                    stopped_early = True
                    break
        trainer.evaluate(gm.batches(val_idx, BATCH_SIZE), loss_fn)
        print(f"epoch {epoch + 1}: train {np.mean(trainer.loss_history[-len(train_idx) // BATCH_SIZE:]):.4f} "
              f"val {trainer.val_history[-1]['loss']:.4f} CV {trainer.cv_history[-1]['cv']:.4f}")
        if stopped_early:
            print(f"early stop: CV outside [{CV_TARGET - CV_TOLERANCE:.2f}, {CV_TARGET + CV_TOLERANCE:.2f}] "
                  f"for {PATIENCE} checks")
            break
    modulator.eval()
    mod_reps = definition_representations(lm, matched.definitions, progress=False)
trainer.save(Path(out) / "checkpoint")
hash_after = gm.state_hash(lm.model)
assert hash_before == hash_after, "base weights changed"
metrics_out["training"] = {"steps": trainer.step_count, "stopped_early": stopped_early,
                           "loss_history": trainer.loss_history, "val_history": trainer.val_history,
                           "cv_history": trainer.cv_history, "base_unchanged": hash_before == hash_after,
                           "alpha_history_mean": [float(a.mean()) for a in trainer.alpha_history]}

# %% [markdown]
# ## 3. Validity, health report, CV band and relational effect

# %%
health = modulator.health_report()
pi, pj = gm.sample_pairs(M, N_PAIRS, seed=SEED)
sim = gm.wordnet_pair_similarity(matched, pi, pj, "path")
rel = gm.relational_comparison(sim, {"Original": enc_reps, "Field": mod_reps}, pi, pj)
pres = gm.per_token_preservation(enc_reps, mod_reps)
cv_final = modulator.cv_check(mod_reps, n_simplices=N_SIMPLICES, seed=SEED)
cv_orig = modulator.cv_check(enc_reps, n_simplices=N_SIMPLICES, seed=SEED)
metrics_out.update(health=health, validity=modulator.validity(), relational=rel, preservation=pres,
                   cv={"original": cv_orig, "final": cv_final})
cvh = pd.DataFrame(trainer.cv_history)
fig, axes = plt.subplots(1, 3, figsize=(16, 4))
axes[0].plot(cvh["step"], cvh["cv"], "o-")
axes[0].axhspan(CV_TARGET - CV_TOLERANCE, CV_TARGET + CV_TOLERANCE, color="green", alpha=0.15, label="band")
axes[0].set(title="pentachoron CV (active dims)", xlabel="step")
axes[0].legend()
sns.heatmap(modulator.alphas.detach().numpy(), annot=True, fmt=".3f", ax=axes[1],
            xticklabels=[f"k{k}" for k in EXPERT_KS], cbar=False)
axes[1].set(title="final alpha (layer × expert)", ylabel="layer")
axes[2].plot(trainer.loss_history)
axes[2].set(title="training loss", xlabel="step")
plotting.savefig(fig, out, "field_modulator")
plt.show()
pd.Series({k: v for k, v in health.items() if not isinstance(v, list)})

# %% [markdown]
# ## Results

# %%
headline = {
    "final_cv": results.headline(cv_final["cv"], baseline=cv_orig["cv"], baseline_kind="unmodulated",
                                 label="pentachoron CV (active dims)"),
    "cv_in_band": results.headline(float(cv_final["in_band"]), label="CV in band"),
    "validity_mean": results.headline(health.get("validity_mean"), label="validity (vol² > 0)"),
    "per_token_preservation": results.headline(pres["mean"], label="per-token cos(orig, field)"),
}
results.record(out, metrics_out, notebook=NOTEBOOK, model=MODEL, headline=headline,
               parameters={"EXPERT_KS": EXPERT_KS, "N_EPOCHS": N_EPOCHS, "LR": LR, "SEED": SEED})
print({k: v["value"] for k, v in headline.items()})

# %% [markdown]
# ## References
#
# - Seed 001, §12. Fixes: the regular simplex template now has equal edges (the seed's
#   diagonal formula did not); the "random" null space indexes the active dims (the seed fed
#   a d_model-wide masked tensor to experts built for n_active inputs — a shape error); the
#   CV check samples distinct rows of the whole matrix in all active dims (the seed used the
#   first `expert_edim` coordinates and allowed repeated rows); validity is a bias-corrected
#   EMA; no weight decay on alpha logits; the step counter counts modulator calls.
# - The expert's sigmoid validity head does not feed the gate (as in the seed); it is reported
#   per position in `FieldModulatorOutput.expert_validity` and receives no gradient.
