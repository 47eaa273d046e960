"""Factored QK operators == dense references; gram properties; GQA; analyses; save/load."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group

from geolip_lib import operators as op

pytestmark = pytest.mark.unit

SHAPES = [  # (layers, n_heads, n_kv_heads, head_dim, hidden)
    (3, 4, 2, 8, 40),     # GQA, full rank
    (2, 4, 4, 8, 12),     # 2·head_dim > hidden: rank-deficient, Cholesky falls back
    (3, 6, 3, 4, 64),
    (1, 2, 1, 16, 48),
]


def _weights(L, H, Hk, d, n, seed, k_scale=1.0):
    g = torch.Generator().manual_seed(seed)
    Wq = torch.randn(L, H * d, n, generator=g)
    Wk = torch.randn(L, Hk * d, n, generator=g) * k_scale
    return Wq, Wk


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_factored_eigenvalues_equal_dense(shape, seed):
    L, H, Hk, d, n = shape
    Wq, Wk = _weights(L, H, Hk, d, n, seed, k_scale=10.0 ** (seed - 1))  # unbalanced Q/K scales
    ev, _ = op.sym_eig(Wq, Wk, H, Hk)
    ref = op.dense_sym_eigvals(Wq, Wk, H, Hk)
    assert ev.shape == (L, H, 2 * d)
    assert torch.allclose(ev, ref, rtol=0, atol=1e-10 * ref.abs().max())
    # sorted by decreasing magnitude
    assert bool((ev.abs()[..., :-1] >= ev.abs()[..., 1:] - 1e-12).all())


@pytest.mark.parametrize("shape", SHAPES[:3])
def test_eigendirections_are_unit_eigenvectors_of_symmetric_part(shape):
    L, H, Hk, d, n = shape
    Wq, Wk = _weights(L, H, Hk, d, n, 7)
    k = 3
    ev, U = op.sym_eig(Wq, Wk, H, Hk, top_k=k)
    g = op.dense_operators(Wq, Wk, H, Hk)
    S = 0.5 * (g + g.transpose(-1, -2))
    SU = (S @ U.transpose(-1, -2)).transpose(-1, -2)                 # (L, H, k, n)
    assert torch.allclose(SU, ev[..., :k, None] * U, atol=1e-10 * ev.abs().max())
    assert torch.allclose(U.norm(dim=-1), torch.ones(L, H, k, dtype=torch.float64))


def test_full_rank_heads_have_exactly_half_positive_eigenvalues():
    """Sylvester's law of inertia: S = ½ Mᵀ J M with J of inertia (d, d)."""
    for seed in range(3):
        Wq, Wk = _weights(2, 4, 2, 8, 50, seed)
        ev, _ = op.sym_eig(Wq, Wk, 4, 2)
        assert float(op.fraction_positive(ev).max()) == 0.5 == float(op.fraction_positive(ev).min())


