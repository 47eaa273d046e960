"""Build the weight catalog of a checkpoint: :func:`catalog` (names and shapes only), family dispatch, config helpers.

The family is the caller's (``catalog(lm)``: ``lm.family``) or the registry's reading of the
config (:func:`~.registry.family_of_config`: ``model_type``, open_clip's config keys); the
family's spec gives the name rules (``FamilySpec.adapt``, in ``families/<family>.py``), the
attention scale and the q/k norm offset. A config no family knows gets the name guesses of
:mod:`geolip_lib.checkpoints.guess` (``"generic"``; warns). Every catalog warns
(``UnclassifiedWeightsWarning``) listing each 2-D tensor it could not classify, and says once per
process (``NotAnalysedWarning``) what it catalogues but no analysis reads
(:meth:`~geolip_lib.checkpoints.Catalog.not_analysed`: a sequence mixer that is not attention).

Layer 2 (families): reads the registry directly; the data model and the store are
:mod:`geolip_lib.checkpoints` (layer 1).
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional

from ..checkpoints import guess
from ..checkpoints.schema import Catalog, NotAnalysedWarning, UnclassifiedWeightsWarning, _order, tensor_leaf
from ..checkpoints.store import TensorStore
from . import open_clip as _open_clip
from .any import ANY, missing_adapter
from .registry import FAMILIES, family_of_config, spec
from .spec import config_dict

#: the fallback's name (name guesses only; warns)
GENERIC = "generic"
#: the not-analysed lines said so far in this process (each is said once, however many catalogs a notebook builds)
_SAID: set = set()


def _resolve(family: Optional[str], cfg: Mapping) -> tuple:
    """``(family name, spec or None for the generic guesses)``: the given family, else the config's, else generic."""
    fam = family or family_of_config(cfg) or GENERIC
    if fam == GENERIC:
        return fam, None
    try:
        return fam, spec(fam)
    except ValueError:
        raise ValueError(f"family: unknown family {family!r} (known: {', '.join(FAMILIES + (GENERIC,))})") from None


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
        Family ``any`` reads names only: an attention role only inside a module path that says attention,
        a sequence mixer kept as role ``other`` (:mod:`geolip_lib.checkpoints.guess`).

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
    fam, fs = _resolve(fam, cfg)
    infos = store.infos()
    entries = (fs.adapt if fs is not None else guess.adapt)(infos, cfg)
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
    cat = Catalog(entries=sorted(entries, key=_order), family=fam, config=cfg, d_model=d_model,
                  source=str(store.root) if store.root is not None else None,
                  attn_scale=fs.attn_scale if fs is not None else None,
                  qk_norm_offset=float(fs.qk_norm_offset(cfg)) if fs is not None and fs.qk_norm_offset else 0.0)
    line = cat.not_analysed()
    if line and line not in _SAID:
        _SAID.add(line)
        warnings.warn(line, NotAnalysedWarning, stacklevel=2)
    return cat


def _d_model(cfg: dict, entries: list) -> Optional[int]:
    for key in ("d_model", "hidden_size", "width"):
        if isinstance(cfg.get(key), int):
            return cfg[key]
    for e in entries:
        if e.role == "q" and len(e.shape) == 2:
            return int(e.shape[1])
    return None


def attention_skipped(lm: Any, section: str, reason: str = "no attention block with separate or fused Q/K in "
                      "the catalog") -> str:
    """The one line a notebook prints for an attention section that does not apply to ``lm``.

    Family ``any`` (a model_type no family knows): a model without attention (its catalog holds a
    sequence mixer, :meth:`Catalog.mixers`) says so; otherwise the line names the family file that
    would enable the section. Any other family: ``reason``.
    """
    if getattr(lm, "family", None) != ANY.name:
        return f"{lm.name}: {reason} — {section} skipped."
    mt = config_dict(lm.config).get("model_type")
    mixers = catalog(lm).mixers() if getattr(lm, "weights_dir", None) is not None else []
    if mixers:
        parts = sorted({tensor_leaf(e.name) for e in mixers})
        return (f"{lm.name}: {section} skipped: model_type {mt!r} has no attention; a sequence mixer "
                f"({', '.join(parts)}) mixes its positions, and no analysis here reads it.")
    return missing_adapter(mt, f"{lm.name}: {section}")


__all__ = ["GENERIC", "attention_skipped", "catalog", "config_to_dict", "family_for"]
