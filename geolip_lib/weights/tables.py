"""Display tables and headline intervals of the weight battery (notebooks 02 and 03).

The battery itself (:mod:`geolip_lib.weights.battery`) measures; this module only
arranges its results for a reader:

- tables (pandas DataFrames) of a :class:`~geolip_lib.weights.BatteryResult` summary
  beside the same architecture at random initialisation (``null``: the random-init
  summary, or ``None`` when no null was run);
- 95 % intervals of the headline numbers. A statistic of the *full* weights involves no
  sampling, but the headlines pool many matrices (Q sparsity over every Q matrix, mean
  stable rank over Q matrices, dead fraction over MLP layers, adjacent-layer cosine over
  layer pairs): their interval is a bootstrap over the matrices / layers / pairs they
  pool, i.e. how much the number depends on which layers this model happens to have
  (:func:`headline_items` writes each pooled headline as a ratio of sums over its items);
- like with like, as the seed measured: Q/K/V sparsity per (stack, attention kind) with
  a bootstrap over that scope's matrices (:func:`stack_items`, :func:`sparsity_by_stack`),
  the encoder/decoder × self/cross table of seed §6 (:func:`stack_attn_table`), the QK
  sign counts of the seed's form sym(W_q W_kᵀ) beside the corrected W_Qᵀ W_K
  (:func:`qk_layers`), and the seed claims as ``metrics["claims"]`` (:func:`battery_claims`);
- the cross-model rows and headlines of notebook 03: a two-stage bootstrap over the models
  and, within each, over the items its value pools (:func:`two_stage_interval`); per
  (model, stack, attention kind) rows (:func:`cross_model_stack_frame`).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .. import results
from ..metrics import intervals as iv
from ..models.adapters import ATTN_ROLES, STACKS

__all__ = [
    "get", "first_qk_group", "catalog_overview", "catalog_summary", "svd_by_stack_role", "sparsity_by_role",
    "sparsity_model", "qkv_sparsity", "qk_layers", "qk_random_init", "mlp_overview", "cross_layer_overview",
    "position_bias_overview", "adjacent_pairs", "headline_items", "items_interval", "battery_headline",
    "two_stage_interval", "cross_model_row", "cross_model_frame", "cross_model_headline", "CROSS_MODEL_COLUMNS",
    "stack_items", "sparsity_by_stack", "stack_attn_table", "battery_claims", "claims_table",
    "cross_model_stack_frame", "cross_stack_headline", "STACK_COLUMNS", "SEED_REPORTED", "seed_reported_stacks",
    "seed_vs_measured",
]

NAN = float("nan")
RANDOM = "random init"


def get(d: Any, *path: str) -> Any:
    """``d[p0][p1]...`` or ``None`` where a key is missing (summaries differ by model)."""
    for p in path:
        if not isinstance(d, Mapping) or p not in d:
            return None
        d = d[p]
    return d


def first_qk_group(summary: Optional[Mapping], self_only: bool = True) -> Optional[str]:
    """The first ``"stack/attn"`` QK group of a summary: self-attention first (sorted);
    with ``self_only=False`` any group when the model has no self-attention."""
    qk = (summary or {}).get("qk") or {}
    keys = sorted(k for k in qk if k.endswith("/self"))
    if not keys and not self_only:
        keys = sorted(qk)
    return keys[0] if keys else None


# ============================================================================ notebook 02 tables
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
              "project: per-head balance", "stable_rank": "stable_rank", "pr": "pr", "sym_dev": "sym_dev"}


def qk_layers(res, show_layers: int) -> pd.DataFrame:
    """Per-layer QK sign counts, the seed's form beside the project's: the first ``show_layers``
    layers of each group, columns labelled ``seed: ...`` (sym(W_q W_kᵀ), n_pos / inner) and
    ``project: ...`` (sym(W_Qᵀ W_K), balance n_pos / (n_pos + n_neg))."""
    ql = res.qk["layers"]
    if ql.empty:
        return pd.DataFrame(columns=list(QK_COLUMNS.values()))
    order = ql["stack"].astype(str) + "/" + ql["attn"].astype(str)
    ql = ql.assign(_o=order.map(_scope_order)).sort_values(["_o", "layer"], kind="stable")
    ql = ql.groupby(["stack", "attn"], sort=False).head(show_layers)[list(QK_COLUMNS)].reset_index(drop=True)
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


# ============================================================================ intervals (02)
#: pooled headlines of notebook 02 -> (what the pooled items are, display name of one item)
POOLED = {"q_sparsity": "Q matrices", "k_sparsity": "K matrices", "q_stable_rank": "Q matrices",
          "mlp_dead_frac": "MLP layers", "cross_layer_adj": "adjacent layer pairs"}


def _ratio(num: np.ndarray, den: np.ndarray):
    """``Σ w·num / Σ w·den`` for each row of resampling counts ``W`` (a ratio of sums)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)

    def stat(W: np.ndarray) -> np.ndarray:
        return (W @ num) / (W @ den)

    return stat


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


