"""The QK bilinear form W_Qᵀ W_K per attention block and per head (:func:`qk_tables`), through
:class:`~geolip_lib.metrics.factored_qk.FactoredQK`, and seed 001's form beside it."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from ...devices import pick_device
from ...metrics.factored_qk import FactoredQK, inertia, qk_balance_forced
from ...checkpoints import Catalog
from ..spectral import qk_seed_form, spectrum_stats
from ...checkpoints.store import TensorStore
from ._common import progress_bar


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
        seed_neg_frac; ``forced_by_shape`` / ``seed_forced_by_shape``: the reason when the
        shapes alone force the balance of that form (grouped-query attention with
        2·n_kv_heads·head_dim ≤ d, resp. ≤ inner; :func:`~geolip_lib.metrics.factored_qk.qk_balance_forced`),
        else None);
        ``heads``: DataFrame (stack, attn, layer, head, kv_head, stable_rank, pr,
        sym_dev, n_pos, n_neg, balance, fro); ``eigs``: {(stack, attn, layer): eigenvalues
        of the symmetric part incl. its zero eigenvalues, descending (numpy)}.
    """
    dev = pick_device(device)
    blocks = [b for b in cat.attention_blocks() if b.q is not None and b.k is not None]
    lrows, hrows, eigs = [], [], {}
    for b in progress_bar(blocks, len(blocks), "qk", progress):
        A = b.weight(store, "q", torch.float64).to(dev)
        K = b.weight(store, "k", torch.float64).to(dev)
        lr, hr, full = qk_block(b, A, K, top)
        lrows.append(lr)
        hrows += hr
        eigs[(b.stack, b.attn, b.layer)] = full
        del A, K
    return {"layers": pd.DataFrame(lrows), "heads": pd.DataFrame(hrows), "eigs": eigs}


def qk_block(b, A: torch.Tensor, K: torch.Tensor, top: int = 5) -> tuple:
    """QK statistics of one attention block from its clean float64 Q and K weights.

    Returns (layer row, list of head rows, eigenvalues of the symmetric part incl. zeros).
    """
    f = FactoredQK.from_layer(A, K, b.n_heads, b.n_kv_heads)
    B = f.B  # keys repeated per query head under GQA
    d = A.shape[1]
    # the products and eigenproblems run where A and K are; their (small) results come to the
    # CPU once, and every statistic and table value is taken there
    sp = _cpu(f.spectrum())
    fh = _cpu(f.per_head(b.n_heads).spectrum())  # per head: (H, hd, d) batched
    sf = _cpu(qk_seed_form(A, B))  # the seed's (inner × inner) form, its sign rule
    sc = inertia(sp["eig"], d)
    st = spectrum_stats(sp["svals"])
    ev = sp["eig"].numpy()
    full = np.sort(np.concatenate([ev, np.zeros(d - ev.size)]))[::-1]
    sh = inertia(fh["eig"], d)
    sth = spectrum_stats(fh["svals"])
    lrow = {"stack": b.stack, "attn": b.attn, "layer": b.layer, "d_model": d, "inner": A.shape[0],
            "n_heads": b.n_heads, "n_kv_heads": b.n_kv_heads, "head_dim": b.head_dim,
            "stable_rank": float(st["stable_rank"]), "pr": float(st["pr"]),
            "sym_dev": float(sp["sym_dev"]), "n_pos": int(sc["n_pos"]), "n_neg": int(sc["n_neg"]),
            "n_zero": int(sc["n_zero"]), "pos_frac": float(sc["pos_frac"]),
            "balance": float(sc["balance"]), "top_eig": full[:top].tolist(),
            "bottom_eig": full[::-1][:top].tolist(),
            "head_balance_mean": float(sh["balance"].mean()),
            "head_forced_by_shape": qk_balance_forced(d, b.n_heads, b.head_dim, b.n_kv_heads, "head"),
            "qk_norm": bool(b.qk_norm),
            "forced_by_shape": qk_balance_forced(d, b.n_heads, b.head_dim, b.n_kv_heads, "layer"),
            "seed_forced_by_shape": qk_balance_forced(d, b.n_heads, b.head_dim, b.n_kv_heads, "seed")}
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


def _cpu(d: dict) -> dict:
    """The tensors of a result dict on the CPU (other values as they are)."""
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in d.items()}
