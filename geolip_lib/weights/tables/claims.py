"""The seed's claims on the weight battery, measured (``metrics["claims"]``) and tabled."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd

from ... import results
from ...metrics import intervals as iv
from ...checkpoints import ATTN_ROLES
from ...metrics.sampled_null import SampledNull
from .. import quant_bounds_prob as QP
from ._common import RANDOM, _layer_items, _mean, _qk_scopes, get
from .headlines import NOTES, items_interval, null_entry
from .by_stack import CLAIM_THRESHOLD, _pooled_self_q


def _seeds(null) -> list:
    """The random-init summaries as a list (one per init seed); a single summary is one seed."""
    if null is None:
        return []
    return list(null) if isinstance(null, (list, tuple)) else [null]


def _null(null, value_of, legacy_interval=None, kind: str = "layers", proportion: bool = False,
          lower: Optional[float] = None) -> Optional[dict]:
    """``{"random init": entry}``: the null over its seeds (:func:`headlines.null_entry`; ``kind``:
    what the quantity averages, for a null of sampled layers; ``proportion``: a fraction, its
    interval taken on the logit scale so that it stays in [0, 1]) or, for a single summary, its
    value with ``legacy_interval()`` (a bootstrap over its items); ``lower``: the least the number can be
    (0 for a magnitude), where its prediction interval is cut)."""
    if null is None:
        return {}
    if isinstance(null, (list, tuple)):
        return {RANDOM: null_entry(null, value_of, kind=kind, proportion=proportion, lower=lower)}
    return {RANDOM: {"value": value_of(null), "interval": legacy_interval() if legacy_interval else None}}


#: seed §5's cross_layer_correlation weight types in the catalog's roles (mlp_up is mlp_in)
SEED_CROSS_LAYER_ROLES = ("q", "k", "qkv", "mlp_in")
SEED_CROSS_LAYER_SCOPE = "seed:q,k,qkv,mlp_up"
#: the seed's attention types alone (its summary row is "Attention cross-layer corr"; mlp_up is no attention weight)
SEED_ATTN_CROSS_LAYER_ROLES = ("q", "k", "qkv")
#: every attention type of the seed's, each tested: the largest |group mean| (no signed cancellation)
SEED_EACH_CROSS_LAYER_SCOPE = "seed:q,k,qkv|each"
#: the project's Q, K, V, O groups pooled as magnitudes: the mean of |group mean|
ABS_CROSS_LAYER_SCOPE = "attention|abs"
#: the project's signed pooling of the Q, K, V, O groups
_ATTENTION = "attention"


def _seed_groups(summary: Optional[Mapping], roles: tuple = SEED_CROSS_LAYER_ROLES) -> dict:
    """The (stack, role) groups of ``summary["cross_layer"]`` that seed §5's catalog had, among
    ``roles``: self-attention ``q`` and ``k``, or — where a stack stores them fused — the fused
    ``qkv`` tensor whole (the seed's catalog had either, never both), and every ``mlp_in``.
    ``{"stack/attn/role": {"adj_mean", "layers", ...}}``."""
    cl = (summary or {}).get("cross_layer") or {}
    fused = {k.rsplit("/", 1)[0] for k in cl if k.endswith("/qkv")}
    out = {}
    for key, d in cl.items():
        stack, attn, role = key.split("/")
        if role not in roles or (role != "mlp_in" and attn != "self") \
                or (role in ("q", "k") and f"{stack}/{attn}" in fused):
            continue
        out[key] = d
    return out


def _attention_groups(summary: Optional[Mapping]) -> dict:
    """The groups the project's pooling (``cross_layer_attn_adj_mean``) averages: every Q, K, V
    and O group of ``summary["cross_layer"]`` (any stack, self- or cross-attention)."""
    return {k: d for k, d in ((summary or {}).get("cross_layer") or {}).items()
            if k.rsplit("/", 1)[-1] in ATTN_ROLES}


def _pairs(groups: Mapping) -> int:
    return sum(len(d["layers"]) - 1 for d in groups.values())


def seed_cross_layer(summary: Optional[Mapping]) -> tuple[Optional[float], int, int]:
    """Seed §5's pooling of the adjacent-layer cosine: ``(value, groups, adjacent pairs)``.

    The seed printed ``adj_mean`` (the mean cosine of the flattened weights of adjacent layers)
    for each of self_attn_q, self_attn_k, self_attn_qkv and mlp_up; pooled here as the mean of
    those per-group means over every (stack, role) group the battery found (``summary
    ["cross_layer"]``, :func:`_seed_groups`): self-attention ``q`` and ``k``, or — where a stack
    stores them fused — the fused ``qkv`` tensor whole (the seed's catalog had either, never
    both), and every ``mlp_in``. The seed's catalog ran each weight type over all stacks
    together, sorted by layer; here each stack is its own group (adjacent layers of one stack),
    as for the project's Q, K, V, O pooling (``cross_layer_attn_adj_mean``). A signed mean:
    groups of opposite sign cancel (:func:`abs_cross_layer`, :func:`seed_each_cross_layer`).
    """
    g = _seed_groups(summary)
    return _mean([d["adj_mean"] for d in g.values()]), len(g), _pairs(g)


def abs_cross_layer(summary: Optional[Mapping]) -> tuple[Optional[float], int, int]:
    """The project's Q, K, V, O pooling as magnitudes: ``(mean over groups of |group mean|,
    groups, adjacent pairs)``. The signed pooling (``cross_layer_attn_adj_mean``) lets groups of
    opposite sign cancel — four roles each beyond |x| = 0.0005 can pool to 0.0002;
    the mean of magnitudes is at least the smallest |group mean| and cannot cancel."""
    g = _attention_groups(summary)
    return _mean([abs(d["adj_mean"]) for d in g.values()]), len(g), _pairs(g)


def seed_each_cross_layer(summary: Optional[Mapping]) -> tuple[Optional[float], int, int, Optional[str]]:
    """Each of the seed's attention types tested (its summary row is "Attention cross-layer
    corr"; the seed printed one ``adj_mean`` per weight type): ``(largest |group mean| over the
    self-attention Q and K groups, or the fused QKV tensor whole, groups, adjacent pairs, the
    group it is)``. ``~0.000`` holds for every group exactly when it holds for the largest.
    mlp_up is left out (no attention weight); :func:`seed_cross_layer` keeps it."""
    g = _seed_groups(summary, SEED_ATTN_CROSS_LAYER_ROLES)
    if not g:
        return None, 0, 0, None
    worst = max(g, key=lambda k: abs(g[k]["adj_mean"]))
    return float(abs(g[worst]["adj_mean"])), len(g), _pairs(g), worst


#: the roles the cross_layer_corr scopes pool (the project's Q, K, V, O and the seed's q, k, qkv, mlp_up)
CLAIM_CROSS_LAYER_ROLES = tuple(dict.fromkeys(ATTN_ROLES + SEED_CROSS_LAYER_ROLES))


def _group_turn(d: Mapping, t: Mapping) -> Optional[dict]:
    """One group's mean adjacent-layer cosine as an interval: each pair's cosine moved by at most
    ``min(2, theta_a + theta_b)`` (``t``: :func:`..battery.cross_layer.cross_layer_turns` of the group), the mean
    by at most the mean of those, clipped to [-1, 1]; ``sd``: the typical move of the mean (each pair's
    ``sqrt(tau_a² + tau_b²)``, independent over pairs). None when the turns are not of the group's layers."""
    if list(t.get("layers") or []) != list(d.get("layers") or []) or len(d["layers"]) < 2:
        return None
    th, ta = t["theta"], t["tau"]
    moves = [min(2.0, th[i] + th[i + 1]) for i in range(len(th) - 1)]
    sd = float(np.sqrt(sum(ta[i] ** 2 + ta[i + 1] ** 2 for i in range(len(ta) - 1)))) / len(moves)
    m, delta = float(d["adj_mean"]), float(np.mean(moves))
    return {"lo": max(-1.0, m - delta), "hi": min(1.0, m + delta), "sd": sd}


