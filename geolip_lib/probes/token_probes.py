"""Token-level probes of an embedding matrix (seed 001 §1, §13a): digits, categories, id
ranges, special tokens. Single-token lookups use the ``"drop_blank"`` rule of
:mod:`geolip_lib.models.tokens`."""
from __future__ import annotations

import itertools
import string
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import metrics as M
from .. import validation as V
from ..models.tokens import DROP_BLANK, single_token_id
from ._common import _matrix

#: the seed's semantic categories (seed 001 section 1)
CATEGORIES: dict[str, list[str]] = {
    "animals": ["cat", "dog", "bird", "fish", "horse", "mouse", "bear", "wolf", "deer", "fox",
                "lion", "tiger", "snake", "whale", "frog", "rabbit", "monkey", "elephant"],
    "colors": ["red", "blue", "green", "yellow", "black", "white", "orange", "purple", "brown", "pink"],
    "numbers": ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
    "body": ["head", "hand", "eye", "foot", "arm", "leg", "face", "mouth", "heart", "brain"],
    "food": ["bread", "meat", "rice", "milk", "fish", "salt", "sugar", "cheese", "fruit", "water"],
    "emotions": ["happy", "sad", "angry", "fear", "love", "hate", "joy", "hope", "pain", "calm"],
    "actions": ["run", "walk", "jump", "fly", "swim", "eat", "sleep", "talk", "think", "write"],
    "time": ["day", "night", "year", "month", "week", "hour", "morning", "evening", "today", "tomorrow"],
}
#: seed 001 §13a's token categories, defined by token-id ranges: the ASCII codes of the
#: digits, upper- and lower-case letters (ids 48–57, 65–90, 97–122), and the last ``TAIL``
#: ids of the table ("special tokens (tail)")
ID_RANGES: dict[str, range] = {"ASCII digits": range(48, 58), "ASCII upper": range(65, 91),
                               "ASCII lower": range(97, 123)}
#: the characters those ranges are named after (the project's definition looks them up)
ID_RANGE_CHARS: dict[str, str] = {"ASCII digits": string.digits, "ASCII upper": string.ascii_uppercase,
                                  "ASCII lower": string.ascii_lowercase}
TAIL = 100
TAIL_NAME = "last 100 ids"


def digit_manifold(E: Any, tokenizer: Any) -> dict:
    """Geometry of the digit tokens 0-9: cosine matrix and its relation to ``|i - j|``.

    Returns
    -------
    dict
        ``applicable``; when True: ``token_ids``, ``cosine`` (10 x 10), ``corr_abs_diff``
        (Pearson correlation of ``|i - j|`` with cosine over the 45 pairs), ``adjacent_mean``,
        ``nonadjacent_mean``, ``gap``. Not applicable without a tokenizer or when a digit
        is not one distinct token.
    """
    if tokenizer is None:
        return {"applicable": False, "reason": "no tokenizer (vision model)"}
    ids = [single_token_id(tokenizer, str(d), rule=DROP_BLANK) for d in range(10)]
    if any(i is None for i in ids) or len(set(ids)) < 10:
        return {"applicable": False, "reason": f"digits are not 10 distinct single tokens: {ids}"}
    t = _matrix(E)
    cos = M.cosine_matrix(t[torch.tensor(ids)]).numpy()
    i, j = np.triu_indices(10, k=1)
    gaps, vals = np.abs(i - j), cos[i, j]
    corr = float(np.corrcoef(gaps, vals)[0, 1]) if vals.std() > 0 else float("nan")
    adj, non = float(vals[gaps == 1].mean()), float(vals[gaps > 1].mean())
    return {"applicable": True, "token_ids": ids, "cosine": cos, "corr_abs_diff": corr,
            "adjacent_mean": adj, "nonadjacent_mean": non, "gap": adj - non}


