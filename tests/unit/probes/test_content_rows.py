"""The pentachoron CV without the tokenizer's special tokens: which rows, and the
same draws as the whole table's where they avoid the left-out rows."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from geolip_lib import metrics as M
from geolip_lib import probes
from geolip_lib.probes import uncertainty as U

pytestmark = pytest.mark.unit


class _Tok:
    """A tokenizer of ``n`` tokens whose special ids are ``special`` (one out of range)."""

    def __init__(self, n, special):
        self.n, self.all_special_ids = n, list(special)

    def __len__(self):
        return self.n

    def convert_ids_to_tokens(self, ids):
        return [f"[S{i}]" for i in ids]


def test_content_rows_leave_out_special_ids_and_rows_past_the_tokenizer():
    E = torch.randn(30, 4)
    summary, rows = probes.content_rows(E, _Tok(27, [0, 3, 3, 26, 99]))
    assert summary["n_rows"] == 30 and summary["n_special"] == 3 and summary["n_beyond_tokenizer"] == 3
    assert summary["n_content"] == len(rows) == 24
    assert summary["special"] == {"0": "[S0]", "3": "[S3]", "26": "[S26]"}
    assert not set(rows) & {0, 3, 26, 27, 28, 29} and list(rows) == sorted(rows)
    summary, rows = probes.content_rows(E, object())  # no tokenizer API: every row
    assert summary["n_content"] == 30 and summary["n_special"] == 0


def test_an_antiberty_like_table_gives_both_exact_cvs():
    """25 rows, one far out (AntiBERTy's [PAD]): the CV of all rows and of the 24 others, both exact."""
    X = np.random.default_rng(1).normal(size=(25, 16)) / 4
    X[0] *= 2.6
    E = torch.as_tensor(X)
    summary, rows = probes.content_rows(E, _Tok(25, [0]))
    everything = probes.pentachoron_probe(E, 1000, seed=0, intervals=True)["embedding"]
    drawn = M.pentachoron_cv(E, 1000, seed=0, exact_max=M.EXACT_MAX)
    content = probes.pentachoron_cv_of_rows(E, rows, drawn, 1000, seed=0)
    assert everything["exact"] and everything["n_sampled"] == 53130 and everything["interval"]["kind"] == "exact"
    assert content.exact and content.n_sampled == math.comb(24, 5)
    assert content.cv == pytest.approx(M.pentachoron_cv(X[1:], 1, exact_max=M.EXACT_MAX).cv, rel=1e-12)
    assert content.cv < everything["cv"]  # the far row spreads the volumes
    iv, info = U.pentachoron_cv_interval(E[rows], content)
    assert iv.kind == "exact" and iv.lo == iv.hi == content.cv and info == {"exact": True, "n_subsets": 42504}


def test_a_large_tables_content_cv_reuses_its_draws():
    E = torch.randn(2000, 8)
    drawn = M.pentachoron_cv(E, 500, seed=4)
    rows = np.arange(5, 2000)  # five special tokens first
    r = probes.pentachoron_cv_of_rows(E, rows, drawn, 500, seed=4)
    kept = ~np.isin(drawn.indices, np.arange(5)).any(axis=1)
    assert r.n_sampled == 500 and not r.exact
    assert np.array_equal(r.indices[:kept.sum()] + 5, drawn.indices[kept])  # the same subsets, first
    assert np.array_equal(r.volumes[:kept.sum()], drawn.volumes[kept])
    same = probes.pentachoron_cv_of_rows(E, np.arange(2000), drawn, 500, seed=4)  # nothing left out: one CV
    assert same.cv == drawn.cv


def test_null_distributions_measure_the_same_rows_of_each_null():
    E = torch.randn(300, 6)
    rows = np.arange(10, 300)
    nd = U.null_distributions(E, None, n_seeds=2, n_cos=50, n_simplices=80, seed=1, rows=rows)
    assert set(nd["pentachoron_cv_content"]) == {"gaussian", "sphere"}
    g = M.gaussian_like(E, seed=2, scale=M.matched_scale(E))
    assert nd["pentachoron_cv_content"]["gaussian"]["per_seed"][0] == pytest.approx(
        M.pentachoron_cv(g[torch.as_tensor(rows)], 80, seed=1).cv)
