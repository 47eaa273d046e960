"""Single-token lookup: the one home of "does this text encode to exactly one token, and which".

Two rules are in use and both stay computable, by name (they differ on SentencePiece
tokenizers, where a word at the start of a text may come out as the bare ``▁`` piece
followed by the word's piece):

``"strict"``  (:data:`STRICT`)
    The text encodes, without special tokens, to exactly one id. The seed's rule for
    WordNet lemma matching (``lexical.matching.match_lemmas``: notebooks 04, 05, 07-11).
``"drop_blank"``  (:data:`DROP_BLANK`)
    Pieces that decode to whitespace only (SentencePiece's bare ``▁``) are dropped first,
    so ``"3" -> ["▁", "3"]`` gives the id of ``"3"``. The embedding probes' rule
    (``probes.embedding``: digit manifold, categories, character probes of notebook 01).

Unifying them would change recorded values (see the report of the family-registry
refactor), so each call site keeps its rule and names it.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from tokenizers import Tokenizer

STRICT = "strict"
DROP_BLANK = "drop_blank"
RULES = (STRICT, DROP_BLANK)


def _check_rule(rule: str) -> None:
    if rule not in RULES:
        raise ValueError(f"rule: expected one of {list(RULES)}, got {rule!r}")


def batch_encoder(tokenizer) -> Callable[[list[str]], list[list[int]]]:
    """A function ``list[str] -> list[list[int]]`` without special tokens.

    Fast tokenizers go straight to their Rust backend (a copy with truncation and padding
    off, ~8x quicker than ``__call__``, same ids); others through ``__call__``.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is not None:
        bt = Tokenizer.from_str(backend.to_str())
        bt.no_truncation()
        bt.no_padding()
        return lambda words: [e.ids for e in bt.encode_batch(words, add_special_tokens=False)]
    return lambda words: tokenizer(words, add_special_tokens=False)["input_ids"]


def _drop_blank(tokenizer, ids: Sequence[int]) -> list[int]:
    return [i for i in ids if tokenizer.decode([i]).strip() != ""]


def single_token_id(tokenizer: Any, text: str, rule: str = DROP_BLANK) -> int | None:
    """The one vocabulary id that encodes ``text`` under ``rule``, or None (see the module docstring).

    Default ``"drop_blank"``: the embedding probes' rule. (The seed took ``ids[0]`` for
    multi-piece digits, which for SentencePiece is the shared ``▁`` piece: a bug.)
    """
    _check_rule(rule)
    ids = tokenizer.encode(text, add_special_tokens=False)
    if rule == DROP_BLANK:
        ids = _drop_blank(tokenizer, ids)
    return int(ids[0]) if len(ids) == 1 else None


def single_token_ids(tokenizer, words: list[str], batch_size: int = 8192, rule: str = STRICT) -> np.ndarray:
    """Token id of each word when it encodes to exactly one token under ``rule``, else -1 -> (n,) int64.

    Default ``"strict"``: the seed's lemma-matching rule. Batched through :func:`batch_encoder`.
    """
    _check_rule(rule)
    encode = batch_encoder(tokenizer)
    out = np.full(len(words), -1, dtype=np.int64)
    for s in range(0, len(words), batch_size):
        for k, ids in enumerate(encode(list(words[s:s + batch_size]))):
            if rule == DROP_BLANK and len(ids) > 1:
                ids = _drop_blank(tokenizer, ids)
            if len(ids) == 1:
                out[s + k] = ids[0]
    return out


__all__ = ["DROP_BLANK", "RULES", "STRICT", "batch_encoder", "single_token_id", "single_token_ids"]
