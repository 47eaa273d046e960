"""Relational measures of the modulator pipeline (seed 001 §8–§10): pair cosines against a
WordNet similarity, per-token preservation."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr

from ..lexical.engine import path_similarity_pairs, wup_similarity_pairs
from ..validation import as_tensor, fail

SEED_BANDS = ((0.5, 1.0), (0.25, 0.5), (0.10, 0.25), (0.05, 0.10), (0.0, 0.05))


def pair_cosines(X, i, j) -> np.ndarray:
    """Cosine of rows ``X[i]`` and ``X[j]`` (float64, batched)."""
    Xn = F.normalize(as_tensor(X, "X", ndim=2, dtype=torch.float64), dim=1, eps=1e-12)
    ii, jj = torch.as_tensor(np.asarray(i)), torch.as_tensor(np.asarray(j))
    return (Xn[ii] * Xn[jj]).sum(1).cpu().numpy()


def relational_pairs(similarity, i, j) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scored pairs of :func:`relational_comparison`: those with a finite, positive
    similarity (the seed kept ``sim > 0``); returns ``(similarity, i, j)`` of the kept pairs."""
    s = np.asarray(similarity, dtype=np.float64)
    i, j = np.asarray(i), np.asarray(j)
    if not (s.shape == i.shape == j.shape):
        fail("similarity", f"expected one value per pair ({i.shape}), got {s.shape}")
    keep = np.isfinite(s) & (s > 0)
    return s[keep], i[keep], j[keep]


def relational_comparison(similarity, reps: dict, i, j, reference: str = "Original",
                          bands=SEED_BANDS, high: float = 0.25, low: float = 0.10) -> dict:
    """Correlations of representation cosines with a WordNet similarity over pairs (seed §8).

    Pairs with a NaN or non-positive similarity are dropped (the seed kept ``sim > 0``).

    Parameters
    ----------
    similarity : (P,) array
        WordNet similarity of pair p = (i[p], j[p]).
    reps : dict name -> (N, D) array
    i, j : (P,) int arrays
    reference : str
        Name whose values the deltas are taken against.
    bands : sequence of (lo, hi)
        Similarity bands (the last band of the seed, [0.5, 1.0], is closed).
    high, low : float
        ``gradient = mean cos(sim >= high) - mean cos(sim < low)``.

    Returns
    -------
    dict: ``n_pairs`` and per name ``pearson``, ``spearman``, ``gradient``, ``bands``
    (list of {lo, hi, n, mean_cos}), plus ``delta_pearson`` / ``delta_spearman`` /
    ``delta_gradient`` against ``reference``.
    """
    s, i, j = relational_pairs(similarity, i, j)
    out: dict = {"n_pairs": int(s.size)}
    hi_m, lo_m = s >= high, s < low
    for name, X in reps.items():
        c = pair_cosines(X, i, j)
        ok = s.size > 2 and s.std() > 0 and c.std() > 0
        r = {"pearson": float(np.corrcoef(s, c)[0, 1]) if ok else float("nan"),
             "spearman": float(spearmanr(s, c).statistic) if ok else float("nan"),
             "gradient": float(c[hi_m].mean() - c[lo_m].mean()) if hi_m.any() and lo_m.any() else float("nan"),
             "bands": []}
        for lo, hi in bands:
            m = (s >= lo) & ((s <= hi) if hi >= 1.0 else (s < hi))
            r["bands"].append({"lo": lo, "hi": hi, "n": int(m.sum()),
                               "mean_cos": float(c[m].mean()) if m.sum() >= 5 else float("nan")})
        out[name] = r
    if reference in reps:
        ref = out[reference]
        for name in reps:
            for key in ("pearson", "spearman", "gradient"):
                out[name][f"delta_{key}"] = out[name][key] - ref[key]
    return out


def per_token_cosines(original, modulated) -> np.ndarray:
    """Row-wise cosine between original and modulated representations, shape (N,) float64
    (the items :func:`per_token_preservation` summarises and its interval resamples)."""
    a = as_tensor(original, "original", ndim=2, dtype=torch.float64)
    b = as_tensor(modulated, "modulated", ndim=2, dtype=torch.float64)
    if a.shape != b.shape:
        fail("modulated", f"shape {tuple(b.shape)} differs from original {tuple(a.shape)}")
    return F.cosine_similarity(a, b, dim=1, eps=1e-12).cpu().numpy()


def per_token_preservation(original, modulated) -> dict:
    """Row-wise cosine between original and modulated representations (mean, std, min)."""
    c = torch.as_tensor(per_token_cosines(original, modulated))
    return {"mean": float(c.mean()), "std": float(c.std()) if c.numel() > 1 else 0.0, "min": float(c.min())}


def wordnet_pair_similarity(matched, i, j, kind: str = "path") -> np.ndarray:
    """WordNet similarity (NLTK-exact engine) of the matched entries' synsets for pairs (i, j)."""
    fn = {"path": path_similarity_pairs, "wup": wup_similarity_pairs}
    if kind not in fn:
        fail("kind", f"expected 'path' or 'wup', got {kind!r}")
    syn = np.asarray(matched.synset_ids)
    return fn[kind](syn[np.asarray(i)], syn[np.asarray(j)])
