"""The frozen-weight ("inactive weight topology") battery over a canonical catalog.

Every function reads tensors from a :class:`~geolip_lib.weights.TensorStore` one step
at a time (one batch of same-shape matrices, one attention block, one MLP block, a row
chunk of one role across layers), so the memory a step needs is bounded by
``batch_bytes`` or by the tensors of one block, never by the model.

Measurements (seed 001 §4–6), per matrix and aggregated by role / stack / layer:

- ``svd_table``: stable rank, PR of singular values, active fraction (> 1 % of max),
  rank at 90 % energy (of S², see the note), condition number; batched ``svdvals`` in
  float64 over stacked same-shape matrices.
- ``sparsity_tables``: fraction of |w| below thresholds per role, per (stack, attn,
  role), for the whole model, plus a log10|w| histogram.
- ``qk_tables``: the QK bilinear form M = W_Qᵀ W_K per layer (self and cross), from its
  factored form (never a d_model² product): stable rank, PR, symmetry deviation, sign
  counts of the eigenvalues of its symmetric part, top eigenvalues; and per head.
- ``mlp_tables``: dead / weak neurons (|gate|·|up|·|down| < 1 % / 10 % of the mean).
- ``cross_layer``: cosine of flattened weights between layers per role.
- ``norm_table``: LayerNorm / RMSNorm scale statistics.
- ``position_bias_table``: relative-position-bias head topology (T5).

Notes on departures from the seed (fixed bugs):

- The seed's QK matrix was ``W_q @ W_k.T`` with HF (out, in) weights: an
  (inner × inner) Gram of query/key *rows*, not the form xᵀ W_Qᵀ W_K y that scores
  tokens. Here M = W_Qᵀ W_K, per layer (sum over heads) and per head.
- The seed's "rank_90" used the cumulative sum of S, not of the energy S².
- The seed's sign counts counted round-off noise of the zero eigenvalues of a
  rank-deficient M as signs; here |λ| <= 10·m·eps·max|λ| is zero.
- Position-bias heads: the seed's local/global test used the raw bucket index, which
  mixes the two directions of the bidirectional encoder buckets; here buckets are
  mapped to distance classes first (the seed's raw definition is kept as ``*_seed``).
- Structural fact worth knowing (Sylvester's law of inertia): the symmetric part of a
  rank-r product Aᵀ B with 2r <= d has exactly r positive and r negative nonzero
  eigenvalues, so a *per-head* sign balance of 0.5 is forced, not learned; only layers
  with r > d/2 (e.g. T5, BERT: r = d) can depart from it.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
import torch

from ..models.adapters import ATTN_ROLES, MATRIX_ROLES, Catalog, catalog as build_catalog, clean_weight
from .spectral import qk_factored, sign_counts, spectrum_stats
from .store import TensorStore

THRESHOLDS = (1e-6, 1e-4, 1e-3, 1e-2, 1e-1)
HIST_EDGES = np.linspace(-10.0, 1.0, 221)  # log10|w| bins (values outside are clipped)


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
def svdvals(W: torch.Tensor, method: str = "gram", cond_limit: float = 1e6) -> torch.Tensor:
    """Singular values of a batch of matrices (..., m, n), descending, float64.

    ``method="gram"``: square roots of the eigenvalues of the Gram matrix on the smaller
    side (W Wᵀ or Wᵀ W) in float64, several times faster than an SVD; its absolute error
    is ~eps·σ_max²/σ, so matrices whose σ_min/σ_max < 1/``cond_limit`` are recomputed
    with ``torch.linalg.svdvals`` (exact to float64 round-off everywhere).
    ``method="svd"``: ``torch.linalg.svdvals`` for all.
    """
    W = W.to(torch.float64)
    if method == "svd":
        return torch.linalg.svdvals(W)
    if method != "gram":
        raise ValueError(f"method: expected 'gram' or 'svd', got {method!r}")
    m, n = W.shape[-2:]
    G = W @ W.mT if m <= n else W.mT @ W
    ev = torch.linalg.eigvalsh(G).flip(-1).clamp_min(0)
    S = ev.sqrt()
    bad = S[..., -1] * cond_limit < S[..., 0]
    if bool(bad.any()):
        flat = S.reshape(-1, S.shape[-1])
        Wf = W.reshape(-1, m, n)
        idx = bad.reshape(-1).nonzero().flatten()
        flat[idx] = torch.linalg.svdvals(Wf[idx])
        S = flat.reshape(S.shape)
    return S


def svd_table(store: TensorStore, cat: Catalog, roles: Sequence[str] = MATRIX_ROLES, *,
              batch_bytes: int = 64 << 20, device: Any = None, keep_spectra: bool = True,
              method: str = "gram", progress: bool = False):
    """Singular-value statistics of every 2-D matrix of ``roles``.

    Parameters
    ----------
    store, cat : TensorStore, Catalog
    roles : sequence of str
        Catalog roles to analyse (default: q/k/v/o and the MLP roles).
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
        active_frac, rank_90, condition, max_sv, min_sv) and ``{key: S}``.
    """
    dev = _device(device)
    ents = [e for e in cat.select(role=tuple(roles)) if len(e.shape) == 2]
    groups: dict = defaultdict(list)
    for e in ents:
        shp = tuple(e.shape) if not e.head_stride else (e.shape[0] // e.head_stride * e.head_dim, e.shape[1])
        groups[shp].append(e)
    rows, spectra = [], {}
    batches = []
    for shp, es in groups.items():
        per = max(1, int(batch_bytes // (8 * shp[0] * shp[1])))
        batches += [(shp, es[i:i + per]) for i in range(0, len(es), per)]
    for shp, es in _progress(batches, len(batches), "svd", progress):
        W = torch.stack([clean_weight(store, e, torch.float64) for e in es]).to(dev)
        S = svdvals(W, method=method)
        st = {k: v.cpu().numpy() for k, v in spectrum_stats(S).items()}
        S = S.cpu().numpy()
        for i, e in enumerate(es):
            r = _row(e)
            r.update(shape=shp, stable_rank=st["stable_rank"][i], pr=st["pr"][i],
                     active_frac=st["active_frac"][i], rank_90=int(st["rank_energy"][i]),
                     condition=st["condition"][i], max_sv=st["max_sv"][i], min_sv=st["min_sv"][i])
            rows.append(r)
            if keep_spectra:
                spectra[e.key] = S[i]
        del W
    df = pd.DataFrame(rows)
    if not df.empty:
        df = df.sort_values(["stack", "attn", "role", "layer"], na_position="first", kind="stable")
        df = df.reset_index(drop=True)
    return df, spectra


# ============================================================================ sparsity
def sparsity_tables(store: TensorStore, cat: Catalog, thresholds: Sequence[float] = THRESHOLDS, *,
                    progress: bool = False) -> dict:
    """Fraction of |w| below each threshold, per tensor, role, (stack, attn, role) and model.

    Fused QKV tensors are counted once for the model and once per q/k/v view for the
    roles. Returns dict of DataFrames ``per_tensor``, ``by_role``, ``by_stack_role``,
    ``model`` (one row) and ``hist`` (log10|w| histogram of the whole model: columns
    ``left``, ``right``, ``count``).
    """
    th = np.array(sorted(float(t) for t in thresholds))
    cols = [f"<{t:g}" for t in th]
    # one bucketize per tensor against the union of the threshold and histogram edges
    hist_lin = 10.0 ** HIST_EDGES[1:-1]
    edges = np.unique(np.concatenate([th, hist_lin]))
    edges_t = torch.tensor(edges, dtype=torch.float32)
    e32 = edges_t.numpy().astype(np.float64)
    th_pos = np.searchsorted(e32, th.astype(np.float32).astype(np.float64))  # bins [0, pos) are < th
    hist_pos = np.searchsorted(e32, hist_lin.astype(np.float32).astype(np.float64))
    rows = []
    hist = np.zeros(len(HIST_EDGES) - 1, dtype=np.int64)
    model_counts = np.zeros(len(th), dtype=np.int64)
    model_n = 0
    stored = cat.stored()
    views = [e for e in cat.entries if e.is_view]
    todo = [(e, True) for e in stored] + [(e, False) for e in views]
    for e, is_stored in _progress(todo, len(todo), "sparsity", progress):
        if not str(e.dtype).startswith(("float", "bfloat")):
            continue
        a = store.get(e, dtype=torch.float32).abs().reshape(-1)
        # right=True: bin i holds edges[i-1] <= |w| < edges[i]; cum[k] = #(|w| < edges[k-1])
        b = torch.bincount(torch.bucketize(a, edges_t, right=True), minlength=len(edges) + 1).numpy()
        cum = np.concatenate([[0], b.cumsum()])
        cnt = cum[th_pos + 1]
        n = a.numel()
        if is_stored:
            model_counts += cnt
            model_n += n
            hc = cum[np.concatenate([hist_pos + 1, [len(edges) + 1]])]
            hist += np.diff(np.concatenate([[0], hc]))
        if is_stored and e.role == "qkv":
            continue  # counted through its views for the role tables
        if e.role == "bias" and e.is_view:
            continue
        r = _row(e)
        r.update(n=n, **{c: int(v) for c, v in zip(cols, cnt)})
        rows.append(r)
    per = pd.DataFrame(rows)

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
    model = pd.DataFrame([{"n": model_n, **{c: (v / model_n if model_n else float("nan"))
                                             for c, v in zip(cols, model_counts)}}])
    h = pd.DataFrame({"left": HIST_EDGES[:-1], "right": HIST_EDGES[1:], "count": hist})
    return {"per_tensor": frac_per, "by_role": agg(["role"]), "by_stack_role": agg(["stack", "attn", "role"]),
            "model": model, "hist": h, "columns": cols}


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
        (n_pos/(n_pos+n_neg)), top_eig, bottom_eig, head_balance_mean);
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
        B = _expand_kv(K, b.n_heads, b.n_kv_heads, b.head_dim)
        d = A.shape[1]
        f = qk_factored(A, B)
        sc = sign_counts(f["eig"], d)
        st = spectrum_stats(f["svals"])
        ev = f["eig"].cpu().numpy()
        full = np.sort(np.concatenate([ev, np.zeros(d - ev.size)]))[::-1]
        eigs[(b.stack, b.attn, b.layer)] = full
        # per head: (H, hd, d) batched
        Ah = A.reshape(b.n_heads, b.head_dim, d)
        Bh = B.reshape(b.n_heads, b.head_dim, d)
        fh = qk_factored(Ah, Bh)
        sh = sign_counts(fh["eig"], d)
        sth = spectrum_stats(fh["svals"])
        lrows.append({"stack": b.stack, "attn": b.attn, "layer": b.layer, "d_model": d, "inner": A.shape[0],
                      "n_heads": b.n_heads, "n_kv_heads": b.n_kv_heads, "head_dim": b.head_dim,
                      "stable_rank": float(st["stable_rank"]), "pr": float(st["pr"]),
                      "sym_dev": float(f["sym_dev"]), "n_pos": int(sc["n_pos"]), "n_neg": int(sc["n_neg"]),
                      "n_zero": int(sc["n_zero"]), "pos_frac": float(sc["pos_frac"]),
                      "balance": float(sc["balance"]), "top_eig": full[:top].tolist(),
                      "bottom_eig": full[::-1][:top].tolist(),
                      "head_balance_mean": float(sh["balance"].mean()),
                      "qk_norm": bool(b.qk_norm)})
        for h in range(b.n_heads):
            hrows.append({"stack": b.stack, "attn": b.attn, "layer": b.layer, "head": h, "kv_head": b.kv_head(h),
                          "stable_rank": float(sth["stable_rank"][h]), "pr": float(sth["pr"][h]),
                          "sym_dev": float(fh["sym_dev"][h]), "n_pos": int(sh["n_pos"][h]),
                          "n_neg": int(sh["n_neg"][h]), "balance": float(sh["balance"][h]),
                          "fro": float(fh["fro"][h])})
        del A, K, B
    return {"layers": pd.DataFrame(lrows), "heads": pd.DataFrame(hrows), "eigs": eigs}


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
        if up.shape != down.shape:
            raise ValueError(f"weights: MLP of {b.stack} layer {b.layer}: {b.up.name} has {up.numel()} neurons, "
                             f"{b.down.name} has {down.numel()}")
        c = up * down
        if b.gate is not None:
            c = c * clean_weight(store, b.gate, torch.float64).norm(dim=1)
        m = c.mean()
        nd, nw = int((c < dead * m).sum()), int((c < weak * m).sum())
        rows.append({"stack": b.stack, "layer": b.layer, "d_ff": c.numel(), "gated": b.gate is not None,
                     "dead": nd, "weak": nw, "dead_frac": nd / c.numel(), "weak_frac": nw / c.numel(),
                     "up_norm_mean": float(up.mean()), "down_norm_mean": float(down.mean()),
                     "importance_cv": float(c.std() / m) if m > 0 else float("nan")})
        if keep_importance:
            imp[(b.stack, b.layer)] = c.numpy()
    return {"layers": pd.DataFrame(rows), "importance": imp}


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
        nb, nh = T.shape
        bidir = e.stack != "decoder"
        half = nb // 2 if bidir else nb
        dist = np.arange(nb) % half if bidir else np.arange(nb)
        tables[e.key] = T
        for h in range(nh):
            bias = T[:, h]
            near = bias[: half // 2 + 1] if bidir else bias[: half // 2]
            dif = np.diff(near)
            mono = float((dif <= 0).mean()) if dif.size else float("nan")
            dc = float(np.corrcoef(dist, bias)[0, 1]) if bias.std() > 0 else float("nan")
            pk = int(np.argmax(bias))
            pd_ = int(dist[pk])
            kind = "local" if pd_ < local_buckets else ("global" if pd_ >= half - local_buckets else "mixed")
            kind_seed = "local" if pk <= 2 else ("global" if pk >= nb - 3 else "mixed")
            rows.append({"name": e.key, "stack": e.stack, "attn": e.attn, "head": h, "min": float(bias.min()),
                         "max": float(bias.max()), "monotonic": mono, "dist_corr": dc, "peak_bucket": pk,
                         "peak_distance": pd_, "type": kind, "type_seed": kind_seed})
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
                cat: Optional[Catalog] = None) -> BatteryResult:
    """Run the whole battery on a checkpoint, streaming tensors.

    Parameters
    ----------
    source : path | LoadedModel | TensorStore | state dict
        Where the weights are (see :class:`TensorStore`).
    config, family : optional
        Passed to :func:`geolip_lib.models.adapters.catalog`.
    device : "auto" | "cpu" | "cuda" | None
        Where SVDs and QK problems run (default: CUDA when available).
    """
    import time

    store = source if isinstance(source, TensorStore) else TensorStore(source)
    if cat is None:
        if hasattr(source, "config") and config is None:
            config = source.config
        if hasattr(source, "family") and family is None:
            family = source.family
        cat = build_catalog(store, config=config, family=family)
    sec = {}
    t = time.perf_counter()
    svd, spectra = svd_table(store, cat, device=device, progress=progress)
    sec["svd"] = time.perf_counter() - t
    t = time.perf_counter()
    sp = sparsity_tables(store, cat, thresholds, progress=progress)
    sec["sparsity"] = time.perf_counter() - t
    t = time.perf_counter()
    qk = qk_tables(store, cat, device=device, progress=progress)
    sec["qk"] = time.perf_counter() - t
    t = time.perf_counter()
    mlp = mlp_tables(store, cat, progress=progress)
    cross = cross_layer(store, cat, progress=progress)
    norms, nv = norm_table(store, cat)
    pb, pt = position_bias_table(store, cat)
    sec["rest"] = time.perf_counter() - t
    return BatteryResult(cat, svd, spectra, sp, qk, mlp, cross, norms, nv, pb, pt, sec)


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
        cols = ["stable_rank", "pr", "active_frac", "rank_90", "condition"]
        finite = svd.replace([np.inf], np.nan)
        out["svd_by_role"] = {r: {c: float(g[c].mean()) for c in cols} | {"n": len(g)}
                              for r, g in finite.groupby("role")}
        out["svd_by_stack_role"] = {
            f"{s}/{a}/{r}": {c: float(g[c].mean()) for c in cols}
            for (s, a, r), g in finite.fillna({"stack": "-", "attn": "-"}).groupby(["stack", "attn", "role"])}
        out["svd_per_layer"] = {
            f"{s}/{a}/{r}": {"layers": [int(x) for x in g["layer"]], "stable_rank": g["stable_rank"].tolist(),
                             "condition": g["condition"].tolist()}
            for (s, a, r), g in finite.fillna({"stack": "-", "attn": "-"}).groupby(["stack", "attn", "role"])}
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
                "qk_norm": bool(g["qk_norm"].any())}
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
