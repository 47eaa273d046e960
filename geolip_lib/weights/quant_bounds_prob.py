"""How far independent rounding errors can have moved an adjacent-layer cosine: a bound that holds with high
probability, beside the worst case of :func:`..quant_bounds.turn`.

The worst case lets every weight's rounding error line up against the other layer's weights; for a cosine near 0
over millions of weights that reaches ±0.3 or the whole of [-1, 1], though nothing makes the errors of one layer
follow the weights of the next. This module bounds the move under a stated model instead.

**The model.** Each weight's rounding error ``e_i = original_i − stored_i`` lies within its interval
``[−below_i, above_i]`` (:mod:`..quant_bounds`, from the stored scales), the errors of different weights are
independent, and each is **unbiased**: ``E[e_i] = 0`` given the stored value (round to nearest's standard model).
Nothing else is assumed of their law: an error may sit at the two ends of its interval (the unbiased law of
largest variance). The bounds hold with probability ``≥ 1 − delta`` over the errors under that model; they are
not worst cases.

**The decomposition** (exact). With one adjacent pair's stored matrices flattened to ``a`` and ``b`` (norms ``A``,
``B``, cosine ``c``) and their errors ``e_a``, ``e_b``, the unrounded cosine is ``(c + h) F`` with

* ``h = (b·e_a + a·e_b + e_a·e_b) / (A B)``: the errors against the other layer's weights (first order; the
  gradient of the cosine without its radial part) and against each other (the cross-layer products);
* ``F = f_a f_b``, ``f_a = A / ‖a + e_a‖ = (1 + 2 p_a + q_a)^(−1/2)``, ``p_a = a·e_a / A²``, ``q_a = ‖e_a‖² / A²``:
  how much the errors lengthened each layer.

Let ``F̄ = f̄_a f̄_b``, ``f̄_a = (1 + E q_a)^(−1/2)``: a number, unknown, but ``E q_a = Σ E e_i² / A²`` lies in
``[0, Q_a]``, ``Q_a = Σ below_i above_i / A²`` (an unbiased variable within ``[−l, u]`` has a variance of at most
``l u``), so ``F̄`` lies in ``[F⁻, 1]``, ``F⁻ = ((1 + Q_a)(1 + Q_b))^(−1/2)``. Then the cosine moved by

    ``c (F̄ − 1)``  (the **shrink**: towards 0, by at most ``|c| (1 − F⁻)``; never away from it)
    ``+ F̄ h``      (the **noise**: sums of independent mean-0 terms)
    ``+ (c + h)(F − F̄)``  (the **remainder**: ``F`` is concentrated around ``F̄``).

**The tail bounds.** Each random quantity below is a sum ``S`` of independent mean-0 terms (``Σ β_i e_i``, of
products of two layers' errors, or of squares less their means), bounded by the smaller of two inequalities at
the same ``delta``: **Hoeffding's** (term ``i`` within a range of width ``r_i``, for ``β_i e_i``
``r_i = |β_i| (below_i + above_i)``: ``|S| ≥ t = sqrt(Σ r_i² ln(2 / delta) / 2)`` with probability at most
``delta``) and **Bernstein's** (second moments summing to at most ``V``, for ``β_i e_i`` ``β_i² below_i above_i``,
the most an unbiased variable within ``[−l, u]`` can have; each term within ``±b``: ``t = b L / 3 +
sqrt((b L / 3)² + 2 V L)``, ``L = ln(2 / delta)``). For weights within symmetric intervals they agree up to
``b L / 3``; an end code's interval reaches one more range out on one side, and there Bernstein's variance is
several times below Hoeffding's range.

**The noise** of a pooled value (a mean of cosines over pairs and groups, weights ``α_k``) is
``Σ_k α_k F̄_k h_k``: its first-order part is one sum over every weight it pools (a layer's weights carry the
gradients of both pairs it sits in), bounded jointly, the coefficients' unknown ``F̄`` taken at whichever ends of
``[F⁻, 1]`` make the sums of squares largest. The cross-layer products ``e_a·e_b`` of pairs ``(0, 1), (2, 3), ...``
are independent of each other, as are those of ``(1, 2), (3, 4), ...``: two more sums (a product of errors within
``[−l, u]`` and ``[−l', u']`` has mean 0, a range of width at most ``(l + u)(l' + u')`` and a second moment of at
most ``l u l' u'``).

**The remainder** per pair: ``|f_a − f̄_a| ≤ (2 P_a + D_a) / 2 · (1 − 2 P_a)^(−3/2)`` by the mean value theorem
(``f(y) = (1 + y)^(−1/2)`` between ``y = 2 p_a + q_a ≥ −2 P_a`` and ``E q_a ≥ 0``), with ``|p_a| ≤ P_a`` and
``|q_a − E q_a| ≤ D_a`` by the tail bounds (``p_a``: terms ``a_i e_i / A²``; ``q_a``: terms ``e_i² / A²`` within
``[0, m_i² / A²]``, ``m_i`` the larger side, of variance at most ``m_i² below_i above_i / A⁴``);
``|F − F̄| ≤ |f_a − f̄_a| f_b⁺ + |f_b − f̄_b|`` with ``f⁺ = (1 − 2P)^(−1/2)``, and ``|h| ≤ H`` by the pair's own
sums. The remainder is of order ``(|c| + H)`` times the relative fluctuation of the norms: far below the noise for
matrices of many weights.

**Probability.** Every tail bound one reported number uses is an event; the number holds when all of
them do, so ``delta`` is split over them (the union bound): half over the noise's three sums, half evenly over the
remainder's events (per layer ``p`` and ``q``, per pair ``h``'s two sums).

The statistics are gathered in one pass over each group's layers in order (:class:`GroupStats`): for every sum
its ``Σ r_i²``, its variance bound and its largest term, a few floats per layer and per pair, with the previous
layer and two of its products kept in memory besides the current one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

#: the probability with which each recorded number may fail under the model (per cell, union over its events)
DELTA = 1e-6

MODEL_TEXT = ("rounding errors independent across weights and unbiased (E[e_i] = 0 given the stored value: round "
              "to nearest's standard model), each within its weight's interval (no other assumption on their law); "
              "a bound that holds with probability ≥ 1 − delta under that model (Hoeffding's and Bernstein's "
              "inequalities), not in every case")

#: the per-layer and per-pair statistics of :class:`GroupStats` (its :meth:`~GroupStats.record`); a sum is a
#: triple ``(Σ r_i², variance bound, largest term)`` (:func:`sums`)
LAYER_KEYS = ("norm", "p", "q", "sq_mean", "sq_worst", "z")
PAIR_KEYS = ("cos", "left", "right", "x")
_INF3 = (math.inf, math.inf, math.inf)
_ZERO3 = (0.0, 0.0, 0.0)


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta: expected a probability in (0, 1), got {delta!r}")


def hoeffding(sum_r2: float, delta: float, two_sided: bool = True) -> float:
    """The deviation ``t`` a sum of independent terms exceeds (from its mean) with probability at most ``delta``,
    term ``i`` within a range of width ``r_i`` (``sum_r2 = Σ r_i²``): ``sqrt(Σ r_i² ln(2 / delta) / 2)``, or
    ``ln(1 / delta)`` for one side (Hoeffding's inequality). ``inf`` for an infinite ``sum_r2``."""
    _check_delta(delta)
    if not sum_r2 >= 0:
        raise ValueError(f"sum_r2: expected a sum of squares (≥ 0), got {sum_r2!r}")
    if math.isinf(sum_r2):
        return math.inf
    return math.sqrt(sum_r2 * math.log((2.0 if two_sided else 1.0) / delta) / 2.0)


def bernstein(var: float, bmax: float, delta: float) -> float:
    """The deviation ``t`` a sum of independent mean-0 terms exceeds in magnitude with probability at most
    ``delta``, their second moments summing to at most ``var`` and each term within ``±bmax`` (Bernstein's
    inequality, ``P(|S| ≥ t) ≤ 2 exp(−t² / (2 (V + b t / 3)))``): ``b L / 3 + sqrt((b L / 3)² + 2 V L)``,
    ``L = ln(2 / delta)``. ``inf`` for an infinite ``var`` or ``bmax``."""
    _check_delta(delta)
    if not (var >= 0 and bmax >= 0):
        raise ValueError(f"var, bmax: expected a variance and a bound (≥ 0), got {var!r}, {bmax!r}")
    if math.isinf(var) or math.isinf(bmax):
        return math.inf
    third = bmax * math.log(2.0 / delta) / 3.0
    return third + math.sqrt(third ** 2 + 2.0 * var * math.log(2.0 / delta))


def tail(s: tuple, delta: float) -> float:
    """The smaller of :func:`hoeffding` and :func:`bernstein` for one sum ``s = (Σ r_i², variance bound,
    largest term)`` at ``delta`` (each holds; so does the smaller)."""
    return min(hoeffding(s[0], delta), bernstein(s[1], s[2], delta))


def sums(coef: np.ndarray, below: np.ndarray, above: np.ndarray) -> tuple[float, float, float]:
    """``(Σ r_i², V, b)`` of the sum ``Σ coef_i e_i``, ``e_i`` unbiased within ``[−below_i, above_i]``:
    ``r_i = |coef_i| (below_i + above_i)``, ``V = Σ coef_i² below_i above_i``, ``b = max |coef_i|
    max(below_i, above_i)``."""
    c2 = coef * coef
    w = below + above
    b = float(np.max(np.abs(coef) * np.maximum(below, above))) if coef.size else 0.0
    return float(c2 @ (w * w)), float(c2 @ (below * above)), b


def cos_gradients(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(c, g_a, g_b)``: the cosine of the flattened ``a`` and ``b`` and its gradients with respect to each,
    ``g_a = b / (A B) − c a / A²``, ``g_b = a / (A B) − c b / B²`` (float64). The module's noise keeps the first
    terms; the radial ones (``c a / A²``) are the first order of its shrink and remainder."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    na, nb = math.sqrt(float(a @ a)), math.sqrt(float(b @ b))
    c = float(a @ b) / (na * nb)
    return c, b / (na * nb) - c * a / na ** 2, a / (na * nb) - c * b / nb ** 2


def norm_factor_deviation(p: float, dq: float) -> tuple[float, float]:
    """``(d, f⁺)``: a bound on ``|(1 + 2p' + q)^(−1/2) − (1 + q̄)^(−1/2)|`` over ``|p'| ≤ p``, ``q, q̄ ≥ 0``,
    ``|q − q̄| ≤ dq`` (the mean value theorem: ``d = (2p + dq) / 2 · (1 − 2p)^(−3/2)``), and the most the factor
    itself can be, ``f⁺ = (1 − 2p)^(−1/2)``. ``(inf, inf)`` when ``2p ≥ 1`` (the norm may reach 0)."""
    if not 2.0 * p < 1.0 or not math.isfinite(dq):
        return math.inf, math.inf
    return (2.0 * p + dq) / 2.0 * (1.0 - 2.0 * p) ** -1.5, (1.0 - 2.0 * p) ** -0.5


def remainder_bound(c: float, h: float, pa: float, pb: float, dqa: float, dqb: float) -> float:
    """An exact bound on ``|(c + h') F − c − c (F̄ − 1) − F̄ h'|`` = ``|(c + h')(F − F̄)|`` over ``|h'| ≤ h``, given
    ``|p_a| ≤ pa``, ``|q_a − q̄_a| ≤ dqa`` (and of ``b``), ``F = f_a f_b`` as the module defines them:
    ``(|c| + h) (d_a f_b⁺ + d_b)`` (:func:`norm_factor_deviation`)."""
    da, _ = norm_factor_deviation(pa, dqa)
    db, fb = norm_factor_deviation(pb, dqb)
    if not math.isfinite(da + db + h):
        return math.inf
    return (abs(c) + h) * (da * fb + db)


def shrink_factor(qa: float, qb: float) -> float:
    """``F⁻ = ((1 + Q_a)(1 + Q_b))^(−1/2)``: the least ``F̄`` can be when ``E ‖e_a‖² / A² ≤ Q_a`` (and of
    ``b``); the unrounded cosine's expected part lies between ``c F⁻`` and ``c``."""
    return 1.0 / math.sqrt((1.0 + qa) * (1.0 + qb))


@dataclass
class GroupStats:
    """What the bound needs of one group of layers (one role, adjacent layers compared), gathered in one pass over
    its layers in order (:meth:`add` each layer's stored values and interval sides, then :meth:`finish`). A sum is
    a triple ``(Σ r_i², variance bound, largest term)`` (:func:`sums`).

    Per layer (``a`` its values, ``A`` their norm, ``l_i``, ``u_i`` its interval's sides, ``m_i`` the larger,
    ``w_i = l_i + u_i``): ``norm``; ``p``: the sum ``a·e / A²``; ``q``: the sum ``‖e‖² / A²`` (terms within
    ``[0, m_i² / A²]``, of variance at most ``m_i² l_i u_i / A⁴``); ``sq_mean`` ``Σ l_i u_i / A²`` (the most
    ``E ‖e‖² / A²`` can be); ``sq_worst`` ``Σ m_i² / A²``; ``z``: the cross terms of the two gradients its weights
    carry, ``(Σ a_prev,i a_next,i w_i², Σ a_prev,i a_next,i l_i u_i) / (A_prev A² A_next)`` (0 at the ends). Per
    adjacent pair ``(a, b)``: ``cos``; ``left``: the sum ``b·e_a / (A B)``; ``right``: ``a·e_b / (A B)``; ``x``:
    ``e_a·e_b / (A B)``. ``finite``: every interval bounded (a sub-block of step 0 leaves its weights anywhere: no
    bound) and no layer of zeros."""

    norm: list = field(default_factory=list)
    p: list = field(default_factory=list)
    q: list = field(default_factory=list)
    sq_mean: list = field(default_factory=list)
    sq_worst: list = field(default_factory=list)
    z: list = field(default_factory=list)
    cos: list = field(default_factory=list)
    left: list = field(default_factory=list)
    right: list = field(default_factory=list)
    x: list = field(default_factory=list)
    finite: bool = True
    _prev: Optional[tuple] = None  # the previous layer: (values, the products its sums use, the values before it)

    def add(self, values: np.ndarray, below: np.ndarray, above: np.ndarray) -> None:
        """The next layer: its stored ``values`` and how far ``below`` / ``above`` them the original can lie. Each
        elementwise product is formed once per layer and kept for the next one (a pass over a 1.5B-parameter model's
        cross-layer groups costs about what reading their roundings does)."""
        v = np.asarray(values, np.float64).ravel()
        lo, hi = np.asarray(below, np.float64).ravel(), np.asarray(above, np.float64).ravel()
        a2 = float(v @ v)
        # a layer of zeros has no direction (the battery reads its cosines as 0): no bound, as for an unbounded one
        self.finite = self.finite and a2 > 0 and bool(np.isfinite(lo).all() and np.isfinite(hi).all())
        self.norm.append(math.sqrt(a2))
        self.z.append((0.0, 0.0))
        cur = None
        if self.finite:
            w2, lu, m, v2, av = lo + hi, lo * hi, np.maximum(lo, hi), v * v, np.abs(v)
            w2 *= w2
            del lo, hi
            m2 = m * m
            self.p.append((float(v2 @ w2) / a2 ** 2, float(v2 @ lu) / a2 ** 2, float(np.max(av * m)) / a2))
            self.q.append((float(m2 @ m2) / a2 ** 2, float(m2 @ lu) / a2 ** 2, float(m2.max()) / a2))
            self.sq_mean.append(float(lu.sum()) / a2)
            self.sq_worst.append(float(m2.sum()) / a2)
            del m2
            cur = (v2, av, w2, lu, m)
        else:
            self.p.append(_INF3), self.q.append(_INF3), self.sq_mean.append(math.inf), self.sq_worst.append(math.inf)
        prev = self._prev
        if prev is not None:
            vp, arrays, before = prev
            ab = self.norm[-2] * self.norm[-1]
            self.cos.append(float(vp @ v) / ab if ab > 0 else 0.0)
            if self.finite:
                vp2, avp, w2p, lup, mp = arrays
                ab2 = ab * ab
                self.left.append((float(v2 @ w2p) / ab2, float(v2 @ lup) / ab2, float(np.max(av * mp)) / ab))
                self.right.append((float(vp2 @ w2) / ab2, float(vp2 @ lu) / ab2, float(np.max(avp * m)) / ab))
                self.x.append((float(w2p @ w2) / ab2, float(lup @ lu) / ab2, float(np.max(mp * m)) / ab))
                if before is not None:  # the previous layer sits between its own previous one and this one
                    outer = before * v
                    d = self.norm[-3] * self.norm[-2] ** 2 * self.norm[-1]
                    self.z[-2] = (float(outer @ w2p) / d, float(outer @ lup) / d)
            else:
                self.left.append(_INF3), self.right.append(_INF3), self.x.append(_INF3)
        self._prev = (v, cur, None if prev is None else prev[0])

    def finish(self) -> "GroupStats":
        """Drops the layers kept in memory; the statistics are complete."""
        self._prev = None
        return self

    def record(self) -> dict:
        """The statistics as plain numbers (what :func:`..battery.cross_layer.cross_layer_turns` returns)."""
        return {k: getattr(self, k) for k in (*LAYER_KEYS, *PAIR_KEYS, "finite")}


def _layer_bounds(s: dict, i: int, delta: float) -> tuple[float, float]:
    """``(P, D)`` of layer ``i``: bounds on ``|a·e| / A²`` and on ``|‖e‖² − E ‖e‖²| / A²``, each failing with
    probability at most ``delta`` (and never above the worst case: ``|p| ≤ sqrt(q)``, ``‖e‖² ≤ Σ m_i²``)."""
    return min(math.sqrt(s["sq_worst"][i]), tail(s["p"][i], delta)), min(s["sq_worst"][i], tail(s["q"][i], delta))


def _pair_h(s: dict, k: int, delta: float) -> float:
    """A bound on ``|h|`` of pair ``k`` from its two sums (first order, products), each at ``delta``."""
    x = min(math.sqrt(s["sq_worst"][k] * s["sq_worst"][k + 1]), tail(s["x"][k], delta))
    return tail(_add(s["left"][k], s["right"][k]), delta) + x


def _shrinks(s: dict) -> list[tuple[float, float]]:
    """Per pair, ``(lo, hi)`` of the shrink ``c (F̄ − 1)``: between ``c (F⁻ − 1)`` and 0."""
    out = []
    for k, c in enumerate(s["cos"]):
        d = c * (shrink_factor(s["sq_mean"][k], s["sq_mean"][k + 1]) - 1.0)
        out.append((min(0.0, d), max(0.0, d)))
    return out


def _joint_linear(s: dict) -> tuple[float, float, float]:
    """The sum (:func:`sums`' triple) of the first-order noise of the SUM of a group's cosines, each pair's ``F̄``
    at whichever end of ``[F⁻, 1]`` makes each of ``Σ r_i²`` and the variance largest (a layer's weights carry the
    gradients of its two pairs: ``F_1² right + 2 F_1 F_2 z + F_2² left``, a convex form whose largest value over
    the box lies at a corner); the largest term at ``F̄ = 1`` (its most)."""
    fm = [shrink_factor(s["sq_mean"][k], s["sq_mean"][k + 1]) for k in range(len(s["cos"]))]
    tot = [0.0, 0.0]
    bmax = 0.0
    for i in range(len(s["norm"])):
        x = s["right"][i - 1] if i > 0 else _ZERO3  # from the pair on its left
        y = s["left"][i] if i < len(s["cos"]) else _ZERO3  # from the pair on its right
        f1 = (fm[i - 1], 1.0) if i > 0 else (0.0,)
        f2 = (fm[i], 1.0) if i < len(s["cos"]) else (0.0,)
        for j in (0, 1):
            tot[j] += max(a * a * x[j] + 2 * a * b * s["z"][i][j] + b * b * y[j] for a in f1 for b in f2)
        bmax = max(bmax, x[2] + y[2])
    return tot[0], tot[1], bmax


def remainder_events(s: dict) -> int:
    """How many tail events the remainders of one group's pairs use: per layer ``p`` and ``q``, per pair the two
    sums of ``h``."""
    return 2 * len(s["norm"]) + 2 * len(s["cos"])


def _scaled(t: tuple, alpha: float) -> tuple:
    return alpha ** 2 * t[0], alpha ** 2 * t[1], alpha * t[2]


def _add(a: tuple, b: tuple) -> tuple:
    """One sum of two over different weights: ``Σ r²`` and variances add, the largest term is the larger."""
    return a[0] + b[0], a[1] + b[1], max(a[2], b[2])


def pooled_bound(groups: Sequence[tuple[dict, float]], delta: float = DELTA) -> dict:
    """Where a weighted sum of the groups' mean adjacent-layer cosines (``groups``: ``(stats, weight)``, stats a
    :meth:`GroupStats.record`; a scope's signed mean: weight 1 / number of groups) lay before rounding, relative
    to its stored value, with probability ``≥ 1 − delta`` under the module's model: ``{"lo", "hi"}`` (offsets:
    the unrounded value lies in [value + lo, value + hi]), ``"shrink"`` ``(lo, hi)`` (the norms' part, towards 0),
    ``"noise"`` (``linear`` + ``products``, the joint sums, ``delta / 6`` each), ``"remainder"`` (every pair's,
    its ``events`` sharing ``delta / 2``), ``"events"``, ``"per_pair"`` (each pair's cosine alone, at ``delta``:
    the largest move either way). The groups' weights must be disjoint matrices."""
    if not groups:
        raise ValueError("groups: expected at least one group of adjacent layers")
    if not all(s["finite"] for s, _ in groups):  # a weight that may lie anywhere: no bound
        inf = math.inf
        return {"lo": -inf, "hi": inf, "shrink": (-inf, inf), "noise": inf, "linear": inf, "products": inf,
                "remainder": inf, "events": 0, "per_pair": [inf for s, _ in groups for _ in s["cos"]]}
    events = sum(remainder_events(s) for s, _ in groups)
    d_rem = delta / 2 / events
    lin, prods = _ZERO3, [_ZERO3, _ZERO3]  # the products of pairs (0, 1), (2, 3), ... and of (1, 2), (3, 4), ...
    shrink_lo = shrink_hi = rem = 0.0
    for s, wt in groups:
        alpha = abs(wt) / len(s["cos"])
        lin = _add(lin, _scaled(_joint_linear(s), alpha))
        for k, xk in enumerate(s["x"]):
            prods[k % 2] = _add(prods[k % 2], _scaled(xk, alpha))
        for lo, hi in _shrinks(s):
            shrink_lo, shrink_hi = shrink_lo + alpha * lo, shrink_hi + alpha * hi
        pd = [_layer_bounds(s, i, d_rem) for i in range(len(s["norm"]))]
        for k, c in enumerate(s["cos"]):
            (pa, da), (pb, db) = pd[k], pd[k + 1]
            rem += alpha * remainder_bound(c, _pair_h(s, k, d_rem), pa, pb, da, db)
    linear = tail(lin, delta / 6)
    products = tail(prods[0], delta / 6) + tail(prods[1], delta / 6)
    spread = linear + products + rem
    return {"lo": shrink_lo - spread, "hi": shrink_hi + spread, "shrink": (shrink_lo, shrink_hi),
            "noise": linear + products, "linear": linear, "products": products, "remainder": rem,
            "events": events + 3, "per_pair": [b for s, _ in groups for b in pair_bounds(s, delta)]}


def pair_bounds(s: dict, delta: float = DELTA) -> list[float]:
    """Each adjacent pair's own bound on how far its cosine moved, either way, at probability ``≥ 1 − delta``:
    its shrink, its ``h`` (two sums at ``delta / 4`` each) and its remainder (``p``, ``q`` of each layer at
    ``delta / 8`` each)."""
    if not s["finite"]:
        return [math.inf] * len(s["cos"])
    out = []
    for k, (lo, hi) in enumerate(_shrinks(s)):
        (pa, da), (pb, db) = _layer_bounds(s, k, delta / 8), _layer_bounds(s, k + 1, delta / 8)
        h = _pair_h(s, k, delta / 4)
        out.append(max(-lo, hi) + h + remainder_bound(s["cos"][k], h, pa, pb, da, db))
    return out


def group_bound(s: dict, delta: float = DELTA) -> dict:
    """:func:`pooled_bound` of one group's mean adjacent-layer cosine."""
    return pooled_bound([(s, 1.0)], delta)


__all__ = ["DELTA", "GroupStats", "LAYER_KEYS", "MODEL_TEXT", "PAIR_KEYS", "bernstein", "cos_gradients",
           "group_bound", "hoeffding", "norm_factor_deviation", "pair_bounds", "pooled_bound", "remainder_bound",
           "remainder_events", "shrink_factor", "sums", "tail"]
