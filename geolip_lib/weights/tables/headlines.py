"""95 % intervals of the battery's headline numbers (bootstrap over the pooled matrices / layers / pairs)."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from ... import results
from ...metrics import intervals as iv
from ...metrics.sampled_null import SampledNull
from ...checkpoints import ATTN_ROLES
from ._common import _ratio, first_qk_group, get


#: pooled headlines of notebook 02 -> (what the pooled items are, display name of one item)
POOLED = {"q_sparsity": "Q matrices", "k_sparsity": "K matrices", "q_stable_rank": "Q matrices",
          "mlp_dead_frac": "MLP layers", "cross_layer_adj": "adjacent layer pairs"}


def adjacent_pairs(res) -> tuple[np.ndarray, np.ndarray]:
    """Adjacent-layer cosines of every attention-role group and each pair's weight, so that
    the weighted mean is the mean over groups of each group's mean (the headline)."""
    groups = [d["cos"] for (_s, _a, r), d in res.cross.items() if r in ATTN_ROLES]
    if not groups:
        return np.zeros(0), np.zeros(0)
    c = np.concatenate([np.diagonal(C, 1) for C in groups])
    w = np.concatenate([np.full(C.shape[0] - 1, 1.0 / ((C.shape[0] - 1) * len(groups))) for C in groups])
    return c, w


def headline_items(res) -> dict:
    """The items each pooled headline of notebook 02 averages, as a ratio of sums.

    Every pooled headline is ``Σ num / Σ den`` over its items: Q (K) sparsity over the Q (K)
    matrices (``num`` = weights below the largest threshold, ``den`` = weights), Q stable
    rank over Q matrices (``den`` = 1), dead fraction over MLP layers (dead neurons /
    neurons), adjacent-layer cosine over layer pairs (each group's pairs weighted so the
    value is the mean of group means). Resampling items is the bootstrap of the headline.
    Returns ``{key: {"num": [...], "den": [...], "items": name}}`` (JSON-ready).
    """
    out = {}
    sp = res.sparsity
    per, col = sp["per_tensor"], sp["columns"][-1]
    for r in ("q", "k"):
        g = per[per["role"] == r] if not per.empty and "role" in per else per
        n = g["n"].to_numpy(dtype=np.float64) if not g.empty else np.zeros(0)
        num = n * g[col].to_numpy(dtype=np.float64) if not g.empty else n
        out[f"{r}_sparsity"] = {"num": num.tolist(), "den": n.tolist()}
    sr = res.svd.loc[res.svd["role"] == "q", "stable_rank"].to_numpy(dtype=np.float64) if not res.svd.empty \
        else np.zeros(0)
    out["q_stable_rank"] = {"num": sr.tolist(), "den": np.ones_like(sr).tolist()}
    ml = res.mlp["layers"]
    out["mlp_dead_frac"] = {"num": [] if ml.empty else ml["dead"].astype(float).tolist(),
                            "den": [] if ml.empty else ml["d_ff"].astype(float).tolist()}
    c, w = adjacent_pairs(res)
    out["cross_layer_adj"] = {"num": (w * c).tolist(), "den": w.tolist()}
    for k, v in out.items():
        v["items"] = POOLED[k]
    return out


def items_interval(items: Optional[Mapping], *, seed: int = 0, n_boot: int = iv.N_BOOT) -> Optional[iv.Interval]:
    """Percentile bootstrap over the items of :func:`headline_items` (``None`` when there are none)."""
    if not items or not len(items["num"]):
        return None
    return iv.bootstrap_weighted(len(items["num"]), _ratio(items["num"], items["den"]), n_boot=n_boot, seed=seed,
                                 what=items["items"])


def _qk_first(summary: Optional[Mapping]) -> Optional[float]:
    k = first_qk_group(summary, self_only=False)
    return None if k is None else summary["qk"][k]["pos_frac_first"]


def _n_items(items: Optional[Mapping], key: str) -> int:
    return len(((items or {}).get(key) or {}).get("num") or [])


#: what each headline of notebook 02 averages, for a null drawn from sampled layers
#: (:class:`~geolip_lib.metrics.sampled_null.SampledNull`): every layer, adjacent pairs, or layer 0
NULL_KIND = {"q_sparsity": "layers", "k_sparsity": "layers", "q_stable_rank": "layers", "mlp_dead_frac": "layers",
             "cross_layer_adj": "pairs", "qk_pos_frac_first": "first"}
#: headlines that are fractions in [0, 1]: their null's interval is taken on the logit scale (stays in [0, 1])
PROPORTIONS = {"q_sparsity", "k_sparsity", "mlp_dead_frac", "qk_pos_frac_first"}


