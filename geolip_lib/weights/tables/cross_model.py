"""Notebook 03: cross-model rows and headlines (two-stage bootstrap), per (model, stack, attention kind) rows, the seed's reported numbers beside the measured ones."""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ... import results
from ...metrics import intervals as iv
from ._common import RANDOM, _layer_items, _lohi, _note, _qk_scopes, _ratio, _scope_order, first_qk_group, get
from .headlines import items_interval
from .by_stack import CLAIM_THRESHOLD, SPARSITY_ROLES


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


#: the per-(model, stack/attn) columns of notebook 03 (like with like, as the seed compared)
STACK_COLUMNS = {
    "sparsity": ["Q sparsity", "Q lo", "Q hi", "K sparsity", "V sparsity"],
    "qk": ["QK layers", "QK seed (mean)", "QK seed min", "QK seed max", "QK project (mean)", "QK seed forced",
           "QK project forced"],
}

#: the QK columns whose value the shapes can force (grouped-query attention) -> the column marking it
FORCED_COLUMN = {"QK seed (mean)": "QK seed forced", "QK project (mean)": "QK project forced"}


def cross_model_stack_frame(batteries: Mapping[str, tuple], stack: Optional[Mapping] = None, *, seed: int = 0,
                            n_boot: int = iv.N_BOOT) -> pd.DataFrame:
    """One row per (model, weights, ``stack/attn``): Q/K/V sparsity at the largest threshold
    (|w| < 0.1) of that scope, and its QK sign balance over layers, in the seed's form
    (n_pos / inner of sym(W_q W_kᵀ): mean, min, max) and the project's (balance of
    sym(W_Qᵀ W_K), mean); ``QK seed forced`` / ``QK project forced``: the shapes force that
    form's balance (grouped-query attention, ``metrics.factored_qk.qk_balance_forced``).

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
                             "QK seed max": max(pos) if pos else None, "QK project (mean)": q.get("balance_mean"),
                             "QK seed forced": bool(q.get("seed_forced_by_shape")) if q else None,
                             "QK project forced": bool(q.get("forced_by_shape")) if q else None})
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

    A QK column leaves out the rows whose balance the shapes force (``QK seed forced`` /
    ``QK project forced``: grouped-query attention); the headline lists them as
    ``excluded_forced_by_shape`` and its note says so.
    """
    per_key = {"QK seed (mean)": "seed_pos_frac", "QK project (mean)": "balance"}.get(column)
    excluded: list = []
    fcol = FORCED_COLUMN.get(column)
    if fcol and fcol in stacks:
        forced = stacks[fcol].fillna(False).astype(bool)
        excluded = sorted({f"{r['model']} · {r['stack/attn']}" for _, r in stacks[forced].iterrows()})
        stacks = stacks[~forced]
        if excluded:
            note = ((note + " ") if note else "") + (f"Left out, forced by their shapes (the rank bound: grouped-"
                                                     f"query attention, or inner ≥ 2·d): {', '.join(excluded)}.")

    def row_items(r, ikind):
        if column == "Q sparsity":
            return get(stack, r["model"], ikind, r["stack/attn"], "q")
        if per_key and batteries and r["model"] in batteries:
            summ = batteries[r["model"]][0 if ikind == "trained" else 1]
            return _layer_items(get(summ, "qk", r["stack/attn"], per_key))
        return None

    h = _headline_over_rows(stacks, column, row_items, what="model × stack/attn rows", label=label, fmt=fmt,
                            note=note, seed=seed, n_boot=n_boot)
    if fcol:
        h["excluded_forced_by_shape"] = excluded
    return h


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
