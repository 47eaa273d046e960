"""Notebook 02's and 06's random-init nulls from sampled layers (weights.nulls, operators.nulls)
against the full computation (5 whole twins, kept as the reference) on a tiny 12-layer BERT:
the same null within its own sampling error, at a fraction of the layers; layer sampling and
layer selection by their properties; the cache gives the same null as a fresh computation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import models, operators
from geolip_lib.operators.nulls import operator_null, select_layers
from geolip_lib.operators.tables import null_over_init_seeds
from geolip_lib.weights.nulls import battery_null, battery_null_full, sample_layers
from geolip_lib.metrics.sampled_null import SampledNull
from geolip_lib.weights.tables.claims import _magnitude_null
from geolip_lib.weights.tables.headlines import null_entry

pytestmark = pytest.mark.unit

DEEP = {"name": "h6-deep-bert", "family": "bert", "source": "tiny", "tokenizer": "minilm", "seed": 0,
        "config": {"hidden_size": 32, "num_hidden_layers": 12, "num_attention_heads": 4, "intermediate_size": 64}}


@pytest.fixture(scope="module")
def lm():
    return models.load(dict(DEEP))


@pytest.fixture
def no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    monkeypatch.setenv("GEOLIP_NULL_CACHE", "off")


@pytest.mark.parametrize("L,S", [(12, 5), (36, 5), (6, 5), (2, 5), (24, 3)])
def test_sample_layers_is_about_one_model_with_layer_0(L, S):
    picks = sample_layers(L, S, seed=1)
    m = max(2, -(-L // S)) if L > 1 else L
    assert all(p[0] == 0 and len(p) == len(set(p)) == min(m, L) and p == sorted(p) for p in picks)
    assert all(0 <= i < L for p in picks for i in p)
    assert sample_layers(L, S, seed=1) == picks  # deterministic
    assert sum(map(len, picks)) <= max(L + S, 2 * S)  # about one model of layers


def _agree(a, b):
    """Two nulls of one quantity agree within their sampling error: the means differ by less
    than the two prediction half-widths together, and the widths by less than a factor 4
    (5 seeds: a std estimate with 4 degrees of freedom lies within ×0.35…×1.7 of sigma)."""
    (alo, ahi), (blo, bhi) = (a["interval"].lo, a["interval"].hi), (b["interval"].lo, b["interval"].hi)
    assert abs(a["value"] - b["value"]) <= (ahi - alo) / 2 + (bhi - blo) / 2
    if bhi - blo == 0:  # a null with no spread at all (no dead neuron in any seed): the same value
        assert ahi - alo == 0 and a["value"] == b["value"]
    else:
        assert 0.25 <= (ahi - alo) / (bhi - blo) <= 4


def test_battery_null_from_sampled_layers_equals_the_full_one(lm, no_cache):
    full = battery_null_full(lm, 5, seed=0, device="cpu")
    samp = battery_null(lm, 5, seed=0, device="cpu")
    d = samp.drivers
    assert d["layers_in_model"] == 12 and d["layers_per_seed"] == 3 and d["model_equivalents"] == 1.25
    assert [len(s["qk"]["encoder/self"]["balance"]) for s in samp.seeds] == [3] * 5  # 3 of 12 layers measured
    for key, value_of in (("q_stable_rank", lambda s: s["svd_by_role"]["q"]["stable_rank"]),
                          ("mlp_dead_frac", lambda s: s["mlp"]["dead_frac"]),
                          ("cross_layer_adj", lambda s: s["cross_layer_attn_adj_mean"])):
        a, b = null_entry(samp.seeds, value_of, key=key), null_entry(full.seeds, value_of, key=key)
        assert a["sampled_fraction"] == (3 / 12 if key != "cross_layer_adj" else 2 / 11)
        _agree(a, b)


def test_battery_null_cache_hit_equals_miss(lm, tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    monkeypatch.setenv("GEOLIP_NULL_CACHE", "on")
    miss = battery_null(lm, 3, seed=5, device="cpu")
    hit = battery_null(lm, 3, seed=5, device="cpu")
    assert list(hit.seeds) == list(miss.seeds) and hit.stack_seeds == miss.stack_seeds
    assert len(list((tmp_path / "nulls" / "battery_null").glob("*.json"))) == 1
    monkeypatch.setenv("GEOLIP_NULL_CACHE", "off")
    assert list(battery_null(lm, 3, seed=5, device="cpu").seeds) == list(miss.seeds)


def test_select_layers_is_measuring_those_layers_alone(lm):
    store = lm.random_init_weights(seed=3, max_params=0)
    whole = operators.measure_model(store, config=lm.config, family=lm.family)
    g = next(iter(whole))
    pos = [0, 4, 7, 11]
    part = operators.measure_model(store, config=lm.config, family=lm.family, positions={g: pos})[g]
    sel = select_layers(whole[g], pos)
    assert sel.layers == part.layers == pos
    for f in ("fro_sq", "gram", "sym_eigs"):
        torch.testing.assert_close(getattr(sel, f), getattr(part, f), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="positions"):
        select_layers(whole[g], [12])


def test_operator_null_from_sampled_layers_equals_the_full_one(lm, no_cache):
    full = operators.measure_null_over_seeds(lm, 5)
    samp = operator_null(lm, 5, k=8)
    g = next(iter(samp.first))
    assert samp.drivers["groups"][g]["layers_per_seed"] == 3 and samp.first[g].n_layers == 12
    full_samples = [operators.headline_samples(o[g], anchor=-1, k=8) for o in full]
    for item in ("cos_to_anchor", "cos_adjacent", "sign_agree"):
        a, b = null_over_init_seeds(samp.samples[g], item), null_over_init_seeds(full_samples, item)
        assert a["sampled_fraction"] == (3 / 12 if item == "sign_agree" else 2 / 11)
        _agree(a, b)
    # seed 0's contribution is its whole measurement restricted to its sample
    pos = samp.drivers["groups"][g]["layer_positions_sampled"][0]
    ref = operators.headline_samples(select_layers(samp.first[g], pos), anchor=-1, k=8)
    assert np.allclose(samp.samples[g][0]["cos_to_anchor"]["values"], ref["cos_to_anchor"]["values"])


@pytest.mark.parametrize("sampled", [False, True])
def test_a_magnitude_null_is_cut_at_zero(sampled):
    """A cross-layer |mean| cannot be below 0: with seeds near 0 and wide spread, the random-init
    prediction interval is cut at 0 and says so, whether the seeds measured every pair or a sample."""
    seeds = [{"v": v} for v in (0.001, 0.002, 0.09, 0.0005, 0.003)]
    null = SampledNull(seeds, fractions={"pairs": 0.25}) if sampled else seeds
    entry = _magnitude_null(null, lambda n: n["v"])["random init"]
    iv = entry["interval"]
    assert iv.lo == 0.0 and iv.hi > 0.0 and "cut at 0" in iv.method, entry
