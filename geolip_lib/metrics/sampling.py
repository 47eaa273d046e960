"""Seeded index draws, named by what they draw: random pairs, anchor/test and train/val splits,
row samples.

Every function takes ``seed``: an int (``numpy.random.default_rng(seed)``) or a
``numpy.random.Generator`` that is drawn from in place (so a caller can chain draws on one
generator, as the seed notebooks did).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import validation as V
from ._util import rng_for

__all__ = ["random_pairs", "anchor_test_split", "train_val_split", "sample_rows"]


def random_pairs(n_items: int, n_pairs: int, seed: Any = 42) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` random index pairs ``(i, j)`` in ``[0, n_items)`` with self-pairs dropped.

    Draws ``i = integers(0, n_items, n_pairs)`` then ``j`` likewise (the same draws as
    ``choice(n_items, n_pairs)``, the seed's form); pairs with ``i == j`` are dropped, so
    slightly fewer than ``n_pairs`` may come back.
    """
    V.check_positive_int(n_items, "n_items", minimum=2)
    V.check_positive_int(n_pairs, "n_pairs")
    rng = rng_for(seed)
    i = rng.integers(0, n_items, size=n_pairs)
    j = rng.integers(0, n_items, size=n_pairs)
    keep = i != j
    return i[keep], j[keep]


def anchor_test_split(n: int, n_anchor: int, n_test: int, seed: Any = 0) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint random anchor (fit) and held-out (test) row indices out of ``n``.

    One permutation ``default_rng(seed).permutation(n)``: anchors are its first
    ``n_anchor`` entries, test rows the next ``n_test``. Sizes are capped so that both
    are non-empty: anchors take at most ``n − 1`` rows, test rows at most the rest.
    """
    n = V.check_positive_int(n, "n", minimum=2)
    n_anchor = min(V.check_positive_int(n_anchor, "n_anchor"), n - 1)
    n_test = min(V.check_positive_int(n_test, "n_test"), n - n_anchor)
    perm = rng_for(seed).permutation(n)
    return perm[:n_anchor], perm[n_anchor:n_anchor + n_test]


def train_val_split(n: int, val_fraction: float = 0.1, seed: Any = 42) -> tuple[np.ndarray, np.ndarray]:
    """Seeded permutation split of ``range(n)`` into (train, val), covering every index once.

    ``val`` is the first ``round(n · val_fraction)`` entries of
    ``default_rng(seed).permutation(n)``, at least 1 and at most ``n − 1``; ``train`` the rest.
    """
    V.check_positive_int(n, "n", minimum=2)
    perm = rng_for(seed).permutation(n)
    n_val = min(max(1, int(round(n * val_fraction))), n - 1)
    return perm[n_val:], perm[:n_val]


def sample_rows(n_rows: int, n_sample: int | None, seed: Any = 0) -> np.ndarray:
    """Row indices of a seeded sample without replacement (as :func:`metrics.cosine_stats` uses).

    ``default_rng(seed).choice(n_rows, size=n_sample, replace=False)``, or
    ``arange(n_rows)`` when ``n_sample`` is None or ``>= n_rows`` (no draw).
    """
    V.check_positive_int(n_rows, "n_rows")
    if n_sample is None or n_sample >= n_rows:
        return np.arange(n_rows)
    V.check_positive_int(n_sample, "n_sample", minimum=2)
    return rng_for(seed).choice(n_rows, size=n_sample, replace=False)
