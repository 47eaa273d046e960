"""How contextual are a model's word representations? Ethayarajh (2019)'s three measurements.

A word ``w`` is read in several sentences (its *contexts*); each occurrence gives one
representation per layer (the mean of the hidden states of the word's tokens). Per layer:

- **anisotropy**: the mean cosine between representations of random words in random
  contexts (pairs of occurrences of two different words); 0 for an isotropic space;
- **self-similarity** of ``w``: the mean pairwise cosine of its representations across its
  contexts (1: the same vector in every context, a static embedding);
- **anisotropy-adjusted self-similarity**: self-similarity minus the layer's anisotropy (what
  two contexts of ``w`` share beyond what any two words share);
- **maximum explainable variance** (MEV) of ``w``: the fraction of the variance of its
  representations that the best single vector, a static embedding, could explain, raw and
  adjusted for anisotropy (minus the MEV of as many random occurrences of other words), with the
  floor that ``n`` contexts set (at least ``1/n``): :mod:`geolip_lib.probes.contextual_mev`.

Every number is a mean over words, with a percentile bootstrap interval over words
(:func:`geolip_lib.metrics.intervals.bootstrap_weighted`: a resample gives each word a
count; a pair of occurrences weighs the product of its two words' counts), one set of
resamples shared by all layers and statistics so that differences between layers are
resampled jointly.

Contexts come offline from WordNet's example sentences
(:mod:`geolip_lib.probes.contextual_words`, re-exported here); hidden states from
:meth:`geolip_lib.models.LoadedModel.hidden_states` (:func:`occurrence_states`).

Reference: K. Ethayarajh, "How Contextual are Contextualized Word Representations? Comparing
the Geometry of BERT, ELMo, and GPT-2 Embeddings", EMNLP 2019.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .. import validation as V
from ..models import layered
from ..metrics.intervals import N_BOOT, bootstrap_weighted, format_value, holding, null_over_seeds
from ..results import Interval, headline
from .contextual_mev import (PAPER_MEV_EDGE, check_occurrences, contexts_for_floor, floor_records,
                             max_explainable_variance, mev_baseline, mev_floor)
from .contextual_words import MIN_CONTEXTS, Contexts, wordnet_contexts, wordnet_examples

__all__ = ["Contexts", "wordnet_examples", "wordnet_contexts", "token_positions", "occurrence_states",
           "sample_pairs", "self_similarity", "max_explainable_variance", "mev_baseline", "mev_floor",
           "contexts_for_floor", "PAPER_MEV_EDGE", "anisotropy",
           "ContextualGeometry", "analyse", "gaussian_layers", "null_measurements", "CLAIM_STATS", "claim_values",
           "contextual_claims", "layer_frame", "MIN_CONTEXTS"]


# ----------------------------------------------------------------------------------- hidden states
def token_positions(lm: Any, texts: Sequence[str], spans: Sequence[tuple], mask: Any) -> list[list[int]]:
    """Positions (in :meth:`LoadedModel.tokenize`'s padded batch, whose attention mask is
    ``mask``) of the tokens that overlap each text's character span, read from the fast
    tokenizer's offsets of the same text. An occurrence cut off by truncation gets ``[]``."""
    tok = getattr(lm, "tokenizer", None)
    if tok is None or not getattr(tok, "is_fast", False):
        V.fail("lm", f"model '{getattr(lm, 'name', lm)}' has no fast tokenizer: the word's tokens are located by "
                     "their character offsets, which only a fast (Rust) tokenizer gives")
    mask = np.asarray(mask)
    out = []
    for b, (text, (start, end)) in enumerate(zip(texts, spans)):
        enc = tok(text, return_offsets_mapping=True, truncation=False, add_special_tokens=True)
        valid = np.flatnonzero(mask[b] > 0)
        offs = enc["offset_mapping"][:len(valid)]  # truncation keeps the leading tokens
        pos = [int(valid[t]) for t, (s, e) in enumerate(offs) if e > s and s < end and e > start]
        out.append(pos)
    return out


