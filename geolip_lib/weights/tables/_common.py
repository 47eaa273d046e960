"""Shared helpers of the weight-battery tables: summary look-ups, constants, small numerics."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ...metrics import intervals as iv
from ...checkpoints import STACKS


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


def _ratio(num: np.ndarray, den: np.ndarray):
    """``Σ w·num / Σ w·den`` for each row of resampling counts ``W`` (a ratio of sums)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)

    def stat(W: np.ndarray) -> np.ndarray:
        return (W @ num) / (W @ den)

    return stat


def _note(note: Optional[str], interval: Any) -> Optional[str]:
    """``note``, plus a sentence when the bootstrap had too few items to form an interval."""
    if isinstance(interval, iv.Interval) and not interval.finite:
        extra = f"No interval: too few items for a bootstrap ({interval.method.rsplit(' of ', 1)[-1]})."
        return f"{note} {extra}" if note else extra
    return note


def _scope_order(scope: str) -> tuple:
    """Sort key of ``"<stack>/<attn>"``: the catalog's stack order, self before cross."""
    stack, _, attn = scope.partition("/")
    return (STACKS.index(stack) if stack in STACKS else len(STACKS), {"self": 0, "cross": 1}.get(attn, 2), scope)


def _lohi(interval: Optional[iv.Interval]) -> tuple:
    if interval is None or not interval.finite:
        return NAN, NAN
    return interval.lo, interval.hi


def _qk_scopes(summary: Optional[Mapping]) -> list:
    return sorted((summary or {}).get("qk") or {}, key=_scope_order)


def _mean(x: Sequence) -> Optional[float]:
    x = [float(v) for v in x if v is not None and np.isfinite(v)]
    return float(np.mean(x)) if x else None


def _layer_items(values: Optional[Sequence]) -> Optional[dict]:
    """Per-layer values as bootstrap items of their mean (``den`` = 1)."""
    if not values:
        return None
    return {"num": [float(v) for v in values], "den": [1.0] * len(values), "items": "layers"}
