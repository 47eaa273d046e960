"""Training loops and measurement helpers for the attention experiments.

* :func:`train_comparison` - the training loop seed 003 references but does not contain:
  standard vs triple-product attention on the copy (induction) task, identical steps,
  learning rate, batch size, seeds and data stream for every attention type.
* :func:`train_classifier` - full-batch Adam on the noise-pattern task of seed 002, with a
  callback at chosen epochs (the "mid-training" measurement).
* :func:`autograd_saved_bytes`, :func:`step_memory_bytes`, :func:`time_call` - time and
  memory per step. On CUDA memory is the peak allocated during the step; on CPU it is
  the bytes of the distinct tensors autograd saves for backward (the activation memory
  of the step, deterministic), since CPU allocations have no peak counter.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..validation import LOSS_REMEDY, check_finite_scalar, check_positive_int, fail
from .triple_product import ATTENTION_TYPES, CopyModel, copied_half_mask, copy_batch

__all__ = [
    "autograd_saved_bytes",
    "step_memory_bytes",
    "time_call",
    "copy_accuracy",
    "train_copy",
    "train_comparison",
    "train_classifier",
    "accuracy",
]


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], object], n_iter: int = 10, warmup: int = 2, device="cpu") -> float:
    """Median wall time of ``fn()`` in milliseconds (CUDA-synchronized when on GPU)."""
    check_positive_int(n_iter, "n_iter")
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(n_iter):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(statistics.median(times))


def autograd_saved_bytes(fn: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Run ``fn()`` and count the bytes of the distinct storages autograd saves for backward.

    Returns
    -------
    out : torch.Tensor
        ``fn()``'s result (graph attached).
    nbytes : int
        Sum of ``untyped_storage().nbytes()`` over distinct saved storages (parameters
        included, views counted once).
    """
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        try:
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        except (RuntimeError, NotImplementedError):  # pragma: no cover - exotic tensors
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, int(sum(seen.values()))


def step_memory_bytes(fn: Callable[[], torch.Tensor], device="cpu") -> tuple[int, str]:
    """Memory of one training step ``fn()`` (must return the loss; backward is run here).

    Returns ``(bytes, kind)`` with kind ``"cuda_peak_allocated"`` (peak minus the memory
    allocated before the step) or ``"autograd_saved"`` on CPU.
    """
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn().backward()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - base), "cuda_peak_allocated"
    loss, nbytes = autograd_saved_bytes(fn)
    loss.backward()
    return nbytes, "autograd_saved"


def copy_accuracy(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> dict:
    """Next-token accuracy overall and on the copied half (the predictable positions)."""
    was = model.training
    model.eval()
    with torch.no_grad():
        pred = model(inputs).argmax(-1)
    model.train(was)
    correct = (pred == targets).float()
    mask = copied_half_mask(inputs.shape[1] + 1).to(correct.device)
    return {"acc_all": correct.mean().item(), "acc_copied": correct[:, mask].mean().item(),
            "acc_first_half": correct[:, ~mask].mean().item()}


def _copy_loss(model, x, y, mask=None):
    logits = model(x)
    if mask is None:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    return F.cross_entropy(logits[:, mask].reshape(-1, logits.shape[-1]), y[:, mask].reshape(-1))


def train_copy(attn_type: str, *, vocab: int, seq_len: int, d_model: int, n_head: int, steps: int,
               lr: float, batch_size: int, seed: int, eval_size: int = 256, log_every: int = 1,
               device="cpu", time_steps: bool = True) -> dict:
    """Train one :class:`CopyModel` on the copy task with Adam.

    The model is initialised under ``torch.manual_seed(seed)``; the training batches come
    from a generator seeded with ``seed`` and the evaluation batch from ``seed + 10_000``,
    so two attention types trained with the same ``seed`` see identical data.

    Returns
    -------
    dict
        ``loss`` (list, every ``log_every`` steps), ``loss_steps``, ``acc_*`` (final, on the
        evaluation batch), ``acc_copied_init`` (before training), ``ms_per_step``
        (median, or None), ``memory_bytes`` and ``memory_kind`` (one step), ``n_params``.
    """
    if attn_type not in ATTENTION_TYPES:
        fail("attn_type", f"expected one of {list(ATTENTION_TYPES)}, got {attn_type!r}")
    check_positive_int(steps, "steps")
    check_positive_int(log_every, "log_every")
    torch.manual_seed(seed)
    model = CopyModel(vocab, d_model, n_head, attn_type).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g_train = torch.Generator().manual_seed(seed)
    g_eval = torch.Generator().manual_seed(seed + 10_000)
    x_eval, y_eval = (t.to(device) for t in copy_batch(eval_size, seq_len, vocab, g_eval))
    init = copy_accuracy(model, x_eval, y_eval)
    losses, loss_steps, times = [], [], []
    mem, mem_kind = None, None
    for step in range(1, steps + 1):
        x, y = (t.to(device) for t in copy_batch(batch_size, seq_len, vocab, g_train))
        opt.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        if mem is None:
            mem, mem_kind = step_memory_bytes(lambda: _copy_loss(model, x, y), device)
            loss = None
        else:
            loss = _copy_loss(model, x, y)
            check_finite_scalar(loss, f"training loss ({attn_type}, seed {seed})", step=step, remedy=LOSS_REMEDY)
            loss.backward()
        opt.step()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e3)
        if step % log_every == 0 or step == steps:
            if loss is None:
                with torch.no_grad():
                    loss = _copy_loss(model, x, y)
            losses.append(check_finite_scalar(loss, f"training loss ({attn_type}, seed {seed})", step=step,
                                              remedy=LOSS_REMEDY))
            loss_steps.append(step)
    final = copy_accuracy(model, x_eval, y_eval)
    warm = times[min(len(times) - 1, 2):]
    return {
        "attn_type": attn_type, "seed": seed, "loss": losses, "loss_steps": loss_steps,
        **final, "acc_copied_init": init["acc_copied"],
        "ms_per_step": float(statistics.median(warm)) if time_steps else None,
        "memory_bytes": mem, "memory_kind": mem_kind,
        "n_params": sum(p.numel() for p in model.parameters()),
    }