def test_kv_head_index_and_gqa_mapping():
    assert op.kv_head_index(8, 2).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert op.kv_head_index(6, 6).tolist() == list(range(6))
    with pytest.raises(ValueError, match="n_kv_heads"):
        op.kv_head_index(6, 4)
    H, Hk, d, n = 8, 2, 4, 20
    Wq, Wk = _weights(1, H, Hk, d, n, 3)
    Q, K = op.split_heads(Wq[0], Wk[0], H, Hk)
    for h in range(H):
        assert torch.equal(Q[h], Wq[0, h * d:(h + 1) * d].double())
        kv = h // (H // Hk)
        assert torch.equal(K[h], Wk[0, kv * d:(kv + 1) * d].double())
    # the factored eigenvalues equal those of a model with K repeated explicitly (no GQA)
    Wk_rep = Wk[0].reshape(Hk, d, n).repeat_interleave(H // Hk, 0).reshape(H * d, n)
    a, _ = op.sym_eig(Wq[0], Wk[0], H, Hk)
    b, _ = op.sym_eig(Wq[0], Wk_rep, H, H)
    assert torch.allclose(a, b, atol=1e-12 * a.abs().max())


@pytest.mark.parametrize("shape", SHAPES)
def test_layer_gram_symmetric_diag_is_fro_sq_and_equals_dense(shape):
    L, H, Hk, d, n = shape
    Wq, Wk = _weights(L, H, Hk, d, n, 11)
    gram = op.layer_gram(Wq, Wk, H, Hk)
    assert gram.shape == (L, L, H)
    assert torch.equal(gram, gram.transpose(0, 1))
    fro = op.operator_fro_sq(Wq, Wk, H, Hk)
    assert torch.allclose(gram.diagonal(dim1=0, dim2=1).T, fro, rtol=1e-12)
    dense = op.dense_layer_gram(Wq, Wk, H, Hk)
    assert torch.allclose(gram, dense, atol=1e-11 * dense.abs().max())
    g = op.dense_operators(Wq, Wk, H, Hk)
    assert torch.allclose(fro, (g ** 2).sum((-1, -2)), rtol=1e-12)


def test_seed_pitfall_wk_wqT_norm_is_not_the_operator_norm():
    Wq, Wk = _weights(1, 1, 1, 8, 30, 5)
    pitfall = float((Wk[0].double() @ Wq[0].double().T).pow(2).sum())   # ‖W_K W_Qᵀ‖_F²
    true = float(op.operator_fro_sq(Wq[0], Wk[0], 1, 1)[0])
    dense = float(op.dense_operators(Wq[0], Wk[0], 1, 1).pow(2).sum())
    assert math.isclose(true, dense, rel_tol=1e-12)
    assert abs(pitfall - true) > 0.01 * true


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match="^W_K:"):
        op.sym_eig(torch.randn(16, 10), torch.randn(12, 10), 2, 1)
    with pytest.raises(ValueError, match="^W_Q:"):
        op.sym_eig(torch.randn(15, 10), torch.randn(16, 10), 2, 2)
    with pytest.raises(ValueError, match="^top_k:"):
        op.sym_eig(torch.randn(16, 10), torch.randn(16, 10), 2, 2, top_k=99)
    with pytest.raises(ValueError, match="^W_Qs"):
        op.layer_gram(torch.randn(16, 10), torch.randn(16, 10), 2, 2)


def test_principal_angles_identical_orthogonal_and_known_angle():
    rng = np.random.default_rng(0)
    for seed in range(3):
        A = np.random.default_rng(seed).standard_normal((4, 20))
        mix = rng.standard_normal((4, 4))
        pa = op.principal_angles(A, mix @ A)                  # same span, other basis
        assert torch.allclose(pa, torch.zeros(4, dtype=torch.float64), atol=1e-6)
    E = np.eye(10)
    assert torch.allclose(op.principal_angles(E[:3], E[3:6]), torch.full((3,), math.pi / 2, dtype=torch.float64))
    theta = 0.3
    a = E[:1]
    b = (math.cos(theta) * E[0] + math.sin(theta) * E[1])[None]
    assert math.isclose(float(op.principal_angles(a, b)[0]), theta, rel_tol=1e-9)
    assert math.isclose(float(op.top1_overlap(a, b)), math.cos(theta) ** 2, rel_tol=1e-12)


