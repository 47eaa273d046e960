"""Exact pentachoron CV of a small table: every 5-row subset once, and measuring
given row sets (the draws of a larger table mapped onto its kept rows)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from geolip_lib import metrics as M

pytestmark = pytest.mark.unit


def test_all_subsets_is_every_combination_in_order():
    got = M.all_subsets(7, 5)
    assert got.shape == (21, 5) and got.dtype == np.int64
    assert [tuple(r) for r in got] == list(itertools.combinations(range(7), 5))


def test_a_25_row_table_is_measured_on_all_53130_subsets_exactly():
    X = np.random.default_rng(0).normal(size=(25, 12))
    X[0] *= 2.6  # a [PAD]-like row far out
    r = M.pentachoron_cv(X, 1000, seed=3, exact_max=M.EXACT_MAX)
    assert r.exact and r.n_sampled == math.comb(25, 5) == 53130 and r.n_valid == 53130
    vols = np.sqrt(np.maximum([M.cayley_menger_volume_sq_reference(X[list(c)])
                               for c in itertools.combinations(range(25), 5)], 0))
    assert r.cv == pytest.approx(vols.std() / vols.mean(), rel=1e-9)
    assert M.pentachoron_cv(X, 1000, seed=99, exact_max=M.EXACT_MAX).cv == r.cv  # no sampling: no seed
    assert r.as_dict()["exact"] is True
    drawn = M.pentachoron_cv(X, 1000, seed=3)  # without exact_max: 1000 draws, as before
    assert not drawn.exact and drawn.n_sampled == 1000 and drawn.cv != r.cv
    assert not M.pentachoron_cv(X, 1000, seed=3, exact_max=53129).exact


def test_given_row_sets_are_measured_as_drawn_ones():
    X = torch.randn(40, 8)
    r = M.pentachoron_cv(X, 300, seed=5)
    again = M.pentachoron_cv(X, 1, seed=0, indices=r.indices)
    assert again.cv == r.cv and again.n_sampled == 300 and np.array_equal(again.indices, r.indices)
    with pytest.raises(ValueError, match="indices"):
        M.pentachoron_cv(X, 1, indices=np.array([[0, 1, 2, 3, 3]]))
    with pytest.raises(ValueError, match="indices"):
        M.pentachoron_cv(X, 1, indices=np.array([[0, 1, 2, 3, 40]]))