def null_entry(null, value_of, *, items: Optional[Mapping] = None, seed: int = 0, n_boot: int = iv.N_BOOT,
               key: Optional[str] = None, kind: Optional[str] = None,
               proportion: Optional[bool] = None, lower: Optional[float] = None) -> Optional[dict]:
    """The random-init null of one number: ``null`` a list of summaries (one per init seed) gives
    the distribution over those seeds (:func:`~geolip_lib.metrics.intervals.null_over_seeds`);
    a :class:`~geolip_lib.metrics.sampled_null.SampledNull` (each seed a sample of the layers)
    the prediction interval of one whole model, for a quantity that averages ``kind``
    (``"layers"``, ``"pairs"``, ``"first"``; default from :data:`NULL_KIND` of ``key``, else
    ``"layers"``); a single summary (older callers) its value with the bootstrap over its
    ``items[key]``. ``proportion``: whether the number is a fraction in [0, 1] (its interval on the
    logit scale); default: ``key`` in :data:`PROPORTIONS`. ``lower``: the least the number can be (0 for a
    magnitude): its prediction interval is cut there."""
    if null is None:
        return None
    proportion = key in PROPORTIONS if proportion is None else bool(proportion)
    if isinstance(null, SampledNull):
        vals = [value_of(n) for n in null]
        return null.distribution([np.nan if v is None else v for v in vals], kind or NULL_KIND.get(key, "layers"),
                                 proportion=proportion, lower=lower)
    if isinstance(null, (list, tuple)):
        vals = [value_of(n) for n in null]
        return iv.null_over_seeds([np.nan if v is None else v for v in vals], what=f"{len(null)} random-init seeds",
                                  proportion=proportion, lower=lower)
    return {"value": value_of(null), "interval": items_interval((items or {}).get(key), seed=seed, n_boot=n_boot)
            if key in POOLED else None}


NOTES = {
    "q_sparsity": "Pooled over every Q matrix; a fixed absolute threshold mostly measures weight scale, which the "
                  "random-init null shows.",
    "k_sparsity": "Pooled over every K matrix; a fixed absolute threshold mostly measures weight scale, which the "
                  "random-init null shows.",
    "q_stable_rank": "Mean over Q matrices of ‖W‖²_F/‖W‖²₂; a Gaussian init already has a high stable "
                     "rank.",
    "qk_pos_frac_first": "Exact: one eigen-decomposition of the full layer-0 sym(W_Qᵀ W_K), no sampling; 0.5 is "
                         "sign balance (weights.spectral.QK_BALANCE_STATEMENT).",
    "mlp_dead_frac": "Importance < 1 % of the layer mean; pooled over MLP layers.",
    "cross_layer_adj": "Independent random layers have cosine ≈ 0 (the random-init null); trained layers depart "
                       "from it only if they share weight directions.",
}


def battery_headline(summary: Mapping, items: Mapping, null=None, null_items: Optional[Mapping] = None, *,
                     seed: int = 0, n_boot: int = iv.N_BOOT) -> dict:
    """The headline numbers of notebook 02, each exact, beside the random-init null.

    Every number is computed on all of the model's weights — every Q (K) matrix, every MLP
    layer, every adjacent layer pair, the whole layer-0 form — so it is exact (
    ``interval="exact"``, "exact (all N Q matrices)"); ``items`` (:func:`headline_items`)
    says how many. ``null``: the random-init copies, a list of summaries (one per init
    seed: the null is a distribution, its interval over those seeds); a single summary is
    accepted (its interval then a bootstrap over its ``null_items``). The layer-0 QK
    fraction is marked ``forced_by_shape`` where the shapes force it (grouped-query attention).
    """
    thr = summary.get("qkv_sparsity_threshold")
    values = {"q_sparsity": lambda s: get(s, "qkv_sparsity", "q"), "k_sparsity": lambda s: get(s, "qkv_sparsity", "k"),
              "q_stable_rank": lambda s: get(s, "svd_by_role", "q", "stable_rank"),
              "qk_pos_frac_first": _qk_first, "mlp_dead_frac": lambda s: get(s, "mlp", "dead_frac"),
              "cross_layer_adj": lambda s: (s or {}).get("cross_layer_attn_adj_mean")}
    first = first_qk_group(summary, self_only=False)
    labels = {"q_sparsity": f"Q |w|{thr}", "k_sparsity": f"K |w|{thr}", "q_stable_rank": "Q stable rank",
              "qk_pos_frac_first": f"QK pos. eig. frac (L0{'' if first is None else ', ' + first})",
              "mlp_dead_frac": "dead MLP neurons", "cross_layer_adj": "adjacent-layer cos (attn)"}
    fmts = {"q_stable_rank": ".2f", "mlp_dead_frac": ".4f", "cross_layer_adj": ".4f"}
    d = get(summary, "qk", first, "d_model") if first else None
    over = {k: f"{_n_items(items, k)} {POOLED[k]}" for k in POOLED}
    over["qk_pos_frac_first"] = f"{d} eigenvalues of the layer-0 form" if d else None
    out = {}
    for key, val in values.items():
        n = null_entry(null, val, items=null_items, seed=seed, n_boot=n_boot, key=key, kind=NULL_KIND[key])
        forced = get(summary, "qk", first, "forced_by_shape") if key == "qk_pos_frac_first" and first else None
        out[key] = results.headline(val(summary), interval="exact", over=over[key],
                                    nulls={} if n is None else {"random_init": n}, label=labels[key],
                                    fmt=fmts.get(key, ".3f"), note=NOTES[key], forced_by_shape=forced)
    return out
