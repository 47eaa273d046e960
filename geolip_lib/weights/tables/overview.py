"""Notebook 02's display tables of a battery summary beside its random-init null."""
from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd

from ._common import RANDOM, _scope_order, get


def catalog_overview(cat) -> pd.DataFrame:
    """One row: family, width, stored tensors and parameters of a catalog."""
    st = cat.stored()
    return pd.DataFrame([{"family": cat.family, "d_model": cat.d_model, "tensors": len(st),
                          "parameters": int(sum(e.numel for e in st)),
                          "unclassified 2-D": len(cat.unclassified())}])


def catalog_summary(cat) -> pd.DataFrame:
    """Tensors and parameters per (stack, attn, role), shapes written ``rows×cols``."""
    df = cat.summary()
    if not df.empty:
        df = df.assign(shapes=[", ".join(x.strip("()").replace(", ", "×").rstrip(",") for x in v)
                               for v in df["shapes"]])
    return df


def svd_by_stack_role(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Mean SVD statistics per (stack, attn, role), with stable rank and PR at random init."""
    tab = pd.DataFrame(summary.get("svd_by_stack_role", {})).T
    if null is not None and null.get("svd_by_stack_role") and not tab.empty:
        nt = pd.DataFrame(null["svd_by_stack_role"]).T
        tab = tab.join(nt[["stable_rank", "pr"]].add_suffix(f" ({RANDOM})"))
    return tab


def sparsity_by_role(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Fraction of |w| below each threshold per role, and at the largest threshold at random init."""
    sp = pd.DataFrame(summary.get("sparsity_by_role", {})).T
    thr = summary.get("qkv_sparsity_threshold")
    if null is not None and null.get("sparsity_by_role") and not sp.empty and thr is not None:
        sp = sp.join(pd.DataFrame(null["sparsity_by_role"]).T[[thr]].add_suffix(f" ({RANDOM})"))
    return sp


def sparsity_model(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Whole-model fraction of |w| below each threshold, trained and at random init."""
    rows = {"trained": summary.get("sparsity_model", {})}
    if null is not None:
        rows[RANDOM] = null.get("sparsity_model", {})
    return pd.DataFrame(rows).T


def qkv_sparsity(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """The seed's Q vs K vs V contrast at the largest threshold, trained and at random init."""
    rows = []
    for r in ("q", "k", "v"):
        rows.append({"role": r.upper(), "trained": get(summary, "qkv_sparsity", r),
                     RANDOM: get(null, "qkv_sparsity", r) if null is not None else None})
    return pd.DataFrame(rows).set_index("role").astype(float)


#: per-layer QK columns shown: the seed's form sym(W_q W_kᵀ) (inner × inner, signs counted
#: with no tolerance) beside the project's W_Qᵀ W_K (d × d, round-off zeros not counted)
QK_COLUMNS = {"stack": "stack", "attn": "attn", "layer": "layer", "d_model": "d_model", "inner": "inner",
              "seed_n_pos": "seed: n_pos", "seed_n_neg": "seed: n_neg", "seed_pos_frac": "seed: n_pos/inner",
              "n_pos": "project: n_pos", "n_neg": "project: n_neg", "n_zero": "project: n_zero",
              "balance": "project: balance", "pos_frac": "project: n_pos/d", "head_balance_mean":
              "project: per-head balance", "stable_rank": "stable_rank", "pr": "pr", "sym_dev": "sym_dev",
              "seed_forced_by_shape": "seed: forced by shape", "forced_by_shape": "project: forced by shape",
              "head_forced_by_shape": "per head: forced by shape"}


def qk_layers(res, show_layers: int) -> pd.DataFrame:
    """Per-layer QK sign counts, the seed's form beside the project's: the first ``show_layers``
    layers of each group, columns labelled ``seed: ...`` (sym(W_q W_kᵀ), n_pos / inner) and
    ``project: ...`` (sym(W_Qᵀ W_K), balance n_pos / (n_pos + n_neg))."""
    ql = res.qk["layers"]
    if ql.empty:
        return pd.DataFrame(columns=list(QK_COLUMNS.values()))
    order = ql["stack"].astype(str) + "/" + ql["attn"].astype(str)
    ql = ql.assign(_o=order.map(_scope_order)).sort_values(["_o", "layer"], kind="stable")
    ql = ql.groupby(["stack", "attn"], sort=False).head(show_layers)[[c for c in QK_COLUMNS if c in ql]]
    ql = ql.reset_index(drop=True)
    for c in ("seed_forced_by_shape", "forced_by_shape", "head_forced_by_shape"):  # the reason is long: yes / no
        if c in ql:
            ql[c] = ql[c].map(lambda r: "yes" if r else "no")
    return ql.rename(columns=QK_COLUMNS)


def qk_random_init(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Positive-eigenvalue fraction of the first and last layer per QK group, trained and random init."""
    rows = []
    for key, q in (summary.get("qk") or {}).items():
        n = get(null, "qk", key)
        rows.append({"group": key, "pos_frac first": q["pos_frac_first"], "pos_frac last": q["pos_frac_last"],
                     f"first ({RANDOM})": get(n, "pos_frac_first"), f"last ({RANDOM})": get(n, "pos_frac_last")})
    return pd.DataFrame(rows).set_index("group").astype(float) if rows else pd.DataFrame()


def mlp_overview(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Dead / weak MLP neurons of the whole model, trained and at random init."""
    rows = {}
    for kind, s in (("trained", summary), (RANDOM, null)):
        m = get(s, "mlp")
        if m:
            rows[kind] = {"neurons": m["neurons"], "dead": m["dead"], "weak": m["weak"],
                          "dead_frac": m["dead_frac"], "weak_frac": m["weak_frac"]}
    return pd.DataFrame(rows).T


def cross_layer_overview(summary: Mapping, null: Optional[Mapping]) -> pd.DataFrame:
    """Adjacent-layer cosine (mean, min, max) and mean |off-diagonal| per (stack, attn, role)."""
    cols = ("adj_mean", "adj_min", "adj_max", "offdiag_abs_mean")
    cl = pd.DataFrame({k: {c: v[c] for c in cols} for k, v in (summary.get("cross_layer") or {}).items()}).T
    if null is not None and null.get("cross_layer") and not cl.empty:
        nl = pd.Series({k: v["adj_mean"] for k, v in null["cross_layer"].items()}, name=f"adj_mean ({RANDOM})")
        cl = cl.join(nl)
    return cl


def position_bias_overview(summary: Mapping) -> pd.DataFrame:
    """Head types and shape of the relative position bias per stack (T5)."""
    return pd.DataFrame(summary.get("position_bias") or {}).T
