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




def _pages(tensors) -> tuple[int, int]:
    """(bytes resident, bytes) of the whole pages inside the tensors' storages (/proc/self/pagemap)."""
    import numpy as np
    resident = total = 0
    with open("/proc/self/pagemap", "rb") as fh:
        for t in tensors:
            lo, size = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
            a, b = -(-lo // common._PAGE), (lo + size) // common._PAGE
            if b > a:
                fh.seek(a * 8)
                flags = np.frombuffer(fh.read((b - a) * 8), dtype=np.uint64)
                resident += int((flags & np.uint64(common._PRESENT)).astype(bool).sum()) * common._PAGE
                total += (b - a) * common._PAGE
    return resident, total


def test_a_loaded_model_hands_back_what_its_forward_read():
    """LoadedModel.release_file_pages after a forward (notebook 01 after its hidden states): the pages the forward
    mapped leave the resident set, and the next forward gives the same hidden states from the page cache."""
    from geolip_lib import models

    lm = models.load("tiny-qwen-wide")  # its safetensors are mapped, as a large checkpoint's are
    tables = {id(lm.model.get_input_embeddings().weight), id(lm.model.get_output_embeddings().weight)}
    # the blocks' matrices of 4 pages or more (a forward reads only a few rows of the tables)
    blocks = [p for p in lm.model.parameters() if id(p) not in tables and p.numel() * p.element_size() >= 4 * 4096]
    assert lm.release_file_pages() > 0 and _pages(blocks)[0] == 0 < _pages(blocks)[1]
    first = lm.hidden_states(["a b c", "hello world"])
    resident, total = _pages(blocks)
    assert resident > 0.9 * total  # the forward read (mapped) the blocks' weights
    assert lm.release_file_pages() >= total
    assert _pages(blocks)[0] == 0
    again = lm.hidden_states(["a b c", "hello world"])
    assert all(torch.equal(a, b) for a, b in zip(first.layers, again.layers))