def occurrence_states(lm: Any, contexts: Contexts, *, max_length: int = 64, batch_size: int = 32,
                      stack: Optional[str] = None) -> tuple[list[np.ndarray], np.ndarray]:
    """Per layer, each occurrence's representation: the mean hidden state of the word's tokens.

    Hidden states come from :meth:`LoadedModel.hidden_states` (embedding output first, one
    per block), ``batch_size`` sentences at a time. Returns ``(layers, kept)``: a list of
    ``(n_kept, D)`` float32 arrays, and the boolean mask of the occurrences kept (one whose
    word was cut off at ``max_length`` tokens is left out)."""
    V.check_positive_int(batch_size, "batch_size")
    V.check_positive_int(max_length, "max_length", minimum=2)
    texts = list(contexts.sentences)
    if not texts:
        V.fail("contexts", "no occurrences")
    layers: Optional[list[list[np.ndarray]]] = None
    kept = np.zeros(len(texts), dtype=bool)
    for s in range(0, len(texts), batch_size):
        chunk = texts[s:s + batch_size]
        hs = lm.hidden_states(chunk, stack=stack, max_length=max_length, batch_size=len(chunk))
        pos = token_positions(lm, chunk, contexts.spans[s:s + batch_size], hs.mask.cpu().numpy())
        if layers is None:
            layers = [[] for _ in hs.layers]
        for b, p in enumerate(pos):
            if not p:
                continue
            kept[s + b] = True
            for li, h in enumerate(hs.layers):
                layers[li].append(h[b, p].double().mean(0).numpy().astype(np.float32))
    counts = np.bincount(contexts.word_of[kept], minlength=len(contexts.words))
    few = kept & (counts[contexts.word_of] < 2)  # a word left with one context has no self-similarity
    if not (kept & ~few).any():
        V.fail("contexts", f"no word has 2 occurrences within the first {max_length} tokens")
    keep_rows = ~few[kept]
    return [np.stack(rows)[keep_rows] for rows in layers], kept & ~few


