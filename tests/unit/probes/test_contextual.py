"""Ethayarajh (2019)'s measurements (geolip_lib.probes.contextual), tested by their mathematical properties."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from geolip_lib.probes import contextual as C


def _words(n_words=12, n_ctx=6):
    return np.repeat(np.arange(n_words), n_ctx)


def _layers_from(rng, word_of, n_layers=3, dim=16, shared=0.0, spread=1.0):
    """Per layer: a word vector per word plus context noise (``spread``), plus a common
    direction of weight ``shared`` (anisotropy)."""
    W = int(word_of.max()) + 1
    common = rng.standard_normal(dim)
    out = []
    for _ in range(n_layers):
        base = rng.standard_normal((W, dim))
        out.append(base[word_of] + spread * rng.standard_normal((len(word_of), dim)) + shared * common)
    return out


def test_identical_contexts_self_similarity_and_mev_are_one():
    rng = np.random.default_rng(0)
    w = _words()
    base = rng.standard_normal((12, 16))
    X = base[w] * rng.uniform(0.5, 2.0, size=(len(w), 1))  # the same direction in every context, any length
    np.testing.assert_allclose(C.self_similarity(X, w), 1.0, atol=1e-12)
    np.testing.assert_allclose(C.max_explainable_variance(X, w), 1.0, atol=1e-12)


def test_mev_of_rank_one_data_is_one_and_of_orthogonal_rows_is_one_over_n():
    rng = np.random.default_rng(1)
    u = rng.standard_normal(32)
    X = np.outer(rng.standard_normal(7), u)  # rank 1, signs mixed
    assert C.max_explainable_variance(X, np.zeros(7, dtype=int))[0] == pytest.approx(1.0, abs=1e-12)
    Q = ortho_group.rvs(32, random_state=2)[:5]  # 5 orthonormal rows: no direction explains more than 1/5
    assert C.max_explainable_variance(Q, np.zeros(5, dtype=int))[0] == pytest.approx(0.2, abs=1e-12)


def test_mev_lies_between_one_over_n_and_one():
    rng = np.random.default_rng(3)
    w = _words(10, 7)
    m = C.max_explainable_variance(rng.standard_normal((70, 50)), w)
    assert np.all(m >= 1 / 7 - 1e-12) and np.all(m <= 1 + 1e-12)


def test_self_similarity_matches_the_pairwise_definition():
    rng = np.random.default_rng(4)
    w = _words(5, 6)
    X = rng.standard_normal((30, 8)) + 0.5
    got = C.self_similarity(X, w)
    for k in range(5):
        U = X[w == k] / np.linalg.norm(X[w == k], axis=1, keepdims=True)
        G = U @ U.T
        assert got[k] == pytest.approx(G[np.triu_indices(6, 1)].mean(), abs=1e-12)


def test_isotropic_gaussian_has_anisotropy_zero_within_three_standard_errors():
    rng = np.random.default_rng(5)
    w = _words(40, 6)
    X = rng.standard_normal((len(w), 64))
    pairs = C.sample_pairs(w, 4000, seed=0)
    assert np.all(w[pairs[:, 0]] != w[pairs[:, 1]])
    c = C.anisotropy(X, pairs)
    se = c.std(ddof=1) / np.sqrt(len(c))
    assert abs(c.mean()) < 3 * se


def test_anisotropy_is_the_shared_direction():
    rng = np.random.default_rng(6)
    w = _words(20, 5)
    layers = _layers_from(rng, w, n_layers=1, dim=32, shared=4.0)
    c = C.anisotropy(layers[0], C.sample_pairs(w, 2000))
    assert c.mean() > 0.5  # |common|^2 ~ 16·32 against 2·32 of noise per vector


def test_all_measurements_are_invariant_to_rotation_and_scale():
    rng = np.random.default_rng(7)
    w = _words(8, 6)
    layers = _layers_from(rng, w, n_layers=3, dim=12, shared=1.0)
    Q = ortho_group.rvs(12, random_state=8)
    moved = [3.7 * X @ Q for X in layers]
    g1, g2 = C.analyse(layers, w, n_pairs=500, n_boot=100), C.analyse(moved, w, n_pairs=500, n_boot=100)
    for a, b in ((g1.cos, g2.cos), (g1.self_sim, g2.self_sim), (g1.mev, g2.mev), (g1.mev_baseline, g2.mev_baseline)):
        np.testing.assert_allclose(a, b, atol=1e-10)
    s1, s2 = g1.layer_stats(), g2.layer_stats()
    for key in ("anisotropy", "adjusted_self_similarity", "mev", "adjusted_mev"):
        for r1, r2 in zip(s1[key], s2[key]):
            assert r1["value"] == pytest.approx(r2["value"], abs=1e-10)
            assert r1["lo"] == pytest.approx(r2["lo"], abs=1e-10) and r1["hi"] == pytest.approx(r2["hi"], abs=1e-10)


def test_layer_stats_intervals_contain_the_values_and_adjusted_is_the_difference():
    rng = np.random.default_rng(9)
    w = _words(15, 6)
    g = C.analyse(_layers_from(rng, w, n_layers=4, dim=16, shared=1.5), w, n_pairs=800, n_boot=200)
    st = g.layer_stats()
    assert st["layer"] == [0, 1, 2, 3]
    for key in ("anisotropy", "self_similarity", "adjusted_self_similarity", "mev", "adjusted_mev"):
        for r in st[key]:
            assert r["lo"] <= r["value"] <= r["hi"] and r["hi"] > r["lo"]
    for li in range(4):
        assert st["adjusted_self_similarity"][li]["value"] == pytest.approx(
            st["self_similarity"][li]["value"] - st["anisotropy"][li]["value"], abs=1e-12)
    assert "words" in st["interval_method"] and "200 resamples" in st["interval_method"]


def test_adjusted_mev_is_near_zero_when_contexts_carry_no_word_identity():
    rng = np.random.default_rng(10)
    w = _words(30, 6)
    X = rng.standard_normal((len(w), 64)) + 2.0 * rng.standard_normal(64)  # anisotropic, no word vector
    g = C.analyse([X, X], w, n_pairs=500, n_boot=200)
    raw = g.layer_stats()["mev"][1]
    adj = g.layer_stats()["adjusted_mev"][1]
    assert raw["value"] > 1 / 6  # the floor plus the shared direction
    assert adj["lo"] < 0 < adj["hi"]


def test_contextual_claims_read_the_layers_and_the_nulls():
    rng = np.random.default_rng(11)
    w = _words(12, 6)
    # word identity fades with depth: lower self-similarity in upper layers
    W, dim = 12, 24
    base, common = rng.standard_normal((W, dim)), rng.standard_normal(dim)
    layers = [base[w] * (1.0 - 0.2 * li) + (0.3 + 0.4 * li) * rng.standard_normal((len(w), dim)) + common
              for li in range(5)]
    g = C.analyse(layers, w, n_pairs=800, n_boot=200)
    gauss = [C.claim_values(C.analyse(C.gaussian_layers(layers, seed=s), w, n_pairs=800, n_boot=50))
             for s in range(3)]
    rec = C.contextual_claims(g, nulls={"gaussian": gauss})
    assert set(rec) == set(C.CLAIM_STATS)
    a = rec["anisotropy"]["block outputs"]
    st = g.layer_stats()
    assert a["value"] == pytest.approx(min(r["value"] for r in st["anisotropy"][1:]), abs=1e-12)
    assert a["layer"] in (1, 2, 3, 4) and len(a["per_layer"]) == 4
    d = rec["self_similarity_drop"]["block outputs"]
    adj = [r["value"] for r in st["adjusted_self_similarity"]]
    assert d["value"] == pytest.approx(np.mean(adj[1:3]) - np.mean(adj[3:5]), abs=1e-12)
    assert d["value"] > 0 and d["interval"]["lo"] <= d["value"] <= d["interval"]["hi"]
    gn = a["nulls"]["gaussian"]
    assert abs(gn["value"]) < 0.1 and len(gn["per_seed"]) == 3  # an isotropic null has ~0 anisotropy
    m = rec["mev"]["block outputs"]
    assert m["value"] == pytest.approx(max(r["value"] for r in st["mev"][1:]), abs=1e-12)


def test_one_block_has_no_drop():
    rng = np.random.default_rng(12)
    w = _words(6, 5)
    g = C.analyse(_layers_from(rng, w, n_layers=2), w, n_pairs=200, n_boot=50)
    rec = C.contextual_claims(g)
    assert rec["self_similarity_drop"]["block outputs"]["value"] is None
    assert C.claim_values(g)["self_similarity_drop"] is None


def test_wordnet_contexts_from_a_table():
    table = {"bank": ["The bank is closed.", "We sat on the river bank.", "Bank on it.", "a bank of fog",
                      "the bank's vault", "bankrupt firms"],  # 'bankrupt' does not contain the form
             "light": [f"light number {i}" for i in range(7)], "dark": [f"it is dark {i}" for i in range(5)],
             "rare": ["a rare bird", "rare steak"]}
    table["bank"] = table["bank"][:5]
    ctx = C.wordnet_contexts(3, max_contexts=6, seed=0, examples=table)
    assert ctx.words == ["bank", "dark", "light"]
    assert list(ctx.counts()) == [5, 5, 6]
    for s, k, (a, b) in zip(ctx.sentences, ctx.word_of, ctx.spans):
        assert s[a:b].lower() == ctx.words[k]
    with pytest.raises(ValueError, match="n_words: 4 words asked for, but only 3 have at least 5"):
        C.wordnet_contexts(4, examples=table)


def test_bad_input_is_one_line():
    with pytest.raises(ValueError, match="word_of: expected one non-negative integer word index per row"):
        C.self_similarity(np.ones((4, 3)), [0, 1])
    with pytest.raises(ValueError, match="zero vector"):
        C.self_similarity(np.zeros((4, 3)), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="at least 2 different words"):
        C.sample_pairs([0, 0, 0], 10)
    with pytest.raises(ValueError, match="fewer than 2 contexts"):
        C.analyse([np.ones((4, 3)) + np.eye(4, 3)], [0, 1, 2, 2])


@pytest.mark.parametrize("side", ["right", "left"])
def test_token_positions_pick_the_word_tokens_in_a_padded_batch(side):
    """Padded on either side, the positions are exactly the tokens of each occurrence's word."""
    from geolip_lib import models

    lm = models.load("tiny-bert")
    lm.tokenizer.padding_side = side
    texts = ["The bank closed.", "We sat on the grassy river bank today.", "Utopian dreams of a long and winding kind."]
    spans = [(4, 8), (27, 31), (0, 7)]
    enc = lm.tokenize(texts)
    pos = C.token_positions(lm, texts, spans, enc["attention_mask"].numpy())
    got = ["".join(lm.tokenizer.convert_ids_to_tokens(enc["input_ids"][b][p].tolist())).replace("##", "")
           for b, p in enumerate(pos)]
    assert got == ["bank", "bank", "utopian"]
    assert all(enc["attention_mask"][b][p].all() for b, p in enumerate(pos))


