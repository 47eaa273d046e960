"""Torch's thread count survives the numba kernels, and the one-thread context restores it.

The bug this guards: numba's OpenMP layer calls ``omp_set_num_threads`` in the libgomp torch
shares, so after notebook 01's pentachoron cell a kernel started with ``OMP_NUM_THREADS=1``
ran torch on every core (and a warm-started kernel's float32 results differed from a cold one's).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib.metrics import _kernels as mk
from geolip_lib.metrics.threads import keep_torch_threads, one_torch_thread
from geolip_lib.weights import _kernels as wk


@pytest.fixture
def one_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


@pytest.mark.skipif(not mk.HAVE_NUMBA, reason="numba is a pinned dependency")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_kernels_keep_torch_threads(one_thread, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 6))
    mk.gather_volumes_sq(X, rng.integers(0, 40, (64, 5)))
    assert torch.get_num_threads() == 1
    wk.abs_hist(rng.standard_normal(200_000).astype(np.float32), [0.01, 0.1])
    assert torch.get_num_threads() == 1


def test_one_torch_thread_restores(one_thread):
    torch.set_num_threads(2)
    with one_torch_thread(True):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with one_torch_thread(False):
        assert torch.get_num_threads() == 2
    with keep_torch_threads():
        torch.set_num_threads(1)
    assert torch.get_num_threads() == 2


def test_restores_after_an_error(one_thread):
    torch.set_num_threads(2)
    with pytest.raises(RuntimeError), one_torch_thread(True):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2