def _note(note: Optional[str], interval: Any) -> Optional[str]:
    """``note``, plus a sentence when the bootstrap had too few items to form an interval."""
    if isinstance(interval, iv.Interval) and not interval.finite:
        extra = f"No interval: too few items for a bootstrap ({interval.method.rsplit(' of ', 1)[-1]})."
        return f"{note} {extra}" if note else extra
    return note


def _qk_first(summary: Optional[Mapping]) -> Optional[float]:
    k = first_qk_group(summary, self_only=False)
    return None if k is None else summary["qk"][k]["pos_frac_first"]


NOTES = {
    "q_sparsity": "Pooled over every Q matrix; a fixed absolute threshold mostly measures weight scale, which the "
                  "random-init null shows.",
    "k_sparsity": "Pooled over every K matrix; a fixed absolute threshold mostly measures weight scale, which the "
                  "random-init null shows.",
    "q_stable_rank": "Mean over Q matrices of ‖W‖²_F/‖W‖²₂; a Gaussian init already has a high stable "
                     "rank.",
    "qk_pos_frac_first": "Exact: one eigen-decomposition of the full layer-0 sym(W_Qᵀ W_K), no sampling; 0.5 is "
                         "sign balance.",
    "mlp_dead_frac": "Importance < 1 % of the layer mean; pooled over MLP layers.",
    "cross_layer_adj": "Independent random layers have cosine ≈ 0 (the random-init null); trained layers depart "
                       "from it only if they share weight directions.",
}


def battery_headline(summary: Mapping, items: Mapping, null: Optional[Mapping] = None,
                     null_items: Optional[Mapping] = None, *, seed: int = 0, n_boot: int = iv.N_BOOT) -> dict:
    """The headline numbers of notebook 02, each with its 95 % interval and the random-init null.

    Values are those the summary records; intervals are bootstraps over the matrices /
    layers / pairs each number pools (``items``: :func:`headline_items`); the layer-0 QK
    sign fraction is one eigen-decomposition of the full weights, hence exact. ``null`` /
    ``null_items``: the same for the random-init copy (omitted: no null).
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
    out = {}
    for key, val in values.items():
        if key in POOLED:
            t = items_interval(items.get(key), seed=seed, n_boot=n_boot)
            n = items_interval((null_items or {}).get(key), seed=seed, n_boot=n_boot)
        else:
            t, n = "exact", None
        nulls = {} if null is None else {"random_init": {"value": val(null), "interval": n}}
        out[key] = results.headline(val(summary), interval=t, nulls=nulls, label=labels[key],
                                    fmt=fmts.get(key, ".3f"), note=_note(NOTES[key], t))
    return out


# ============================================================================ like with like (02)
#: roles whose sparsity is reported per (stack, attention kind), as seed §4–6 did
SPARSITY_ROLES = ("q", "k", "v")
#: the threshold of the seed's Q-sparsity claim
CLAIM_THRESHOLD = "<0.1"


def _scope_order(scope: str) -> tuple:
    """Sort key of ``"<stack>/<attn>"``: the catalog's stack order, self before cross."""
    stack, _, attn = scope.partition("/")
    return (STACKS.index(stack) if stack in STACKS else len(STACKS), {"self": 0, "cross": 1}.get(attn, 2), scope)


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


