"""The seed's claims on the weight battery, measured (``metrics["claims"]``) and tabled."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd

from ... import results
from ...metrics import intervals as iv
from ._common import RANDOM, _layer_items, _mean, _note, _qk_scopes, get
from .headlines import NOTES, items_interval
from .by_stack import CLAIM_THRESHOLD, _pooled_self_q


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
