"""Model loading: ``load(name)`` -> :class:`LoadedModel` (see ``loading.py`` and geolip_lib/README.md).

Names are resolved on first access (so importing one submodule does not load the whole
package). ``models/`` reads the family registry (:mod:`geolip_lib.families`, a lower layer);
the weight catalog is ``geolip_lib.families.catalog`` and its data model and tensor store
``geolip_lib.checkpoints``.
"""
from __future__ import annotations

import importlib

_LAZY = {"load": "sources", "check": "sources", "prepare": "sources", "derived_source": "sources", "LoadedModel": "loaded", "HiddenStates": "loaded",
         "ModelLoadError": "common", "ParamsError": None, "model_names": None, "pick_device": None}
_SUBMODULES = ("tiny", "tokenizers", "loading", "twin", "layered", "config_checks", "preflight", "sources", "loaded", "locate",
               "common", "tokens")

__all__ = ["load", "check", "prepare", "derived_source", "LoadedModel", "HiddenStates", "ModelLoadError", "ParamsError", "model_names", "pick_device"]


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
