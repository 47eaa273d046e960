"""Dead / weak MLP neurons per (stack, layer) (:func:`mlp_tables`)."""
from __future__ import annotations

from typing import Optional

import pandas as pd
import torch

from ...checkpoints import Catalog, clean_weight
from ...checkpoints.store import TensorStore
from ._common import progress_bar


def mlp_tables(store: TensorStore, cat: Catalog, *, dead: float = 0.01, weak: float = 0.10,
               keep_importance: bool = True, progress: bool = False) -> dict:
    """Dead / weak MLP neurons per (stack, layer).

    A neuron's importance is |up_i|·|down_i| (times |gate_i| for gated MLPs), with
    |up_i| the norm of row i of the input projection and |down_i| the norm of column i
    of the output projection. Dead: importance < ``dead`` · mean; weak: < ``weak`` · mean.

    Returns ``{"layers": DataFrame, "importance": {(stack, layer): numpy (d_ff,)}}``.
    """
    rows, imp = [], {}
    blocks = [b for b in cat.mlp_blocks() if b.up is not None and b.down is not None]
    for b in progress_bar(blocks, len(blocks), "mlp", progress):
        up = clean_weight(store, b.up, torch.float64).norm(dim=1)
        down = clean_weight(store, b.down, torch.float64).norm(dim=0)
        gate = clean_weight(store, b.gate, torch.float64).norm(dim=1) if b.gate is not None else None
        r, c = mlp_row(b, up, down, gate, dead, weak)
        rows.append(r)
        if keep_importance:
            imp[(b.stack, b.layer)] = c
    return {"layers": pd.DataFrame(rows), "importance": imp}


def mlp_row(b, up: torch.Tensor, down: torch.Tensor, gate: Optional[torch.Tensor], dead: float = 0.01,
             weak: float = 0.10) -> tuple:
    """Dead/weak neuron row of one MLP block from float64 neuron norms (up rows, down columns, gate rows)."""
    if up.shape != down.shape:
        raise ValueError(f"weights: MLP of {b.stack} layer {b.layer}: {b.up.name} has {up.numel()} neurons, "
                         f"{b.down.name} has {down.numel()}")
    c = up * down
    if gate is not None:
        c = c * gate
    m = c.mean()
    nd, nw = int((c < dead * m).sum()), int((c < weak * m).sum())
    row = {"stack": b.stack, "layer": b.layer, "d_ff": c.numel(), "gated": gate is not None,
           "dead": nd, "weak": nw, "dead_frac": nd / c.numel(), "weak_frac": nw / c.numel(),
           "up_norm_mean": float(up.mean()), "down_norm_mean": float(down.mean()),
           "importance_cv": float(c.std() / m) if m > 0 else float("nan")}
    if getattr(b, "expert", None) is not None:  # mixture of experts: one row per expert, labelled
        row["expert"] = b.expert
    return row, c.cpu().numpy()
