"""The battery's JSON-ready aggregates (what ``metrics.json`` records): :func:`battery_summary`."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ...checkpoints import ATTN_ROLES


def _mean(x) -> Optional[float]:
    x = [v for v in x if v is not None and np.isfinite(v)]
    return float(np.mean(x)) if x else None


def battery_summary(res: Any) -> dict:
    """Aggregate a :class:`~geolip_lib.weights.battery.BatteryResult` into plain dicts (JSON-ready)."""
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
                "seed_dim": int(g["seed_dim"].iloc[0]), "seed_pos_frac_mean": float(g["seed_pos_frac"].mean()),
                # shapes that force a balance of 0.5 (GQA; metrics.factored_qk.qk_balance_forced): reason or None
                "forced_by_shape": g["forced_by_shape"].iloc[0] if "forced_by_shape" in g else None,
                "seed_forced_by_shape": g["seed_forced_by_shape"].iloc[0] if "seed_forced_by_shape" in g else None,
                "head_forced_by_shape": g["head_forced_by_shape"].iloc[0] if "head_forced_by_shape" in g else None}
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
