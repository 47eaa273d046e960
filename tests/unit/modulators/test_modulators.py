"""Unit tests of geolip_lib.modulators (no model): geometry, modulators, trainer, pipeline."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geolip_lib import metrics
from geolip_lib.modulators import (
    CMValidator, FieldModulatorConfig, GeometricFieldModulator, GeometricResidualModulator,
    ModulatorTrainer, eigen_embedding, knn_project, pentachoron_cv_check, per_token_preservation,
    procrustes_projection, regular_simplex, regular_simplex_volume, relational_comparison, sample_pairs,
    split_indices, token_differences,
)

pytestmark = pytest.mark.unit


# ------------------------------------------------------------------ simplex geometry
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("extra", [0, 3])
def test_regular_simplex_edges_equal_and_centred(k, extra):
    v = regular_simplex(k, k + extra, dtype=torch.float64)
    assert v.shape == (k + 1, k + extra)
    d = torch.cdist(v, v)
    iu = torch.triu_indices(k + 1, k + 1, 1)
    assert torch.allclose(d[iu[0], iu[1]], torch.ones(iu.shape[1], dtype=torch.float64), atol=1e-12)
    assert v.mean(0).abs().max() < 1e-12
    # its Cayley-Menger volume is the closed form, and agrees with geolip_lib.metrics
    vol = CMValidator(k)(v)[1].sqrt().item()
    assert vol == pytest.approx(regular_simplex_volume(k), rel=1e-10)
    assert vol == pytest.approx(metrics.regular_simplex_volume(k), rel=1e-10)


def test_regular_simplex_rejects_small_edim():
    with pytest.raises(ValueError, match="edim"):
        regular_simplex(4, 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_cm_validator_matches_metrics(seed, k):
    g = torch.Generator().manual_seed(seed)
    pts = torch.randn(13, k + 1, 9, generator=g, dtype=torch.float64) * (1 + seed)
    d2, vol2 = CMValidator(k)(pts)
    ref = metrics.cayley_menger_volume_sq(pts)
    assert torch.allclose(vol2, torch.as_tensor(ref), rtol=1e-8, atol=1e-10)
    assert d2.shape == (13, k * (k + 1) // 2)
    assert torch.allclose(d2[:, 0], ((pts[:, 0] - pts[:, 1]) ** 2).sum(-1))
    # rotation and translation invariance
    Q, _ = torch.linalg.qr(torch.randn(9, 9, generator=g, dtype=torch.float64))
    assert torch.allclose(CMValidator(k)(pts @ Q + 3.0)[1], vol2, rtol=1e-7, atol=1e-10)


def test_cm_validator_is_differentiable():
    pts = torch.randn(2, 5, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p: CMValidator(4)(p)[1], (pts,))


# ------------------------------------------------------------------ residual modulator
def test_residual_shapes_identity_and_lerp():
    m = GeometricResidualModulator(d_model=16, vocab_size=50, n_geometric_dims=4, n_layers=3, initial_alpha=0.2)
    h = torch.randn(2, 7, 16)
    ids = torch.randint(0, 50, (2, 7))
    assert m(h, ids, 1).shape == (2, 7, 16)
    assert m.alphas.tolist() == pytest.approx([0.2] * 3, abs=1e-6)
    m.set_alpha(0.0)
    assert torch.equal(m(h, ids, 2), h)  # exact identity at alpha = 0
    assert torch.isneginf(m.alpha).all()
    m.set_alpha(1.0)
    assert torch.allclose(m(h, ids, 0), m.geometric_target(ids))
    m.set_alpha([0.0, 0.5, 0.25])
    out = m(h, ids, 1)
    assert torch.allclose(out, 0.5 * h + 0.5 * m.geometric_target(ids), atol=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        m.set_alpha(1.5)
    with pytest.raises(ValueError, match="token_ids"):
        m(h, ids[:, :3], 0)


def test_residual_shared_alpha_and_buffer():
    m = GeometricResidualModulator(8, 10, 4, n_layers=4, per_layer_alpha=False, learnable_alpha=False)
    assert m.alpha.ndim == 0 and "alpha" in dict(m.named_buffers())
    assert m.alphas.shape == (4,)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_relational_target_init_reconstructs_low_rank(seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.nn.functional.normalize(torch.randn(30, 5, generator=g, dtype=torch.float64), dim=1)
    S = X @ X.T  # rank-5 cosine matrix: 5 eigen-dims reproduce it exactly
    m = GeometricResidualModulator(8, 40, 6, n_layers=1)
    ids = torch.arange(5, 35)
    corr = m.init_from_relational_target(S, token_ids=ids, n_dims=5)
    assert corr == pytest.approx(1.0, abs=1e-6)
    W = m.geometric_embed.weight.detach().double()[ids]
    assert torch.allclose(W.norm(dim=1), torch.ones(30, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(torch.nn.functional.normalize(W, dim=1) @ torch.nn.functional.normalize(W, dim=1).T,
                          S, atol=1e-5)


def test_cayley_menger_init_pools_and_normalises():
    m = GeometricResidualModulator(8, 6, 3, n_layers=1)
    s = torch.randn(6, 5, 3)
    m.init_from_cayley_menger(s)
    assert torch.allclose(m.geometric_embed.weight, torch.nn.functional.normalize(s.sum(1), dim=1), atol=1e-6)
    with pytest.raises(ValueError, match="simplices"):
        m.init_from_cayley_menger(torch.randn(5, 3))


def test_geometric_residuals_health():
    m = GeometricResidualModulator(8, 300, 6, n_layers=2)
    h = m.geometric_residuals(n_sample=100, seed=1)
    assert 0 < h["pr_over_dim"] <= 1 and abs(h["cos_mean"]) < 0.2 and len(h["alpha"]) == 2
    assert h == m.geometric_residuals(n_sample=100, seed=1)


def test_eigen_embedding_validation():
    with pytest.raises(ValueError, match="symmetric"):
        eigen_embedding(torch.randn(4, 4) + torch.eye(4) * 0 + torch.triu(torch.ones(4, 4)), 2)
    with pytest.raises(ValueError, match="n_dims"):
        eigen_embedding(torch.eye(3), 4)


# ------------------------------------------------------------------ field modulator
def _field(**kw):
    base = dict(d_model=32, n_layers=3, expert_ks=(1, 2, 4), expert_edim=8)
    base.update(kw)
    return GeometricFieldModulator(FieldModulatorConfig(**base))


def test_field_seed_parameter_count():
    assert sum(p.numel() for p in GeometricFieldModulator(FieldModulatorConfig()).parameters()) == 38552


@pytest.mark.parametrize("position", ["tail", "random"])
@pytest.mark.parametrize("seed", [0, 1])
def test_field_null_space_untouched_exactly(position, seed):
    m = _field(null_space_position=position, null_space_seed=seed + 3, seed=seed, initial_alpha=0.3)
    x = torch.randn(2, 5, 32) * 3
    out = m(x, 2)
    assert out.residual.shape == x.shape and out.validity_map.shape == (2, 5)
    null = m.null_mask
    assert int(null.sum()) == 8
    assert torch.equal(out.residual[..., null], x[..., null])
    assert not torch.allclose(out.residual[..., ~null], x[..., ~null])
    if position == "tail":
        assert null[-8:].all()
    assert set(out.expert_volumes) == {1, 2, 4} and out.expert_volumes[4].shape == (2, 5)


def test_field_alpha_clamped_and_zero_identity():
    m = _field(alpha_min=0.0, alpha_max=0.35)
    m.set_alpha(0.9)
    assert torch.allclose(m.alphas, torch.full((3, 3), 0.35))
    m.set_alpha(0.0)
    x = torch.randn(2, 4, 32)
    assert torch.equal(m(x, 0).residual, x)
    m2 = _field(alpha_min=0.01)
    m2.set_alpha(0.0)
    assert torch.allclose(m2.alphas, torch.full((3, 3), 0.01))


def test_field_config_validation():
    with pytest.raises(ValueError, match="expert_edim"):
        FieldModulatorConfig(expert_ks=(1, 6), expert_edim=4)
    with pytest.raises(ValueError, match="null_space_position"):
        FieldModulatorConfig(null_space_position="middle")


def test_field_validity_tracking_and_health():
    m = _field()
    m.train()
    for _ in range(3):
        m(torch.randn(2, 4, 32), 1)
    v = m.validity()
    assert torch.isnan(v[0]).all() and torch.allclose(v[1], torch.ones(3))  # bias-corrected EMA
    rep = m.health_report()
    for k in (1, 2, 4):
        assert rep[f"template_vol2_k{k}"] == pytest.approx(rep[f"template_vol2_k{k}_closed_form"], rel=1e-5)
    assert rep["validity_mean"] == pytest.approx(1.0)
    assert rep["total_params"] == sum(p.numel() for p in m.parameters())
    m.eval()
    m(torch.randn(2, 4, 32), 0)
    assert torch.isnan(m.validity()[0]).all()  # eval mode does not track


@pytest.mark.parametrize("seed", [0, 1])
def test_field_cv_check_uses_active_dims_of_whole_matrix(seed):
    m = _field(null_space_position="random", null_space_seed=seed)
    X = torch.randn(400, 32, dtype=torch.float64)
    r = m.cv_check(X, n_simplices=300, seed=seed)
    ref = metrics.simplex_volume_cv(X[:, m.active_idx], 300, seed, n_vertices=5, min_valid=2)
    assert r["cv"] == pytest.approx(ref.cv, rel=1e-12) and r["n_valid"] == ref.n_valid
    assert r["in_band"] == (abs(r["cv"] - 0.21) < 0.05)
    # null dims do not matter
    Y = X.clone()
    Y[:, m.null_mask] = 1e3 * torch.randn(400, int(m.null_mask.sum()), dtype=torch.float64)
    assert m.cv_check(Y, n_simplices=300, seed=seed)["cv"] == pytest.approx(r["cv"], rel=1e-12)


def test_pentachoron_cv_check_degenerate():
    r = pentachoron_cv_check(torch.ones(10, 4), n_simplices=20)
    assert r["n_valid"] == 0 and r["in_band"] is False


# ------------------------------------------------------------------ trainer
def test_trainer_param_groups_scaled_lrs():
    m = _field(gradient_scale=0.1, alpha_lr_scale=0.5)
    t = ModulatorTrainer(m, lr=1e-2)
    lrs = {g["name"]: g["lr"] for g in t.optimizer.param_groups}
    assert lrs == pytest.approx({"geometric": 1e-3, "alpha": 5e-3, "gates": 1e-2})
    n_opt = sum(p.numel() for g in t.optimizer.param_groups for p in g["params"])
    assert n_opt == sum(p.numel() for p in m.parameters())


def test_trainer_clipping_and_alpha_history():
    m = _field(initial_alpha=0.2)
    t = ModulatorTrainer(m, lr=1e-2, gradient_clip=1e-3)
    x = torch.randn(2, 4, 32)
    for _ in range(3):
        loss = (m(x, 1).residual * 1e3).pow(2).mean()
        t.step(loss)
    assert len(t.alpha_history) == 4 and t.alpha_history[0].shape == (3, 3)
    assert all(g > 1e-3 for g in t.grad_norm_history)  # the pre-clip norm is recorded
    assert not np.allclose(t.alpha_history[0], t.alpha_history[-1])
    assert np.allclose(t.alpha_history[0][0], t.alpha_history[-1][0])  # layer 0 was never used


@pytest.mark.parametrize("pattern,patience,expected", [
    ([True, False, False, False], 3, True),
    ([False, False, True, False, False], 3, False),
    ([False, False], 3, False),
    ([False] * 5, 5, True),
    ([True] * 6, 1, False),
    ([True, False], 1, True),
])
def test_should_stop_logic(pattern, patience, expected):
    t = ModulatorTrainer(_field(), lr=1e-3)
    for b in pattern:
        t.record_cv(b)
    assert t.should_stop(patience) is expected


def test_check_cv_band_from_config():
    m = _field(cv_target=0.21, cv_tolerance=0.05)
    t = ModulatorTrainer(m)
    X = torch.randn(200, 32)
    ok = t.check_cv(X, n_simplices=200)
    assert ok == (abs(t.cv_history[-1]["cv"] - 0.21) < 0.05)
    t2 = ModulatorTrainer(m, cv_target=t.cv_history[-1]["cv"], cv_tolerance=1e-9)
    assert t2.check_cv(X, n_simplices=200) is True


def test_trainer_checkpoint_resume(tmp_path):
    def run(trainer, n):
        g = torch.Generator().manual_seed(trainer.step_count)
        for _ in range(n):
            x = torch.randn(2, 3, 32, generator=g)
            trainer.step((trainer.modulator(x, 1).residual - 1).pow(2).mean())

    torch.manual_seed(0)
    a = ModulatorTrainer(_field(seed=5, initial_alpha=0.1), lr=1e-2, total_steps=10)
    run(a, 2)
    a.save(tmp_path / "ck")
    run(a, 3)
    b = ModulatorTrainer(_field(seed=99, initial_alpha=0.3), lr=1e-2, total_steps=10).load(tmp_path / "ck")
    assert b.step_count == 2 and len(b.alpha_history) == 3
    run(b, 3)
    for (n, p), (_, q) in zip(a.modulator.named_parameters(), b.modulator.named_parameters()):
        assert torch.allclose(p, q, atol=1e-7), n
    assert (tmp_path / "ck" / "modulator.safetensors").exists()
    # no pickle anywhere in a checkpoint: tensors in safetensors, the rest in JSON
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == [
        "history.json", "modulator.safetensors", "trainer_state.json", "trainer_state.safetensors"]


# ------------------------------------------------------------------ pipeline helpers
def test_knn_project_anchors_and_unit_rows():
    g = torch.Generator().manual_seed(0)
    static = torch.randn(50, 8, generator=g)
    anchors = np.arange(0, 50, 5)
    geo = torch.nn.functional.normalize(torch.randn(10, 4, generator=g), dim=1)
    out = knn_project(static, anchors, geo, k=3)
    assert torch.allclose(out[anchors], geo.double())
    assert torch.allclose(out.norm(dim=1), torch.ones(50, dtype=torch.float64))
    # a copy of an anchor's static vector with k=1 inherits that anchor's geometry
    static2 = static.clone()
    static2[1] = static[5] * 2
    assert torch.allclose(knn_project(static2, anchors, geo, k=1)[1], geo[1].double())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_procrustes_recovers_rotation(seed):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(60, 12)) * np.linspace(5, 0.1, 12)  # clear PCA order
    E += rng.normal(size=12)
    Ec = E - E.mean(0)
    pcs = np.linalg.svd(Ec, full_matrices=False)[2][:4]
    P = Ec @ pcs.T
    P /= np.linalg.norm(P, axis=1, keepdims=True)
    Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    G = P @ Q.T  # a rotated copy of the encoder's PCA points
    res = procrustes_projection(E, G, scale_fraction=0.1)
    assert res["alignment_cos"].mean() == pytest.approx(1.0, abs=1e-8)
    assert np.allclose(res["rotation"].numpy(), Q, atol=1e-8)
    assert res["weight"].shape == (12, 4)
    assert np.allclose(np.linalg.norm(res["weight"].numpy(), axis=0), 0.1 * np.linalg.norm(E, axis=1).mean())
    with pytest.raises(ValueError, match="n_geo"):
        procrustes_projection(E[:3], G[:3])


def test_token_differences():
    assert token_differences([1, 2, 3], [1, 2, 3]) == 0
    assert token_differences([1, 2, 3], [1, 5, 3, 4, 4]) == 3
    assert token_differences([], [7]) == 1


def test_relational_comparison_properties():
    rng = np.random.default_rng(0)
    n = 60
    X = rng.normal(size=(n, 6))
    i, j = sample_pairs(n, 500, seed=1)
    assert (i != j).all()
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = (Xn[i] * Xn[j]).sum(1)
    sim = (cos + 1) / 2  # a monotone function of the cosine -> Spearman 1
    sim[:5] = np.nan
    r = relational_comparison(sim, {"Original": X, "Noise": rng.normal(size=(n, 6))}, i, j)
    assert r["n_pairs"] == len(i) - 5
    assert r["Original"]["spearman"] == pytest.approx(1.0)
    assert r["Original"]["pearson"] == pytest.approx(1.0)
    assert r["Original"]["delta_pearson"] == 0.0 and r["Noise"]["pearson"] < 0.5
    assert sum(b["n"] for b in r["Original"]["bands"]) == r["n_pairs"]


def test_preservation_and_split():
    a = torch.randn(10, 4)
    assert per_token_preservation(a, 3 * a)["mean"] == pytest.approx(1.0)
    tr, va = split_indices(20, 0.1, seed=3)
    assert len(va) == 2 and sorted(np.concatenate([tr, va]).tolist()) == list(range(20))


# ------------------------------------------------------------------ headline intervals (modulators.stats)
def test_stats_correlations_match_scipy_and_relational_comparison():
    from scipy.stats import spearmanr

    from geolip_lib.modulators import stats

    rng = np.random.default_rng(0)
    s = rng.random(300)
    c = s + rng.normal(size=300)
    assert stats.pearson(s, c) == pytest.approx(np.corrcoef(s, c)[0, 1], abs=1e-12)
    assert stats.spearman(np.round(s, 1), c) == pytest.approx(spearmanr(np.round(s, 1), c).statistic, abs=1e-12)
    X, Y = rng.normal(size=(40, 6)), rng.normal(size=(40, 6))
    i, j = sample_pairs(40, 400, seed=1)
    sim = np.abs(rng.normal(size=i.size))
    sim[:5] = np.nan  # dropped, as relational_comparison drops them
    rel = relational_comparison(sim, {"Original": X, "Mod": X + 0.3 * Y}, i, j)
    iv = stats.relational_intervals(sim, {"Original": X, "Mod": X + 0.3 * Y}, i, j, n_boot=200, seed=0)
    assert iv["Original"]["delta_pearson"] is None
    assert f"of {rel['n_pairs']} pairs" in iv["Mod"]["pearson"].method
    assert iv["Mod"]["pearson"].contains(rel["Mod"]["pearson"])
    assert iv["Mod"]["delta_pearson"].contains(rel["Mod"]["delta_pearson"])
    # the paired difference is tighter than either correlation's own interval
    width = lambda v: v.hi - v.lo  # noqa: E731
    assert width(iv["Mod"]["delta_pearson"]) < width(iv["Mod"]["pearson"])
    best = stats.argmax_interval(sim, {0.0: X, 0.5: X + 0.3 * Y, 1.0: Y}, i, j, n_boot=200, seed=0)
    assert {best.lo, best.hi} <= {0.0, 0.5, 1.0}
    assert stats.pair_bootstrap(stats.pearson, [1.0, 2.0], [1.0, 2.0]).finite is False  # too few pairs


def test_stats_matrix_r_reduces_to_the_upper_triangle_r_and_shuffled_null():
    from geolip_lib.modulators import stats

    rng = np.random.default_rng(1)
    S = rng.random((25, 25))
    S = (S + S.T) / 2
    np.fill_diagonal(S, 1.0)
    emb, recon, _ = eigen_embedding(S, 5)
    C = (emb @ emb.T).numpy()
    assert stats.matrix_r(S, C) == pytest.approx(recon, abs=1e-12)
    assert stats.weighted_matrix_r(S, C)(np.ones((2, 25))) == pytest.approx([recon, recon], abs=1e-12)
    iv = stats.matrix_r_interval(S, C, n_boot=200, seed=0)
    assert "25 anchors" in iv.method and iv.lo < recon < iv.hi
    null = stats.reconstruction_null(S, emb.numpy(), seed=0, n_boot=200)
    assert null["value"] < recon and null["interval"].contains(null["value"])


def test_stats_cv_interval_is_the_cv_check_draw():
    from geolip_lib.modulators import stats

    X = torch.randn(60, 12, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    cols = np.arange(8)
    out = stats.cv_interval(X, 80, seed=3, columns=cols, cv_target=0.21, cv_tolerance=0.05)
    ref = pentachoron_cv_check(X[:, :8], n_simplices=80, seed=3)
    assert out["cv"] == pytest.approx(ref["cv"], abs=1e-12) and out["in_band"] == ref["in_band"]
    assert out["interval"].lo < out["cv"] < out["interval"].hi
    assert {out["in_band_interval"].lo, out["in_band_interval"].hi} <= {0.0, 1.0}
    assert "in_band" not in stats.cv_interval(X, 80, seed=3)


def test_per_token_cosines_are_the_preservation_items():
    from geolip_lib.modulators import per_token_cosines

    a = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    b = a + 0.1 * torch.randn(10, 4, generator=torch.Generator().manual_seed(1))
    c = per_token_cosines(a, b)
    assert c.shape == (10,) and c.mean() == pytest.approx(per_token_preservation(a, b)["mean"], abs=1e-12)


# ------------------------------------------------------------------ seed-comparable modes and the lift
def _with_correlation(s: np.ndarray, r: float, rng) -> np.ndarray:
    """A vector whose Pearson r with ``s`` is exactly ``r`` (s plus a noise orthogonal to it)."""
    z = (s - s.mean()) / s.std()
    e = rng.normal(size=s.size)
    e -= e.mean()
    e -= (e @ z) / (z @ z) * z
    e /= e.std()
    return r * z + np.sqrt(1 - r * r) * e


def test_relative_lift_known_answers():
    from geolip_lib.modulators import stats

    assert stats.relative_lift(0.25, 0.1) == pytest.approx(1.5)
    assert stats.relative_lift(0.05, -0.1) == pytest.approx(1.5)  # |orig| in the denominator
    assert stats.relative_lift(0.1, 0.1) == 0.0
    assert np.allclose(stats.relative_lift([0.2, 0.3], [0.1, 0.1]), [1.0, 2.0])


def test_lift_on_constructed_correlations():
    from geolip_lib.modulators import stats

    rng = np.random.default_rng(0)
    s = rng.random(4000)
    mod, orig = _with_correlation(s, 0.5, rng), _with_correlation(s, 0.2, rng)
    assert stats.pearson(s, mod) == pytest.approx(0.5, abs=1e-12)
    iv = stats.lift_interval(s, mod, orig, n_boot=300, seed=0)
    assert iv.lo < 1.5 < iv.hi and iv.hi - iv.lo < 1.0  # (0.5 − 0.2) / 0.2
    # Spearman: monotone transforms of the cosines leave the lift unchanged
    sp = stats.relative_lift(stats.spearman(s, mod), stats.spearman(s, orig))
    assert stats.relative_lift(stats.spearman(s, np.exp(mod)), stats.spearman(s, orig ** 3)) == pytest.approx(sp)
    ivs = stats.lift_interval(s, mod, orig, kind="spearman", n_boot=300, seed=0)
    assert ivs.lo < sp < ivs.hi
    assert stats.lift_interval(s, orig, orig, n_boot=50).hi == 0.0  # identical representations: no lift


def test_modulator_lift_agrees_with_relational_comparison_and_claims():
    from geolip_lib.modulators import stats

    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(60, 5)), rng.normal(size=(60, 5))
    i, j = sample_pairs(60, 800, seed=0)
    sim = np.abs(stats.pearson(X[i], X[j] + Y[j])) + 0.01
    rel = relational_comparison(sim, {"Original": X + Y, "Mod": X}, i, j)
    lift = stats.modulator_lift(sim, X, X + Y, i, j, n_boot=100)
    for kind in ("pearson", "spearman"):
        want = (rel["Mod"][kind] - rel["Original"][kind]) / abs(rel["Original"][kind])
        assert lift[kind]["value"] == pytest.approx(want, abs=1e-12)
        assert lift[kind]["interval"].contains(lift[kind]["value"])
    runs = {"project": {"project": lift, "seed": lift}}
    claims = stats.lift_claims(runs, seed_mode_reason="off in this test")
    assert set(claims) == {"pearson", "spearman"}
    assert claims["pearson"]["value"] == lift["pearson"]["value"] and "project" in claims["pearson"]
    assert claims["pearson"]["as_seed_measured"] is False and "off in this test" in claims["pearson"]["note"]
    assert set(claims["pearson"]["variants"]) == {"project_training|project_pairs", "project_training|seed_pairs"}
    both = stats.lift_claims({**runs, "seed": runs["project"]})["pearson"]
    assert both["as_seed_measured"] is True and "unshifted target" in both["note"] and len(both["variants"]) == 4
    frame = stats.lift_frame(runs)
    assert len(frame) == 2 and frame["seed's pearson lift"].tolist() == [1.52, 1.52]


def test_lift_cv_and_coherence_claims():
    """The rest of the lift claim: CV of the representations against the seed's band (a
    Gaussian in 64-d sits far from 0.20–0.23, a set of near-equal simplices far below),
    preservation against the identity, and the unchanged-generation fraction, exact."""
    from geolip_lib.modulators import stats

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 64))
    cl = stats.lift_cv_claims({"original": X, "project": X * 3.0}, 300, seed=0)
    assert cl["project"]["value"] == pytest.approx(cl["original"]["value"])  # CV is scale-free
    assert cl["project"]["nulls"]["unmodulated"]["value"] == pytest.approx(cl["original"]["value"])
    for h in cl.values():
        assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"]
        assert h["in_band"] == (0.20 < h["value"] < 0.23) and h["band"] == [0.20, 0.23]
    cos = np.full(50, 0.9)
    rows = [{"identical": True, "token_diffs": 0, "n_tokens": 5}, {"identical": False, "token_diffs": 2, "n_tokens": 6}]
    coh = stats.coherence_claims({"project": cos}, {"project": rows, "seed": []})
    assert coh["project_preservation"]["value"] == pytest.approx(0.9)
    g = coh["project_generation_identical"]
    assert g["value"] == 0.5 and g["interval"]["method"] == "exact (all 2 prompts)" and g["token_diffs"] == 2
    assert "seed_generation_identical" not in coh and coh["generation"]["applies"] is True
    none = stats.coherence_claims({"project": cos}, {"project": []}, why_no_generation="encoder-only")
    assert none["generation"] == {"applies": False, "reason": "encoder-only"}


def test_coherence_reads_the_text_an_empty_or_looping_generation_is_not_coherent():
    """A pooled cosine of 0.991 is no preserved coherence when the modulated generations
    are empty or a repetition loop: <run>_generation_coherent reads the text (prompts whose
    unmodulated generation is itself degenerate test nothing and are left out)."""
    from geolip_lib.modulators import stats

    assert stats.text_degeneracy("") == "empty (no word)" and stats.text_degeneracy(" ... \n") == "empty (no word)"
    loop = stats.text_degeneracy("The cat is a cat. The cat is a cat.")
    assert loop.startswith("a repetition loop") and "5 distinct of 9" in loop
    assert stats.text_degeneracy("The cat sat on the mat.") is None
    assert stats.text_degeneracy("Mount Everest is the tallest mountain on Earth.") is None
    rows = [{"prompt": "a", "original": "The cat sat on the mat.", "modulated": "", "identical": False,
             "token_diffs": 5, "n_tokens": 5},
            {"prompt": "b", "original": "A cat is a small mammal.", "modulated": "The cat is a cat. The cat is a cat.",
             "identical": False, "token_diffs": 9, "n_tokens": 10},
            {"prompt": "c", "original": "Love is patient.", "modulated": "Love is kind and patient.",
             "identical": False, "token_diffs": 3, "n_tokens": 5},
            {"prompt": "d", "original": "the the the the", "modulated": "x y x y x y", "identical": False,
             "token_diffs": 4, "n_tokens": 4}]  # unmodulated already a loop: left out
    coh = stats.coherence_claims({"project": np.full(20, 0.991)}, {"project": rows})
    assert coh["project_preservation"]["value"] == pytest.approx(0.991)
    g = coh["project_generation_coherent"]
    assert g["value"] == pytest.approx(1 / 3) and g["n_testable"] == 3 and g["n_broken"] == 2
    assert g["interval"]["method"] == "exact (all 3 prompts)" and g["nulls"]["unmodulated (identity)"]["value"] == 1.0
    assert "'a': empty" in g["note"] and "'b': a repetition loop" in g["note"]
    assert [p["testable"] for p in g["per_prompt"]] == [True, True, True, False]
    same = [{**r, "modulated": r["original"], "identical": True} for r in rows]
    assert stats.coherence_claims({}, {"seed": same})["seed_generation_coherent"]["value"] == 1.0
    assert "project_generation_coherent" not in stats.coherence_claims(  # rows without texts: nothing read
        {}, {"project": [{"identical": True, "token_diffs": 0, "n_tokens": 5}]})


def test_seed_training_schedule_is_the_seeds_draw():
    """Seed §9's split and per-epoch batches, draw for draw (one default_rng(42))."""
    from geolip_lib.modulators import seed_training_schedule

    n, epochs, bs = 103, 3, 32
    tr, va, eb = seed_training_schedule(n, epochs, bs)
    # the seed's own code (seed 001 §9)
    rng = np.random.default_rng(42)
    perm = rng.permutation(n)
    n_train = int(len(perm) * 0.9)
    assert np.array_equal(tr, perm[:n_train]) and np.array_equal(va, perm[n_train:])
    for e in range(epochs):
        ei = tr[rng.permutation(len(tr))]
        want = [ei[s:min(s + bs, len(ei))] for s in range(0, len(ei), bs)]
        assert len(eb[e]) == len(want) and all(np.array_equal(a, b) for a, b in zip(eb[e], want))


