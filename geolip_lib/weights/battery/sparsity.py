"""Exact fractions of |w| below thresholds and the |w| histogram (:func:`sparsity_tables`)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import torch

from ...checkpoints import Catalog
from .. import _kernels
from ...checkpoints.store import TensorStore
from ._common import entry_row, is_float, progress_bar

THRESHOLDS = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1)

# |w| histogram: the kernel's binary-exponent bins (8 per octave, exact float32 edges)
# between 2**-34 (~5.8e-11) and 2**4; smaller values (zeros too) go to the first bin,
# larger ones (inf, NaN too) to the last.
_HIST_LO = int(np.float32(2.0 ** -34).view(np.int32)) >> _kernels.SHIFT
_HIST_HI = int(np.float32(2.0 ** 4).view(np.int32)) >> _kernels.SHIFT
_E = _kernels.bin_edges()
HIST_EDGES = np.log10(_E[_HIST_LO:_HIST_HI + 1])  # log10|w| bin edges of the reported histogram
del _E


class SparsityCounter:
    """Accumulates exact threshold counts and the |w| histogram tensor by tensor."""

    def __init__(self, thresholds: Sequence[float], kernel: str = "fast"):
        self.th = np.array(sorted(float(t) for t in thresholds))
        _kernels.threshold_keys(self.th)  # validates
        self.cols = [f"<{t:g}" for t in self.th]
        self.fn = {"fast": _kernels.abs_hist, "reference": _kernels.abs_hist_reference}[kernel]
        self.hist = np.zeros(_kernels.N_BINS, dtype=np.int64)
        self.model_counts = np.zeros(len(self.th), dtype=np.int64)
        self.model_n = 0
        self.rows: dict = {}

    def add(self, e, a: torch.Tensor, is_stored: bool) -> None:
        """Count tensor ``a`` (the data of entry ``e``; any float dtype, any device)."""
        x = a.detach().to(device="cpu", dtype=torch.float32).contiguous().numpy()
        h, below = self.fn(x, self.th)
        n = x.size
        if is_stored:
            self.model_counts += below
            self.model_n += n
            self.hist += h
            if e.role == "qkv":
                return  # counted through its views for the role tables
        elif e.role == "bias":
            return
        r = entry_row(e)
        r.update(n=n, **{c: int(v) for c, v in zip(self.cols, below)})
        self.rows[(e.key, is_stored)] = r

    def tables(self, order: list) -> dict:
        rows = [self.rows[k] for k in order if k in self.rows]
        per = pd.DataFrame(rows)
        cols = self.cols

        def agg(keys):
            if per.empty:
                return per
            g = per.fillna({"stack": "-", "attn": "-"}).groupby(keys, dropna=False)[["n"] + cols].sum().reset_index()
            for c in cols:
                g[c] = g[c] / g["n"]
            return g

        frac_per = per.copy()
        for c in cols:
            if not frac_per.empty:
                frac_per[c] = frac_per[c] / frac_per["n"]
        n = self.model_n
        model = pd.DataFrame([{"n": n, **{c: (v / n if n else float("nan")) for c, v in zip(cols, self.model_counts)}}])
        cnt = self.hist[_HIST_LO:_HIST_HI].copy()
        cnt[0] += self.hist[:_HIST_LO].sum()
        cnt[-1] += self.hist[_HIST_HI:].sum()
        h = pd.DataFrame({"left": HIST_EDGES[:-1], "right": HIST_EDGES[1:], "count": cnt})
        return {"per_tensor": frac_per, "by_role": agg(["role"]), "by_stack_role": agg(["stack", "attn", "role"]),
                "model": model, "hist": h, "columns": cols}


def sparsity_order(cat: Catalog) -> list:
    return [(e.key, True) for e in cat.stored()] + [(e.key, False) for e in cat.entries if e.is_view]


def sparsity_tables(store: TensorStore, cat: Catalog, thresholds: Sequence[float] = THRESHOLDS, *,
                    kernel: str = "fast", progress: bool = False) -> dict:
    """Fraction of |w| below each threshold, per tensor, role, (stack, attn, role) and model.

    Counts are exact (``|w| < float32(t)``). Fused QKV tensors are counted once for
    the model and once per q/k/v view for the roles. ``kernel="reference"`` uses plain
    float comparisons instead of the bit-pattern kernel (slow; for tests). Returns dict
    of DataFrames ``per_tensor``, ``by_role``, ``by_stack_role``, ``model`` (one row)
    and ``hist`` (|w| histogram of the whole model on eight bins per octave: columns
    ``left``, ``right`` (log10 |w|) and ``count``), plus ``columns``.
    """
    acc = SparsityCounter(thresholds, kernel)
    stored = cat.stored()
    views = [e for e in cat.entries if e.is_view]
    todo = [(e, True) for e in stored] + [(e, False) for e in views]
    for e, is_stored in progress_bar(todo, len(todo), "sparsity", progress):
        if not is_float(e):
            continue
        acc.add(e, store.get(e, dtype=torch.float32), is_stored)
    return acc.tables(sparsity_order(cat))