def _lohi(interval: Optional[iv.Interval]) -> tuple:
    if interval is None or not interval.finite:
        return NAN, NAN
    return interval.lo, interval.hi


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


def _qk_scopes(summary: Optional[Mapping]) -> list:
    return sorted((summary or {}).get("qk") or {}, key=_scope_order)


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


def _mean(x: Sequence) -> Optional[float]:
    x = [float(v) for v in x if v is not None and np.isfinite(v)]
    return float(np.mean(x)) if x else None


def _layer_items(values: Optional[Sequence]) -> Optional[dict]:
    """Per-layer values as bootstrap items of their mean (``den`` = 1)."""
    if not values:
        return None
    return {"num": [float(v) for v in values], "den": [1.0] * len(values), "items": "layers"}


def _qk_claim(summary: Mapping, null: Optional[Mapping], scope: str, *, seed: int, n_boot: int) -> dict:
    """The QK balance of one ``stack/attn`` group: the seed's form (value) and the project's ("project")."""
    out = {}
    for key, per_key, label, note in (
            ("seed", "seed_pos_frac", f"QK n_pos/inner of sym(W_q W_kᵀ) ({scope})",
             "The seed's form: n_pos / inner of the (inner × inner) sym(W_q W_kᵀ), signs with no tolerance; mean "
             "over layers, interval a bootstrap over layers. What a 0.5 means: weights.spectral.QK_BALANCE_STATEMENT."),
            ("project", "balance", f"QK balance of sym(W_Qᵀ W_K) ({scope})",
             "The project's form: n_pos / (n_pos + n_neg) of the scoring form sym(W_Qᵀ W_K) (d × d, round-off "
             "zeros not counted); mean over layers, interval a bootstrap over layers.")):
        per = get(summary, "qk", scope, per_key) or []
        nper = get(null, "qk", scope, per_key) if null is not None else None
        t = items_interval(_layer_items(per), seed=seed, n_boot=n_boot)
        nulls = {} if not nper else {"random init": {"value": _mean(nper), "interval":
                                                     items_interval(_layer_items(nper), seed=seed, n_boot=n_boot)}}
        h = results.headline(_mean(per), interval=t, nulls=nulls, label=label, fmt=".4f", note=_note(note, t))
        h["per_layer"] = [float(v) for v in per]
        out[key] = h
    seed_h = out["seed"]
    seed_h["project"] = out["project"]
    return seed_h


