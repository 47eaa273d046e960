"""The torch device a run asks for (bottom layer; one home for the ``"auto"`` rule)."""
from __future__ import annotations

from typing import Any

import torch


def pick_device(device: Any = "auto") -> torch.device:
    """``None`` or ``"auto"`` -> ``cuda`` when torch sees a GPU, else ``cpu``; anything else
    (``"cpu"``, ``"cuda:1"``, a ``torch.device``) is passed to torch."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


__all__ = ["pick_device"]
