"""Functions that make a tensor beside their inputs make it where the inputs live: run under
:mod:`tests.fake_cuda` (CPU compute, CUDA's placement rules) on inputs placed on the fake ``cuda:0``,
each gives the same values as on the CPU, on the inputs' device."""
from __future__ import annotations

import numpy as np
import torch
import pytest

from geolip_lib.attention.experiments import causal_intervention
from geolip_lib.metrics.spectral import energy_rank
from geolip_lib.modulators.pipeline_geometry import knn_project
from tests import fake_cuda

pytestmark = pytest.mark.unit


def _both(fn, *tensors):
    """``fn`` on CPU tensors, then on the same tensors on the fake CUDA device: (cpu result, cuda result)."""
    cpu = fn(*tensors)
    with fake_cuda.install():
        moved = [t.to("cuda") for t in tensors]
        out = fn(*moved)
        return cpu, out


def test_knn_project_builds_its_table_on_the_inputs_device():
    g = torch.Generator().manual_seed(0)
    static, geo = torch.randn(40, 8, generator=g, dtype=torch.float64), torch.randn(6, 3, generator=g,
                                                                                  dtype=torch.float64)
    cpu, out = _both(lambda s, a: knn_project(s, [1, 5, 9, 20, 30, 39], a, k=3), static, geo)
    assert fake_cuda.is_fake(out)
    np.testing.assert_allclose(out.cpu().numpy(), cpu.numpy(), rtol=1e-12)


def test_causal_intervention_masks_on_the_inputs_device():
    x = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(1))
    rep = torch.randn(2, 4, generator=torch.Generator().manual_seed(2))
    layer = torch.nn.Linear(4, 4).double()

    def run(xa, r):
        return causal_intervention([layer.to(xa.device)], xa.double(), token=1, replacement=r)

    cpu, out = _both(run, x, rep)
    assert set(cpu) == set(out)
    for k in cpu:
        assert out[k] == pytest.approx(cpu[k], rel=1e-10), k


def test_energy_rank_caps_on_the_inputs_device():
    W = torch.randn(3, 6, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    cpu, out = _both(lambda w: energy_rank(w, 0.9), W)
    assert fake_cuda.is_fake(out) and torch.equal(out.cpu(), cpu)
