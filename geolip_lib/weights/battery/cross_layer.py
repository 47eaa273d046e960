"""Cosine similarity between layers of the flattened weights of each role (:func:`cross_layer`), and how far the
rounding of quantized weights can have moved each layer's direction and each adjacent pair's cosine
(:func:`cross_layer_turns`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import torch

from ...checkpoints import MATRIX_ROLES, Catalog
from ...checkpoints.store import TensorStore
from .. import quant_bounds, quant_bounds_prob
from ._common import progress_bar


# every matrix role, plus the fused QKV tensor whole (its q/k/v views are in MATRIX_ROLES): seed §5's
# cross_layer_correlation pools self_attn_qkv, the fused tensor flattened (weights.tables.claims)
CROSS_LAYER_ROLES = MATRIX_ROLES + ("qkv",)


def layer_groups(cat: Catalog, roles: Sequence[str] = CROSS_LAYER_ROLES) -> dict:
    """``{(stack, attn, role): entries sorted by layer}`` of the 2-D matrices of ``roles`` that repeat over at
    least two layers of one shape: the groups whose adjacent layers :func:`cross_layer` compares."""
    groups: dict = defaultdict(list)
    for e in cat.select(role=tuple(roles)):
        # experts are left out: expert k of two layers is no pair (a router, not a depth, assigns them)
        if len(e.shape) == 2 and e.layer is not None and getattr(e, "expert", None) is None:
            groups[(e.stack, e.attn, e.role, tuple(e.shape))].append(e)
    return {k: sorted(v, key=lambda e: e.layer) for k, v in groups.items() if len(v) >= 2}


def cross_layer(store: TensorStore, cat: Catalog, roles: Sequence[str] = CROSS_LAYER_ROLES, *,
                chunk_bytes: int = 64 << 20, progress: bool = False) -> dict:
    """Cosine similarity between layers of the flattened weights of each role.

    The (L, L) Gram matrix is accumulated over row chunks read from every layer at
    once, so the memory is ``chunk_bytes`` whatever the model size.

    Returns ``{(stack, attn, role): {"layers": [...], "cos": (L, L) numpy,
    "adj_mean", "adj_min", "adj_max", "offdiag_abs_mean"}}`` for groups with >= 2 layers.
    """
    out = {}
    items = list(layer_groups(cat, roles).items())
    for (stack, attn, role, shape), es in progress_bar(items, len(items), "cross-layer", progress):
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


def cross_layer_turns(lm, store: TensorStore, cat: Catalog, roles: Sequence[str] = CROSS_LAYER_ROLES) -> dict:
    """How far the rounding can have turned each layer's flattened weights, per group of :func:`cross_layer`:
    ``{"stack/attn/role": {"layers", "theta", "tau", "prob", "names", "types", "text", "assumes"}}`` (``theta``:
    the worst-case angle per layer, ``tau``: the typical one, :func:`..quant_bounds.turn`; ``prob``: what the
    high-probability bound of the adjacent cosines needs, :meth:`..quant_bounds_prob.GroupStats.record`, gathered
    in the same pass over each layer's rounding), keyed as the battery summary keys its ``cross_layer`` groups. A
    pair's cosine then moved by at most ``min(2, theta_a + theta_b)`` (the angle between two directions moves by at
    most the sum of their turns, and a cosine by at most its angle), typically by ``sqrt(tau_a² + tau_b²)``, and
    with probability ``≥ 1 − delta`` under independent unbiased rounding errors by
    :func:`..quant_bounds_prob.pair_bounds`. ``{}`` for a model that was not quantized; a group with a matrix of
    unknown rounding is left out."""
    if not quant_bounds.quantized(lm):
        return {}
    out = {}
    for (stack, attn, role, _), es in layer_groups(cat, roles).items():
        turns, types, texts, assumes = [], set(), set(), set()
        stats = quant_bounds_prob.GroupStats()
        for e in es:
            r = quant_bounds.rounding_of(lm, store, e)
            if r is None:
                break
            turns.append(quant_bounds.turn(r))
            stats.add(r.values, r.below, r.above)
            types.add(r.qtype)
            texts.add(f"{r.qtype}: {r.text}")
            a = quant_bounds.assumption(r.qtype, r.imatrix)
            if a:
                assumes.add(a)
        else:
            out[f"{stack}/{attn or '-'}/{role}"] = {
                "layers": [e.layer for e in es], "theta": [t["theta"] for t in turns],
                "tau": [t["tau"] for t in turns], "prob": stats.finish().record(),
                "names": [(e.name, None if e.row_slice is None else tuple(e.row_slice)) for e in es],
                "types": sorted(types), "text": sorted(texts), "assumes": sorted(assumes)}
    return out
