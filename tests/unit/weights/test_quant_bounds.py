"""Each weight's rounding interval (geolip_lib.weights.quant_bounds) against brute force.

Round-to-nearest blocks (Q4_0 ... Q8_0) are written by ``gguf.quants.quantize`` from known originals. K-quant
blocks are written here byte by byte (d, dmin as fp16, the packed scales, the codes) with known scales and
codes, read by ``gguf.quants.dequantize``, and originals are drawn that round to them (the nearest code at the
stored scale, a clamped weight beyond its end code): every original must lie in its weight's interval, and the
fraction |w| < t of the originals in [lo, hi], for many draws. Then the one-step, half-step and clamped-end rules,
a closed form, the cross-layer bound against the cosine of the unrounded vectors, and CTranslate2's int8 / int16.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import Q4_K as GQ4_K, dequantize, quantize

from geolip_lib.weights import quant_bounds as QB
from geolip_lib.weights.tables import claims as TC

pytestmark = pytest.mark.unit

LEGACY = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")
KQUANTS = ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")


# ------------------------------------------------------------------ K-quant blocks written byte by byte
def _f16(x) -> np.ndarray:
    return np.array([x], dtype=np.float16).view(np.uint8)


def _k_scales_6bit(sc, m) -> np.ndarray:
    """Q4_K / Q5_K: 8 six-bit scales and mins packed in 12 bytes (ggml's quantize_row_q4_K_ref)."""
    s = np.zeros(12, np.uint8)
    for j in range(8):
        ls, lm = int(sc[j]), int(m[j])
        if j < 4:
            s[j], s[j + 4] = ls, lm
        else:
            s[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
            s[j - 4] |= (ls >> 4) << 6
            s[j] |= (lm >> 4) << 6
    return s


def pack(qtype: str, d, L, sc, dmin=0.0, m=None) -> np.ndarray:
    """One super-block of 256 weights: codes ``L`` (0 .. levels-1), sub-block scales ``sc`` (and mins ``m``), as
    ggml writes them. Value of code L: Q4_K / Q5_K / Q2_K d·sc·L - dmin·m; Q6_K d·sc·(L-32);
    Q3_K d·(sc-32)·(L-4)."""
    L = np.asarray(L, dtype=np.int64)
    if qtype in ("Q4_K", "Q5_K"):
        qs = np.zeros(128, np.uint8)
        qh = np.zeros(32, np.uint8)
        for c in range(4):
            for l in range(32):
                qs[32 * c + l] = (L[64 * c + l] & 0xF) | ((L[64 * c + 32 + l] & 0xF) << 4)
        for j in range(8):
            qh |= ((L[32 * j: 32 * j + 32] >> 4) << j).astype(np.uint8)
        head = np.concatenate([_f16(d), _f16(dmin), _k_scales_6bit(sc, m)])
        return np.concatenate([head, qs] if qtype == "Q4_K" else [head, qh, qs])
    if qtype == "Q6_K":
        ql, qh = np.zeros(128, np.uint8), np.zeros(64, np.uint8)
        for h in range(2):
            for l in range(32):
                b = 128 * h + l
                ql[64 * h + l] = (L[b] & 0xF) | ((L[b + 64] & 0xF) << 4)
                ql[64 * h + 32 + l] = (L[b + 32] & 0xF) | ((L[b + 96] & 0xF) << 4)
                qh[32 * h + l] = ((L[b] >> 4) | ((L[b + 32] >> 4) << 2) | ((L[b + 64] >> 4) << 4)
                                  | ((L[b + 96] >> 4) << 6))
        return np.concatenate([ql, qh, np.asarray(sc, np.int8).view(np.uint8), _f16(d)])
    if qtype == "Q3_K":
        hmask, qs, s = np.zeros(32, np.uint8), np.zeros(64, np.uint8), np.zeros(12, np.uint8)
        for j in range(256):
            if L[j] > 3:
                hmask[j % 32] |= 1 << (j // 32)
        low = L & 3
        for h in range(2):
            for l in range(32):
                b = 128 * h + l
                qs[32 * h + l] = low[b] | (low[b + 32] << 2) | (low[b + 64] << 4) | (low[b + 96] << 6)
        for j in range(16):
            v = int(sc[j])
            if j < 8:
                s[j] = v & 0xF
            else:
                s[j - 8] |= (v & 0xF) << 4
            s[j % 4 + 8] |= (v >> 4) << (2 * (j // 4))
        return np.concatenate([hmask, qs, s, _f16(d)])
    if qtype == "Q2_K":
        qs = np.zeros(64, np.uint8)
        for h in range(2):
            for l in range(32):
                b = 128 * h + l
                qs[32 * h + l] = L[b] | (L[b + 32] << 2) | (L[b + 64] << 4) | (L[b + 96] << 6)
        scales = (np.asarray(sc) & 0xF) | ((np.asarray(m) & 0xF) << 4)
        return np.concatenate([scales.astype(np.uint8), qs, _f16(d), _f16(dmin)])
    raise AssertionError(qtype)


def random_kquant(qtype: str, rng, n_blocks: int = 24, zero_steps: bool = True):
    """``(raw blocks, codes, signed step per weight, value per weight)`` of random super-blocks of ``qtype``
    (``zero_steps``: some sub-blocks may have a scale of 0)."""
    spec = QB.TYPES[qtype]
    nsub = 256 // spec.sub
    raws, codes, steps, values = [], [], [], []
    for _ in range(n_blocks):
        L = rng.integers(0, spec.levels, 256)
        if qtype in ("Q4_K", "Q5_K"):
            d, dmin = rng.uniform(2e-4, 1e-3), rng.uniform(1e-4, 1e-3)
            sc, m = rng.integers(1, 64, nsub), rng.integers(0, 64, nsub)
            sc[rng.integers(nsub)] = 0  # a sub-block whose scale rounded to 0 says nothing
            st, off = d * sc, dmin * m
        elif qtype == "Q2_K":
            d, dmin = rng.uniform(2e-3, 1e-2), rng.uniform(1e-3, 5e-3)
            sc, m = rng.integers(1, 16, nsub), rng.integers(0, 16, nsub)
            st, off = d * sc, dmin * m
        elif qtype == "Q6_K":
            d, dmin, m = rng.uniform(2e-5, 8e-5), 0.0, None
            sc = rng.integers(-128, 128, nsub) if zero_steps else \
                rng.integers(1, 128, nsub) * rng.choice([-1, 1], nsub)
            st, off = d * sc, 32 * d * sc  # value = d·sc·L - 32·d·sc
        else:  # Q3_K
            d, dmin, m = rng.uniform(2e-4, 1e-3), 0.0, None
            sc = rng.integers(0, 64, nsub)
            st, off = d * (sc - 32), 4 * d * (sc - 32)
        raw = pack(qtype, d, L, sc, dmin, m)
        d16, m16 = float(np.float16(d)), float(np.float16(dmin))
        st = np.repeat(st / d * d16 if d else st, spec.sub)  # the fp16 d, as stored
        off = np.repeat(off / (dmin if qtype in ("Q4_K", "Q5_K", "Q2_K") and dmin else d) *
                        (m16 if qtype in ("Q4_K", "Q5_K", "Q2_K") and dmin else d16), spec.sub)
        raws.append(raw), codes.append(L), steps.append(st), values.append(st * L - off)
    return np.stack(raws), np.concatenate(codes), np.concatenate(steps), np.concatenate(values)


@pytest.mark.parametrize("qtype", KQUANTS)
def test_kquant_blocks_written_here_dequantize_to_the_known_scales_and_codes(qtype):
    raw, L, step, value = random_kquant(qtype, np.random.default_rng(1))
    got = dequantize(raw, GGMLQuantizationType[qtype]).ravel()
    np.testing.assert_allclose(got, value, rtol=1e-5, atol=1e-9)
    r = QB.stored_rounding(raw, qtype, (raw.shape[0], 256))
    np.testing.assert_allclose(r.step.ravel(), np.abs(step), rtol=1e-5, atol=1e-12)  # the stored step, exactly


def test_the_q4_k_step_read_from_the_blocks_is_d_times_sc_of_gguf_s_own_helper():
    raw, *_ = random_kquant("Q4_K", np.random.default_rng(2))
    sc, _ = GQ4_K.get_scale_min(raw[:, 4:16].copy())
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
    want = np.repeat((d * sc.astype(np.float32)), 32, axis=1).ravel()
    r = QB.stored_rounding(raw, "Q4_K", (raw.shape[0], 256))
    np.testing.assert_allclose(r.step.ravel(), want, rtol=1e-6)


def originals_of(r, rng, value, step, codes, levels, reach_frac=1.0):
    """Originals that round to ``codes``: within half a step of the value (the nearest code at the stored
    scale), a weight on an end code clamped from up to ``reach_frac`` of the assumed range beyond it."""
    a = np.abs(step)
    u = rng.uniform(-0.5, 0.5, value.size)
    low_end = np.where(step >= 0, codes == 0, codes == levels - 1) & (a > 0)
    high_end = np.where(step >= 0, codes == levels - 1, codes == 0) & (a > 0)
    u = np.where(low_end, -rng.uniform(0, (levels - 0.5) * reach_frac, value.size), u)
    u = np.where(high_end, rng.uniform(0, (levels - 0.5) * reach_frac, value.size), u)
    x = value + u * a
    return np.where(a > 0, x, value + rng.normal(0, 1, value.size))  # a step-0 sub-block: anything


@pytest.mark.parametrize("qtype", KQUANTS)
def test_kquant_intervals_hold_originals_that_round_to_the_blocks(qtype):
    rng = np.random.default_rng(3)
    spec = QB.TYPES[qtype]
    for draw in range(20):
        raw, L, step, value = random_kquant(qtype, rng, n_blocks=4)
        r = QB.stored_rounding(raw, qtype, (raw.shape[0], 256))
        x = originals_of(r, rng, r.values.ravel().astype(np.float64), step, L, spec.levels)
        lo = r.values.ravel() - r.below.ravel().astype(np.float64)
        hi = r.values.ravel() + r.above.ravel().astype(np.float64)
        assert ((lo <= x) & (x <= hi)).all(), qtype
        scale = float(np.abs(r.values).max())
        for t in (0.1 * scale, 0.3 * scale, 0.6 * scale):
            c = QB.threshold_counts(r, t)
            true = int((np.abs(x) < t).sum())
            assert c["certain"] <= true <= c["possible"], (qtype, draw, t, c, true)


@pytest.mark.parametrize("qtype", LEGACY)
def test_round_to_nearest_intervals_hold_the_originals_gguf_rounded(qtype):
    rng = np.random.default_rng(4)
    qt = GGMLQuantizationType[qtype]
    for draw in range(20):
        x = (rng.standard_normal((16, 128)) * rng.uniform(0.01, 0.2, (16, 1))).astype(np.float32)
        x[0, :32] = 0.0  # a block of zeros (its step is 0)
        raw = quantize(x, qt)
        r = QB.stored_rounding(raw, qtype, x.shape)
        np.testing.assert_array_equal(r.values, dequantize(raw, qt).reshape(x.shape))
        lo, hi = r.values - r.below.astype(np.float64), r.values + r.above.astype(np.float64)
        assert ((lo <= x) & (x <= hi)).all(), qtype
        back = QB.readback_rounding(r.values, qtype)  # a simulated copy: read back from the values alone
        np.testing.assert_allclose(back.below, r.below, rtol=1e-4, atol=1e-12)
        np.testing.assert_allclose(back.above, r.above, rtol=1e-4, atol=1e-12)
        for t in (0.01, 0.05, 0.1):
            c = QB.threshold_counts(r, t)
            assert c["certain"] <= int((np.abs(x) < t).sum()) <= c["possible"]


def test_half_step_one_step_and_clamped_end_rules():
    rng = np.random.default_rng(5)
    # round to nearest: half a step plus the fp16 scale's rounding, no more
    x = rng.standard_normal((4, 64)).astype(np.float32)
    r = QB.stored_rounding(quantize(x, GGMLQuantizationType.Q4_1), "Q4_1", x.shape)
    assert (r.below >= 0.5 * r.step).all() and (r.below <= 0.53 * r.step).all()
    assert r.open_below is None
    # Q4_0's top code (15) is clamped: a weight there lay up to one step beyond it
    raw0 = quantize(x, GGMLQuantizationType.Q4_0)
    r0 = QB.stored_rounding(raw0, "Q4_0", x.shape)
    d = np.repeat(raw0.reshape(-1, 18)[:, :2].copy().view(np.float16).astype(np.float64).ravel(), 32)
    code = np.rint(r0.values.ravel() / d) + 8
    outward = np.where(d > 0, r0.above.ravel(), r0.below.ravel()) / np.abs(d)  # towards the higher codes
    inward = np.where(d > 0, r0.below.ravel(), r0.above.ravel()) / np.abs(d)
    assert (code == 15).any() and (code < 15).any()
    np.testing.assert_allclose(outward[code == 15], 1.0, atol=0.02)
    np.testing.assert_allclose(outward[code < 15], 0.5, atol=0.02)
    np.testing.assert_allclose(inward, 0.5, atol=0.02)
    # K-quants: one full step; an end code's outer side reaches one more range of its sub-block, flagged open
    raw, L, step, value = random_kquant("Q4_K", rng, n_blocks=2)
    rk = QB.stored_rounding(raw, "Q4_K", (2, 256))
    a, inner = np.abs(step), (L > 0) & (L < 15) & (np.abs(step) > 0)
    np.testing.assert_allclose(rk.below.ravel()[inner], a[inner], rtol=1e-4)
    np.testing.assert_allclose(rk.above.ravel()[inner], a[inner], rtol=1e-4)
    top = (L == 15) & (a > 0)
    np.testing.assert_allclose(rk.above.ravel()[top], 16 * a[top], rtol=1e-4)
    np.testing.assert_allclose(rk.below.ravel()[top], a[top], rtol=1e-4)
    assert rk.open_above.ravel()[top].all() and not rk.open_above.ravel()[inner].any()
    assert np.isinf(rk.below.ravel()[a == 0]).all()  # a sub-block of step 0: anywhere
    # with the end codes left open, the count can only widen
    t = float(np.abs(rk.values).mean())
    c, u = QB.threshold_counts(rk, t), QB.threshold_counts(rk, t, ends_unbounded=True)
    assert u["certain"] <= c["certain"] <= c["possible"] <= u["possible"]
    with pytest.raises(ValueError, match="^t: "):
        QB.threshold_counts(rk, 0.0)


def test_closed_form_q8_0_width_is_the_weights_within_half_a_step():
    """Q8_0 codes q at a step of 2^-7 (exact in fp16), threshold a quarter step above code c: the weights whose
    side of it the rounding leaves open are exactly those within half a step of it (|q| = c); for a K-quant, one
    step: the two codes c and c + 1."""
    rng = np.random.default_rng(6)
    d, c = 2.0 ** -7, 40
    q = rng.integers(-126, 127, (64, 32))
    q[:, 0] = 127  # every block's largest magnitude on 127: its step is d
    raw = np.concatenate([np.tile(_f16(d), (64, 1)), q.astype(np.int8).view(np.uint8)], axis=1)
    r = QB.stored_rounding(raw, "Q8_0", (64, 32))
    t = (c + 0.25) * d
    cnt = QB.threshold_counts(r, t)
    near = int((np.abs(q) == c).sum())
    assert cnt["possible"] - cnt["certain"] == near
    assert cnt["below"] == int((np.abs(q) <= c).sum())
    # and a K-quant with no minimum: one step either side, so the two codes within a step of the threshold
    L = rng.integers(3, 13, 256)
    raw = pack("Q4_K", 2.0 ** -10, L, np.full(8, 16), 0.0, np.zeros(8, np.int64))[None]
    rk = QB.stored_rounding(raw, "Q4_K", (1, 256))
    s = 16 * 2.0 ** -10
    ck = QB.threshold_counts(rk, (7 + 0.25) * s)
    assert ck["possible"] - ck["certain"] == int(np.isin(L, (7, 8)).sum())


def test_readback_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="rows divide into blocks of 32"):
        QB.readback_rounding(np.zeros((4, 33)), "Q4_1")
    with pytest.raises(ValueError, match="^qtype: "):
        QB.readback_rounding(np.zeros((4, 256)), "Q4_K")
    with pytest.raises(ValueError, match="^qtype: "):
        QB.stored_rounding(np.zeros((1, 10), np.uint8), "IQ2_XXS", (1, 256))
    # fp32 weights are not on a Q4_1 grid
    assert QB.readback_rounding(np.random.default_rng(0).standard_normal((2, 64)), "Q4_1") is None


# ------------------------------------------------------------------ the cross-layer bound
def _cos(a, b) -> float:
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("qtype", ("Q8_0", "Q4_1", "Q4_0", "Q6_K"))
def test_the_turn_bounds_the_cosine_of_the_unrounded_vectors(qtype):
    rng = np.random.default_rng(7)
    for _ in range(30):
        if qtype in LEGACY:
            a = rng.standard_normal((8, 64)).astype(np.float32)
            b = (0.3 * a + rng.standard_normal((8, 64))).astype(np.float32)
            ra = QB.stored_rounding(quantize(a, GGMLQuantizationType[qtype]), qtype, a.shape)
            rb = QB.stored_rounding(quantize(b, GGMLQuantizationType[qtype]), qtype, b.shape)
        else:
            raw_a, La, sa, _ = random_kquant(qtype, rng, 2, zero_steps=False)
            raw_b, Lb, sb, _ = random_kquant(qtype, rng, 2, zero_steps=False)
            ra, rb = QB.stored_rounding(raw_a, qtype, (2, 256)), QB.stored_rounding(raw_b, qtype, (2, 256))
            a = originals_of(ra, rng, ra.values.ravel().astype(np.float64), sa, La, 64)
            b = originals_of(rb, rng, rb.values.ravel().astype(np.float64), sb, Lb, 64)
            assert np.isfinite(ra.below).all() and QB.turn(ra)["theta"] < math.pi / 2  # a bound, not everything
        move = min(2.0, QB.turn(ra)["theta"] + QB.turn(rb)["theta"])
        va, vb = ra.values.ravel().astype(np.float64), rb.values.ravel().astype(np.float64)
        assert abs(_cos(np.ravel(a), np.ravel(b)) - _cos(va, vb)) <= move + 1e-9
        # the worst case: every weight of a pushed to the end of its interval, along b
        x = np.where(vb > 0, va + ra.above.ravel(), va - ra.below.ravel())
        if np.isfinite(x).all():
            assert abs(_cos(x, vb) - _cos(va, vb)) <= QB.turn(ra)["theta"] + 1e-9


def test_cross_layer_bounds_pool_as_the_record_pools_and_hold_the_unrounded_value():
    """Groups of layers rounded to Q8_0: each scope's bound, pooled from the dequantized groups' means and every
    layer's turn, holds the same scope computed on the unrounded weights."""
    rng = np.random.default_rng(8)
    roles = {"decoder/self/q": 0.02, "decoder/self/k": -0.01, "decoder/self/v": 0.0, "decoder/self/o": 0.005,
             "decoder/-/mlp_in": 0.03}
    for _ in range(5):
        orig, deq, turns = {}, {}, {}
        for key, corr in roles.items():
            base = rng.standard_normal((8, 128))
            xs = [(base * corr + rng.standard_normal((8, 128)) * (1 + 0.5 * rng.random())).astype(np.float32)
                  for _ in range(4)]
            rs = [QB.stored_rounding(quantize(x, GGMLQuantizationType.Q8_0), "Q8_0", x.shape) for x in xs]
            orig[key] = [x.ravel().astype(np.float64) for x in xs]
            deq[key] = [r.values.ravel().astype(np.float64) for r in rs]
            tt = [QB.turn(r) for r in rs]
            turns[key] = {"layers": [0, 1, 2, 3], "theta": [t["theta"] for t in tt], "tau": [t["tau"] for t in tt],
                          "types": ["Q8_0"], "text": ["Q8_0: half a step"], "assumes": []}

        def summary(vectors):
            cl = {k: {"layers": [0, 1, 2, 3], "adj_mean": float(np.mean([_cos(v[i], v[i + 1]) for i in range(3)]))}
                  for k, v in vectors.items()}
            attn = [d["adj_mean"] for k, d in cl.items() if k.rsplit("/", 1)[-1] in ("q", "k", "v", "o")]
            return {"cross_layer": cl, "cross_layer_attn_adj_mean": float(np.mean(attn))}

        s_deq, s_orig = summary(deq), summary(orig)
        bounds = TC.cross_layer_quantization_bounds(s_deq, turns)
        assert set(bounds) == {"attention", "attention|abs", "seed:q,k,qkv,mlp_up", "seed:q,k,qkv|each"}
        truth = {"attention": s_orig["cross_layer_attn_adj_mean"], "attention|abs": TC.abs_cross_layer(s_orig)[0],
                 "seed:q,k,qkv,mlp_up": TC.seed_cross_layer(s_orig)[0],
                 "seed:q,k,qkv|each": TC.seed_each_cross_layer(s_orig)[0]}
        measured = {"attention": s_deq["cross_layer_attn_adj_mean"], "attention|abs": TC.abs_cross_layer(s_deq)[0],
                    "seed:q,k,qkv,mlp_up": TC.seed_cross_layer(s_deq)[0],
                    "seed:q,k,qkv|each": TC.seed_each_cross_layer(s_deq)[0]}
        for scope, b in bounds.items():
            assert b["lo"] <= truth[scope] <= b["hi"], (scope, b, truth[scope])
            assert b["lo"] <= measured[scope] <= b["hi"]
            assert 0 < b["typical"]["sd"] < b["hi"] - b["lo"]
            assert "Q8_0" in b["text"] and b["types"] == ["Q8_0"]
    del turns["decoder/self/v"]  # a group of unknown rounding: no bound for the scopes that pool it
    assert set(TC.cross_layer_quantization_bounds(s_deq, turns)) == {"seed:q,k,qkv,mlp_up", "seed:q,k,qkv|each"}


# ------------------------------------------------------------------ CTranslate2 int8 / int16
def test_ctranslate2_int8_and_int16_read_back_hold_the_originals():
    rng = np.random.default_rng(9)
    w = (rng.standard_normal((12, 40)) * rng.uniform(0.01, 1, (12, 1))).astype(np.float32)
    scale = 127.0 / np.abs(w).max(1)  # CTranslate2's converter: one scale per output row, rint
    deq = (np.rint(w * scale[:, None]).astype(np.int8).astype(np.float32) / scale[:, None]).astype(np.float32)
    for m, x in ((deq, w), (deq.T.copy(), w.T)):  # rows, then a matrix the rebuild transposed
        r = QB.ct2_rounding(m, "int8")
        assert r is not None
        assert ((m - r.below <= x) & (x <= m + r.above)).all()
    s16 = np.float32(2 ** 10 / np.abs(w).max())
    deq16 = (np.rint(w * s16).astype(np.int16).astype(np.float32) / s16).astype(np.float32)
    r16 = QB.ct2_rounding(deq16[:5], "int16")  # a piece of the tensor: the smallest gap still bounds the step
    assert ((deq16[:5] - r16.below <= w[:5]) & (w[:5] <= deq16[:5] + r16.above)).all()
    assert QB.ct2_rounding(w, "int8") is None  # float weights lie on no int8 grid
    with pytest.raises(ValueError, match="^w, kind: "):
        QB.ct2_rounding(w, "int4")


def test_rounding_of_a_ctranslate2_int8_matrix_in_a_loaded_model():
    from types import SimpleNamespace

    from geolip_lib.checkpoints import TensorStore
    from geolip_lib.checkpoints.schema import Entry

    rng = np.random.default_rng(10)
    w = rng.standard_normal((8, 32)).astype(np.float32)
    scale = 127.0 / np.abs(w).max(1)
    deq = (np.rint(w * scale[:, None]) / scale[:, None]).astype(np.float32)
    store = TensorStore({"a.weight": torch.from_numpy(deq), "b.weight": torch.from_numpy(w)})
    lm = SimpleNamespace(quantization=None, conversion={"stored": {"a.weight": "int8", "b.weight": "float32"}})
    assert QB.quantized(lm)
    r = QB.rounding_of(lm, store, Entry("a.weight", "q", shape=(4, 32), row_slice=(2, 6)))
    assert r.values.shape == (4, 32) and ((r.values - r.below <= w[2:6]) & (w[2:6] <= r.values + r.above)).all()
    exact = QB.rounding_of(lm, store, Entry("b.weight", "k", shape=(8, 32)))
    assert exact.qtype == "F32" and not exact.below.any()
    assert QB.rounding_of(SimpleNamespace(quantization=None, conversion=None), store,
                          Entry("a.weight", "q", shape=(8, 32))) is None
    assert not QB.quantized(SimpleNamespace(quantization=None, conversion=None))
