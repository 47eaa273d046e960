"""Simulated Q4_1 (geolip_lib.models.quantize): ggml's rounding, by its definition and its properties."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib.models import quantize as Q

pytestmark = pytest.mark.unit

FP16_REL = 2.0 ** -11  # half of fp16's epsilon: the relative rounding of the stored d and m


def _ggml_reference(w: np.ndarray) -> np.ndarray:
    """quantize_row_q4_1_ref + dequantize_row_q4_1 of ggml-quants.c, written out block by block:
    d = (max - min) / 15, q = min(15, (int)((w - min) / d + 0.5)), d and min stored as fp16."""
    out = np.empty_like(w, dtype=np.float32)
    for i, b in enumerate(w.astype(np.float32).reshape(-1, 32)):
        lo, hi = np.float32(b.min()), np.float32(b.max())
        d = np.float32((hi - lo) / np.float32(15))
        inv = np.float32(1) / d if d else np.float32(0)
        q = np.minimum(15, np.trunc((b - lo) * inv + np.float32(0.5))).astype(np.float32)
        d16, m16 = np.float32(np.float16(d)), np.float32(np.float16(lo))
        out.reshape(-1, 32)[i] = d16 * q + m16
    return out


@pytest.fixture
def w():
    rng = np.random.default_rng(0)
    return (rng.standard_t(4, size=(24, 96)) * 0.05).astype(np.float32)  # heavy tails, like trained weights


def test_matches_ggml_definition(w):
    np.testing.assert_array_equal(Q.round_trip(w), _ggml_reference(w))


def test_idempotent(w):
    once = Q.round_trip(w)
    np.testing.assert_array_equal(Q.round_trip(once), once)


def test_error_at_most_half_a_step_per_block(w):
    d, m = Q.block_parameters(w)
    err = np.abs(w - Q.round_trip(w)).reshape(-1, 32).max(axis=1)
    assert (err > 0).any()
    # half a quantization step, plus what storing d and m in fp16 moves each code (|Δm| + 15·|Δd|)
    slack = FP16_REL * (np.abs(m) + 15 * d) * 1.01 + 1e-7
    assert np.all(err <= d / 2 + slack)
    assert (err > 0.4 * d).mean() > 0.5  # and the bound is not loose: most blocks use most of it


def test_exact_on_blocks_already_on_the_grid():
    rng = np.random.default_rng(1)
    d, m = np.float32(2.0 ** -6), np.float32(-0.125)  # fp16-exact step and minimum
    q = rng.integers(0, 16, size=(8, 64)).astype(np.float32)
    q[:, 0], q[:, 1], q[:, 32], q[:, 33] = 0, 15, 0, 15  # every block spans the whole grid
    grid = d * q + m
    np.testing.assert_array_equal(Q.round_trip(grid), grid)


def test_constant_block_is_kept():
    w = np.full((2, 32), 0.3, dtype=np.float32)
    np.testing.assert_allclose(Q.round_trip(w), np.float32(np.float16(0.3)), rtol=0)


def test_torch_keeps_dtype_and_device(w):
    t = torch.from_numpy(w).double()
    out = Q.round_trip(t)
    assert out.dtype == torch.float64 and out.device == t.device
    np.testing.assert_array_equal(out.float().numpy(), Q.round_trip(w))


def test_quantize_model_rounds_matrices_only():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 20), torch.nn.LayerNorm(20), torch.nn.Linear(20, 5))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    done = Q.quantize_model(model)
    assert done == {"0.weight": "Q4_1"}  # rows of 64; the (5, 20) matrix's rows are no whole block
    after = model.state_dict()
    for k in ("0.bias", "1.weight", "1.bias", "2.weight", "2.bias"):
        assert torch.equal(after[k], before[k]), k
    np.testing.assert_array_equal(after["0.weight"].numpy(), Q.round_trip(before["0.weight"].numpy()))


def test_bad_input_is_one_line():
    with pytest.raises(ValueError, match="multiple of 32"):
        Q.round_trip(np.zeros((3, 30), dtype=np.float32))
    with pytest.raises(ValueError, match="unknown quantization 'q3'"):
        Q.round_trip(np.zeros((3, 32), dtype=np.float32), "q3")
    with pytest.raises(ValueError, match="nothing to quantize"):
        Q.quantize_model(torch.nn.Linear(30, 4))


def test_provenance_says_simulated():
    p = Q.provenance("q4_1", {"a.weight": "Q4_1"})
    assert p["dequantized"] is True and p["simulated"] is True and p["quantization"] == {"a.weight": "Q4_1"}
