"""Model loading: ``load(name)`` -> :class:`LoadedModel` (see ``loading.py`` and geolip_lib/README.md).

Names are resolved on first access (so importing ``geolip_lib.models.adapters``, a lower
layer, does not load the whole package). Importing this package imports the family
registry (:mod:`geolip_lib.families`), which gives the weight catalog
(``models.adapters.catalog``) its family detection.
"""
from __future__ import annotations

import importlib

from .. import families  # noqa: F401 (installs the catalog's family detection)

_LAZY = {"load": "sources", "check": "sources", "LoadedModel": "loaded", "HiddenStates": "loaded",
         "ModelLoadError": "common", "ParamsError": None, "model_names": None, "pick_device": None}
_SUBMODULES = ("adapters", "tiny", "tokenizers", "loading", "twin", "preflight", "sources", "loaded", "locate",
               "common", "tokens")

__all__ = ["load", "check", "LoadedModel", "HiddenStates", "ModelLoadError", "ParamsError", "model_names", "pick_device"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("ParamsError", "model_names"):
        return getattr(importlib.import_module("geolip_lib.params"), name)
    if name == "pick_device":
        return importlib.import_module("geolip_lib.devices").pick_device
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
