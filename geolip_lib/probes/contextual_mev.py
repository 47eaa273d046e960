"""Maximum explainable variance (MEV) of a word's contextual representations, the anisotropy
baseline the paper subtracts from it, and the floor that reading a word in ``n`` contexts sets.

**MEV** of a word read in ``n`` contexts: ``σ₁² / Σ σᵢ²`` of the ``n × d`` matrix ``X`` of its
representations (rows: contexts), the fraction of their variance that the best single vector,
a static embedding, could explain (Ethayarajh 2019, §3.4). Like the paper's SVD, ``X`` is **not
centred**, so MEV is ``λ_max(G) / tr(G)`` of the Gram matrix ``G = X Xᵀ``.

**The floor.** ``G`` is positive semi-definite of rank ``r ≤ min(n, d)``; its ``r`` non-zero
eigenvalues sum to ``tr(G)``, so the largest is at least their mean: MEV ≥ ``1 / r`` ≥
``1 / min(n, d)``, whatever the model. The bound is attained exactly when the ``min(n, d)``
eigenvalues are equal: ``n ≤ d`` orthogonal rows of equal length, or (``n > d``) an equal-norm
tight frame. So ``1 / min(n, d)`` is the exact floor (:func:`mev_floor`). Had the rows been
centred first, ``n`` points would span at most ``n − 1`` dimensions and the floor would be
``1 / min(n − 1, d)``; neither the paper nor this project centres. A mean over words of MEV is
at least the mean of their floors, and a maximum (or minimum) over layers of such means at
least the same number, since every layer reads the same words in the same contexts: with 5–8
contexts per word the floor is 12.5–20 %, beyond the paper's 5 % line, so no model could
satisfy "< 5 %" there; at least :func:`contexts_for_floor` contexts per word put it inside.

**The anisotropy adjustment** (the paper's footnotes: its "< 5 %" is after it): MEV minus the
MEV of ``n`` random occurrences of ``n`` other words (:func:`mev_baseline`), the value a word
with nothing in common across its contexts beyond the layer's anisotropy would get. The
baseline is itself at least ``1 / min(n, d)``, so the adjustment cancels the floor: the least
the adjusted MEV can be, given the measured baseline, is the mean floor minus the mean
baseline, at or below 0 (:func:`floor_records`).
"""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .. import validation as V

__all__ = ["PAPER_MEV_EDGE", "check_occurrences", "mev_rows", "max_explainable_variance", "mev_baseline", "mev_floor",
           "contexts_for_floor", "floor_records"]

#: the paper's line: "less than 5 % of the variance ... can be explained by a static embedding"
PAPER_MEV_EDGE = 0.05


def mev_rows(X: np.ndarray) -> float:
    """MEV of one word's rows (uncentred): the largest eigenvalue of ``X Xᵀ`` over its trace."""
    G = X @ X.T
    ev = np.linalg.eigvalsh(G)
    tr = float(np.trace(G))
    return float(ev[-1] / tr) if tr > 0 else float("nan")


