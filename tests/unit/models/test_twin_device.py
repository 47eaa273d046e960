"""A generated random-init twin is drawn where its model lives (LoadedModel.random_init_weights
passes the model's device), and what it hands the battery is on that device; on the CPU the stream is
the one it always was."""
from __future__ import annotations

import pytest
import torch

from geolip_lib.models import load
from tests import fake_cuda


@pytest.mark.parametrize("name", ["tiny-t5", "tiny-qwen"])
def test_generated_twin_on_a_cuda_model_is_drawn_on_cuda(name):
    cpu = load(name, device="cpu").random_init_weights(seed=3, max_params=0)
    with fake_cuda.install():
        lm = load(name, device="cuda")
        store = lm.random_init_weights(seed=3, max_params=0)
        names = [n for n in store.names() if n.endswith("weight")][:4]
        got = {n: store.get(n, torch.float32) for n in names}
        assert names and all(fake_cuda.is_fake(t) for t in got.values())
        shapes = {n: tuple(t.shape) for n, t in got.items()}
    assert shapes == {n: tuple(cpu.get(n, torch.float32).shape) for n in names}
