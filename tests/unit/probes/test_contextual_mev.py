"""The maximum explainable variance's floor (geolip_lib.probes.contextual_mev): n uncentred vectors in d
dimensions have an MEV of at least 1/min(n, d), attained by equal-norm orthogonal rows (or a tight frame), and
notebook 16's MEV records carry that floor for the claims evaluator."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from geolip_lib.probes import contextual as C
from geolip_lib.probes import contextual_mev as M

pytestmark = pytest.mark.unit


def _one_word(X):
    return M.max_explainable_variance(X, np.zeros(len(X), dtype=int))[0]


@pytest.mark.parametrize("seed", range(4))
def test_random_data_never_goes_below_the_closed_form_floor(seed):
    """Gaussian, anisotropic, low-rank, heavy-tailed and nearly orthogonal rows, with n below, at and above the
    width d: the MEV is never below 1/min(n, d), and comes within 1 % of it for the spread-out draws."""
    rng = np.random.default_rng(seed)
    closest = np.inf
    for _ in range(300):
        n, d = int(rng.integers(2, 40)), int(rng.integers(2, 60))
        kind = rng.integers(5)
        X = rng.standard_normal((n, d))
        if kind == 1:
            X += rng.uniform(0, 3) * rng.standard_normal(d)  # a shared direction (anisotropy)
        elif kind == 2:
            X = X[:, :max(1, d // 3)] @ rng.standard_normal((max(1, d // 3), d))  # low rank
        elif kind == 3:
            X = rng.standard_cauchy((n, d))
        elif kind == 4 and n <= d:
            X = ortho_group.rvs(d, random_state=rng)[:n] + 1e-3 * X  # nearly orthogonal, equal norms
        floor = float(M.mev_floor(n, d))
        assert floor == 1 / min(n, d)
        m = _one_word(X)
        assert m >= floor - 1e-12, (n, d, kind)
        closest = min(closest, m / floor - 1)
    assert closest < 0.01  # the bound is tight on random data, not only on the constructions below


@pytest.mark.parametrize("n,d", [(2, 2), (5, 5), (8, 384), (21, 64)])
def test_equal_norm_orthogonal_rows_attain_one_over_n(n, d):
    Q = ortho_group.rvs(d, random_state=n)[:n] * 3.7  # n orthogonal rows of one length
    assert _one_word(Q) == pytest.approx(1 / n, abs=1e-12) == pytest.approx(float(M.mev_floor(n, d)))


@pytest.mark.parametrize("n,d", [(7, 3), (32, 5)])
def test_more_contexts_than_dimensions_attain_one_over_d_with_a_tight_frame(n, d):
    """n > d rows forming a tight frame (d orthonormal columns of an n x n rotation, rows of equal norm or not):
    X Xᵀ has d equal eigenvalues, so MEV = 1/d = 1/min(n, d)."""
    X = ortho_group.rvs(n, random_state=d)[:, :d]
    assert _one_word(X) == pytest.approx(1 / d, abs=1e-12) == pytest.approx(float(M.mev_floor(n, d)))


def test_unequal_lengths_or_a_shared_direction_lift_the_mev_above_its_floor():
    Q = ortho_group.rvs(10, random_state=0)[:5]
    assert _one_word(Q * np.array([[1.0], [1.0], [1.0], [1.0], [2.0]])) == pytest.approx(4 / 8)  # λ_max / tr
    assert _one_word(Q + 0.5 * Q.sum(0)) > 0.2 + 0.1


def test_the_mev_is_uncentred_so_a_centred_simplex_sits_at_its_floor():
    """n centred points (a regular simplex) span n - 1 dimensions: uncentred, their MEV is 1/(n - 1), the floor
    1/min(n, d) with d = n - 1; a centred MEV would floor there whatever the width."""
    n = 6
    S = np.eye(n) - 1 / n  # rows: a regular simplex, centred, rank n - 1
    assert _one_word(S) == pytest.approx(1 / (n - 1), abs=1e-12)
    assert _one_word(np.eye(n)) == pytest.approx(1 / n, abs=1e-12)


def test_contexts_for_floor_is_the_fewest_below_the_edge():
    assert M.contexts_for_floor(0.05) == 21  # 1/20 = 5 % sits on the line, not below it
    assert M.contexts_for_floor(0.1) == 11 and M.contexts_for_floor(0.3) == 4 and M.contexts_for_floor(1) == 2
    for edge in (0.05, 0.037, 0.125, 0.5):
        n = M.contexts_for_floor(edge)
        assert 1 / n < edge <= 1 / (n - 1)
    with pytest.raises(ValueError, match="edge"):
        M.contexts_for_floor(0)


def test_floor_records_mean_over_words_and_the_adjusted_floor_moves_by_the_baseline():
    counts = np.array([5, 8, 8, 6])
    rec = M.floor_records(counts, 384, [0.3, 0.25, np.nan, 0.4])
    f = np.mean(1 / counts)
    assert rec["mev"]["value"] == pytest.approx(f)
    assert "5–8 contexts" in rec["mev"]["why"] and rec["mev"]["decide"].startswith("at least 21 contexts per word")
    assert rec["adjusted_mev"]["value"] == pytest.approx(f - 0.25)  # the largest over layers: least baseline
    assert "cancels the 1/n floor" in rec["adjusted_mev"]["why"]
    assert M.floor_records([40, 40, 40], 16, [])["mev"]["value"] == pytest.approx(1 / 16)  # width 16 < 40 contexts
    assert "adjusted_mev" not in M.floor_records([4, 4, 4], None, [np.nan])


def test_the_claims_records_carry_their_floor_and_respect_it():
    rng = np.random.default_rng(3)
    w = np.repeat(np.arange(12), [5, 6, 7, 8] * 3)
    layers = [rng.standard_normal((len(w), 24)) + rng.standard_normal(24) for _ in range(4)]
    g = C.analyse(layers, w, n_pairs=400, n_boot=50)
    rec = C.contextual_claims(g)
    assert g.dim == 24
    mev, adj = rec["mev"]["block outputs"], rec["adjusted_mev"]["block outputs"]
    f = np.mean(1 / np.array([5, 6, 7, 8] * 3))
    assert mev["floor"]["value"] == pytest.approx(f) and mev["value"] >= f
    base = g._point()["mev"][1:] - g._point()["adjusted_mev"][1:]
    assert adj["floor"]["value"] == pytest.approx(f - base.min()) and adj["value"] >= adj["floor"]["value"]
    assert adj["floor"]["value"] <= 0  # the baseline is at least the floor: the adjustment cancels it
    for key in ("anisotropy", "self_similarity_drop"):
        assert "floor" not in rec[key]["block outputs"]
    for key in ("mev", "adjusted_mev"):
        assert set(rec[key]["block outputs"]["floor"]) == {"value", "why", "decide"}
