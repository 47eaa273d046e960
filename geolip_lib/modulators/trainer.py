"""Training of a modulator on a frozen base model: parameter groups with scaled learning
rates, gradient clipping, alpha / loss history, pentachoron-CV band monitoring with early
stopping, safetensors checkpoints and resume (seed 001 §9 and §12).
"""
from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from .. import progress as _progress
from ..validation import LOSS_REMEDY, check_finite_scalar, check_positive_int, fail
from .field import pentachoron_cv_check
from .pipeline import batches

MODULATOR_FILE = "modulator.safetensors"
STATE_FILE = "trainer_state.pt"  # legacy checkpoints only (read with weights_only=True)
STATE_TENSORS = "trainer_state.safetensors"  # optimizer tensors
STATE_JSON = "trainer_state.json"  # optimizer param groups, scheduler, counters
HISTORY_FILE = "history.json"


def _alphas(modulator: nn.Module) -> np.ndarray:
    return modulator.alphas.detach().cpu().double().numpy().copy()


class ModulatorTrainer:
    """AdamW over a modulator's parameter groups, each at ``lr * scale``.

    Parameters
    ----------
    modulator : nn.Module
        Provides ``param_groups() -> {name: (params, lr_scale)}`` and ``alphas``.
    lr : float
    weight_decay : float
        AdamW decay of every group except "alpha" (decaying a logit pulls alpha to 0.5).
    decay_alpha : bool
        Seed mode: decay the "alpha" group too, as the seed's ``AdamW(modulator.parameters(),
        weight_decay=0.01)`` did (default False, the project's correction).
    gradient_clip : float or None
        Max global grad norm (None: no clipping).
    total_steps : int, optional
        When given, a cosine schedule over that many steps (``schedule_every="step"``) or
        epochs (``"epoch"``).
    schedule_every : {"step", "epoch"}
        When the schedule advances: after every optimizer step (the project) or after every
        epoch (seed §9: ``CosineAnnealingLR(T_max=N_EPOCHS)`` stepped once per epoch).
    cv_target, cv_tolerance : float, optional
        CV band; default from ``modulator.config`` else (0.21, 0.05).

    Attributes
    ----------
    alpha_history : list of arrays (one per step)
    loss_history, val_history, cv_history, grad_norm_history : lists
    """

    def __init__(self, modulator: nn.Module, lr: float = 1e-3, weight_decay: float = 0.01,
                 gradient_clip: float | None = 1.0, total_steps: int | None = None,
                 cv_target: float | None = None, cv_tolerance: float | None = None, decay_alpha: bool = False,
                 schedule_every: str = "step"):
        if not lr > 0:
            fail("lr", f"expected a positive learning rate, got {lr!r}")
        if schedule_every not in ("step", "epoch"):
            fail("schedule_every", f"expected 'step' or 'epoch', got {schedule_every!r}")
        self.schedule_every = schedule_every
        self.modulator = modulator
        self.gradient_clip = gradient_clip
        groups = modulator.param_groups()
        seen = {id(p) for ps, _ in groups.values() for p in ps}
        missing = [n for n, p in modulator.named_parameters() if p.requires_grad and id(p) not in seen]
        if missing:
            fail("modulator", f"param_groups() misses trainable parameters {missing}")
        self.group_names = list(groups)
        # no weight decay on alpha logits: decay pulls a logit to 0, i.e. alpha to 0.5 (the seed's
        # AdamW(weight_decay=0.01) over all parameters did that; decay_alpha=True does it again)
        self.decay_alpha = bool(decay_alpha)
        self.optimizer = torch.optim.AdamW(
            [{"params": ps, "lr": lr * scale, "name": name,
              "weight_decay": 0.0 if name == "alpha" and not self.decay_alpha else weight_decay}
             for name, (ps, scale) in groups.items() if ps], lr=lr, weight_decay=weight_decay)
        self.scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=total_steps)
                          if total_steps else None)
        cfg = getattr(modulator, "config", None)
        self.cv_target = cv_target if cv_target is not None else getattr(cfg, "cv_target", 0.21)
        self.cv_tolerance = cv_tolerance if cv_tolerance is not None else getattr(cfg, "cv_tolerance", 0.05)
        self.step_count = 0
        self.epoch = 0
        self.alpha_history: list = [_alphas(modulator)]
        self.loss_history: list[float] = []
        self.val_history: list[dict] = []
        self.cv_history: list[dict] = []
        self.grad_norm_history: list[float] = []

    def trainable_parameters(self) -> list[torch.Tensor]:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    # ------------------------------------------------------------------ steps
    def step(self, loss: torch.Tensor) -> float:
        """Backward, clip, optimizer (and scheduler) step, zero grads, record alpha and loss."""
        check_finite_scalar(loss, "training loss", step=self.step_count + 1, remedy=LOSS_REMEDY)
        loss.backward()
        params = self.trainable_parameters()
        if self.gradient_clip is not None:
            gn = float(torch.nn.utils.clip_grad_norm_(params, self.gradient_clip))
        else:
            gn = float(torch.norm(torch.stack([p.grad.norm() for p in params if p.grad is not None])))
        self.optimizer.step()
        if self.scheduler is not None and self.schedule_every == "step":
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step_count += 1
        self.alpha_history.append(_alphas(self.modulator))
        self.loss_history.append(float(loss.detach()))
        self.grad_norm_history.append(gn)
        return self.loss_history[-1]

    def train_epoch(self, batches: Iterable, loss_fn: Callable, progress: bool = True, desc: str = "train") -> float:
        """One pass over ``batches``; ``loss_fn(batch) -> scalar loss``. Returns the mean loss."""
        self.modulator.train()
        losses = [self.step(loss_fn(b)) for b in tqdm(list(batches), desc=f"{desc} epoch {self.epoch + 1}",
                                                       disable=_progress.disabled(progress), leave=False)]
        if self.scheduler is not None and self.schedule_every == "epoch":
            self.scheduler.step()
        self.epoch += 1
        return float(np.mean(losses)) if losses else float("nan")

    @torch.no_grad()
    def evaluate(self, batches: Iterable, loss_fn: Callable) -> float:
        """Mean loss over ``batches`` in eval mode (recorded in ``val_history``)."""
        self.modulator.eval()
        losses = [float(loss_fn(b)) for b in batches]
        val = float(np.mean(losses)) if losses else float("nan")
        if losses:
            check_finite_scalar(val, "validation loss", step=self.step_count, remedy=LOSS_REMEDY)
        self.val_history.append({"epoch": self.epoch, "step": self.step_count, "loss": val})
        return val

    # ------------------------------------------------------------------ CV band
    def check_cv(self, embeddings, n_simplices: int = 500, seed: int = 42) -> bool:
        """Pentachoron CV of ``embeddings`` (N, D); record it; True when inside the band."""
        if hasattr(self.modulator, "cv_check"):
            res = dict(self.modulator.cv_check(embeddings, n_simplices=n_simplices, seed=seed))
        else:
            res = pentachoron_cv_check(embeddings, n_simplices=n_simplices, seed=seed)
        cv = res.get("cv", float("nan"))
        res["in_band"] = bool(cv == cv and abs(cv - self.cv_target) < self.cv_tolerance)
        res["step"] = self.step_count
        self.cv_history.append(res)
        return res["in_band"]

    def record_cv(self, in_band: bool, cv: float = float("nan")) -> None:
        """Record an externally computed CV check (used by tests and custom monitors)."""
        self.cv_history.append({"cv": cv, "in_band": bool(in_band), "step": self.step_count})

    def should_stop(self, patience: int = 5) -> bool:
        """True when the last ``patience`` CV checks were all outside the band."""
        patience = check_positive_int(patience, "patience")
        recent = self.cv_history[-patience:]
        return len(recent) == patience and not any(r["in_band"] for r in recent)

    # ------------------------------------------------------------------ checkpoints
    def save(self, directory) -> Path:
        """Write ``modulator.safetensors`` (weights and buffers), ``trainer_state.safetensors``
        + ``trainer_state.json`` (optimizer/scheduler, no pickle) and ``history.json`` into ``directory``."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        sd = {k: v.detach().cpu().contiguous() for k, v in self.modulator.state_dict().items()}
        save_file(sd, str(d / MODULATOR_FILE))
        # no pickle: optimizer tensors to safetensors, everything else to JSON
        opt = self.optimizer.state_dict()
        tensors = {f"state.{i}.{k}": v.detach().cpu().contiguous() for i, st in opt["state"].items()
                   for k, v in st.items() if torch.is_tensor(v)}
        scalars = {str(i): {k: v for k, v in st.items() if not torch.is_tensor(v)} for i, st in opt["state"].items()}
        save_file(tensors, str(d / STATE_TENSORS))
        state = {"param_groups": opt["param_groups"], "state_scalars": scalars,
                 "state_index": sorted(opt["state"]),
                 "scheduler": self.scheduler.state_dict() if self.scheduler else None,
                 "step_count": self.step_count, "epoch": self.epoch}
        (d / STATE_JSON).write_text(json.dumps(state, default=float), encoding="utf-8")
        (d / STATE_FILE).unlink(missing_ok=True)
        hist = {"alpha_history": [a.tolist() for a in self.alpha_history], "loss_history": self.loss_history,
                "val_history": self.val_history, "grad_norm_history": self.grad_norm_history,
                "cv_history": self.cv_history}
        (d / HISTORY_FILE).write_text(json.dumps(hist, default=float), encoding="utf-8")
        return d

    def load(self, directory) -> "ModulatorTrainer":
        """Resume from :meth:`save`'s directory (weights, optimizer, histories, counters)."""
        d = Path(directory)
        if not (d / MODULATOR_FILE).exists():
            fail("directory", f"no {MODULATOR_FILE} in {d} (write one with ModulatorTrainer.save)")
        self.modulator.load_state_dict(load_file(str(d / MODULATOR_FILE)))
        st = self._read_state(d)
        self.optimizer.load_state_dict(st["optimizer"])
        if self.scheduler is not None and st["scheduler"] is not None:
            self.scheduler.load_state_dict(st["scheduler"])
        self.step_count, self.epoch = st["step_count"], st["epoch"]
        hist = json.loads((d / HISTORY_FILE).read_text(encoding="utf-8"))
        self.alpha_history = [np.asarray(a) for a in hist["alpha_history"]]
        self.loss_history, self.val_history = hist["loss_history"], hist["val_history"]
        self.grad_norm_history, self.cv_history = hist["grad_norm_history"], hist["cv_history"]
        return self


    @staticmethod
    def _read_state(d: Path) -> dict:
        """The optimizer / scheduler state of :meth:`save` (safetensors + JSON), or a legacy
        ``trainer_state.pt`` read with ``weights_only=True``: a crafted pickle runs no code."""
        if (d / STATE_JSON).exists():
            st = json.loads((d / STATE_JSON).read_text(encoding="utf-8"))
            tensors = load_file(str(d / STATE_TENSORS)) if (d / STATE_TENSORS).exists() else {}
            state = {int(i): dict(st["state_scalars"].get(str(i), {})) for i in st["state_index"]}
            for key, v in tensors.items():
                _, i, k = key.split(".", 2)
                state[int(i)][k] = v
            st["optimizer"] = {"state": state, "param_groups": st.pop("param_groups")}
            return st
        try:
            return torch.load(d / STATE_FILE, weights_only=True)
        except pickle.UnpicklingError as exc:
            fail("directory", f"{d / STATE_FILE} is not a plain trainer state (refused to unpickle: "
                              f"{str(exc).splitlines()[0][:120]}); delete it or point CHECKPOINT_DIR elsewhere")
        except FileNotFoundError:
            fail("directory", f"no {STATE_JSON} in {d} (write one with ModulatorTrainer.save)")


