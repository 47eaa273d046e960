"""Word frequency against a token embedding's geometry: Gao et al. (2019), "Representation
Degeneration Problem in Training Natural Language Generation Models" (ICLR), trace the narrow cone
of a tied embedding to its rare words: a word seldom seen as a target is pushed, step after step,
along the same direction (minus the mean hidden state), so rare words gather along one axis.

Per token of the vocabulary that is a whole English word: its frequency (``wordfreq``'s Zipf value,
log10 of occurrences per billion words, from its bundled lists: a maintained package, offline), its
norm and its cosine to the table's mean direction. The claim's statistic is Spearman's rho between
frequency and each, with a bootstrap interval over the word tokens and the same statistic on the
random-init table (the same tokens): a table whose rows are drawn independently of the words gives
rho near 0, whatever its shape.

The training corpus of a stand-in model is not at hand, so the frequency is the word's frequency in
English (wordfreq's sources), not in the model's own data: a proxy, said on the page.
"""
from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from wordfreq import zipf_frequency

from .. import validation as V
from ..metrics import intervals
from ..metrics.correlation import spearman
from .plots_terrain import _color

__all__ = ["MIN_WORDS", "word_tokens", "frequency_geometry", "frequency_claim", "summary", "figure"]

#: fewer word tokens than this and the statistic does not apply: a vocabulary of amino acids
#: (AntiBERTy, 25 rows) or reaction SMILES pieces has single letters that are English words too
MIN_WORDS = 1000
#: word-start markers: byte-level BPE (GPT-2, Llama 3, Qwen) and SentencePiece (T5, Llama 2)
_MARKERS = ("Ġ", "▁")
_CHUNK = 8192  # rows of the table summed at a time for its mean direction
_LANGS = {"en": "English"}
_WHAT = {"cos_to_mean": "cosine to the mean direction", "norm": "norm"}


def word_tokens(tokenizer: Any, n_rows: int, lang: str = "en") -> dict:
    """The rows of a ``n_rows``-row table whose token is a whole word of ``lang`` with a known
    frequency: ``{"ids": (n,) int64, "words": [str], "zipf": (n,) float64, "scheme": str}``.

    A whole word: a piece that starts a word (after the BPE / SentencePiece marker where the
    vocabulary marks word starts, else any piece but a WordPiece ``##`` continuation), made of
    letters only, not a special token, and with a Zipf frequency above 0 in ``wordfreq``.
    """
    n = min(int(n_rows), len(tokenizer))
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    marked = sum(1 for p in pieces if isinstance(p, str) and p.startswith(_MARKERS))
    scheme = "word-start marker" if marked >= 0.1 * n else "WordPiece"
    ids, words, zipf = [], [], []
    for i, p in enumerate(pieces):
        if i in special or not isinstance(p, str):
            continue
        if scheme == "word-start marker":
            if not p.startswith(_MARKERS):
                continue  # a piece inside a word (or a word with no space before it)
            w = p[1:]
        else:
            if p.startswith("##"):
                continue
            w = p
        if not w.isalpha():
            continue
        z = zipf_frequency(w, lang)
        if z > 0:
            ids.append(i)
            words.append(w)
            zipf.append(z)
    return {"ids": np.asarray(ids, dtype=np.int64), "words": words, "zipf": np.asarray(zipf, dtype=np.float64),
            "scheme": scheme}


