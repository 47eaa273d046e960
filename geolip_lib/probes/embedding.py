"""Embedding-matrix probes (seed 001 sections 1 and 13a), generic over model families.

Each probe is a small function returning a JSON-friendly dict, ready for ``metrics.json``.
Where a figure or an interval needs the per-item data (row norms, eigenvalues, volumes,
distances), ``return_data=True`` returns it separately: ``(summary, data)``; the summary
never carries arrays for plotting. Probes that need a tokenizer return
``{"applicable": False, "reason": ...}`` when the model has none, so notebooks can say so
in one sentence and go on.
"""
from __future__ import annotations

import itertools
import string
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import metrics as M
from .. import validation as V
from ..families import spec

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
PERCENTILES = (1, 5, 25, 50, 75, 95, 99)
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


def _matrix(E: Any, name: str = "E") -> torch.Tensor:
    return V.as_tensor(E, name, ndim=2, min_shape={0: 1, 1: 1}, dtype=torch.float64)


# ---------------------------------------------------------------- architecture
def parameter_census(model: torch.nn.Module, depth: int = 2) -> dict:
    """Parameter counts grouped by the first ``depth`` components of their names.

    Parameters
    ----------
    model : torch.nn.Module
    depth : int
        ``2`` groups ``encoder.block.3.layer...`` under ``encoder.block`` (the seed's choice).

    Returns
    -------
    dict
        ``components`` ({prefix: count}, largest first), ``total`` (unique parameters:
        tied tensors count once, as in ``model.parameters()``), ``n_tensors``.
        ``sum(components.values()) == total``.
    """
    V.check_positive_int(depth, "depth")
    comps: dict[str, int] = {}
    n = 0
    for name, p in model.named_parameters():  # de-duplicates tied parameters
        key = ".".join(name.split(".")[:depth])
        comps[key] = comps.get(key, 0) + p.numel()
        n += 1
    total = sum(p.numel() for p in model.parameters())
    ordered = dict(sorted(comps.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"components": ordered, "total": int(total), "n_tensors": n}


def weight_tying(model: torch.nn.Module, reference: torch.Tensor | None = None) -> dict:
    """Which parameters share storage with, or equal, the input embedding.

    Parameters
    ----------
    model : torch.nn.Module
        A Hugging Face model (``get_input_embeddings`` / ``get_output_embeddings``), or any
        module when ``reference`` is given.
    reference : torch.Tensor, optional
        The input-embedding parameter to compare against (default: the model's).

    Returns
    -------
    dict
        ``shared_names``: every parameter name aliasing the reference storage (T5:
        ``shared``, ``encoder.embed_tokens``, ``decoder.embed_tokens``, ``lm_head`` when
        tied); ``output_tied`` (bool or None when there is no output embedding);
        ``output_equal`` (allclose even if stored separately).
    """
    if reference is None:
        get = getattr(model, "get_input_embeddings", None)
        emb = get() if callable(get) else None
        reference = getattr(emb, "weight", None)
        if not isinstance(reference, torch.Tensor):
            return {"applicable": False, "reason": "model has no token-embedding matrix"}
    ptr = reference.data_ptr()
    names = [n for n, p in model.named_parameters(remove_duplicate=False)
             if p.data_ptr() == ptr and p.shape == reference.shape]
    out_tied = out_equal = None
    get_out = getattr(model, "get_output_embeddings", None)
    out = get_out() if callable(get_out) else None
    if out is not None and getattr(out, "weight", None) is not None:
        w = out.weight
        out_tied = bool(w.data_ptr() == ptr)
        out_equal = bool(w.shape == reference.shape
                         and torch.allclose(w.detach().float(), reference.detach().float()))
    return {"applicable": True, "shared_names": names, "output_tied": out_tied,
            "output_equal": out_equal}


# ---------------------------------------------------------------- global statistics
def norm_stats(E: Any, percentiles: Sequence[float] = PERCENTILES, zero_tol: float = 1e-6, *,
               return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Row-norm and per-dimension statistics of an embedding matrix.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)

    Returns
    -------
    dict
        ``norm`` {mean, std, min, max, median, argmin, argmax, percentiles}, ``n_zero``
        (rows with norm < ``zero_tol``), ``per_dim`` {mean_of_means, mean_of_stds,
        std_of_means, std_of_stds} (population stds), ``shape``.
    norms : ndarray, shape (V,)
        The row norms, only with ``return_data=True`` (the summary comes first).
    """
    t = _matrix(E)
    norms = t.norm(dim=1).numpy()
    dm, ds = t.mean(0), t.std(0, unbiased=False)
    out = {
        "shape": list(t.shape),
        "norm": {"mean": float(norms.mean()), "std": float(norms.std()), "min": float(norms.min()),
                 "max": float(norms.max()), "median": float(np.median(norms)),
                 "argmin": int(norms.argmin()), "argmax": int(norms.argmax()),
                 "percentiles": {str(p): float(v) for p, v in zip(percentiles, np.percentile(norms, percentiles))}},
        "n_zero": int((norms < zero_tol).sum()),
        "per_dim": {"mean_of_means": float(dm.mean()), "mean_of_stds": float(ds.mean()),
                    "std_of_means": float(dm.std(unbiased=False)), "std_of_stds": float(ds.std(unbiased=False))},
    }
    return (out, norms) if return_data else out


def eigenspectrum(E: Any, fractions: Sequence[float] = (0.8, 0.9, 0.95, 0.99), *,
                  max_rows: int | None = None, seed: int = 0, top: int = 20,
                  return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Covariance eigenspectrum: PR, PR / D, entropy effective dimension, dims per variance.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)
    fractions : sequence of float
    max_rows : int, optional
        Use a seeded sample of this many rows (``metrics.sample_rows``; the seed's 13a used
        10 000 for a 248k vocabulary); ``None`` uses every row (the seed's section 1).
    seed : int
    top : int
        How many leading eigenvalues to record.

    Returns
    -------
    dict
        ``pr``, ``pr_over_dim``, ``effective_dimension``, ``dims_for_variance`` {"0.95": n},
        ``top_eigenvalues``, ``top_fraction`` (share of the first), ``total_variance``,
        ``n_rows_used``.
    eigenvalues : ndarray, shape (D,)
        The full spectrum (descending), only with ``return_data=True``.
    """
    t = _matrix(E)
    idx = M.sample_rows(t.shape[0], max_rows, seed)
    ev = M.covariance_eigenvalues(t[torch.from_numpy(idx)])
    pr = M.participation_ratio_from_eigenvalues(ev)
    dims = M.dims_for_variance_from_eigenvalues(ev, list(fractions))
    out = {
        "pr": pr, "pr_over_dim": pr / t.shape[1],
        "effective_dimension": M.effective_dimension_from_eigenvalues(ev),
        "dims_for_variance": {f"{f:g}": d for f, d in zip(fractions, dims)},
        "top_eigenvalues": ev[:top].tolist(), "top_fraction": float(ev[0] / ev.sum()),
        "total_variance": float(ev.sum()), "n_rows_used": int(idx.size),
    }
    return (out, ev) if return_data else out


def cumulative_variance(eigenvalues: Any, top: int | None = None) -> np.ndarray:
    """Cumulative explained variance of a covariance spectrum (the seed's ``cumsum(λ) / Σλ``).

    Parameters
    ----------
    eigenvalues : array-like, shape (m,)
        Covariance eigenvalues (any order; sorted descending here). Negative round-off
        (above ``-1e-12·max``) is clipped to 0; a clearly negative value is an error.
    top : int, optional
        Return only the first ``top`` entries (the seed's panel drew 200).

    Returns
    -------
    ndarray, shape (min(m, top),)
        Non-decreasing, in (0, 1]; the full curve ends at exactly 1. Entry ``k - 1`` is
        the share of the variance in the first ``k`` principal components (PCA's
        cumulative ``explained_variance_ratio_``).
    """
    e = V.as_tensor(eigenvalues, "eigenvalues", ndim=1, min_shape={0: 1}, dtype=torch.float64).numpy()
    if (e < -1e-12 * max(1.0, float(np.abs(e).max()))).any():
        V.fail("eigenvalues", "expected non-negative eigenvalues (a covariance spectrum)")
    e = np.sort(np.clip(e, 0, None))[::-1]
    tot = e.sum()
    if not tot > 0:
        V.fail("eigenvalues", "all eigenvalues are zero; no variance to explain")
    cum = np.minimum(np.cumsum(e) / tot, 1.0)
    cum[-1] = 1.0
    if top is not None:
        cum = cum[:V.check_positive_int(top, "top")]
    return cum


def euclidean_distances(E: Any, n_sample: int | None = 2000, seed: int = 0,
                        percentiles: Sequence[float] = PERCENTILES, *,
                        return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Pairwise Euclidean distances on a seeded row sample (``metrics.sample_rows``).

    Returns
    -------
    dict
        ``n_sample``, ``n_pairs``, ``mean``, ``std``, ``cv`` (std / mean), ``min``, ``max``,
        ``median``, ``percentiles``, ``mean_over_sqrt_dim``.
    distances : ndarray, shape (n_pairs,)
        The pairwise distances (upper triangle), only with ``return_data=True``.
    """
    t = _matrix(E)
    idx = M.sample_rows(t.shape[0], n_sample, seed)
    s = t[torch.from_numpy(idx)]
    if s.shape[0] < 2:
        V.fail("E", "need at least 2 rows for distances")
    i, j = torch.triu_indices(s.shape[0], s.shape[0], offset=1)
    d = torch.cdist(s, s, compute_mode="donot_use_mm_for_euclid_dist")[i, j].numpy()
    st = M.distribution_stats(d, percentiles)
    out = {"n_sample": int(idx.size), "n_pairs": st.pop("n"), **st,
           "cv": st["std"] / st["mean"] if st["mean"] > 0 else float("nan"),
           "mean_over_sqrt_dim": st["mean"] / float(np.sqrt(t.shape[1]))}
    return (out, d) if return_data else out


def pentachoron_probe(E: Any, n_simplices: int = 1000, seed: int = 0, random_init: Any = None, *,
                      sphere: bool = True, return_data: bool = False) -> dict | tuple[dict, dict]:
    """Pentachoron CV of ``E`` beside its null models, on the same index draws.

    Every table is measured on the same ``n_simplices`` sets of 5 row indices
    (``metrics.sample_distinct_rows(V, n_simplices, 5, seed)``), so volumes are paired
    simplex by simplex across the tables.

    Parameters
    ----------
    E : array-like or torch.Tensor, shape (V, D)
    n_simplices : int
    seed : int
        Seeds the simplex draw (``seed``), the Gaussian matrix (``seed + 1``), the sphere
        points (``seed + 2``) and the random-init table's Gaussian (``seed + 3``).
    random_init : array-like, shape (V, D), optional
        The same table from the architecture at random init.
    sphere : bool
        Also measure ``V`` points uniform on the unit sphere ``S^{D-1}``
        (:func:`geolip_lib.metrics.sphere_like`): the CV that the dimension alone gives.
    return_data : bool
        Also return the per-simplex volumes.

    Returns
    -------
    summary : dict
        ``embedding`` / ``gaussian`` / ``sphere`` / ``random_init`` /
        ``random_init_gaussian`` (:meth:`SimplexCVResult.as_dict`), ``volume_ratio_gaussian``
        (mean volume / Gaussian mean volume), ``volume_ratio_random_init`` (mean volume /
        random-init mean volume) and ``volume_ratio_gaussian_random_init`` (the random-init
        table's mean volume / its own Gaussian's: the volume ratio without training).
    volumes : dict, only with ``return_data=True``
        ``{name: (n_simplices,) ndarray}`` in draw order, NaN where a simplex is degenerate.
    """
    tables = {"embedding": E, "gaussian": M.gaussian_like(E, seed=seed + 1)}
    if sphere:
        tables["sphere"] = M.sphere_like(E, seed=seed + 2)
    if random_init is not None:
        tables["random_init"] = random_init
        tables["random_init_gaussian"] = M.gaussian_like(random_init, seed=seed + 3)
    res = {k: M.pentachoron_cv(T, n_simplices, seed=seed) for k, T in tables.items()}
    out: dict = {k: r.as_dict() for k, r in res.items()}
    out["volume_ratio_gaussian"] = M.ratio(res["embedding"].mean, res["gaussian"].mean)
    if random_init is not None:
        out["volume_ratio_random_init"] = M.ratio(res["embedding"].mean, res["random_init"].mean)
        out["volume_ratio_gaussian_random_init"] = M.ratio(res["random_init"].mean,
                                                           res["random_init_gaussian"].mean)
    if not return_data:
        return out
    volumes = {}
    for k, r in res.items():
        v = np.full(r.n_sampled, np.nan)
        v[r.valid] = r.volumes
        volumes[k] = v
    return out, volumes


# ---------------------------------------------------------------- token-level probes
def single_token_id(tokenizer: Any, text: str) -> int | None:
    """The one vocabulary id that encodes ``text``, or None when it needs several pieces.

    Pieces that decode to whitespace only (SentencePiece's bare ``▁``) are ignored, so
    ``"3" -> ["▁", "3"]`` gives the id of ``"3"``. (The seed took ``ids[0]`` for
    multi-piece digits, which for SentencePiece is the shared ``▁`` piece: a bug.)
    """
    ids = tokenizer.encode(text, add_special_tokens=False)
    ids = [i for i in ids if tokenizer.decode([i]).strip() != ""]
    return int(ids[0]) if len(ids) == 1 else None


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
    ids = [single_token_id(tokenizer, str(d)) for d in range(10)]
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
        pairs = [(w, single_token_id(tokenizer, w)) for w in words]
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
    i = single_token_id(tokenizer, char)
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


def embed_vs_output(E: Any, O: Any, *, return_data: bool = False) -> dict | tuple[dict, np.ndarray]:
    """Input embedding vs output (unembedding) matrix of the same vocabulary (untied models).

    Returns
    -------
    dict
        ``per_token_cosine`` {mean, std, min, max, ...}, ``frobenius`` {embed, output,
        difference, relative}.
    cosines : ndarray, shape (V,)
        Per-token cosines, only with ``return_data=True``.
    """
    a, b = _matrix(E), _matrix(O, "O")
    if a.shape != b.shape:
        V.fail("O", f"expected the input-embedding shape {tuple(a.shape)}, got {tuple(b.shape)}")
    cos = torch.nn.functional.cosine_similarity(a, b, dim=1, eps=1e-8).numpy()
    st = M.distribution_stats(cos)
    st.pop("n")
    fe, fo, fd = float(a.norm()), float(b.norm()), float((a - b).norm())
    out = {"per_token_cosine": st,
           "frobenius": {"embed": fe, "output": fo, "difference": fd, "relative": fd / fe if fe else float("nan")}}
    return (out, cos) if return_data else out


def relative_position_bias(model: torch.nn.Module, *, return_data: bool = False) -> dict | tuple[dict, dict]:
    """Per-head statistics of every relative-position-bias table (T5: one per stack).

    Returns
    -------
    dict
        ``applicable``; ``tables`` {module name: {shape [buckets, heads], mean, std, min,
        max, per_head: [{mean, std, min, max}]}}.
    weights : dict, only with ``return_data=True``
        ``{name: (buckets, heads) ndarray}`` (empty when not applicable).
    """
    tables, weights = {}, {}
    for name, mod in model.named_modules():
        emb = getattr(mod, "relative_attention_bias", None)
        if isinstance(emb, torch.nn.Embedding):
            w = emb.weight.detach().to(torch.float64)
            per = [{"mean": float(c.mean()), "std": float(c.std(unbiased=False)), "min": float(c.min()),
                    "max": float(c.max())} for c in w.T]
            key = f"{name}.relative_attention_bias"
            tables[key] = {"shape": list(w.shape), "mean": float(w.mean()), "std": float(w.std(unbiased=False)),
                           "min": float(w.min()), "max": float(w.max()), "per_head": per}
            weights[key] = w.numpy()
    if not tables:
        out = {"applicable": False, "reason": "no relative position bias (absolute or rotary positions)"}
    else:
        out = {"applicable": True, "tables": tables}
    return (out, weights) if return_data else out


def vision_embedding_tables(lm: Any) -> dict:
    """The embedding tables of a vision tower, as 2-D matrices (rows = vectors).

    DINOv2: ``position`` (1 + patches, D) and ``patch`` filters (D, 3·p·p); open_clip:
    the vision tower's ``position`` (1 + patches, width) and ``patch`` (conv1) filters.
    Empty dict for text-only models.
    """
    fn = spec(lm.family).vision_tables
    out = fn(lm.model) if fn is not None else {}
    return {k: v.detach().to("cpu", torch.float32) for k, v in out.items()}
