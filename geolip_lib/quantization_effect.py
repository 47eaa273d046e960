"""How far quantization moves the headlines: a model's fp32 jobs beside the jobs of its simulated-quantized
twin (``quantize: q4_1`` in a params file, :mod:`geolip_lib.models.quantize`); and, for a model measured on
dequantized weights, the range a claims record's unquantized value can lie in (:func:`q_sparsity_bounds`,
:func:`cross_layer_bounds`, from each weight's rounding: :mod:`geolip_lib.weights.quant_bounds`).

The pairs are found in the output root from the jobs' own provenance, not from names: a job whose
model provenance says ``weights.simulated`` was rounded from the weight files in
``weights.rounded_from`` (name and sha256); its reference is the job of the same notebook whose
model was read from exactly those files.

The report calls ``quantization_effect.table(root)``: one row per headline of each pair, with the
fp32 value and interval, the quantized value and interval, their difference, and the difference in
units of the fp32 interval's half-width (|ratio| < 1: the rounding moves the headline less than
its own sampling uncertainty).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from . import roots
from .lazy import lazy
from .metrics.intervals import format_value

#: the block schemes (torch): only when a bound is computed
quantize = lazy("geolip_lib.models.quantize")
#: each weight's rounding, and the weight battery's pooling of the cross-layer claims: only when a bound is computed
quant_bounds = lazy("geolip_lib.weights.quant_bounds")
cross_layer_mod = lazy("geolip_lib.weights.battery.cross_layer")
claims_tables = lazy("geolip_lib.weights.tables.claims")

#: the notebooks whose headlines the issue asks about (01 embedding terrain, 02 weight battery, 06 QK operators)
NOTEBOOKS = ("01_embedding_terrain", "02_weight_topology", "06_qk_operators")

COLUMNS = ["notebook", "headline", "fp32 model", "quantized model", "scheme", "fp32", "quantized", "difference",
           "difference / half-width", "relative difference", "fp32 value", "fp32 lo", "fp32 hi", "quantized value", "quantized lo",
           "quantized hi"]


def _model_prov(m: dict) -> dict:
    models = (m.get("provenance") or {}).get("models") or []
    return models[0] if models and isinstance(models[0], dict) else {}


def _file_digests(weights: dict) -> Optional[frozenset]:
    """``{(file name, sha256)}`` of a provenance ``weights`` block that lists files, else None."""
    if not isinstance(weights, dict) or weights.get("dequantized"):
        return None
    out = {(k, v.get("sha256")) for k, v in weights.items() if isinstance(v, dict) and v.get("sha256")}
    return frozenset(out) or None


def _jobs(root: Path, notebook: str) -> list[dict]:
    out = []
    for d, m in roots.finished_metrics(root, notebook):
        if isinstance(m.get("headline"), dict):
            out.append({"job": d.name, "metrics": m, "prov": _model_prov(m)})
    return out


def pairs(root, notebooks: Sequence[str] = NOTEBOOKS) -> list[tuple[str, dict, dict]]:
    """``(notebook, fp32 job, quantized job)`` for every simulated-quantized job under ``root``
    whose fp32 source job is there too (each job: ``{"job", "metrics", "prov"}``)."""
    root = Path(os.path.abspath(root))  # absolute: roots.read_json reads a relative path inside the root
    found = []
    for nb in notebooks:
        jobs = _jobs(root, nb)
        by_files = {}
        for j in jobs:
            key = _file_digests(j["prov"].get("weights"))
            if key is not None:
                by_files.setdefault(key, j)
        for j in jobs:
            w = j["prov"].get("weights")
            if isinstance(w, dict) and w.get("simulated"):
                src = frozenset((k, v.get("sha256")) for k, v in (w.get("rounded_from") or {}).items()
                                if isinstance(v, dict))
                ref = by_files.get(src)
                if ref is not None:
                    found.append((nb, ref, j))
    return found


def _bounds(h: dict) -> tuple[Optional[float], Optional[float]]:
    iv = h.get("interval") if isinstance(h, dict) else None
    if isinstance(iv, dict) and isinstance(iv.get("lo"), (int, float)) and isinstance(iv.get("hi"), (int, float)):
        return float(iv["lo"]), float(iv["hi"])
    return None, None


def _number(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def table(root, notebooks: Sequence[str] = NOTEBOOKS) -> pd.DataFrame:
    """One row per (pair, headline) of :func:`pairs`: the quantization effect on each headline.

    ``difference`` is quantized − fp32; ``difference / half-width`` divides it by half the width
    of the fp32 value's 95 % interval (NaN when that interval is exact and the difference is 0;
    ±inf when an exact value moved: 02's and 06's headlines are computed on every weight, so any
    move is beyond their interval, and ``relative difference`` = difference / |fp32| says by how
    much; NaN for a moved value of 0). Headlines that are not numbers on both sides (a section that
    did not apply) are left out. The formatted columns (``fp32``, ``quantized``) print each value
    at its interval's precision; the numeric columns keep the full values. Empty (with the
    columns) when the root holds no pair.
    """
    rows = []
    for nb, ref, q in pairs(root, notebooks):
        scheme = (q["prov"].get("weights") or {}).get("quantization_summary") or {}
        for key, h in ref["metrics"]["headline"].items():
            hq = q["metrics"]["headline"].get(key)
            if not isinstance(h, dict) or not isinstance(hq, dict):
                continue
            v, vq = _number(h.get("value")), _number(hq.get("value"))
            if v is None or vq is None:
                continue
            lo, hi = _bounds(h)
            qlo, qhi = _bounds(hq)
            diff = vq - v
            half = None if lo is None else (hi - lo) / 2
            if half is None:
                ratio = math.nan
            elif half > 0:
                ratio = diff / half
            else:
                ratio = math.nan if diff == 0 else math.copysign(math.inf, diff)
            rows.append({
                "notebook": nb, "headline": h.get("label") or key, "fp32 model": ref["job"], "quantized model": q["job"],
                "scheme": ", ".join(scheme) or "?",
                "fp32": format_value(v, None if lo is None else (lo, hi), h.get("fmt")),
                "quantized": format_value(vq, None if qlo is None else (qlo, qhi), hq.get("fmt")),
                "difference": diff, "difference / half-width": ratio,
                "relative difference": diff / abs(v) if v else (0.0 if diff == 0 else math.nan),
                "fp32 value": v, "fp32 lo": lo, "fp32 hi": hi, "quantized value": vq, "quantized lo": qlo,
                "quantized hi": qhi,
            })
    return pd.DataFrame(rows, columns=COLUMNS)


__all__ = ["BOUND_COLUMNS", "COLUMNS", "NOTEBOOKS", "attach_bounds", "cross_layer_bounds", "pairs", "q4_1_rounded", "q_sparsity_bounds", "table",
           "threshold_bound"]


def threshold_bound(w, threshold: float = 0.1, scheme: str = "q4_1") -> dict:
    """How far the rounding can have moved the fraction of weights with ``|w| < threshold``, from a matrix
    rounded to ``scheme`` (a key of ``quantize.SCHEMES``) read back alone (:func:`..weights.quant_bounds.
    readback_rounding`: each weight lay within half its block's step, plus the fp16 scale's rounding).

    Returns ``{"fraction", "near", "n", "lo", "hi"}``: ``lo`` / ``hi`` the fractions of originals surely and
    possibly below the threshold, ``near`` their difference in weights; ``quantization_bound`` of a claims record
    takes ``lo`` and ``hi``.
    """
    qtype = quantize.SCHEMES[scheme].name if scheme in quantize.SCHEMES else str(scheme).upper()
    r = quant_bounds.readback_rounding(np.asarray(w), qtype)
    if r is None:
        raise ValueError(f"w: its blocks do not lie on a {qtype} grid (not rounded to {scheme})")
    c = quant_bounds.threshold_counts(r, threshold)
    return {"fraction": c["below"] / c["n"], "near": c["possible"] - c["certain"], "n": c["n"],
            "lo": c["certain"] / c["n"], "hi": c["possible"] / c["n"]}


def q4_1_rounded(lm) -> bool:
    """Whether every Q weight of ``lm`` was stored as Q4_1 (a GGUF whose ``attn_q`` tensors are all Q4_1, or the
    simulated ``quantize: q4_1`` copy). The bounds no longer need it (:func:`q_sparsity_bounds` bounds every type
    :mod:`..weights.quant_bounds` has a rule for); kept for callers that ask about Q4_1 itself."""
    q = getattr(lm, "quantization", None) or {}
    if q.get("simulated"):
        return str(q.get("scheme", "")).lower() == "q4_1"
    types = [t for name, t in (q.get("types") or {}).items() if "attn_q" in name and "norm" not in name]
    return bool(types) and set(types) == {"Q4_1"}


def _words(kinds: set) -> dict:
    """The ``types``, ``text``, ``assumes`` and ``source`` of a bound record over matrices of ``kinds``
    (``{(stored type, importance matrix, where the step came from)}``)."""
    rules = sorted({(q, i) for q, i, _ in kinds})
    assumes = sorted({a for a in (quant_bounds.assumption(q, i) for q, i in rules) if a})
    return {"types": sorted({q for q, _ in rules}), "scheme": ", ".join(sorted({q for q, _ in rules})).lower(),
            "text": "; ".join(f"{q}: {quant_bounds.rule_text(q, i)}" for q, i in rules),
            "assumes": "; ".join(assumes) or None, "source": ", ".join(sorted({s for _, _, s in kinds}))}


def q_sparsity_bounds(lm, store, cat, threshold: float = 0.1) -> dict:
    """Per ``<stack>/<attn>`` scope, the range the unquantized Q sparsity (``|w| < threshold`` over every Q weight)
    lies in, from each Q weight's rounding (:func:`..weights.quant_bounds.rounding_of`: the GGUF file's stored
    scales, or read back from a simulated copy or a CTranslate2 int8 / int16 file): ``lo`` the weights whose
    original was surely below, ``hi`` those whose original may have been. ``{}`` for a model that was not
    quantized; a scope with a Q matrix of unknown rounding has no bound. Each value: ``{"lo", "hi", "near", "n",
    "below", "types", "scheme", "text", "assumes", "source", "if_end_codes_unbounded"}`` (``near``: weights whose
    side of the threshold the rounding leaves open; ``if_end_codes_unbounded``: ``{"lo", "hi"}`` were a clamped
    end code's weight anywhere beyond it, not within the assumed range)."""
    if not quant_bounds.quantized(lm):
        return {}
    acc: dict = {}
    for b in cat.attention_blocks():
        if b.q is None:
            continue
        a = acc.setdefault(f"{b.stack}/{b.attn}", {"below": 0, "certain": 0, "possible": 0, "n": 0, "open": [0, 0],
                                                   "kinds": set()})
        r = None if a["kinds"] is None else quant_bounds.rounding_of(lm, store, b.q)
        if r is None:  # one Q matrix of unknown rounding: no bound for its scope
            a["kinds"] = None
            continue
        c, u = quant_bounds.threshold_counts(r, threshold), quant_bounds.threshold_counts(r, threshold, True)
        for k in ("below", "certain", "possible", "n"):
            a[k] += c[k]
        a["open"][0] += u["certain"]
        a["open"][1] += u["possible"]
        a["kinds"].add((r.qtype, r.imatrix, r.source))
    acc = {k: a for k, a in acc.items() if a["kinds"] and a["n"]}
    if "encoder/self" in acc and "decoder/self" in acc:  # seed §4's pooling of both stacks' self-attention Q
        e, d = acc["encoder/self"], acc["decoder/self"]
        acc["encoder+decoder/self"] = {k: e[k] + d[k] for k in ("below", "certain", "possible", "n")} | {
            "open": [e["open"][0] + d["open"][0], e["open"][1] + d["open"][1]], "kinds": e["kinds"] | d["kinds"]}
    return {scope: {"lo": a["certain"] / a["n"], "hi": a["possible"] / a["n"], "near": a["possible"] - a["certain"],
                    "n": a["n"], "below": a["below"], **_words(a["kinds"]),
                    "if_end_codes_unbounded": {"lo": a["open"][0] / a["n"], "hi": a["open"][1] / a["n"]}}
            for scope, a in acc.items()}


def cross_layer_bounds(lm, store, cat, summary) -> dict:
    """Per scope of the ``cross_layer_corr`` claims record, the range its unquantized value lies in
    (:func:`..weights.tables.claims.cross_layer_quantization_bounds`: with probability ≥ 1 − 1e-6 under
    independent, unbiased rounding errors within each weight's interval, the worst case beside it as
    ``worst_case``, and the typical move), from one pass over every layer's rounding
    (:func:`..weights.battery.cross_layer.cross_layer_turns`). ``{}`` for a model that was not quantized."""
    turns = cross_layer_mod.cross_layer_turns(lm, store, cat, claims_tables.CLAIM_CROSS_LAYER_ROLES)
    return claims_tables.cross_layer_quantization_bounds(summary, turns) if turns else {}


#: the columns of :func:`attach_bounds`' table
BOUND_COLUMNS = ["claim", "scope", "measured", "unquantized lo", "unquantized hi", "recorded", "worst-case lo",
                 "worst-case hi", "weights open", "if end codes unbounded", "typical sd", "rule"]


def attach_bounds(claims: dict, lm, store, cat, summary) -> pd.DataFrame:
    """Write ``quantization_bound`` into the ``q_sparsity`` and ``cross_layer_corr`` records of ``claims``
    (:func:`..weights.tables.claims.battery_claims` of a model measured on dequantized weights:
    :func:`q_sparsity_bounds`, :func:`cross_layer_bounds`); a bound that does not hold the record's own value (its
    weights were not those bounded) is not recorded (``recorded`` False). Returns one row per scope
    (:data:`BOUND_COLUMNS`; ``unquantized lo`` / ``hi``: the range the evaluator reads, for the cross-layer
    records the high-probability one; ``worst-case lo`` / ``hi``: the cross-layer records' worst case, every
    rounding error aligned (the Q sparsity range is itself a worst case); ``weights open``: Q weights whose side
    of 0.1 the rounding leaves open; ``if end codes unbounded``: the Q sparsity range were a clamped end code's
    weight anywhere beyond it; ``typical sd``: the cross-layer value's typical move), empty for a model that was
    not quantized."""
    rows = []
    for cid, bounds in (("q_sparsity", q_sparsity_bounds(lm, store, cat) if claims.get("q_sparsity") else {}),
                        ("cross_layer_corr", cross_layer_bounds(lm, store, cat, summary)
                         if claims.get("cross_layer_corr") else {})):
        for scope, b in bounds.items():
            h = (claims.get(cid) or {}).get(scope)
            if not isinstance(h, dict):
                continue
            v = h.get("value")
            ok = isinstance(v, (int, float)) and b["lo"] - 1e-12 <= v <= b["hi"] + 1e-12
            if ok:
                h["quantization_bound"] = b
            ends, worst = b.get("if_end_codes_unbounded"), b.get("worst_case") or {}
            rows.append({"claim": cid, "scope": scope, "measured": v, "unquantized lo": b["lo"],
                         "unquantized hi": b["hi"], "recorded": ok, "worst-case lo": worst.get("lo"),
                         "worst-case hi": worst.get("hi"), "weights open": b.get("near"),
                         "if end codes unbounded": None if ends is None else f"[{ends['lo']:.4f}, {ends['hi']:.4f}]",
                         "typical sd": (b.get("typical") or {}).get("sd"), "rule": b["text"]})
    return pd.DataFrame(rows, columns=BOUND_COLUMNS)
