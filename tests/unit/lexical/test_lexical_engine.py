"""The WordNet similarity engine equals NLTK 3.10 exactly (random pairs of every POS + quirks)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from geolip_lib import lexical
from geolip_lib.lexical import engine as engine_mod

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def wn():
    return lexical.get_wordnet()


@pytest.fixture(scope="module")
def eng():
    return lexical.get_engine()


def nltk_values(wn, lx, i, j, kind):
    cache: dict = {}

    def syn(k):
        if k not in cache:
            cache[k] = wn.synset(lx.names[k])
        return cache[k]

    out = np.empty(len(i))
    for k, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        v = getattr(syn(a), f"{kind}_similarity")(syn(b))
        out[k] = np.nan if v is None else v
    return out


def assert_identical(got, ref, lx, i, j, kind):
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{kind}: {bad.size} mismatches, e.g. " + ", ".join(
        f"{lx.names[i[k]]}/{lx.names[j[k]]}: nltk={ref[k]} engine={got[k]}" for k in bad[:5])


@pytest.mark.parametrize("seed", [0, 1])
def test_random_pairs_all_pos_equal_nltk(wn, eng, seed):
    """1500 pairs per seed: every (POS, POS) combination of n, v, a, s, r is represented."""
    lx = eng.lx
    rng = np.random.default_rng(100 + seed)
    by_pos = [np.flatnonzero(lx.pos == p) for p in range(5)]
    i_parts, j_parts = [], []
    for p in range(5):
        for q in range(5):
            n = 150 if p == q else 20
            i_parts.append(rng.choice(by_pos[p], n))
            j_parts.append(rng.choice(by_pos[q], n))
    i, j = np.concatenate(i_parts), np.concatenate(j_parts)
    for kind, fn in (("path", eng.path_ids), ("wup", eng.wup_ids)):
        assert_identical(fn(i, j), nltk_values(wn, lx, i, j, kind), lx, i, j, kind)


def test_ancestor_pairs_both_directions_equal_nltk(wn, eng):
    """Pairs (synset, one of its ancestors) in both orders: where the subsumer rules bite."""
    lx = eng.lx
    rng = np.random.default_rng(7)
    row = np.repeat(np.arange(len(lx)), np.diff(lx.anc_indptr))
    pick = rng.choice(len(row), 600, replace=False)
    i, j = row[pick], lx.anc_ids[pick].astype(np.int64)
    for a, b in ((i, j), (j, i)):
        for kind, fn in (("path", eng.path_ids), ("wup", eng.wup_ids)):
            assert_identical(fn(a, b), nltk_values(wn, lx, a, b, kind), lx, a, b, kind)


QUIRKS = [
    # self-pairs NLTK does not score 1 under Wu–Palmer (multiple inheritance, min_depth rule)
    ("person.n.01", "person.n.01"),
    ("amphibious_landing.n.01", "amphibious_landing.n.01"),
    # verbs in one tree where the fake *ROOT* wins the subsumer tie by name
    ("opalize.v.02", "expose.v.07"),
    ("prank.v.01", "till.v.01"),
    # asymmetric Wu–Palmer (self preferred as subsumer only for the first argument)
    ("amphibious_landing.n.01", "group_action.n.01"),
    ("group_action.n.01", "amphibious_landing.n.01"),
    # instance hypernyms
    ("hegira.n.01", "journey.n.01"),
    ("einstein.n.01", "newton.n.02"),
    # cross part of speech, satellites, adverbs, verbs in different trees
    ("dog.n.01", "run.v.01"),
    ("dog.n.01", "good.a.01"),
    ("good.a.01", "quickly.r.01"),
    ("good.a.01", "good.a.01"),
    ("run.v.01", "eat.v.01"),
    ("entity.n.01", "entity.n.01"),
    ("chef.n.01", "fireman.n.01"),
]


@pytest.mark.parametrize("a,b", QUIRKS)
def test_known_quirks_equal_nltk(wn, a, b):
    sa, sb = wn.synset(a), wn.synset(b)
    for kind, fn in (("path", lexical.path_similarity_pairs), ("wup", lexical.wup_similarity_pairs)):
        ref = getattr(sa, f"{kind}_similarity")(sb)
        got = fn([sa], [sb])[0]
        assert (math.isnan(got) and ref is None) or got == ref, (kind, a, b, got, ref)


def test_quirks_are_real(wn):
    """The quirk list exercises what it claims (guards against a silently fixed NLTK)."""
    p = wn.synset("person.n.01")
    assert p.wup_similarity(p) < 1
    x, y = wn.synset("amphibious_landing.n.01"), wn.synset("group_action.n.01")
    assert x.wup_similarity(y) != y.wup_similarity(x)
    lch = wn.synset("opalize.v.02").lowest_common_hypernyms(wn.synset("expose.v.07"), simulate_root=True,
                                                             use_min_depth=True)
    assert lch[0].name() == "*ROOT*" and len(lch) == 2


def test_self_pairs_whole_wordnet_path_is_one_and_wup_below_one_somewhere(eng):
    ids = np.arange(len(eng.lx))
    assert np.all(eng.path_ids(ids, ids) == 1.0)
    w = eng.wup_ids(ids, ids)
    assert np.all(w <= 1.0) and (w < 1.0).sum() > 100


@pytest.mark.parametrize("kind", ["path", "wup"])
def test_matrix_equals_pairs_and_nltk(wn, eng, kind):
    lx = eng.lx
    rng = np.random.default_rng(3)
    ids = rng.choice(len(lx), 250, replace=False)
    ids[-1] = ids[0]  # a duplicate synset
    M = lexical.similarity_matrix(ids, kind)
    r, c = np.meshgrid(np.arange(len(ids)), np.arange(len(ids)), indexing="ij")
    fn = eng.path_ids if kind == "path" else eng.wup_ids
    P = fn(ids[r.ravel()], ids[c.ravel()]).reshape(M.shape)
    assert ((M == P) | (np.isnan(M) & np.isnan(P))).all()
    sub = ids[:40]
    rr, cc = np.meshgrid(np.arange(40), np.arange(40), indexing="ij")
    ref = nltk_values(wn, lx, sub[rr.ravel()], sub[cc.ravel()], kind).reshape(40, 40)
    assert_identical(M[:40, :40].ravel(), ref.ravel(), lx, sub[rr.ravel()], sub[cc.ravel()], kind)


def test_sorted_key_fallback_equals_dense(eng, monkeypatch):
    rng = np.random.default_rng(5)
    i, j = rng.choice(len(eng.lx), 3000), rng.choice(len(eng.lx), 3000)
    dense_p, dense_w = eng.path_ids(i, j), eng.wup_ids(i, j)
    dense_m = eng.matrix_ids(i[:120], "wup")
    monkeypatch.setattr(engine_mod, "DENSE_LIMIT", 0)
    np.testing.assert_array_equal(eng.path_ids(i, j), dense_p)
    np.testing.assert_array_equal(eng.wup_ids(i, j), dense_w)
    np.testing.assert_array_equal(eng.matrix_ids(i[:120], "wup"), dense_m)


def test_accepts_synsets_names_and_ids(wn, eng):
    names = ["dog.n.01", "cat.n.01", "run.v.01"]
    syns = [wn.synset(n) for n in names]
    ids = eng.lx.ids(names)
    a = lexical.wup_similarity_pairs(names, names[::-1])
    np.testing.assert_array_equal(a, lexical.wup_similarity_pairs(syns, syns[::-1]))
    np.testing.assert_array_equal(a, lexical.wup_similarity_pairs(ids, ids[::-1]))
    assert lexical.path_similarity_pairs([], []).shape == (0,)


def test_bad_input_errors(eng):
    with pytest.raises(ValueError, match="a: unknown synset 'nope.n.01'"):
        lexical.path_similarity_pairs(["nope.n.01"], ["dog.n.01"])
    with pytest.raises(ValueError, match="equal length"):
        lexical.wup_similarity_pairs(["dog.n.01"], ["dog.n.01", "cat.n.01"])
    with pytest.raises(ValueError, match="kind"):
        lexical.similarity_matrix(["dog.n.01"], "lch")
    with pytest.raises(ValueError, match="synsets: synset ids must lie"):
        lexical.similarity_matrix(np.array([-1]), "wup")


def test_lexicon_matches_nltk_structure(wn):
    lx = lexical.load_lexicon()
    assert len(lx) == 117659 and lx.names[0] == "able.a.01"
    rng = np.random.default_rng(11)
    for k in rng.choice(len(lx), 50, replace=False).tolist():
        s = wn.synset(lx.names[k])
        assert lx.definitions[k] == s.definition()
        assert lx.lexname(k) == s.lexname()
        assert lx.lemmas_of(k) == [lm.name() for lm in s.lemmas()]
        assert [lx.names[h] for h in lx.hypernyms_of(k)] == sorted(h.name() for h in s.hypernyms())
        assert (lx.min_depth[k], lx.max_depth[k]) == (s.min_depth(), s.max_depth())


def test_get_wordnet_missing_gives_setup_hint(monkeypatch):
    import nltk

    from geolip_lib.lexical import wordnet as wmod

    def boom():
        raise LookupError("Resource wordnet not found")

    monkeypatch.setattr(wmod, "_ensure_nltk_path", lambda: None)
    from nltk.corpus import wordnet as wn_lazy

    monkeypatch.setattr(wn_lazy, "ensure_loaded", boom, raising=False)
    with pytest.raises(RuntimeError, match="provision_wordnet.py"):
        wmod.get_wordnet()
    assert nltk  # imported for the monkeypatch target's module
