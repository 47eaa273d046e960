"""Small internal helpers shared by the metric modules (not public API)."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch


def is_torch(x: Any) -> bool:
    """True when ``x`` is a torch tensor (results are then returned as tensors)."""
    return isinstance(x, torch.Tensor)


def to_output(t: torch.Tensor, like_torch: bool) -> Any:
    """Return ``t`` as a tensor when the input was one, else as a NumPy array / float."""
    if like_torch:
        return t
    arr = t.detach().cpu().numpy()
    return arr if arr.ndim else arr.item()


def rng_for(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy generator from an int seed (or pass a generator through)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ValueError(f"seed: expected an int or numpy Generator, got {seed!r}")
    return np.random.default_rng(seed)


def contig(x: Any) -> Any:
    """NumPy views with negative strides (``a[::-1]``) copied so torch can wrap them."""
    if isinstance(x, np.ndarray) and any(s < 0 for s in x.strides):
        return np.ascontiguousarray(x)
    return x