def _geometry(E: Any, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Norm and cosine to the whole table's mean direction of the rows ``ids``, in float64. The
    table is read as stored, :data:`_CHUNK` rows at a time for the mean: a float64 copy of a
    152k x 1536 table would be 1.9 GB beside the model."""
    t = V.as_tensor(E, "E", ndim=2, min_shape={0: 1, 1: 1})
    mu = torch.zeros(t.shape[1], dtype=torch.float64, device=t.device)
    for a in range(0, t.shape[0], _CHUNK):
        mu += t[a:a + _CHUNK].to(torch.float64).sum(dim=0)
    mu /= t.shape[0]
    rows = t[torch.from_numpy(ids).to(t.device)].to(torch.float64)
    norms = rows.norm(dim=1)
    cos = (rows @ mu) / (norms * mu.norm()).clamp_min(torch.finfo(torch.float64).tiny)
    return norms.cpu().numpy(), cos.cpu().numpy()


def _rho(zipf: np.ndarray, values: np.ndarray, n_boot: int, seed: int) -> dict:
    value = float(spearman(zipf, values))
    iv = intervals.pair_bootstrap(lambda a, b, axis=-1: spearman(a, b, axis), zipf, values, n_boot=n_boot, seed=seed,
                                  what="word tokens")
    return {"value": value, "interval": iv}


def frequency_geometry(E: Any, tokenizer: Any, *, random_init: Any = None, n_boot: int = intervals.N_BOOT,
                       seed: int = 0, lang: str = "en") -> dict:
    """Spearman's rho between each word token's Zipf frequency and its norm / its cosine to the
    table's mean direction, with bootstrap intervals over the word tokens; the same on the
    ``random_init`` table (the same tokens) when given.

    Returns ``{"applicable": bool, "reason": str (when not), "n_words", "of", "scheme",
    "rho": {"cos_to_mean": {...}, "norm": {...}}, "random_init": {same keys} | None,
    "per_token": {"zipf", "cos_to_mean", "norm"} (arrays, for the figure)}``.
    """
    t = V.as_tensor(E, "E", ndim=2, min_shape={0: 1, 1: 1})
    words = word_tokens(tokenizer, t.shape[0], lang)
    n = len(words["ids"])
    out: dict = {"n_words": n, "of": int(t.shape[0]), "scheme": words["scheme"], "lang": lang}
    if n < MIN_WORDS:
        name = _LANGS.get(lang, lang)
        out.update(applicable=False, reason=f"{n} of the {t.shape[0]} tokens are whole {name} words with a known "
                                            f"frequency (at least {MIN_WORDS} needed): not a vocabulary of {name} "
                                            "words")
        return out
    norms, cos = _geometry(t, words["ids"])
    out.update(applicable=True, rho={"cos_to_mean": _rho(words["zipf"], cos, n_boot, seed),
                                     "norm": _rho(words["zipf"], norms, n_boot, seed)},
               per_token={"zipf": words["zipf"], "cos_to_mean": cos, "norm": norms}, random_init=None)
    if random_init is not None:
        n0, c0 = _geometry(random_init, words["ids"])
        out["random_init"] = {"cos_to_mean": _rho(words["zipf"], c0, n_boot, seed + 1),
                              "norm": _rho(words["zipf"], n0, n_boot, seed + 1),
                              "per_token": {"cos_to_mean": c0, "norm": n0}}
    return out


def frequency_claim(fg: dict, key: str, headline: Any) -> dict:
    """``metrics["claims"]["rare_words"][key]``: Spearman's rho of frequency against ``key``
    (``"cos_to_mean"`` or ``"norm"``) as a headline record with its interval and the random-init
    null, or a record with no value and the reason where the vocabulary is not a word list.
    ``headline`` is :func:`geolip_lib.results.headline` (passed in: results sits below probes)."""
    label = f"Spearman rho: word frequency vs {_WHAT[key]}"
    if not fg.get("applicable"):
        return headline(None, label=label, note=fg.get("reason"))
    r = fg["rho"][key]
    nulls = {}
    if fg.get("random_init") is not None:
        r0 = fg["random_init"][key]
        nulls["random_init"] = {"value": r0["value"], "interval": r0["interval"]}
    rec = headline(r["value"], interval=r["interval"], nulls=nulls, label=label, fmt=".3f",
                   note=f"over {fg['n_words']} of {fg['of']} tokens that are whole {_LANGS.get(fg['lang'], fg['lang'])} words "
                        f"({fg['scheme']} vocabulary); frequency: wordfreq's Zipf value (English text, not the "
                        "model's own training data)")
    rec["rows"] = {"n": fg["n_words"], "of": fg["of"]}
    return rec



def summary(fg: dict) -> dict:
    """:func:`frequency_geometry` for ``metrics.json``: the counts and each rho with its interval
    (trained and random init), without the per-token arrays."""
    out = {k: v for k, v in fg.items() if k not in ("rho", "random_init", "per_token")}
    if fg.get("applicable"):
        out["rho"] = {k: {"value": r["value"], "interval": r["interval"].as_dict()} for k, r in fg["rho"].items()}
        if fg.get("random_init") is not None:
            out["random_init"] = {k: {"value": fg["random_init"][k]["value"],
                                      "interval": fg["random_init"][k]["interval"].as_dict()} for k in _WHAT}
    return out


def figure(fg: dict, title: str):
    """Each word token's cosine to the mean direction and norm against its Zipf frequency (hexbin
    density), the trained table beside the random-init one (the same tokens), each panel titled
    with its Spearman rho and interval."""
    rows = [("trained", fg["per_token"], fg["rho"])]
    if fg.get("random_init") is not None:
        rows.append(("random init", fg["random_init"]["per_token"], fg["random_init"]))
    fig, axes = plt.subplots(len(rows), 2, figsize=(11, 3.6 * len(rows)), squeeze=False)
    for r, (name, per, rho) in enumerate(rows):
        for c, key in enumerate(("cos_to_mean", "norm")):
            ax = axes[r, c]
            ax.hexbin(fg["per_token"]["zipf"], per[key], gridsize=40, mincnt=1, bins="log",
                      cmap="Blues" if name == "trained" else "Greys")
            iv = rho[key]["interval"]
            ax.set_title(f"{name}: rho = {rho[key]['value']:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]", fontsize=10,
                         color=_color("embedding" if name == "trained" else "random_init"))
            ax.set(xlabel="word frequency (Zipf: log10 per 10^9 words)", ylabel=_WHAT[key])
    fig.suptitle(title)
    fig.tight_layout()
    return fig
