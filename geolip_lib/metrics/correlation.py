"""Pearson and Spearman correlation, vectorised over leading axes (a bootstrap's resamples at
once): the one home of both for the metrics, probes and modulators that read a correlation with
an interval (``intervals.pair_bootstrap`` resamples the paired items)."""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

__all__ = ["pearson", "spearman"]


def pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson r along ``axis`` (vectorised over the other axes)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x = x - x.mean(axis, keepdims=True)
    y = y - y.mean(axis, keepdims=True)
    return (x * y).sum(axis) / np.sqrt((x * x).sum(axis) * (y * y).sum(axis))


def spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman rho along ``axis``: Pearson r of the average ranks (ties share a rank)."""
    return pearson(rankdata(x, axis=axis), rankdata(y, axis=axis), axis=axis)
