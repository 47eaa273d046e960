"""PCA + orthogonal Procrustes recover planted structure; agreement measures."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from geolip_lib import procrustes as al

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_procrustes_recovers_planted_rotation_scale_and_shift(seed):
    rng = np.random.default_rng(seed)
    n, d = 600, 12
    X = rng.standard_normal((n, d)) * np.linspace(1, 3, d)
    R = ortho_group.rvs(d, random_state=seed)
    s, shift = 2.5, rng.standard_normal(d)
    Y = s * X @ R + shift + 0.01 * rng.standard_normal((n, d))
    anchors, test = al.split_indices(n, 400, 200, seed=seed)
    fit = al.procrustes_fit(X[anchors], Y[anchors])
    assert np.allclose(fit.R, R, atol=5e-3)
    assert fit.scale == pytest.approx(s, rel=2e-3)
    assert np.allclose(fit.R @ fit.R.T, np.eye(d), atol=1e-10)
    Yhat = al.procrustes_apply(fit, X[test])
    assert al.row_cosine(Yhat, Y[test]).min() > 0.99
    # without scaling the rotation is the same but scale stays 1
    assert al.procrustes_fit(X[anchors], Y[anchors], scaling=False).scale == 1.0


def test_pca_then_procrustes_recovers_embedded_subspace():
    """Large cloud = small cloud rotated into a higher-dimensional space + tiny extra dims."""
    rng = np.random.default_rng(3)
    n, d_small, d_large = 800, 8, 20
    Y = rng.standard_normal((n, d_small)) * np.linspace(2, 4, d_small)
    basis = ortho_group.rvs(d_large, random_state=3)[:, :d_small]           # (20, 8) orthonormal
    X = 0.7 * Y @ basis.T + 0.01 * rng.standard_normal((n, d_large))
    pca = al.pca_fit(X, d_small)
    assert pca.variance_retained > 0.999
    Xp = al.pca_transform(pca, X)
    anchors, test = al.split_indices(n, 500, 300, seed=0)
    fit = al.procrustes_fit(Xp[anchors], Y[anchors])
    assert fit.scale == pytest.approx(1 / 0.7, rel=1e-2)
    cos = al.row_cosine(al.procrustes_apply(fit, Xp[test]), Y[test])
    assert np.median(cos) > 0.999
    assert al.relational_correlation(Xp[test[:100]], Y[test[:100]])["r"] > 0.99


def test_pca_matches_svd_and_is_deterministic():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 6)) @ rng.standard_normal((6, 6))
    p = al.pca_fit(X, 3)
    Xc = X - X.mean(0)
    S = np.linalg.svd(Xc, compute_uv=False)
    assert np.allclose(p.explained, S[:3] ** 2 / 199)
    assert p.variance_retained == pytest.approx((S[:3] ** 2).sum() / (S ** 2).sum())
    assert np.allclose(p.components.T @ p.components, np.eye(3), atol=1e-12)
    assert np.array_equal(al.pca_fit(X, 3).components, p.components)


def test_unrelated_pairing_gives_low_alignment():
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((1000, 10)), rng.standard_normal((1000, 10))
    a, t = al.split_indices(1000, 600, 400, seed=1)
    cos = al.row_cosine(al.procrustes_apply(al.procrustes_fit(X[a], Y[a]), X[t]), Y[t])
    assert abs(cos.mean()) < 0.1
    assert abs(al.relational_correlation(X[:200], Y[:200])["r"]) < 0.1


def test_relational_correlation_invariances_and_summaries():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 7))
    R = ortho_group.rvs(7, random_state=2)
    rc = al.relational_correlation(X, 3.0 * X @ R)
    assert rc["r"] == pytest.approx(1.0) and rc["mean_abs_diff"] < 1e-12
    assert rc["a"].shape == (50 * 49 // 2,)
    pc = al.percentiles(np.arange(101.0))
    assert pc["p50"] == 50 and pc["min"] == 0 and pc["max"] == 100
    tf = al.threshold_fractions(np.array([0.05, 0.55, 0.95]), thresholds=(0.0, 0.5, 0.9))
    assert tf == {0.0: 1.0, 0.5: 2 / 3, 0.9: 1 / 3}
    spec = al.residual_spectrum(X, X + np.outer(np.ones(50), np.eye(7)[0]))
    assert spec[0] == pytest.approx(1.0) and np.allclose(spec[1:], 0, atol=1e-12)


def test_split_and_errors():
    a, t = al.split_indices(10, 100, 100, seed=0)
    assert len(a) == 9 and len(t) == 1 and not set(a) & set(t)
    with pytest.raises(ValueError, match="^Y:"):
        al.procrustes_fit(np.zeros((5, 3)), np.zeros((5, 4)))
    with pytest.raises(ValueError, match="^n_components:"):
        al.pca_fit(np.zeros((5, 3)), 4)
    with pytest.raises(ValueError, match="^B:"):
        al.relational_correlation(np.zeros((5, 3)), np.zeros((4, 3)))


def test_paired_volumes_scale_as_power_of_k_and_pair_correctly():
    from geolip_lib.metrics import sample_distinct_rows

    rng = np.random.default_rng(4)
    X = rng.standard_normal((100, 6))
    R = ortho_group.rvs(6, random_state=4)
    sets = sample_distinct_rows(100, 300, 5, seed=0)
    pv = al.paired_volumes(X, 2.0 * X @ R, sets)          # 4-volumes scale by 2^4
    assert pv["n_valid"] == 300 and pv["ratio"] == pytest.approx(16.0)
    assert pv["corr"] == pytest.approx(1.0) and pv["cv_a"] == pytest.approx(pv["cv_b"])
    flat = X.copy()
    flat[:50, 3:] = 0.0                                    # rows 0..49 lie in a 3-D subspace
    pv2 = al.paired_volumes(X, flat, np.array([[0, 1, 2, 3, 4], [60, 61, 62, 63, 64], [70, 71, 72, 73, 74]]))
    assert pv2["n_valid"] == 2                             # the degenerate set is dropped in both spaces


# ------------------------------------------------------ seed-comparable mode: rotation only vs fitted scale
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_rotation_only_and_scaled_fits_recover_planted_scale_and_rotation(seed):
    """Y = s·X·R + shift + noise: both fits find R; the scaled fit finds s, rotation only keeps 1;
    held-out numbers of each mode have their closed forms."""
    from scipy.linalg import orthogonal_procrustes
    from scipy.spatial import procrustes as scipy_procrustes

    rng = np.random.default_rng(seed)
    n, d = 500, 6
    X = rng.standard_normal((n, d)) * np.linspace(1, 2, d)
    R = ortho_group.rvs(d, random_state=seed)
    s = rng.uniform(0.4, 3.0)
    Y = s * X @ R + rng.standard_normal(d) + 1e-3 * rng.standard_normal((n, d))
    anchors, test = al.split_indices(n, 300, 200, seed=seed)
    rot, scl = (al.procrustes_fit(X[anchors], Y[anchors], scaling=b) for b in (False, True))
    assert np.allclose(rot.R, R, atol=1e-3) and np.allclose(scl.R, R, atol=1e-3)
    assert rot.scale == 1.0 and scl.scale == pytest.approx(s, rel=1e-3)
    R_sp, ssum = orthogonal_procrustes(X[anchors] - X[anchors].mean(0), Y[anchors] - Y[anchors].mean(0))
    assert np.allclose(rot.R, R_sp) and rot.singular_sum == pytest.approx(ssum)
    # relative residual of the scaled fit on its own rows is scipy.spatial.procrustes' disparity
    pieces = al.relative_residual(scl, X[anchors], Y[anchors])
    assert pieces[:, 0].sum() / pieces[:, 1].sum() == pytest.approx(
        scipy_procrustes(Y[anchors], X[anchors])[2], rel=1e-6, abs=1e-12)
    sets = np.array([rng.choice(n, 5, replace=False) for _ in range(60)])
    modes = al.compare_procrustes_modes(scl, X, Y, test, rel_rows=test[:80], sets=sets, seed=seed)
    seed_m, proj = modes["seed"], modes["project"]
    assert (seed_m["label"], proj["label"]) == ("seed: rotation only", "project: fitted scale")
    assert seed_m["scale"] == 1.0 and proj["scale"] == pytest.approx(s, rel=1e-3)
    hs, hp = seed_m["headlines"], proj["headlines"]
    # rotation only leaves (s − 1)/s of every centred target: relative residual ((s − 1)/s)²
    assert hs["resid_frac"]["value"] == pytest.approx(((s - 1) / s) ** 2, rel=2e-2, abs=1e-5)
    assert hp["resid_frac"]["value"] < 1e-5
    # 4-volumes scale as s⁴: rotation only gives mean projected / native volume 1/s⁴, the scaled fit 1
    assert hs["volume_ratio"]["value"] == pytest.approx(s ** -4, rel=1e-2)
    assert hp["volume_ratio"]["value"] == pytest.approx(1.0, rel=1e-2)
    assert hp["volume_corr"]["value"] > 0.999 and hp["relational_r"]["value"] > 0.999
    assert hs["l2_mean"]["value"] > hp["l2_mean"]["value"]
    for h in (hs, hp):
        for key, e in h.items():
            assert e["interval"]["lo"] <= e["value"] <= e["interval"]["hi"], key
    table = al.procrustes_modes_table(modes)
    assert list(table.columns) == ["seed: rotation only", "project: fitted scale"]
    assert table.loc["isotropic scale s", "seed: rotation only"] == "1"
    assert "relative residual" in table.index


def test_procrustes_modes_without_project_scaling_are_both_rotation_only():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((120, 4))
    Y = 2 * X + 0.01 * rng.standard_normal((120, 4))
    anchors, test = al.split_indices(120, 60, 60, seed=0)
    sets = np.array([rng.choice(120, 5, replace=False) for _ in range(20)])
    fit = al.procrustes_fit(X[anchors], Y[anchors], scaling=False)
    modes = al.compare_procrustes_modes(fit, X, Y, test, rel_rows=test[:30], sets=sets)
    assert modes["project"]["label"] == "project: rotation only" and modes["project"]["scale"] == 1.0
    assert modes["project"]["headlines"]["resid_frac"]["value"] == modes["seed"]["headlines"]["resid_frac"]["value"]
