"""QK operators on tiny models of every family, checked against independent dense computations."""
from __future__ import annotations

import warnings

import pytest
import torch

from geolip_lib import models
from geolip_lib import operators as op

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tiny_qwen():
    return models.load("tiny-qwen")


def _hf_qk(lm, layer):
    """Query/key weights read straight from the HF module (independent of the catalog)."""
    attn = lm.model.model.layers[layer].self_attn if hasattr(lm.model, "model") else lm.model.layers[layer].self_attn
    cfg = lm.model.config
    H, Hk, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    Wq = attn.q_proj.weight.detach().double()
    if Wq.shape[0] == 2 * H * d:      # Qwen3.5 gated query: per head [query rows; gate rows]
        Wq = Wq.reshape(H, 2 * d, -1)[:, :d].reshape(H * d, -1)
    return Wq, attn.k_proj.weight.detach().double(), H, Hk, d


def test_tiny_qwen_stored_results_match_independent_dense(tiny_qwen, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = op.measure_model(tiny_qwen, top_k=4)
    assert list(res) == ["decoder.self"]
    ops = res["decoder.self"]
    full = [i for i, t in enumerate(tiny_qwen.model.config.layer_types) if t == "full_attention"]
    assert ops.layers == full and ops.n_kv_heads < ops.n_heads          # GQA model
    op.save(ops, tmp_path / "qk")
    back = op.load(tmp_path / "qk.json")
    # independent dense: materialise every hidden × hidden operator from the HF module
    gs = []
    for L in full:
        Wq, Wk, H, Hk, d = _hf_qk(tiny_qwen, L)
        g = torch.stack([Wq[h * d:(h + 1) * d].T @ Wk[(h // (H // Hk)) * d:(h // (H // Hk) + 1) * d]
                         for h in range(H)])                               # (H, n, n)
        gs.append(g)
        S = 0.5 * (g + g.transpose(-1, -2))
        lam = torch.linalg.eigvalsh(S)
        lam = lam.gather(-1, lam.abs().argsort(dim=-1, descending=True))[:, :2 * d]
        i = full.index(L)
        assert torch.allclose(back.sym_eigs[i], lam, atol=1e-9 * lam.abs().max())
        # stored eigen-directions are eigenvectors of the dense symmetric part
        U = back.eig_dirs[i].double()
        SU = (S @ U.transpose(-1, -2)).transpose(-1, -2)
        assert torch.allclose(SU, lam[:, :4, None] * U, atol=1e-5 * lam.abs().max())
    G = torch.stack(gs)                                                     # (L, H, n, n)
    dense_gram = torch.einsum("ahij,bhij->abh", G, G)
    assert torch.allclose(back.gram, dense_gram, atol=1e-10 * dense_gram.abs().max())
    assert torch.allclose(back.fro_sq, G.pow(2).sum((-1, -2)), rtol=1e-10)


@pytest.mark.parametrize("name,groups", [
    ("tiny-t5", {"encoder.self", "decoder.self", "decoder.cross"}),
    ("tiny-bert", {"encoder.self"}),
    ("tiny-dinov2", {"vision.self"}),
])
def test_families_and_cross_attention_match_dense(name, groups):
    lm = models.load(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = op.measure_model(lm, top_k=2)
    assert set(res) == groups
    from geolip_lib.families import catalog
    from geolip_lib.weights import TensorStore

    store = TensorStore(lm)
    for gname, ops in res.items():
        blocks = op.attention_groups(lm)[gname]
        Wq, Wk = op.load_group_weights(store, blocks)
        assert torch.allclose(ops.sym_eigs, op.dense_sym_eigvals(Wq, Wk, ops.n_heads, ops.n_kv_heads),
                              atol=1e-9 * ops.sym_eigs.abs().max())
        assert torch.allclose(ops.gram, op.dense_layer_gram(Wq, Wk, ops.n_heads, ops.n_kv_heads),
                              atol=1e-10 * ops.gram.abs().max())
        a = op.analyse(ops)
        assert a["diag_cos_mean"] == pytest.approx(1.0)
    assert len(catalog(lm).attention_blocks()) > 0


def test_random_init_baseline_is_near_orthogonal(tiny_qwen):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ops = op.measure_model(tiny_qwen.random_init(), top_k=2)["decoder.self"]
    a = op.analyse(ops)
    assert abs(a["mean_cos_to_anchor"]) < 0.2


# ---------------------------------------------------------------- seed 004's model family: Qwen3 (no linear attention)
TINY_QWEN3 = {"name": "tiny-qwen3", "family": "decoder_lm", "source": "tiny", "architecture": "qwen3",
              "config": {"model_type": "qwen3", "num_hidden_layers": 3, "layer_types": ["full_attention"] * 3}}


def test_tiny_qwen3_every_layer_is_measured_and_matches_dense():
    """Qwen3 (seed 004's Qwen3-4B family): every layer is full attention, q_proj is not gated
    (n_heads·head_dim rows), q/k are RMS-normed per head; the factored results equal the
    operators built densely from the HF module."""
    from geolip_lib.families import family_for
    from geolip_lib.params import load_model_params

    p = load_model_params("qwen3-4b")
    assert (p.family, p.source, p.id, p.architecture) == ("decoder_lm", "hub", "Qwen/Qwen3-4B", "qwen3")
    assert family_for({"model_type": p.architecture}) == "decoder_lm"
    lm = models.load(TINY_QWEN3)
    assert lm.model.config.model_type == "qwen3"
    with pytest.warns(UserWarning, match="RMS-normalised per head"):
        res = op.measure_model(lm, top_k=2)
    ops = res["decoder.self"]
    assert list(res) == ["decoder.self"] and ops.layers == [0, 1, 2] and ops.meta["qk_norm"] == ["k", "q"]
    for i in ops.layers:
        Wq, Wk, H, Hk, d = _hf_qk(lm, i)
        assert Wq.shape[0] == H * d                                            # no query gate rows
        assert torch.allclose(ops.sym_eigs[i], op.dense_sym_eigvals(Wq, Wk, H, Hk), atol=1e-9 * ops.sym_eigs.abs().max())
    a = op.analyse(ops)
    assert a["spectral"]["cos_matrix"].diagonal().allclose(torch.ones(3, dtype=torch.float64))


def test_qwen3_4b_offline_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    with pytest.raises(models.ModelLoadError) as ei:
        models.load("qwen3-4b")
    msg = str(ei.value)
    assert "\n" not in msg and "model 'qwen3-4b'" in msg and "Qwen/Qwen3-4B" in msg and "HF_HUB_OFFLINE=1" in msg
