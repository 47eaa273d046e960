"""The modulator pipeline's index sampling: random pairs and the train / validation split
(the shared draws of ``metrics/sampling.py``: ``random_pairs``, ``train_val_split``), the
seed's relational subset, batches."""
from __future__ import annotations

import numpy as np

from ..metrics.sampling import random_pairs, train_val_split
from ..validation import check_positive_int


#: the shared seeded draws (``metrics/sampling.py``), under the names the pipeline's callers use
sample_pairs = random_pairs
split_indices = train_val_split


SEED_N_REL = 3000  # entries of the seed's relational subset (seed 001 §8–§10: N_REL = min(3000, len(matched)))


def seed_relational_pairs(n_items: int, n_rel: int = SEED_N_REL, n_pairs: int = 50000,
                          seed: int = 42) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's relational sample (seed 001 §8, §9, §10), draw for draw.

    One generator ``default_rng(seed)`` draws the subset
    ``choice(n_items, min(n_rel, n_items), replace=False)``, then ``n_pairs`` first and
    ``n_pairs`` second members with ``choice(n_sub, n_pairs)`` each; pairs with equal
    members are dropped. With the seed's ``n_items`` (all matched entries) and defaults
    this is exactly the sample the seed scored; the project's definition
    (:func:`sample_pairs` over all entries) is the other one.

    Returns
    -------
    i, j : int arrays
        The pairs as indices of the ``n_items`` entries (not of the subset).
    subset : int array
        The subset's entries, in the order drawn.
    """
    check_positive_int(n_items, "n_items", minimum=2)
    rng = np.random.default_rng(seed)
    n_sub = min(check_positive_int(n_rel, "n_rel", minimum=2), n_items)
    subset = rng.choice(n_items, size=n_sub, replace=False)
    pi = rng.choice(n_sub, size=check_positive_int(n_pairs, "n_pairs"))
    pj = rng.choice(n_sub, size=n_pairs)
    keep = pi != pj
    return subset[pi[keep]], subset[pj[keep]], subset


def seed_training_schedule(n_items: int, n_epochs: int, batch_size: int, *, train_fraction: float = 0.9,
                           seed: int = 42) -> tuple[np.ndarray, np.ndarray, list[list[np.ndarray]]]:
    """Seed 001 §9's split and batches, draw for draw (seed mode).

    One generator ``default_rng(seed)``: ``perm = permutation(n_items)``, the first
    ``int(n_items * train_fraction)`` entries train, the rest validate; then, each epoch,
    ``permutation(n_train)`` from the same generator orders the training entries, cut into
    consecutive batches. (The project's :func:`split_indices` / :func:`batches` draw the
    split and each epoch's order from seeds of their own.)

    Returns
    -------
    train_idx, val_idx : int arrays
    epoch_batches : list (one per epoch) of lists of int arrays
    """
    n = check_positive_int(n_items, "n_items", minimum=2)
    bs = check_positive_int(batch_size, "batch_size")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_train = int(n * train_fraction)
    train_idx, val_idx = perm[:n_train], perm[n_train:]
    epoch_batches = []
    for _ in range(check_positive_int(n_epochs, "n_epochs")):
        order = train_idx[rng.permutation(n_train)]
        epoch_batches.append([order[s:s + bs] for s in range(0, n_train, bs)])
    return train_idx, val_idx, epoch_batches


def batches(indices, batch_size: int, seed: int | None = None) -> list[np.ndarray]:
    """Split ``indices`` into batches (shuffled with ``seed`` when given)."""
    idx = np.asarray(indices)
    if seed is not None:
        idx = idx[np.random.default_rng(seed).permutation(idx.size)]
    bs = check_positive_int(batch_size, "batch_size")
    return [idx[s:s + bs] for s in range(0, idx.size, bs)]
