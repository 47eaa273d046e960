"""metrics.cosine is the one home of row normalisation and cosines: each former copy's
formula (kept here as the reference) is reproduced by a parameter of the home, to 1e-12."""
import numpy as np
import pytest
import torch

from geolip_lib.metrics import cosine as C
from geolip_lib import procrustes as P
from geolip_lib.lexical import relational_battery as A
from geolip_lib.modulators import phase


def _data(seed, n=30, d=7, zero_row=False):
    X = np.random.default_rng(seed).normal(size=(n, d)) * np.random.default_rng(seed + 1).uniform(0.1, 5, (n, 1))
    if zero_row:
        X[3] = 0
    return X


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_former_copies_reproduced(seed):
    X, Y = _data(seed), _data(seed + 10)
    # relational_battery.normalize: x / (|x| + 1e-8), torch float64
    t = torch.as_tensor(X, dtype=torch.float64)
    ref = (t / (t.norm(dim=1, keepdim=True) + 1e-8)).numpy()
    assert np.array_equal(A.normalize(X), ref)
    assert np.array_equal(C.normalize_rows(X, 1e-8, eps_mode="add", as_numpy=True), ref)
    # relational_battery.rowwise_cosine: sum of products of the normalised rows
    np.testing.assert_allclose(A.rowwise_cosine(X, Y), (A.normalize(X) * A.normalize(Y)).sum(1), rtol=0, atol=1e-12)
    # procrustes.row_cosine: a.b / max(|a||b|, 1e-12)
    ref = (X * Y).sum(1) / np.maximum(np.linalg.norm(X, axis=1) * np.linalg.norm(Y, axis=1), 1e-12)
    np.testing.assert_allclose(P.row_cosine(X, Y), ref, rtol=0, atol=1e-12)
    # procrustes.pairwise_cosine: Gram of x / max(|x|, 1e-12)
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(P.pairwise_cosine(X), Xn @ Xn.T, rtol=0, atol=1e-12)
    # modulators.phase._row_cos: a.b / (|a||b| + 1e-12)
    ref = (X * Y).sum(1) / (np.linalg.norm(X, axis=1) * np.linalg.norm(Y, axis=1) + 1e-12)
    np.testing.assert_allclose(phase._row_cos(X, Y), ref, rtol=0, atol=1e-12)
    # the home's own cosine_matrix: clamp at 1e-8
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-8)
    np.testing.assert_allclose(C.cosine_matrix(X).numpy(), Xn @ Xn.T, rtol=0, atol=1e-12)


def test_zero_rows_and_eps_modes():
    X = _data(5, zero_row=True)
    c = C.cosine_matrix(X)
    assert torch.isnan(c[3]).all() and torch.isnan(c[:, 3]).all()
    k = C.cosine_matrix(X, zero_rows="keep")
    assert (k[3] == 0).all() and np.isfinite(k.numpy()).all()
    assert np.array_equal(P.pairwise_cosine(X)[3], np.zeros(len(X)))
    assert np.all(C.row_cosine(X, X)[[3]] == 0)
    with pytest.raises(ValueError, match="eps_mode"):
        C.normalize_rows(X, eps_mode="bogus")
    with pytest.raises(ValueError, match="B"):
        C.row_cosine(X, X[:, :3])


def test_inputs_numpy_and_torch_agree():
    X = _data(7)
    for f in (lambda Z: C.normalize_rows(Z).numpy(), lambda Z: C.row_cosine(Z, Z[[2, 0, 1] * 10]), C.pairwise_cosines):
        assert np.array_equal(f(X), f(torch.as_tensor(X))) or np.allclose(f(X), f(torch.as_tensor(X)), atol=1e-15)
    assert C.normalize_rows(X.astype(np.float32)).dtype == torch.float64


def test_known_answers():
    X = np.array([[1.0, 0], [0, 2.0], [3.0, 3.0]])
    np.testing.assert_allclose(C.row_cosine(X, np.array([[2.0, 0], [1.0, 0], [-1.0, -1.0]])), [1, 0, -1], atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(C.normalize_rows(X, as_numpy=True), axis=1), 1, atol=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_offdiag_cosine_is_the_brute_force_mean(seed):
    Xn = C.normalize_rows(_data(seed), as_numpy=True)
    G = Xn @ Xn.T
    brute = (G.sum() - np.trace(G)) / (len(G) * (len(G) - 1))
    assert C.mean_offdiag_cosine(Xn) == pytest.approx(brute, rel=1e-12)
    assert np.isnan(C.mean_offdiag_cosine(Xn[:1]))
    assert A.mean_offdiag_cosine is C.mean_offdiag_cosine
