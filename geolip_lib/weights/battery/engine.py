"""The battery's two engines (:func:`run_battery`) and its result type (:class:`BatteryResult`).

"reference" runs the per-analysis functions one after the other, each with its own pass
over the store. "fused" (default) walks the blocks of the catalog (attention blocks, MLP
blocks, then the rest) with a :class:`BlockReader` that reads each stored tensor once per
block, and feeds what it reads to a :class:`FusedAccumulator` (sparsity, SVD, QK and MLP
statistics while the tensor is in memory); cross-layer cosines re-read row chunks. Both
give the same results (tested equal).
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import pandas as pd
import torch

from ...devices import pick_device
from ...checkpoints import Catalog, strip_interleaved
from ...families import catalog as build_catalog
from ..spectral import svdvals_many
from ...checkpoints.store import TensorStore
from ._common import is_float, progress_bar
from .cross_layer import cross_layer
from .mlp import mlp_row, mlp_tables
from .norms import norm_table
from .position_bias import position_bias_table
from .qk import qk_block, qk_tables
from .sparsity import THRESHOLDS, SparsityCounter, sparsity_order, sparsity_tables
from .summary import battery_summary
from .svd import SVD_ROLES, svd_frame, svd_row, svd_shape, svd_table


@dataclass
class BatteryResult:
    """Everything the battery measured on one checkpoint (see :func:`run_battery`)."""

    catalog: Catalog
    svd: pd.DataFrame
    spectra: dict
    sparsity: dict
    qk: dict
    mlp: dict
    cross: dict
    norms: pd.DataFrame
    norm_values: dict
    pos_bias: pd.DataFrame
    pos_tables: dict
    seconds: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """JSON-ready aggregates (what ``metrics.json`` records)."""
        return battery_summary(self)


def run_battery(source: Any, config: Any = None, family: Optional[str] = None, *, device: Any = None,
                thresholds: Sequence[float] = THRESHOLDS, progress: bool = False,
                cat: Optional[Catalog] = None, engine: str = "fused",
                svd_roles: Sequence[str] = SVD_ROLES) -> BatteryResult:
    """Run the whole battery on a checkpoint, streaming tensors.

    Parameters
    ----------
    source : path | LoadedModel | TensorStore | state dict
        Where the weights are (see :class:`TensorStore`).
    config, family : optional
        Passed to :func:`geolip_lib.models.adapters.catalog`.
    device : "auto" | "cpu" | "cuda" | None
        Where SVDs and QK problems run (default: CUDA when available).
    engine : "fused" | "reference"
        "fused" (default) reads every stored tensor once per block (attention block,
        MLP block, then the rest) and runs sparsity, SVD, QK and MLP statistics on it
        while it is in memory; cross-layer cosines re-read row chunks. "reference"
        runs each analysis as its own pass (:func:`svd_table`, :func:`sparsity_tables`
        with plain float comparisons, :func:`qk_tables`, :func:`mlp_tables`): slower,
        kept as the slow reference the fused engine is tested against.
    svd_roles : roles whose 2-D matrices get singular-value statistics.
    """
    if engine not in ("fused", "reference"):
        raise ValueError(f"engine: expected 'fused' or 'reference', got {engine!r}")
    store = source if isinstance(source, TensorStore) else TensorStore(source)
    if cat is None:
        if hasattr(source, "config") and config is None:
            config = source.config
        if hasattr(source, "family") and family is None:
            family = source.family
        cat = build_catalog(store, config=config, family=family)
    if engine == "fused":
        return _run_fused(store, cat, thresholds, device=device, svd_roles=svd_roles, progress=progress)
    return _run_reference(store, cat, thresholds, device=device, svd_roles=svd_roles, progress=progress)


def _run_reference(store: TensorStore, cat: Catalog, thresholds: Sequence[float], *, device: Any,
                   svd_roles: Sequence[str], progress: bool) -> BatteryResult:
    """The "reference" engine of :func:`run_battery` (one pass per analysis)."""
    sec = {}
    t = time.perf_counter()
    svd, spectra = svd_table(store, cat, roles=svd_roles, device=device, progress=progress)
    sec["svd"] = time.perf_counter() - t
    t = time.perf_counter()
    sp = sparsity_tables(store, cat, thresholds, kernel="reference", progress=progress)
    sec["sparsity"] = time.perf_counter() - t
    t = time.perf_counter()
    qk = qk_tables(store, cat, device=device, progress=progress)
    sec["qk"] = time.perf_counter() - t
    t = time.perf_counter()
    mlp = mlp_tables(store, cat, progress=progress)
    sec["mlp"] = time.perf_counter() - t
    t = time.perf_counter()
    cross = cross_layer(store, cat, progress=progress)
    sec["cross_layer"] = time.perf_counter() - t
    t = time.perf_counter()
    norms, nv = norm_table(store, cat)
    pb, pt = position_bias_table(store, cat)
    sec["rest"] = time.perf_counter() - t
    return BatteryResult(cat, svd, spectra, sp, qk, mlp, cross, norms, nv, pb, pt, sec)


class FusedAccumulator:
    """What the fused engine accumulates over the blocks: sparsity counts, SVD rows and
    spectra, QK layer / head rows and eigenvalues, MLP rows and importances, seconds."""

    def __init__(self, cat: Catalog, thresholds: Sequence[float], svd_roles: Sequence[str], dev: torch.device):
        self.dev = dev
        self.sec: dict = defaultdict(float)
        self.sparsity = SparsityCounter(thresholds, "fast")
        self.counted: set = set()  # (key, is_stored) already counted for sparsity
        self.svd_keys = {e.key for e in cat.select(role=tuple(svd_roles)) if len(e.shape) == 2 and is_float(e)}
        self.stored = {e.name: e for e in cat.stored()}
        self.svd_rows: list = []
        self.spectra: dict = {}
        self.lrows: list = []
        self.hrows: list = []
        self.eigs: dict = {}
        self.mrows: list = []
        self.imp: dict = {}
        self.pending: list = []  # (entry, clean weight) waiting for one batched SVD call (flush_svd)
        self.pending_keys: set = set()

    def count(self, e, t: torch.Tensor, is_stored: bool) -> None:
        """Sparsity counts of entry ``e``'s data ``t`` (once per (entry, stored))."""
        if (e.key, is_stored) in self.counted or not is_float(e):
            return
        t1 = time.perf_counter()
        self.sparsity.add(e, t, is_stored)
        self.counted.add((e.key, is_stored))
        self.sec["sparsity"] += time.perf_counter() - t1

    def wants_svd(self, e) -> bool:
        return e is not None and e.key in self.svd_keys and e.key not in self.spectra \
            and e.key not in self.pending_keys

    def svd(self, e, W: torch.Tensor) -> None:
        """Queue entry ``e`` (clean weight ``W``) for :meth:`flush_svd`."""
        self.pending.append((e, W))
        self.pending_keys.add(e.key)

    def flush_svd(self) -> None:
        """Singular-value rows and spectra of the queued entries (a block's matrices): one
        batched eigenproblem call per Gram size on ``dev`` (:func:`svdvals_many`), then the
        statistics on the CPU from each float64 spectrum (one transfer per matrix)."""
        if not self.pending:
            return
        t0 = time.perf_counter()
        Ss = svdvals_many([W.to(self.dev) for _, W in self.pending])
        for (e, _), S in zip(self.pending, Ss):
            S = S.cpu()
            self.svd_rows.append(svd_row(e, svd_shape(e), S))
            self.spectra[e.key] = S.numpy()
        self.pending.clear()
        self.pending_keys.clear()
        self.sec["svd"] += time.perf_counter() - t0

    def qk(self, b, A: torch.Tensor, K: torch.Tensor, top: int) -> None:
        """QK rows of attention block ``b`` from its float64 Q and K weights."""
        t0 = time.perf_counter()
        lr, hr, full = qk_block(b, A, K, top)
        self.lrows.append(lr)
        self.hrows += hr
        self.eigs[(b.stack, b.attn, b.layer)] = full
        self.sec["qk"] += time.perf_counter() - t0

    def mlp(self, b, up: torch.Tensor, down: torch.Tensor, gate: Optional[torch.Tensor]) -> None:
        """Dead / weak neuron row of MLP block ``b`` from its clean weights."""
        t0 = time.perf_counter()
        nu = up.to(torch.float64).norm(dim=1)
        nd = down.to(torch.float64).norm(dim=0)
        ng = gate.to(torch.float64).norm(dim=1) if gate is not None else None
        r, c = mlp_row(b, nu, nd, ng)
        self.mrows.append(r)
        self.imp[(b.stack, b.layer)] = c
        self.sec["mlp"] += time.perf_counter() - t0


