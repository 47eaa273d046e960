"""Notebook 01's kinds of numbers and its nulls as distributions, on small tables."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import metrics as M
from geolip_lib import results
from geolip_lib.probes import uncertainty as U

pytestmark = pytest.mark.unit


def _table(seed: int, n: int = 300, d: int = 8) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g) * torch.linspace(0.5, 2.0, d)


def test_pr_of_every_row_is_exact_and_of_a_sample_is_bias_corrected():
    E = _table(0)
    ex = U.pr_estimate(E)
    assert ex["interval"] == "exact" and ex["over"] == "300 rows"
    assert ex["value"] == pytest.approx(M.participation_ratio(E), rel=1e-9)
    s = U.pr_estimate(E, max_rows=100, n_boot=200)
    assert s["interval"].kind == "sampled" and s["interval"].contains(s["value"])
    assert s["value"] > s["plug_in"]  # the plug-in PR of a row sample is biased low
    h = results.headline(s["value"], interval=s["interval"], plug_in=s["plug_in"])
    assert h["plug_in"] == s["plug_in"] and h["kind"] == "sampled"


def test_nulls_are_distributions_over_their_own_seeds():
    E = _table(0)
    nd = U.null_distributions(E, lambda k: _table(100 + k), n_seeds=5, n_cos=100, n_simplices=60, seed=3)
    assert set(nd) == {"pentachoron_cv", "cosine_mean", "pr", "pr_over_dim", "volume_ratio"}
    assert set(nd["pentachoron_cv"]) == {"gaussian", "sphere", "random_init"}
    for key, by in nd.items():
        for kind, null in by.items():
            assert len(null["per_seed"]) == 5 and null["interval"].kind == "over_seeds", (key, kind)
            assert null["interval"].contains(null["value"]) and "5 " in null["interval"].method
    # seed 0 of the Gaussian is the notebook's gaussian_like(E, seed + 1); seed 4 of random init is init_table(4)
    assert nd["pr"]["gaussian"]["per_seed"][0] == pytest.approx(M.participation_ratio(M.gaussian_like(E, seed=4)),
                                                                rel=1e-9)
    assert nd["pr"]["random_init"]["per_seed"][4] == pytest.approx(M.participation_ratio(_table(104)), rel=1e-9)
    assert nd["pr_over_dim"]["gaussian"]["value"] == pytest.approx(nd["pr"]["gaussian"]["value"] / 8)
    assert U.null_distributions(E, None, n_seeds=5, n_cos=100, n_simplices=60)["pr"].keys() == {"gaussian"}
    # an exact value against the nulls: separated from a null whose seeds never reach it
    h = results.headline(1.0, interval="exact", over="300 rows", nulls=nd["pr"])
    assert all(n["separated"] for n in h["nulls"].values())


def test_pentachoron_cv_nulls_are_notebook_01s_dimension_nulls_and_scale_free():
    """07's PCA-projected table: the same Gaussian and sphere seeds as null_distributions; a CV
    null does not move when the table is rescaled (the Gaussian matches its scale)."""
    E = _table(0)
    nd = U.null_distributions(E, None, n_seeds=3, n_cos=100, n_simplices=60, seed=3)["pentachoron_cv"]
    cv = U.pentachoron_cv_nulls(E, 60, seed=3, n_seeds=3)
    assert set(cv) == {"gaussian", "unit sphere"}
    assert cv["gaussian"]["per_seed"] == pytest.approx(nd["gaussian"]["per_seed"], rel=1e-12)
    assert cv["unit sphere"]["per_seed"] == pytest.approx(nd["sphere"]["per_seed"], rel=1e-12)
    scaled = U.pentachoron_cv_nulls(7.0 * E, 60, seed=3, n_seeds=3)
    assert scaled["gaussian"]["per_seed"] == pytest.approx(cv["gaussian"]["per_seed"], rel=1e-6)  # float32 draws


def test_random_init_tables_reuse_the_twin_and_seed_the_rest():
    class LM:  # the two calls random_init_tables makes of a loaded model
        params = type("P", (), {"seed": 10})()

        def random_init(self, seed=None):
            return Twin(seed)

    class Twin:
        def __init__(self, seed):
            self.seed = seed

        def input_embeddings(self):
            return _table(self.seed)

    assert U.random_init_tables(LM(), None) is None
    f = U.random_init_tables(LM(), Twin(11))
    assert torch.equal(f(0), _table(11)) and torch.equal(f(3), _table(10 + 1 + 3))
