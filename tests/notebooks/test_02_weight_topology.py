"""02_weight_topology on the tiny profile: metrics read back and checked for consistency."""
import pytest

pytestmark = pytest.mark.notebooks


def test_02_tiny_t5(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-t5")
    b, n = m["metrics"]["battery"], m["metrics"]["random_init"]
    assert b["family"] == "t5" and n["family"] == "t5"
    assert set(b["qk"]) == {"encoder/self", "decoder/self", "decoder/cross"}
    for k, q in b["qk"].items():
        assert all(p + ng + z == q["d_model"] for p, ng, z in zip(q["n_pos"], q["n_neg"], q["n_zero"]))
    for r in ("q", "k", "v"):
        assert 0 <= b["qkv_sparsity"][r] <= 1
    assert m["headline"]["q_sparsity"]["baseline_kind"] == "random_init"
    assert m["headline"]["q_sparsity"]["value"] == b["qkv_sparsity"]["q"]
    assert b["position_bias"]["encoder"]["n_heads"] == 4


def test_02_tiny_qwen_gqa(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-qwen")
    q = m["metrics"]["battery"]["qk"]["decoder/self"]
    assert q["layers"] == [1, 3] and q["qk_norm"]
    # per head (2·head_dim <= d_model) the sign balance is forced to 0.5 (inertia)
    assert all(abs(x - 0.5) < 1e-12 for x in q["head_balance_mean"])
