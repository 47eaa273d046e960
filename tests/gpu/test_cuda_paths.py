"""The CUDA paths of the model loader and the weight battery, on the tiny models (built offline).

``device: auto`` picks CUDA; float16 / bfloat16 loads give finite hidden states and battery
numbers close to float32; ``device_map: auto`` places the model through accelerate (as
``params/models/t5-v1_1-xxl.yaml`` does, in float16). Run on a GPU machine with::

    .venv/bin/python -m pytest -m gpu tests/gpu -q

``make test`` runs ``pytest -m "not gpu"``: these are deselected there, not skipped (the
CUDA check is a fixture, which deselected tests never reach).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib.models import load
from geolip_lib.models.loading import DTYPES, pick_device
from geolip_lib.weights import run_battery

pytestmark = pytest.mark.gpu

TEXTS = ["a small domesticated carnivorous mammal", "the study of numbers and shapes",
         "a polygon with three edges", "a large wild canine that hunts in packs"]
MODELS = ["tiny-bert", "tiny-t5", "tiny-t5-v1_1", "tiny-qwen", "tiny-dinov2", "tiny-open-clip"]
# relative Frobenius error of half-precision hidden states against float32 (10-bit / 7-bit mantissas
# through a few layers of a random tiny model: ~1e-3 / ~1e-2)
REL_TOL = {"float16": 1e-2, "bfloat16": 5e-2}


def _inputs(lm):
    if lm.family == "dinov2":
        return torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))  # [0, 1] floats, model size
    return TEXTS


def _weight_dtype(lm) -> torch.dtype:
    """The dtype of the weight matrices (open_clip's float16 / bfloat16 keeps embeddings and norms in
    float32, as OpenAI's CLIP does, so the first parameter says float32)."""
    if lm.family == "open_clip":
        return lm.model.visual.conv1.weight.dtype
    return lm.dtype


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-12))


def _check_close(lm, ref, tol, stack=None):
    got = lm.hidden_states(_inputs(lm), stack=stack)
    want = ref.hidden_states(_inputs(ref), stack=stack)
    assert len(got.layers) == len(want.layers) and torch.equal(got.mask, want.mask)
    for i, (a, b) in enumerate(zip(got.layers, want.layers)):
        assert a.device.type == "cpu" and a.dtype == torch.float32  # hidden_states hands back CPU float32
        assert torch.isfinite(a).all(), f"{lm.name}: layer {i} has non-finite values on {lm.device} / {lm.dtype}"
        err = _rel_err(a, b)
        assert err < tol, f"{lm.name}: layer {i} differs from float32 on the CPU by {err:.2e} (tolerance {tol})"


@pytest.fixture(autouse=True)
def _needs_cuda():
    """Runs only for selected tests: ``-m "not gpu"`` deselects them before this, so nothing is skipped there."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (torch.cuda.is_available() is False); run `pytest -m gpu tests/gpu` on a "
                    "GPU machine")


@pytest.fixture(scope="module")
def cpu_reference():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = load(name, device="cpu")
        return cache[name]
    return get


def test_device_auto_picks_cuda(cpu_reference):
    assert pick_device("auto").type == "cuda"
    lm = load("tiny-bert")  # its params file says device: auto
    assert lm.params.device == "auto" and lm.device.type == "cuda" and lm.dtype == torch.float32
    _check_close(lm, cpu_reference("tiny-bert"), 1e-4)
    twin = lm.random_init()  # the null baseline is built on the model's device, in its dtype
    assert twin.device.type == "cuda" and twin.dtype == torch.float32


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", MODELS)
def test_half_precision_forward_is_finite_and_close_to_float32(name, dtype, cpu_reference):
    lm = load(name, dtype=dtype, device="cuda")
    assert lm.device.type == "cuda" and _weight_dtype(lm) == DTYPES[dtype]
    ref = cpu_reference(name)
    for stack in lm.stacks:
        if stack == "vision" and lm.family == "open_clip":
            x = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
            a, b = lm.hidden_states(x, stack="vision"), ref.hidden_states(x, stack="vision")
            for la, lb in zip(a.layers, b.layers):
                assert torch.isfinite(la).all() and _rel_err(la, lb) < REL_TOL[dtype]
        else:
            _check_close(lm, ref, REL_TOL[dtype], stack=stack)
    twin = lm.random_init()
    assert twin.device.type == "cuda" and _weight_dtype(twin) == DTYPES[dtype]
    assert all(torch.isfinite(t).all() for t in twin.model.parameters() if t.is_floating_point())


def _battery(lm, device):
    return run_battery(lm.model.state_dict(), config=lm.config, family=lm.family, device=device)


@pytest.mark.parametrize("name", ["tiny-t5", "tiny-qwen"])
def test_battery_on_cuda_matches_the_cpu(name, cpu_reference):
    lm = load(name, device="cuda")
    on_gpu, on_cpu = _battery(lm, "cuda"), _battery(cpu_reference(name), "cpu")
    cols = ["stable_rank", "pr", "condition", "max_sv", "min_sv"]
    a, b = on_gpu.svd.set_index("name")[cols], on_cpu.svd.set_index("name")[cols]
    assert list(a.index) == list(b.index) and len(a) > 0
    np.testing.assert_allclose(a.to_numpy(float), b.loc[a.index].to_numpy(float), rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_battery_of_a_half_precision_model_is_close_to_float32(dtype, cpu_reference):
    lm = load("tiny-t5", dtype=dtype, device="cuda")
    half, full = _battery(lm, "cuda"), _battery(cpu_reference("tiny-t5"), "cpu")
    cols = ["stable_rank", "pr", "max_sv"]
    a, b = half.svd.set_index("name")[cols], full.svd.set_index("name").loc[half.svd["name"], cols]
    assert np.isfinite(a.to_numpy(float)).all()
    np.testing.assert_allclose(a.to_numpy(float), b.to_numpy(float), rtol=REL_TOL[dtype])


@pytest.mark.parametrize("name,dtype", [("tiny-t5", "float32"), ("tiny-t5-v1_1", "float16"),
                                        ("tiny-qwen", "bfloat16")])
def test_device_map_auto_places_the_model_through_accelerate(name, dtype, cpu_reference):
    # tiny-t5-v1_1 + float16 + device_map: auto are t5-v1_1-xxl's settings. device="cpu" shows who
    # placed the model: with a device_map the loader never calls .to(device), accelerate does it
    lm = load(name, device_map="auto", device="cpu", dtype=dtype)
    where = {t.device.type for t in lm.model.parameters()}
    assert where == {"cuda"}, f"{name}: device_map auto left parameters on {where}, expected every one on CUDA"
    assert lm.dtype == DTYPES[dtype]
    # accelerate's dispatch_model records hf_device_map when it splits the model over several devices
    placement = getattr(lm.model, "hf_device_map", None) or {}
    assert all(str(d) not in ("cpu", "disk") for d in placement.values()), placement
    for stack in lm.stacks:
        _check_close(lm, cpu_reference(name), REL_TOL.get(dtype, 1e-4), stack=stack)
