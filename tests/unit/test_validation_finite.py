"""as_tensor's finiteness check reads FINITE_CHUNK elements at a time: the verdict and the one-line
message (NaN and Inf counted over the whole tensor) are those of the whole-tensor check."""
from __future__ import annotations

import pytest
import torch

from geolip_lib import validation as V

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("where", [0, 7, 7 * 11 - 1])  # first chunk, a middle chunk, the last (partial) element
def test_a_non_finite_value_in_any_chunk_is_found_and_counted(monkeypatch, where):
    monkeypatch.setattr(V, "FINITE_CHUNK", 5)  # 77 elements: 16 chunks, the last of 2
    x = torch.arange(77, dtype=torch.float32).reshape(7, 11)
    assert V.as_tensor(x, "X") is x and V.all_finite(x)
    x.view(-1)[where] = float("nan")
    x.view(-1)[(where + 40) % 77] = float("inf")
    x.view(-1)[(where + 41) % 77] = float("-inf")
    assert not V.all_finite(x)
    with pytest.raises(ValueError, match=r"^X: contains 1 NaN and 2 Inf values \(of 77\)$"):
        V.as_tensor(x, "X")
    assert V.as_tensor(x, "X", finite=False) is x


def test_a_strided_tensor_is_checked_as_it_is(monkeypatch):
    monkeypatch.setattr(V, "FINITE_CHUNK", 4)
    x = torch.zeros(6, 5)
    x[5, 0] = float("inf")  # only in the rows the transpose's view keeps
    assert not V.all_finite(x.T) and V.all_finite(x[:5].T)
    with pytest.raises(ValueError, match=r"contains 0 NaN and 1 Inf values \(of 30\)"):
        V.as_tensor(x.T, "X")
