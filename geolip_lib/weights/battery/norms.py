"""LayerNorm / RMSNorm scale statistics (:func:`norm_table`)."""
from __future__ import annotations

import pandas as pd
import torch

from ...checkpoints import Catalog
from ...checkpoints.store import TensorStore
from ._common import entry_row


def norm_table(store: TensorStore, cat: Catalog, *, keep_values: bool = True) -> tuple:
    """Scale statistics of every norm weight (high > 1.5, low < 0.5, near one in (0.8, 1.2))."""
    rows, vals = [], {}
    for e in cat.select(role="norm"):
        if len(e.shape) != 1:
            continue
        w = store.get(e, torch.float64)
        rows.append({**entry_row(e), "of": e.of, "n": w.numel(), "mean": float(w.mean()),
                     "std": float(w.std()) if w.numel() > 1 else 0.0,
                     "high": int((w > 1.5).sum()), "low": int((w < 0.5).sum()),
                     "near_one": int(((w > 0.8) & (w < 1.2)).sum())})
        if keep_values:
            vals[e.key] = w.cpu().numpy()
    return pd.DataFrame(rows), vals