def test_occurrence_states_are_the_word_tokens_of_each_sentence_read_alone():
    """Batched and padded, each occurrence is the mean hidden state of exactly the tokens of its
    word: the same as reading its sentence alone and picking them by hand (right padding, as
    BERT's absolute positions need)."""
    from geolip_lib import models

    lm = models.load("tiny-bert")
    table = {"bank": ["The bank closed.", "We sat on the grassy river bank today.", "Bank on it."],
             "utopian": ["A utopian plan.", "Utopian dreams of a very long and winding kind.", "so utopian"]}
    ctx = C.wordnet_contexts(2, 3, min_contexts=3, examples=table)
    layers, kept = C.occurrence_states(lm, ctx, batch_size=4)
    assert kept.all() and len(layers) == 3 and layers[0].shape == (6, 32)
    for i, (s, (a, b)) in enumerate(zip(ctx.sentences, ctx.spans)):
        enc = lm.tokenizer(s, return_offsets_mapping=True)
        want = [t for t, (x, y) in enumerate(enc["offset_mapping"]) if y > x and x < b and y > a]
        alone = lm.hidden_states([s])
        for li in range(3):
            np.testing.assert_allclose(layers[li][i], alone.layers[li][0, want].double().mean(0).numpy(), atol=1e-4)