def category_probe(E: Any, tokenizer: Any, categories: Mapping[str, Sequence[str]] | None = None,
                   global_mean_cos: float | None = None, min_words: int = 3) -> dict:
    """Intra-category cosine of single-token words and the category-centroid cosine matrix.

    Parameters
    ----------
    E : (V, D) embedding matrix
    tokenizer : tokenizer or None
    categories : {name: [words]}, default :data:`CATEGORIES`
    global_mean_cos : float, optional
        The global mean pairwise cosine; ``lift = intra - global``.
    min_words : int
        Categories with fewer single-token words are skipped (listed in ``skipped``).

    Returns
    -------
    dict
        ``applicable``, ``categories`` {name: {n, intra_cos, lift, words}}, ``skipped``,
        ``centroid_names``, ``centroid_cosine`` (C x C).
    """
    if tokenizer is None:
        return {"applicable": False, "reason": "no tokenizer (vision model)"}
    cats = CATEGORIES if categories is None else categories
    t = _matrix(E)
    res, skipped, cents, names = {}, {}, [], []
    for name, words in cats.items():
        pairs = [(w, single_token_id(tokenizer, w, rule=DROP_BLANK)) for w in words]
        pairs = [(w, i) for w, i in pairs if i is not None]
        if len(pairs) < min_words:
            skipped[name] = len(pairs)
            continue
        sub = t[torch.tensor([i for _, i in pairs])]
        c = M.cosine_matrix(sub).numpy()
        intra = float(c[np.triu_indices(len(pairs), k=1)].mean())
        res[name] = {"n": len(pairs), "intra_cos": intra, "words": [w for w, _ in pairs],
                     "lift": None if global_mean_cos is None else intra - global_mean_cos}
        cents.append(sub.mean(0))
        names.append(name)
    if not res:
        return {"applicable": False, "reason": f"no category has >= {min_words} single-token words",
                "skipped": skipped}
    cc = M.cosine_matrix(torch.stack(cents)).numpy()
    return {"applicable": True, "categories": res, "skipped": skipped,
            "centroid_names": names, "centroid_cosine": cc}


