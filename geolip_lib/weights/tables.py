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
  pool, i.e. how much the number depends on which layers this model happens to have;
- the cross-model rows and headlines of notebook 03 (bootstrap over models).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from .. import results
from ..metrics import intervals as iv
from ..models.adapters import ATTN_ROLES

__all__ = [
    "get", "first_qk_group", "catalog_overview", "catalog_summary", "adjacent_pairs", "svd_by_stack_role", "sparsity_by_role", "sparsity_model",
    "qkv_sparsity", "qk_layers", "qk_random_init", "mlp_overview", "cross_layer_overview", "position_bias_overview",
    "role_sparsity_interval", "stable_rank_interval", "dead_frac_interval", "adjacent_cos_interval",
    "battery_headline", "cross_model_row", "cross_model_frame", "cross_model_headline", "CROSS_MODEL_COLUMNS",
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


QK_COLUMNS = ["stack", "attn", "layer", "inner", "stable_rank", "pr", "sym_dev", "n_pos", "n_neg", "n_zero",
              "pos_frac", "balance", "head_balance_mean"]


def qk_layers(res, show_layers: int) -> pd.DataFrame:
    """Per-layer QK bilinear-form statistics: the first ``show_layers`` layers of each group."""
    ql = res.qk["layers"]
    if ql.empty:
        return pd.DataFrame(columns=QK_COLUMNS)
    ql = ql.sort_values(["stack", "attn", "layer"], kind="stable")
    return ql.groupby(["stack", "attn"], sort=False).head(show_layers)[QK_COLUMNS].reset_index(drop=True)


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
def _weighted_ratio(num: np.ndarray, den: np.ndarray):
    """``sum(w·num) / sum(w·den)`` for each row of resampling counts ``W``."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)

    def stat(W: np.ndarray) -> np.ndarray:
        return (W @ num) / (W @ den)

    return stat


def role_sparsity_interval(res, role: str, column: Optional[str] = None, *, seed: int = 0,
                           n_boot: int = iv.N_BOOT) -> Optional[iv.Interval]:
    """Bootstrap over the role's matrices of the pooled fraction of |w| below a threshold.

    The pooled fraction (what ``summary["sparsity_by_role"]`` records) is a ratio of sums:
    resampling matrices gives ``Σ w·below / Σ w·n``. ``column`` defaults to the largest
    threshold. ``None`` when the model has no matrix of that role.
    """
    sp = res.sparsity
    per = sp["per_tensor"]
    col = column or sp["columns"][-1]
    if per.empty or "role" not in per:
        return None
    g = per[per["role"] == role]
    if g.empty:
        return None
    n = g["n"].to_numpy(dtype=np.float64)
    return iv.bootstrap_weighted(len(g), _weighted_ratio(n * g[col].to_numpy(dtype=np.float64), n),
                                 n_boot=n_boot, seed=seed, what=f"{role.upper()} matrices")


def stable_rank_interval(res, role: str, *, seed: int = 0, n_boot: int = iv.N_BOOT) -> Optional[iv.Interval]:
    """Bootstrap over the role's matrices (layers × attention blocks) of the mean stable rank."""
    svd = res.svd
    if svd.empty:
        return None
    x = svd.loc[svd["role"] == role, "stable_rank"].to_numpy(dtype=np.float64)
    return iv.bootstrap(x, np.mean, n_boot=n_boot, seed=seed, what=f"{role.upper()} matrices") if x.size else None


def dead_frac_interval(res, *, seed: int = 0, n_boot: int = iv.N_BOOT) -> Optional[iv.Interval]:
    """Bootstrap over MLP layers of the pooled dead-neuron fraction ``Σ dead / Σ d_ff``."""
    ml = res.mlp["layers"]
    if ml.empty:
        return None
    return iv.bootstrap_weighted(len(ml), _weighted_ratio(ml["dead"].to_numpy(), ml["d_ff"].to_numpy()),
                                 n_boot=n_boot, seed=seed, what="MLP layers")


def adjacent_pairs(res) -> tuple[np.ndarray, np.ndarray]:
    """Adjacent-layer cosines of every attention-role group and each pair's weight, so that
    the weighted mean is the mean over groups of each group's mean (the headline)."""
    groups = [d["cos"] for (_s, _a, r), d in res.cross.items() if r in ATTN_ROLES]
    if not groups:
        return np.zeros(0), np.zeros(0)
    c = np.concatenate([np.diagonal(C, 1) for C in groups])
    w = np.concatenate([np.full(C.shape[0] - 1, 1.0 / ((C.shape[0] - 1) * len(groups))) for C in groups])
    return c, w


def adjacent_cos_interval(res, *, seed: int = 0, n_boot: int = iv.N_BOOT) -> Optional[iv.Interval]:
    """Bootstrap over adjacent layer pairs (all attention roles and stacks) of the mean
    adjacent-layer cosine (each group's pairs weighted so the value is the mean of group means)."""
    c, w = adjacent_pairs(res)
    if not c.size:
        return None
    return iv.bootstrap_weighted(len(c), _weighted_ratio(w * c, w), n_boot=n_boot, seed=seed,
                                 what="adjacent layer pairs")


def _note(note: Optional[str], interval: Any) -> Optional[str]:
    """``note``, plus a sentence when the bootstrap had too few items to form an interval."""
    if isinstance(interval, iv.Interval) and not interval.finite:
        extra = f"No interval: too few items for a bootstrap ({interval.method.rsplit(' of ', 1)[-1]})."
        return f"{note} {extra}" if note else extra
    return note


def _qk_first(summary: Optional[Mapping]) -> Optional[float]:
    k = first_qk_group(summary, self_only=False)
    return None if k is None else summary["qk"][k]["pos_frac_first"]


def battery_headline(res, summary: Mapping, null_res=None, null: Optional[Mapping] = None, *,
                     seed: int = 0, n_boot: int = iv.N_BOOT) -> dict:
    """The headline numbers of notebook 02, each with its 95 % interval and the random-init null.

    Values are those the summary records; intervals are bootstraps over the matrices /
    layers / pairs each number pools (see the module docstring); the layer-0 QK sign
    fraction is one eigen-decomposition of the full weights, hence exact.
    """
    thr = summary.get("qkv_sparsity_threshold")

    def nul(value, interval):
        return {} if null is None else {"random_init": {"value": value, "interval": interval}}

    def both(fn, *a):
        return fn(res, *a, seed=seed, n_boot=n_boot), (fn(null_res, *a, seed=seed, n_boot=n_boot)
                                                       if null_res is not None else None)

    out = {}
    for r in ("q", "k"):
        t, n = both(role_sparsity_interval, r)
        out[f"{r}_sparsity"] = results.headline(
            get(summary, "qkv_sparsity", r), interval=t, nulls=nul(get(null, "qkv_sparsity", r), n),
            label=f"{r.upper()} |w|{thr}", fmt=".3f",
            note=_note(f"Pooled over every {r.upper()} matrix; a fixed absolute threshold mostly measures weight "
                       "scale, which the random-init null shows.", t))
    t, n = both(stable_rank_interval, "q")
    out["q_stable_rank"] = results.headline(
        get(summary, "svd_by_role", "q", "stable_rank"), interval=t,
        nulls=nul(get(null, "svd_by_role", "q", "stable_rank"), n), label="Q stable rank", fmt=".2f",
        note=_note("Mean over Q matrices of ‖W‖²_F/‖W‖²₂; a Gaussian init already has a high stable rank.", t))
    first = first_qk_group(summary, self_only=False)
    out["qk_pos_frac_first"] = results.headline(
        _qk_first(summary), interval="exact", nulls=nul(_qk_first(null), None),
        label=f"QK pos. eig. frac (L0{'' if first is None else ', ' + first})", fmt=".3f",
        note="Exact: one eigen-decomposition of the full layer-0 sym(W_Qᵀ W_K), no sampling; 0.5 is sign balance.")
    t, n = both(dead_frac_interval)
    out["mlp_dead_frac"] = results.headline(
        get(summary, "mlp", "dead_frac"), interval=t, nulls=nul(get(null, "mlp", "dead_frac"), n),
        label="dead MLP neurons", fmt=".4f",
        note=_note("Importance < 1 % of the layer mean; pooled over MLP layers.", t))
    t, n = both(adjacent_cos_interval)
    out["cross_layer_adj"] = results.headline(
        summary.get("cross_layer_attn_adj_mean"), interval=t,
        nulls=nul((null or {}).get("cross_layer_attn_adj_mean"), n), label="adjacent-layer cos (attn)", fmt=".4f",
        note=_note("Independent random layers have cosine ≈ 0 (the random-init null); trained layers depart "
                   "from it only if they share weight directions.", t))
    return out


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
    return pd.to_numeric(g[column], errors="coerce").dropna() if column in g else pd.Series(dtype=float)


def cross_model_headline(measured: pd.DataFrame, column: str, *, label: str, fmt: str = ".3f",
                         note: Optional[str] = None, seed: int = 0, n_boot: int = iv.N_BOOT) -> dict:
    """Mean of ``column`` over the trained models with a bootstrap over models, beside the
    same mean over the random-init rows (with its own bootstrap) as the ``random_init`` null."""
    t, r = _model_values(measured, column, "trained"), _model_values(measured, column, RANDOM)
    nulls = {}
    if len(r):
        nulls["random_init"] = {"value": float(r.mean()),
                                "interval": iv.bootstrap(r.to_numpy(), np.mean, n_boot=n_boot, seed=seed,
                                                         what="models")}
    value = float(t.mean()) if len(t) else None
    interval = iv.bootstrap(t.to_numpy(), np.mean, n_boot=n_boot, seed=seed, what="models") if len(t) else None
    return results.headline(value, interval=interval, nulls=nulls, label=label, fmt=fmt, note=_note(note, interval))
