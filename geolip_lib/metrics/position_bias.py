"""Statistics of relative-position-bias tables (T5), written once.

A table is a ``(n_buckets, n_heads)`` array: row ``b`` holds every head's additive
attention bias for relative-position bucket ``b``. Encoder tables are bidirectional
(T5 puts negative offsets in the lower half of the buckets and positive offsets in the
upper half); decoder tables are unidirectional.

- :func:`table_stats`: value statistics of the whole table and of each head (mean,
  population std, min, max);
- :func:`bucket_distances`: the distance class of each bucket (its index within its
  direction);
- :func:`head_topology`: per head, ``monotonic``, ``dist_corr``, ``peak_bucket``,
  ``peak_distance``, ``type`` (local / global / mixed) and ``type_seed`` (seed 001's rule
  on the raw bucket index);
- :func:`type_counts`: heads per type.

Pure functions on array-likes (float64 NumPy inside); no torch, no model.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: the head types :func:`head_topology` assigns
HEAD_TYPES = ("local", "global", "mixed")


def _table(table: Any) -> np.ndarray:
    if hasattr(table, "detach"):  # a torch tensor
        table = table.detach().cpu().double().numpy()
    T = np.asarray(table, dtype=np.float64)
    if T.ndim != 2 or T.shape[0] < 1 or T.shape[1] < 1:
        raise ValueError(f"table: expected a 2-D (n_buckets, n_heads) array, got shape {T.shape}")
    return T


def table_stats(table: Any) -> dict:
    """Value statistics of a ``(n_buckets, n_heads)`` table.

    Returns ``{"shape": [n_buckets, n_heads], "mean", "std" (population), "min", "max",
    "per_head": [{"mean", "std", "min", "max"} per head]}``.
    """
    T = _table(table)
    per = [{"mean": float(c.mean()), "std": float(c.std()), "min": float(c.min()), "max": float(c.max())}
           for c in T.T]
    return {"shape": list(T.shape), "mean": float(T.mean()), "std": float(T.std()), "min": float(T.min()),
            "max": float(T.max()), "per_head": per}


def bucket_distances(n_buckets: int, bidirectional: bool) -> np.ndarray:
    """Distance class of each bucket: ``b mod (n_buckets // 2)`` when bidirectional, else ``b``."""
    if bidirectional:
        return np.arange(n_buckets) % (n_buckets // 2)
    return np.arange(n_buckets)


def head_topology(table: Any, *, bidirectional: bool, local_buckets: int = 3) -> list[dict]:
    """Per-head shape of the bias over distance.

    Per head (one dict each, in head order): ``head``, ``min``, ``max``; ``monotonic`` =
    fraction of non-increasing steps over the nearest half of the distance buckets (NaN
    when there is no step); ``dist_corr`` = correlation of the bias with the bucket's
    distance class (NaN for a constant head); ``peak_bucket`` (raw index of the maximum),
    ``peak_distance`` (its distance class); ``type``: "local" when the peak lies in the
    ``local_buckets`` nearest distance classes, "global" in the ``local_buckets``
    farthest, else "mixed"; ``type_seed``: seed 001's rule on the raw index (local when
    ``peak_bucket <= 2``, global when ``>= n_buckets - 3``), which mixes the two directions
    of a bidirectional table.
    """
    T = _table(table)
    nb, nh = T.shape
    half = nb // 2 if bidirectional else nb
    dist = bucket_distances(nb, bidirectional)
    rows = []
    for h in range(nh):
        bias = T[:, h]
        near = bias[: half // 2 + 1] if bidirectional else bias[: half // 2]
        dif = np.diff(near)
        mono = float((dif <= 0).mean()) if dif.size else float("nan")
        dc = float(np.corrcoef(dist, bias)[0, 1]) if bias.std() > 0 else float("nan")
        pk = int(np.argmax(bias))
        pd_ = int(dist[pk])
        kind = "local" if pd_ < local_buckets else ("global" if pd_ >= half - local_buckets else "mixed")
        kind_seed = "local" if pk <= 2 else ("global" if pk >= nb - 3 else "mixed")
        rows.append({"head": h, "min": float(bias.min()), "max": float(bias.max()), "monotonic": mono,
                     "dist_corr": dc, "peak_bucket": pk, "peak_distance": pd_, "type": kind,
                     "type_seed": kind_seed})
    return rows


def type_counts(types: Any) -> dict:
    """``{type: number of heads}`` for each of :data:`HEAD_TYPES` (zeros included)."""
    types = list(types)
    return {k: int(sum(t == k for t in types)) for k in HEAD_TYPES}


__all__ = ["HEAD_TYPES", "bucket_distances", "head_topology", "table_stats", "type_counts"]
