"""Relative-position-bias head topology (T5) of a checkpoint (:func:`position_bias_table`); the
statistics themselves are :mod:`geolip_lib.metrics.position_bias`."""
from __future__ import annotations

import pandas as pd
import torch

from ...metrics.position_bias import head_topology
from ...checkpoints import Catalog
from ...checkpoints.store import TensorStore


def position_bias_table(store: TensorStore, cat: Catalog, *, local_buckets: int = 3) -> tuple:
    """Per-head topology of relative position bias tables ((n_buckets, n_heads), T5).

    Per head: ``monotonic`` = fraction of non-increasing steps over the nearest half of
    the distance buckets, ``dist_corr`` = correlation of the bias with the distance
    bucket, ``peak_bucket`` (raw index), ``peak_distance`` (bucket index within its
    direction), ``type`` in local/global/mixed: the peak lies in the ``local_buckets``
    nearest (local) or farthest (global) distance buckets. Encoder tables are
    bidirectional (the upper half of the buckets holds positive offsets); decoder
    tables are unidirectional. ``type_seed`` applies the seed's raw-index rule.
    """
    rows, tables = [], {}
    for e in cat.select(role="pos_bias"):
        T = store.get(e, torch.float64).cpu().numpy()
        tables[e.key] = T
        for r in head_topology(T, bidirectional=e.stack != "decoder", local_buckets=local_buckets):
            rows.append({"name": e.key, "stack": e.stack, "attn": e.attn, **r})
    return pd.DataFrame(rows), tables
