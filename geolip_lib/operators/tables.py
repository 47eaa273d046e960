"""Tables of notebook 06 (per-head QK operators): one row per group or per (group, layer).

Each function takes the measured operators or the :func:`~geolip_lib.operators.analyse`
dicts of the trained model and, where there is one, of the same architecture at random
initialisation (``null``: ``{group: analysis}``, possibly empty), and returns plain rows
(a list of dicts, for ``metrics.json``) or a :class:`pandas.DataFrame` (for display).
Random-init columns are NaN where a group has no null.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from .measure import QKOperators

__all__ = ["group_rows", "cosine_table", "rescale_table", "sign_table", "principal_angle_table", "verdict_rows"]

NAN = float("nan")


def _arr(x) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)


def group_rows(ops: Mapping[str, QKOperators]) -> list[dict]:
    """One row per measured attention group: shape of the stack and whether q/k are normed."""
    return [{"group": g, "layers": len(o.layers), "heads": o.n_heads, "kv_heads": o.n_kv_heads,
             "head_dim": o.head_dim, "hidden": o.hidden, "top_k": o.top_k,
             "qk_norm": bool(o.meta.get("qk_norm")), "layer_ids": str(o.layers)} for g, o in ops.items()]


def cosine_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Operator cosine per group: diagonal (≡ 1), adjacent mean / min / max, first and middle
    layer to the anchor, and the adjacent mean at random init."""
    rows = []
    for g, a in analyses.items():
        adj = _arr(a["adjacent_cos"])
        cta = _arr(a["cos_to_anchor"])
        rows.append({"group": g, "diag (should be 1)": a["diag_cos_mean"], "adjacent mean": a["adjacent_mean"],
                     "adjacent min": adj.min() if adj.size else NAN, "adjacent max": adj.max() if adj.size else NAN,
                     "first→anchor": float(cta[0]), "mid→anchor": float(cta[len(a["layers"]) // 2]),
                     "adjacent mean (random init)": null[g]["adjacent_mean"] if g in null else NAN})
    return pd.DataFrame(rows)


def rescale_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, layer): cosine to the anchor, best scalar ``T`` and the residual fraction
    ``√(1 − cos²)`` (means over heads), and the residual fraction at random init."""
    rows = []
    for g, a in analyses.items():
        r = {k: _arr(v) for k, v in a["rescale"].items()}
        rn = _arr(null[g]["rescale"]["mean_resid_frac"]) if g in null else None
        for i, L in enumerate(a["layers"]):
            rows.append({"group": g, "layer": L, "cos": float(r["mean_cos"][i]), "T_opt": float(r["mean_T"][i]),
                         "resid_frac": float(r["mean_resid_frac"][i]),
                         "resid_frac (random init)": float(rn[i]) if rn is not None else NAN})
    return pd.DataFrame(rows)


def sign_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, k): mean top-k sign agreement with the anchor, by depth band, and at random init."""
    rows = []
    for g, a in analyses.items():
        for k, s in a["sign_agreement"].items():
            ns = null.get(g, {}).get("sign_agreement", {}).get(k)
            rows.append({"group": g, "k": k, "mean": s["mean"], **s["bands"],
                         "mean (random init)": ns["mean"] if ns else NAN})
    return pd.DataFrame(rows)


def principal_angle_table(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> pd.DataFrame:
    """Per (group, layer): principal angles of the top-k eigen-subspace to the anchor's
    (mean and min cosine, mean angle, top-1 overlap) and the mean angle at random init."""
    rows = []
    for g, a in analyses.items():
        pa = {k: _arr(v) for k, v in a["principal_angles"].items()}
        pn = _arr(null[g]["principal_angles"]["mean_deg"]) if g in null else None
        for i, L in enumerate(a["layers"]):
            rows.append({"group": g, "layer": L, "meanCosPA": float(pa["mean_cos"][i]),
                         "minCosPA": float(pa["min_cos"][i]), "mean angle (deg)": float(pa["mean_deg"][i]),
                         "top1 overlap": float(pa["top1_overlap"][i]),
                         "mean angle (deg, random init)": float(pn[i]) if pn is not None else NAN})
    return pd.DataFrame(rows)


def verdict_rows(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> list[dict]:
    """Per group: mean operator cosine to the anchor (anchor excluded), adjacent mean and the
    seed's verdict, beside the same at random init."""
    rows = []
    for g, a in analyses.items():
        b = null.get(g)
        rows.append({"group": g, "mean cos to anchor": a["mean_cos_to_anchor"], "adjacent": a["adjacent_mean"],
                     "verdict": a["verdict"],
                     "mean cos to anchor (random init)": b["mean_cos_to_anchor"] if b else NAN,
                     "verdict (random init)": b["verdict"] if b else ""})
    return rows
