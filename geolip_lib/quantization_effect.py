"""How far quantization moves the headlines (issue 27 §1): a model's fp32 jobs beside the jobs of
its simulated-quantized twin (``quantize: q4_1`` in a params file, :mod:`geolip_lib.models.quantize`).

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


__all__ = ["COLUMNS", "NOTEBOOKS", "pairs", "table"]


def threshold_bound(w, threshold: float = 0.1, scheme: str = "q4_1") -> dict:
    """How far the rounding can have moved the fraction of weights with ``|w| < threshold``, from a
    dequantized matrix alone (issue 37).

    Q4_1 stores each block of 32 weights as ``d·q + m`` with ``d = (max - min) / 15`` and codes 0
    and 15 at the block's minimum and maximum, so the block's step is read back from the
    dequantized block itself, and the original weight lay within ``d / 2`` of the stored one. Only
    weights within half a step of ±threshold can have crossed it: the unquantized fraction lies in
    ``[fraction - near / n, fraction + near / n]``.

    Returns ``{"fraction", "near", "n", "lo", "hi"}`` (``lo``/``hi``: the bound, clipped to [0, 1]);
    ``quantization_bound`` of a claims record takes ``lo`` and ``hi``.
    """
    a = np.asarray(w, dtype=np.float64)
    k = quantize.block_size(scheme)
    if a.ndim != 2 or a.shape[-1] % k:
        raise ValueError(f"w: expected a 2-D matrix whose rows divide into blocks of {k} ({scheme}), got shape "
                         f"{a.shape}")
    b = a.reshape(-1, k)
    half = ((b.max(1) - b.min(1)) / 15 / 2)[:, None]
    n = b.size
    below = int((np.abs(b) < threshold).sum())
    near = int((np.abs(np.abs(b) - threshold) <= half).sum())
    f = below / n
    return {"fraction": f, "near": near, "n": n, "lo": max(0.0, f - near / n), "hi": min(1.0, f + near / n)}


def q4_1_rounded(lm) -> bool:
    """Whether every Q weight of ``lm`` was stored as Q4_1 (a GGUF whose ``attn_q`` tensors are all Q4_1, or the
    simulated ``quantize: q4_1`` copy): only then does :func:`threshold_bound` read each block's step back from the
    dequantized values (K-quants scale their sub-blocks differently: no bound is claimed for them)."""
    q = getattr(lm, "quantization", None) or {}
    if q.get("simulated"):
        return str(q.get("scheme", "")).lower() == "q4_1"
    types = [t for name, t in (q.get("types") or {}).items() if "attn_q" in name and "norm" not in name]
    return bool(types) and set(types) == {"Q4_1"}


def q_sparsity_bounds(lm, store, cat, threshold: float = 0.1) -> dict:
    """Per ``<stack>/<attn>`` scope, the range the unquantized Q sparsity (``|w| < threshold`` over every Q weight)
    lies in, from :func:`threshold_bound` of each Q matrix summed over the scope (issue 37: a verdict the rounding
    cannot flip is kept). ``{}`` unless :func:`q4_1_rounded`. Each value: ``{"lo", "hi", "near", "n", "scheme"}``."""
    if not q4_1_rounded(lm):
        return {}
    acc: dict = {}
    for b in cat.attention_blocks():
        if b.q is None:
            continue
        w = store.get(b.q).reshape(-1, b.q.shape[-1] if b.q.shape else 32)
        r = threshold_bound(w.numpy(), threshold)
        a = acc.setdefault(f"{b.stack}/{b.attn}", {"below": 0, "near": 0, "n": 0})
        a["below"] += round(r["fraction"] * r["n"])
        a["near"] += r["near"]
        a["n"] += r["n"]
    return {scope: {"lo": max(0.0, (a["below"] - a["near"]) / a["n"]), "hi": min(1.0, (a["below"] + a["near"]) / a["n"]),
                    "near": a["near"], "n": a["n"], "scheme": "q4_1"} for scope, a in acc.items() if a["n"]}
