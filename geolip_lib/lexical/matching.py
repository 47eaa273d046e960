"""Lemma → single-token matching of WordNet entries for any tokenizer.

The seed's rule (001 §2): walk ``wn.all_synsets()`` in order and each synset's lemmas in
order; a lemma (underscores read as spaces) matches when the tokenizer encodes it, without
special tokens, as exactly one token that no earlier entry has claimed, and its synset's
definition is longer than ``min_definition_chars`` characters. The first such entry wins
the token. Works for SentencePiece, WordPiece and BPE tokenizers alike; deterministic.
The single-token rule is ``"strict"`` of :mod:`geolip_lib.models.tokens` (the probes of
notebook 01 use ``"drop_blank"``; see there).
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import numpy as np

from ..models.tokens import STRICT, single_token_ids  # noqa: F401 (single_token_ids re-exported)
from ..results import atomic_write_bytes
from .wordnet import Lexicon, cache_dir, load_lexicon


@dataclass
class Matched:
    """WordNet entries matched to single tokens, in WordNet order.

    Attributes
    ----------
    synset_ids : (M,) int64
        Lexicon ids (the same synset may appear under several lemmas / tokens).
    token_ids : (M,) int64
        Distinct token ids.
    lemmas : list of str, (M,)
        The matched lemma, underscores replaced by spaces.
    definitions : list of str, (M,)
    """

    synset_ids: np.ndarray
    token_ids: np.ndarray
    lemmas: list
    definitions: list

    def __len__(self) -> int:
        return len(self.token_ids)

    def subset(self, idx) -> "Matched":
        idx = np.asarray(idx, dtype=np.int64)
        return Matched(self.synset_ids[idx], self.token_ids[idx], [self.lemmas[i] for i in idx],
                       [self.definitions[i] for i in idx])


def match_lemmas(tokenizer, lexicon: Lexicon | None = None, *, min_definition_chars: int = 10,
                 pos: str | None = None, max_entries: int | None = None) -> Matched:
    """Match WordNet lemmas to single tokens of ``tokenizer`` (the seed's rule, vectorized).

    Parameters
    ----------
    tokenizer : Hugging Face tokenizer
        Called as ``tokenizer(list_of_str, add_special_tokens=False)``.
    lexicon : Lexicon, optional
        Defaults to :func:`load_lexicon`.
    min_definition_chars : int
        Keep entries whose definition is *longer* than this (seed: 10).
    pos : str, optional
        Restrict to parts of speech, e.g. ``"n"`` or ``"nv"`` (letters of ``"nvasr"``).
    max_entries : int, optional
        Keep only the first ``max_entries`` matches (WordNet order).

    Returns
    -------
    Matched

    Results for fast tokenizers are cached in ``<cache>/wordnet/match-<key>.npz`` (the key
    hashes the tokenizer's full serialized form), so a second call takes ~1 s.
    """
    if tokenizer is None or not callable(tokenizer):
        raise ValueError("tokenizer: expected a callable Hugging Face tokenizer (this model has none)")
    lx = lexicon if lexicon is not None else load_lexicon()
    if pos is not None and (not pos or any(c not in "nvasr" for c in pos)):
        raise ValueError(f"pos: expected letters of 'nvasr', got {pos!r}")
    counts = np.diff(lx.lemma_indptr)
    syn_of_lemma = np.repeat(np.arange(len(lx), dtype=np.int64), counts)
    names = [n.replace("_", " ") for n in lx.lemma_names]
    key = _cache_key(tokenizer, lx, min_definition_chars, pos)
    path = cache_dir() / f"match-{key}.npz" if key else None
    if path is not None and path.exists():
        with np.load(path) as z:
            entries, tok_e = z["entries"], z["tokens"]
    else:
        entries, tok_e = _match_entries(tokenizer, lx, names, syn_of_lemma, min_definition_chars, pos)
        if path is not None:
            buf = io.BytesIO()
            np.savez(buf, entries=entries, tokens=tok_e)
            atomic_write_bytes(path, buf.getvalue())
    if max_entries is not None:
        entries, tok_e = entries[:max_entries], tok_e[:max_entries]
    syn = syn_of_lemma[entries]
    return Matched(synset_ids=syn, token_ids=tok_e, lemmas=[names[e] for e in entries],
                   definitions=[lx.definitions[s] for s in syn])


def _cache_key(tokenizer, lx: Lexicon, min_definition_chars: int, pos) -> str | None:
    """Key of a matching result: the tokenizer's serialized form + WordNet + the options."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return None
    h = hashlib.sha1(backend.to_str().encode())
    h.update(f"{len(lx)}|{lx.names[0]}|{lx.names[-1]}|{len(lx.lemma_names)}|{min_definition_chars}|{pos}|v1".encode())
    return h.hexdigest()[:20]


def _match_entries(tokenizer, lx, names, syn_of_lemma, min_definition_chars, pos):
    first_of = dict.fromkeys(names)
    uniq = list(first_of)
    where = {w: k for k, w in enumerate(uniq)}
    tok = single_token_ids(tokenizer, uniq, rule=STRICT)[np.fromiter((where[w] for w in names), dtype=np.int64,
                                                         count=len(names))]
    def_len = np.fromiter((len(d) for d in lx.definitions), dtype=np.int64, count=len(lx))
    ok = (tok >= 0) & (def_len[syn_of_lemma] > min_definition_chars)
    if pos is not None:
        ok &= np.isin(lx.pos[syn_of_lemma], [i for i, c in enumerate("nvasr") if c in pos])
    entries = np.flatnonzero(ok)
    _, first = np.unique(tok[entries], return_index=True)  # first entry (WordNet order) per token
    entries = np.sort(entries[first])
    return entries, tok[entries]
