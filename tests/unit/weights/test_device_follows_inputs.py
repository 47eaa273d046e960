"""The weight battery, the QK operators and their random-init nulls run where their
inputs are. On the H200 they crashed on device mix-ups (cross_layer's CPU Gram beside CUDA rows,
layer_gram's ``.numpy()`` of CUDA factors); here they run under :mod:`tests.fake_cuda` (CPU compute,
CUDA's placement rules), on a store whose tensors are on the fake ``cuda:0`` and on a CPU store
with ``device="auto"`` (which then picks the fake CUDA). Beside them, the fast paths the GPU uses
are checked against the slow ones on the CPU (float64, several seeds).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from geolip_lib import operators as op
from geolip_lib.models import load
from geolip_lib.operators.nulls import operator_null
from geolip_lib.weights import TensorStore
from geolip_lib.weights.battery import cross_layer, run_battery
from geolip_lib.weights.nulls import battery_null
from geolip_lib.weights.spectral import svdvals, svdvals_many
from tests import fake_cuda


@pytest.fixture(scope="module")
def lm():
    return load("tiny-t5", device="cpu")


@pytest.fixture(scope="module")
def cpu_results(lm):
    store = TensorStore(dict(lm.model.state_dict()))  # the same tensors _cuda_store places on cuda:0
    return {"battery": run_battery(store, config=lm.config, family=lm.family, device="cpu"),
            "ops": op.measure_model(store, config=lm.config, family=lm.family, device="cpu")}


def _cuda_store(lm):
    moved = {}  # tied tensors stay one tensor (as the store dedups them on the CPU)
    return TensorStore({k: moved.setdefault(v.data_ptr(), v.to("cuda")) for k, v in lm.model.state_dict().items()})


def _same_battery(a, b, rtol=1e-10):
    pd.testing.assert_frame_equal(a.svd, b.svd, check_exact=False, rtol=rtol)
    pd.testing.assert_frame_equal(a.qk["layers"], b.qk["layers"], check_exact=False, rtol=rtol)
    pd.testing.assert_frame_equal(a.qk["heads"], b.qk["heads"], check_exact=False, rtol=rtol)
    pd.testing.assert_frame_equal(a.mlp["layers"], b.mlp["layers"], check_exact=False, rtol=rtol)
    pd.testing.assert_frame_equal(a.sparsity["per_tensor"], b.sparsity["per_tensor"])
    pd.testing.assert_frame_equal(a.sparsity["hist"], b.sparsity["hist"])
    assert list(a.cross) == list(b.cross)
    for k in a.cross:
        np.testing.assert_allclose(a.cross[k]["cos"], b.cross[k]["cos"], rtol=rtol, atol=1e-14)
    assert a.spectra.keys() == b.spectra.keys()


@pytest.mark.parametrize("engine", ["fused", "reference"])
def test_battery_on_a_cuda_store(lm, cpu_results, engine):
    with fake_cuda.install():
        res = run_battery(_cuda_store(lm), config=lm.config, family=lm.family, engine=engine)
    _same_battery(cpu_results["battery"], res)


def test_battery_auto_device_on_a_cpu_store(lm, cpu_results):
    with fake_cuda.install():
        res = run_battery(TensorStore(dict(lm.model.state_dict())), config=lm.config, family=lm.family, device="auto")
    _same_battery(cpu_results["battery"], res)


def test_cross_layer_on_a_cuda_store(lm, cpu_results):
    with fake_cuda.install():
        store = _cuda_store(lm)
        out = cross_layer(store, cpu_results["battery"].catalog, chunk_bytes=4096)  # several row chunks
    for k, v in cpu_results["battery"].cross.items():
        assert isinstance(out[k]["cos"], np.ndarray)
        np.testing.assert_allclose(out[k]["cos"], v["cos"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("where", ["cuda-store", "auto"])
def test_operators_follow_the_device(lm, cpu_results, where):
    with fake_cuda.install():
        src = _cuda_store(lm) if where == "cuda-store" else TensorStore(dict(lm.model.state_dict()))
        ops = op.measure_model(src, config=lm.config, family=lm.family, device=None)
        for o in ops.values():  # the record comes back on the CPU: tables and numpy read it
            assert not any(fake_cuda.is_fake(t) for t in (o.gram, o.fro_sq, o.sym_eigs, o.eig_dirs))
            op.analyse(o)
            op.headline_samples(o, k=2)
    for g, o in cpu_results["ops"].items():
        for name in ("gram", "fro_sq", "sym_eigs"):
            torch.testing.assert_close(getattr(ops[g], name), getattr(o, name), rtol=1e-10, atol=1e-14)


def test_nulls_on_a_cuda_model():
    with fake_cuda.install():
        lmc = load("tiny-t5", device="cuda")
        bn = battery_null(lmc, 2, cache=False)
        on = operator_null(lmc, 2, cache=False, k=2)
    assert bn.first is not None and len(bn.stack_seeds) == 2
    assert on.first and on.samples


# ------------------------------------------------------------------ fast == slow (CPU, float64)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_heads,n_kv", [(4, 4), (8, 2)])
def test_layer_gram_torch_equals_syrk(seed, n_heads, n_kv):
    g = torch.Generator().manual_seed(seed)
    L, d, n = 5, 6, 40
    Wq = torch.randn(L, n_heads * d, n, generator=g)
    Wk = torch.randn(L, n_kv * d, n, generator=g)
    slow = op.layer_gram(Wq, Wk, n_heads, n_kv, method="syrk")
    for chunk in (1, 1 << 30):  # one head per call, and the whole kv group per call
        fast = op.layer_gram(Wq, Wk, n_heads, n_kv, method="torch", chunk_bytes=chunk)
        torch.testing.assert_close(fast, slow, rtol=1e-12, atol=1e-12 * float(slow.abs().max()))
    torch.testing.assert_close(slow, op.dense_layer_gram(Wq, Wk, n_heads, n_kv), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_measure_layers_batched_equals_one_layer_at_a_time(seed):
    g = torch.Generator().manual_seed(seed)
    L, H, Hk, d, n = 6, 4, 2, 8, 48
    Wq = torch.randn(L, H * d, n, generator=g) / n ** 0.5
    Wk = torch.randn(L, Hk * d, n, generator=g) / n ** 0.5
    one = op.measure_layers(Wq, Wk, H, Hk, top_k=4, chunk_bytes=1)          # one layer per call (as before)
    many = op.measure_layers(Wq, Wk, H, Hk, top_k=4, chunk_bytes=1 << 30)  # all layers in one call (CUDA's default)
    ref = torch.stack([op.sym_eig(Wq[i], Wk[i], H, Hk, top_k=4)[0] for i in range(L)])
    torch.testing.assert_close(many.sym_eigs, ref, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(one.sym_eigs, ref, rtol=1e-10, atol=1e-14)
    # order (by decreasing magnitude) and signs are kept, not just the values as a set
    assert torch.equal(torch.sign(many.sym_eigs), torch.sign(ref))
    torch.testing.assert_close(many.eig_dirs, one.eig_dirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_svdvals_many_equals_svdvals(seed):
    g = torch.Generator().manual_seed(seed)
    Ws = [torch.randn(30, 20, generator=g), torch.randn(20, 30, generator=g), torch.randn(20, 50, generator=g),
          torch.randn(12, 7, generator=g)]
    Ws.append(torch.cat([Ws[0][:, :10], torch.zeros(30, 10)], 1))  # singular: the exact-SVD fallback
    many = svdvals_many(Ws, batch_bytes=8 * 20 * 20 * 2)             # two Grams per call
    for W, S in zip(Ws, many):
        ref = svdvals(W)
        torch.testing.assert_close(S, ref, rtol=1e-10, atol=1e-12 * float(ref[0]))
        assert torch.equal(S, ref)  # the same arithmetic per matrix: bit-equal on the CPU