def test_trainer_schedule_per_epoch_is_the_seeds():
    """schedule_every="epoch": CosineAnnealingLR(T_max=n_epochs) advanced once per epoch
    (the learning rate is constant within an epoch), as seed §9 stepped it."""
    m = GeometricResidualModulator(8, 20, n_geometric_dims=4, n_layers=2, initial_alpha=0.1, seed=0)
    t = ModulatorTrainer(m, lr=1e-2, total_steps=4, schedule_every="epoch")
    loss = lambda b: (m.proj.weight.sum() * 0 + m.alpha.sum()) ** 2  # noqa: E731
    lrs = []
    for _ in range(2):
        t.train_epoch([0, 1, 2], loss, progress=False)
        lrs.append(t.optimizer.param_groups[0]["lr"])
    assert lrs == pytest.approx([1e-2 * (1 + math.cos(math.pi * e / 4)) / 2 for e in (1, 2)])
    with pytest.raises(ValueError, match="schedule_every"):
        ModulatorTrainer(m, schedule_every="batch")


def test_seed_relational_pairs_is_the_seeds_draw():
    from geolip_lib.modulators import SEED_N_REL, seed_relational_pairs

    n = 10_000
    i, j, subset = seed_relational_pairs(n)
    # the seed's own code (seed 001 §8/§10)
    rng2 = np.random.default_rng(42)
    rel_idx2 = rng2.choice(n, size=min(3000, n), replace=False)
    pi, pj = rng2.choice(3000, size=50000), rng2.choice(3000, size=50000)
    valid = pi != pj
    assert SEED_N_REL == 3000 and len(subset) == 3000 and len(set(subset.tolist())) == 3000
    assert np.array_equal(subset, rel_idx2)
    assert np.array_equal(i, rel_idx2[pi[valid]]) and np.array_equal(j, rel_idx2[pj[valid]])
    i2, j2, s2 = seed_relational_pairs(n)
    assert np.array_equal(i, i2) and np.array_equal(j, j2) and np.array_equal(subset, s2)  # deterministic
    i3, _, s3 = seed_relational_pairs(500, n_pairs=100)  # fewer entries than 3000: all of them
    assert sorted(s3.tolist()) == list(range(500)) and set(i3.tolist()) <= set(range(500))


