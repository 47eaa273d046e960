"""Intervals: coverage on known distributions, printing at the supported precision, null separation."""
from __future__ import annotations

import math

import numpy as np
import pytest

from geolip_lib.metrics import covariance_bootstrap as CB
from geolip_lib.metrics import intervals as I
from geolip_lib.metrics import participation_ratio

pytestmark = pytest.mark.unit
REPS = 200


def test_bootstrap_cv_covers_the_true_cv_of_a_gamma():
    """CV of Gamma(k) is 1/sqrt(k): the BCa interval over 400 draws covers it in >= 90 % of 200 repetitions."""
    k = 4.0
    truth = 1 / math.sqrt(k)
    hits = sum(I.bootstrap(np.random.default_rng(s).gamma(k, size=400), I.cv, n_boot=500, seed=s).contains(truth)
               for s in range(REPS))
    assert hits >= 0.90 * REPS, hits


def test_bootstrap_mean_covers_the_true_mean_of_an_exponential():
    hits = sum(I.bootstrap(np.random.default_rng(s).exponential(2.0, size=200), np.mean, n_boot=500,
                           seed=s).contains(2.0) for s in range(REPS))
    assert hits >= 0.90 * REPS, hits


def test_over_seeds_covers_the_true_mean():
    hits = sum(I.over_seeds(np.random.default_rng(s).normal(0.3, 0.05, size=5)).contains(0.3) for s in range(REPS))
    assert hits >= 0.90 * REPS, hits


def test_covariance_group_bootstrap_covers_the_population_pr():
    """Gaussian rows with covariance diag(ev): the population PR is (Σev)²/Σev²."""
    ev = np.linspace(1, 5, 30) ** 2
    truth = ev.sum() ** 2 / (ev ** 2).sum()
    hits = 0
    for s in range(REPS):
        X = np.random.default_rng(s).standard_normal((1500, 30)) * np.sqrt(ev)
        hits += CB.bootstrap_covariance_stat(X, n_boot=200, seed=s).contains(truth)
    assert hits >= 0.90 * REPS, hits


def test_weighted_bootstrap_statistics_equal_the_direct_ones_at_unit_weights():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 7)) + 0.3
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    ones = np.ones((1, 60))
    G = U @ U.T
    direct = G[np.triu_indices(60, 1)].mean()
    assert CB.weighted_mean_pairwise_cosine(U)(ones)[0] == pytest.approx(direct, rel=1e-12)
    assert CB.weighted_participation_ratio(X)(ones)[0] == pytest.approx(participation_ratio(X), rel=1e-10)
    # integer weights == the statistic on explicitly repeated rows
    w = rng.integers(0, 3, size=60).astype(float)
    w[0] = 2
    rows = np.repeat(np.arange(60), w.astype(int))
    assert CB.weighted_participation_ratio(X)(w[None])[0] == pytest.approx(participation_ratio(X[rows]), rel=1e-10)


def test_bootstrap_is_seeded_and_handles_degenerate_samples():
    x = np.random.default_rng(1).normal(size=100)
    assert I.bootstrap(x, seed=3) == I.bootstrap(x, seed=3)
    const = I.bootstrap(np.full(10, 2.5))
    assert const.lo == const.hi == 2.5
    two = I.bootstrap([1.0, 2.0], what="layers")
    assert not two.finite and two.method == "no interval: 2 layers (a bootstrap needs at least 3)"
    assert not I.over_seeds([1.0]).finite


@pytest.mark.parametrize("value, iv, text", [
    (0.4245, (0.39, 0.45), "0.42 [0.39, 0.45]"),
    (204.8986, (201.3, 208.8), "205 [201, 209]"),
    (0.01834, (0.0179, 0.0188), "0.0183 [0.0179, 0.0188]"),
    (0.4246, (0.41, 0.4390), "0.425 [0.410, 0.439]"),  # half-width 0.0145: leading 1 keeps two digits
    (3.0, (3.0, 3.0), "3"),
    (-0.011, (-0.30, 0.28), "0.0 [-0.3, 0.3]"),  # no "-0.0"  # exact: no interval printed
])
def test_format_value_prints_the_precision_the_interval_supports(value, iv, text):
    assert I.format_value(value, iv) == text


def test_format_value_without_interval_uses_fmt():
    assert I.format_value(0.123456, None, ".3f") == "0.123"
    assert I.format_value(None, (0, 1)) == "–"


def test_separates():
    assert I.separates((0.3, 0.4), 0.5) is True
    assert I.separates((0.3, 0.6), 0.5) is False
    assert I.separates((0.3, 0.4), 0.45, (0.38, 0.5)) is False
    assert I.separates((0.3, 0.4), 0.45, (0.41, 0.5)) is True
    assert I.separates(None, 0.5) is None and I.separates((0.3, 0.4), None) is None


def test_a_null_of_a_quantity_that_cannot_be_negative_stays_at_or_above_its_floor():
    from geolip_lib.metrics.intervals import null_over_seeds
    vals = [0.00010, 0.00060, 0.00005, 0.00040]  # mean |cosine| of four random-init seeds: a t interval reaches below 0
    free = null_over_seeds(vals)
    assert free["interval"].lo < 0
    cut = null_over_seeds(vals, lower=0.0)
    assert cut["interval"].lo == 0.0 and cut["interval"].hi == free["interval"].hi and "cut at 0" in cut["interval"].method
    assert cut["interval"].lo <= cut["value"] <= cut["interval"].hi
    with pytest.raises(ValueError, match="lower"):
        null_over_seeds([-0.1, 0.2, 0.3], lower=0.0)
