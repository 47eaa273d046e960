"""Known answers of the fits: a rotated, scaled, translated copy is recovered exactly, and PCA
of data with a known covariance recovers its eigenvalues; several seeds."""
import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.spatial import procrustes as scipy_procrustes
from scipy.stats import ortho_group

from geolip_lib import procrustes as P
from geolip_lib.metrics.cosine import normalize_rows, row_cosine

SEEDS = [0, 1, 2, 3, 4]


def _rotated_copy(seed, n=200, d=6, scale=2.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    R = ortho_group.rvs(d, random_state=seed)
    t = rng.normal(size=d) * 10
    return X, R, scale * X @ R + t, t


@pytest.mark.parametrize("seed", SEEDS)
def test_rotated_scaled_translated_copy_is_recovered(seed):
    X, R, Y, t = _rotated_copy(seed)
    fit = P.procrustes_fit(X, Y)
    np.testing.assert_allclose(fit.R, R, atol=1e-10)
    assert fit.scale == pytest.approx(2.5, rel=1e-12)
    np.testing.assert_allclose(P.procrustes_apply(fit, X), Y, atol=1e-10)
    res = P.relative_residual(fit, X, Y)
    assert res[:, 0].sum() / res[:, 1].sum() < 1e-20          # residual 0
    assert scipy_procrustes(Y, X)[2] < 1e-20                   # scipy's disparity (distance) 0 too
    np.testing.assert_allclose(P.row_cosine(P.procrustes_apply(fit, X), Y), 1, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_rotation_only_fit_has_scale_one_and_same_rotation(seed):
    X, R, Y, t = _rotated_copy(seed)
    fit = P.procrustes_fit(X, Y, scaling=False)
    assert fit.scale == 1.0
    np.testing.assert_allclose(fit.R, R, atol=1e-10)
    # uncentred fit of a pure rotation (no translation) recovers it too
    fit0 = P.procrustes_fit(X, X @ R, center=False)
    np.testing.assert_allclose(fit0.R, R, atol=1e-10)
    assert fit0.scale == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", ["eigh", "svd"])
def test_pca_recovers_known_covariance_eigenvalues(seed, method):
    d = 5
    lam = np.array([9.0, 4.0, 2.0, 1.0, 0.25])
    Q = ortho_group.rvs(d, random_state=seed)
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(4000, d))
    Z = (Z - Z.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(Z.T))).T   # exactly white sample
    X = Z * np.sqrt(lam) @ Q.T + 3.0                                           # covariance Q diag(lam) Q^T
    pca = P.pca_fit(X, 3, method=method)
    np.testing.assert_allclose(pca.explained, lam[:3], rtol=1e-10)
    assert pca.variance_retained == pytest.approx(lam[:3].sum() / lam.sum(), rel=1e-10)
    # components span the top eigenvectors (up to sign) and are orthonormal
    np.testing.assert_allclose(np.abs(pca.components.T @ Q[:, :3]), np.eye(3), atol=1e-8)
    np.testing.assert_allclose(pca.components.T @ pca.components, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(P.pca_transform(pca, X).var(0, ddof=1), lam[:3], rtol=1e-10)


def test_pca_methods_agree_and_svd_keeps_numpy_signs():
    X = np.random.default_rng(0).normal(size=(50, 8)) @ np.diag(np.arange(1, 9.0))
    e, s = P.pca_fit(X, 4), P.pca_fit(X, 4, method="svd")
    np.testing.assert_allclose(e.explained, s.explained, rtol=1e-10)
    np.testing.assert_allclose(np.abs(e.components), np.abs(s.components), atol=1e-10)
    Vt = np.linalg.svd(X - X.mean(0), full_matrices=False)[2]
    assert np.array_equal(s.components, Vt[:4].T)
    with pytest.raises(ValueError, match="n_components"):
        P.pca_fit(X[:3], 4, method="svd")
    with pytest.raises(ValueError, match="method"):
        P.pca_fit(X, 2, method="qr")


def test_procrustes_fit_covers_the_modulator_projection():
    """The modulator pipeline's alignment: row-normalised (``+1e-12``) geometric points onto the
    row-normalised PCA coordinates of the encoder, centred, rotation only."""
    rng = np.random.default_rng(3)
    E, G = rng.normal(size=(40, 12)), rng.normal(size=(40, 4))
    Ec = E - E.mean(0)
    pcs = np.linalg.svd(Ec, full_matrices=False)[2][:4]
    Ep = Ec @ pcs.T
    Ep = Ep / (np.linalg.norm(Ep, axis=1, keepdims=True) + 1e-12)
    Gn = G / (np.linalg.norm(G, axis=1, keepdims=True) + 1e-12)
    R, svsum = orthogonal_procrustes(Gn - Gn.mean(0), Ep - Ep.mean(0))
    aligned = (Gn - Gn.mean(0)) @ R + Ep.mean(0)
    cos = (aligned * Ep).sum(1) / (np.linalg.norm(aligned, axis=1) * np.linalg.norm(Ep, axis=1) + 1e-12)

    pca = P.pca_fit(E, 4, method="svd")
    Ep2 = normalize_rows(P.pca_transform(pca, E), 1e-12, eps_mode="add", as_numpy=True)
    Gn2 = normalize_rows(G, 1e-12, eps_mode="add", as_numpy=True)
    fit = P.procrustes_fit(Gn2, Ep2, scaling=False)
    aligned2 = P.procrustes_apply(fit, Gn2)
    np.testing.assert_allclose(fit.R, R, atol=1e-12)
    assert fit.singular_sum == pytest.approx(svsum, rel=1e-12)
    np.testing.assert_allclose(aligned2, aligned, atol=1e-12)
    np.testing.assert_allclose(row_cosine(aligned2, Ep2, 1e-12, eps_mode="add"), cos, atol=1e-12)
    np.testing.assert_allclose(pca.components.T, pcs, atol=0)
