"""Heavy third-party modules bound at module level but imported on first use (bottom layer).

``run_all.py --help``, ``--plan`` and every refusal of a bad flag, params file or profile read
the params, the family registry and the runner, and none of them needs torch, transformers,
pandas or papermill until a model is sized or a job runs; importing them up front cost 10-40 s
of a 2-core box before the first check. A module that needs one writes

    torch = lazy("torch")          # instead of: import torch
    nn = lazy("torch.nn")          # instead of: import torch.nn as nn

and uses ``torch.Tensor`` / ``nn.Linear`` as before inside its functions: the first attribute
read imports the module (``importlib.import_module``), later reads go to it directly. A use at
module level (a decorator, a default argument such as ``dtype=torch.float32``) imports it at
once and defeats the purpose: those take ``None`` and resolve inside the function.
``tests/unit/runner/test_startup.py`` holds the command line's paths to importing neither torch
nor transformers.

A ``geolip_lib`` module may be named too (``claims = lazy("geolip_lib.claims")``: the runner checks a
claims file only when a job names one), at module top only: the layer check
(``tests/unit/package/test_layers.py``) reads such a line as an import of that module, so no edge of
the import graph is hidden. ``geolip_lib.models`` resolves its own submodules on first access.
"""
from __future__ import annotations

import importlib
import types

__all__ = ["LazyModule", "lazy"]


class LazyModule(types.ModuleType):
    """Stands for the module ``name`` until an attribute is read, then forwards to it."""

    def __init__(self, name: str):
        super().__init__(name)
        self.__dict__["_lazy_target"] = None

    def _load(self) -> types.ModuleType:
        mod = self.__dict__["_lazy_target"]
        if mod is None:
            mod = importlib.import_module(self.__name__)
            self.__dict__["_lazy_target"] = mod
        return mod

    def __getattr__(self, attr: str):
        # only called for what the proxy itself lacks: every public name of the real module
        return getattr(self._load(), attr)

    def __setattr__(self, attr: str, value) -> None:  # a test's monkeypatch reaches the real module
        setattr(self._load(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._load(), attr)

    def __dir__(self):
        return dir(self._load())

    def __repr__(self) -> str:
        state = "imported" if self.__dict__["_lazy_target"] is not None else "not imported yet"
        return f"<lazy module {self.__name__!r} ({state})>"


def lazy(name: str) -> LazyModule:
    """A stand-in for the module ``name`` (absolute and dotted: ``"torch.nn.functional"``), imported when one
    of its attributes is first read."""
    if not isinstance(name, str) or not name or name.startswith(".") or not all(
            part.isidentifier() for part in name.split(".")):
        raise ValueError(f"lazy({name!r}): give an absolute module name such as 'torch' or 'torch.nn'")
    return LazyModule(name)
