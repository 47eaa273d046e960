"""Mutual k-NN and debiased CKA (geolip_lib.metrics.alignment) against independent brute-force
computations (plain Python loops and sets, the HSIC formula written out) and their properties."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import ortho_group

from geolip_lib.metrics import alignment as AL
from geolip_lib.metrics import intervals as I

pytestmark = pytest.mark.unit


def _feats(n=60, d=12, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _brute_mutual_knn(A, B, k):
    """The paper's definition with loops and sets: cosine neighbours of each input in each space,
    itself excluded, overlap / k, averaged."""
    def knn_sets(X):
        rows = [list(map(float, r)) for r in X]
        norms = [math.sqrt(sum(v * v for v in r)) for r in rows]
        out = []
        for i in range(len(rows)):
            sims = []
            for j in range(len(rows)):
                if j != i:
                    sims.append((sum(a * b for a, b in zip(rows[i], rows[j])) / (norms[i] * norms[j]), j))
            sims.sort(key=lambda t: (-t[0], t[1]))
            out.append({j for _, j in sims[:k]})
        return out
    na, nb = knn_sets(A), knn_sets(B)
    return sum(len(x & y) / k for x, y in zip(na, nb)) / len(na)


def _brute_hsic(K, L):
    m = len(K)
    Kt = [[0.0 if i == j else K[i][j] for j in range(m)] for i in range(m)]
    Lt = [[0.0 if i == j else L[i][j] for j in range(m)] for i in range(m)]
    t1 = sum(Kt[i][j] * Lt[j][i] for i in range(m) for j in range(m))
    sk, sl = sum(map(sum, Kt)), sum(map(sum, Lt))
    t3 = sum(Kt[i][j] * Lt[j][l] for i in range(m) for j in range(m) for l in range(m))
    return (t1 + sk * sl / ((m - 1) * (m - 2)) - 2 * t3 / (m - 2)) / (m * (m - 3))


@pytest.mark.parametrize("seed,k", [(0, 10), (1, 3), (2, 1)])
def test_mutual_knn_equals_the_brute_force_loops(seed, k):
    A = _feats(40, 8, seed)
    B = A @ np.random.default_rng(seed + 9).standard_normal((8, 5)) + 0.5 * _feats(40, 5, seed + 20)  # related
    assert AL.mutual_knn(A, B, k) == pytest.approx(_brute_mutual_knn(A, B, k), abs=1e-12)
    per = AL.mutual_knn(A, B, k, per_input=True)
    assert per.shape == (40,) and per.mean() == pytest.approx(AL.mutual_knn(A, B, k))


def test_identical_features_align_fully_and_unrelated_ones_near_chance():
    A = _feats(200, 16)
    assert AL.mutual_knn(A, A) == 1.0
    assert AL.mutual_knn(A, 3.0 * A) == 1.0
    noise = np.mean([AL.mutual_knn(A, _feats(200, 16, s)) for s in range(1, 11)])
    assert noise == pytest.approx(AL.chance_level(200), rel=0.25)


def test_invariant_to_a_common_reordering_of_the_inputs_rotation_and_scale():
    A, B = _feats(50, 10, 3), _feats(50, 7, 4)
    B = B + A[:, :7]
    p = np.random.default_rng(5).permutation(50)
    v = AL.mutual_knn(A, B)
    assert AL.mutual_knn(A[p], B[p]) == pytest.approx(v, abs=1e-12)
    Q = ortho_group.rvs(10, random_state=6)
    assert AL.mutual_knn(2.5 * A @ Q, B) == pytest.approx(v, abs=1e-12)
    assert AL.cka(2.5 * A @ Q, B) == pytest.approx(AL.cka(A, B), abs=1e-10)
    assert AL.cka(A[p], B[p]) == pytest.approx(AL.cka(A, B), abs=1e-10)


def test_cka_of_a_rotated_copy_is_one_and_hsic_is_the_written_out_formula():
    A = _feats(30, 6, 7)
    Q = ortho_group.rvs(6, random_state=8)
    assert AL.cka(A, A @ Q) == pytest.approx(1.0, abs=1e-12)
    assert AL.cka(A, A @ Q, normalized=False) == pytest.approx(1.0, abs=1e-12)
    B = _feats(12, 4, 9)
    A = _feats(12, 5, 10)
    K, L = (A @ A.T).tolist(), (B @ B.T).tolist()
    assert AL.hsic_unbiased(K, L) == pytest.approx(_brute_hsic(K, L), rel=1e-10)


def test_weighted_cka_equals_cka_of_the_copied_rows():
    A, B = _feats(25, 6, 11), _feats(25, 4, 12)
    B[:, :3] += A[:, :3]
    stat = AL.weighted_cka(A, B, distinct=False)
    rng = np.random.default_rng(13)
    W = rng.multinomial(25, np.full(25, 1 / 25), size=4).astype(float)
    got = stat(W)
    for w, g in zip(W, got):
        idx = np.repeat(np.arange(25), w.astype(int))
        assert g == pytest.approx(AL.cka(A[idx], B[idx]), rel=1e-9)
    assert stat(np.ones((1, 25)))[0] == pytest.approx(AL.cka(A, B), rel=1e-12)
    distinct = AL.weighted_cka(A, B)(W)
    for w, g in zip(W, distinct):
        idx = np.flatnonzero(w)
        assert g == pytest.approx(AL.cka(A[idx], B[idx]), rel=1e-9)


def test_the_cka_interval_over_distinct_inputs_holds_the_estimate_where_copies_push_it_up():
    rng = np.random.default_rng(21)
    Z = rng.standard_normal((200, 8))
    A = Z @ rng.standard_normal((8, 20)) + 2.0 * rng.standard_normal((200, 20))
    B = Z @ rng.standard_normal((8, 16)) + 2.0 * rng.standard_normal((200, 16))
    v = AL.cka(A, B)
    copies = I.bootstrap_weighted(200, AL.weighted_cka(A, B, distinct=False), n_boot=200, seed=0)
    distinct = I.bootstrap_weighted(200, AL.weighted_cka(A, B), n_boot=200, seed=0)
    assert distinct.lo < v < distinct.hi
    assert (copies.lo + copies.hi) / 2 - v > (distinct.lo + distinct.hi) / 2 - v


def test_chance_level_and_the_shuffled_pairing_null_agree():
    A = _feats(120, 10, 14)
    B = A + 0.1 * _feats(120, 10, 15)  # strongly aligned: shuffling breaks it
    s = AL.shuffled_overlaps(A, B, n_shuffles=30, seed=0)
    assert s.shape == (30,)
    assert s.mean() == pytest.approx(AL.chance_level(120), rel=0.3)
    assert AL.mutual_knn(A, B) > 5 * s.max()
    # one shuffle equals the score of explicitly permuted rows
    p = np.random.default_rng(0).permutation(120)
    assert AL.shuffled_overlaps(A, B, n_shuffles=1, seed=0)[0] == pytest.approx(AL.mutual_knn(A, B[p]), abs=1e-12)
    assert AL.chance_level(1024, 10) == 10 / 1023


def test_matrix_is_each_layer_pair_and_outliers_clamp_as_the_paper():
    A = [_feats(30, 5, s) for s in range(3)]
    B = [_feats(30, 4, s + 10) + A[s][:, :4] for s in range(2)]
    M = AL.mutual_knn_matrix(A, B, k=5)
    assert M.shape == (3, 2)
    assert M[1, 1] == pytest.approx(AL.mutual_knn(A[1], B[1], 5))
    X = _feats(20, 50, 16)[:, None, :].repeat(2, axis=1)  # (N, L, D)
    X[0, 0, 0] = 1e6
    Y = AL.remove_outliers(X)
    t = np.quantile(np.abs(X).reshape(20, -1), 0.95, axis=1).mean()
    assert np.abs(Y).max() == pytest.approx(t) and Y[0, 0, 0] == pytest.approx(t)
    Z = AL.remove_outliers(X, exact=True)
    assert np.abs(Z).max() == np.sort(np.abs(X).ravel())[int(0.95 * X.size)]
    assert np.array_equal(AL.remove_outliers(X, q=1), X)


def test_bad_input_is_one_line_naming_it():
    with pytest.raises(ValueError, match="b: has 5 inputs where a has 6"):
        AL.mutual_knn(_feats(6, 3), _feats(5, 3), k=2)
    with pytest.raises(ValueError, match="k"):
        AL.mutual_knn(_feats(6, 3), _feats(6, 3), k=6)
    bad = _feats(6, 3)
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        AL.mutual_knn(bad, _feats(6, 3), k=2)
