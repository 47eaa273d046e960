"""Representational alignment of two models read on the same inputs: mutual k-nearest neighbours and
debiased linear CKA, as Huh, Cheung, Wang and Isola (2024), "The Platonic Representation Hypothesis"
(ICML), define and compute them.

Followed from the paper's public code (github.com/minyoungg/platonic-rep):

- ``measure_alignment.prepare_features``: each model's features of every layer, ``(N, L, D)``, are
  clamped to ``[-t, t]`` where ``t`` is the ``q = 0.95`` quantile of ``|x|``: per input over all its
  layers and dimensions, averaged over inputs (``metrics.remove_outliers`` with ``exact=False``, the
  script's default), or the quantile of the whole tensor (``exact=True``, its ``--precise`` flag);
- ``measure_alignment.compute_score``: each layer's features L2-normalised per input
  (``F.normalize(x, p=2, dim=-1)``), every layer of one model against every layer of the other, the
  best pair kept;
- ``metrics.compute_nearest_neighbors``: the ``k`` rows of largest inner product (cosine, once
  normalised), the row itself excluded (its diagonal set to -1e8);
- ``metrics.AlignmentMetrics.mutual_knn``: per input ``|kNN_A(i) ∩ kNN_B(i)| / k``, averaged;
- ``metrics.AlignmentMetrics.cka(..., unbiased=True)`` with ``hsic_unbiased`` (Song et al. 2012, eq. 5)
  on the linear kernels ``K = A Aᵀ``, ``L = B Bᵀ``.

Two departures, both said where they matter: ties between equal similarities go to the lower
index (a stable sort; the paper's ``argsort`` leaves them unspecified), and CKA is the ratio itself
(the paper adds 1e-6 to the denominator, which moves CKA of normalised features by about 1e-4; a
denominator that is not positive gives NaN here). Computations run in float64.

Everything here is pure array math; the notebook's inputs, models and nulls are
:mod:`geolip_lib.probes.alignment`.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..validation import fail

__all__ = ["PAIR_SEP", "pair_name", "TOPK", "OUTLIER_Q", "remove_outliers", "normalize", "nearest_neighbors", "knn_overlap", "mutual_knn",
           "mutual_knn_matrix", "chance_level", "shuffled_overlaps", "hsic_unbiased", "cka", "weighted_cka"]

#: between the models of a pair's (or a set's) name: "model A × model B"
PAIR_SEP = " × "


def pair_name(models: Any) -> str:
    """The name of a pair or set of models whose alignment is measured: the distinct names, sorted, joined
    by :data:`PAIR_SEP` (so a notebook and a claims file name a pair alike, whatever order they list the
    models in; the claims read it through :mod:`geolip_lib.claims.pairs`)."""
    names = sorted(dict.fromkeys(str(m) for m in models))
    if len(names) < 2:
        fail("models", f"a pair or set needs at least two distinct models, got {names}; name two or more")
    return PAIR_SEP.join(names)


#: the paper's k (``--topk 10``)
TOPK = 10
#: the paper's outlier quantile (``prepare_features(feats, q=0.95)``)
OUTLIER_Q = 0.95


def _features(x: Any, name: str, ndim: tuple = (2,)) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim not in ndim:
        fail(name, f"expected an array of {' or '.join(str(d) for d in ndim)} dimensions (inputs first), "
                   f"got shape {a.shape}")
    if not np.isfinite(a).all():
        fail(name, "has NaN or infinite values; drop or fix those inputs first")
    return a


def remove_outliers(feats: Any, q: float = OUTLIER_Q, exact: bool = False) -> np.ndarray:
    """The paper's ``remove_outliers``: ``feats`` clamped to ``[-t, t]``.

    ``exact=False`` (the paper's default): ``t`` is the mean over inputs (axis 0) of each input's
    ``q`` quantile of ``|x|`` over all its other axes (layers and dimensions). ``exact=True``:
    ``t = sort(|x|)[int(q · size)]`` over the whole array. ``q = 1`` returns the features unchanged."""
    a = _features(feats, "feats", (2, 3))
    if not 0 < q <= 1:
        fail("q", f"must lie in (0, 1], got {q}")
    if q == 1:
        return a
    if exact:
        flat = np.sort(np.abs(a).ravel())
        t = flat[min(int(q * flat.size), flat.size - 1)]
    else:  # torch.quantile's default interpolation is linear, as numpy's
        t = float(np.quantile(np.abs(a).reshape(a.shape[0], -1), q, axis=1).mean())
    return np.clip(a, -t, t)


def normalize(x: Any) -> np.ndarray:
    """Rows scaled to unit L2 norm, as ``F.normalize(x, p=2, dim=-1)`` (norms below 1e-12 count as 1e-12)."""
    a = _features(x, "x", (2, 3))
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def nearest_neighbors(x: Any, k: int = TOPK) -> np.ndarray:
    """``(N, k)`` indices of each row's ``k`` largest inner products with the other rows (the row
    itself excluded; ties to the lower index). Normalise first for cosine neighbours."""
    a = _features(x, "x")
    n = a.shape[0]
    if not 1 <= k < n:
        fail("k", f"must lie in [1, N - 1] = [1, {n - 1}] for {n} inputs, got {k}")
    s = a @ a.T
    np.fill_diagonal(s, -np.inf)
    return np.argsort(-s, axis=1, kind="stable")[:, :k]


def knn_overlap(knn_a: np.ndarray, knn_b: np.ndarray) -> np.ndarray:
    """Per row, ``|A(i) ∩ B(i)| / k`` for two ``(N, k)`` neighbour tables of the same inputs."""
    a, b = np.asarray(knn_a), np.asarray(knn_b)
    if a.shape != b.shape or a.ndim != 2:
        fail("knn_b", f"neighbour tables must have one shape (N, k), got {a.shape} and {b.shape}")
    return (a[:, :, None] == b[:, None, :]).sum(axis=(1, 2)) / a.shape[1]


def mutual_knn(a: Any, b: Any, k: int = TOPK, *, per_input: bool = False):
    """Mutual k-NN alignment of two feature tables of the same ``N`` inputs (rows paired): the mean
    over inputs of the overlap of their ``k`` cosine neighbours in each space. The rows are
    L2-normalised here (cosine). ``per_input``: the ``(N,)`` overlaps instead of their mean."""
    A, B = _features(a, "a"), _features(b, "b")
    if A.shape[0] != B.shape[0]:
        fail("b", f"has {B.shape[0]} inputs where a has {A.shape[0]}: both must be the same inputs, in one order")
    ov = knn_overlap(nearest_neighbors(normalize(A), k), nearest_neighbors(normalize(B), k))
    return ov if per_input else float(ov.mean())


def mutual_knn_matrix(layers_a: Sequence[Any], layers_b: Sequence[Any], k: int = TOPK) -> np.ndarray:
    """``(L_A, L_B)`` mutual k-NN of every layer of one model against every layer of the other
    (each layer's neighbours computed once)."""
    ka = [nearest_neighbors(normalize(x), k) for x in layers_a]
    kb = [nearest_neighbors(normalize(x), k) for x in layers_b]
    if ka and kb and ka[0].shape[0] != kb[0].shape[0]:
        fail("layers_b", f"has {kb[0].shape[0]} inputs where layers_a has {ka[0].shape[0]}")
    return np.array([[float(knn_overlap(x, y).mean()) for y in kb] for x in ka])


def chance_level(n: int, k: int = TOPK) -> float:
    """Expected mutual k-NN of two unrelated spaces: each input's ``k`` neighbours are ``k`` of the
    ``N - 1`` other inputs, and two independent uniform ``k``-subsets share ``k² / (N - 1)`` on
    average, so the score is ``k / (N - 1)`` (exact; the rougher ``k / N`` ignores that an input is
    never its own neighbour)."""
    if not 1 <= k < n:
        fail("k", f"must lie in [1, N - 1] for N = {n}, got {k}")
    return k / (n - 1)


def shuffled_overlaps(a: Any, b: Any, k: int = TOPK, *, n_shuffles: int = 20, seed: int = 0) -> np.ndarray:
    """The shuffled-pairing null: mutual k-NN of ``a`` against ``b`` with ``b``'s rows permuted
    (input ``i`` of one model paired with another input of the other), ``n_shuffles`` permutations.
    Returns the ``(n_shuffles,)`` scores. Each model's neighbours are computed once: permuting the
    rows permutes the neighbour table and relabels its entries."""
    A, B = _features(a, "a"), _features(b, "b")
    ka, kb = nearest_neighbors(normalize(A), k), nearest_neighbors(normalize(B), k)
    rng = np.random.default_rng(seed)
    out = np.empty(n_shuffles)
    for s in range(n_shuffles):
        p = rng.permutation(A.shape[0])
        inv = np.empty_like(p)
        inv[p] = np.arange(len(p))
        out[s] = knn_overlap(ka, inv[kb[p]]).mean()  # neighbours of row i of b[p]: b-rows kb[p[i]], relabelled
    return out


def _hsic_terms(K: np.ndarray, L: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Unbiased HSIC (Song et al. 2012, eq. 5, as the paper's ``hsic_unbiased``) of the Gram matrices of
    each resample whose per-input counts are the rows of ``W`` (b, N): the resample's Gram matrix is
    ``K[idx][:, idx]``; its off-diagonal sums are written with the counts, so no resample is built."""
    dk, dl = np.diag(K), np.diag(L)
    m = W.sum(axis=1)
    kw, lw = W @ K, W @ L  # (b, N): row sums of the resampled Gram matrices, per original input
    t1 = np.einsum("bi,bi->b", W @ (K * L), W) - W @ (dk * dl)  # sum of K~ * L~ (diagonals zeroed)
    sk = np.einsum("bi,bi->b", kw, W) - W @ dk
    sl = np.einsum("bi,bi->b", lw, W) - W @ dl
    t3 = np.einsum("bi,bi,bi->b", W, kw - dk, lw - dl)  # 1ᵀ K~ L~ 1
    return (t1 + sk * sl / ((m - 1) * (m - 2)) - 2 * t3 / (m - 2)) / (m * (m - 3))


def hsic_unbiased(K: Any, L: Any) -> float:
    """The paper's ``hsic_unbiased(K, L)`` for two ``(m, m)`` Gram matrices (m ≥ 4)."""
    K, L = _features(K, "K"), _features(L, "L")
    if K.shape != L.shape or K.shape[0] != K.shape[1] or K.shape[0] < 4:
        fail("L", f"needs two square Gram matrices of one size m ≥ 4, got {K.shape} and {L.shape}")
    return float(_hsic_terms(K, L, np.ones((1, K.shape[0])))[0])


def _cka_of(K: np.ndarray, L: np.ndarray, W: np.ndarray) -> np.ndarray:
    kl, kk, ll = _hsic_terms(K, L, W), _hsic_terms(K, K, W), _hsic_terms(L, L, W)
    den = kk * ll
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, kl / np.sqrt(np.where(den > 0, den, 1.0)), np.nan)


def cka(a: Any, b: Any, *, normalized: bool = True) -> float:
    """Debiased linear CKA of two feature tables of the same inputs: unbiased HSIC of the linear
    kernels, ``HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))``. ``normalized``: rows L2-normalised first, as
    the paper's ``compute_score`` does before every metric. NaN when a self-HSIC is not positive."""
    A, B = _features(a, "a"), _features(b, "b")
    if A.shape[0] != B.shape[0] or A.shape[0] < 4:
        fail("b", f"needs the same N ≥ 4 inputs as a, got {B.shape[0]} and {A.shape[0]}")
    if normalized:
        A, B = normalize(A), normalize(B)
    return float(_cka_of(A @ A.T, B @ B.T, np.ones((1, A.shape[0])))[0])


def weighted_cka(a: Any, b: Any, *, normalized: bool = True, distinct: bool = True, batch: int = 50):
    """``W -> (b,) CKA`` of each resample whose per-input counts are the rows of ``W``, for
    :func:`geolip_lib.metrics.intervals.bootstrap_weighted`.

    ``distinct`` (default): each resample's distinct inputs, each once. A repeated input would pair with
    its copy at similarity 1 in both spaces: with N = 200 about N/2 such pairs among N² carry a tenth
    of the centred kernels' mass and pull CKA up (the percentile interval then sat above the estimate).
    A resample holds about 63 % of the inputs, so the interval is wider than the spread at N
    (conservative), and centred where CKA is (the debiased HSIC is unbiased at every size).
    ``distinct=False``: the copies count as distinct samples, as when the rows are copied."""
    A, B = _features(a, "a"), _features(b, "b")
    if normalized:
        A, B = normalize(A), normalize(B)
    K, L = A @ A.T, B @ B.T

    def stat(W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        if distinct:
            W = (W > 0).astype(np.float64)
        return np.concatenate([_cka_of(K, L, W[s:s + batch]) for s in range(0, len(W), batch)])

    return stat