def battery_claims(summary: Mapping, items: Mapping, stack: Mapping, null: Optional[Mapping] = None,
                   null_items: Optional[Mapping] = None, null_stack: Optional[Mapping] = None, *, seed: int = 0,
                   n_boot: int = iv.N_BOOT) -> dict:
    """The seed claims notebook 02 measures, as ``metrics["claims"]`` (read by ``geolip_lib.claims``).

    Parameters
    ----------
    summary, null : battery summaries, trained and at random init (``null`` None: no nulls)
    items, null_items : :func:`headline_items` (the adjacent-layer pairs of ``cross_layer_corr``)
    stack, null_stack : :func:`stack_items` (the Q matrices of each scope), taken at the largest
        threshold, which must be 0.1 for ``q_sparsity`` to be recorded

    Returns
    -------
    dict
        ``{claim id: {scope: results.headline(...)}}``, each value in the seed's definition:

        - ``q_sparsity`` per ``<stack>/<attn>`` with Q matrices: fraction of Q weights with
          |w| < 0.1 pooled over the scope's Q matrices; interval a bootstrap over them;
        - ``qk_cross_balance`` (cross-attention groups) and ``qk_self_balance`` (self-attention
          groups): mean over layers of n_pos / inner of sym(W_q W_kᵀ), interval a bootstrap over
          layers, ``per_layer``; ``project``: the same for the balance of sym(W_Qᵀ W_K);
        - ``cross_layer_corr`` scope ``attention``: mean adjacent-layer cosine of the attention
          weights (the headline ``cross_layer_adj``);
        - ``position_crystallization`` per stack with a relative position bias: the number of
          mixed heads by the seed's raw-bucket rule (exact), ``n_heads``; ``project``: by the
          distance-class rule.

        Nulls: ``{"random init": ...}`` where ``null`` was given.
    """
    claims: dict = {"q_sparsity": {}, "qk_cross_balance": {}, "qk_self_balance": {}}
    thr = CLAIM_THRESHOLD  # the items are taken at the largest threshold: the claim needs it to be 0.1
    for scope, roles in (stack.items() if summary.get("qkv_sparsity_threshold") == thr else ()):
        it = roles.get("q")
        v = get(summary, "sparsity_by_stack_role", f"{scope}/q", thr)
        if it is None or v is None:
            continue
        t = items_interval(it, seed=seed, n_boot=n_boot)
        nulls = {}
        if null is not None:
            nulls["random init"] = {"value": get(null, "sparsity_by_stack_role", f"{scope}/q", thr),
                                    "interval": items_interval(get(null_stack, scope, "q"), seed=seed, n_boot=n_boot)}
        claims["q_sparsity"][scope] = results.headline(
            v, interval=t, nulls=nulls, label=f"Q |w| < 0.1 ({scope})", fmt=".4f",
            note=_note(f"Pooled over the {len(it['num'])} Q matrices of {scope}; interval a bootstrap over them.", t))
    pooled = _pooled_self_q(stack) if "encoder/self" in claims["q_sparsity"] and "decoder/self" in claims["q_sparsity"] \
        else None
    if pooled is not None:  # seed §4's "self_attn_q" pooled the encoder's and the decoder's self-attention Q
        t = items_interval(pooled, seed=seed, n_boot=n_boot)
        nulls = {}
        if null is not None and _pooled_self_q(null_stack) is not None:
            npool = _pooled_self_q(null_stack)
            nulls["random init"] = {"value": float(np.sum(npool["num"]) / np.sum(npool["den"])),
                                    "interval": items_interval(npool, seed=seed, n_boot=n_boot)}
        claims["q_sparsity"]["encoder+decoder/self"] = results.headline(
            float(np.sum(pooled["num"]) / np.sum(pooled["den"])), interval=t, nulls=nulls,
            label="Q |w| < 0.1 (encoder+decoder self, the seed's §4 pooling)", fmt=".4f",
            note=_note(f"Pooled over the {len(pooled['num'])} self-attention Q matrices of encoder and decoder, as "
                       "seed §4's self_attn_q did; interval a bootstrap over them.", t))
    for scope in _qk_scopes(summary):
        kind = "qk_cross_balance" if scope.endswith("/cross") else "qk_self_balance"
        claims[kind][scope] = _qk_claim(summary, null, scope, seed=seed, n_boot=n_boot)
    t = items_interval(items.get("cross_layer_adj"), seed=seed, n_boot=n_boot)
    n = items_interval((null_items or {}).get("cross_layer_adj"), seed=seed, n_boot=n_boot)
    nulls = {} if null is None else {"random init": {"value": null.get("cross_layer_attn_adj_mean"), "interval": n}}
    if summary.get("cross_layer_attn_adj_mean") is not None:
        claims["cross_layer_corr"] = {"attention": results.headline(
            summary["cross_layer_attn_adj_mean"], interval=t, nulls=nulls, label="adjacent-layer cos (attn)",
            fmt=".4f", note=_note(NOTES["cross_layer_adj"], t))}
    pb = summary.get("position_bias") or {}
    if pb:
        claims["position_crystallization"] = {}
    for stack_name, p in pb.items():
        np_ = get(null, "position_bias", stack_name) if null is not None else None
        h = results.headline(int(p["mixed_seed"]), interval="exact", fmt="d",
                             label=f"mixed position heads ({stack_name})",
                             nulls={} if np_ is None else {"random init": int(np_["mixed_seed"])},
                             note="Seed's rule: a head is local if its peak bucket is <= 2, global if >= n_buckets - 3 "
                                  "(raw bucket index), mixed otherwise. A count: exact.")
        h["n_heads"] = int(p["n_heads"])
        h["project"] = results.headline(int(p["mixed"]), interval="exact", fmt="d",
                                        nulls={} if np_ is None else {"random init": int(np_["mixed"])},
                                        label=f"mixed position heads, distance classes ({stack_name})",
                                        note="Buckets mapped to distances per direction first (bidirectional "
                                             "encoder buckets), then local / global / mixed.")
        h["project"]["n_heads"] = int(p["n_heads"])
        claims["position_crystallization"][stack_name] = h
    return {k: v for k, v in claims.items() if v}