def check_occurrences(X: Any, word_of: Any, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """``X`` as a finite float64 ``(occurrences, dim)`` array and ``word_of`` as one non-negative
    integer word index per row: the checks every measurement of notebook 16 starts with."""
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(word_of)
    if X.ndim != 2:
        V.fail(name, f"expected a 2-D array (occurrences, dim), got shape {X.shape}")
    if w.ndim != 1 or len(w) != len(X) or (len(w) and (not np.issubdtype(w.dtype, np.integer) or w.min() < 0)):
        V.fail("word_of", f"expected one non-negative integer word index per row of {name} ({len(X)}), "
                          f"got shape {w.shape} of {w.dtype}")
    if not np.isfinite(X).all():
        V.fail(name, "contains NaN or infinity")
    return X, w.astype(np.int64)


def _split(X: Any, word_of: Any, n_words: Optional[int]) -> tuple[np.ndarray, np.ndarray, int]:
    X, w = check_occurrences(X, word_of)
    return X, w, int(w.max()) + 1 if n_words is None else n_words


def max_explainable_variance(X: Any, word_of: Any, n_words: Optional[int] = None) -> np.ndarray:
    """Per word: ``σ₁² / Σ σᵢ²`` of the (uncentred) matrix of its occurrences' representations
    (Ethayarajh 2019, §3.4); 1 when they are all multiples of one vector, at least
    :func:`mev_floor` of its number of occurrences. ``(W,)``."""
    X, w, W = _split(X, word_of, n_words)
    out = np.full(W, np.nan)
    for k in range(W):
        rows = X[w == k]
        if len(rows):
            out[k] = mev_rows(rows)
    return out


def mev_baseline(X: Any, word_of: Any, n_words: Optional[int] = None, *, draws: int = 3,
                 seed: int = 0) -> np.ndarray:
    """Per word with ``n`` occurrences: the mean MEV of ``n`` random occurrences of ``n``
    different other words (``draws`` draws), what the anisotropy adjustment subtracts: the value
    a word with no shared direction beyond the layer's anisotropy would get. NaN where fewer than
    ``n`` other words have occurrences. ``(W,)``."""
    X, w, W = _split(X, word_of, n_words)
    V.check_positive_int(draws, "draws")
    rng = np.random.default_rng(seed)
    counts = np.bincount(w, minlength=W)
    by_word = [np.flatnonzero(w == k) for k in range(W)]
    out = np.full(W, np.nan)
    for k in range(W):
        n = counts[k]
        others = [j for j in range(W) if j != k and counts[j]]
        if n == 0 or len(others) < n:
            continue
        vals = []
        for _ in range(draws):
            pick = rng.choice(others, size=n, replace=False)
            vals.append(mev_rows(X[[int(rng.choice(by_word[j])) for j in pick]]))
        out[k] = float(np.mean(vals))
    return out


def mev_floor(n: Any, dim: Optional[int] = None) -> np.ndarray:
    """The least MEV ``n`` uncentred vectors in ``dim`` dimensions can have: ``1 / min(n, dim)``
    (``dim`` None: ``1 / n``), elementwise (see the module docstring)."""
    n = np.asarray(n, dtype=np.float64)
    if n.size and n.min() < 1:
        V.fail("n", f"a word needs at least 1 context, got {n.min():g}")
    if dim is not None:
        V.check_positive_int(dim, "dim")
        n = np.minimum(n, dim)
    return 1.0 / n


def contexts_for_floor(edge: float = PAPER_MEV_EDGE) -> int:
    """The fewest contexts per word whose floor ``1 / n`` lies below ``edge`` (21 for 5 %)."""
    if not (isinstance(edge, (int, float)) and 0 < edge <= 1):
        V.fail("edge", f"expected a fraction in (0, 1], got {edge!r}")
    n = max(1, math.floor(1 / edge))
    while 1 / n >= edge:
        n += 1
    return n


def floor_records(counts: Any, dim: Optional[int], baseline: Any, *, pooled: str = "the largest over block outputs",
                  edge: float = PAPER_MEV_EDGE) -> dict:
    """The ``floor`` of the MEV records (``{"value", "why", "decide"}``, what
    :func:`geolip_lib.claims.verdict_cases.reach` reads), for words read in ``counts`` contexts
    in ``dim`` dimensions: ``"mev"``, the mean over words of :func:`mev_floor` (the same in every
    layer, so also the floor of a maximum or minimum over layers); ``"adjusted_mev"``, that
    minus the mean baseline of each layer (``baseline``, one per layer pooled), maximised over
    the layers as the record is."""
    c = np.asarray(counts)
    f = float(np.mean(mev_floor(c, dim)))
    b = np.asarray(baseline, dtype=np.float64)
    b = b[np.isfinite(b)]
    span = f"{int(c.min())}" if c.min() == c.max() else f"{int(c.min())}–{int(c.max())}"
    need = contexts_for_floor(edge)
    design = (f"reading each word in {span} contexts (n vectors' first principal component explains at least 1/n "
              f"of their variance; the words' mean 1/n, the same in every layer, so also the floor of {pooled})")
    decide = f"at least {need} contexts per word (1/{need} = {100 / need:.1f} %, below the {edge * 100:g} % line)"
    out = {"mev": {"value": f, "why": design, "decide": decide}}
    if b.size:
        out["adjusted_mev"] = {
            "value": f - float(b.min()),
            "why": (f"the anisotropy adjustment, which subtracts the MEV of n random occurrences of other words "
                    f"(itself at least 1/n) and so cancels the 1/n floor of reading each word in {span} contexts: "
                    f"the least left is the words' mean 1/n minus the layer's measured baseline, at or below 0 "
                    f"({pooled})"),
            "decide": "already inside the rule: the adjustment removes the 1/n floor"}
    return out
