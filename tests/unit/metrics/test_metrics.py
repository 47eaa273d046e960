"""Unit tests of geolip_lib.metrics: closed forms, invariances, fast == slow reference."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import special_ortho_group

from geolip_lib import metrics as M

pytestmark = pytest.mark.unit
SEEDS = [0, 1, 2, 3]


def regular_simplex(k: int, edge: float = 1.0, dim: int | None = None, seed: int = 0) -> np.ndarray:
    """k+1 points of a regular k-simplex of edge ``edge``, randomly rotated into ``dim``."""
    dim = dim or k + 1
    pts = np.zeros((k + 1, dim))
    pts[:, : k + 1] = np.eye(k + 1) * edge / math.sqrt(2)
    if dim >= 2:
        pts = pts @ special_ortho_group.rvs(dim, random_state=seed).T
    return pts


# ---------------------------------------------------------------- Cayley–Menger volumes
@pytest.mark.parametrize("k", range(1, 7))
@pytest.mark.parametrize("seed", SEEDS)
def test_regular_simplex_closed_form(k, seed):
    edge = 0.5 + seed
    pts = regular_simplex(k, edge, dim=k + 3, seed=seed)
    want = edge ** k / math.factorial(k) * math.sqrt((k + 1) / 2 ** k)
    assert M.regular_simplex_volume(k, edge) == pytest.approx(want, rel=1e-14)
    assert M.cayley_menger_volume(pts) == pytest.approx(want, rel=1e-10)
    assert M.cayley_menger_volume_sq(pts) == pytest.approx(want ** 2, rel=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_rotation_translation_invariance(seed):
    rng = np.random.default_rng(seed)
    D = 12
    pts = rng.standard_normal((50, 5, D))
    R = special_ortho_group.rvs(D, random_state=seed)
    shift = rng.standard_normal(D) * 100
    v0 = M.cayley_menger_volume(pts)
    v1 = M.cayley_menger_volume(pts @ R.T + shift)
    np.testing.assert_allclose(v1, v0, rtol=1e-9)
    # permutation of vertices does not change the volume either
    np.testing.assert_allclose(M.cayley_menger_volume(pts[:, ::-1]), v0, rtol=1e-9)


@pytest.mark.parametrize("k", [1, 2, 4, 6])
@pytest.mark.parametrize("seed", SEEDS)
def test_batched_equals_slow_reference(k, seed):
    rng = np.random.default_rng(seed)
    pts = rng.standard_normal((40, k + 1, 16)) * rng.uniform(0.1, 10)
    fast = M.cayley_menger_volume_sq(pts)
    slow = np.array([M.cayley_menger_volume_sq_reference(p) for p in pts])
    np.testing.assert_allclose(fast, slow, rtol=1e-9)


def test_batch_shapes_and_torch_roundtrip():
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((3, 4, 5, 8))
    v = M.cayley_menger_volume(pts)
    assert v.shape == (3, 4)
    vt = M.cayley_menger_volume(torch.from_numpy(pts))
    assert isinstance(vt, torch.Tensor) and vt.dtype == torch.float64
    np.testing.assert_allclose(vt.numpy(), v, rtol=1e-12)
    # a single simplex gives a float; the chunk size does not change results
    assert isinstance(M.cayley_menger_volume(pts[0, 0]), float)
    np.testing.assert_array_equal(M.cayley_menger_volume(pts, chunk=1), v)


@pytest.mark.parametrize("seed", SEEDS)
def test_offset_data_keeps_accuracy(seed):
    """Points with a large common offset, given in float32: <= 1e-6 relative error."""
    rng = np.random.default_rng(seed)
    D = 64
    base = rng.standard_normal((200, 5, D)).astype(np.float32)
    offset = (rng.standard_normal(D) * 1000).astype(np.float32)
    shifted = base + offset  # what the metric sees (float32)
    # exact reference: the float32 points, converted to float64, differenced, then volumes
    ref = M.cayley_menger_volume(shifted.astype(np.float64) - offset.astype(np.float64))
    got = M.cayley_menger_volume(shifted)
    assert np.max(np.abs(got / ref - 1)) <= 1e-6
    # the naive uncentred float32 Gram really does lose accuracy on this data
    p = torch.from_numpy(shifted)
    raw = p @ p.transpose(1, 2)
    sq = raw.diagonal(dim1=1, dim2=2)
    d2 = (sq[:, :, None] + sq[:, None, :] - 2 * raw).double()
    cm = torch.ones(200, 6, 6, dtype=torch.float64)
    cm[:, 0, 0] = 0
    cm[:, 1:, 1:] = d2
    naive = (torch.linalg.det(cm) / (2 ** 4 * 24 ** 2)).clamp_min(0).sqrt().numpy()
    assert np.max(np.abs(naive / ref - 1)) > 1e-4


def test_degenerate_and_low_dimension():
    # 5 points in 3-D span at most a 3-simplex: the 4-volume is 0
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((10, 5, 3))
    assert np.all(np.abs(M.cayley_menger_volume_sq(pts)) < 1e-14)  # round-off only
    # repeated vertex
    p = rng.standard_normal((3, 7))
    assert M.cayley_menger_volume(np.stack([p[0], p[1], p[1]])) == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("bad,match", [
    (np.zeros(5), "points"),                      # 1-D
    (np.zeros((1, 4)), "points"),                 # one vertex: no simplex
    (np.full((3, 4), np.nan), "NaN"),
])
def test_volume_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        M.cayley_menger_volume(bad)


# ---------------------------------------------------------------- pentachoron CV
def test_sample_distinct_rows_whole_range_and_distinct():
    idx = M.sample_distinct_rows(2000, 5000, 5, seed=0)
    assert idx.shape == (5000, 5)
    assert all(len(set(r)) == 5 for r in idx)
    assert idx.min() >= 0 and idx.max() < 2000
    # the whole matrix is sampled, not the first 512 rows (the seed's bug)
    assert (idx >= 512).mean() > 0.7
    # small population: still distinct; every index used
    small = M.sample_distinct_rows(5, 200, 5, seed=1)
    assert (np.sort(small, axis=1) == np.arange(5)).all()
    # uniform marginals
    counts = np.bincount(M.sample_distinct_rows(10, 20000, 3, seed=2).ravel(), minlength=10)
    assert counts.min() > 0.9 * counts.mean() and counts.max() < 1.1 * counts.mean()


@pytest.mark.parametrize("seed", SEEDS)
def test_pentachoron_cv_matches_slow_loop(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((700, 24)).astype(np.float32) + 3
    r = M.pentachoron_cv(X, n_simplices=300, seed=seed)
    slow = np.array([M.cayley_menger_volume_sq_reference(X[i].astype(np.float64)) for i in r.indices])
    np.testing.assert_allclose(r.volumes, np.sqrt(slow), rtol=1e-9)
    vols = np.sqrt(slow)
    assert r.cv == pytest.approx(vols.std() / vols.mean(), rel=1e-9)
    assert r.n_valid == r.n_sampled == 300 and r.reason is None
    # deterministic in the seed, different across seeds
    assert M.pentachoron_cv(X, 300, seed=seed).cv == r.cv
    assert M.pentachoron_cv(X, 300, seed=seed + 10).cv != r.cv


def test_pentachoron_cv_invariances():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 10))
    R = special_ortho_group.rvs(10, random_state=5)
    a = M.pentachoron_cv(X, 500, seed=3)
    b = M.pentachoron_cv(3.7 * X @ R.T + 50, 500, seed=3)  # CV is scale invariant too
    assert b.cv == pytest.approx(a.cv, rel=1e-8)
    np.testing.assert_allclose(b.volumes, a.volumes * 3.7 ** 4, rtol=1e-8)


def test_pentachoron_cv_degenerate_gives_nan_with_reason():
    rng = np.random.default_rng(0)
    flat = rng.standard_normal((100, 3)) @ rng.standard_normal((3, 20))  # rank 3 < 4
    r = M.pentachoron_cv(flat, 200, seed=0)
    assert math.isnan(r.cv) and r.n_valid < 10 and "non-degenerate" in r.reason
    dup = np.repeat(rng.standard_normal((2, 8)), 50, axis=0)  # two distinct rows only
    r2 = M.pentachoron_cv(dup, 100, seed=0)
    assert r2.n_valid == 0 and math.isnan(r2.cv) and math.isnan(r2.mean)
    assert r2.as_dict()["reason"]


@pytest.mark.parametrize("kwargs,match", [
    ({"X": np.zeros((4, 3))}, "X"),              # fewer rows than vertices
    ({"X": np.zeros((10, 3)), "n_simplices": 0}, "n_simplices"),
    ({"X": np.zeros(10)}, "X"),
    ({"X": np.ones((10, 3)), "n_vertices": 1}, "n_vertices"),
])
def test_pentachoron_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        M.simplex_volume_cv(**kwargs)
    with pytest.raises(ValueError, match="n_vertices"):
        M.pentachoron_cv(np.ones((10, 3)), n_vertices=4)


# ---------------------------------------------------------------- spectral metrics
@pytest.mark.parametrize("seed", SEEDS)
def test_pr_isotropic_gaussian_close_to_D(seed):
    D = 32
    X = np.random.default_rng(seed).standard_normal((20000, D))
    pr = M.participation_ratio(X)
    # E[PR] ~ D / (1 + D/n) for a Wishart spectrum
    assert D / (1 + 2 * D / 20000) - 1 < pr <= D
    assert M.effective_dimension(X) == pytest.approx(D, rel=0.01)


@pytest.mark.parametrize("seed", SEEDS)
def test_pr_closed_form_and_invariance(seed):
    rng = np.random.default_rng(seed)
    ev = rng.uniform(0.1, 3, size=9)
    assert M.participation_ratio_from_eigenvalues(ev) == pytest.approx(ev.sum() ** 2 / (ev ** 2).sum())
    # data with that covariance spectrum exactly (whitened Gaussian, rotated)
    n, D = 500, 9
    Z = rng.standard_normal((n, D))
    Z -= Z.mean(0)
    Z = Z @ np.linalg.inv(np.linalg.cholesky(Z.T @ Z / n)).T  # exact identity covariance
    R = special_ortho_group.rvs(D, random_state=seed)
    X = (Z * np.sqrt(ev)) @ R.T + 7.0
    np.testing.assert_allclose(M.covariance_eigenvalues(X), np.sort(ev)[::-1], rtol=1e-9)
    assert M.participation_ratio(X) == pytest.approx(M.participation_ratio_from_eigenvalues(ev), rel=1e-9)
    # uncentred moments see the offset: PR collapses towards 1
    assert M.participation_ratio(X, centered=False) < M.participation_ratio(X)
    # n < D path (Gram instead of covariance) agrees with the covariance path
    small = X[:6]
    ev_small = np.linalg.eigvalsh(np.cov(small.T, bias=True))[::-1][:6].clip(0)
    np.testing.assert_allclose(M.covariance_eigenvalues(small), ev_small, atol=1e-10)


def test_dims_for_variance_and_effective_dimension():
    ev = np.array([4.0, 3.0, 2.0, 1.0])
    assert M.dims_for_variance_from_eigenvalues(ev, 0.4) == 1
    assert M.dims_for_variance_from_eigenvalues(ev, 0.7) == 2
    assert M.dims_for_variance_from_eigenvalues(ev, [0.71, 0.9, 1.0]) == [3, 3, 4]
    assert M.effective_dimension_from_eigenvalues(np.ones(7)) == pytest.approx(7)
    assert M.effective_dimension_from_eigenvalues([1.0, 0, 0]) == pytest.approx(1)
    X = np.random.default_rng(0).standard_normal((300, 10)) * np.array([10] + [0.01] * 9)
    assert M.dims_for_variance(X, 0.95) == 1
    with pytest.raises(ValueError, match="fraction"):
        M.dims_for_variance(X, 1.5)
    with pytest.raises(ValueError, match="eigenvalues"):
        M.participation_ratio_from_eigenvalues([1.0, -2.0])


@pytest.mark.parametrize("seed", SEEDS)
def test_weight_ranks(seed):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((40, 40)))
    Vt, _ = np.linalg.qr(rng.standard_normal((20, 20)))
    s = np.sort(rng.uniform(0.5, 5, 20))[::-1]
    W = U[:, :20] @ np.diag(s) @ Vt
    assert M.stable_rank(W) == pytest.approx((s ** 2).sum() / s[0] ** 2, rel=1e-10)
    assert M.condition_number(W) == pytest.approx(s[0] / s[-1], rel=1e-8)
    e2 = np.cumsum(s ** 2) / (s ** 2).sum()
    assert M.energy_rank(W, 0.9) == int(np.searchsorted(e2, 0.9) + 1)
    e1 = np.cumsum(s) / s.sum()
    assert M.energy_rank(W, 0.9, power=1) == int(np.searchsorted(e1, 0.9) + 1)
    # orthogonal matrix: every rank is full, condition 1
    Q = U[:, :20]
    assert M.stable_rank(Q) == pytest.approx(20)
    assert M.condition_number(Q) == pytest.approx(1)
    assert M.energy_rank(Q, 1.0) == 20
    # batched torch input
    Wt = torch.from_numpy(np.stack([W, Q]))
    sr = M.stable_rank(Wt)
    assert isinstance(sr, torch.Tensor) and sr.shape == (2,)
    # rank deficient -> inf; zero -> nan
    assert M.condition_number(np.outer(s, s)) == math.inf or M.condition_number(np.outer(s, s)) > 1e12
    assert math.isnan(M.stable_rank(np.zeros((3, 3))))


# ---------------------------------------------------------------- cosine statistics
@pytest.mark.parametrize("seed", SEEDS)
def test_cosine_stats_against_direct(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((300, 16)) + 0.5
    st = M.cosine_stats(X, n_sample=120, seed=seed, return_values=True)
    idx = np.random.default_rng(seed).choice(300, size=120, replace=False)
    S = X[idx] / np.linalg.norm(X[idx], axis=1, keepdims=True)
    direct = (S @ S.T)[np.triu_indices(120, k=1)]
    np.testing.assert_allclose(np.sort(st["values"]), np.sort(direct), atol=1e-12)
    assert st["n_pairs"] == 120 * 119 // 2
    assert st["mean"] == pytest.approx(direct.mean(), abs=1e-12)
    assert st["std"] == pytest.approx(direct.std(), abs=1e-12)
    assert st["percentiles"]["50"] == pytest.approx(np.median(direct), abs=1e-12)
    half = st["near_constants"]["half"]
    assert half["frac_within"] == pytest.approx((np.abs(direct - 0.5) < 0.01).mean())
    assert half["nearest"] == pytest.approx(np.abs(direct - 0.5).min())
    # isotropic Gaussian centres on 0 with std ~ 1/sqrt(D)
    g = M.cosine_stats(rng.standard_normal((400, 64)), n_sample=None)
    assert abs(g["mean"]) < 0.01 and g["std"] == pytest.approx(1 / 8, rel=0.1)
    assert g["n_sample"] == 400


def test_cosine_scale_invariance_and_zero_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    a = M.cosine_stats(X, None)
    b = M.cosine_stats(X * np.linspace(0.1, 9, 50)[:, None], None)
    assert a["mean"] == pytest.approx(b["mean"], abs=1e-12)
    X[3] = 0
    c = M.cosine_matrix(X)
    assert torch.isnan(c[3]).all() and torch.isnan(c[:, 3]).all()  # a zero row has no direction: undefined
    assert torch.isfinite(c[np.arange(50) != 3][:, np.arange(50) != 3]).all()
    st = M.cosine_stats(X, None)
    assert st["n_undefined"] == 49 and st["n_pairs"] == 50 * 49 // 2 - 49 and np.isfinite(st["mean"])
    with pytest.raises(ValueError, match="X"):
        M.cosine_stats(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="X: every sampled row is zero"):
        M.cosine_stats(np.zeros((4, 3)))


@pytest.mark.parametrize("scale", [1e-200, 1e-40, 1e40, 1e200])
def test_extreme_scales_give_the_same_cv_and_pr(scale):
    X = np.random.default_rng(1).standard_normal((200, 16))
    ref = M.pentachoron_cv(X, 300, seed=1)
    got = M.pentachoron_cv(X * scale, 300, seed=1)
    assert got.reason is None and got.cv == pytest.approx(ref.cv, rel=1e-9)
    assert M.participation_ratio(X * scale) == pytest.approx(M.participation_ratio(X), rel=1e-9)


def test_pentachoron_cv_needs_enough_distinct_simplices():
    X = np.random.default_rng(2).standard_normal((5, 8))
    r = M.pentachoron_cv(X, 100)
    assert np.isnan(r.cv) and r.reason == "X has 5 rows: only 1 distinct 5-row simplices exist (need min_valid=10)"
    r = M.pentachoron_cv(np.zeros((20, 4)), 100)
    assert np.isnan(r.cv) and r.reason == "every row of X is zero"


# ---------------------------------------------------------------- baselines
@pytest.mark.parametrize("seed", SEEDS)
def test_gaussian_baseline_matches_shape_and_scale(seed):
    rng = np.random.default_rng(seed)
    X = (rng.standard_normal((2000, 20)) * rng.uniform(0.1, 3, 20) + 4).astype(np.float32)
    G = M.gaussian_like(X, seed=seed)
    assert G.shape == X.shape and G.dtype == np.float32
    tot_x = X.astype(np.float64).var(0).sum()
    assert G.astype(np.float64).var(0).sum() == pytest.approx(tot_x, rel=0.05)
    assert np.abs(G.mean(0)).max() < 0.2 * M.matched_scale(X)
    pr = M.gaussian_baseline(M.participation_ratio, X, seed=seed)
    assert 18 < pr <= 20
    r = M.gaussian_baseline(M.pentachoron_cv, X, seed=seed, n_simplices=200)
    assert 0 < r.cv < 1
    np.testing.assert_array_equal(M.gaussian_like(X, seed=seed), G)  # deterministic
    Gt = M.gaussian_like(torch.from_numpy(X), seed=seed, n_rows=7)
    assert isinstance(Gt, torch.Tensor) and Gt.shape == (7, 20)
    with pytest.raises(ValueError, match="fn"):
        M.gaussian_baseline(3, X)


def test_random_init_baseline_uses_twin():
    class Fake:
        def __init__(self, E):
            self.E = E

        def input_embeddings(self):
            return self.E

        def random_init(self):
            return Fake(np.random.default_rng(9).standard_normal(self.E.shape))

    E = np.random.default_rng(0).standard_normal((100, 8)) * np.r_[10, np.ones(7)]
    pr_twin = M.random_init_baseline(M.participation_ratio, Fake(E))
    assert pr_twin > M.participation_ratio(E)
    with pytest.raises(ValueError, match="loaded_model"):
        M.random_init_baseline(M.participation_ratio, object())
    assert math.isnan(M.ratio(1.0, 0.0)) and M.ratio(1.0, 4.0) == 0.25
