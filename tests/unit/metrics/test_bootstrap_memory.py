"""A bootstrap's memory is bounded whatever the number of items (a real-profile run: notebook 01 on AntiBERTy, whose
25-row table is enumerated whole, 53 130 simplices, was killed by the OOM killer in the paired BCa bootstrap of
the volume ratio: scipy's jackknife without a batch holds n x n items, 45 GB). The batch changes the memory, never
the interval."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from geolip_lib.metrics import intervals as I
from geolip_lib.probes.uncertainty import ratio_of_means, volume_ratio_interval

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_batch_changes_the_memory_not_the_interval(seed):
    rng = np.random.default_rng(seed)
    x = rng.lognormal(size=300)
    whole = I.bootstrap(x, np.mean, n_boot=200, seed=seed, batch_bytes=2**40)
    small = I.bootstrap(x, np.mean, n_boot=200, seed=seed, batch_bytes=8 * 300 * 7)  # 7 resamples at a time
    assert (small.lo, small.hi) == pytest.approx((whole.lo, whole.hi), rel=1e-12)
    pairs = rng.lognormal(size=(300, 2))
    a = I.bootstrap(pairs, ratio_of_means, n_boot=200, seed=seed, batch_bytes=2**40)
    b = I.bootstrap(pairs, ratio_of_means, n_boot=200, seed=seed, batch_bytes=8 * 600 * 3)
    assert (a.lo, a.hi) == pytest.approx((b.lo, b.hi), rel=1e-12)


def test_the_paired_volume_ratio_of_many_simplices_stays_within_its_memory_bound():
    """8 000 paired simplices: the unbatched BCa jackknife alone is 8000 x 8000 x 2 float64 = 1 GB; batched, the
    peak stays under a few times BOOT_BYTES."""
    rng = np.random.default_rng(0)
    a, b = rng.lognormal(size=8000), rng.lognormal(size=8000)
    tracemalloc.start()
    try:
        iv = volume_ratio_interval(a, b, seed=0, n_boot=200)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert iv.lo <= np.mean(a) / np.mean(b) <= iv.hi
    assert peak < 4 * I.BOOT_BYTES, f"peak {peak / 2**20:.0f} MiB"
