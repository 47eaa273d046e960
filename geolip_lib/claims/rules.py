"""Verdicts, the seed's printed numbers read at their precision, and the rules that decide.

Five verdicts, in every table and figure:

* **held** — the rule is satisfied, and the value is separated from every null that
  bears on the claim;
* **held, but the null gives it too** — the rule is satisfied, and so is at least one
  null (or the value is not separated from it): not a learned property;
* **not held** — the value (exact) or its whole interval contradicts the rule;
* **not held, nor by the null** — the rule fails, and a null that bears on the claim fails it too
  (a random network of this size or shape cannot reach the rule either): the model's size or shape,
  not its training, sets the verdict, so it says nothing against the claim;
* **undecided** — the interval straddles the rule, or the test lacks the power to decide;
  the reason says what would decide it (a sample about k times larger, the smallest effect
  the test detects, or the null that was not recorded).

Two statuses are not verdicts: **not tested on this profile** (no job, or the quantity does
not apply to the model) and **forced by shape** (the weight shapes fix the value whatever the
weights hold; kept out of verdicts).

A seed value written as a string is read at the precision it is printed with: ``"93.7 %"``
is [93.65, 93.75) %, ``"0.500"`` is [0.4995, 0.5005), ``"~0.000"`` is |x| < 0.0005, and a band
``["0.20", "0.23"]`` is [0.195, 0.235). A number (not a string) is taken as exact.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Optional

from ..metrics.intervals import decimals_for

__all__ = ["HELD", "HELD_NULL", "NOT_HELD", "NOT_HELD_NULL", "UNDECIDED", "NOT_TESTED", "FORCED", "VERDICTS", "STATUSES",
           "VERDICT_CLASS", "NULL_NAMES", "Printed", "Rule", "RULE_KINDS", "display_null"]

HELD = "held"
HELD_NULL = "held, but the null gives it too"
NOT_HELD = "not held"
NOT_HELD_NULL = "not held, nor by the null"
UNDECIDED = "undecided"
NOT_TESTED = "not tested on this profile"
FORCED = "forced by shape"
VERDICTS = (HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, UNDECIDED)
STATUSES = VERDICTS + (NOT_TESTED, FORCED)
#: CSS class of each status (the report and the figure colour by it)
VERDICT_CLASS = {HELD: "v-held", HELD_NULL: "v-held-null", NOT_HELD: "v-not-held", NOT_HELD_NULL: "v-not-held-null",
                 UNDECIDED: "v-undecided",
                 NOT_TESTED: "v-not-testable", FORCED: "v-forced"}

#: null names as recorded by the notebooks (several spellings are in use) -> display name
NULL_NAMES = {"gaussian": "gaussian", "random_init": "random init", "random init": "random init",
              "sphere": "unit sphere", "unit sphere": "unit sphere", "unit_sphere": "unit sphere"}


def display_null(name: str) -> str:
    """The display name of a null as recorded (``random_init`` -> ``random init``)."""
    return NULL_NAMES.get(name, name)


@dataclass(frozen=True)
class Printed:
    """A number as the seed printed it: its value and the half-width of its last digit.

    ``Printed.parse("93.7 %")`` -> value 0.937, half 0.0005 (a percentage is a fraction);
    ``"~0.000"`` -> value 0, half 0.0005, ``approx`` (read as |x| < half); a number that is
    not a string is exact (half 0).
    """

    text: str
    value: float
    half: float
    approx: bool = False
    lo: float = 0.0  # value - half and value + half, computed in decimal (0.937 - 0.0005 is 0.9365, not 0.93650...01)
    hi: float = 0.0

    @classmethod
    def parse(cls, x: Any) -> "Printed":
        if isinstance(x, Printed):
            return x
        if isinstance(x, bool) or not isinstance(x, (int, float, str)):
            raise ValueError(f"expected a number or a printed number such as '93.7 %', got {x!r}")
        if not isinstance(x, str):
            try:
                f = float(x)
            except OverflowError:  # an integer of 400 digits
                f = math.inf
            if not math.isfinite(f):
                raise ValueError(f"not a finite number: {_short(x)} is beyond the range of a float (±{_FMAX:.4g})")
            return cls(f"{x:g}", f, 0.0, lo=f, hi=f)
        s = x.strip()
        approx = s.startswith("~")
        body = s.lstrip("~").strip()
        pct = body.endswith("%")
        body = body.rstrip("%").strip().replace("−", "-").lstrip("+")
        try:
            d = Decimal(body)
        except InvalidOperation:
            raise ValueError(f"not a printed number: {x!r} (write it as the seed printed it, e.g. '93.7 %', "
                             "'0.500', '~0.000')") from None
        if not d.is_finite():
            raise ValueError(f"not a finite printed number: {x!r}")
        scale = Decimal("0.01") if pct else Decimal(1)
        try:
            half = Decimal(5).scaleb(d.as_tuple().exponent - 1) * scale
            v = d * scale
            out = cls(s, float(v), float(half), approx, lo=float(v - half), hi=float(v + half))
        except ArithmeticError:  # '1e9999999': past even Decimal's exponent range
            out = cls(s, math.inf, 0.0)
        if not all(math.isfinite(t) for t in (out.value, out.lo, out.hi)):  # '1e400' was read as infinity
            raise ValueError(f"not a finite printed number: {_short(x)} is beyond the range of a float "
                             f"(±{_FMAX:.4g})")
        return out

    def reading(self, scale: float = 1.0, unit: str = "") -> str:
        """How the printed number is read, e.g. ``"93.7 %" means [93.65, 93.75) %``."""
        if not self.half:
            return f"{self.value * scale:g}{_u(unit)} (exact)"
        if self.approx:
            return f"'{self.text}' means |x| < {self.half * scale:g}{_u(unit)}"
        return f"'{self.text}' means [{_g(self.lo * scale)}, {_g(self.hi * scale)}){_u(unit)}"


_FMAX = sys.float_info.max


def _short(x: Any) -> str:
    """``repr(x)``, at most 40 characters (an integer of 400 digits is named, not printed)."""
    r = repr(x)
    return r if len(r) <= 40 else f"{r[:20]}...({len(r)} characters)"


def _g(x: float) -> str:
    return f"{x:.10g}"


def _u(unit: str) -> str:
    return f" {unit}" if unit else ""


RULE_KINDS = ("band", "equals", "at_least", "at_most", "all_within", "contains")


@dataclass(frozen=True)
class Rule:
    """What "the claim holds" means for one measured value.

    kind:
      ``band``       the value lies in [lo, hi] (printed bounds widen by half their last digit);
      ``equals``     the value equals a printed number at its precision (a number: exactly);
      ``at_least`` / ``at_most``  the value lies at or above ``lo`` / at or below ``hi``;
      ``all_within`` every per-layer value lies in [lo, hi] (``per_layer`` of the record);
      ``contains``   the interval contains ``target`` (a location: a breakpoint, a lift).
    ``lo_open`` / ``hi_open``: whether a bound is excluded (a printed number's upper bound is:
    [93.65, 93.75); an approximate zero excludes both).
    """

    kind: str
    lo: Optional[float] = None
    hi: Optional[float] = None
    target: Optional[float] = None
    text: str = ""
    lo_open: bool = False
    hi_open: bool = False

    def __post_init__(self):
        if self.kind not in RULE_KINDS:
            raise ValueError(f"Rule.kind: unknown kind {self.kind!r} (known: {', '.join(RULE_KINDS)})")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, kind: str, arg: Any, text: str = "", scale: float = 1.0, unit: str = "") -> "Rule":
        """A rule from its kind and argument as written in a claims file (see params/README.md)."""
        if kind in ("band", "all_within") and isinstance(arg, (list, tuple)):
            if len(arg) != 2:
                raise ValueError(f"{kind}: expected [lo, hi], got {arg!r}")
            a, b = Printed.parse(arg[0]), Printed.parse(arg[1])
            if a.value > b.value:
                raise ValueError(f"{kind}: lo {arg[0]!r} is above hi {arg[1]!r}")
            reading = (f"[{a.text}, {b.text}] read at its printed precision: [{_g(a.lo * scale)}, "
                       f"{_g(b.hi * scale)}){_u(unit)}") if (a.half or b.half) else \
                f"[{_g(a.value * scale)}, {_g(b.value * scale)}]{_u(unit)}"
            return cls(kind, a.lo, b.hi, text=text or f"{'every layer' if kind == 'all_within' else 'the value'} "
                       f"in {reading}", hi_open=bool(b.half))
        if kind in ("band", "equals", "all_within"):
            p = Printed.parse(arg)
            who = "every layer" if kind == "all_within" else "the value"
            if not p.half:
                return cls("band" if kind == "equals" else kind, p.value, p.value, target=p.value,
                           text=text or f"{who} equals {_g(p.value * scale)}{_u(unit)} (exact)")
            return cls("band" if kind == "equals" else kind, p.lo, p.hi, target=p.value,
                       text=text or f"{who} prints as the seed's: {p.reading(scale, unit)}",
                       lo_open=p.approx, hi_open=True)
        if kind == "at_least":
            p = Printed.parse(arg)
            return cls(kind, p.lo, None, text=text or (f"at least {p.text} (read at its printed precision: "
                                                       f"≥ {_g(p.lo * scale)}{_u(unit)})" if p.half else
                                                       f"at least {_g(p.value * scale)}{_u(unit)}"))
        if kind == "at_most":
            p = Printed.parse(arg)
            return cls(kind, None, p.hi, text=text or (f"at most {p.text} (read at its printed precision: "
                                                       f"< {_g(p.hi * scale)}{_u(unit)})" if p.half else
                                                       f"at most {_g(p.value * scale)}{_u(unit)}"),
                       hi_open=bool(p.half))
        if kind == "contains":
            p = Printed.parse(arg)
            return cls(kind, target=p.value, text=text or f"the interval contains {p.text}")
        raise ValueError(f"unknown rule kind {kind!r} (known: {', '.join(RULE_KINDS)})")

    # ------------------------------------------------------------------ the region
    def _lo(self) -> float:
        return -math.inf if self.lo is None else self.lo

    def _hi(self) -> float:
        return math.inf if self.hi is None else self.hi

    def inside(self, x: float) -> bool:
        """Whether the point ``x`` lies in the rule's region (``contains``: equals the target)."""
        if self.kind == "contains":
            return x == self.target
        lo, hi = self._lo(), self._hi()
        return (x > lo if self.lo_open else x >= lo) and (x < hi if self.hi_open else x <= hi)

    def _span(self, scale: float = 1.0) -> str:
        lo, hi = self._lo() * scale, self._hi() * scale
        if self.lo is None:
            return f"{'<' if self.hi_open else '≤'} {_g(hi)}"
        if self.hi is None:
            return f"{'>' if self.lo_open else '≥'} {_g(lo)}"
        return f"{'(' if self.lo_open else '['}{_g(lo)}, {_g(hi)}{')' if self.hi_open else ']'}"

    # ------------------------------------------------------------------ judging
    def judge(self, value: Any, lo: Optional[float] = None, hi: Optional[float] = None, *, exact: bool = False,
              per_layer: Optional[list] = None, scale: float = 1.0, unit: str = "") -> tuple[str, str]:
        """(verdict, reason) of one value against the rule, before the nulls are folded in.

        ``exact``: the value is computed on the whole object (no interval; compared as it is).
        Otherwise ``[lo, hi]`` is its interval: inside the region -> held, disjoint -> not held,
        straddling an edge -> undecided with the sample size that would decide it. ``scale`` and
        ``unit`` only change how numbers print (100, "%": percentages).
        """
        u = _u(unit)
        if self.kind == "all_within":
            vals = [float(v) for v in (per_layer or []) if v is not None]
            if not vals:
                return UNDECIDED, "no per-layer values recorded: record them to decide"
            out = [i for i, v in enumerate(vals) if not self.inside(v)]
            if not out:
                return HELD, f"all {len(vals)} layers in {self._span(scale)}{u}"
            return NOT_HELD, (f"{len(out)} of {len(vals)} layers outside {self._span(scale)}{u} "
                              f"(range {min(vals) * scale:.4f}–{max(vals) * scale:.4f})")
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            return UNDECIDED, "no value recorded"
        v = float(value)
        if exact or (lo is not None and lo == hi == v and self.kind != "contains"):
            if self.kind == "contains":
                return UNDECIDED, f"exact value {_g(v * scale)}{u} but the rule asks for an interval"
            if self.inside(v):
                return HELD, f"exact {v * scale:.6g}{u} lies in {self._span(scale)}{u}"
            return NOT_HELD, f"exact {v * scale:.6g}{u} lies outside {self._span(scale)}{u}"
        if lo is None or hi is None:
            return UNDECIDED, "no interval recorded (and the value is not marked exact): record one to decide"
        d = decimals_for((hi - lo) / 2 * scale, v * scale)  # the precision the interval supports
        iv = f"[{lo * scale:.{d}f}, {hi * scale:.{d}f}]{u}"
        if self.kind == "contains":
            t = f"{_g(self.target * scale)}{u}"
            if lo <= self.target <= hi:
                return HELD, f"the interval {iv} contains {t}"
            return NOT_HELD, f"the interval {iv} excludes {t}"
        if self.inside(lo) and self.inside(hi):
            return HELD, f"the interval {iv} lies in {self._span(scale)}{u}"
        if hi < self._lo() or lo > self._hi() or (self.hi_open and lo >= self._hi()) \
                or (self.lo_open and hi <= self._lo()):
            return NOT_HELD, f"the interval {iv} lies outside {self._span(scale)}{u}"
        return UNDECIDED, (f"the interval {iv} straddles an edge of {self._span(scale)}{u}: "
                           + self._what_decides(v, lo, hi))

    def _what_decides(self, v: float, lo: float, hi: float) -> str:
        """The sample size that would decide a straddling interval (half-width ~ 1/sqrt(n))."""
        edges = [e for e in (self.lo, self.hi) if e is not None]
        d = min(abs(v - e) for e in edges)
        half = max(v - lo, hi - v)
        if d == 0 or not math.isfinite(half) or half <= 0:
            return "the value sits on the edge: no sample size decides it"
        k = (half / d) ** 2
        return (f"a sample about {math.ceil(k)}× larger would decide it (the interval's half-width "
                f"{half:.3g} must fall below the value's distance {d:.3g} to the edge)")

    def satisfied_by(self, value: Any, interval: Optional[tuple] = None) -> bool:
        """Whether a null satisfies the rule: its point value lies in the region (``contains``:
        its interval, when it has one, contains the target)."""
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            return False
        if self.kind == "contains":
            if interval and interval[0] is not None:
                return interval[0] <= self.target <= interval[1]
            return float(value) == self.target
        return self.inside(float(value))