# ----------------------------------------------------------------------------------- measurements
def _unit(X: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(X, axis=1, keepdims=True)
    if (n == 0).any():
        V.fail("X", f"{int((n == 0).sum())} zero vector(s): a cosine is undefined for them")
    return X / n


def self_similarity(X: Any, word_of: Any, n_words: Optional[int] = None) -> np.ndarray:
    """Per word: the mean cosine over pairs of its occurrences, ``(‖Σ uᵢ‖² − n) / (n(n − 1))``
    for unit rows ``uᵢ``; NaN for a word with fewer than 2 occurrences. ``(W,)``."""
    X, w = check_occurrences(X, word_of)
    W = int(w.max()) + 1 if n_words is None else n_words
    U = _unit(X)
    S = np.zeros((W, X.shape[1]))
    np.add.at(S, w, U)
    n = np.bincount(w, minlength=W).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ((S ** 2).sum(1) - n) / (n * (n - 1))
    out[n < 2] = np.nan
    return np.clip(out, -1.0, 1.0)


def sample_pairs(word_of: Any, n_pairs: int, seed: int = 0) -> np.ndarray:
    """``(n_pairs, 2)`` occurrence indices, each pair two uniformly drawn occurrences of two
    different words (the paper's "randomly sampled words in random contexts")."""
    w = np.asarray(word_of, dtype=np.int64)
    V.check_positive_int(n_pairs, "n_pairs")
    if len(np.unique(w)) < 2:
        V.fail("word_of", "anisotropy needs occurrences of at least 2 different words")
    rng = np.random.default_rng(seed)
    out = np.empty((0, 2), dtype=np.int64)
    while len(out) < n_pairs:
        p = rng.integers(0, len(w), size=(2 * (n_pairs - len(out)) + 8, 2))
        out = np.concatenate([out, p[w[p[:, 0]] != w[p[:, 1]]]])
    return out[:n_pairs]


def anisotropy(X: Any, pairs: np.ndarray) -> np.ndarray:
    """The cosine of each pair of rows of ``X`` (:func:`sample_pairs`); their mean is the
    layer's anisotropy. ``(n_pairs,)``."""
    X = np.asarray(X, dtype=np.float64)
    U = _unit(X)
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2 or (p.size and (p.min() < 0 or p.max() >= len(X))):
        V.fail("pairs", f"expected (n, 2) row indices of X (0..{len(X) - 1}), got shape {p.shape}")
    return np.einsum("ij,ij->i", U[p[:, 0]], U[p[:, 1]])


# ----------------------------------------------------------------------------------- one analysis
@dataclass
class ContextualGeometry:
    """Per-word and per-pair values of every layer (index 0: the embedding output), the
    pairs' words and the resampling settings; :meth:`layer_stats` and :meth:`stat` give the
    word-bootstrap means."""

    word_of: np.ndarray
    n_words: int
    pair_words: np.ndarray  # (P, 2) word indices of the anisotropy pairs
    cos: np.ndarray  # (L, P)
    self_sim: np.ndarray  # (L, W)
    mev: np.ndarray  # (L, W)
    mev_baseline: np.ndarray  # (L, W) what the anisotropy adjustment subtracts from the MEV
    n_boot: int = N_BOOT
    seed: int = 0
    dim: Optional[int] = None  # the representations' width (the MEV floor is 1/min(n, dim))

    @property
    def n_layers(self) -> int:
        """Hidden-state layers, the embedding output included."""
        return self.cos.shape[0]

    def _w(self, Wt: np.ndarray):
        """Weighted per-layer means for word weights ``Wt`` ``(b, W)``: dict of ``(b, L)``."""
        pw = Wt[:, self.pair_words[:, 0]] * Wt[:, self.pair_words[:, 1]]  # (b, P)
        aniso = (pw @ self.cos.T) / pw.sum(1, keepdims=True)

        def mean(a: np.ndarray) -> np.ndarray:
            ok = np.isfinite(a)  # (L, W)
            num = Wt @ np.where(ok, a, 0.0).T
            den = Wt @ ok.T.astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                return num / den
        ss, mev, base = mean(self.self_sim), mean(self.mev), mean(self.mev_baseline)
        return {"anisotropy": aniso, "self_similarity": ss, "adjusted_self_similarity": ss - aniso,
                "mev": mev, "adjusted_mev": mev - base}

    def _point(self) -> dict:
        return {k: v[0] for k, v in self._w(np.ones((1, self.n_words))).items()}

    def stat(self, fn: Callable[[dict], np.ndarray]) -> tuple[float, Interval]:
        """``fn`` of the per-layer means (a dict of ``(b, L)`` arrays -> ``(b,)``): its value on
        the words as sampled, and its percentile bootstrap interval over words (widened to the
        value in the rare resample set that leaves it outside)."""
        value = float(fn({k: v[None] for k, v in self._point().items()})[0])
        iv = bootstrap_weighted(self.n_words, lambda Wt: fn(self._w(Wt)), n_boot=self.n_boot, seed=self.seed,
                                what="words")
        return value, holding(value, iv, " (widened to contain the estimate)")

    def layer_stats(self) -> dict:
        """Per layer: each measurement's mean over words with its interval. Lists over layers
        of ``{value, lo, hi}`` under ``anisotropy``, ``self_similarity``,
        ``adjusted_self_similarity``, ``mev``, ``adjusted_mev``; plus ``layer``."""
        out: dict = {"layer": list(range(self.n_layers))}
        for key in ("anisotropy", "self_similarity", "adjusted_self_similarity", "mev", "adjusted_mev"):
            rows = []
            for li in range(self.n_layers):
                v, iv = self.stat(lambda d, key=key, li=li: d[key][:, li])
                rows.append({"value": v, "lo": iv.lo, "hi": iv.hi})
            out[key] = rows
        out["interval_method"] = f"bootstrap percentile, {self.n_boot} resamples of {self.n_words} words"
        return out


def analyse(layers: Sequence[Any], word_of: Any, *, n_pairs: int = 2000, seed: int = 0, n_boot: int = N_BOOT,
            baseline_draws: int = 3) -> ContextualGeometry:
    """Every measurement of every layer of ``layers`` (``(N, D)`` per layer, one row per
    occurrence, rows in the order of ``word_of``). The same anisotropy pairs in every layer."""
    if len(layers) == 0:
        V.fail("layers", "expected at least one layer")
    w = np.asarray(word_of)
    check_occurrences(layers[0], w, "layers[0]")
    uniq, w = np.unique(w, return_inverse=True)
    W = len(uniq)
    counts = np.bincount(w, minlength=W)
    if W < 3:
        V.fail("word_of", f"{W} word(s): the interval over words needs at least 3")
    if (counts < 2).any():
        V.fail("word_of", f"{int((counts < 2).sum())} word(s) with fewer than 2 contexts: self-similarity needs 2")
    pairs = sample_pairs(w, n_pairs, seed)
    cos, ss, mev, base = [], [], [], []
    for li, X in enumerate(layers):
        X, _ = check_occurrences(X, w, f"layers[{li}]")
        cos.append(anisotropy(X, pairs))
        ss.append(self_similarity(X, w, W))
        mev.append(max_explainable_variance(X, w, W))
        base.append(mev_baseline(X, w, W, draws=baseline_draws, seed=seed + 1 + li))
    return ContextualGeometry(word_of=w, n_words=W, pair_words=w[pairs], cos=np.stack(cos), self_sim=np.stack(ss),
                              mev=np.stack(mev), mev_baseline=np.stack(base), n_boot=n_boot, seed=seed,
                              dim=min(int(np.shape(X)[1]) for X in layers))


def gaussian_layers(layers: Sequence[Any], seed: int = 0) -> list[np.ndarray]:
    """The isotropic-Gaussian null: standard normal arrays of each layer's shape (cosine,
    self-similarity and MEV do not depend on the scale)."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.asarray(X).shape) for X in layers]


def null_measurements(lm: Any, contexts: Contexts, layers: Sequence[Any], word_of: Any, *, gaussian_seeds: int = 5,
                      random_init_seeds: int = 3, seed: int = 0, n_pairs: int = 2000, n_boot: int = N_BOOT,
                      max_length: int = 64, batch_size: int = 32) -> tuple[dict, dict]:
    """The two nulls of every measurement: the isotropic Gaussian of each layer's shape
    (:func:`gaussian_layers`, ``gaussian_seeds`` draws) and the same architecture at random
    initialisation (``random_init_seeds`` copies, the same sentences and tokens), measured with
    the same pairs seed and words. Each copy is
    :func:`geolip_lib.models.layered.random_init_model`: ``lm.random_init`` whole at or below
    ``TWIN_MAX_PARAMS`` parameters, above it run one block at a time beside the trained model
    (never a second whole model).

    Returns ``(claim values, layer stats)``: ``{"gaussian": [claim_values per seed],
    "random_init": [...]}`` for :func:`contextual_claims`, and the first seed's
    :meth:`ContextualGeometry.layer_stats` of each (``"isotropic Gaussian"``, ``"random init"``)."""
    V.check_positive_int(gaussian_seeds, "gaussian_seeds", minimum=0)
    V.check_positive_int(random_init_seeds, "random_init_seeds", minimum=0)
    values: dict = {"gaussian": [], "random_init": []}
    stats: dict = {}
    for s in range(gaussian_seeds):
        g = analyse(gaussian_layers(layers, seed=seed + 1000 + s), word_of, n_pairs=n_pairs, seed=seed, n_boot=n_boot)
        values["gaussian"].append(claim_values(g))
        if s == 0:
            stats["isotropic Gaussian"] = g.layer_stats()
    for s in range(random_init_seeds):
        twin = layered.random_init_model(lm, seed=lm.params.seed + 1 + s)  # above 1e9 parameters: block by block
        t_layers, t_kept = occurrence_states(twin, contexts, max_length=max_length, batch_size=batch_size)
        g = analyse(t_layers, contexts.word_of[t_kept], n_pairs=n_pairs, seed=seed, n_boot=n_boot)
        values["random_init"].append(claim_values(g))
        if s == 0:
            stats["random init"] = g.layer_stats()
        del twin, t_layers
    return {k: v for k, v in values.items() if v}, stats


# ----------------------------------------------------------------------------------- the claims
def _halves(n_layers: int) -> tuple[list[int], list[int]]:
    ctx = list(range(1, n_layers))  # the block outputs; 0 is the embedding output
    h = len(ctx) // 2
    return ctx[:h], ctx[len(ctx) - h:]


#: the three claims' statistics over the block outputs (layers 1..L; layer 0, the embedding
#: output, is a static embedding plus position and is shown but not read)
CLAIM_STATS = {
    "anisotropy": "the smallest per-layer anisotropy (the least anisotropic block output)",
    "self_similarity_drop": ("mean adjusted self-similarity of the lower half of the block outputs minus that of "
                             "the upper half"),
    "mev": "the largest per-layer mean MEV (the block output where a static embedding explains most)",
    "adjusted_mev": "the largest per-layer mean adjusted MEV (MEV minus the MEV of random other words' occurrences)",
}


def _claim_fns(n_layers: int, point: dict) -> dict:
    """The claim statistics as functions of the per-layer means; the layer an extreme is read
    at is chosen on the words as sampled (then resampled at that layer)."""
    ctx = np.arange(1, n_layers)
    lo, hi = _halves(n_layers)
    a_layer = int(ctx[np.nanargmin(point["anisotropy"][ctx])])
    m_layer = int(ctx[np.nanargmax(point["mev"][ctx])])
    am_layer = int(ctx[np.nanargmax(point["adjusted_mev"][ctx])])
    fns = {"anisotropy": (lambda d: d["anisotropy"][:, a_layer], a_layer),
           "mev": (lambda d: d["mev"][:, m_layer], m_layer),
           "adjusted_mev": (lambda d: d["adjusted_mev"][:, am_layer], am_layer)}
    if lo:
        fns["self_similarity_drop"] = (lambda d: d["adjusted_self_similarity"][:, lo].mean(1)
                                       - d["adjusted_self_similarity"][:, hi].mean(1), None)
    return fns


def claim_values(g: ContextualGeometry) -> dict:
    """The claim statistics (:data:`CLAIM_STATS`) on the words as sampled, no interval: what a
    null's seed contributes. ``self_similarity_drop`` is None with a single block."""
    point = g._point()
    fns = _claim_fns(g.n_layers, point)
    batch = {k: v[None] for k, v in point.items()}
    return {k: float(fns[k][0](batch)[0]) if k in fns else None for k in CLAIM_STATS}


def contextual_claims(g: ContextualGeometry, nulls: Optional[Mapping[str, Sequence[dict]]] = None, *,
                      mev_edge: float = PAPER_MEV_EDGE) -> dict:
    """``metrics["claims"]`` records for ``params/claims/ethayarajh-2019.yaml``: one headline per
    claim statistic (scope ``"block outputs"``), with the word-bootstrap interval and each null
    (``{"gaussian": [claim_values of each seed], "random_init": [...]}``) over its seeds.
    Each record carries ``per_layer`` (the per-layer means) and the layer it is read at; the two
    MEV records also their ``floor``, the least the contexts read allow
    (:func:`geolip_lib.probes.contextual_mev.floor_records`; ``decide``: the contexts per word
    that put it below ``mev_edge``)."""
    point = g._point()
    fns = _claim_fns(g.n_layers, point)
    lo, hi = _halves(g.n_layers)
    floors = floor_records(np.bincount(g.word_of, minlength=g.n_words), g.dim,
                           (point["mev"] - point["adjusted_mev"])[1:], edge=mev_edge)
    per_layer = {"anisotropy": point["anisotropy"], "self_similarity_drop": point["adjusted_self_similarity"],
                 "mev": point["mev"], "adjusted_mev": point["adjusted_mev"]}
    out: dict = {}
    for key, what in CLAIM_STATS.items():
        null_recs = {}
        for name, seeds in (nulls or {}).items():
            vals = [s.get(key) for s in seeds if s.get(key) is not None]
            if len(vals) >= 2:
                null_recs[name] = null_over_seeds(vals, what=f"{name.replace('_', '-')} seeds")
            elif len(vals) == 1:
                null_recs[name] = {"value": vals[0], "interval": None}
        if key not in fns:
            out[key] = {"block outputs": headline(None, label=key, note=f"{what}: needs at least 2 blocks")}
            continue
        fn, layer = fns[key]
        value, iv = g.stat(fn)
        where = (f"read at layer {layer}" if layer is not None else
                 f"layers {lo[0]}–{lo[-1]} against {hi[0]}–{hi[-1]}")
        rec = headline(value, interval=iv, nulls=null_recs, label=key, fmt=".4f",
                       note=f"{what}; {where}; over {g.n_words} words")
        rec["per_layer"] = [float(x) for x in per_layer[key][1:]]
        rec["layer"] = layer
        if key in floors:
            rec["floor"] = floors[key]
        out[key] = {"block outputs": rec}
    # the record names spelt out: geolip_lib.claims.recorded reads them from this literal
    return {"anisotropy": out["anisotropy"], "self_similarity_drop": out["self_similarity_drop"], "mev": out["mev"],
            "adjusted_mev": out["adjusted_mev"]}


def layer_frame(stats: Mapping[str, Any]):
    """:meth:`ContextualGeometry.layer_stats` as a DataFrame, one row per layer, each
    measurement printed ``value [lo, hi]``."""
    keys = ("anisotropy", "self_similarity", "adjusted_self_similarity", "mev", "adjusted_mev")
    rows = []
    for li in stats["layer"]:
        row = {"layer": li}
        for k in keys:
            r = stats[k][li]
            row[k.replace("_", " ")] = format_value(r["value"], (r["lo"], r["hi"]))
        rows.append(row)
    return pd.DataFrame(rows)
