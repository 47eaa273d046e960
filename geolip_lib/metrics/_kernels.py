"""CPU kernel for gathered simplex volumes (numba), used by ``simplex_volumes_sq_at``.

Why by hand: the batched torch path gathers (chunk, k+1, D) rows, upcasts, differences
and multiplies them in ~10 separate ops, so on a CPU it is bound by memory traffic and
per-op overhead (~300k pentachora/s on 2 cores). No library computes "Gram determinants
of row subsets given by an index array" in one pass; this kernel does, per simplex: read
the k+1 rows once, form the k edge vectors from vertex 0 in float64 (translation-exact:
a large common offset cancels before any product), accumulate the k x k edge Gram, and
take its determinant by Gaussian elimination with partial pivoting — parallel over
simplices. It returns the same numbers as the torch path to float64 round-off (tested).
"""
from __future__ import annotations

import math

import numpy as np

from .threads import keep_torch_threads

try:  # numba is a pinned dependency; the torch path remains for GPUs and as a fallback
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only without numba
    HAVE_NUMBA = False


if HAVE_NUMBA:

    @numba.njit(parallel=True, fastmath=True, cache=True)
    def _gather_gram_det(X, idx, out_vol_sq, out_rel, denom):  # pragma: no cover - compiled
        m, kp1 = idx.shape
        k = kp1 - 1
        D = X.shape[1]
        for s in numba.prange(m):
            E = np.empty((k, D), dtype=np.float64)
            i0 = idx[s, 0]
            for a in range(k):
                ia = idx[s, a + 1]
                for d in range(D):
                    E[a, d] = np.float64(X[ia, d]) - np.float64(X[i0, d])
            G = np.empty((k, k), dtype=np.float64)
            for a in range(k):
                for b in range(a, k):
                    acc = 0.0
                    for d in range(D):
                        acc += E[a, d] * E[b, d]
                    G[a, b] = acc
                    G[b, a] = acc
            diag = 1.0
            for a in range(k):
                diag *= G[a, a]
            det = 1.0
            for c in range(k):  # Gaussian elimination, partial pivoting
                p = c
                for r in range(c + 1, k):
                    if abs(G[r, c]) > abs(G[p, c]):
                        p = r
                if G[p, c] == 0.0:
                    det = 0.0
                    break
                if p != c:
                    for j in range(k):
                        tmp = G[c, j]
                        G[c, j] = G[p, j]
                        G[p, j] = tmp
                    det = -det
                det *= G[c, c]
                for r in range(c + 1, k):
                    f = G[r, c] / G[c, c]
                    for j in range(c, k):
                        G[r, j] -= f * G[c, j]
            out_vol_sq[s] = det / denom
            out_rel[s] = det / diag if diag > 0.0 else 0.0


def gather_volumes_sq(X: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Squared volumes and Hadamard ratios of the simplices ``X[idx[s]]``.

    Parameters
    ----------
    X : ndarray, shape (n, D), float32 or float64, C-contiguous
    idx : ndarray, shape (m, k+1), int64

    Returns
    -------
    vol_sq, rel : ndarray, shape (m,), float64
    """
    m, kp1 = idx.shape
    vol_sq = np.empty(m, dtype=np.float64)
    rel = np.empty(m, dtype=np.float64)
    if m:
        with keep_torch_threads():  # numba's OpenMP layer resets the libgomp torch shares
            _gather_gram_det(X, idx, vol_sq, rel, float(math.factorial(kp1 - 1)) ** 2)
    return vol_sq, rel
