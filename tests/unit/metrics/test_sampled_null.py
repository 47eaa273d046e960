"""Nulls from sampled layers and closed forms (geolip_lib.metrics.sampled_null):
the closed form of |w| < t against simulation over several seeds, the sampled-layer prediction
interval against the full computation's by simulation (coverage of one more whole model, and
width), and fraction 1 equal to null_over_seeds."""
from __future__ import annotations

import math

import numpy as np
import pytest

from geolip_lib.metrics import intervals as I
from geolip_lib.metrics.sampled_null import SampledNull, normal_fraction_below, null_over_sampled_seeds

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("t,std", [(0.1, 0.02), (0.05, 0.04), (1e-3, 0.02)])
def test_closed_form_fraction_below_matches_simulation(seed, t, std):
    n = 200_000
    w = np.random.default_rng(seed).normal(0.0, std, size=n)
    got = float(np.mean(np.abs(w) < t))
    cf = normal_fraction_below(t, std, n)
    assert abs(got - cf["value"]) <= 5 * cf["std"] + 1e-12  # binomial spread, 5 standard deviations
    assert cf["interval"].lo <= cf["value"] <= cf["interval"].hi


def test_closed_form_binomial_interval_covers_simulated_fractions():
    t, std, n = 0.03, 0.02, 5_000
    cf = normal_fraction_below(t, std, n)
    fr = [float(np.mean(np.abs(np.random.default_rng(s).normal(0, std, n)) < t)) for s in range(200)]
    inside = np.mean([cf["interval"].lo <= f <= cf["interval"].hi for f in fr])
    assert inside >= 0.9
    assert cf["value"] == pytest.approx(math.erf(t / (std * math.sqrt(2))), abs=0)


def test_closed_form_refuses_bad_input():
    for bad in ((0.0, 1.0), (0.1, -1.0), (float("nan"), 1.0)):
        with pytest.raises(ValueError, match="finite positive"):
            normal_fraction_below(*bad)


def test_fraction_one_is_null_over_seeds():
    v = [0.5, 0.51, 0.49, 0.503, 0.497]
    a, b = null_over_sampled_seeds(v, 1.0), I.null_over_seeds(v)
    assert a["value"] == pytest.approx(b["value"])
    assert (a["interval"].lo, a["interval"].hi) == pytest.approx((b["interval"].lo, b["interval"].hi))
    with pytest.raises(ValueError, match="fraction"):
        null_over_sampled_seeds(v, 0.0)


@pytest.mark.parametrize("L,m", [(24, 5), (12, 3), (6, 2)])
def test_sampled_layers_interval_covers_a_whole_model_and_is_as_wide_as_the_full_one(L, m):
    """Per-layer values i.i.d.; a whole model's value is the mean over its L layers. The
    sampled null (5 seeds × m layers) must cover one more whole model ≥ 90 % of the time, and
    its width must match the full computation's (5 whole models) to within sampling error."""
    rng = np.random.default_rng(0)
    S, reps, mu, sigma = 5, 600, 0.3, 0.05
    cover, w_s, w_f = 0, [], []
    for _ in range(reps):
        sampled = rng.normal(mu, sigma, size=(S, m)).mean(1)
        full = rng.normal(mu, sigma, size=(S, L)).mean(1)
        new = rng.normal(mu, sigma, size=L).mean()
        ns = null_over_sampled_seeds(sampled, m / L)
        nf = I.null_over_seeds(full)
        cover += ns["interval"].lo <= new <= ns["interval"].hi
        w_s.append(ns["interval"].hi - ns["interval"].lo)
        w_f.append(nf["interval"].hi - nf["interval"].lo)
    assert cover / reps >= 0.92
    ratio = np.median(w_s) / np.median(w_f)
    # the sampled interval carries the extra uncertainty of its mean: sqrt((1 + L/(S m)) / (1 + 1/S))
    expect = math.sqrt((1 + L / (S * m)) / (1 + 1 / S))
    assert ratio == pytest.approx(expect, rel=0.12)
    assert 0.9 <= ratio <= 1.35  # about one model of layers (S·m ≈ L): as wide as the full null's


def test_sampled_null_reads_its_fractions():
    n = SampledNull([{}] * 5, fractions={"layers": 0.25, "pairs": 0.2}, drivers={"seeds": 5})
    v = [0.1, 0.2, 0.15, 0.12, 0.18]
    assert n.distribution(v, "layers")["sampled_fraction"] == 0.25
    assert n.distribution(v, "first")["sampled_fraction"] == 1.0
    wide, narrow = n.distribution(v, "first")["interval"], n.distribution(v, "pairs")["interval"]
    assert wide.hi - wide.lo > narrow.hi - narrow.lo
    with pytest.raises(ValueError, match="kind"):
        n.distribution(v, "heads")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_proportion_null_from_sampled_layers_stays_in_0_1(seed):
    """Random-init Q sparsity is ~0.9999995: a t interval on the raw scale pokes above 1; on the
    logit scale it stays inside [0, 1] and still holds the mean."""
    rng = np.random.default_rng(seed)
    vals = 1 - rng.uniform(1e-7, 2e-6, size=5)
    raw = null_over_sampled_seeds(vals, 0.4)["interval"]
    out = null_over_sampled_seeds(vals, 0.4, proportion=True)
    lo, hi = out["interval"].lo, out["interval"].hi
    assert 0 <= lo <= out["value"] <= hi <= 1
    assert raw.hi > 1  # what the plain t interval printed
    assert "logit" in out["interval"].method
    full = null_over_sampled_seeds(vals, 1.0, proportion=True)["interval"]
    assert 0 <= full.lo <= full.hi <= 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_proportion_null_with_seeds_at_exactly_one_stays_near_one(seed):
    """MiniLM's random-init Q |w| < 0.1 (init std 0.02: p = erf(5/√2) = 1 − 5.7e-7) over 5
    seeds: some seeds' fraction is exactly 1.0. The fixed 5e-16 before the logit made the null's
    interval [0.0, 1.0]; now both the full and the sampled null stay within 1e-4 of 1."""
    import math

    from geolip_lib.metrics.intervals import null_over_seeds
    from geolip_lib.metrics.sampled_null import null_over_sampled_seeds
    p = math.erf(0.1 / (0.02 * math.sqrt(2)))
    rng = np.random.default_rng(seed)
    n = 384 * 384 * 6
    values = [1 - rng.binomial(n, 1 - p) / n for _ in range(5)]
    values[0] = 1.0
    for d in (null_over_seeds(values, proportion=True), null_over_sampled_seeds(values, 1 / 3, proportion=True)):
        iv = d["interval"]
        assert 1 - 1e-4 < iv.lo <= d["value"] <= iv.hi <= 1.0, iv  # p itself: normal_fraction_below's closed form
    allone = null_over_seeds([1.0] * 5, proportion=True)["interval"]
    assert 1 - 1e-6 <= allone.lo <= allone.hi == 1.0


def test_a_sampled_null_of_a_magnitude_is_cut_at_zero():
    from geolip_lib.metrics.sampled_null import null_over_sampled_seeds
    vals = [0.00010, 0.00060, 0.00005, 0.00040]
    free = null_over_sampled_seeds(vals, 0.5)
    cut = null_over_sampled_seeds(vals, 0.5, lower=0.0)
    assert free["interval"].lo < 0 <= cut["interval"].lo and cut["interval"].hi == free["interval"].hi
    assert null_over_sampled_seeds(vals, 1.0, lower=0.0)["interval"].lo == 0.0