@pytest.mark.parametrize("decay_alpha", [False, True])
def test_trainer_decays_alpha_only_in_seed_mode(decay_alpha):
    m = GeometricResidualModulator(16, 50, n_geometric_dims=4, n_layers=3, initial_alpha=0.3, seed=0)
    t = ModulatorTrainer(m, lr=1e-2, weight_decay=0.05, decay_alpha=decay_alpha)
    wd = {g["name"]: g["weight_decay"] for g in t.optimizer.param_groups}
    assert wd == {"embed_proj": 0.05, "alpha": 0.05 if decay_alpha else 0.0}
    # a zero-gradient step moves the alpha logits only through the decay: toward 0 (alpha toward 0.5)
    before = m.alpha.detach().clone()
    t.step((m.alpha * 0).sum() + (m.proj.weight * 0).sum())
    moved = not torch.allclose(m.alpha.detach(), before)
    assert moved is decay_alpha
    if decay_alpha:
        assert bool((m.alpha.detach().abs() < before.abs()).all())


def test_run_epochs_resumes_to_n_epochs():
    from geolip_lib.modulators import run_epochs

    m = GeometricResidualModulator(8, 20, n_geometric_dims=4, n_layers=2, initial_alpha=0.1, seed=0)
    t = ModulatorTrainer(m, lr=1e-2)
    x = torch.randn(20, 3, 8, generator=torch.Generator().manual_seed(0))

    def loss_fn(b):
        tok = torch.as_tensor(np.asarray(b)).unsqueeze(1).expand(-1, 3)
        return (m(x[torch.as_tensor(np.asarray(b))], tok, 1) - 1).pow(2).mean()

    ep = run_epochs(t, loss_fn, np.arange(16), np.arange(16, 20), n_epochs=2, batch_size=8, seed=0, progress=False)
    assert [e["epoch"] for e in ep] == [1, 2] and t.step_count == 4 and len(t.val_history) == 2
    assert run_epochs(t, loss_fn, np.arange(16), np.arange(16, 20), n_epochs=2, batch_size=8) == []  # done
    assert [e["epoch"] for e in run_epochs(t, loss_fn, np.arange(16), np.arange(16, 20), n_epochs=3,
                                           batch_size=8, progress=False)] == [3]