def _abs_interval(lo: float, hi: float) -> tuple[float, float]:
    """The range of |x| for x in [lo, hi]."""
    return (0.0 if lo <= 0.0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))


def _independent(used: list) -> bool:
    """Whether the layers of ``used`` (:func:`..battery.cross_layer.cross_layer_turns` groups) are distinct
    matrices, so that their rounding errors can be independent: no rows of one stored tensor in two of them (a
    tied or shared weight), no two of equal norm (a copy under another name)."""
    rows: dict = {}
    for t in used:
        for name, sl in t.get("names") or []:
            for other in rows.setdefault(name, []):
                if sl is None or other is None or (sl[0] < other[1] and other[0] < sl[1]):
                    return False
            rows[name].append(sl)
    norms = [x for t in used for x in (t.get("prob") or {}).get("norm", [])]
    return len(set(norms)) == len(norms)


def _probable(cl: Mapping, groups: Mapping, turns: Mapping, kind: str, delta: float) -> Optional[dict]:
    """The high-probability interval of one scope (:mod:`..quant_bounds_prob`; ``kind`` as the scope pools:
    ``mean``: one joint bound over every weight it pools, the remainders' events sharing the rest of ``delta``;
    ``abs`` / ``max``: each group's mean within its own bound at ``delta / groups``, then pooled as the worst case
    is). None when a group has no statistics (or those of other matrices than the summary's: their cosines
    differ), an unbounded interval or shares weights with another."""
    stats = [(turns[k].get("prob"), cl[k]) for k in groups]
    if any(s is None or not s.get("finite") or len(s["cos"]) != len(d["layers"]) - 1
           or abs(float(np.mean(s["cos"])) - float(d["adj_mean"])) > 1e-9 for s, d in stats) \
            or not _independent([turns[k] for k in groups]):
        return None
    per_pair = max(b for s, _ in stats for b in QP.pair_bounds(s, delta))
    if kind == "mean":
        b = QP.pooled_bound([(s, 1.0 / len(stats)) for s, _ in stats], delta)
        m = float(np.mean([float(d["adj_mean"]) for _, d in stats]))
        return {"lo": max(-1.0, m + b["lo"]), "hi": min(1.0, m + b["hi"]), "shrink": list(b["shrink"]),
                "noise": b["noise"], "linear": b["linear"], "products": b["products"], "remainder": b["remainder"],
                "events": b["events"], "per_pair_max": per_pair, "joint": True}
    bs = [QP.group_bound(s, delta / len(stats)) for s, _ in stats]
    ab = [_abs_interval(max(-1.0, float(d["adj_mean"]) + b["lo"]), min(1.0, float(d["adj_mean"]) + b["hi"]))
          for b, (_, d) in zip(bs, stats)]
    pick = np.mean if kind == "abs" else np.max
    return {"lo": float(pick([a for a, _ in ab])), "hi": float(pick([h for _, h in ab])),
            "shrink": [min(b["shrink"][0] for b in bs), max(b["shrink"][1] for b in bs)],
            "noise": max(b["noise"] for b in bs), "linear": max(b["linear"] for b in bs),
            "products": max(b["products"] for b in bs), "remainder": max(b["remainder"] for b in bs),
            "events": sum(b["events"] for b in bs), "per_pair_max": per_pair, "joint": False}


