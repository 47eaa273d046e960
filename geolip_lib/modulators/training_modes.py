"""A modulator trained on the definition -> lemma task in one call, the seed's way or the
project's (seed 001 §9): used where a notebook needs a trained modulator beside the
Procrustes-initialised one (notebook 10, in the seed's cell order §8 -> §9 -> §10), and for
notebook 09's seed-mode run.

- ``mode="seed"``: §9 as written — :func:`~geolip_lib.modulators.objectives.seed_section9_loss`
  (the unshifted target fed to T5's decoder: the answer leaks), AdamW decay on every
  parameter including the alpha logits, ``CosineAnnealingLR(T_max=n_epochs)`` stepped per
  epoch, the split and each epoch's order from one ``default_rng(seed)``
  (:func:`~geolip_lib.modulators.pipeline_sampling.seed_training_schedule`). T5 only.
- ``mode="project"``: the family's own objective (labels shifted by the model; the
  encoder-only and decoder-LM objectives elsewhere), no decay on the alpha logits, a cosine
  schedule per step, the project's split and per-epoch shuffles.
"""
from __future__ import annotations

import copy
from functools import partial

from ..validation import fail
from .hooks import attach, freeze
from .objectives import definition_lemma_loss, seed_objective_available
from .pipeline_sampling import batches, seed_training_schedule, split_indices
from .trainer import ModulatorTrainer, run_epochs

MODES = ("seed", "project")


def train_modulator(lm, matched, modulator, *, mode: str, n_epochs: int, batch_size: int = 32, lr: float = 1e-3,
                    weight_decay: float = 0.01, gradient_clip: float | None = 1.0, val_fraction: float = 0.1,
                    seed: int = 42, max_input_len: int = 128, max_target_len: int = 16,
                    progress: bool = False) -> tuple[ModulatorTrainer, dict]:
    """Train ``modulator`` (in place, attached to ``lm`` only while training) on the
    definition -> lemma task of ``matched``, the seed's way or the project's.

    Parameters
    ----------
    mode : {"seed", "project"}
        See the module docstring. ``"seed"`` on a family §9 did not train fails with one line
        (check :func:`~geolip_lib.modulators.objectives.seed_objective_available` first).
    n_epochs, batch_size, lr, weight_decay, gradient_clip, val_fraction, seed : §9's settings
        by default (10 epochs in the seed).

    Returns
    -------
    trainer : ModulatorTrainer
        Its histories (alpha, loss, validation).
    info : dict
        ``mode``, ``objective`` (what the loss was), ``epochs`` (:func:`run_epochs` rows),
        ``n_train``, ``n_val``.
    """
    if mode not in MODES:
        fail("mode", f"expected one of {MODES}, got {mode!r}")
    if mode == "seed" and not seed_objective_available(lm):
        fail("mode", f"seed §9's objective needs T5's decoder; the {lm.family} family has none "
                     "(train it with mode='project')")
    n = len(matched)
    loss_fn = partial(definition_lemma_loss, lm, matched, max_input_len=max_input_len, max_target_len=max_target_len,
                      seed_mode=mode == "seed")
    if mode == "seed":
        tr, va, epoch_batches = seed_training_schedule(n, n_epochs, batch_size, train_fraction=1 - val_fraction,
                                                       seed=seed)
        trainer = ModulatorTrainer(modulator, lr=lr, weight_decay=weight_decay, gradient_clip=gradient_clip,
                                   total_steps=n_epochs, decay_alpha=True, schedule_every="epoch")
        objective = "seed §9 as written (unshifted target as decoder input: leaks the answer)"
    else:
        tr, va = split_indices(n, val_fraction, seed=seed)
        epoch_batches = None
        trainer = ModulatorTrainer(modulator, lr=lr, weight_decay=weight_decay, gradient_clip=gradient_clip,
                                   total_steps=n_epochs * len(batches(tr, batch_size)))
        objective = f"the {lm.family} family's definition -> lemma objective (project)"
    with attach(lm, modulator):
        epochs = run_epochs(trainer, loss_fn, tr, va, n_epochs=n_epochs, batch_size=batch_size, seed=seed,
                            progress=progress, epoch_batches=epoch_batches)
    modulator.eval()
    return trainer, {"mode": mode, "objective": objective, "epochs": epochs, "n_train": len(tr), "n_val": len(va)}


def seed_mode_training(lm, matched, modulator, *, enabled: bool, **train_kw) -> tuple[ModulatorTrainer | None, dict]:
    """Notebook 09's seed-mode run: :func:`train_modulator` with ``mode="seed"`` on
    ``modulator`` when ``enabled`` and the family has §9's objective.

    Returns
    -------
    trainer or None, and the record ``metrics["seed_mode"]``: ``{"ran": True, mode, objective,
    epochs, n_train, n_val, loss_history, val_history}``, or ``{"ran": False, "reason": ...}``
    saying why it was not made (off in the profile; a family §9 did not train).
    """
    if not enabled:
        return None, {"ran": False, "reason": "SEED_MODE_TRAINING = False in this profile"}
    if not seed_objective_available(lm):
        return None, {"ran": False, "reason": f"seed §9's objective (the unshifted target fed to T5's decoder) does "
                                              f"not exist for the {lm.family} family: §9 trained T5 only"}
    trainer, info = train_modulator(lm, matched, modulator, mode="seed", **train_kw)
    return trainer, {"ran": True, **info, "loss_history": trainer.loss_history, "val_history": trainer.val_history}


def trained_copy(lm, matched, modulator, *, requested: str | None, n_epochs: int, initial_alpha: float = 0.01,
                 **train_kw):
    """Notebook 10 in the seed's cell order (§8 -> §9 -> §10): a deep copy of the
    Procrustes-initialised ``modulator``, alpha reset to ``initial_alpha`` (§9 reset it to
    0.01), the base frozen, trained with :func:`train_modulator` in mode ``requested``.
    ``"seed"`` on a family without §9's objective trains in ``"project"`` mode and says why
    (``why_not_seed``); ``None`` trains nothing.

    Returns
    -------
    the trained copy (or None), and the record ``metrics["trained"]``: ``requested``, ``ran``
    and, when it ran, ``mode``, ``objective``, ``epochs``, ``n_train``, ``n_val``, ``final_alpha``.
    """
    rec: dict = {"requested": requested, "ran": False}
    if requested is None:
        return None, rec
    mode = requested
    if requested == "seed" and not seed_objective_available(lm):
        mode = "project"
        rec["why_not_seed"] = (f"§9's objective feeds the target to T5's decoder; the {lm.family} family has none, "
                               "so the project's objective trained it")
    mod = copy.deepcopy(modulator)
    mod.set_alpha(initial_alpha)
    freeze(lm.model)
    _, info = train_modulator(lm, matched, mod, mode=mode, n_epochs=n_epochs, **train_kw)
    rec.update(ran=True, **info, final_alpha=mod.alphas.detach().cpu().double().numpy())
    return mod, rec
