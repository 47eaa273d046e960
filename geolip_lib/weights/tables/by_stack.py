"""Like with like, as the seed measured: Q/K/V sparsity per (stack, attention kind) and the encoder/decoder × self/cross table of seed §6."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ...metrics import intervals as iv
from ._common import RANDOM, _lohi, _mean, _qk_scopes, _scope_order, get
from .headlines import items_interval


#: roles whose sparsity is reported per (stack, attention kind), as seed §4–6 did
SPARSITY_ROLES = ("q", "k", "v")


#: the threshold of the seed's Q-sparsity claim
CLAIM_THRESHOLD = "<0.1"


def _pooled_self_q(stack: Optional[Mapping]) -> Optional[dict]:
    """The Q items of encoder/self and decoder/self together (seed §4's pooling), or None."""
    enc, dec = get(stack, "encoder/self", "q"), get(stack, "decoder/self", "q")
    if not enc or not dec:
        return None
    return {"num": list(enc["num"]) + list(dec["num"]), "den": list(enc["den"]) + list(dec["den"]),
            "items": "self-attention Q matrices"}


def stack_items(res, column: Optional[str] = None, roles: Sequence[str] = SPARSITY_ROLES) -> dict:
    """The matrices each per-(stack, attention kind) sparsity value pools.

    Returns ``{"<stack>/<attn>": {role: {"num", "den", "items"}}}`` for the roles q/k/v:
    per matrix, the number of weights with |w| below ``column`` (default: the largest
    threshold, "<0.1") and its number of weights, so that ``Σ num / Σ den`` is exactly
    ``summary["sparsity_by_stack_role"]["<stack>/<attn>/<role>"][column]``; resampling the
    matrices is the bootstrap of that value (:func:`items_interval`). JSON-ready.
    """
    sp = res.sparsity
    per, col = sp["per_tensor"], column or sp["columns"][-1]
    out: dict = {}
    if per.empty or "role" not in per:
        return out
    per = per[per["role"].isin(tuple(roles))].fillna({"stack": "-", "attn": "-"})
    for (st, at, r), g in per.groupby(["stack", "attn", "role"], sort=False):
        n = g["n"].to_numpy(dtype=np.float64)
        below = np.rint(n * g[col].to_numpy(dtype=np.float64))  # the kernel's exact counts
        out.setdefault(f"{st}/{at}", {})[r] = {"num": below.tolist(), "den": n.tolist(),
                                               "items": f"{r.upper()} matrices"}
    return {k: dict(sorted(out[k].items(), key=lambda kv: roles.index(kv[0]))) for k in sorted(out, key=_scope_order)}


def sparsity_by_stack(summary: Mapping, items: Mapping, null: Optional[Mapping] = None,
                      null_items: Optional[Mapping] = None, *, seed: int = 0, n_boot: int = iv.N_BOOT) -> pd.DataFrame:
    """Q/K/V sparsity at the largest threshold per (stack, attention kind), as the seed measured.

    One row per (``stack/attn``, role): the number of matrices, the trained fraction with
    its 95 % bootstrap interval over those matrices (``lo``, ``hi``; NaN with fewer than
    3 matrices), and the same at random init. ``items`` / ``null_items``: :func:`stack_items`.
    """
    thr = summary.get("qkv_sparsity_threshold")
    rows = []
    for scope, roles in items.items():
        for r, it in roles.items():
            lo, hi = _lohi(items_interval(it, seed=seed, n_boot=n_boot))
            row = {"stack/attn": scope, "role": r.upper(), "matrices": len(it["num"]),
                   "trained": get(summary, "sparsity_by_stack_role", f"{scope}/{r}", thr), "lo": lo, "hi": hi}
            if null is not None:
                nlo, nhi = _lohi(items_interval(get(null_items, scope, r), seed=seed, n_boot=n_boot))
                row |= {RANDOM: get(null, "sparsity_by_stack_role", f"{scope}/{r}", thr),
                        f"lo ({RANDOM})": nlo, f"hi ({RANDOM})": nhi}
            rows.append(row)
    return pd.DataFrame(rows)


def stack_attn_table(summary: Mapping, null: Optional[Mapping] = None) -> pd.DataFrame:
    """Seed §6's encoder/decoder × self/cross table: per ``stack/attn``, the Q/K/V sparsity at
    the largest threshold and the QK sign balance over its layers, in the seed's form
    (n_pos / inner of sym(W_q W_kᵀ): mean, min, max over layers; and n_neg / inner) and in
    the project's (balance n_pos / (n_pos + n_neg) of sym(W_Qᵀ W_K), mean over layers), with
    Q sparsity and the seed-form balance at random init."""
    thr = summary.get("qkv_sparsity_threshold")
    sp = summary.get("sparsity_by_stack_role") or {}
    scopes = {k.rsplit("/", 1)[0] for k in sp if k.rsplit("/", 1)[-1] in SPARSITY_ROLES} | set(_qk_scopes(summary))
    rows = {}
    for scope in sorted(scopes, key=_scope_order):
        q = get(summary, "qk", scope) or {}
        pos = q.get("seed_pos_frac") or []
        row = {f"{r.upper()} {thr}": get(sp, f"{scope}/{r}", thr) for r in SPARSITY_ROLES}
        row |= {"QK layers": len(q.get("layers") or []), "seed: n_pos/inner (mean)": q.get("seed_pos_frac_mean"),
                "seed: min": min(pos) if pos else None, "seed: max": max(pos) if pos else None,
                "seed: n_neg/inner (mean)": _mean(q.get("seed_neg_frac") or []),
                "project: balance (mean)": q.get("balance_mean")}
        if null is not None:
            row |= {f"Q {thr} ({RANDOM})": get(null, "sparsity_by_stack_role", f"{scope}/q", thr),
                    f"seed: n_pos/inner ({RANDOM})": get(null, "qk", scope, "seed_pos_frac_mean")}
        rows[scope] = row
    tab = pd.DataFrame(rows).T
    if not tab.empty:
        tab.index.name = "stack/attn"
        tab = tab.astype(float)
    return tab