def _probable_text(p: dict, n_groups: int, delta: float, wlo: float, whi: float) -> str:
    shrink = max(-p["shrink"][0], p["shrink"][1])
    parts = (f"independent errors ±{p['noise']:.2g} (Hoeffding's and Bernstein's inequalities), a shrink towards 0 "
             f"of at most {shrink:.2g} (the errors lengthen each layer), remainder ≤ {p['remainder']:.2g} (the "
             "fluctuation of each layer's norm)")
    if p["joint"]:
        how = (f"the pooled value lies in [{p['lo']:.4g}, {p['hi']:.4g}] with probability ≥ 1 − {delta:g} ({parts}; "
               f"the independent errors summed over every weight of its {n_groups} groups jointly; union over its "
               f"{p['events']} events)")
    else:
        how = (f"the pooled value lies in [{p['lo']:.4g}, {p['hi']:.4g}] with probability ≥ 1 − {delta:g}, each of "
               f"its {n_groups} groups' means within its own bound (the largest: {parts}; union over its "
               f"{p['events']} events)")
    return (f"under independent, unbiased rounding errors within each weight's interval, {how}; each adjacent-layer "
            f"cosine alone moved by at most {p['per_pair_max']:.2g}; the worst case, every error aligned against the "
            f"other layer's weights, gives [{wlo:.4g}, {whi:.4g}]")


