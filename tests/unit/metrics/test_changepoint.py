"""Known answers for geolip_lib.metrics.changepoint.locate (hinge, line, step; invariances; bad input)."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib.metrics import changepoint
from geolip_lib.metrics.intervals import Interval

X = np.linspace(0.0, 0.6, 31)


def _hinge(x, tau=0.29, slope=2.0):
    return 0.5 + slope * np.maximum(x - tau, 0.0)


def test_hinge_located_and_covered_in_90_percent():
    rng = np.random.default_rng(0)
    found = covered = 0
    for _ in range(100):
        Y = _hinge(X) + rng.normal(0, 0.05, (5, len(X)))
        r = changepoint.locate(X, Y, seed=int(rng.integers(1 << 30)), n_boot=100)
        found += r["found"]
        covered += bool(r["found"] and r["interval"].contains(0.29))
    assert found >= 95
    assert covered >= 90


def test_straight_line_not_found_in_90_percent():
    rng = np.random.default_rng(1)
    not_found = 0
    for _ in range(100):
        Y = 0.3 + 1.5 * X + rng.normal(0, 0.05, (5, len(X)))
        r = changepoint.locate(X, Y, seed=int(rng.integers(1 << 30)), n_boot=100)
        not_found += not r["found"]
        assert (r["location"] is None) == (r["interval"] is None) == (not r["found"])
    assert not_found >= 90


def test_step_at_0_3():
    x = np.linspace(0.0, 0.6, 25)  # spacing 0.025: 0.3 is a grid point, the jump is after it
    rng = np.random.default_rng(2)
    Y = np.where(x <= 0.3, 1.0, 1.6) + rng.normal(0, 0.1, (4, len(x)))
    r = changepoint.locate(x, Y, method="step", n_boot=300)
    assert r["found"] and r["p_value"] < 0.01
    assert r["location"] == pytest.approx(0.3125)  # midpoint of the gap (0.3, 0.325)
    assert r["interval"].lo == pytest.approx(0.3) and r["interval"].hi == pytest.approx(0.325)  # the one gap
    assert r["fit"]["params"]["jump"] == pytest.approx(0.6, abs=0.15)


def test_affine_rescaling_of_Y_changes_nothing():
    rng = np.random.default_rng(3)
    Y = _hinge(X) + rng.normal(0, 0.05, (4, len(X)))
    a = changepoint.locate(X, Y, n_boot=200, seed=5)
    for scale, shift in [(3.7, -12.0), (-0.02, 5.0)]:
        b = changepoint.locate(X, scale * Y + shift, n_boot=200, seed=5)
        assert b["found"] == a["found"]
        assert b["location"] == pytest.approx(a["location"], abs=1e-9)
        assert b["p_value"] == a["p_value"]
        assert b["statistic"] == pytest.approx(a["statistic"], rel=1e-8)
        assert (b["interval"].lo, b["interval"].hi) == pytest.approx((a["interval"].lo, a["interval"].hi), abs=1e-9)
        assert np.allclose(b["fit"]["fitted"], scale * np.array(a["fit"]["fitted"]) + shift)


def test_exact_hinge_between_grid_points_and_result_keys():
    x = np.arange(10.0)
    Y = np.vstack([_hinge(x, tau=4.3, slope=1.0) + d for d in (-0.01, 0.0, 0.01)])  # no noise in the mean
    r = changepoint.locate(x, Y, n_boot=50)
    assert r["fit"]["breakpoint"] == pytest.approx(4.3, abs=1e-9)  # Hudson's intersection inside a gap
    assert r["fit"]["slopes"] == pytest.approx([0.0, 1.0], abs=1e-9)
    assert isinstance(r["fit"]["breakpoint_interval"], Interval)
    assert r["n_seeds"] == 3 and r["grid"] == x.tolist()
    assert min(abs(np.array(r["fit"]["curve_x"]) - 4.3)) < 1e-9
    assert np.allclose(r["fit"]["fitted"], np.mean(Y, axis=0), atol=1e-9)
    assert "hinge" in r["method"] and "seed bootstrap" in r["method"]


def test_exact_search_matches_brute_force_over_a_fine_breakpoint_grid():
    # the hinge's least-squares breakpoint (grid-point kinks + Hudson's in-gap intersections) against
    # a brute-force scan of 20001 kinks with ordinary least squares
    rng = np.random.default_rng(6)
    x = np.sort(rng.uniform(0, 1, 12))
    for _ in range(5):
        y = np.sin(4 * x) + rng.normal(0, 0.2, len(x))
        r = changepoint.locate(x, y, n_boot=20)
        taus = np.linspace(x[1], x[-2], 20001)
        D = np.stack([np.ones((len(taus), len(x))), np.broadcast_to(x, (len(taus), len(x))),
                      np.maximum(x[None] - taus[:, None], 0)], axis=-1)          # (T, m, 3) designs
        beta = np.linalg.solve(D.transpose(0, 2, 1) @ D, (D.transpose(0, 2, 1) @ y)[..., None])[..., 0]
        rss = ((y - np.einsum("tmk,tk->tm", D, beta)) ** 2).sum(1)
        assert r["fit"]["rss_change"] <= min(rss) + 1e-9
        assert r["fit"]["rss_change"] == pytest.approx(min(rss), rel=1e-3)
        resid = y - np.array(r["fit"]["fitted"])
        assert r["fit"]["rss_change"] == pytest.approx(float(resid @ resid), rel=1e-9)


def test_location_is_equivariant_under_affine_maps_of_x():
    rng = np.random.default_rng(7)
    Y = _hinge(X) + rng.normal(0, 0.05, (4, len(X)))
    a = changepoint.locate(X, Y, n_boot=100, seed=1)
    b = changepoint.locate(10 * X + 3, Y, n_boot=100, seed=1)
    assert b["location"] == pytest.approx(10 * a["location"] + 3, rel=1e-9)
    assert b["interval"].lo == pytest.approx(10 * a["interval"].lo + 3, rel=1e-9)
    assert b["p_value"] == a["p_value"]


def test_breakpoint_keeps_min_size_points_each_side():
    x = np.arange(12.0)
    y = np.where(x < 1.5, 5.0, 0.0) + 0.01 * np.arange(12)  # the change is at the edge
    for k in (2, 3, 4):
        r = changepoint.locate(x, np.vstack([y, y + 0.01, y - 0.02]), n_boot=20, min_size=k)
        assert x[k - 1] <= r["fit"]["breakpoint"] <= x[-k]
        assert x[k - 1] <= r["fit"]["breakpoint_interval"].lo <= r["fit"]["breakpoint_interval"].hi <= x[-k]


def test_single_seed_uses_residual_bootstrap():
    rng = np.random.default_rng(4)
    y = _hinge(X) + rng.normal(0, 0.03, len(X))
    r = changepoint.locate(X, y, n_boot=300)
    assert r["n_seeds"] == 1 and "residual bootstrap" in r["method"]
    assert r["found"] and r["interval"].contains(0.29)


def test_nan_is_a_missing_measurement():
    rng = np.random.default_rng(6)
    Y = _hinge(X) + rng.normal(0, 0.05, (5, len(X)))
    Y[0, 3] = Y[2, 10] = np.nan
    r = changepoint.locate(X, Y, n_boot=200)
    assert r["found"] and r["interval"].contains(0.29)
    assert r["fit"]["n"][3] == 4 and r["fit"]["mean"][3] == pytest.approx(np.nanmean(Y[:, 3]))
    # a grid point no seed measured is the same as a grid without that point
    Y[:, 20] = np.nan
    a = changepoint.locate(X, Y, n_boot=200)
    b = changepoint.locate(np.delete(X, 20), np.delete(Y, 20, axis=1), n_boot=200)
    assert a["fit"]["n"][20] == 0 and a["fit"]["n_grid_used"] == len(X) - 1
    assert a["location"] == pytest.approx(b["location"], abs=1e-12) and a["p_value"] == b["p_value"]
    assert (a["interval"].lo, a["interval"].hi) == pytest.approx((b["interval"].lo, b["interval"].hi), abs=1e-12)
    # a seed with no value at all is dropped
    c = changepoint.locate(X, np.vstack([Y, np.full(len(X), np.nan)]), n_boot=200)
    assert c["n_seeds"] == 5 and c["location"] == pytest.approx(a["location"], abs=1e-12)


def test_quadratic_null_separates_a_kink_from_smooth_curvature():
    rng = np.random.default_rng(8)
    quad = 0.2 + 0.3 * X - 1.2 * X ** 2
    E = rng.normal(0, 0.02, (8, len(X)))
    smooth = changepoint.locate(X, quad + E, n_boot=200)
    assert smooth["found"]                      # one line does not describe a parabola ...
    smooth_q = changepoint.locate(X, quad + E, n_boot=200, null="quadratic")
    assert not smooth_q["found"]                # ... but there is no kink beyond the curvature
    kink = changepoint.locate(X, quad + 1.5 * np.maximum(X - 0.29, 0) + E, n_boot=200, null="quadratic")
    assert kink["found"] and abs(kink["location"] - 0.29) < 0.015 and kink["interval"].hi - kink["interval"].lo < 0.05
    assert kink["fit"]["params"]["curvature"] == pytest.approx(-1.2, abs=0.5)
    assert kink["fit"]["params"]["slope_change"] == pytest.approx(1.5, abs=0.3)
    assert "quadratic" in kink["method"]


def test_degenerate_inputs():
    x = np.arange(4.0)
    r = changepoint.locate(x, x ** 2, n_boot=50)                  # 4 points, 1 seed: the hinge fits exactly
    assert not r["found"] and r["p_value"] == 1.0 and "not testable" in r["method"]
    r = changepoint.locate(X, np.zeros((4, len(X))), n_boot=50)   # a flat curve: nothing to find
    assert not r["found"] and r["statistic"] == 0.0
    exact = np.tile(_hinge(X), (3, 1))                            # identical seeds: no seed variation to use
    r = changepoint.locate(X, exact, n_boot=50)
    assert r["fit"]["resample"] == "residuals" and r["found"] and r["location"] == pytest.approx(0.29)


@pytest.mark.parametrize("kwargs, match", [
    (dict(x=np.arange(3.0), Y=np.zeros((2, 3))), "^x: expected at least 4"),
    (dict(x=np.array([0.0, 2.0, 1.0, 3.0]), Y=np.zeros((2, 4))), "^x: expected a strictly increasing"),
    (dict(x=np.zeros((2, 4)), Y=np.zeros((2, 4))), "^x: expected 1-D"),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 4))), "^Y: expected shape \\(n_seeds, 5\\)"),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5, 1))), "^Y: expected 1-D or 2-D"),
    (dict(x=np.arange(5.0), Y=np.full((2, 5), np.inf)), "^Y: contains Inf"),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5)), method="hinge"), "^method: expected one of"),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5)), level=1.0), "^level: "),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5)), min_size=3), "^min_size: "),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5)), null="quadratic"), "^null: "),
    (dict(x=np.arange(5.0), Y=np.zeros((2, 5)), resample="seeds"), "^resample: "),
    (dict(x=np.arange(5.0), Y=np.full((2, 5), np.nan)), "^Y: has no finite value"),
])
def test_bad_input_one_line_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match) as e:
        changepoint.locate(**kwargs)
    assert "\n" not in str(e.value)