def test_impact_statistics_known_answers():
    from geolip_lib.modulators import impact_statistics

    a = torch.randn(5, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    same = impact_statistics(a, 2 * a)  # a rescaling: cosines 1, norm ratio 2, no pairwise shift
    assert np.allclose(same["cos"], 1) and np.allclose(same["norm_ratio"], 2, rtol=1e-6)
    assert same["pairwise_shift"].shape == (10,) and np.allclose(same["pairwise_shift"], 0, atol=1e-12)
    Q, _ = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64))
    rot = impact_statistics(a, a @ Q)  # a rotation keeps norms and pairwise cosines
    assert np.allclose(rot["norm_ratio"], 1) and np.allclose(rot["pairwise_shift"], 0, atol=1e-12)
    b = a.clone()
    b[0] = -a[0]
    flip = impact_statistics(a, b)
    assert flip["cos"][0] == pytest.approx(-1) and np.allclose(flip["cos"][1:], 1)
    assert impact_statistics(a[:1], b[:1])["pairwise_shift"].size == 0


def test_resample_ranks_match_rankdata():
    from scipy.stats import rankdata

    from geolip_lib.modulators import stats

    rng = np.random.default_rng(0)
    x = np.round(rng.random(300), 2)  # many ties
    d = stats.dense_ranks(x)
    idx = rng.integers(0, 300, size=(4, 300))
    assert np.allclose(stats.resample_ranks(d[idx]), rankdata(x[idx], axis=-1))
    assert np.allclose(stats.resample_ranks(d), rankdata(x))


