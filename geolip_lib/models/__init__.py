"""Model loading: ``load(name)`` -> :class:`LoadedModel` (see ``loading.py`` and geolip_lib/README.md).

``adapters`` (the canonical weight catalog, one module per family) is imported on first
access, so ``models.adapters.catalog(lm)`` works after ``from geolip_lib import models``.
"""
from __future__ import annotations

import importlib

from ..params import ParamsError, model_names
from .loading import HiddenStates, LoadedModel, ModelLoadError, check, load, pick_device

__all__ = ["load", "check", "LoadedModel", "HiddenStates", "ModelLoadError", "ParamsError", "model_names", "pick_device"]


def __getattr__(name: str):
    if name in ("adapters", "tiny", "tokenizers", "loading"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