class BlockReader:
    """The tensors of one block, each stored tensor read once (float32, float64 if stored so);
    every read is counted for sparsity by the accumulator. A new reader per block frees the
    previous block's tensors."""

    def __init__(self, store: TensorStore, acc: FusedAccumulator):
        self.store, self.acc = store, acc
        self.cache: dict = {}

    def data(self, e) -> torch.Tensor:
        """Entry ``e``'s data (a row slice of its stored tensor for a view)."""
        acc = self.acc
        if e.name not in self.cache:
            t0 = time.perf_counter()
            par = acc.stored.get(e.name)  # None: a view whose stored tensor has no entry
            dt = torch.float64 if str((par or e).dtype) == "float64" else torch.float32
            self.cache[e.name] = self.store.get(e.name, dtype=dt)
            acc.sec["read"] += time.perf_counter() - t0
            if par is not None:
                acc.count(par, self.cache[e.name], True)
        t = self.cache[e.name]
        if e.is_view:
            t = t[e.row_slice[0]:e.row_slice[1]]
            acc.count(e, t, False)
        return t

    def clean(self, e) -> torch.Tensor:
        """Entry ``e``'s weight with interleaved rows removed (see ``strip_interleaved``)."""
        return strip_interleaved(e, self.data(e))

    def svd(self, e) -> None:
        """Singular-value statistics of ``e`` if it is one of the SVD entries not yet done."""
        if self.acc.wants_svd(e):
            self.acc.svd(e, self.clean(e))