def test_phase_boundary_claim_kink_vs_smooth_curvature():
    from geolip_lib.modulators import phase

    rng = np.random.default_rng(0)
    x = np.linspace(0, 0.6, 13)
    hinge = np.where(x < 0.29154, 0.1, 0.1 + 2.0 * (x - 0.29154))
    sweep = {"alphas": x, "seeds": np.arange(5), "pearson": hinge + 0.003 * rng.normal(size=(5, 13))}
    r = phase.locate_boundary(sweep, "pearson", n_boot=300, seed=0)  # null: a quadratic
    c = phase.boundary_claim(r, sweep)
    assert r["found"] and c["found"] is True and c["value"] == pytest.approx(r["location"]) and c["null"] == "quadratic"
    assert abs(c["value"] - 0.29154) < 0.03 and c["interval"]["lo"] <= c["value"] <= c["interval"]["hi"]
    assert c["grid"] == pytest.approx(x.tolist()) and c["seeds"] == [0, 1, 2, 3, 4] and c["method"] == r["method"]
    # a smooth curve: a line is rejected (the hinge finds "curvature"), a quadratic is not
    smooth = {**sweep, "pearson": 0.1 + 3 * x ** 2 + 0.003 * rng.normal(size=(5, 13))}
    assert phase.locate_boundary(smooth, "pearson", null="line", n_boot=300, seed=0)["found"] is True
    rq = phase.locate_boundary(smooth, "pearson", n_boot=300, seed=0)
    cq = phase.boundary_claim(rq, smooth)
    assert rq["found"] is False and cq["value"] is None and cq["interval"] is None and cq["found"] is False
    assert "No change point found" in cq["note"] and cq["best_breakpoint"] is not None
    t = phase.boundary_table({("pearson", "quadratic"): r, ("smooth", "quadratic"): rq})
    assert t["change point [95 %]"].iloc[1] == "none found" and bool(t["0.29154 in interval"].iloc[0]) is True
    assert t["no-change model"].tolist() == ["quadratic", "quadratic"]
