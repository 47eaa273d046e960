"""The power simulation of the change-point test (geolip_lib.claims.power): properties, not
one number — near the test's size for a vanishing kink, rising with the kink, 1 for a kink far
above the noise, deterministic, and the noise read from the seeds' spread."""
from __future__ import annotations

import json

import numpy as np
import pytest

from geolip_lib import results
from geolip_lib.claims import kink_power
from geolip_lib.claims.power import noise_sd
from geolip_lib.metrics.changepoint import locate

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(11)
    x = np.linspace(0.0, 0.6, 9)
    res = locate(x, 0.2 + 0.05 * x + rng.normal(0, 0.01, (4, 9)), null="quadratic", n_boot=99, seed=1)
    return json.loads(json.dumps(results.to_jsonable(res["fit"])))


def test_noise_is_the_pooled_seed_spread(fit):
    sd = noise_sd(fit, 4)
    assert 0.005 < sd < 0.02  # the curves were drawn with sd 0.01 per point
    one = dict(fit, sem=[None] * len(fit["x"]), n=[1] * len(fit["x"]))
    assert noise_sd(one, 1) == pytest.approx((fit["rss_change"] / (len(fit["x"]) - 4)) ** 0.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_power_rises_with_the_kink_from_the_tests_size_to_one(fit, seed):
    kw = dict(at=0.3, reps=30, n_boot=49, seed=seed, ladder=False)
    tiny, mid, big = (kink_power(fit, 4, slope_change=c, **kw)["power"] for c in (1e-6, 0.1, 10.0))
    assert tiny <= 0.2  # ~ the test's 5 % false-positive rate, with 30 draws
    assert tiny <= mid <= big and big == 1.0
    again = kink_power(fit, 4, slope_change=0.1, **kw)
    assert again["power"] == mid  # deterministic given its seed


def test_what_would_decide_is_given_when_power_falls_short(fit):
    low = kink_power(fit, 4, at=0.3, slope_change=0.01, reps=20, n_boot=49, target=0.8)
    assert low["power"] < 0.8
    assert low["smallest_detectable"] is None or low["smallest_detectable"] > 0.01
    assert low["seeds_needed"] is None or low["seeds_needed"] > 4
    assert kink_power({"x": [0, 1]}, 3, at=0.3, slope_change=1.0) is None  # no no-change fit recorded
