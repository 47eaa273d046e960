"""embed_vs_output of a large table reads EVO_ROWS rows at a time: the same per-token cosines as the
whole-table float64 form, the Frobenius norms to round-off; below EVO_WHOLE_MAX the whole form itself."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib.probes import architecture as A

pytestmark = pytest.mark.unit

_g = torch.Generator().manual_seed(0)
E = torch.randn(1001, 77, generator=_g)
O = 0.3 * torch.randn(1001, 77, generator=_g) + E


def test_rows_in_chunks_give_the_whole_tables_numbers(monkeypatch):
    whole, cw = A.embed_vs_output(E, O, return_data=True)
    a, b = E.to(torch.float64), O.to(torch.float64)
    assert np.array_equal(cw, torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-8).numpy())
    assert whole["frobenius"]["difference"] == float((a - b).norm())
    monkeypatch.setattr(A, "EVO_WHOLE_MAX", 0)
    monkeypatch.setattr(A, "EVO_ROWS", 64)  # 15 chunks of 64 rows and one of 41
    chunked, cc = A.embed_vs_output(E, O, return_data=True)
    assert np.array_equal(cc, cw) and chunked["per_token_cosine"] == whole["per_token_cosine"]
    for k, v in whole["frobenius"].items():
        assert chunked["frobenius"][k] == pytest.approx(v, rel=1e-12), k


def test_a_non_finite_or_misshaped_output_table_is_one_line(monkeypatch):
    monkeypatch.setattr(A, "EVO_WHOLE_MAX", 0)
    with pytest.raises(ValueError, match=r"^O: expected the input-embedding shape \(1001, 77\), got \(1000, 77\)$"):
        A.embed_vs_output(E, O[:1000])
    bad = O.clone()
    bad[3, 4] = float("nan")
    with pytest.raises(ValueError, match=r"^O: contains 1 NaN and 0 Inf values"):
        A.embed_vs_output(E, bad)