def token_strings(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """What each id decodes to, stripped of surrounding whitespace ("" beyond the tokenizer)."""
    n = len(tokenizer)
    return [tokenizer.decode([int(i)]).strip() if 0 <= int(i) < n else "" for i in ids]


def char_token_id(tokenizer: Any, char: str) -> int | None:
    """The one id whose token is the character ``char`` itself (case kept), or None.

    ``single_token_id`` finds how the tokenizer encodes the text ``char``; an uncased
    tokenizer maps ``"A"`` to the token ``"a"``, which is not ``"A"``: None.
    """
    i = single_token_id(tokenizer, char, rule=DROP_BLANK)
    return i if i is not None and token_strings(tokenizer, [i])[0] == char else None


def token_range_categories(tokenizer: Any, vocab_size: int, tail: int = TAIL) -> dict[str, dict[str, list[int]]]:
    """The ids of seed 001 §13a's token categories, in the seed's and the project's definition.

    Parameters
    ----------
    tokenizer : tokenizer
    vocab_size : int
        Rows of the embedding table (the seed's ``vocab_size``; may exceed the tokenizer).
    tail : int
        The last ``tail`` ids form the tail category.

    Returns
    -------
    dict
        ``{"seed": {name: ids}, "project": {name: ids}}``. **seed**: the id ranges of
        :data:`ID_RANGES` (the ASCII codes, ids < ``vocab_size``) — they are the characters
        they are named after only in a vocabulary whose id ``k`` is the byte ``k``; in
        GPT-2-style byte-level BPE (Qwen, CLIP) ids 48–57 are ``Q``…``Z``, in WordPiece
        ``[unused47]``…. **project**: the ids of the tokens that *are* those characters
        (:func:`char_token_id`, case kept, distinct). The tail (ids ``V - tail … V - 1``)
        is the same in both.
    """
    V.check_positive_int(vocab_size, "vocab_size")
    V.check_positive_int(tail, "tail")
    tail_ids = list(range(max(0, vocab_size - tail), vocab_size))
    seed = {name: [i for i in r if i < vocab_size] for name, r in ID_RANGES.items()}
    project: dict[str, list[int]] = {}
    for name, chars in ID_RANGE_CHARS.items():
        ids = [char_token_id(tokenizer, c) for c in chars]
        project[name] = list(dict.fromkeys(i for i in ids if i is not None and i < vocab_size))
    seed[TAIL_NAME] = project[TAIL_NAME] = tail_ids
    return {"seed": seed, "project": project}


def token_range_probe(E: Any, tokenizer: Any, global_mean_cos: float | None = None, *, tail: int = TAIL,
                      show: int = 12) -> dict:
    """Seed 001 §13a's token-category structure: intra-category cosine of id-range categories.

    For each definition of :func:`token_range_categories` (``seed``: id ranges;
    ``project``: the tokens that are the named characters) and each category: the mean
    and std of the cosine over pairs of its tokens, and its lift over the global mean
    pairwise cosine (the seed printed both).

    Returns
    -------
    dict
        ``applicable``; ``definitions`` {"seed"/"project": {category: {n, ids, tokens
        (vocabulary strings of the first ``show`` ids), intra_cos, intra_std (over pairs, ddof 1 as the
        seed's torch ``std``), lift, named_chars (ids whose token is the character the
        category names: ``chr(id)`` for a seed range, one of its characters for the
        project), beyond_tokenizer (ids with no token: padding rows of the table)}}}.
        A category with fewer than 2 ids has ``intra_cos`` None and a ``reason``.
    """
    if tokenizer is None:
        return {"applicable": False, "reason": "no tokenizer (vision model)"}
    t = _matrix(E)
    cats = token_range_categories(tokenizer, t.shape[0], tail)
    n_tok = len(tokenizer)
    out: dict = {}
    for definition, groups in cats.items():
        res = {}
        for name, ids in groups.items():
            toks = token_strings(tokenizer, ids)
            named = None  # the tail names no characters
            if name in ID_RANGE_CHARS:  # seed: is id k the character chr(k)? project: true by construction
                named = int(sum(tk == (chr(i) if definition == "seed" else tk) and tk in ID_RANGE_CHARS[name]
                                for i, tk in zip(ids, toks)))
            raw = tokenizer.convert_ids_to_tokens([i for i in ids[:show] if i < n_tok])
            r = {"n": len(ids), "ids": list(ids), "tokens": [str(x) for x in raw], "named_chars": named,
                 "beyond_tokenizer": int(sum(i >= n_tok for i in ids)), "intra_cos": None, "intra_std": None,
                 "lift": None}
            if len(ids) < 2:
                r["reason"] = (f"{len(ids)} of its characters are single case-kept tokens (an uncased tokenizer "
                               "lower-cases them)" if definition == "project" else f"{len(ids)} id(s) inside the table")
            else:
                c = M.cosine_matrix(t[torch.tensor(ids)]).numpy()[np.triu_indices(len(ids), k=1)]
                r.update(intra_cos=float(c.mean()), intra_std=float(c.std(ddof=1)) if c.size > 1 else 0.0,
                         lift=None if global_mean_cos is None else float(c.mean()) - global_mean_cos)
            res[name] = r
        out[definition] = res
    return {"applicable": True, "definitions": out}


#: at most this many special-token ids and names are listed in a record (the count is always given)
MAX_LISTED = 128


def content_rows(E: Any, tokenizer: Any) -> tuple[dict, np.ndarray]:
    """The rows of a token-embedding table that are tokens of the text: every row, less the
    tokenizer's special tokens (``tokenizer.all_special_ids``: [PAD], [CLS], <eos>, T5's
    sentinels ...) and the rows past the tokenizer's vocabulary (padding rows no id maps to).

    This is the seed's vocabulary reading (seed 001 §2 reads ``range(tokenizer.vocab_size)`` and
    encodes words with ``add_special_tokens=False``): a special token is never a word of the
    vocabulary. The seed's CV itself (§1, §13a) drew from every row, special tokens included,
    so notebook 01 records both (AntiBERTy's 25-row table, whose [PAD] row has 2.6x
    the norm of the others).

    Returns
    -------
    summary : dict
        ``n_rows`` (the table), ``n_content`` (kept), ``n_special`` and ``n_beyond_tokenizer``
        (left out), ``special`` {id: token} (the first :data:`MAX_LISTED`), ``rule``.
    rows : ndarray of int64
        The kept row indices, ascending.
    """
    t = _matrix(E)
    V_rows = int(t.shape[0])
    try:
        n_tok = int(len(tokenizer))
    except TypeError:
        n_tok = V_rows
    limit = min(V_rows, n_tok) if n_tok > 0 else V_rows
    ids = []
    for i in (getattr(tokenizer, "all_special_ids", None) or []):
        if isinstance(i, (int, np.integer)) and 0 <= int(i) < limit:
            ids.append(int(i))
    special = sorted(set(ids))
    rows = np.setdiff1d(np.arange(limit, dtype=np.int64), np.asarray(special, dtype=np.int64))
    names = tokenizer.convert_ids_to_tokens(special[:MAX_LISTED]) if special else []
    summary = {"n_rows": V_rows, "n_content": int(rows.size), "n_special": len(special),
               "n_beyond_tokenizer": V_rows - limit,
               "special": {str(i): str(n) for i, n in zip(special[:MAX_LISTED], names)},
               "rule": "every row less tokenizer.all_special_ids and the rows past len(tokenizer)"}
    return summary, rows


def special_tokens(E: Any, tokenizer: Any, max_tokens: int = 32) -> dict:
    """Norms and pairwise cosines of the tokenizer's special tokens (T5: pad/eos/unk and
    the first ``<extra_id_n>`` sentinels; BERT: [CLS]/[SEP]/[PAD]/[MASK]/[UNK]; ...).

    Returns
    -------
    dict
        ``applicable``, ``tokens`` {name: {id, norm, norm_z}} (``norm_z``: z-score of the
        norm within the vocabulary), ``pairwise`` {"a|b": cosine}.
    """
    if tokenizer is None:
        return {"applicable": False, "reason": "no tokenizer (vision model)"}
    t = _matrix(E)
    found: dict[str, int] = {}
    for attr in ("pad", "eos", "bos", "unk", "cls", "sep", "mask"):
        i = getattr(tokenizer, f"{attr}_token_id", None)
        if i is not None and 0 <= int(i) < t.shape[0] and int(i) not in found.values():
            found[attr] = int(i)
    extra = [s for s in (getattr(tokenizer, "additional_special_tokens", None) or [])]
    for s in extra[:max(0, max_tokens - len(found))]:
        i = tokenizer.convert_tokens_to_ids(s)
        if isinstance(i, int) and 0 <= i < t.shape[0] and i not in found.values():
            found[str(s)] = i
    if not found:
        return {"applicable": False, "reason": "tokenizer defines no special tokens inside the vocabulary"}
    norms = t.norm(dim=1)
    mu, sd = float(norms.mean()), float(norms.std(unbiased=False))
    names = list(found)
    ids = torch.tensor([found[n] for n in names])
    toks = {n: {"id": found[n], "norm": float(norms[found[n]]),
                "norm_z": (float(norms[found[n]]) - mu) / sd if sd > 0 else float("nan")} for n in names}
    cos = M.cosine_matrix(t[ids]).numpy()
    pairwise = {f"{a}|{b}": float(cos[i, j]) for (i, a), (j, b) in itertools.combinations(enumerate(names), 2)}
    return {"applicable": True, "tokens": toks, "pairwise": pairwise}
