"""Lemma→token matching and encoder / static representations on tiny models of each family."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import lexical, models

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lms():
    return {name: models.load(name) for name in ("tiny-bert", "tiny-t5", "tiny-qwen")}


def seed_rule_reference(tokenizer, lx, n_synsets, min_chars=10):
    """The seed's literal loop (per-lemma ``tokenizer.encode``) over the first synsets."""
    seen, out = set(), []
    for s in range(n_synsets):
        for lemma in lx.lemmas_of(s):
            name = lemma.replace("_", " ")
            ids = tokenizer.encode(name, add_special_tokens=False)
            if len(ids) == 1 and ids[0] not in seen and len(lx.definitions[s]) > min_chars:
                out.append((s, ids[0], name))
                seen.add(ids[0])
    return out


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-t5"])
def test_match_lemmas_equals_seed_loop(lms, name):
    lx = lexical.load_lexicon()
    tok = lms[name].tokenizer
    m = lexical.match_lemmas(tok, lx)
    n = 2500  # the matched prefix over the first n synsets must equal the seed's loop
    got = [(int(s), int(t), w) for s, t, w in zip(m.synset_ids, m.token_ids, m.lemmas) if s < n]
    assert got == seed_rule_reference(tok, lx, n)
    assert len(set(m.token_ids.tolist())) == len(m)
    assert all(len(d) > 10 for d in m.definitions)
    again = lexical.match_lemmas(tok, lx)  # cached path gives the same
    np.testing.assert_array_equal(again.token_ids, m.token_ids)


def test_match_lemmas_pos_filter_and_prefix(lms):
    lx = lexical.load_lexicon()
    tok = lms["tiny-bert"].tokenizer
    m = lexical.match_lemmas(tok, lx, pos="nv", max_entries=50)
    assert len(m) == 50 and set(lx.pos[m.synset_ids].tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="pos"):
        lexical.match_lemmas(tok, lx, pos="x")
    with pytest.raises(ValueError, match="tokenizer"):
        lexical.match_lemmas(None, lx)


TEXTS = ["a domesticated carnivorous mammal", "move fast by using one's feet",
         "having the necessary means or skill or know-how or authority to do something",
         "not", "a member of the genus Canis (probably descended from the common wolf)", "x y z"]


@pytest.mark.parametrize("name,pooling", [("tiny-bert", "mean"), ("tiny-t5", "mean"),
                                          ("tiny-qwen", "mean"), ("tiny-qwen", "last")])
def test_encode_texts_batch_invariant_and_equals_hidden_states(lms, name, pooling):
    lm = lms[name]
    batched = lexical.encode_texts(lm, TEXTS, pooling=pooling, batch_size=4, progress=False)
    single = np.stack([lexical.encode_texts(lm, [t], pooling=pooling, progress=False)[0] for t in TEXTS])
    np.testing.assert_allclose(batched, single, atol=2e-5)
    # an independent code path: the model module's hidden_states (last layer), pooled by hand
    hs = lm.hidden_states(TEXTS, max_length=128)
    ref = lexical.pool_hidden(hs.layers[-1], hs.mask, pooling).numpy()
    np.testing.assert_allclose(batched, ref, atol=2e-5)


def test_definition_prompt_per_family_and_static(lms):
    t5 = lms["tiny-t5"]
    assert lexical.prompt_for("t5") == "summarize: {definition}" and lexical.prompt_for("bert") == "{definition}"
    a = lexical.definition_representations(t5, TEXTS[:3], progress=False)
    b = lexical.encode_texts(t5, [f"summarize: {t}" for t in TEXTS[:3]], progress=False)
    np.testing.assert_array_equal(a, b)
    ids = np.array([0, 5, 17])
    np.testing.assert_array_equal(lexical.static_representations(t5, ids), t5.input_embeddings()[ids].numpy())
    with pytest.raises(ValueError, match="token_ids"):
        lexical.static_representations(t5, [10 ** 7])
    with pytest.raises(ValueError, match="prompt"):
        lexical.definition_representations(t5, TEXTS[:1], prompt="no placeholder")
    with pytest.raises(ValueError, match="pooling"):
        lexical.encode_texts(t5, TEXTS[:1], pooling="max")


def test_random_init_changes_encoder_not_tokenizer(lms):
    lm = lms["tiny-bert"]
    lm0 = lm.random_init()
    a = lexical.encode_texts(lm, TEXTS, progress=False)
    b = lexical.encode_texts(lm0, TEXTS, progress=False)
    assert a.shape == b.shape and not np.allclose(a, b)
    assert torch.equal(torch.as_tensor(lm0.tokenizer(TEXTS[0])["input_ids"]),
                       torch.as_tensor(lm.tokenizer(TEXTS[0])["input_ids"]))


def test_encoding_cache_roundtrip(lms, tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    lm = lms["tiny-bert"]
    a = lexical.encode_texts(lm, TEXTS, cache=True, progress=False)
    files = list((tmp_path / "encodings").glob("*.npy"))
    assert len(files) == 1
    np.testing.assert_array_equal(lexical.encode_texts(lm, TEXTS, cache=True, progress=False), a)
    np.testing.assert_array_equal(lexical.encode_texts(lm, TEXTS, progress=False), a)
    lexical.encode_texts(lm.random_init(), TEXTS, cache=True, progress=False)  # other weights: other key
    lexical.encode_texts(lm, TEXTS[:3], cache=True, progress=False)  # other texts: other key
    assert len(list((tmp_path / "encodings").glob("*.npy"))) == 3
