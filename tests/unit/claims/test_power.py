"""The power of the change-point test (geolip_lib.claims.power), from the observed curves
(issue 28 §1): the reported power matches the detection rate of the same test on fresh curves
with a known injected kink, within sampling error; the numbers the page prints (the share of a
hinge's energy the no-change model absorbs on the demo grid) are computed, not written."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib.claims import kink_power
from geolip_lib.claims.power import hinge_absorbed, hinge_coefficients, observed_curves
from geolip_lib.metrics.changepoint import locate

pytestmark = pytest.mark.unit

X = np.linspace(0.0, 0.5, 11)
AT = 0.29


def _draw(rng, n, c):
    """Seed curves whose spread is mostly level and tilt (what the quadratic null removes) plus a
    little white noise, and a kink c at AT."""
    off, tilt = rng.normal(0, 0.05, (n, 1)), rng.normal(0, 0.05, (n, 1))
    return 0.2 + 0.1 * X + off + tilt * X + rng.normal(0, 0.01, (n, len(X))) + c * np.maximum(X - AT, 0)


@pytest.mark.parametrize("c", [0.6, 1.0])
def test_reported_power_matches_the_detection_rate_of_injected_kinks(c):
    observed = _draw(np.random.default_rng(3), 5, 0.0)
    reps = 40
    pw = kink_power(X, observed, at=AT, slope_change=c, reps=reps, n_boot=49, ladder=False)
    rate = np.mean([locate(X, _draw(np.random.default_rng(100 + r), 5, c), null="quadratic", n_boot=49,
                           seed=r)["found"] for r in range(reps)])
    p = (pw["power"] + rate) / 2
    se = np.sqrt(max(p * (1 - p), 0.05) * 2 / reps)  # two binomial proportions of `reps` draws each
    assert abs(pw["power"] - rate) <= 3 * se, (pw["power"], rate)
    # level spread (sd 0.05) counted as independent noise would give a power near the test's size
    assert pw["power"] > 0.3


def test_the_demo_grid_absorbs_98_percent_of_a_hinge_into_the_quadratic_and_77_into_a_line():
    demo = [0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]
    q, line = hinge_absorbed(demo, 0.29154, "quadratic"), hinge_absorbed(demo, 0.29154, "line")
    assert round(q * 100) == 98 and round(line * 100) == 77
    # the same by an independent projection: polyfit of the hinge
    h = np.maximum(np.asarray(demo) - 0.29154, 0)
    for deg, frac in ((2, q), (1, line)):
        fit = np.polyval(np.polyfit(demo, h, deg), demo)
        assert frac == pytest.approx(fit @ fit / (h @ h), rel=1e-9)
    assert hinge_absorbed(np.linspace(0, 0.5, 51), 0.29154, "quadratic") > 0.9  # a finer grid on the same span


def test_a_kink_added_to_a_curve_adds_exactly_its_size_to_the_hinge_coefficient():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(4, len(X)))
    for null in ("line", "quadratic"):
        before, after = hinge_coefficients(X, Y, AT, null), hinge_coefficients(X, Y + 0.7 * np.maximum(X - AT, 0), AT,
                                                                                null)
        assert after - before == pytest.approx(np.full(4, 0.7))
        smooth = 1 + 2 * X + (3 * X ** 2 if null == "quadratic" else 0)
        assert hinge_coefficients(X, smooth[None], AT, null)[0] == pytest.approx(0, abs=1e-9)


def test_injection_into_the_observed_curves_and_what_would_decide():
    observed = _draw(np.random.default_rng(3), 5, 0.0)
    pw = kink_power(X, observed, at=AT, slope_change=1.0, reps=20, n_boot=49, ladder=False)
    assert [i["multiple"] for i in pw["injected"]] == [0.5, 1.0, 2.0, 4.0]
    assert pw["injected"][-1]["found"]  # 4x the size in these curves: found
    assert pw == kink_power(X, observed, at=AT, slope_change=1.0, reps=20, n_boot=49, ladder=False)  # deterministic
    low = kink_power(X, observed, at=AT, slope_change=0.01, reps=20, n_boot=49, target=0.8)
    assert low["power"] < 0.8
    assert low["smallest_detectable"] is None or low["smallest_detectable"] > 0.01
    assert low["seeds_needed"] is None or low["seeds_needed"] > 5
    assert kink_power([0, 1], [[0, 1]], at=0.3, slope_change=1.0) is None  # too short a grid
    assert kink_power(X, observed[:1], at=AT, slope_change=1.0, reps=10)["power"] is None  # one seed: no spread
    assert observed_curves({"alphas": list(X), "pearson": [[None] * len(X)]}, "pearson") is None
