"""Notebook 17's measurements (geolip_lib.probes.alignment): the inputs, the pooled features, the
pair measurements and the claims records they feed."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib import models
from geolip_lib.claims.recorded import recorded_quantities
from geolip_lib.metrics import alignment as AL
from geolip_lib.probes import alignment as A

pytestmark = pytest.mark.unit


def test_inputs_are_distinct_wordnet_definitions_and_examples_drawn_by_seed():
    texts, kinds = A.alignment_texts(40, seed=3)
    assert len(set(texts)) == 40 and kinds.count("definition") == 20 and kinds.count("example") == 20
    assert A.alignment_texts(40, seed=3) == (texts, kinds) and A.alignment_texts(40, seed=4)[0] != texts
    with pytest.raises(ValueError, match="n"):
        A.alignment_texts(10**7)


def test_pooled_features_are_the_masked_mean_whatever_the_batch():
    lm = models.load("tiny-bert")
    texts = ["a dog barks", "the quick brown fox jumps over the lazy dog", "cats"]
    f = A.pooled_features(lm, texts, batch_size=3)
    assert f.shape[:2] == (3, len(lm.hidden_states(texts[:1]).layers))
    for i, t in enumerate(texts):
        hs = lm.hidden_states([t])
        want = np.stack([h[0].double().mean(0).numpy() for h in hs.layers])  # one text: no padding
        assert np.allclose(f[i], want, atol=1e-5)
    assert np.allclose(A.pooled_features(lm, texts, batch_size=1), f, atol=1e-5)


def test_other_languages_are_named_with_their_reason():
    assert "antibody" in A.language_problem("antiberty")
    assert "SMILES" in A.language_problem("rxnfp-bert-pretrained")
    assert A.language_problem("all-minilm-l6-v2") is None


def _features(seed=0):
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((80, 6))
    out = {}
    for i, (name, layers, d) in enumerate((("m1", 3, 10), ("m2", 2, 8), ("m3", 4, 12))):
        w = rng.standard_normal((6, d))
        tr = np.stack([base @ w + (1 + l) * rng.standard_normal((80, d)) for l in range(layers)], 1)
        out[name] = {"trained": tr, "random_init": [rng.standard_normal(tr.shape)], "params": 10 ** (6 + i)}
    return out


def test_pairs_best_and_last_layers_and_the_claims_records():
    feats = _features()
    trained, twins = A.measure_pairs(feats, k=5, n_boot=100, n_shuffles=5, cka_boot=30)
    assert list(trained) == ["m1 × m2", "m1 × m3", "m2 × m3"]
    m = trained["m1 × m3"]
    assert m["matrix"].shape == (3, 4) and m["scopes"]["last layers"]["layers"] == (2, 3)
    i, j = m["scopes"]["best layer pair"]["layers"]
    assert m["matrix"][i, j] == m["matrix"].max()
    assert m["scopes"]["last layers"]["value"] == pytest.approx(
        AL.mutual_knn(feats["m1"]["trained"][:, 2], feats["m3"]["trained"][:, 3], 5))
    cl = A.alignment_claims(trained, twins, params={n: f["params"] for n, f in feats.items()},
                            set_name="m1 × m2 × m3", not_run={"antiberty × m1": "reads antibody sequences"},
                            n_boot=100)
    assert set(cl) <= recorded_quantities()
    h = cl["mutual_knn_alignment"]["m1 × m2"]["best layer pair"]
    assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"]
    assert set(h["nulls"]) == {"chance", "shuffled pairing", "random_init"}
    assert h["nulls"]["chance"]["value"] == AL.chance_level(80, 5) == 5 / 79
    assert cl["mutual_knn_alignment"]["antiberty × m1"] == {"not_run": "reads antibody sequences"}
    over = cl["alignment_over_random_init"]["m1 × m2"]["last layers"]
    assert over["value"] == pytest.approx(trained["m1 × m2"]["scopes"]["last layers"]["value"]
                                          - twins["m1 × m2"][0]["scopes"]["last layers"]["value"])
    assert over["interval"]["lo"] > 0  # the twins are noise: the trained pair's shared structure is what remains
    rho = cl["alignment_competence"]["m1 × m2 × m3"]["best layer pair"]
    assert -1 <= rho["interval"]["lo"] <= rho["value"] <= rho["interval"]["hi"] <= 1
    two = A.alignment_claims({"m1 × m2": trained["m1 × m2"]}, {}, params={"m1": 1, "m2": 2}, set_name="m1 × m2",
                             not_run={}, n_boot=50)
    assert "needs at least 3" in two["alignment_competence"]["m1 × m2"]["not_run"]


def test_competence_is_the_rank_correlation_over_pairs_of_geometric_mean_size():
    vals = {"a × b": 0.1, "a × c": 0.2, "b × c": 0.3}
    assert A.competence_rho(vals, {"a": 1, "b": 10, "c": 100}) == pytest.approx(1.0)
    assert A.competence_rho(vals, {"a": 100, "b": 10, "c": 1}) == pytest.approx(-1.0)
