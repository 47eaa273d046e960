"""The fused CPU kernel (numba) equals the batched torch path and the closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geolip_lib.metrics import _kernels
from geolip_lib.metrics import simplex as S


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_equals_torch_path(seed, k, dtype):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 24)).astype(dtype)
    idx = S.sample_distinct_rows(200, 300, k + 1, seed)
    vs, rel = _kernels.gather_volumes_sq(X, idx)
    ref, ref_rel = S._volumes_sq_flat(torch.from_numpy(X[idx]), chunk=64)
    np.testing.assert_allclose(vs, ref.numpy(), rtol=1e-10, atol=0)
    np.testing.assert_allclose(rel, ref_rel.numpy(), rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_keeps_accuracy_with_a_large_common_offset(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(100, 16))
    idx = S.sample_distinct_rows(100, 200, 5, seed)
    base, _ = _kernels.gather_volumes_sq(X, idx)
    shifted, _ = _kernels.gather_volumes_sq(X + 1e4, idx)
    np.testing.assert_allclose(np.sqrt(shifted), np.sqrt(base), rtol=1e-6)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_kernel_regular_simplex_closed_form(k):
    pts = np.eye(k + 1) * math.sqrt(0.5)  # regular simplex, edge 1, in R^(k+1)
    vs, rel = _kernels.gather_volumes_sq(pts, np.arange(k + 1, dtype=np.int64)[None, :])
    assert math.isclose(math.sqrt(vs[0]), S.regular_simplex_volume(k), rel_tol=1e-12)
    assert 0 < rel[0] <= 1


def test_degenerate_simplex_is_zero_and_cv_uses_the_kernel_on_cpu():
    X = np.zeros((6, 3))
    vs, rel = _kernels.gather_volumes_sq(X, np.arange(5, dtype=np.int64)[None, :])
    assert vs[0] == 0 and rel[0] == 0
    assert S.HAVE_NUMBA
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(500, 32))
    res = S.pentachoron_cv(Y, n_simplices=400, seed=3)
    vol_ref = np.sqrt(S._volumes_sq_flat(torch.from_numpy(Y[res.indices]), chunk=128)[0].numpy())
    np.testing.assert_allclose(res.volumes, vol_ref, rtol=1e-10)
