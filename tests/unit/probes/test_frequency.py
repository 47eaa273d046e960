"""Word frequency against the token embedding (geolip_lib.probes.frequency, Gao et al. 2019's rare-words
claim): which tokens are words, Spearman's rho against a brute-force rank correlation, a planted relation
found and an independent table read as none, invariances, and the claims record."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from geolip_lib import results
from geolip_lib.metrics.correlation import spearman
from geolip_lib.models.tokenizers import load_tokenizer
from geolip_lib.probes import frequency as F


class Pieces:
    """The slice of a tokenizer's interface the probe reads: its pieces by id and its special ids."""

    def __init__(self, pieces, special=()):
        self.pieces, self.all_special_ids = list(pieces), list(special)

    def __len__(self):
        return len(self.pieces)

    def convert_ids_to_tokens(self, ids):
        return [self.pieces[i] for i in ids]


def test_word_pieces_of_a_byte_level_vocabulary():
    tok = Pieces(["<s>", "Ġthe", "the", "ing", "Ġhouse", "Ġ123", "Ġqzxjv", "Ġdog", ".", "Ġcat"], special=[0])
    w = F.word_tokens(tok, 10)
    assert w["scheme"] == "word-start marker"
    # word-start pieces of letters with a known frequency; "the" without a marker is a word-inner piece here
    assert w["words"] == ["the", "house", "dog", "cat"] and w["ids"].tolist() == [1, 4, 7, 9]
    assert np.all(w["zipf"] > 0) and w["zipf"][0] > w["zipf"][1]  # "the" is the commonest English word


def test_word_pieces_of_a_wordpiece_vocabulary():
    tok = load_tokenizer("minilm")  # MiniLM's real WordPiece vocabulary (30 522 pieces)
    w = F.word_tokens(tok, len(tok))
    pieces = tok.convert_ids_to_tokens(w["ids"].tolist())
    assert w["scheme"] == "WordPiece" and len(w["ids"]) > F.MIN_WORDS
    assert not any(p.startswith("##") for p in pieces) and not set(w["ids"]) & set(tok.all_special_ids)
    assert all(p.isalpha() for p in pieces)
    assert F.word_tokens(tok, 2000)["ids"].max() < 2000  # a smaller table: only its own rows


def test_spearman_equals_scipy_on_ties_and_in_batches():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 7, 50).astype(float), rng.normal(size=50)  # ties in x
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    X, Y = rng.normal(size=(4, 30)), rng.normal(size=(4, 30))
    assert np.allclose(spearman(X, Y), [spearmanr(a, b).statistic for a, b in zip(X, Y)], atol=1e-12)


def _table(tok, planted: float, seed=0):
    """A table whose word rows lean toward one axis by ``planted`` x (rarity) plus noise."""
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(len(tok), 32, generator=g, dtype=torch.float64)
    w = F.word_tokens(tok, len(tok))
    rarity = torch.from_numpy(w["zipf"].max() - w["zipf"])
    E[torch.from_numpy(w["ids"]), 0] += planted * rarity
    return E


def test_a_planted_relation_is_found_and_an_independent_table_reads_none():
    tok = load_tokenizer("minilm")
    planted = F.frequency_geometry(_table(tok, 2.0), tok, n_boot=200, seed=1)
    rho = planted["rho"]
    assert rho["cos_to_mean"]["value"] < -0.5 and rho["cos_to_mean"]["interval"].hi < -0.4
    assert rho["norm"]["value"] < -0.5  # rare rows pushed far along the axis: larger norms
    flat = F.frequency_geometry(_table(tok, 0.0), tok, random_init=_table(tok, 0.0, seed=3), n_boot=200, seed=1)
    for key in ("cos_to_mean", "norm"):
        r, iv = flat["rho"][key]["value"], flat["rho"][key]["interval"]
        assert abs(r) < 0.05 and iv.lo < r < iv.hi
        assert abs(flat["random_init"][key]["value"]) < 0.05


def test_scale_and_row_order_outside_the_words_leave_rho_unchanged():
    tok = load_tokenizer("minilm")
    E = _table(tok, 1.0)
    a = F.frequency_geometry(E, tok, n_boot=50, seed=2)
    b = F.frequency_geometry(E * 2.0, tok, n_boot=50, seed=2)  # a power of two: the same ranks exactly
    for key in ("cos_to_mean", "norm"):
        assert a["rho"][key]["value"] == b["rho"][key]["value"]
        assert a["rho"][key]["interval"].as_dict() == b["rho"][key]["interval"].as_dict()


def test_a_vocabulary_that_is_not_english_words_is_not_read():
    amino = Pieces(["[PAD]", "[CLS]", *"ACDEFGHIKLMNPQRSTVWY"], special=[0, 1])  # AntiBERTy's kind of vocabulary
    fg = F.frequency_geometry(torch.randn(22, 8), amino)
    assert fg["applicable"] is False and "at least 1000" in fg["reason"] and "English" in fg["reason"]
    rec = F.frequency_claim(fg, "cos_to_mean", results.headline)
    assert rec["value"] is None and "English" in rec["note"]


def test_the_claims_record_carries_its_interval_and_the_random_init_null():
    tok = load_tokenizer("minilm")
    fg = F.frequency_geometry(_table(tok, 1.0), tok, random_init=_table(tok, 0.0, seed=5), n_boot=100)
    rec = F.frequency_claim(fg, "cos_to_mean", results.headline)
    assert rec["interval"]["lo"] <= rec["value"] <= rec["interval"]["hi"]
    assert set(rec["nulls"]) == {"random_init"} and rec["nulls"]["random_init"]["separated"] is True
    assert rec["rows"] == {"n": fg["n_words"], "of": len(tok)}
    s = F.summary(fg)
    assert "per_token" not in s and set(s["rho"]) == {"cos_to_mean", "norm"}
