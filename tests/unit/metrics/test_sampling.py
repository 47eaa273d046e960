"""metrics.sampling: the same draws as the implementations it replaced (kept here as the
reference), for several seeds, and the disjointness / coverage of the splits."""
import numpy as np
import pytest

from geolip_lib.metrics import sampling as S
from geolip_lib import procrustes as P
from geolip_lib.lexical import relational_battery as A

SEEDS = [0, 1, 7, 42, 1234]


def _old_pipeline_sample_pairs(n_items, n_pairs, seed=42):
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n_items, size=n_pairs)
    j = rng.integers(0, n_items, size=n_pairs)
    keep = i != j
    return i[keep], j[keep]


def _old_battery_sample_pairs(n_items, n_pairs, rng):
    pi = rng.choice(n_items, size=n_pairs)
    pj = rng.choice(n_items, size=n_pairs)
    keep = pi != pj
    return pi[keep], pj[keep]


def _old_anchor_split(n, n_anchor, n_test, seed=0):
    n_anchor = min(n_anchor, n - 1)
    n_test = min(n_test, n - n_anchor)
    perm = np.random.default_rng(seed).permutation(n)
    return perm[:n_anchor], perm[n_anchor:n_anchor + n_test]


def _old_train_val(n, val_fraction=0.1, seed=42):
    perm = np.random.default_rng(seed).permutation(n)
    n_val = min(max(1, int(round(n * val_fraction))), n - 1)
    return perm[n_val:], perm[:n_val]


def _same(a, b):
    return all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", [2, 5, 300, 3000])
def test_random_pairs_same_draws(seed, n):
    assert _same(S.random_pairs(n, 500, seed), _old_pipeline_sample_pairs(n, 500, seed))
    g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
    # a generator is drawn from in place: two successive calls continue the stream, as before
    for _ in range(2):
        assert _same(S.random_pairs(n, 400, g1), _old_battery_sample_pairs(n, 400, g2))
    assert A.sample_pairs is S.random_pairs


@pytest.mark.parametrize("seed", SEEDS)
def test_random_pairs_properties(seed):
    i, j = S.random_pairs(50, 2000, seed)
    assert len(i) == len(j) and 0 < len(i) <= 2000 and (i != j).all()
    assert i.min() >= 0 and max(i.max(), j.max()) < 50
    with pytest.raises(ValueError, match="n_items"):
        S.random_pairs(1, 10, seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n,n_anchor,n_test", [(1000, 600, 400), (10, 100, 100), (50, 20, 5), (2, 1, 1)])
def test_anchor_test_split_same_draws_and_disjoint(seed, n, n_anchor, n_test):
    a, t = S.anchor_test_split(n, n_anchor, n_test, seed=seed)
    assert _same((a, t), _old_anchor_split(n, n_anchor, n_test, seed))
    assert P.split_indices is S.anchor_test_split
    assert len(a) >= 1 and len(t) >= 1 and not set(a) & set(t)
    assert len(a) == min(n_anchor, n - 1) and len(t) == min(n_test, n - len(a))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n,frac", [(20, 0.1), (2, 0.5), (100, 0.0), (37, 0.99), (1000, 0.25)])
def test_train_val_split_same_draws_and_covering(seed, n, frac):
    tr, va = S.train_val_split(n, frac, seed=seed)
    assert _same((tr, va), _old_train_val(n, frac, seed))
    assert not set(tr) & set(va) and sorted(np.concatenate([tr, va])) == list(range(n))
    assert 1 <= len(va) <= n - 1


@pytest.mark.parametrize("seed", SEEDS)
def test_sample_rows(seed):
    idx = S.sample_rows(100, 10, seed)
    assert np.array_equal(idx, np.random.default_rng(seed).choice(100, size=10, replace=False))
    assert len(set(idx)) == 10
    assert np.array_equal(S.sample_rows(5, 10, seed), np.arange(5))
