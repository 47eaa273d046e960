"""The power of the change-point test (geolip_lib.claims.power), from the observed curves: the reported power matches the detection rate of the same test on fresh curves
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


# ------------------------------------------------------------------ two seeds and a quiet grid point
DEMO = np.array([0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5])
SEED_AT = 0.29154


def _quiet_pair(rng, j, sd):
    """Two observed seed curves ±r around a line, r beyond the quadratic null and exactly 0 at grid point
    ``j``: what two seeds can show by chance (SmolLM2's sweep had sd 0.0005 at alpha 0.4)."""
    from geolip_lib.claims.power import _basis
    B = _basis(DEMO, "quadratic")
    P = np.eye(len(DEMO)) - B @ np.linalg.pinv(B)
    e = P @ rng.normal(0, 1, len(DEMO))
    r = e - e[j] / P[j, j] * P[:, j]
    r *= sd / np.sqrt(np.mean(r ** 2))
    return np.stack([0.1 + 0.2 * DEMO + r, 0.1 + 0.2 * DEMO - r]), float(np.sqrt(np.mean(r ** 2)))


def _true_rate(sd, m, c, reps=40):
    """The test's detection rate on fresh curves from the true noise (white, the spread the seeds show)."""
    return float(np.mean([locate(DEMO, 0.1 + 0.2 * DEMO + np.random.default_rng(500 + k).normal(0, sd, (m, len(DEMO)))
                                 + c * np.maximum(DEMO - SEED_AT, 0), null="quadratic", n_boot=49, seed=k)["found"]
                          for k in range(reps)]))


def test_a_quiet_grid_point_of_two_seeds_does_not_make_the_test_look_powerful():
    # before: the two seeds' covariance had rank 1 and the quiet point none of it, so the
    # simulation said "about 4 seeds would decide it" where 4 fresh seeds find the kink 5 % of the time
    observed, sd = _quiet_pair(np.random.default_rng(1), 5, 0.01)
    pw = kink_power(DEMO, observed, at=SEED_AT, slope_change=0.1, reps=40, n_boot=49, target=0.8)
    se = lambda p: np.sqrt(max(p * (1 - p), 0.05) * 2 / 40)  # noqa: E731 - two proportions of 40 draws
    rate = _true_rate(sd, 2, 0.1)
    assert pw["power"] <= rate + 3 * se(rate), (pw["power"], rate)
    if pw["seeds_needed"] is not None:  # the seeds it names must find the kink with the target power
        true = _true_rate(sd, pw["seeds_needed"], 0.1)
        assert true >= 0.8 - 3 * se(true), (pw["seeds_needed"], true)
    assert pw["smallest_detectable"] is not None  # a kink 32x the size is found at 2 seeds
    true = _true_rate(sd, 2, pw["smallest_detectable"])
    assert true >= 0.8 - 3 * se(true), (pw["smallest_detectable"], true)


def test_the_noise_floor_raises_only_the_quiet_points_and_keeps_white_noise():
    from geolip_lib.claims.power import _basis, noise_root
    B = _basis(DEMO, "quadratic")
    P = np.eye(len(DEMO)) - B @ np.linalg.pinv(B)
    R = np.random.default_rng(0).normal(0, 1, (400, len(DEMO))) @ P  # white noise, the null part removed
    S = (lambda r: r.T @ r)(noise_root(R, B))
    assert np.diag(S) == pytest.approx(np.diag(P), rel=0.2)  # white: the floor (σ² P_jj) changes ~nothing
    observed, _ = _quiet_pair(np.random.default_rng(1), 5, 0.01)
    D = observed - observed.mean(0)
    R2 = D - (B @ np.linalg.lstsq(B, D.T, rcond=None)[0]).T
    assert abs(R2[0, 5]) < 1e-12  # the quiet point
    S2 = (lambda r: r.T @ r)(noise_root(R2, B))
    raw = np.diag(R2.T @ R2)
    sigma2 = raw.sum() / np.trace(P)
    assert S2[5, 5] == pytest.approx(sigma2 * P[5, 5])  # raised to the pooled spread
    assert np.all(np.diag(S2) >= raw - 1e-15) and np.linalg.matrix_rank(S2) == len(DEMO) - 0 - \
        int(np.sum(np.diag(P) < 1e-12))  # two seeds: a diagonal covariance, no noiseless direction