def cross_layer_quantization_bounds(summary: Mapping, turns: Mapping, delta: float = QP.DELTA) -> dict:
    """``quantization_bound`` of each ``cross_layer_corr`` scope of :func:`battery_claims` measured on dequantized
    weights: the range the unquantized value lies in, pooled as the scope pools its groups' means (``attention``
    and ``seed:q,k,qkv,mlp_up``: the mean of the groups' means; ``attention|abs``: the mean of their magnitudes;
    ``seed:q,k,qkv|each``: the largest), from every layer's rounding (``turns``:
    :func:`..battery.cross_layer.cross_layer_turns`).

    ``lo`` / ``hi``: with probability ≥ 1 − ``delta`` per scope under independent, unbiased rounding errors within
    each weight's interval (:mod:`..quant_bounds_prob`: Hoeffding's and Bernstein's inequalities on the errors'
    sums, the shrink towards 0 their lengthening of each layer can cause, an exact bound on the remainder, the union
    bound over every event the scope uses), or the worst case where that model cannot be used (a group without the
    statistics, a sub-block of step 0, weights shared between layers).
    ``worst_case``: ``{"lo", "hi", "text"}``, every layer's rounding error aligned against the other layer's
    weights (each pair's cosine moved by at most ``min(2, theta_a + theta_b)``); ``probability``: the bound's parts
    (``shrink`` (lo, hi), ``noise`` = ``linear`` + ``products``, ``remainder``, ``events``, ``per_pair_max``,
    ``delta``, ``model``) or None;
    ``typical``: the move expected from independent rounding errors (its standard deviation ``sd``; not a bound);
    ``text``, ``assumes``, ``types``. A scope with a group of unknown rounding has none."""
    cl = (summary or {}).get("cross_layer") or {}
    per = {k: _group_turn(cl[k], turns[k]) for k in cl if k in turns}
    out = {}
    attention, seed_attention = _attention_groups(summary), _seed_groups(summary, SEED_ATTN_CROSS_LAYER_ROLES)
    for scope, groups, kind in ((_ATTENTION, attention, "mean"), (ABS_CROSS_LAYER_SCOPE, attention, "abs"),
                                (SEED_CROSS_LAYER_SCOPE, _seed_groups(summary), "mean"),
                                (SEED_EACH_CROSS_LAYER_SCOPE, seed_attention, "max")):
        if not groups or any(per.get(k) is None for k in groups):
            continue
        iv_ = [per[k] for k in groups]
        if kind == "mean":
            lo, hi = float(np.mean([g["lo"] for g in iv_])), float(np.mean([g["hi"] for g in iv_]))
            sd = float(np.sqrt(sum(g["sd"] ** 2 for g in iv_))) / len(iv_)
        else:
            ab = [_abs_interval(g["lo"], g["hi"]) for g in iv_]
            pick = (np.mean if kind == "abs" else np.max)
            lo, hi = float(pick([a for a, _ in ab])), float(pick([b for _, b in ab]))
            sd = float(np.sqrt(sum(g["sd"] ** 2 for g in iv_))) / len(iv_) if kind == "abs" else \
                per[max(groups, key=lambda k: abs(groups[k]["adj_mean"]))]["sd"]
        used = [turns[k] for k in groups]
        rules = "; ".join(sorted({x for t in used for x in t["text"]}))
        assumes = sorted({x for t in used for x in t["assumes"]})
        worst = {"lo": lo, "hi": hi, "text": "every layer's rounding error aligned against the other layer's weights "
                                             "(each pair's cosine moved by at most the sum of its layers' turns)"}
        p = _probable(cl, groups, turns, kind, delta)
        if p is not None:
            text = f"{rules}; {_probable_text(p, len(groups), delta, lo, hi)}"
            assumes = assumes + [QP.MODEL_TEXT.replace("delta", f"{delta:g}")]
            lo, hi = p["lo"], p["hi"]
        else:
            text = (f"{rules} (worst case: each layer's rounding error aligned against the other layer's weights; no "
                    "high-probability bound: a sub-block of step 0, weights shared between layers or no per-weight "
                    "statistics)")
        out[scope] = {"lo": lo, "hi": hi, "types": sorted({x for t in used for x in t["types"]}), "text": text,
                      "assumes": "; ".join(assumes) or None, "worst_case": worst,
                      "probability": None if p is None else {k: p[k] for k in (
                          "shrink", "noise", "linear", "products", "remainder", "events", "per_pair_max")}
                      | {"delta": delta, "model": QP.MODEL_TEXT.replace("delta", f"{delta:g}")},
                      "typical": {"sd": sd, "text": "the standard deviation of the pooled value's move if every "
                                  "weight's rounding error were independent and uniform within half its step "
                                  "(not a bound)"}}
    return out


