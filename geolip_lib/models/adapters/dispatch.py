"""Build a :class:`~.schema.Catalog` from a checkpoint: :func:`catalog`, config helpers, family dispatch.

Which adapter reads a checkpoint is the family registry's knowledge (``geolip_lib.families``,
a higher layer, which this module cannot import). The registry hands its resolver over on
import (:func:`install`); ``geolip_lib/models/__init__.py`` imports the registry, so every
import of ``geolip_lib.models.adapters`` has it. A caller that knows the family passes it
down (``catalog(lm)`` uses ``lm.family``).

Layer L1.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from ..store import TensorStore
from . import generic
from . import open_clip as _open_clip
from .schema import Catalog, UnclassifiedWeightsWarning, _order

#: the fallback adapter's name (name patterns only; warns)
GENERIC = "generic"

_resolver: Optional[Callable[[Optional[str], Mapping], tuple]] = None
_known: tuple = ()


def install(resolver: Callable[[Optional[str], Mapping], tuple], known: tuple) -> None:
    """Called by ``geolip_lib.families``: ``resolver(family or None, config) -> (name, adapter module)``."""
    global _resolver, _known
    _resolver, _known = resolver, tuple(known)


def generic_adapter():
    """The generic name-pattern adapter module (for families the registry does not know)."""
    return generic


def _resolve(family: Optional[str], cfg: Mapping) -> tuple:
    if _resolver is None:  # only when this module is imported outside the package (never through geolip_lib.models)
        raise RuntimeError("models.adapters: no family registry installed (import geolip_lib.families)")
    try:
        return _resolver(family, cfg)
    except ValueError:
        raise ValueError(f"family: unknown family {family!r} (known: {', '.join(_known + (GENERIC,))})") from None


def family_for(config: Mapping | None) -> str:
    """The adapter family of a config (``"generic"`` when unknown)."""
    if not config:
        return GENERIC
    return _resolve(None, config_to_dict(config))[0]


def config_to_dict(config: Any) -> dict:
    """A HF config object, a dict, or None -> plain dict."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    if hasattr(config, "to_dict"):
        return config.to_dict()
    raise ValueError(f"config: expected a dict or a HF config, got {type(config).__name__}")


def _read_config(path: Path) -> dict:
    for fname, norm in (("config.json", None), (_open_clip.CONFIG_FILE, _open_clip.normalise_config)):
        p = path / fname
        if p.exists():
            with open(p, encoding="utf-8") as fh:
                cfg = json.load(fh)
            return norm(cfg) if norm is not None else cfg
    return {}


def catalog(source: Any, config: Any = None, family: str | None = None) -> Catalog:
    """Build the canonical catalog of a checkpoint (names and shapes only).

    Parameters
    ----------
    source : path | LoadedModel | TensorStore | Mapping[str, Tensor]
        A directory (or file) of ``*.safetensors``, a loaded model (``weights_dir`` and
        ``config`` are used), an open :class:`geolip_lib.weights.TensorStore`, or an
        in-memory state dict (e.g. of a random-init null model).
    config : dict or HF config, optional
        Model config; read from ``config.json`` next to the weights when omitted.
    family : str, optional
        Force a family (a name of the registry, or ``"generic"``); inferred from the config otherwise.

    Returns
    -------
    Catalog
    """
    cfg = config_to_dict(config)
    fam = family
    if isinstance(source, TensorStore):
        store = source
    elif hasattr(source, "weights_dir") and hasattr(source, "config"):  # LoadedModel
        if not cfg:
            cfg = config_to_dict(source.config)
        fam = fam or getattr(source, "family", None)
        store = TensorStore(source)
    else:
        store = TensorStore(source)
    if not cfg and store.root is not None:
        cfg = _read_config(store.root if store.root.is_dir() else store.root.parent)
    if "model_cfg" in cfg and isinstance(cfg["model_cfg"], Mapping):  # open_clip as saved by models.load
        cfg = {**cfg["model_cfg"], "model_type": _open_clip.MODEL_TYPE}
    fam, adapter = _resolve(fam, cfg)
    infos = store.infos()
    entries = adapter.adapt(infos, cfg)
    if fam == GENERIC:
        warnings.warn(f"no adapter for model_type={cfg.get('model_type')!r}: using the generic "
                      "name-pattern catalog (heads and stacks are guesses)", UnclassifiedWeightsWarning,
                      stacklevel=2)
    other = sorted(e.name for e in entries if e.role == "other" and len(e.shape) == 2 and not e.note
                   and "float" in str(e.dtype))
    if other:
        warnings.warn(f"{fam} adapter could not classify {len(other)} 2-D tensor(s): "
                      + ", ".join(other), UnclassifiedWeightsWarning, stacklevel=2)
    d_model = _d_model(cfg, entries)
    return Catalog(entries=sorted(entries, key=_order), family=fam, config=cfg, d_model=d_model,
                   source=str(store.root) if store.root is not None else None,
                   attn_scale=getattr(adapter, "ATTN_SCALE", None),
                   qk_norm_offset=float(adapter.qk_norm_offset(cfg)) if hasattr(adapter, "qk_norm_offset") else 0.0)


def _d_model(cfg: dict, entries: list) -> Optional[int]:
    for key in ("d_model", "hidden_size", "width"):
        if isinstance(cfg.get(key), int):
            return cfg[key]
    for e in entries:
        if e.role == "q" and len(e.shape) == 2:
            return int(e.shape[1])
    return None


__all__ = ["GENERIC", "catalog", "config_to_dict", "family_for", "generic_adapter", "install"]