FieldModulatorTrainer = ModulatorTrainer  # the seed's name


def train_with_cv_band(trainer: ModulatorTrainer, loss_fn: Callable, probe: Callable, train_idx, val_idx, *,
                       n_epochs: int, batch_size: int, check_every: int, patience: int, n_simplices: int = 500,
                       seed: int = 42) -> dict:
    """Train with pentachoron-CV band monitoring and early stopping (seed §12's loop).

    The modulator must already be attached to the model. One CV check before the first
    step, then one every ``check_every`` steps on ``probe()`` (computed in eval mode);
    training stops when the last ``patience`` checks were all outside the band. After each
    epoch the validation loss is evaluated.

    Parameters
    ----------
    trainer : ModulatorTrainer
    loss_fn : callable
        ``loss_fn(batch_indices) -> scalar loss``.
    probe : callable
        ``probe() -> (N, d_model)`` representations whose CV is checked.
    train_idx, val_idx : int arrays
    n_epochs, batch_size, check_every, patience, n_simplices, seed : int
        Batches of epoch ``e`` are shuffled with ``seed + e``.

    Returns
    -------
    dict: ``stopped_early`` and ``epochs`` (``[{"epoch", "steps", "train_loss", "val_loss", "cv"}]``,
    train_loss the mean over the epoch's steps).
    """
    mod = trainer.modulator

    def check() -> None:
        mod.eval()
        trainer.check_cv(probe(), n_simplices=n_simplices, seed=seed)
        mod.train()

    check()
    stopped, epochs = False, []
    for epoch in range(n_epochs):
        mod.train()
        first = len(trainer.loss_history)
        for b in batches(train_idx, batch_size, seed=seed + epoch):
            trainer.step(loss_fn(b))
            if trainer.step_count % check_every == 0:
                check()
                if trainer.should_stop(patience):
                    stopped = True
                    break
        val = trainer.evaluate(batches(val_idx, batch_size), loss_fn)
        epochs.append({"epoch": epoch + 1, "steps": trainer.step_count,
                       "train_loss": float(np.mean(trainer.loss_history[first:])) if trainer.loss_history[first:] else
                       float("nan"), "val_loss": val, "cv": trainer.cv_history[-1]["cv"]})
        if stopped:
            break
    mod.eval()
    return {"stopped_early": stopped, "epochs": epochs}