def claims_table(claims: Mapping) -> pd.DataFrame:
    """One row per (claim, scope) of :func:`battery_claims`: the seed-definition value with its
    interval and random-init null, and the project's value where it differs."""
    rows = []
    for cid, scopes in claims.items():
        for scope, h in scopes.items():
            i = h.get("interval") or {}
            p = h.get("project") or {}
            rows.append({"claim": cid, "scope": scope, "seed definition": h.get("value"), "lo": i.get("lo"),
                         "hi": i.get("hi"), RANDOM: get(h, "nulls", RANDOM, "value"), "project": p.get("value"),
                         f"project ({RANDOM})": get(p, "nulls", RANDOM, "value")})
    return pd.DataFrame(rows, columns=["claim", "scope", "seed definition", "lo", "hi", RANDOM, "project",
                                       f"project ({RANDOM})"])


# ============================================================================ notebook 03
CROSS_MODEL_COLUMNS = {
    "sparsity": ["Q sparsity", "K sparsity", "V sparsity"],
    "stable_rank": ["SR Q", "SR K", "SR V", "SR MLP in"],
    "qk": ["QK stack", "QK pos first", "QK pos last", "QK trend"],
    "mlp_cross": ["dead MLP", "weak MLP", "adj-layer cos (attn)"],
}


def cross_model_row(model: str, kind: str, s: Mapping) -> dict:
    """One row of the cross-model table from a battery summary (``kind``: "trained" / "random init")."""
    k = first_qk_group(s)
    q = get(s, "qk", k) if k else None
    return {
        "model": model, "weights": kind, "family": s.get("family"), "d_model": s.get("d_model"),
        "Q sparsity": get(s, "qkv_sparsity", "q"), "K sparsity": get(s, "qkv_sparsity", "k"),
        "V sparsity": get(s, "qkv_sparsity", "v"),
        "SR Q": get(s, "svd_by_role", "q", "stable_rank"), "SR K": get(s, "svd_by_role", "k", "stable_rank"),
        "SR V": get(s, "svd_by_role", "v", "stable_rank"),
        "SR MLP in": get(s, "svd_by_role", "mlp_in", "stable_rank"),
        "QK stack": k, "QK pos first": get(q, "pos_frac_first"), "QK pos last": get(q, "pos_frac_last"),
        "QK trend": get(q, "pos_frac_trend"), "dead MLP": get(s, "mlp", "dead_frac"),
        "weak MLP": get(s, "mlp", "weak_frac"), "adj-layer cos (attn)": s.get("cross_layer_attn_adj_mean"),
    }


def cross_model_frame(batteries: Mapping[str, tuple]) -> pd.DataFrame:
    """Rows for every model: trained, then random init where it was measured.

    ``batteries``: ``{model: (trained summary, random-init summary or None)}``.
    """
    rows = []
    for name, (s, n) in batteries.items():
        rows.append(cross_model_row(name, "trained", s))
        if n:
            rows.append(cross_model_row(name, RANDOM, n))
    return pd.DataFrame(rows)


def _model_values(measured: pd.DataFrame, column: str, kind: str) -> pd.Series:
    g = measured[measured["weights"] == kind]
    return pd.to_numeric(g[column], errors="coerce") if column in g else pd.Series(dtype=float)


