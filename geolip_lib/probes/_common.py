"""Helpers shared by the embedding probes."""
from __future__ import annotations

from typing import Any

import torch

from .. import validation as V


def _matrix(E: Any, name: str = "E") -> torch.Tensor:
    return V.as_tensor(E, name, ndim=2, min_shape={0: 1, 1: 1}, dtype=torch.float64)
