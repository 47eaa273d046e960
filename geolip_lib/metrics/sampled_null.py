"""Random-init nulls from a sample of each seed's layers, and closed forms.

At initialisation the layers of a network are independent and identically distributed (the
init of a layer does not depend on its index, up to a known per-layer scale), so a statistic
that averages ``n_full`` i.i.d. items (matrices, layers, layer pairs) of a whole model can be
drawn from ``n_sampled < n_full`` of them per init seed. Over ``S`` seeds with per-seed values
``v_k`` (each the mean over ``n_sampled`` items, variance ``σ²/n_sampled``), the whole model's
value is a new draw with variance ``σ²/n_full = s²·f`` (``f = n_sampled / n_full``, ``s`` the
std of the ``v_k``), and the estimate of its mean ``v̄`` has variance ``s²/S``. The 95 %
prediction interval of one whole model at random init is therefore

    v̄ ± t_{S−1} · s · sqrt(f + 1/S)

(:func:`null_over_sampled_seeds`); with ``f = 1`` (every item) it is exactly
:func:`~geolip_lib.metrics.intervals.null_over_seeds`. Its width matches the full computation's
(5 whole models, ``t_4·s_full·sqrt(1.2)``) to within the sampling error of ``s``; the test
``tests/unit/metrics/test_sampled_null.py`` checks coverage and width by simulation.

Closed form: under a normal init N(0, σ²), ``P(|w| < t) = erf(t / (σ√2))`` exactly, and the
fraction of ``n`` weights below ``t`` is binomial(n, p) / n (:func:`normal_fraction_below`).

Kept beside :mod:`~geolip_lib.metrics.intervals` (which H2 owns) as a separate module: the
interval needs the sampled fraction ``f``, which no interval there takes.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from scipy import special, stats

from .intervals import LEVEL, Interval, cut_below, logit_of_proportions, null_over_seeds

__all__ = ["null_over_sampled_seeds", "normal_fraction_below", "SampledNull", "KINDS"]

#: what a null quantity averages: every layer, adjacent layer pairs, or the first layer only
KINDS = ("layers", "pairs", "first")


def null_over_sampled_seeds(values: Any, fraction: float = 1.0, *, level: float = LEVEL, what: str = "",
                            proportion: bool = False, lower: Optional[float] = None) -> dict:
    """A null as a distribution over its seeds when each seed measured ``fraction`` of the
    model's i.i.d. items: ``{"value": mean, "interval", "per_seed", "sampled_fraction"}``.

    The interval is the prediction interval of one *whole* model at random init,
    ``mean ± t_{n−1}·s·sqrt(fraction + 1/n)`` (module docstring). ``fraction`` 1 gives the
    interval of :func:`~geolip_lib.metrics.intervals.null_over_seeds`.

    ``proportion=True`` (a fraction in [0, 1]): the same interval taken on the logit scale and
    mapped back, so it stays inside [0, 1], as ``null_over_seeds(proportion=True)`` does. ``lower``: the
    least the quantity can be (0 for a magnitude): the interval is cut there (:func:`cut_below`).
    """
    f = float(fraction)
    if not (0.0 < f <= 1.0):
        raise ValueError(f"fraction: expected 0 < fraction ≤ 1 (items sampled / items in the model), got {fraction!r}")
    if f == 1.0:  # every item: exactly the full null's distribution over its seeds
        return {**null_over_seeds(values, level=level, what=what, proportion=proportion, lower=lower),
                "sampled_fraction": 1.0}
    v = np.asarray(values, dtype=np.float64).ravel()
    fin = v[np.isfinite(v)]
    if proportion and ((fin < 0) | (fin > 1)).any():
        raise ValueError(f"values: proportion=True needs values in [0, 1], got {fin.min():g}..{fin.max():g}")
    n = len(fin)
    label = (f"95 % prediction interval of one model's value, t over {n} seeds"
             + (f" of {f:.3g} of its items each" if f < 1 else ""))
    if what:
        label = f"{label} ({what})"
    if n < 2:
        iv = Interval(float("nan"), float("nan"), f"no interval: {n} seed(s) (at least 2 needed)", level, "over_seeds")
    else:
        z = logit_of_proportions(fin) if proportion else fin  # as null_over_seeds: exact 0 and 1 moved in
        m, s = float(z.mean()), float(z.std(ddof=1))
        h = float(stats.t.ppf(0.5 + level / 2, n - 1)) * s * math.sqrt(f + 1 / n)
        lo, hi = m - h, m + h
        if proportion:
            lo, hi = float(1 / (1 + np.exp(-lo))), float(1 / (1 + np.exp(-hi)))
            lo, hi = min(lo, float(fin.mean())), max(hi, float(fin.mean()))  # the plain mean stays inside
            label = label.replace("t over", "t on the logit scale over")
        iv = cut_below(Interval(lo, hi, label, level, "over_seeds"), lower, fin)
    return {"value": float(fin.mean()) if n else None, "interval": iv,
            "per_seed": [float(x) if math.isfinite(x) else None for x in v], "sampled_fraction": f}


def normal_fraction_below(t: float, std: float, n: Optional[int] = None, *, level: float = LEVEL) -> dict:
    """The fraction of N(0, std²) weights with ``|w| < t``: ``p = erf(t / (std·√2))`` (exact).

    With ``n`` (the number of weights measured) also the spread of the measured fraction, the
    central ``level`` interval of binomial(n, p) / n: ``{"value": p, "interval": Interval |
    None, "std": sqrt(p(1−p)/n) | None}``.
    """
    if not (t > 0 and std > 0 and math.isfinite(t) and math.isfinite(std)):
        raise ValueError(f"t, std: expected finite positive numbers, got t={t!r}, std={std!r}")
    p = float(special.erf(t / (std * math.sqrt(2.0))))
    if n is None:
        return {"value": p, "interval": None, "std": None}
    if int(n) < 1:
        raise ValueError(f"n: expected at least one weight, got {n!r}")
    a = (1 - level) / 2
    lo, hi = (float(stats.binom.ppf(q, int(n), p)) / int(n) for q in (a, 1 - a))
    return {"value": p, "interval": Interval(min(lo, p), max(hi, p), f"binomial({int(n)}, erf(t/σ√2)) spread",
                                             level, "over_seeds"),
            "std": math.sqrt(p * (1 - p) / int(n))}


class SampledNull(list):
    """Per-seed null records (a list, as the full null's list of per-seed summaries) that
    each measured a sample of the model's layers, with the fraction each kind of quantity
    saw: ``fractions = {"layers": m/L, "pairs": (m−1)/(L−1), "first": 1.0}`` and
    ``drivers`` (seeds, layers sampled per seed, layers in the model) for metrics.json."""

    def __init__(self, items=(), *, fractions: Optional[dict] = None, drivers: Optional[dict] = None):
        super().__init__(items)
        self.fractions = {k: 1.0 for k in KINDS} | dict(fractions or {})
        self.drivers = dict(drivers or {})

    def distribution(self, values: Any, kind: str = "layers", what: str = "", proportion: bool = False,
                     lower: Optional[float] = None) -> dict:
        """:func:`null_over_sampled_seeds` of per-seed ``values`` of a quantity of ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
        return null_over_sampled_seeds(values, self.fractions[kind], what=what or f"{len(self)} random-init seeds",
                                       proportion=proportion, lower=lower)
