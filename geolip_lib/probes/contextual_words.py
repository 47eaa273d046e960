"""Words in several contexts, offline: WordNet 3.0's example sentences, for notebook 16's measurements
(:mod:`geolip_lib.probes.contextual`).

A word's *contexts* are the distinct example sentences of its own synsets that contain its form
(whole word, any case); :func:`wordnet_examples` builds that table once per machine,
:func:`wordnet_contexts` draws words and their contexts from it. WordNet gives at least 5 sentences to
about 1300 single-word lemmas, at least 21 to 71 of them (the count behind a maximum explainable
variance floor below 5 %: :mod:`geolip_lib.probes.contextual_mev`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

import numpy as np

from .. import validation as V
from ..lexical import wordnet as lexwn
from ..results import atomic_write_bytes

__all__ = ["Contexts", "wordnet_examples", "wordnet_contexts", "MIN_CONTEXTS", "CONTEXTS_SCHEMA"]

#: the paper's threshold: only words with at least this many contexts
MIN_CONTEXTS = 5
#: bump when the cached example table changes meaning
CONTEXTS_SCHEMA = 1
_WORD = re.compile(r"^[a-z]+$")


@dataclass(frozen=True)
class Contexts:
    """Occurrences of ``words`` in ``sentences``: occurrence ``i`` is ``words[word_of[i]]`` at
    characters ``spans[i]`` of ``sentences[i]``."""

    words: list
    sentences: list
    word_of: np.ndarray
    spans: list

    def __len__(self) -> int:
        return len(self.sentences)

    def counts(self) -> np.ndarray:
        """Contexts per word, ``(W,)``."""
        return np.bincount(self.word_of, minlength=len(self.words))


def _pattern(word: str) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z])" + re.escape(word) + r"(?![A-Za-z])", re.IGNORECASE)


def _build_examples(wn) -> dict[str, list[str]]:
    found: dict[str, set] = {}
    for s in wn.all_synsets():
        ex = s.examples()
        if not ex:
            continue
        for lemma in s.lemma_names():
            w = lemma.lower()
            if not _WORD.match(w):
                continue
            pat = _pattern(w)
            for e in ex:
                if pat.search(e):
                    found.setdefault(w, set()).add(e)
    return {w: sorted(v) for w, v in sorted(found.items())}


def wordnet_examples() -> dict[str, list[str]]:
    """word -> the distinct WordNet 3.0 example sentences that contain the word form, taken from
    the examples of the word's own synsets (every single-word alphabetic lemma, lower-cased;
    the form matched whole and case-insensitively).

    Built once per machine from NLTK (≈1 min: every synset's examples) and cached as
    ``<cache>/wordnet/contexts-<key>.json`` with the key of the lexicon cache
    (:mod:`geolip_lib.lexical.wordnet`), so new WordNet files or a new NLTK rebuild it."""
    path = lexwn.cache_dir() / f"contexts-{lexwn._cache_key()}-s{CONTEXTS_SCHEMA}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and all(isinstance(v, list) for v in data.values()):
                return data
        except (OSError, ValueError):
            pass  # a corrupt cache is rebuilt
    data = _build_examples(lexwn.get_wordnet())
    atomic_write_bytes(path, json.dumps(data, ensure_ascii=False).encode("utf-8"))
    return data


def wordnet_contexts(n_words: int, max_contexts: int = 10, *, min_contexts: int = MIN_CONTEXTS, seed: int = 0,
                     examples: Optional[Mapping[str, Sequence[str]]] = None) -> Contexts:
    """``n_words`` random words with at least ``min_contexts`` example sentences each
    (:func:`wordnet_examples`, or ``examples``), each read in up to ``max_contexts`` of them
    (a random subset); the span is the word form's first whole-word match."""
    V.check_positive_int(n_words, "n_words", minimum=2)
    V.check_positive_int(min_contexts, "min_contexts", minimum=2)
    V.check_positive_int(max_contexts, "max_contexts", minimum=min_contexts)
    table = wordnet_examples() if examples is None else examples
    eligible = sorted(w for w, s in table.items() if len(set(s)) >= min_contexts)
    if len(eligible) < n_words:
        V.fail("n_words", f"{n_words} words asked for, but only {len(eligible)} have at least {min_contexts} "
                          "example sentences; ask for fewer words or a lower min_contexts")
    rng = np.random.default_rng(seed)
    words = sorted(rng.choice(eligible, size=n_words, replace=False).tolist())
    sentences, word_of, spans = [], [], []
    for k, w in enumerate(words):
        sents = sorted(set(table[w]))
        pick = sorted(rng.choice(len(sents), size=min(max_contexts, len(sents)), replace=False).tolist())
        pat = _pattern(w)
        for i in pick:
            m = pat.search(sents[i])
            if m is None:
                V.fail("examples", f"sentence {sents[i]!r} listed for {w!r} does not contain it")
            sentences.append(sents[i])
            word_of.append(k)
            spans.append((m.start(), m.end()))
    return Contexts(words, sentences, np.asarray(word_of, dtype=np.int64), spans)
