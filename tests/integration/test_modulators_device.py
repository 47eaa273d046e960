"""The modulators of notebooks 08-11 run where the model runs. On the H200 they crashed
because a modulator built in a notebook stayed on the CPU while the model was on ``cuda:0``
(``residual.py`` ``geometric_target``'s embedding lookup, ``field.py``'s ``index_select``). Here the
model is on the fake ``cuda:0`` of tests/fake_cuda.py, the modulators are built on the CPU as the
notebooks build them, and what comes out must equal the same run on the CPU."""
from __future__ import annotations

import pytest
import torch

from geolip_lib import models
from geolip_lib.modulators import (FieldModulatorConfig, GeometricFieldModulator, GeometricResidualModulator,
                                   ModulatorTrainer, attach, seq2seq_loss)
from tests import fake_cuda

pytestmark = pytest.mark.integration

TEXTS = ["summarize: a small domesticated carnivorous mammal", "summarize: a polygon with three edges"]
TARGETS = ["cat", "triangle"]


def _residual(cfg):
    return GeometricResidualModulator(cfg.d_model, cfg.vocab_size, n_geometric_dims=8, n_layers=cfg.num_layers,
                                      initial_alpha=0.3, seed=0, proj_std=1.0)


def _field(cfg):
    torch.manual_seed(0)
    return GeometricFieldModulator(FieldModulatorConfig(d_model=cfg.d_model, n_layers=cfg.num_layers))


def _run(device: str, kind: str):
    lm = models.load("tiny-t5", device=device)
    mod = (_residual if kind == "residual" else _field)(lm.model.config)  # built on the CPU, as notebooks do
    with attach(lm, mod):
        hs = lm.hidden_states(TEXTS)
        trainer = ModulatorTrainer(mod, lr=1e-2)
        trainer.step(seq2seq_loss(lm.model, lm.tokenizer, TEXTS, TARGETS))
        after = lm.hidden_states(TEXTS)
    assert all(p.device.type == torch.device(device).type for p in mod.parameters())  # it moved with the model
    return [t.clone() for t in hs.layers], [t.clone() for t in after.layers]


@pytest.mark.parametrize("kind", ["residual", "field"])
def test_modulator_follows_a_cuda_model(kind):
    want = _run("cpu", kind)
    with fake_cuda.install():
        got = _run("cuda", kind)
    for a_list, b_list in zip(got, want):
        for a, b in zip(a_list, b_list):
            assert not fake_cuda.is_fake(a)  # hidden_states hands back CPU tensors
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
