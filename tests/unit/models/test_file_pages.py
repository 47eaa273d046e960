"""A model read through a checkpoint's mmap: the load check (check_finite) reads every tensor in
chunks and leaves its pages out of the resident set (geolip_lib.models.common.release_file_pages);
the values stay, pages written since they were mapped are kept, a NaN is still named."""
from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from geolip_lib.models import common

N = 1 << 22  # 16 MiB of float32


def _rss_file() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("RssFile"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile")


@pytest.fixture
def mapped(tmp_path):
    ref = torch.randn(N, generator=torch.Generator().manual_seed(0))
    save_file({"w": ref, "b": torch.arange(7.0)}, tmp_path / "m.safetensors")
    return ref, load_file(tmp_path / "m.safetensors")  # safetensors maps the file: tensors are views of it


def test_released_pages_leave_the_resident_set_and_keep_their_values(mapped):
    ref, t = mapped
    w = t["w"]
    assert float(w.sum()) == float(ref.sum())  # every page read: resident
    before = _rss_file()
    freed = common.release_file_pages([w, t["b"]])
    assert freed >= w.numel() * 4 - 2 * common._PAGE  # the whole pages inside the tensor
    assert before - _rss_file() >= freed * 0.9
    assert torch.equal(w, ref)  # read again from the page cache: the same values


def test_a_written_tensor_keeps_its_pages(mapped):
    ref, t = mapped
    w = t["w"]
    w[N // 2] = 7.0  # a private copy of one page
    assert common.release_file_pages([w]) == 0
    assert float(w[N // 2]) == 7.0 and torch.equal(w[:N // 4], ref[:N // 4])


def test_check_finite_leaves_a_mapped_model_out_of_the_resident_set(mapped):
    ref, t = mapped
    model = torch.nn.Module()
    model.w = torch.nn.Parameter(t["w"], requires_grad=False)
    common.release_file_pages([model.w])
    before = _rss_file()
    common.check_finite(model, "mapped")
    assert _rss_file() - before < N * 4 // 4  # checked, and not held resident
    assert torch.equal(model.w, ref)


def test_check_finite_names_a_nan_past_the_first_chunk():
    model = torch.nn.Linear(3, 2 * common.FINITE_CHUNK // 3 + 3)
    with torch.no_grad():
        model.weight.view(-1)[common.FINITE_CHUNK + 5] = float("nan")
    with pytest.raises(common.ModelLoadError, match=r"tensor weight has 1 NaN and 0 Inf values"):
        common.check_finite(model, "m")