def _group_means(groups: Mapping) -> dict:
    """``{"stack/attn/role": adj_mean}``: each group's own value, recorded beside a pooling."""
    return {k: float(d["adj_mean"]) for k, d in groups.items()}


def _magnitude_null(null, value_of) -> dict:
    """``{"random init": entry}`` of a magnitude (a |mean| over adjacent pairs). A seed of a
    :class:`SampledNull` that measured a fraction ``f`` of the pairs has a |mean| larger by
    1/sqrt(f) in expectation (independent zero-mean cosines at init), so each seed's value is
    rescaled by sqrt(f) to a draw of one whole model's, and the interval is that over the seeds
    of whole-model draws (kind "first": fraction 1)."""
    f = float(null.fractions.get("pairs", 1.0)) if isinstance(null, SampledNull) else 1.0
    if isinstance(null, SampledNull) and f < 1.0:
        vals = [np.nan if v is None else float(v) * np.sqrt(f) for v in (value_of(n) for n in null)]
        e = null.distribution(vals, "first", lower=0.0)
        e["rescaled"] = (f"each seed's value × sqrt({f:.3g}) (it measured {f:.3g} of the adjacent pairs; "
                         "a |mean| over fewer pairs is larger by 1/sqrt(f))")
        return {RANDOM: e}
    return _null(null, value_of, kind="first", lower=0.0)


def _qk_claim(summary: Mapping, null, scope: str, *, seed: int, n_boot: int) -> dict:
    """The QK balance of one ``stack/attn`` group: the seed's form (value) and the project's ("project").

    Each is the mean over every layer of the group: exact. Where the shapes force the balance
    (grouped-query attention), the headline carries ``forced_by_shape``."""
    out = {}
    for key, per_key, forced_key, label, note in (
            ("seed", "seed_pos_frac", "seed_forced_by_shape", f"QK n_pos/inner of sym(W_q W_kᵀ) ({scope})",
             "The seed's form: n_pos / inner of the (inner × inner) sym(W_q W_kᵀ), signs with no tolerance; mean "
             "over every layer (exact). What a 0.5 means: weights.spectral.QK_BALANCE_STATEMENT."),
            ("project", "balance", "forced_by_shape", f"QK balance of sym(W_Qᵀ W_K) ({scope})",
             "The project's form: n_pos / (n_pos + n_neg) of the scoring form sym(W_Qᵀ W_K) (d × d, round-off "
             "zeros not counted); mean over every layer (exact).")):
        per = get(summary, "qk", scope, per_key) or []
        forced = get(summary, "qk", scope, forced_key)
        nulls = _null(null, lambda n, pk=per_key: _mean(get(n, "qk", scope, pk) or []),
                      lambda: items_interval(_layer_items(get(null, "qk", scope, per_key)), seed=seed, n_boot=n_boot))
        nulls = {k: v for k, v in nulls.items() if v is not None and v.get("value") is not None}
        h = results.headline(_mean(per), interval="exact", over=f"{len(per)} layers", nulls=nulls, label=label,
                             fmt=".4f", note=note + (f" {forced[0].upper()}{forced[1:]}." if forced else ""),
                             forced_by_shape=forced)
        h["per_layer"] = [float(v) for v in per]
        out[key] = h
    seed_h = out["seed"]
    seed_h["project"] = out["project"]
    counts = {k: get(summary, "qk", scope, k) for k in ("n_pos", "n_neg", "n_zero")}
    if all(isinstance(v, list) and v for v in counts.values()):
        # the eigenvalue counts per layer of sym(W_Qᵀ W_K), round-off zeros counted as zero: where the
        # shapes force the balance, the page prints these and the balance of the nonzero ones
        seed_h["eigen_counts"] = {k: [int(x) for x in v] for k, v in counts.items()}
    return seed_h


