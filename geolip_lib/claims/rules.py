"""Verdicts and the rules that decide them from a measured value's interval."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["HELD", "NOT_HELD", "NOT_TESTABLE", "VERDICTS", "NULL_NAMES", "Rule"]

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable on this profile"
VERDICTS = (HELD, NOT_HELD, NOT_TESTABLE)

#: null names as recorded by the notebooks (both spellings are in use) -> display name
NULL_NAMES = {"gaussian": "gaussian", "random_init": "random init", "random init": "random init",
              "sphere": "unit sphere", "unit sphere": "unit sphere", "unit_sphere": "unit sphere"}


@dataclass(frozen=True)
class Rule:
    """What "the claim holds" means for one measured value.

    kind:
      ``band``      the interval lies inside [lo, hi] (held), outside it (not held);
      ``at_least``  the interval lies at or above ``lo`` (held), below it (not held);
      ``contains``  the interval contains ``target`` (held), excludes it (not held);
      ``all_within`` every per-layer value lies inside [lo, hi] (exact counts; no interval);
      ``equals``    the exact value equals ``target``.
    A ``band`` / ``at_least`` interval that straddles an edge cannot decide at this
    sample size: not testable, with the reason.
    """

    kind: str
    lo: Optional[float] = None
    hi: Optional[float] = None
    target: Optional[float] = None
    text: str = ""

    def __post_init__(self):
        if self.kind not in ("band", "at_least", "contains", "all_within", "equals"):
            raise ValueError(f"Rule.kind: unknown kind {self.kind!r}")

    def judge(self, value: Any, lo: Optional[float], hi: Optional[float],
              per_layer: Optional[list] = None, scale: float = 1.0) -> tuple[str, str]:
        """(verdict, reason) for a value with interval [lo, hi] (None: no interval); ``scale``
        only changes how the reason prints numbers (100: percentages)."""
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return NOT_TESTABLE, "no value recorded"
        if self.kind == "all_within":
            vals = [float(v) for v in (per_layer or []) if v is not None]
            if not vals:
                return NOT_TESTABLE, "no per-layer values recorded"
            out = [i for i, v in enumerate(vals) if not self.lo <= v <= self.hi]
            if not out:
                return HELD, f"all {len(vals)} layers within [{self.lo:g}, {self.hi:g}]"
            return NOT_HELD, (f"{len(out)} of {len(vals)} layers outside [{self.lo:g}, {self.hi:g}] "
                              f"(range {min(vals):.4f}–{max(vals):.4f})")
        if self.kind == "equals":
            if float(value) == float(self.target):
                return HELD, f"equals {self.target:g}"
            return NOT_HELD, f"{value:g} ≠ {self.target:g}"
        if lo is None or hi is None:
            return NOT_TESTABLE, "no interval (too few items to resample)"
        iv = f"[{lo * scale:.4g}, {hi * scale:.4g}]" + (" %" if scale == 100 else "")
        t = f"{self.target * scale:g}{' %' if scale == 100 else ''}" if self.target is not None else ""
        if self.kind == "contains":
            if lo <= self.target <= hi:
                return HELD, f"the interval {iv} contains {t}"
            return NOT_HELD, f"the interval {iv} excludes {t}"
        a = self.lo
        b = self.hi if self.kind == "band" else math.inf
        if a <= lo and hi <= b:
            return HELD, f"the interval {iv} lies within {self._span()}"
        if hi < a or lo > b:
            return NOT_HELD, f"the interval {iv} lies outside {self._span()}"
        return NOT_TESTABLE, f"the interval {iv} straddles an edge of {self._span()}: a larger sample decides"

    def satisfied_by(self, value: Any) -> bool:
        """Whether a point value (a null's) satisfies the rule."""
        if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        if self.kind in ("band", "all_within"):
            return self.lo <= value <= self.hi
        if self.kind == "at_least":
            return value >= self.lo
        if self.kind == "contains":
            return False  # a location / lift: a null does not "explain" it
        return float(value) == float(self.target)

    def _span(self) -> str:
        return f"[{self.lo:g}, {self.hi:g}]" if self.kind == "band" else f"≥ {self.lo:g}"


