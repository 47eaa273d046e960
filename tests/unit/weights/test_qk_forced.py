"""Structure forces some QK balances: grouped-query attention with
2·n_kv_heads·head_dim ≤ d gives exactly as many positive as negative nonzero eigenvalues of the
layer form whatever the weights hold; the battery marks such values "forced by shape", the
headlines carry the mark, and the cross-model QK means leave them out."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from geolip_lib.metrics.factored_qk import FactoredQK, qk_balance_forced
from geolip_lib.weights.battery.qk import qk_block
from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT, qk_seed_form
from geolip_lib.weights.tables import cross_stack_headline
from geolip_lib.weights.tables.claims import _qk_claim

pytestmark = pytest.mark.unit


def _aligned_gqa(seed: int, d=160, n_heads=16, head_dim=16, n_kv=4):
    """Random keys; each query head = its group's key head + a little noise (Q aligned to K)."""
    g = torch.Generator().manual_seed(seed)
    K = torch.randn(n_kv * head_dim, d, generator=g, dtype=torch.float64)
    Kh = K.reshape(n_kv, head_dim, d).repeat_interleave(n_heads // n_kv, dim=0)
    Q = (Kh + 0.1 * torch.randn(Kh.shape, generator=g, dtype=torch.float64)).reshape(n_heads * head_dim, d)
    return Q, K


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gqa_layer_form_is_balanced_whatever_the_weights_and_detected_from_the_shapes(seed):
    Q, K = _aligned_gqa(seed)
    inn = FactoredQK.from_layer(Q, K, 16, 4).inertia()
    assert (int(inn["n_pos"]), int(inn["n_neg"])) == (64, 64)
    assert "2·4·16 = 128 ≤ d = 160" in qk_balance_forced(160, 16, 16, 4)
    # the seed's inner × inner form: 64 / 64 nonzero, the other 128 are round-off zeros
    Kfull = K.reshape(4, 16, 160).repeat_interleave(4, dim=0).reshape(256, 160)
    ev = torch.linalg.eigvalsh(0.5 * (Q @ Kfull.T + Kfull @ Q.T))
    tol = 1e-9 * ev.abs().max()
    assert int((ev > tol).sum()) == int((ev < -tol).sum()) == 64
    assert qk_balance_forced(160, 16, 16, 4, form="seed") is not None


def test_full_multi_head_attention_is_not_forced_and_aligned_weights_show_it():
    """Same alignment without GQA (d = 64, 4 heads of 16): nothing forces 0.5, and it is far from it."""
    assert qk_balance_forced(64, 4, 16, 4) is None and qk_balance_forced(64, 4, 16, 4, form="seed") is None
    assert qk_balance_forced(64, 4, 16, form="head") is not None  # per head: always (2·16 ≤ 64)
    g = torch.Generator().manual_seed(0)
    K = torch.randn(64, 64, generator=g, dtype=torch.float64)
    Q = K + 0.1 * torch.randn(64, 64, generator=g, dtype=torch.float64)
    assert float(FactoredQK.from_layer(Q, K, 4).inertia()["balance"]) > 0.9
    assert float(qk_seed_form(Q, K)["pos_frac"]) > 0.9
    assert "grouped-query attention forces it too" in QK_BALANCE_STATEMENT


def _block(n_heads, n_kv, head_dim):
    return SimpleNamespace(stack="decoder", attn="self", layer=0, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim,
                           qk_norm=False, kv_head=lambda h: h // (n_heads // n_kv))


def test_the_battery_row_marks_the_forced_layer_and_the_claim_carries_it():
    Q, K = _aligned_gqa(0)
    row, _heads, _eig = qk_block(_block(16, 4, 16), Q, K)
    assert row["n_pos"] == row["n_neg"] == 64 and row["forced_by_shape"] and row["seed_forced_by_shape"]
    g = torch.Generator().manual_seed(1)
    A, B = torch.randn(64, 64, generator=g, dtype=torch.float64), torch.randn(64, 64, generator=g, dtype=torch.float64)
    row_mha, _, _ = qk_block(_block(4, 4, 16), A, B)
    assert row_mha["forced_by_shape"] is None and row_mha["seed_forced_by_shape"] is None
    summary = {"qk": {"decoder/self": {"seed_pos_frac": [0.5, 0.5], "balance": [0.5, 0.5],
                                        "forced_by_shape": row["forced_by_shape"],
                                        "seed_forced_by_shape": row["seed_forced_by_shape"]}}}
    h = _qk_claim(summary, None, "decoder/self", seed=0, n_boot=10)
    assert h["forced_by_shape"] and h["project"]["forced_by_shape"] and h["kind"] == "exact"
    assert h["interval"]["method"] == "exact (all 2 layers)"


def test_cross_model_qk_mean_leaves_out_forced_rows():
    stacks = pd.DataFrame([
        {"model": "tiny-qwen", "weights": "trained", "stack/attn": "decoder/self", "QK seed (mean)": 0.5,
         "QK seed forced": True},
        {"model": "tiny-bert", "weights": "trained", "stack/attn": "encoder/self", "QK seed (mean)": 0.45,
         "QK seed forced": False},
        {"model": "tiny-t5", "weights": "trained", "stack/attn": "encoder/self", "QK seed (mean)": 0.47,
         "QK seed forced": False},
    ])
    h = cross_stack_headline(stacks, "QK seed (mean)", label="QK", n_boot=50)
    assert h["value"] == pytest.approx(0.46) and h["excluded_forced_by_shape"] == ["tiny-qwen · decoder/self"]
    assert "tiny-qwen · decoder/self" in h["note"]