def two_stage_interval(values: Sequence[float], items: Sequence[Optional[Mapping]], *, seed: int = 0,
                       n_boot: int = iv.N_BOOT, what: str = "models") -> Optional[iv.Interval]:
    """Two-stage percentile bootstrap of a mean over models of pooled per-model values.

    Each resample draws the models with replacement and, within every drawn model, its
    items (matrices / layers / pairs; ``items[j]``: a :func:`headline_items` entry, or
    ``None`` for a value that pools nothing, which is then kept fixed). It is the interval
    of the cross-model mean over both the choice of models and the choice of layers within
    each, and it still forms with two models. ``what`` names the outer units (the models,
    or the (model, stack/attn) rows of :func:`cross_model_stack_frame`).
    """
    v = np.asarray(values, dtype=np.float64)
    M = len(v)
    if M == 0:
        return None
    rng = np.random.default_rng(seed)
    R = np.empty((M, n_boot))
    names = set()
    for j, it in enumerate(items):
        if it and len(it["num"]):
            n = len(it["num"])
            W = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)
            R[j] = _ratio(it["num"], it["den"])(W)
            names.add(it["items"])
        else:
            R[j] = v[j]
    stat = R[rng.integers(0, M, size=(n_boot, M)), rng.integers(0, n_boot, size=(n_boot, M))].mean(axis=1)
    within = f" and the {', '.join(sorted(names))} within each" if names else ""
    label = f"two-stage bootstrap percentile, {n_boot} resamples of {M} {what}{within}"
    a = (1 - iv.LEVEL) / 2
    return iv.Interval(float(np.quantile(stat, a)), float(np.quantile(stat, 1 - a)), label)


def _headline_over_rows(measured: pd.DataFrame, column: str, row_items, *, what: str, label: str, fmt: str,
                        note: Optional[str], seed: int, n_boot: int) -> dict:
    """Mean of ``column`` over the trained rows beside the random-init rows (null), each with
    :func:`two_stage_interval`; ``row_items(row, "trained" | "random_init")`` gives a row's items."""
    out = {}
    for kind, ikind in (("trained", "trained"), (RANDOM, "random_init")):
        g = measured[measured["weights"] == kind]
        vals = _model_values(measured, column, kind)
        keep = vals.notna().to_numpy()
        its = [row_items(r, ikind) for _, r in g.iterrows()]
        its = [x for x, k in zip(its, keep) if k]
        vals = vals[keep]
        out[kind] = (float(vals.mean()) if len(vals) else None,
                     two_stage_interval(vals.to_numpy(), its, seed=seed, n_boot=n_boot, what=what)
                     if len(vals) else None)
    (value, interval), (rv, riv) = out["trained"], out[RANDOM]
    nulls = {"random_init": {"value": rv, "interval": riv}} if rv is not None else {}
    return results.headline(value, interval=interval, nulls=nulls, label=label, fmt=fmt, note=_note(note, interval))


def cross_model_headline(measured: pd.DataFrame, column: str, *, label: str, items: Optional[Mapping] = None,
                         key: Optional[str] = None, fmt: str = ".3f", note: Optional[str] = None, seed: int = 0,
                         n_boot: int = iv.N_BOOT) -> dict:
    """Mean of ``column`` over the trained models, beside the same mean over the random-init
    rows as the ``random_init`` null; both with :func:`two_stage_interval`.

    ``items``: ``{model: {"trained": headline_items, "random_init": headline_items}}`` and
    ``key`` the headline key in them (omitted: the bootstrap resamples models only).
    """
    def row_items(r, ikind):
        return get(items, r["model"], ikind, key) if items and key else None

    return _headline_over_rows(measured, column, row_items, what="models", label=label, fmt=fmt, note=note,
                               seed=seed, n_boot=n_boot)


# ============================================================================ notebook 03, per stack
#: the per-(model, stack/attn) columns of notebook 03 (like with like, as the seed compared)
STACK_COLUMNS = {
    "sparsity": ["Q sparsity", "Q lo", "Q hi", "K sparsity", "V sparsity"],
    "qk": ["QK layers", "QK seed (mean)", "QK seed min", "QK seed max", "QK project (mean)"],
}