def test_operator_cosine_and_rescale_residual_closed_form():
    Wq, Wk = (w.double() for w in _weights(4, 2, 2, 4, 24, 1))
    Wq[1] = -3.0 * Wq[0]           # g_1 = −3 g_0
    Wk[1] = Wk[0]
    gram = op.layer_gram(Wq, Wk, 2, 2)
    cos = op.operator_cosine(gram)
    assert torch.allclose(cos[0, 1], torch.full((2,), -1.0, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(cos.diagonal(dim1=0, dim2=1), torch.ones(2, 4, dtype=torch.float64))
    r = op.rescale_residual(gram, anchor=0)
    assert torch.allclose(r["T"][1], torch.full((2,), -3.0, dtype=torch.float64), rtol=1e-10)
    assert float(r["resid_frac"][1].max()) < 1e-6
    # residual fraction = ‖g_L − T g_a‖ / ‖g_L‖ computed densely
    g = op.dense_operators(Wq, Wk, 2, 2)
    T = r["T"][2][:, None, None]
    dense_res = (g[2] - T * g[0]).pow(2).sum((-1, -2)).sqrt() / g[2].pow(2).sum((-1, -2)).sqrt()
    assert torch.allclose(r["resid_frac"][2], dense_res, rtol=1e-9)


def test_sign_agreement_and_verdict():
    ev = torch.tensor([[[3.0, -2.0, 1.0, -0.5]], [[3.0, 2.0, -1.0, -0.5]]])   # (L=2, H=1, 4)
    agree = op.sign_agreement(ev, anchor=0, k=4)
    assert agree[0, 0] == 1.0 and agree[1, 0] == 0.5
    assert op.sign_agreement(ev, anchor=-1, k=1)[0, 0] == 1.0
    assert op.verdict(0.95).startswith("STRONG")
    assert op.verdict(0.6).startswith("MEDIUM")
    assert op.verdict(0.2).startswith("WEAK")
    assert op.verdict(0.0).startswith("REJECTED")
    with pytest.raises(ValueError, match="^anchor:"):
        op.sign_agreement(ev, anchor=5, k=2)


def test_analyse_identical_layers_is_strong_and_random_is_rejected():
    L, H, Hk, d, n = 4, 4, 2, 8, 96
    Wq, Wk = _weights(L, H, Hk, d, n, 2)
    same = op.measure_layers(Wq[:1].repeat(L, 1, 1) * torch.arange(1, L + 1)[:, None, None], Wk[:1].repeat(L, 1, 1),
                             H, Hk, top_k=4)
    a = op.analyse(same)
    assert a["verdict"].startswith("STRONG") and a["mean_cos_to_anchor"] > 0.999
    assert float(a["principal_angles"]["mean_deg"].max()) < 1e-2
    assert a["sign_agreement"][4]["mean"] == 1.0
    rnd = op.analyse(op.measure_layers(Wq, Wk, H, Hk, top_k=4))
    assert rnd["verdict"].startswith("REJECTED") and abs(rnd["mean_cos_to_anchor"]) < 0.1
    assert rnd["diag_cos_mean"] == pytest.approx(1.0)


def test_save_load_roundtrip(tmp_path):
    Wq, Wk = _weights(3, 4, 2, 4, 20, 4)
    ops = op.measure_layers(Wq, Wk, 4, 2, top_k=3, layers=[1, 3, 5], group="decoder.self", meta={"m": "x"})
    js, st = op.save(ops, tmp_path / "qk")
    assert js.name == "qk.json" and st.name == "qk.safetensors"
    back = op.load(js)
    assert back.layers == [1, 3, 5] and back.group == "decoder.self" and back.meta == {"m": "x"}
    for k in ("gram", "fro_sq", "sym_eigs", "eig_dirs"):
        assert torch.equal(getattr(back, k), getattr(ops, k))
    assert not list(tmp_path.glob("*.pt")) and not list(tmp_path.glob("*.pkl"))
    with pytest.raises(ValueError, match="^path:"):
        op.load(tmp_path / "missing.json")


def test_measure_layers_accepts_per_layer_lists_and_checks_them():
    Wq, Wk = _weights(3, 2, 1, 4, 16, 8)
    a = op.measure_layers(list(Wq), list(Wk), 2, 1, top_k=2)
    b = op.measure_layers(Wq, Wk, 2, 1, top_k=2)
    assert torch.equal(a.gram, b.gram) and torch.equal(a.sym_eigs, b.sym_eigs)
    assert a.eig_dirs.shape == (3, 2, 2, 16) and a.layers == [0, 1, 2]
    with pytest.raises(ValueError, match=r"^W_Qs\[1\]"):
        op.measure_layers([Wq[0], Wq[1][:4]], list(Wk[:2]), 2, 1)
    with pytest.raises(ValueError, match="^layers:"):
        op.measure_layers(Wq, Wk, 2, 1, layers=[0, 1])
    Wq[1, 0, 0] = float("inf")
    with pytest.raises(ValueError, match="^W_Q"):
        op.measure_layers(Wq, Wk, 2, 1)


# ----------------------------------------------------------------- spectral cosine (seed 004's question)
def _conjugated_and_scaled(seed: int, L_extra: float = 2.5):
    """Layer 0: random (Wq, Wk); layer 1: the same operators conjugated by one orthogonal O
    (g → Oᵀ g O: W → W O); layer 2: layer 0 scaled by ``L_extra`` (g → c g)."""

    H, Hk, d, n = 3, 3, 4, 24
    Wq, Wk = (w[0].double() for w in _weights(1, H, Hk, d, n, seed))
    O = torch.from_numpy(ortho_group.rvs(n, random_state=seed))
    return torch.stack([Wq, Wq @ O, L_extra * Wq]), torch.stack([Wk, Wk @ O, Wk]), H, O


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spectral_cosine_is_one_under_conjugation_where_operator_cosine_is_not(seed):
    Wq, Wk, H, O = _conjugated_and_scaled(seed)
    ops = op.measure_layers(Wq, Wk, H, top_k=2)
    spec, cos = op.spectral_cosine(ops.sym_eigs), op.operator_cosine(ops.gram)
    # dense check of the construction: g_1 = Oᵀ g_0 O
    g = op.dense_operators(Wq, Wk, H)
    assert torch.allclose(g[1], O.T @ g[0] @ O, atol=1e-10)
    # conjugated: same spectrum (spectral cosine 1), other operator (operator cosine well below 1)
    assert torch.allclose(spec[0, 1], torch.ones(H, dtype=torch.float64), atol=1e-12)
    assert float(cos[0, 1].abs().max()) < 0.9
    # scaled: both cosines are 1
    assert torch.allclose(spec[0, 2], torch.ones(H, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(cos[0, 2], torch.ones(H, dtype=torch.float64), atol=1e-12)
    # symmetric in (L, L'), 1 on the diagonal, and the analysis reports the same numbers
    assert torch.allclose(spec, spec.transpose(0, 1)) and torch.allclose(spec.diagonal(dim1=0, dim2=1),
                                                                        torch.ones(H, 3, dtype=torch.float64))
    a = op.analyse(ops, anchor=0)
    assert a["spectral"]["mean_cos_to_anchor"] == pytest.approx(1.0, abs=1e-12)
    assert a["mean_cos_to_anchor"] == pytest.approx(float(cos[1:, 0].mean()), abs=1e-12)
    s = op.headline_samples(ops, anchor=0)
    assert np.mean(s["spec_minus_op"]["values"]) == pytest.approx(1.0 - a["mean_cos_to_anchor"], abs=1e-12)


def test_spectral_cosine_closed_form_order_invariance_and_von_neumann_bound():
    # closed form on given spectra; input order (by magnitude, as stored) does not matter
    ev = torch.tensor([[[3.0, -2.0, 1.0, 0.0]], [[-2.0, 1.0, 0.0, 3.0]], [[1.0, 1.0, -1.0, -1.0]]])
    spec = op.spectral_cosine(ev)
    assert float(spec[0, 1, 0]) == pytest.approx(1.0)
    a, b = np.array([3.0, 1.0, 0.0, -2.0]), np.array([1.0, 1.0, -1.0, -1.0])     # sorted descending
    assert float(spec[0, 2, 0]) == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-12)
    # symmetric operators (W_K = W_Q, g = W_Qᵀ W_Q): operator cosine ≤ spectral cosine (von Neumann)
    Wq, _ = _weights(4, 2, 2, 4, 10, 5)
    ops = op.measure_layers(Wq, Wq, 2, top_k=1)
    gap = op.spectral_cosine(ops.sym_eigs) - op.operator_cosine(ops.gram)
    assert float(gap.min()) >= -1e-12 and float(gap.max()) > 1e-3
    with pytest.raises(ValueError, match="^sym_eigs:"):
        op.spectral_cosine(torch.zeros(2, 3))
