"""The high-probability bound on how far rounding moved an adjacent-layer cosine (geolip_lib.weights.
quant_bounds_prob) against simulation and exact recomputation.

Layers are rounded (Q4_1 by ``gguf.quants``; Q2_K / Q6_K blocks written byte by byte as in test_quant_bounds), and
originals are drawn under the bound's model: independent, unbiased errors within each weight's interval, at the
interval's two ends (the unbiased law of largest variance there). Over many draws no cosine moves past its bound,
and at a loose delta the exceedance rate stays within it; the second-order remainder bound holds against the exact
cosine; the pooled scope bounds hold the unrounded pooled values; closed forms for a tiny case; the statistics
gathered in one pass equal their brute-force sums.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import quantize

from geolip_lib.weights import quant_bounds as QB
from geolip_lib.weights import quant_bounds_prob as QP
from geolip_lib.weights.tables import claims as TC
from tests.unit.weights.test_quant_bounds import pack, random_kquant

pytestmark = pytest.mark.unit


def _cos(a, b) -> float:
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def _stats(rs) -> dict:
    s = QP.GroupStats()
    for r in rs:
        s.add(r.values, r.below, r.above)
    return s.finish().record()


def _unbiased_draw(r, rng) -> np.ndarray:
    """Originals under the model: each weight's error at one end of its interval, ``above`` with probability
    below / (below + above), ``-below`` otherwise (mean 0), independent across weights."""
    lo, hi = r.below.ravel().astype(np.float64), r.above.ravel().astype(np.float64)
    up = rng.random(lo.size) < lo / (lo + hi)
    return r.values.ravel().astype(np.float64) + np.where(up, hi, -lo)


def _q4_1_layers(rng, n_layers=4, shape=(16, 256), corr=0.3):
    base = rng.standard_normal(shape)
    xs = [(corr * base + rng.standard_normal(shape) * rng.uniform(0.5, 1.5)).astype(np.float32) * 0.05
          for _ in range(n_layers)]
    return xs, [QB.stored_rounding(quantize(x, GGMLQuantizationType.Q4_1), "Q4_1", x.shape) for x in xs]


def _kquant_layers(qtype, rng, n_layers=4, n_blocks=16):
    """Layers of ``qtype`` super-blocks: Q4_K as a quantizer writes Gaussian weights (codes bell-shaped around the
    middle, each sub-block's minimum near minus half its range, few weights on the end codes), Q6_K with codes
    drawn uniformly (every code as likely, the end codes' outward reach on 2 in 64 weights)."""
    rs = []
    for _ in range(n_layers):
        if qtype == "Q4_K":
            raws = []
            for _ in range(n_blocks):
                d = rng.uniform(2e-4, 1e-3)
                sc = rng.integers(20, 64, 8)
                dmin = d * 63 * 7.5 / 63
                m = np.rint(sc * 7.5 * d / dmin).astype(np.int64)
                L = np.clip(np.rint(7.5 + 2.5 * rng.standard_normal(256)), 0, 15).astype(np.int64)
                raws.append(pack("Q4_K", d, L, sc, dmin, m))
            raw = np.stack(raws)
        else:
            raw, *_ = random_kquant(qtype, rng, n_blocks, zero_steps=False)
        rs.append(QB.stored_rounding(raw, qtype, (n_blocks, 256)))
    return rs


# ------------------------------------------------------------------ closed forms
def test_closed_form_of_a_tiny_case_with_equal_steps():
    """a = (1, 0, 0, 0), b = (0, 1, 0, 0), every weight within half a step s: c = 0 (no shrink), the first-order
    noise is e_a[1] + e_b[0], two terms of range s: Σ r² = 2 s² and Hoeffding's t = sqrt(Σ r² ln(2/δ) / 2)
    = s sqrt(ln(2/δ)); Bernstein's, with the variance s²/4 of each and terms within ±s/2, is larger here (equal
    steps: the two agree but for its b L / 3), so the bound is Hoeffding's; the product e_a·e_b has four terms of
    range s²."""
    s, delta = 0.01, 1e-6
    a, b = np.array([1.0, 0, 0, 0]), np.array([0, 1.0, 0, 0])
    half = np.full(4, s / 2)
    st = QP.GroupStats()
    st.add(a, half, half)
    st.add(b, half, half)
    rec = st.finish().record()
    assert rec["cos"] == [0.0] and rec["z"] == [(0.0, 0.0), (0.0, 0.0)]
    assert rec["left"] == [pytest.approx((s ** 2, s ** 2 / 4, s / 2))]  # Σ r², Σ variances, largest term
    assert rec["right"] == [pytest.approx((s ** 2, s ** 2 / 4, s / 2))]
    assert QP.hoeffding(2 * s ** 2, delta) == pytest.approx(s * math.sqrt(math.log(2 / delta)))
    assert QP.hoeffding(2 * s ** 2, delta, two_sided=False) == pytest.approx(s * math.sqrt(math.log(1 / delta)))
    L = math.log(2 / delta)
    assert QP.bernstein(s ** 2 / 2, s / 2, delta) == pytest.approx(s * L / 6 + math.sqrt((s * L / 6) ** 2 + s ** 2 * L))
    assert QP.tail((2 * s ** 2, s ** 2 / 2, s / 2), delta) == QP.hoeffding(2 * s ** 2, delta)
    assert rec["p"] == [pytest.approx((s ** 2, s ** 2 / 4, s / 2))] * 2  # a·e / A²: one weight of a
    assert rec["sq_mean"] == [pytest.approx(s ** 2)] * 2  # Σ (s/2)(s/2) over 4 weights
    assert rec["q"] == [pytest.approx((s ** 4 / 4, s ** 4 / 4, s ** 2 / 4))] * 2  # 4 terms within [0, s²/4]
    assert rec["sq_worst"] == [pytest.approx(s ** 2)] * 2
    assert rec["x"] == [pytest.approx((4 * s ** 4, s ** 4 / 4, s ** 2 / 4))]
    b1 = QP.group_bound(rec, delta)
    assert b1["shrink"] == (0.0, 0.0)
    assert b1["linear"] == pytest.approx(s * math.sqrt(math.log(12 / delta)))  # Σ r² = 2 s² at delta / 6
    assert b1["products"] == pytest.approx(QP.tail((4 * s ** 4, s ** 4 / 4, s ** 2 / 4), delta / 6))  # one sum
    assert 0 < b1["remainder"] < 10 * s ** 2 and b1["events"] == 3 + 2 * 2 + 2 * 1
    assert b1["hi"] == -b1["lo"] == pytest.approx(b1["noise"] + b1["remainder"])
    # the exact largest move of this case (each of the two terms at ±s/2, second order included) lies within
    worst = max(abs(_cos(a + np.array([0, x, 0, 0]), b + np.array([y, 0, 0, 0]))) for x in (-s / 2, s / 2)
                for y in (-s / 2, s / 2))
    assert worst <= b1["hi"] and worst <= QP.pair_bounds(rec, delta)[0]


def test_bernstein_is_the_smaller_for_an_end_code_s_one_sided_reach():
    """A K-quant end code's interval [−s, 16 s] (one step in, one more range out): an unbiased error there has a
    variance of at most 16 s², Hoeffding's range 17 s counts as 72 s²; over many such weights Bernstein's bound is
    sqrt(2 V) / sqrt(Σ r² / 2) = sqrt(4 · 16 / 289) of Hoeffding's (to within its b L / 3)."""
    n, s, delta = 100_000, 1.0, 1e-6
    lo, hi = np.full(n, s), np.full(n, 16 * s)
    t = QP.sums(np.full(n, 1.0 / n), lo, hi)
    assert t == pytest.approx((289 * s ** 2 / n, 16 * s ** 2 / n, 16 * s / n))
    h, b = QP.hoeffding(t[0], delta), QP.bernstein(t[1], t[2], delta)
    assert b < h and b == pytest.approx(h * math.sqrt(4 * 16 / 289), rel=0.02) and QP.tail(t, delta) == b


def test_a_cosine_shrinks_towards_0_by_at_most_its_norms_growth():
    """The errors lengthen each layer by at most their variance, Σ below·above: a cosine c moves towards 0 by at
    most |c| (1 − ((1 + Q_a)(1 + Q_b))^(−1/2)), never away from it."""
    assert QP.shrink_factor(0.0, 0.0) == 1.0
    assert QP.shrink_factor(0.21, 0.0) == pytest.approx(1 / 1.1)
    rng = np.random.default_rng(10)
    a = rng.standard_normal(5000)
    b = 0.5 * a + rng.standard_normal(5000)
    st = QP.GroupStats()
    for v in (a, b):
        st.add(v, np.full(5000, 0.1), np.full(5000, 0.1))
    rec = st.finish().record()
    lo, hi = QP.group_bound(rec)["shrink"]
    c = rec["cos"][0]
    assert hi == 0.0 and lo == pytest.approx(c * (QP.shrink_factor(*rec["sq_mean"]) - 1.0)) and lo < 0
    neg = QP.GroupStats()
    for v in (a, -b):
        neg.add(v, np.full(5000, 0.1), np.full(5000, 0.1))
    assert QP.group_bound(neg.finish().record())["shrink"] == (0.0, pytest.approx(-lo))


def test_streamed_statistics_equal_their_brute_force_sums_and_the_gradient_is_the_cosine_s():
    rng = np.random.default_rng(11)
    vs = [rng.standard_normal(40) + 0.5 for _ in range(4)]
    los, his = [rng.uniform(0.01, 0.1, 40) for _ in vs], [rng.uniform(0.01, 0.1, 40) for _ in vs]
    st = QP.GroupStats()
    for v, lo, hi in zip(vs, los, his):
        st.add(v, lo, hi)
    rec = st.finish().record()
    ws = [lo + hi for lo, hi in zip(los, his)]
    lus = [lo * hi for lo, hi in zip(los, his)]
    ms = [np.maximum(lo, hi) for lo, hi in zip(los, his)]
    norms = [np.linalg.norm(v) for v in vs]

    def triple(coef, i):
        return pytest.approx((np.sum((coef * ws[i]) ** 2), np.sum(coef ** 2 * lus[i]), np.max(np.abs(coef) * ms[i])))

    for k in range(3):
        c, ga, gb = QP.cos_gradients(vs[k], vs[k + 1])
        ab = norms[k] * norms[k + 1]
        assert c == pytest.approx(_cos(vs[k], vs[k + 1])) == pytest.approx(rec["cos"][k])
        assert rec["left"][k] == triple(vs[k + 1] / ab, k)
        assert rec["right"][k] == triple(vs[k] / ab, k + 1)
        assert rec["x"][k] == pytest.approx((np.sum((ws[k] * ws[k + 1]) ** 2) / ab ** 2,
                                             np.sum(lus[k] * lus[k + 1]) / ab ** 2, np.max(ms[k] * ms[k + 1]) / ab))
        for i in (0, 17):  # the gradient against central differences
            h = np.zeros(40)
            h[i] = 1e-6
            assert ga[i] == pytest.approx((_cos(vs[k] + h, vs[k + 1]) - _cos(vs[k] - h, vs[k + 1])) / 2e-6, rel=1e-5)
            assert gb[i] == pytest.approx((_cos(vs[k], vs[k + 1] + h) - _cos(vs[k], vs[k + 1] - h)) / 2e-6, rel=1e-5)
        # the noise keeps the gradient's part along the other layer; the radial part is c a / A²
        np.testing.assert_allclose(ga + c * vs[k] / norms[k] ** 2, vs[k + 1] / ab)
    for i in (1, 2):
        d = norms[i - 1] * norms[i] ** 2 * norms[i + 1]
        assert rec["z"][i] == pytest.approx((np.sum(vs[i - 1] * vs[i + 1] * ws[i] ** 2) / d,
                                             np.sum(vs[i - 1] * vs[i + 1] * lus[i]) / d))
    assert rec["z"][0] == rec["z"][3] == (0.0, 0.0)
    assert rec["p"][1] == triple(vs[1] / norms[1] ** 2, 1)
    n4 = norms[2] ** 4
    assert rec["q"][2] == pytest.approx((np.sum(ms[2] ** 4) / n4, np.sum(ms[2] ** 2 * lus[2]) / n4,
                                         np.max(ms[2] ** 2) / norms[2] ** 2))
    assert rec["sq_mean"][2] == pytest.approx(np.sum(lus[2]) / norms[2] ** 2)
    assert rec["sq_worst"][3] == pytest.approx(np.sum(ms[3] ** 2) / norms[3] ** 2)
    # the joint first-order sum of the group's cosines: each layer's coefficient the other layers' weights of
    # its two pairs, each pair's F̄ at the end of [F⁻, 1] that makes the sum largest (brute force over every choice)
    fm = [QP.shrink_factor(rec["sq_mean"][k], rec["sq_mean"][k + 1]) for k in range(3)]
    best_r2 = best_var = 0.0
    for fs in np.array(np.meshgrid(*[(f, 1.0) for f in fm])).T.reshape(-1, 3):
        coef = [fs[0] * vs[1] / (norms[0] * norms[1]),
                fs[0] * vs[0] / (norms[0] * norms[1]) + fs[1] * vs[2] / (norms[1] * norms[2]),
                fs[1] * vs[1] / (norms[1] * norms[2]) + fs[2] * vs[3] / (norms[2] * norms[3]),
                fs[2] * vs[2] / (norms[2] * norms[3])]
        best_r2 = max(best_r2, sum(np.sum((g * w) ** 2) for g, w in zip(coef, ws)))
        best_var = max(best_var, sum(np.sum(g ** 2 * lu) for g, lu in zip(coef, lus)))
    r2, var, _ = QP._joint_linear(rec)
    assert best_r2 <= r2 * (1 + 1e-12) and best_var <= var * (1 + 1e-12)  # per layer at its own corner: ≥
    assert r2 <= 1.5 * best_r2 and var <= 1.5 * best_var


# ------------------------------------------------------------------ the remainder
def test_the_remainder_bound_holds_against_the_exact_cosine():
    """cos(a + e_a, b + e_b) = c + c (F̄ − 1) + F̄ h + remainder, for any F̄ = ((1 + q̄_a)(1 + q̄_b))^(−1/2) with
    q̄ ≥ 0: plugged with the actual |h|, |a·e| / A² and |‖e‖² / A² − q̄| of each draw, the remainder's bound holds,
    for errors up to 40 % of the weights' norm, random and aligned with a or b."""
    rng = np.random.default_rng(12)
    worst_ratio = 0.0
    for trial in range(3000):
        n = int(rng.integers(2, 50))
        a, b = rng.standard_normal(n), rng.standard_normal(n) + rng.uniform(-1, 1) * rng.standard_normal(n)
        if trial % 3 == 1:
            b = b + rng.uniform(-2, 2) * a  # cosines near ±1 too
        scale = rng.uniform(0.001, 0.4)
        ea, eb = rng.standard_normal(n), rng.standard_normal(n)
        if trial % 4 == 2:
            ea, eb = rng.choice([-1, 1]) * a + 0.1 * ea, rng.choice([-1, 1]) * b + 0.1 * eb
        ea *= scale * np.linalg.norm(a) / np.linalg.norm(ea)
        eb *= scale * rng.uniform(0, 1) * np.linalg.norm(b) / np.linalg.norm(eb)
        A, B = np.linalg.norm(a), np.linalg.norm(b)
        c = _cos(a, b)
        h = float(b @ ea + a @ eb + ea @ eb) / (A * B)
        qa, qb = float(ea @ ea) / A ** 2, float(eb @ eb) / B ** 2
        qma, qmb = qa * rng.uniform(0, 2), qb * rng.uniform(0, 2)  # the errors' expected squares: unknown
        fbar = QP.shrink_factor(qma, qmb)
        exact = _cos(a + ea, b + eb) - c - c * (fbar - 1) - fbar * h
        bound = QP.remainder_bound(c, abs(h), abs(a @ ea) / A ** 2, abs(b @ eb) / B ** 2, abs(qa - qma),
                                   abs(qb - qmb))
        assert abs(exact) <= bound * (1 + 1e-9) + 1e-15, (trial, exact, bound)
        worst_ratio = max(worst_ratio, abs(exact) / bound if bound else 0.0)
    assert worst_ratio > 0.05  # a bound, not a vacuous one
    assert QP.remainder_bound(0.1, 0.0, 0.5, 0.0, 0.3, 0.0) == math.inf  # the norm may reach 0
    assert QP.norm_factor_deviation(0.0, 0.0) == (0.0, 1.0)


def test_the_remainder_is_second_order_in_the_errors():
    """With c = 0 the remainder is |h| times the norms' fluctuation: halving every error (h and p by 2, the
    fluctuation of ‖e‖² by 4) quarters it to within the fluctuation's mix of orders."""
    r1 = QP.remainder_bound(0.0, 2e-3, 1e-3, 1e-3, 4e-4, 4e-4)
    r2 = QP.remainder_bound(0.0, 1e-3, 5e-4, 5e-4, 1e-4, 1e-4)
    assert 2.0 < r1 / r2 < 4.5 and r1 < 1e-5


# ------------------------------------------------------------------ simulation: the bound holds under its model
@pytest.mark.parametrize("kind", ("Q4_1", "Q4_K", "Q6_K"))
def test_no_cosine_moves_past_its_bound_under_independent_unbiased_errors(kind):
    rng = np.random.default_rng(13)
    rs = _q4_1_layers(rng)[1] if kind == "Q4_1" else _kquant_layers(kind, rng)
    rec = _stats(rs)
    assert rec["finite"]
    vals = [r.values.ravel().astype(np.float64) for r in rs]
    pair = QP.pair_bounds(rec)
    group = QP.group_bound(rec)
    loose_delta = 0.05
    loose_pair, loose_group = QP.pair_bounds(rec, loose_delta), QP.group_bound(rec, loose_delta)
    trials, over_pair, over_group, largest = 300, 0, 0, 0.0
    for _ in range(trials):
        xs = [_unbiased_draw(r, rng) for r in rs]
        moves = [_cos(xs[k], xs[k + 1]) - _cos(vals[k], vals[k + 1]) for k in range(len(rs) - 1)]
        assert all(abs(m) <= b for m, b in zip(moves, pair)), (moves, pair)
        assert group["lo"] <= np.mean(moves) <= group["hi"]
        over_pair += any(abs(m) > b for m, b in zip(moves, loose_pair))
        over_group += not loose_group["lo"] <= np.mean(moves) <= loose_group["hi"]
        largest = max(largest, max(abs(m) / b for m, b in zip(moves, pair)))
    assert over_pair / trials <= loose_delta * len(pair) and over_group / trials <= loose_delta
    assert largest > 0.05  # the draws reach a fair share of the bound: it is not vacuous
    assert group["hi"] < np.mean(pair)  # the mean over pairs is bounded jointly, tighter than its pairs


def test_real_round_to_nearest_q4_1_stays_within_the_bound():
    """Originals rounded by gguf's own Q4_1: the unrounded cosines (the truth) within the bound of every pair."""
    rng = np.random.default_rng(14)
    for _ in range(10):
        xs, rs = _q4_1_layers(rng, n_layers=3)
        rec = _stats(rs)
        for k, b in enumerate(QP.pair_bounds(rec)):
            true = _cos(xs[k].ravel().astype(np.float64), xs[k + 1].ravel().astype(np.float64))
            assert abs(true - rec["cos"][k]) <= b


# ------------------------------------------------------------------ pooled as the claims records pool
ROLES = {"decoder/self/q": 0.02, "decoder/self/k": -0.01, "decoder/self/v": 0.0, "decoder/self/o": 0.005,
         "decoder/-/mlp_in": 0.03}


def _summary(vectors) -> dict:
    cl = {k: {"layers": [0, 1, 2, 3], "adj_mean": float(np.mean([_cos(v[i], v[i + 1]) for i in range(3)]))}
          for k, v in vectors.items()}
    attn = [d["adj_mean"] for k, d in cl.items() if k.rsplit("/", 1)[-1] in ("q", "k", "v", "o")]
    return {"cross_layer": cl, "cross_layer_attn_adj_mean": float(np.mean(attn))}


def _pooled(s) -> dict:
    return {"attention": s["cross_layer_attn_adj_mean"], "attention|abs": TC.abs_cross_layer(s)[0],
            "seed:q,k,qkv,mlp_up": TC.seed_cross_layer(s)[0], "seed:q,k,qkv|each": TC.seed_each_cross_layer(s)[0]}


def _groups(rng, draw=None):
    """Groups of four Q4_1 layers: ``(originals, dequantized, turns)``; ``draw``: originals drawn under the model
    around the dequantized values instead of the ones rounded."""
    orig, deq, turns = {}, {}, {}
    for key, corr in ROLES.items():
        base = rng.standard_normal((8, 128))
        xs = [(base * corr + rng.standard_normal((8, 128)) * (1 + 0.5 * rng.random())).astype(np.float32)
              for _ in range(4)]
        rs = [QB.stored_rounding(quantize(x, GGMLQuantizationType.Q4_1), "Q4_1", x.shape) for x in xs]
        deq[key] = [r.values.ravel().astype(np.float64) for r in rs]
        orig[key] = [x.ravel().astype(np.float64) for x in xs] if draw is None else [draw(r, rng) for r in rs]
        tt = [QB.turn(r) for r in rs]
        turns[key] = {"layers": [0, 1, 2, 3], "theta": [t["theta"] for t in tt], "tau": [t["tau"] for t in tt],
                      "prob": _stats(rs), "names": [(f"{key}.{i}", None) for i in range(4)],
                      "types": ["Q4_1"], "text": ["Q4_1: half a step"], "assumes": []}
    return orig, deq, turns


@pytest.mark.parametrize("draw", (None, _unbiased_draw), ids=("rounded by gguf", "drawn under the model"))
def test_pooled_scope_bounds_hold_the_unrounded_pooled_values(draw):
    rng = np.random.default_rng(15)
    for _ in range(6):
        orig, deq, turns = _groups(rng, draw)
        s_deq, s_orig = _summary(deq), _summary(orig)
        bounds = TC.cross_layer_quantization_bounds(s_deq, turns)
        truth, measured = _pooled(s_orig), _pooled(s_deq)
        assert set(bounds) == set(truth)
        for scope, b in bounds.items():
            assert b["lo"] <= truth[scope] <= b["hi"], (scope, b, truth[scope])
            assert b["lo"] <= measured[scope] <= b["hi"]
            w = b["worst_case"]
            assert w["lo"] <= b["lo"] <= b["hi"] <= w["hi"] and b["hi"] - b["lo"] < (w["hi"] - w["lo"]) / 3
            p = b["probability"]
            assert p["delta"] == QP.DELTA and p["noise"] <= p["linear"] + p["products"] + 1e-15
            assert p["remainder"] < p["linear"] and p["per_pair_max"] > 0 and p["shrink"][0] <= 0 <= p["shrink"][1]
            assert "probability ≥ 1 − 1e-06" in b["text"] and "Hoeffding" in b["text"] and "[" in b["text"]
            assert "unbiased" in b["assumes"] and b["types"] == ["Q4_1"]
        # the signed means pool their groups jointly: tighter than each group's own bound
        joint = bounds["attention"]["probability"]["noise"]
        own = [QP.group_bound(turns[k]["prob"])["noise"] for k in ROLES if not k.endswith("mlp_in")]
        assert joint < np.mean(own)
        assert bounds["attention|abs"]["probability"]["events"] == sum(
            QP.group_bound(turns[k]["prob"], QP.DELTA / 4)["events"] for k in ROLES if not k.endswith("mlp_in"))


def test_shared_unbounded_or_foreign_layers_fall_back_to_the_worst_case():
    rng = np.random.default_rng(16)
    orig, deq, turns = _groups(rng)
    s_deq = _summary(deq)
    turns["decoder/self/q"]["names"][1] = turns["decoder/self/q"]["names"][0]  # one tensor in two layers
    b = TC.cross_layer_quantization_bounds(s_deq, turns)
    assert b["attention"]["probability"] is None and b["attention|abs"]["probability"] is None
    assert (b["attention"]["lo"], b["attention"]["hi"]) == (b["attention"]["worst_case"]["lo"],
                                                           b["attention"]["worst_case"]["hi"])
    assert "no high-probability bound" in b["attention"]["text"]
    assert b["seed:q,k,qkv,mlp_up"]["probability"] is None  # the seed's pooling holds the Q group too
    turns["decoder/self/q"]["names"][1] = ("decoder/self/q.0", (0, 4))  # rows of a whole tensor used again
    assert TC.cross_layer_quantization_bounds(s_deq, turns)["attention"]["probability"] is None
    orig, deq, turns = _groups(rng)
    s_deq = _summary(deq)
    turns["decoder/-/mlp_in"]["prob"]["finite"] = False  # a sub-block of step 0: its weights anywhere
    b = TC.cross_layer_quantization_bounds(s_deq, turns)
    assert b["seed:q,k,qkv,mlp_up"]["probability"] is None and b["attention"]["probability"] is not None
    s_deq["cross_layer"]["decoder/self/k"]["adj_mean"] += 1e-3  # statistics of other matrices than the summary's
    assert TC.cross_layer_quantization_bounds(s_deq, turns)["attention"]["probability"] is None
    del turns["decoder/self/v"]["prob"]  # turns without the statistics (an older caller): the worst case
    assert TC.cross_layer_quantization_bounds(s_deq, turns)["attention|abs"]["probability"] is None


def test_an_interval_of_infinite_width_has_no_bound_and_bad_input_is_refused():
    st = QP.GroupStats()
    st.add(np.ones(8), np.full(8, np.inf), np.full(8, 0.1))
    st.add(np.arange(8.0) + 1, np.full(8, 0.1), np.full(8, 0.1))
    rec = st.finish().record()
    assert not rec["finite"] and math.isinf(rec["left"][0][0]) and math.isinf(QP.pair_bounds(rec)[0])
    assert QP.group_bound(rec)["hi"] == math.inf
    zero = QP.GroupStats()  # a layer of zeros has no direction: no bound either
    zero.add(np.zeros(4), np.ones(4), np.ones(4))
    zero.add(np.ones(4), np.ones(4), np.ones(4))
    assert zero.finish().record()["cos"] == [0.0] and not zero.finite and math.isinf(QP.pair_bounds(zero.record())[0])
    with pytest.raises(ValueError, match="^delta: "):
        QP.hoeffding(1.0, 0.0)
    with pytest.raises(ValueError, match="^sum_r2: "):
        QP.hoeffding(-1.0, 0.1)
    with pytest.raises(ValueError, match="^var, bmax: "):
        QP.bernstein(-1.0, 0.0, 0.1)
    with pytest.raises(ValueError, match="^groups: "):
        QP.pooled_bound([])