def cross_model_stack_frame(batteries: Mapping[str, tuple], stack: Optional[Mapping] = None, *, seed: int = 0,
                            n_boot: int = iv.N_BOOT) -> pd.DataFrame:
    """One row per (model, weights, ``stack/attn``): Q/K/V sparsity at the largest threshold
    (|w| < 0.1) of that scope, and its QK sign balance over layers, in the seed's form
    (n_pos / inner of sym(W_q W_kᵀ): mean, min, max) and the project's (balance of
    sym(W_Qᵀ W_K), mean).

    ``batteries``: ``{model: (trained summary, random-init summary or None)}``; ``stack``:
    ``{model: {"trained": stack_items, "random_init": stack_items}}`` (:func:`stack_items`,
    recorded by 02 as ``metrics["stack_items"]``) adds the 95 % bootstrap interval of the Q
    sparsity over the scope's Q matrices (``Q lo``, ``Q hi``; NaN with fewer than 3).
    """
    rows = []
    for name, (s, n) in batteries.items():
        for kind, ikind, summ in (("trained", "trained", s), (RANDOM, "random_init", n)):
            if not summ:
                continue
            thr = summ.get("qkv_sparsity_threshold")
            sp = summ.get("sparsity_by_stack_role") or {}
            scopes = {k.rsplit("/", 1)[0] for k in sp if k.rsplit("/", 1)[-1] in SPARSITY_ROLES} | set(_qk_scopes(summ))
            for scope in sorted(scopes, key=_scope_order):
                q = get(summ, "qk", scope) or {}
                pos = q.get("seed_pos_frac") or []
                lo, hi = _lohi(items_interval(get(stack, name, ikind, scope, "q"), seed=seed, n_boot=n_boot))
                rows.append({"model": name, "weights": kind, "stack/attn": scope,
                             "Q sparsity": get(sp, f"{scope}/q", thr), "Q lo": lo, "Q hi": hi,
                             "K sparsity": get(sp, f"{scope}/k", thr), "V sparsity": get(sp, f"{scope}/v", thr),
                             "QK layers": len(q.get("layers") or []) or None,
                             "QK seed (mean)": q.get("seed_pos_frac_mean"), "QK seed min": min(pos) if pos else None,
                             "QK seed max": max(pos) if pos else None, "QK project (mean)": q.get("balance_mean")})
    cols = ["model", "weights", "stack/attn"] + [c for cs in STACK_COLUMNS.values() for c in cs]
    return pd.DataFrame(rows, columns=cols)


def cross_stack_headline(stacks: pd.DataFrame, column: str, *, label: str, batteries: Optional[Mapping] = None,
                         stack: Optional[Mapping] = None, fmt: str = ".3f", note: Optional[str] = None,
                         seed: int = 0, n_boot: int = iv.N_BOOT) -> dict:
    """Mean of ``column`` over the trained (model, stack/attn) rows of
    :func:`cross_model_stack_frame`, beside the random-init rows (null), with a two-stage
    bootstrap: the rows, then within each the Q matrices (``column`` "Q sparsity", items from
    ``stack``) or the layers (``"QK seed (mean)"`` / ``"QK project (mean)"``, per-layer values
    from ``batteries``); other columns resample the rows only.
    """
    per_key = {"QK seed (mean)": "seed_pos_frac", "QK project (mean)": "balance"}.get(column)

    def row_items(r, ikind):
        if column == "Q sparsity":
            return get(stack, r["model"], ikind, r["stack/attn"], "q")
        if per_key and batteries and r["model"] in batteries:
            summ = batteries[r["model"]][0 if ikind == "trained" else 1]
            return _layer_items(get(summ, "qk", r["stack/attn"], per_key))
        return None

    return _headline_over_rows(stacks, column, row_items, what="model × stack/attn rows", label=label, fmt=fmt,
                               note=note, seed=seed, n_boot=n_boot)