def battery_claims(summary: Mapping, items: Mapping, stack: Mapping, null=None,
                   null_items: Optional[Mapping] = None, null_stack=None, *, seed: int = 0,
                   n_boot: int = iv.N_BOOT) -> dict:
    """The seed claims notebook 02 measures, as ``metrics["claims"]`` (read by ``geolip_lib.claims``).

    Parameters
    ----------
    summary : the battery summary of the trained weights
    null, null_stack : the random-init copies: a list of summaries (one per init seed) and the
        matching list of :func:`stack_items` — the null is a distribution, its interval over
        those seeds; a single summary / stack_items is accepted (its interval is then a
        bootstrap over its items, ``null_items``); None: no nulls
    items : :func:`headline_items` (the adjacent-layer pairs of ``cross_layer_corr``)
    stack : :func:`stack_items` (the Q matrices of each scope), taken at the largest
        threshold, which must be 0.1 for ``q_sparsity`` to be recorded

    Returns
    -------
    dict
        ``{claim id: {scope: results.headline(...)}}``, each value in the seed's definition and
        exact (computed on all the model's weights of that scope):

        - ``q_sparsity`` per ``<stack>/<attn>`` with Q matrices: fraction of Q weights with
          |w| < 0.1 over every Q weight of the scope;
        - ``qk_cross_balance`` (cross-attention groups) and ``qk_self_balance`` (self-attention
          groups): mean over every layer of n_pos / inner of sym(W_q W_kᵀ), ``per_layer``;
          ``project``: the same for the balance of sym(W_Qᵀ W_K); ``forced_by_shape`` where the
          shapes force 0.5 (grouped-query attention);
        - ``cross_layer_corr`` scope ``attention``: mean adjacent-layer cosine of the attention
          weights (the headline ``cross_layer_adj``), over every adjacent pair, a signed mean;
          ``attention|abs``: the same Q, K, V, O groups as magnitudes (:func:`abs_cross_layer`);
          ``seed:q,k,qkv,mlp_up``: seed §5's pooling (:func:`seed_cross_layer`, signed, with
          mlp_up); ``seed:q,k,qkv|each``: the largest |group mean| of the seed's attention types
          (:func:`seed_each_cross_layer`). Each carries ``groups`` (each group's own mean);
        - ``position_crystallization`` per stack with a relative position bias: the number of
          mixed heads by the seed's raw-bucket rule (a count), ``n_heads``; ``project``: by the
          distance-class rule.

        Nulls: ``{"random init": ...}`` where ``null`` was given.
    """
    claims: dict = {"q_sparsity": {}, "qk_cross_balance": {}, "qk_self_balance": {}}
    thr = CLAIM_THRESHOLD  # the items are taken at the largest threshold: the claim needs it to be 0.1
    null_stacks = _seeds(null_stack)
    for scope, roles in (stack.items() if summary.get("qkv_sparsity_threshold") == thr else ()):
        it = roles.get("q")
        v = get(summary, "sparsity_by_stack_role", f"{scope}/q", thr)
        if it is None or v is None:
            continue
        nulls = _null(null, lambda n, sc=scope: get(n, "sparsity_by_stack_role", f"{sc}/q", thr),
                      lambda sc=scope: items_interval(get(null_stack, sc, "q"), seed=seed, n_boot=n_boot),
                      proportion=True)  # a fraction of weights: its null interval stays in [0, 1]
        claims["q_sparsity"][scope] = results.headline(
            v, interval="exact", over=f"{len(it['num'])} Q matrices of {scope}", nulls=nulls,
            label=f"Q |w| < 0.1 ({scope})", fmt=".4f",
            note=f"Over every Q weight of the {len(it['num'])} Q matrices of {scope}: exact.")
    pooled = _pooled_self_q(stack) if "encoder/self" in claims["q_sparsity"] and "decoder/self" in claims["q_sparsity"] \
        else None
    if pooled is not None:  # seed §4's "self_attn_q" pooled the encoder's and the decoder's self-attention Q
        nulls = {}
        npools = [_pooled_self_q(ns) for ns in null_stacks]
        if npools and all(npool is not None for npool in npools):
            vals = [float(np.sum(npool["num"]) / np.sum(npool["den"])) for npool in npools]
            if isinstance(null, SampledNull):  # a fraction: its interval stays in [0, 1] (logit scale)
                nulls[RANDOM] = null.distribution(vals, "layers", proportion=True)
            elif isinstance(null, (list, tuple)):
                nulls[RANDOM] = iv.null_over_seeds(vals, what=f"{len(vals)} random-init seeds", proportion=True)
            else:
                nulls[RANDOM] = {"value": vals[0], "interval": items_interval(npools[0], seed=seed, n_boot=n_boot)}
        claims["q_sparsity"]["encoder+decoder/self"] = results.headline(
            float(np.sum(pooled["num"]) / np.sum(pooled["den"])), interval="exact",
            over=f"{len(pooled['num'])} self-attention Q matrices", nulls=nulls,
            label="Q |w| < 0.1 (encoder+decoder self, the seed's §4 pooling)", fmt=".4f",
            note=f"Over every Q weight of the {len(pooled['num'])} self-attention Q matrices of encoder and decoder, "
                 "as seed §4's self_attn_q did: exact.")
    for scope in _qk_scopes(summary):
        kind = "qk_cross_balance" if scope.endswith("/cross") else "qk_self_balance"
        claims[kind][scope] = _qk_claim(summary, null, scope, seed=seed, n_boot=n_boot)
    nulls = _null(null, lambda n: (n or {}).get("cross_layer_attn_adj_mean"),
                  lambda: items_interval((null_items or {}).get("cross_layer_adj"), seed=seed, n_boot=n_boot), "pairs")
    cross: dict = {}
    if summary.get("cross_layer_attn_adj_mean") is not None:
        n_pairs = len(((items or {}).get("cross_layer_adj") or {}).get("num") or [])
        cross["attention"] = results.headline(
            summary["cross_layer_attn_adj_mean"], interval="exact", over=f"{n_pairs} adjacent layer pairs",
            nulls=nulls, label="adjacent-layer cos (attn)", fmt=".4f",
            note=NOTES["cross_layer_adj"] + " A signed mean over the Q, K, V and O groups: groups of opposite sign "
                 f"cancel (the magnitudes: scope {ABS_CROSS_LAYER_SCOPE}).")
        cross["attention"]["groups"] = _group_means(_attention_groups(summary))
    v, n_groups, n_pairs = abs_cross_layer(summary)
    if v is not None:  # the project's pooling as magnitudes: no cancellation between groups
        cross[ABS_CROSS_LAYER_SCOPE] = results.headline(
            v, interval="exact", over=f"{n_groups} weight groups, {n_pairs} adjacent layer pairs",
            nulls={k: e for k, e in _magnitude_null(null, lambda n: abs_cross_layer(n)[0]).items()
                   if e is not None and e.get("value") is not None},
            label="mean |adjacent-layer cos| over Q, K, V, O groups", fmt=".4f",
            note="The project's Q, K, V, O pooling as magnitudes: the mean over groups of |each group's mean "
                 "adjacent-layer cosine of the flattened weights| (the signed mean, scope attention, lets groups of "
                 "opposite sign cancel); every layer pair: exact. Independent layers of n weights have cosines of "
                 "spread 1/sqrt(n), so the random-init null's magnitude is not 0. " + NOTES["cross_layer_adj"])
        cross[ABS_CROSS_LAYER_SCOPE]["groups"] = _group_means(_attention_groups(summary))
    v, n_groups, n_pairs = seed_cross_layer(summary)
    if v is not None:  # seed §5's pooling, beside the project's (scope "attention")
        cross[SEED_CROSS_LAYER_SCOPE] = results.headline(
            v, interval="exact", over=f"{n_groups} weight groups, {n_pairs} adjacent layer pairs",
            nulls={k: e for k, e in _null(null, lambda n: seed_cross_layer(n)[0], kind="pairs").items()
                   if e is not None and e.get("value") is not None},
            label="adjacent-layer cos (seed: q, k, qkv, mlp_up)", fmt=".4f",
            note="Seed §5's pooling: the mean over groups of each group's mean adjacent-layer cosine of the "
                 "flattened weights, for self-attention Q and K (or the fused QKV tensor whole) and the MLP up "
                 "projection; every layer pair: exact. It includes mlp_up, no attention weight, though the seed's "
                 "summary row is 'Attention cross-layer corr' (the attention types alone, each: scope "
                 f"{SEED_EACH_CROSS_LAYER_SCOPE}); a signed mean, so groups of opposite sign cancel. "
                 + NOTES["cross_layer_adj"])
        cross[SEED_CROSS_LAYER_SCOPE]["groups"] = _group_means(_seed_groups(summary))
    v, n_groups, n_pairs, worst = seed_each_cross_layer(summary)
    if v is not None:  # each of the seed's attention types tested: the largest magnitude decides
        cross[SEED_EACH_CROSS_LAYER_SCOPE] = results.headline(
            v, interval="exact", over=f"{n_groups} weight groups, {n_pairs} adjacent layer pairs",
            nulls={k: e for k, e in _magnitude_null(null, lambda n: seed_each_cross_layer(n)[0]).items()
                   if e is not None and e.get("value") is not None},
            label="largest |adjacent-layer cos| over the seed's attention types (q, k, qkv)", fmt=".4f",
            note=f"Each of the seed's attention types tested (seed §5 printed one adj_mean per weight type): the "
                 f"largest |mean adjacent-layer cosine| over the self-attention Q and K groups (or the fused QKV "
                 f"tensor whole), here {worst}; mlp_up left out (the row is 'Attention'). Every layer pair: exact. "
                 + NOTES["cross_layer_adj"])
        cross[SEED_EACH_CROSS_LAYER_SCOPE].update(groups=_group_means(_seed_groups(summary, SEED_ATTN_CROSS_LAYER_ROLES)),
                                                  largest=worst)
    if cross:
        claims["cross_layer_corr"] = cross
    pb = summary.get("position_bias") or {}
    if pb:
        claims["position_crystallization"] = {}
    for stack_name, p in pb.items():
        def mixed(n, key, st=stack_name):
            v = get(n, "position_bias", st, key)
            return None if v is None else int(v)
        h = results.headline(int(p["mixed_seed"]), interval="exact", over=f"{int(p['n_heads'])} heads", fmt="d",
                             label=f"mixed position heads ({stack_name})",
                             nulls={k: v for k, v in _null(null, lambda n: mixed(n, "mixed_seed"), kind="first").items()
                                    if v is not None and v.get("value") is not None},
                             note="Seed's rule: a head is local if its peak bucket is <= 2, global if >= n_buckets - 3 "
                                  "(raw bucket index), mixed otherwise. A count: exact.")
        h["n_heads"] = int(p["n_heads"])
        h["project"] = results.headline(int(p["mixed"]), interval="exact", over=f"{int(p['n_heads'])} heads", fmt="d",
                                        nulls={k: v for k, v in _null(null, lambda n: mixed(n, "mixed"), kind="first").items()
                                               if v is not None and v.get("value") is not None},
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