def run_epochs(trainer: ModulatorTrainer, loss_fn: Callable, train_idx, val_idx, *, n_epochs: int,
               batch_size: int, seed: int = 42, checkpoint=None, progress: bool = True,
               epoch_batches=None) -> list[dict]:
    """Train until ``trainer.epoch == n_epochs`` (a resumed trainer continues where it stopped).

    Epoch ``e`` runs the batches of ``train_idx`` shuffled with ``seed + e`` (or
    ``epoch_batches[e]`` when given: seed §9's draws, :func:`~geolip_lib.modulators.pipeline_sampling.seed_training_schedule`),
    then the validation loss over ``val_idx`` (unshuffled batches); with ``checkpoint`` the
    trainer is saved there after every epoch. The modulator must already be attached.

    Returns
    -------
    ``[{"epoch", "train_loss", "val_loss", "alpha_mean"}]`` for the epochs run in this call.
    """
    n_epochs = check_positive_int(n_epochs, "n_epochs")
    val_batches = batches(val_idx, batch_size)
    epochs = []
    while trainer.epoch < n_epochs:
        epoch = (batches(train_idx, batch_size, seed=seed + trainer.epoch) if epoch_batches is None
                 else epoch_batches[trainer.epoch])
        train_loss = trainer.train_epoch(epoch, loss_fn, progress=progress)
        val_loss = trainer.evaluate(val_batches, loss_fn)
        if checkpoint is not None:
            trainer.save(checkpoint)
        epochs.append({"epoch": trainer.epoch, "train_loss": train_loss, "val_loss": val_loss,
                       "alpha_mean": float(trainer.modulator.alphas.detach().mean())})
    return epochs


def load_modulator_weights(modulator: nn.Module, directory) -> nn.Module:
    """Load ``modulator.safetensors`` from a checkpoint directory into ``modulator``."""
    modulator.load_state_dict(load_file(str(Path(directory) / MODULATOR_FILE)))
    return modulator