#: what seed 001 reported, on the per-(stack, attn) keys measured here (not measured here)
SEED_REPORTED = [
    {"model": "t5-small", "stack/attn": "encoder+decoder/self", "Q sparsity": 0.937, "K sparsity": 0.192,
     "V sparsity": 0.121, "note": "§4 print, §5 reference row: 'self_attn_*' pools the encoder and decoder"},
    {"model": "t5-base", "stack/attn": "encoder+decoder/self", "Q sparsity": 0.994, "K sparsity": 0.300,
     "V sparsity": 0.162, "note": "§4 print, §5 reference row: 'self_attn_*' pools the encoder and decoder"},
    {"model": "bert-large-uncased", "stack/attn": "encoder/self", "Q sparsity": 0.991, "note": "§6 'Ref' line"},
    {"model": "dinov2-large", "stack/attn": "vision/self", "Q sparsity": 1.000, "note": "§6 'Ref' line"},
    {"model": "t5-v1_1-xxl", "stack/attn": "encoder/self", "Q sparsity": 1.000,
     "note": "§6: 100.0 % (encoder AND decoder, self AND cross-attention)"},
    {"model": "t5-v1_1-xxl", "stack/attn": "decoder/self", "Q sparsity": 1.000,
     "note": "§6: 100.0 % (encoder AND decoder, self AND cross-attention)"},
    {"model": "t5-v1_1-xxl", "stack/attn": "decoder/cross", "Q sparsity": 1.000,
     "note": "§6: 100.0 % (encoder AND decoder, self AND cross-attention)"},
    {"model": "t5-v1_1-xxl", "stack/attn": "decoder/cross", "QK seed (mean)": 0.500,
     "note": "§6: 'locked at 0.500/0.500 all 24 layers' (n_pos/inner of sym(W_q W_kᵀ))"},
    {"model": "t5-small, t5-v1_1-xxl", "stack/attn": "decoder", "mixed position heads": 0,
     "note": "summary table (seed's raw-bucket rule)"},
    {"model": "all 8 models", "stack/attn": "attention", "adj-layer cos (attn)": 0.000,
     "note": "summary table: '~0.000'"},
]


def seed_reported_stacks() -> pd.DataFrame:
    """:data:`SEED_REPORTED` as a table, marked "reported by the seed" (never mixed with measured rows)."""
    rep = pd.DataFrame(SEED_REPORTED)
    rep.insert(2, "source", "reported by the seed")
    return rep


def seed_vs_measured(batteries: Mapping[str, tuple], stack: Optional[Mapping] = None) -> pd.DataFrame:
    """The seed's reported per-stack values beside this profile's trained measurement on the
    same key, for the seed models this profile measured (empty when none).

    A seed scope ``"encoder+decoder/self"`` (the seed's T5 Q/K/V rows pooled both stacks) is
    measured pooled the same way, from the per-matrix counts ``stack`` (:func:`stack_items`).
    """
    rows = []
    for r in SEED_REPORTED:
        for col in ("Q sparsity", "K sparsity", "V sparsity", "QK seed (mean)", "mixed position heads"):
            if r.get(col) is None:
                continue
            for model in (m.strip() for m in r["model"].split(",")):
                if model not in batteries:
                    continue
                s = batteries[model][0]
                stacks, _, attn = r["stack/attn"].partition("/")
                if col == "mixed position heads":
                    v = get(s, "position_bias", r["stack/attn"], "mixed_seed")
                elif col == "QK seed (mean)":
                    v = get(s, "qk", r["stack/attn"], "seed_pos_frac_mean")
                else:
                    its = [get(stack, model, "trained", f"{st}/{attn}", col[0].lower()) for st in stacks.split("+")]
                    if len(its) == 1:
                        v = get(s, "sparsity_by_stack_role", f"{r['stack/attn']}/{col[0].lower()}", CLAIM_THRESHOLD)
                    elif all(its):
                        v = sum(sum(i["num"]) for i in its) / sum(sum(i["den"]) for i in its)
                    else:
                        v = None
                rows.append({"model": model, "stack/attn": r["stack/attn"], "quantity": col, "seed": r[col],
                             "measured": v, "difference": None if v is None else v - r[col]})
    return pd.DataFrame(rows, columns=["model", "stack/attn", "quantity", "seed", "measured", "difference"])