def train_comparison(attn_types: Iterable[str] = ("standard", "triple"), seeds: Iterable[int] = (0,),
                     *, vocab: int = 16, seq_len: int = 32, d_model: int = 64, n_head: int = 4,
                     steps: int = 500, lr: float = 3e-3, batch_size: int = 64, eval_size: int = 256,
                     log_every: int = 1, device="cpu", progress: bool = False) -> dict:
    """Standard vs triple-product attention on the copy task (seed 003's missing loop).

    Every attention type is trained for each seed with identical steps, learning rate,
    batch size and data stream (see :func:`train_copy`).

    Returns
    -------
    dict
        ``{attn_type: [train_copy result per seed]}`` plus ``"config"``.
    """
    attn_types, seeds = list(attn_types), [int(s) for s in seeds]
    if not seeds:
        fail("seeds", "expected at least one seed")
    runs = [(a, s) for a in attn_types for s in seeds]
    if progress:
        runs = tqdm(runs, desc="train_comparison")
    out: dict = {a: [] for a in attn_types}
    for a, s in runs:
        out[a].append(train_copy(a, vocab=vocab, seq_len=seq_len, d_model=d_model, n_head=n_head,
                                 steps=steps, lr=lr, batch_size=batch_size, seed=s, eval_size=eval_size,
                                 log_every=log_every, device=device))
    out["config"] = {"vocab": vocab, "seq_len": seq_len, "d_model": d_model, "n_head": n_head,
                     "steps": steps, "lr": lr, "batch_size": batch_size, "seeds": seeds}
    return out


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return (logits.argmax(-1) == y).float().mean().item()


def train_classifier(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float = 1e-3,
                     callbacks: dict[int, Callable[[nn.Module], None]] | None = None) -> dict:
    """Full-batch Adam with cross-entropy (seed 002's loop).

    Parameters
    ----------
    model : nn.Module
        Maps ``x`` to logits ``(N, n_classes)``.
    x, y : torch.Tensor
        Inputs and labels.
    epochs : int
        Full-batch steps.
    lr : float
    callbacks : dict, optional
        ``{epoch: fn(model)}`` called (in eval mode) after that epoch's step.

    Returns
    -------
    dict
        ``loss`` per epoch and final ``acc`` (training accuracy, as the seed).
    """
    check_positive_int(epochs, "epochs")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        losses.append(check_finite_scalar(loss, "training loss", step=epoch, remedy=LOSS_REMEDY))
        loss.backward()
        opt.step()
        if callbacks and epoch in callbacks:
            model.eval()
            callbacks[epoch](model)
    model.eval()
    with torch.no_grad():
        acc = accuracy(model(x), y)
    return {"loss": losses, "acc": acc}
