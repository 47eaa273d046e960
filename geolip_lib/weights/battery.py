"""The frozen-weight ("inactive weight topology") battery over a canonical catalog.

Every function reads tensors from a :class:`~geolip_lib.weights.TensorStore` one step
at a time (one batch of same-shape matrices, one attention block, one MLP block, a row
chunk of one role across layers), so the memory a step needs is bounded by
``batch_bytes`` or by the tensors of one block, never by the model.

:func:`run_battery` has two engines with the same results (tested equal): "fused"
(default) reads each stored tensor once per block and runs sparsity, SVD, QK and MLP
statistics while it is in memory (cross-layer cosines re-read row chunks); "reference"
runs the per-analysis functions below one after the other, each with its own pass.

Measurements (seed 001 §4–6), per matrix and aggregated by role / stack / layer:

- ``svd_table``: stable rank, PR of singular values, active fraction (> 1 % of max),
  rank at 90 % (``rank_90`` of the energy S², ``rank_90_seed`` of S as the seed had it),
  condition number of every attention, MLP and embedding matrix; float64 spectra from
  Gram eigenvalues (exact SVD where the matrix is ill-conditioned).
- ``sparsity_tables``: exact fraction of |w| below thresholds per role, per (stack,
  attn, role), for the whole model, plus a |w| histogram (1/8-octave bins).
- ``qk_tables``: the QK bilinear form M = W_Qᵀ W_K per layer (self and cross), from its
  factored form (never a d_model² product): stable rank, PR, symmetry deviation, sign
  counts of the eigenvalues of its symmetric part, top eigenvalues; and per head. Beside
  it, per layer, the seed's own form (``seed_*`` columns, see the notes).
- ``mlp_tables``: dead / weak neurons (|gate|·|up|·|down| < 1 % / 10 % of the mean).
- ``cross_layer``: cosine of flattened weights between layers per role.
- ``norm_table``: LayerNorm / RMSNorm scale statistics.
- ``position_bias_table``: relative-position-bias head topology (T5).

Notes on departures from the seed (fixed bugs; the seed's definition is kept beside each):

- The seed's QK matrix was ``W_q @ W_k.T`` with HF (out, in) weights: an
  (inner × inner) Gram of query/key *rows*, not the form xᵀ W_Qᵀ W_K y that scores
  tokens. Here M = W_Qᵀ W_K, per layer (sum over heads) and per head; the seed's form is
  computed too (:func:`~geolip_lib.weights.spectral.qk_seed_form`: ``seed_n_pos``,
  ``seed_n_neg``, ``seed_dim`` = inner, ``seed_pos_frac`` = n_pos / inner per layer).
- The seed's "rank_90" used the cumulative sum of S, not of the energy S²: both are
  recorded (``rank_90_seed`` and ``rank_90``).
- The seed's sign counts counted round-off noise of the zero eigenvalues of a
  rank-deficient M as signs; here |λ| <= 10·m·eps·max|λ| is zero (the ``seed_*`` counts
  keep the seed's rule: ``> 0`` / ``< 0``, no tolerance).
- Position-bias heads: the seed's local/global test used the raw bucket index, which
  mixes the two directions of the bidirectional encoder buckets; here buckets are
  mapped to distance classes first (the seed's raw definition is kept as ``*_seed``).
- What a QK sign balance of 0.5 means, per head and per layer, in either form: the one
  statement :data:`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT` (tested in
  ``tests/unit/test_qk_balance_statement.py``).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
import torch

from ..models.adapters import (ATTN_ROLES, MATRIX_ROLES, Catalog, catalog as build_catalog, clean_weight,
                               strip_interleaved)
from . import _kernels
from ..metrics.position_bias import head_topology
from .spectral import qk_factored, qk_seed_form, sign_counts, spectrum_stats, svdvals
from .store import TensorStore

THRESHOLDS = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
#: roles whose 2-D matrices get singular-value statistics (embeddings too: WeightWatcher
#: analyses them, and their spectra are part of the terrain)
SVD_ROLES = MATRIX_ROLES + ("embed", "unembed")
# |w| histogram: the kernel's binary-exponent bins (8 per octave, exact float32 edges)
# between 2**-34 (~5.8e-11) and 2**4; smaller values (zeros too) go to the first bin,
# larger ones (inf, NaN too) to the last.
_HIST_LO = int(np.float32(2.0 ** -34).view(np.int32)) >> _kernels.SHIFT
_HIST_HI = int(np.float32(2.0 ** 4).view(np.int32)) >> _kernels.SHIFT
_E = _kernels.bin_edges()
HIST_EDGES = np.log10(_E[_HIST_LO:_HIST_HI + 1])  # log10|w| bin edges of the reported histogram
del _E


def _device(device: Any) -> torch.device:
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _progress(it, total: int, desc: str, enabled: bool):
    if not enabled:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, total=total, desc=desc, leave=False)


def _row(e) -> dict:
    return {"name": e.key, "role": e.role, "stack": e.stack, "attn": e.attn, "layer": e.layer}


# ============================================================================ SVD
def _svd_row(e, shp, S: torch.Tensor) -> dict:
    st = spectrum_stats(S)
    r = _row(e)
    r.update(shape=shp, stable_rank=float(st["stable_rank"]), pr=float(st["pr"]),
             active_frac=float(st["active_frac"]), rank_90=int(st["rank_energy"]),
             rank_90_seed=int(st["rank_seed"]), condition=float(st["condition"]), max_sv=float(st["max_sv"]),
             min_sv=float(st["min_sv"]))
    return r


def _svd_frame(rows: list) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if not df.empty:
        df = df.sort_values(["stack", "attn", "role", "layer", "name"], na_position="first", kind="stable")
        df = df.reset_index(drop=True)
    return df


def _svd_shape(e) -> tuple:
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
    dev = _device(device)
    ents = [e for e in cat.select(role=tuple(roles)) if len(e.shape) == 2 and _is_float(e)]
    groups: dict = defaultdict(list)
    for e in ents:
        groups[_svd_shape(e)].append(e)
    rows, spectra = [], {}
    batches = []
    for shp, es in groups.items():
        per = max(1, int(batch_bytes // (8 * shp[0] * shp[1])))
        batches += [(shp, es[i:i + per]) for i in range(0, len(es), per)]
    for shp, es in _progress(batches, len(batches), "svd", progress):
        W = torch.stack([clean_weight(store, e, torch.float64) for e in es]).to(dev)
        S = svdvals(W, method=method).cpu()
        for i, e in enumerate(es):
            rows.append(_svd_row(e, shp, S[i]))
            if keep_spectra:
                spectra[e.key] = S[i].numpy()
        del W
    return _svd_frame(rows), spectra


# ============================================================================ sparsity
def _is_float(e) -> bool:
    return str(e.dtype).startswith(("float", "bfloat"))


class _Sparsity:
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
        r = _row(e)
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


def _sparsity_order(cat: Catalog) -> list:
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
    acc = _Sparsity(thresholds, kernel)
    stored = cat.stored()
    views = [e for e in cat.entries if e.is_view]
    todo = [(e, True) for e in stored] + [(e, False) for e in views]
    for e, is_stored in _progress(todo, len(todo), "sparsity", progress):
        if not _is_float(e):
            continue
        acc.add(e, store.get(e, dtype=torch.float32), is_stored)
    return acc.tables(_sparsity_order(cat))


# ============================================================================ QK manifold
def _expand_kv(K: torch.Tensor, n_heads: int, n_kv: int, hd: int) -> torch.Tensor:
    if n_kv == n_heads:
        return K
    return K.reshape(n_kv, hd, -1).repeat_interleave(n_heads // n_kv, dim=0).reshape(n_heads * hd, -1)


def qk_tables(store: TensorStore, cat: Catalog, *, device: Any = None, top: int = 5,
              progress: bool = False) -> dict:
    """QK manifold per attention block (layer level) and per head.

    Returns
    -------
    dict
        ``layers``: DataFrame (stack, attn, layer, d_model, inner, stable_rank, pr,
        sym_dev, n_pos, n_neg, n_zero, pos_frac (n_pos/d_model), balance
        (n_pos/(n_pos+n_neg)), top_eig, bottom_eig, head_balance_mean, and the seed's
        form sym(W_q W_kᵀ): seed_dim (inner), seed_n_pos, seed_n_neg, seed_pos_frac,
        seed_neg_frac);
        ``heads``: DataFrame (stack, attn, layer, head, kv_head, stable_rank, pr,
        sym_dev, n_pos, n_neg, balance, fro); ``eigs``: {(stack, attn, layer): eigenvalues
        of the symmetric part incl. its zero eigenvalues, descending (numpy)}.
    """
    dev = _device(device)
    blocks = [b for b in cat.attention_blocks() if b.q is not None and b.k is not None]
    lrows, hrows, eigs = [], [], {}
    for b in _progress(blocks, len(blocks), "qk", progress):
        A = b.weight(store, "q", torch.float64).to(dev)
        K = b.weight(store, "k", torch.float64).to(dev)
        lr, hr, full = _qk_block(b, A, K, top)
        lrows.append(lr)
        hrows += hr
        eigs[(b.stack, b.attn, b.layer)] = full
        del A, K
    return {"layers": pd.DataFrame(lrows), "heads": pd.DataFrame(hrows), "eigs": eigs}


def _qk_block(b, A: torch.Tensor, K: torch.Tensor, top: int = 5) -> tuple:
    """QK statistics of one attention block from its clean float64 Q and K weights.

    Returns (layer row, list of head rows, eigenvalues of the symmetric part incl. zeros).
    """
    B = _expand_kv(K, b.n_heads, b.n_kv_heads, b.head_dim)
    d = A.shape[1]
    f = qk_factored(A, B)
    sc = sign_counts(f["eig"], d)
    st = spectrum_stats(f["svals"])
    ev = f["eig"].cpu().numpy()
    full = np.sort(np.concatenate([ev, np.zeros(d - ev.size)]))[::-1]
    # per head: (H, hd, d) batched
    Ah = A.reshape(b.n_heads, b.head_dim, d)
    Bh = B.reshape(b.n_heads, b.head_dim, d)
    fh = qk_factored(Ah, Bh)
    sh = sign_counts(fh["eig"], d)
    sth = spectrum_stats(fh["svals"])
    lrow = {"stack": b.stack, "attn": b.attn, "layer": b.layer, "d_model": d, "inner": A.shape[0],
            "n_heads": b.n_heads, "n_kv_heads": b.n_kv_heads, "head_dim": b.head_dim,
            "stable_rank": float(st["stable_rank"]), "pr": float(st["pr"]),
            "sym_dev": float(f["sym_dev"]), "n_pos": int(sc["n_pos"]), "n_neg": int(sc["n_neg"]),
            "n_zero": int(sc["n_zero"]), "pos_frac": float(sc["pos_frac"]),
            "balance": float(sc["balance"]), "top_eig": full[:top].tolist(),
            "bottom_eig": full[::-1][:top].tolist(),
            "head_balance_mean": float(sh["balance"].mean()),
            "qk_norm": bool(b.qk_norm)}
    sf = qk_seed_form(A, B)  # the seed's (inner × inner) form, its sign rule
    lrow.update(seed_dim=int(sf["dim"]), seed_n_pos=int(sf["n_pos"]), seed_n_neg=int(sf["n_neg"]),
                seed_pos_frac=float(sf["pos_frac"]), seed_neg_frac=float(sf["neg_frac"]))
    sth = {k: v.cpu().tolist() for k, v in sth.items()}
    sh = {k: v.cpu().tolist() for k, v in sh.items()}
    fro, sdev = fh["fro"].cpu().tolist(), fh["sym_dev"].cpu().tolist()
    hrows = [{"stack": b.stack, "attn": b.attn, "layer": b.layer, "head": h, "kv_head": b.kv_head(h),
              "stable_rank": float(sth["stable_rank"][h]), "pr": float(sth["pr"][h]),
              "sym_dev": float(sdev[h]), "n_pos": int(sh["n_pos"][h]),
              "n_neg": int(sh["n_neg"][h]), "balance": float(sh["balance"][h]),
              "fro": float(fro[h])} for h in range(b.n_heads)]
    return lrow, hrows, full


# ============================================================================ MLP
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
    for b in _progress(blocks, len(blocks), "mlp", progress):
        up = clean_weight(store, b.up, torch.float64).norm(dim=1)
        down = clean_weight(store, b.down, torch.float64).norm(dim=0)
        gate = clean_weight(store, b.gate, torch.float64).norm(dim=1) if b.gate is not None else None
        r, c = _mlp_row(b, up, down, gate, dead, weak)
        rows.append(r)
        if keep_importance:
            imp[(b.stack, b.layer)] = c
    return {"layers": pd.DataFrame(rows), "importance": imp}


def _mlp_row(b, up: torch.Tensor, down: torch.Tensor, gate: Optional[torch.Tensor], dead: float = 0.01,
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
    return row, c.cpu().numpy()


# ============================================================================ cross-layer
def cross_layer(store: TensorStore, cat: Catalog, roles: Sequence[str] = MATRIX_ROLES, *,
                chunk_bytes: int = 64 << 20, progress: bool = False) -> dict:
    """Cosine similarity between layers of the flattened weights of each role.

    The (L, L) Gram matrix is accumulated over row chunks read from every layer at
    once, so the memory is ``chunk_bytes`` whatever the model size.

    Returns ``{(stack, attn, role): {"layers": [...], "cos": (L, L) numpy,
    "adj_mean", "adj_min", "adj_max", "offdiag_abs_mean"}}`` for groups with >= 2 layers.
    """
    groups: dict = defaultdict(list)
    for e in cat.select(role=tuple(roles)):
        if len(e.shape) == 2 and e.layer is not None:
            groups[(e.stack, e.attn, e.role, tuple(e.shape))].append(e)
    out = {}
    items = [(k, v) for k, v in groups.items() if len(v) >= 2]
    for (stack, attn, role, shape), es in _progress(items, len(items), "cross-layer", progress):
        es = sorted(es, key=lambda e: e.layer)
        L, (rows_n, cols_n) = len(es), shape
        step = max(1, int(chunk_bytes // (8 * L * cols_n)))
        G = torch.zeros(L, L, dtype=torch.float64)
        for a in range(0, rows_n, step):
            b = min(rows_n, a + step)
            X = torch.stack([store.get(e, torch.float64, row_slice=(a, b)).reshape(-1) for e in es])
            G += X @ X.T
        nrm = G.diagonal().sqrt().clamp_min(1e-300)
        C = (G / nrm[:, None] / nrm[None, :]).numpy()
        adj = np.array([C[i, i + 1] for i in range(L - 1)])
        off = C[~np.eye(L, dtype=bool)]
        out[(stack, attn, role)] = {"layers": [e.layer for e in es], "cos": C, "adj_mean": float(adj.mean()),
                                    "adj_min": float(adj.min()), "adj_max": float(adj.max()),
                                    "offdiag_abs_mean": float(np.abs(off).mean())}
    return out


# ============================================================================ norms, position bias
def norm_table(store: TensorStore, cat: Catalog, *, keep_values: bool = True) -> tuple:
    """Scale statistics of every norm weight (high > 1.5, low < 0.5, near one in (0.8, 1.2))."""
    rows, vals = [], {}
    for e in cat.select(role="norm"):
        if len(e.shape) != 1:
            continue
        w = store.get(e, torch.float64)
        rows.append({**_row(e), "of": e.of, "n": w.numel(), "mean": float(w.mean()),
                     "std": float(w.std()) if w.numel() > 1 else 0.0,
                     "high": int((w > 1.5).sum()), "low": int((w < 0.5).sum()),
                     "near_one": int(((w > 0.8) & (w < 1.2)).sum())})
        if keep_values:
            vals[e.key] = w.numpy()
    return pd.DataFrame(rows), vals


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
        T = store.get(e, torch.float64).numpy()
        tables[e.key] = T
        for r in head_topology(T, bidirectional=e.stack != "decoder", local_buckets=local_buckets):
            rows.append({"name": e.key, "stack": e.stack, "attn": e.attn, **r})
    return pd.DataFrame(rows), tables


# ============================================================================ all together
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
    import time

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


def _run_fused(store: TensorStore, cat: Catalog, thresholds: Sequence[float], *, device: Any,
               svd_roles: Sequence[str], progress: bool, top: int = 5) -> BatteryResult:
    """The "fused" engine of :func:`run_battery` (one read per stored tensor and block)."""
    import time

    dev = _device(device)
    sec: dict = defaultdict(float)
    clock = time.perf_counter
    sp = _Sparsity(thresholds, "fast")
    counted: set = set()
    svd_keys = {e.key for e in cat.select(role=tuple(svd_roles)) if len(e.shape) == 2 and _is_float(e)}
    stored = {e.name: e for e in cat.stored()}
    svd_rows, spectra = [], {}
    lrows, hrows, eigs = [], [], {}
    mrows, imp = [], {}

    class Unit:
        """The tensors of one block, each read once (float32, float64 if stored so)."""

        def __init__(self):
            self.cache: dict = {}

        def data(self, e):
            if e.name not in self.cache:
                t0 = clock()
                par = stored.get(e.name)  # None: a view whose stored tensor has no entry
                dt = torch.float64 if str((par or e).dtype) == "float64" else torch.float32
                self.cache[e.name] = store.get(e.name, dtype=dt)
                t1 = clock()
                sec["read"] += t1 - t0
                if par is not None and (par.key, True) not in counted and _is_float(par):
                    sp.add(par, self.cache[e.name], True)
                    counted.add((par.key, True))
                sec["sparsity"] += clock() - t1
            t = self.cache[e.name]
            if e.is_view:
                t = t[e.row_slice[0]:e.row_slice[1]]
                if (e.key, False) not in counted and _is_float(e):
                    t1 = clock()
                    sp.add(e, t, False)
                    counted.add((e.key, False))
                    sec["sparsity"] += clock() - t1
            return t

        def svd(self, e):
            if e is None or e.key not in svd_keys or e.key in spectra:
                return
            W = strip_interleaved(e, self.data(e))
            t0 = clock()
            S = svdvals(W.to(dev))
            svd_rows.append(_svd_row(e, _svd_shape(e), S))
            spectra[e.key] = S.cpu().numpy()
            sec["svd"] += clock() - t0

    units = [("attn", b) for b in cat.attention_blocks()] + [("mlp", b) for b in cat.mlp_blocks()] + [("rest", None)]
    for kind, b in _progress(units, len(units), "battery", progress):
        u = Unit()  # the block's tensors: freed when the next block starts
        if kind == "attn":
            for e in (b.q, b.k, b.v, b.o):
                u.svd(e)
            if b.q is not None and b.k is not None:
                A = strip_interleaved(b.q, u.data(b.q)).to(device=dev, dtype=torch.float64)
                K = strip_interleaved(b.k, u.data(b.k)).to(device=dev, dtype=torch.float64)
                t0 = clock()
                lr, hr, full = _qk_block(b, A, K, top)
                lrows.append(lr)
                hrows += hr
                eigs[(b.stack, b.attn, b.layer)] = full
                sec["qk"] += clock() - t0
                del A, K
        elif kind == "mlp":
            for e in (b.up, b.gate, b.down):
                u.svd(e)
            if b.up is not None and b.down is not None:
                up = strip_interleaved(b.up, u.data(b.up))
                down = strip_interleaved(b.down, u.data(b.down))
                t0 = clock()
                nu = up.to(torch.float64).norm(dim=1)
                nd = down.to(torch.float64).norm(dim=0)
                ng = (strip_interleaved(b.gate, u.data(b.gate)).to(torch.float64).norm(dim=1)
                      if b.gate is not None else None)
                r, c = _mlp_row(b, nu, nd, ng)
                mrows.append(r)
                imp[(b.stack, b.layer)] = c
                sec["mlp"] += clock() - t0
        else:  # everything not yet read: sparsity, and SVD of matrices outside blocks (embeddings)
            by_name: dict = defaultdict(list)
            for e in cat.entries:
                if ((e.key, not e.is_view) not in counted and _is_float(e)) or \
                        (e.key in svd_keys and e.key not in spectra):
                    by_name[e.name].append(e)
            for es in by_name.values():  # one read per stored tensor
                u = Unit()
                for e in es:
                    if e.key in svd_keys:
                        u.svd(e)
                    else:
                        u.data(e)
        del u
    t0 = clock()
    cross = cross_layer(store, cat, progress=progress)
    sec["cross_layer"] = clock() - t0
    t0 = clock()
    norms, nv = norm_table(store, cat)
    pb, pt = position_bias_table(store, cat)
    sec["rest"] = clock() - t0
    sparsity = sp.tables(_sparsity_order(cat))
    qk = {"layers": pd.DataFrame(lrows), "heads": pd.DataFrame(hrows), "eigs": eigs}
    mlp = {"layers": pd.DataFrame(mrows), "importance": imp}
    return BatteryResult(cat, _svd_frame(svd_rows), spectra, sparsity, qk, mlp, cross, norms, nv, pb, pt,
                         dict(sec))


def _mean(x) -> Optional[float]:
    x = [v for v in x if v is not None and np.isfinite(v)]
    return float(np.mean(x)) if x else None


def battery_summary(res: BatteryResult) -> dict:
    """Aggregate a :class:`BatteryResult` into plain dicts (JSON-ready)."""
    cat = res.catalog
    out: dict = {"family": cat.family, "d_model": cat.d_model,
                 "n_tensors": len(cat.stored()), "n_params": int(sum(e.numel for e in cat.stored())),
                 "unclassified_2d": [e.name for e in cat.unclassified()]}
    # SVD by role and by (stack, attn, role)
    svd = res.svd
    if not svd.empty:
        cols = ["stable_rank", "pr", "active_frac", "rank_90", "rank_90_seed", "condition"]
        finite = svd.replace([np.inf], np.nan)
        out["svd_by_role"] = {r: {c: float(g[c].mean()) for c in cols} | {"n": len(g)}
                              for r, g in finite.groupby("role")}
        out["svd_by_stack_role"] = {
            f"{s}/{a}/{r}": {c: float(g[c].mean()) for c in cols}
            for (s, a, r), g in finite.fillna({"stack": "-", "attn": "-"}).groupby(["stack", "attn", "role"])}
        out["svd_per_layer"] = {
            f"{s}/{a}/{r}": {"layers": [int(x) for x in g["layer"]], "stable_rank": g["stable_rank"].tolist(),
                             "condition": g["condition"].tolist()}
            for (s, a, r), g in finite[finite["layer"].notna()].fillna({"stack": "-", "attn": "-"})
            .groupby(["stack", "attn", "role"])}
    sp = res.sparsity
    cols = sp["columns"]
    out["sparsity_thresholds"] = cols
    out["sparsity_by_role"] = {r["role"]: {c: float(r[c]) for c in cols} for _, r in sp["by_role"].iterrows()} \
        if not sp["by_role"].empty else {}
    out["sparsity_by_stack_role"] = {f"{r['stack']}/{r['attn']}/{r['role']}": {c: float(r[c]) for c in cols}
                                     for _, r in sp["by_stack_role"].iterrows()} \
        if not sp["by_stack_role"].empty else {}
    out["sparsity_model"] = {c: float(sp["model"][c].iloc[0]) for c in cols}
    big = cols[-1]
    out["qkv_sparsity"] = {r: out["sparsity_by_role"].get(r, {}).get(big) for r in ("q", "k", "v")}
    out["qkv_sparsity_threshold"] = big
    # QK
    ql = res.qk["layers"]
    qk = {}
    if not ql.empty:
        for (s, a), g in ql.groupby(["stack", "attn"]):
            g = g.sort_values("layer")
            qk[f"{s}/{a}"] = {
                "layers": [int(x) for x in g["layer"]], "pos_frac": g["pos_frac"].tolist(),
                "balance": g["balance"].tolist(), "stable_rank": g["stable_rank"].tolist(),
                "pr": g["pr"].tolist(), "sym_dev": g["sym_dev"].tolist(), "n_pos": g["n_pos"].tolist(),
                "n_neg": g["n_neg"].tolist(), "n_zero": g["n_zero"].tolist(),
                "top_eig": [t[0] for t in g["top_eig"]], "head_balance_mean": g["head_balance_mean"].tolist(),
                "pos_frac_first": float(g["pos_frac"].iloc[0]), "pos_frac_last": float(g["pos_frac"].iloc[-1]),
                "pos_frac_trend": float(g["pos_frac"].iloc[-1] - g["pos_frac"].iloc[0]),
                "d_model": int(g["d_model"].iloc[0]), "inner": int(g["inner"].iloc[0]),
                "qk_norm": bool(g["qk_norm"].any()), "balance_mean": float(g["balance"].mean()),
                # the seed's form sym(W_q W_kᵀ) (inner × inner, no tolerance): n_pos / inner per layer
                "seed_pos_frac": g["seed_pos_frac"].tolist(), "seed_neg_frac": g["seed_neg_frac"].tolist(),
                "seed_n_pos": g["seed_n_pos"].tolist(), "seed_n_neg": g["seed_n_neg"].tolist(),
                "seed_dim": int(g["seed_dim"].iloc[0]), "seed_pos_frac_mean": float(g["seed_pos_frac"].mean())}
    out["qk"] = qk
    # MLP
    ml = res.mlp["layers"]
    if not ml.empty:
        out["mlp"] = {"dead": int(ml["dead"].sum()), "weak": int(ml["weak"].sum()), "neurons": int(ml["d_ff"].sum()),
                      "dead_frac": float(ml["dead"].sum() / ml["d_ff"].sum()),
                      "weak_frac": float(ml["weak"].sum() / ml["d_ff"].sum()),
                      "gated": bool(ml["gated"].any()),
                      "per_stack": {s: {"dead_frac": float(g["dead"].sum() / g["d_ff"].sum()),
                                        "weak_frac": float(g["weak"].sum() / g["d_ff"].sum())}
                                    for s, g in ml.groupby("stack")}}
    else:
        out["mlp"] = {}
    out["cross_layer"] = {f"{s}/{a or '-'}/{r}": {k: v for k, v in d.items() if k != "cos"}
                          | {"cos": np.round(d["cos"], 6).tolist()}
                          for (s, a, r), d in res.cross.items()}
    adj = [d["adj_mean"] for (s, a, r), d in res.cross.items() if r in ATTN_ROLES]
    out["cross_layer_attn_adj_mean"] = _mean(adj)
    nt = res.norms
    if not nt.empty:
        out["norms"] = {"n_tensors": len(nt), "mean_scale": float((nt["mean"] * nt["n"]).sum() / nt["n"].sum()),
                        "high": int(nt["high"].sum()), "low": int(nt["low"].sum()),
                        "near_one": int(nt["near_one"].sum()), "n": int(nt["n"].sum())}
    else:
        out["norms"] = {}
    pb = res.pos_bias
    if not pb.empty:
        out["position_bias"] = {
            s: {"n_heads": len(g), **{k: int((g["type"] == k).sum()) for k in ("local", "global", "mixed")},
                **{f"{k}_seed": int((g["type_seed"] == k).sum()) for k in ("local", "global", "mixed")},
                "monotonic_mean": _mean(g["monotonic"]), "dist_corr_mean": _mean(g["dist_corr"])}
            for s, g in pb.groupby("stack")}
    else:
        out["position_bias"] = {}
    out["seconds"] = res.seconds
    return out