def _run_fused(store: TensorStore, cat: Catalog, thresholds: Sequence[float], *, device: Any,
               svd_roles: Sequence[str], progress: bool, top: int = 5) -> BatteryResult:
    """The "fused" engine of :func:`run_battery` (one read per stored tensor and block)."""
    dev = pick_device(device)
    acc = FusedAccumulator(cat, thresholds, svd_roles, dev)
    units = [("attn", b) for b in cat.attention_blocks()] + [("mlp", b) for b in cat.mlp_blocks()] + [("rest", None)]
    for kind, b in progress_bar(units, len(units), "battery", progress):
        if kind == "attn":
            u = BlockReader(store, acc)
            for e in (b.q, b.k, b.v, b.o):
                u.svd(e)
            acc.flush_svd()
            if b.q is not None and b.k is not None:
                A = u.clean(b.q).to(device=dev, dtype=torch.float64)
                K = u.clean(b.k).to(device=dev, dtype=torch.float64)
                acc.qk(b, A, K, top)
                del A, K
        elif kind == "mlp":
            u = BlockReader(store, acc)
            for e in (b.up, b.gate, b.down):
                u.svd(e)
            acc.flush_svd()
            if b.up is not None and b.down is not None:
                acc.mlp(b, u.clean(b.up), u.clean(b.down), u.clean(b.gate) if b.gate is not None else None)
        else:  # everything not yet read: sparsity, and SVD of matrices outside blocks (embeddings)
            _read_rest(store, cat, acc)
    t0 = time.perf_counter()
    cross = cross_layer(store, cat, progress=progress)
    acc.sec["cross_layer"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    norms, nv = norm_table(store, cat)
    pb, pt = position_bias_table(store, cat)
    acc.sec["rest"] = time.perf_counter() - t0
    sparsity = acc.sparsity.tables(sparsity_order(cat))
    qk = {"layers": pd.DataFrame(acc.lrows), "heads": pd.DataFrame(acc.hrows), "eigs": acc.eigs}
    mlp = {"layers": pd.DataFrame(acc.mrows), "importance": acc.imp}
    return BatteryResult(cat, svd_frame(acc.svd_rows), acc.spectra, sparsity, qk, mlp, cross, norms, nv, pb, pt,
                         dict(acc.sec))


def _read_rest(store: TensorStore, cat: Catalog, acc: FusedAccumulator) -> None:
    """Read every entry no block has read (one read per stored tensor): sparsity counts, and
    the SVD of matrices outside blocks (embeddings)."""
    by_name: dict = defaultdict(list)
    for e in cat.entries:
        if ((e.key, not e.is_view) not in acc.counted and is_float(e)) or acc.wants_svd(e):
            by_name[e.name].append(e)
    for es in by_name.values():
        u = BlockReader(store, acc)
        for e in es:
            if e.key in acc.svd_keys:
                u.svd(e)
            else:
                u.data(e)
        acc.flush_svd()
