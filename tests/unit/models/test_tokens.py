"""models/tokens.py: the two named single-token rules, and where they differ (SentencePiece's bare '▁')."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib.models.tokenizers import load_tokenizer
from geolip_lib.models.tokens import DROP_BLANK, RULES, STRICT, single_token_id, single_token_ids


@pytest.fixture(scope="module")
def t5_tok():
    return load_tokenizer("unigram-wordnet")


def test_rules_are_named_and_checked(t5_tok):
    assert RULES == (STRICT, DROP_BLANK)
    with pytest.raises(ValueError, match="rule"):
        single_token_id(t5_tok, "3", rule="loose")


def test_drop_blank_ignores_the_bare_sentencepiece_piece(t5_tok):
    pieces = t5_tok.encode("0", add_special_tokens=False)
    assert len(pieces) == 2 and t5_tok.decode([pieces[0]]).strip() == ""
    assert single_token_id(t5_tok, "0", rule=STRICT) is None
    assert single_token_id(t5_tok, "0", rule=DROP_BLANK) == pieces[1]
    assert single_token_id(t5_tok, "0") == pieces[1]  # the probes' default


def test_batched_and_single_lookups_agree(t5_tok):
    words = ["0", "1", "dog", "implicit", "a b c", "cat"]
    for rule in RULES:
        batched = single_token_ids(t5_tok, words, rule=rule)
        one = [single_token_id(t5_tok, w, rule=rule) for w in words]
        assert batched.tolist() == [-1 if i is None else i for i in one]
    assert single_token_ids(t5_tok, words).tolist() == single_token_ids(t5_tok, words, rule=STRICT).tolist()


def test_wordpiece_rules_agree():
    tok = load_tokenizer("minilm")
    words = [str(d) for d in range(10)] + ["dog", "implicit"]
    assert np.array_equal(single_token_ids(tok, words, rule=STRICT), single_token_ids(tok, words, rule=DROP_BLANK))
