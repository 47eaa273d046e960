"""Cosine similarity between layers of the flattened weights of each role (:func:`cross_layer`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import torch

from ...checkpoints import MATRIX_ROLES, Catalog
from ...checkpoints.store import TensorStore
from ._common import progress_bar


# every matrix role, plus the fused QKV tensor whole (its q/k/v views are in MATRIX_ROLES): seed §5's
# cross_layer_correlation pools self_attn_qkv, the fused tensor flattened (weights.tables.claims)
CROSS_LAYER_ROLES = MATRIX_ROLES + ("qkv",)


def cross_layer(store: TensorStore, cat: Catalog, roles: Sequence[str] = CROSS_LAYER_ROLES, *,
                chunk_bytes: int = 64 << 20, progress: bool = False) -> dict:
    """Cosine similarity between layers of the flattened weights of each role.

    The (L, L) Gram matrix is accumulated over row chunks read from every layer at
    once, so the memory is ``chunk_bytes`` whatever the model size.

    Returns ``{(stack, attn, role): {"layers": [...], "cos": (L, L) numpy,
    "adj_mean", "adj_min", "adj_max", "offdiag_abs_mean"}}`` for groups with >= 2 layers.
    """
    groups: dict = defaultdict(list)
    for e in cat.select(role=tuple(roles)):
        # experts are left out: expert k of two layers is no pair (a router, not a depth, assigns them)
        if len(e.shape) == 2 and e.layer is not None and getattr(e, "expert", None) is None:
            groups[(e.stack, e.attn, e.role, tuple(e.shape))].append(e)
    out = {}
    items = [(k, v) for k, v in groups.items() if len(v) >= 2]
    for (stack, attn, role, shape), es in progress_bar(items, len(items), "cross-layer", progress):
        es = sorted(es, key=lambda e: e.layer)
        L, (rows_n, cols_n) = len(es), shape
        step = max(1, int(chunk_bytes // (8 * L * cols_n)))
        G = None  # made where the store's tensors are (a CUDA store: on the GPU)
        for a in range(0, rows_n, step):
            b = min(rows_n, a + step)
            X = torch.stack([store.get(e, torch.float64, row_slice=(a, b)).reshape(-1) for e in es])
            if G is None:
                G = torch.zeros(L, L, dtype=torch.float64, device=X.device)
            G += X @ X.T
        if G is None:  # no rows
            G = torch.zeros(L, L, dtype=torch.float64)
        nrm = G.diagonal().sqrt().clamp_min(1e-300)
        C = (G / nrm[:, None] / nrm[None, :]).cpu().numpy()  # (L, L): a small result, leaves for numpy
        adj = np.array([C[i, i + 1] for i in range(L - 1)])
        off = C[~np.eye(L, dtype=bool)]
        out[(stack, attn, role)] = {"layers": [e.layer for e in es], "cos": C, "adj_mean": float(adj.mean()),
                                    "adj_min": float(adj.min()), "adj_max": float(adj.max()),
                                    "offdiag_abs_mean": float(np.abs(off).mean())}
    return out
