"""Singular-value statistics of every 2-D matrix of the chosen roles (:func:`svd_table`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import pandas as pd
import torch

from ...devices import pick_device
from ...checkpoints import MATRIX_ROLES, Catalog, clean_weight
from ..spectral import spectrum_stats, svdvals
from ...checkpoints.store import TensorStore
from ._common import entry_row, is_float, progress_bar

#: roles whose 2-D matrices get singular-value statistics (embeddings too: WeightWatcher
#: analyses them, and their spectra are part of the terrain)
SVD_ROLES = MATRIX_ROLES + ("embed", "unembed")


def svd_row(e, shp, S: torch.Tensor) -> dict:
    st = spectrum_stats(S)
    r = entry_row(e)
    r.update(shape=shp, stable_rank=float(st["stable_rank"]), pr=float(st["pr"]),
             active_frac=float(st["active_frac"]), rank_90=int(st["rank_energy"]),
             rank_90_seed=int(st["rank_seed"]), condition=float(st["condition"]), max_sv=float(st["max_sv"]),
             min_sv=float(st["min_sv"]))
    return r


def svd_frame(rows: list) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if not df.empty:
        df = df.sort_values(["stack", "attn", "role", "layer", "name"], na_position="first", kind="stable")
        df = df.reset_index(drop=True)
    return df


def svd_shape(e) -> tuple:
    return tuple(e.shape) if not e.head_stride else (e.shape[0] // e.head_stride * e.head_dim, e.shape[1])


def svd_table(store: TensorStore, cat: Catalog, roles: Sequence[str] = SVD_ROLES, *,
              batch_bytes: int = 64 << 20, device: Any = None, keep_spectra: bool = True,
              method: str = "gram", progress: bool = False):
    """Singular-value statistics of every 2-D matrix of ``roles``.

    Parameters
    ----------
    store, cat : TensorStore, Catalog
    roles : sequence of str
        Catalog roles to analyse (default :data:`SVD_ROLES`: q/k/v/o, the MLP roles and
        the embeddings).
    batch_bytes : int
        Upper bound on the float64 bytes of one stacked batch of same-shape matrices.
    device : torch device or "auto"
    keep_spectra : bool
        Also return the spectra (float64 numpy arrays by entry key).
    method : "gram" or "svd"
        See :func:`svdvals`.

    Returns
    -------
    (DataFrame, dict)
        One row per matrix (name, role, stack, attn, layer, shape, stable_rank, pr,
        active_frac, rank_90 (energy S²), rank_90_seed (S, the seed's), condition, max_sv,
        min_sv) and ``{key: S}``.
    """
    dev = pick_device(device)
    ents = [e for e in cat.select(role=tuple(roles)) if len(e.shape) == 2 and is_float(e)]
    groups: dict = defaultdict(list)
    for e in ents:
        groups[svd_shape(e)].append(e)
    rows, spectra = [], {}
    batches = []
    for shp, es in groups.items():
        per = max(1, int(batch_bytes // (8 * shp[0] * shp[1])))
        batches += [(shp, es[i:i + per]) for i in range(0, len(es), per)]
    for shp, es in progress_bar(batches, len(batches), "svd", progress):
        W = torch.stack([clean_weight(store, e, torch.float64) for e in es]).to(dev)
        S = svdvals(W, method=method).cpu()
        for i, e in enumerate(es):
            rows.append(svd_row(e, shp, S[i]))
            if keep_spectra:
                spectra[e.key] = S[i].numpy()
        del W
    return svd_frame(rows), spectra
