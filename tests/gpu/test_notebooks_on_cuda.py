"""Every notebook through papermill on its default tiny model on a real CUDA device, and the
random-init nulls on CUDA against the CPU. The CPU guard of the same paths is
tests/notebooks/test_notebooks_on_fake_cuda.py (``make test-fake-cuda``); this is what only a GPU
can check: CUDA kernels, their numerics and memory. Run on a GPU box with ``make test-gpu``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from geolip_lib.models import load

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(autouse=True)
def _needs_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (torch.cuda.is_available() is False); run `make test-gpu` on a GPU box")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_on_cuda_through_papermill(name, tmp_path, monkeypatch):
    import papermill as pm

    monkeypatch.setenv("GEOLIP_NULL_CACHE", "off")  # the nulls are computed on the GPU, not read
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    out = tmp_path / "job"
    pm.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(tmp_path / "executed.ipynb"),
                        parameters={"OUT_DIR": str(out), "DEVICE": "cuda"}, kernel_name="python3",
                        cwd=str(ROOT / "notebooks"), progress_bar=False)
    m = json.loads((out / "metrics.json").read_text())
    assert m["provenance"]["device"]["kind"] == "cuda"
    if m["provenance"].get("model_device") is not None:
        assert str(m["provenance"]["model_device"]).startswith("cuda")


@pytest.mark.parametrize("name", ["tiny-t5", "tiny-qwen"])
def test_random_init_nulls_on_cuda_match_the_cpu(name):
    from geolip_lib.operators.nulls import operator_null
    from geolip_lib.weights.nulls import battery_null

    gpu, cpu = load(name, device="cuda"), load(name, device="cpu")
    a = battery_null(gpu, 2, device="cuda", cache=False).seeds
    b = battery_null(cpu, 2, device="cpu", cache=False).seeds
    assert len(a) == len(b) == 2
    _close(list(a), list(b))
    oa = operator_null(gpu, 2, k=4, cache=False, device="cuda").samples
    ob = operator_null(cpu, 2, k=4, cache=False, device="cpu").samples
    assert oa.keys() == ob.keys() and oa
    _close({g: list(v) for g, v in oa.items()}, {g: list(v) for g, v in ob.items()})


def _floats(x, path=""):
    """(path, value) of every finite number in a nested record."""
    if isinstance(x, dict):
        return [p for k in sorted(x, key=str) for p in _floats(x[k], f"{path}.{k}")]
    if isinstance(x, (list, tuple)):
        return [p for i, v in enumerate(x) for p in _floats(v, f"{path}[{i}]")]
    if isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and np.isfinite(x):
        return [(path, float(x))]
    return []


def _close(a, b):
    fa, fb = _floats(a), _floats(b)
    assert [p for p, _ in fa] == [p for p, _ in fb] and len(fa) > 4
    np.testing.assert_allclose([v for _, v in fa], [v for _, v in fb], rtol=1e-4, atol=1e-6)
