"""Checks of a model's config before anything is built from it.

* :func:`config_problem` bounds what a config may ask before anything is built from it: a
  ``model_type`` transformers knows (unless the model runs its own code) and at most
  :data:`MAX_LAYERS` layers (a ``num_hidden_layers: 1000000`` builds for minutes even on the
  meta device); :func:`~geolip_lib.models.preflight.meta_model` refuses the same with one line.
* :func:`check_config` checks the keys of a params file's ``config:`` against the fields
  of the family's own config class (the HF ``PretrainedConfig`` subclass, or open_clip's
  vision/text config dataclasses) and each value's type against the field's default.
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
from pathlib import Path
from typing import Any, Optional

from transformers import AutoConfig, PretrainedConfig

from .. import roots
from ..families import spec
from ..params import ParamsError, model_file_label
from .locate import OPEN_CLIP_SOURCE


#: ``kind`` of :func:`~geolip_lib.models.preflight.model_config`: a transformers ``config.json`` or an open_clip ``model_cfg``
HF_KIND, OPEN_CLIP_KIND = "hf", OPEN_CLIP_SOURCE


#: layers a config may declare (the deepest published models have under 200)
MAX_LAYERS = 1024
#: config keys that count layers, across families (``Sizes.n_layers`` needs a known family)
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_decoder_layers", "encoder_layers",
              "decoder_layers", "layers")


#: the largest width, head count, vocabulary or length a config may declare (a tiny model is built
#: from its config: ``vocab_size: 10**12`` would ask for terabytes)
MAX_SIZE = 10 ** 7
SIZE_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "d_model", "d_ff", "d_kv", "n_embd", "n_inner",
             "ffn_dim", "max_position_embeddings", "n_positions", "num_attention_heads", "n_head", "num_heads",
             "num_key_value_heads", "embed_dim", "width", "head_dim")
#: what a model's config.json may weigh (the largest published ones are a few hundred kB)
CONFIG_MAX_BYTES = 16 * 1024 * 1024


def read_config_file(path: Path) -> dict:
    """A model's ``config.json`` (or ``open_clip_config.json``), read bounded
    (:func:`geolip_lib.roots.read_json_file`: a regular file, at most :data:`CONFIG_MAX_BYTES`,
    64 levels deep; a link into the Hugging Face cache is fine) and a JSON object; one-line
    ``ValueError`` otherwise."""
    cfg = roots.read_json_file(path, CONFIG_MAX_BYTES, what="a model's config",
                               remedy="re-save the model with save_pretrained")
    if not isinstance(cfg, dict):
        raise roots.RootReadError(f"{path}: a JSON {type(cfg).__name__}, not an object; re-save the model with "
                                  "save_pretrained")
    return cfg


def _layer_counts(cfg: Any, where: str = "", keys: tuple = LAYER_KEYS) -> list[tuple[str, Any]]:
    """``(key path, value)`` of every field named in ``keys`` in a config dict and its nested configs."""
    out = []
    if isinstance(cfg, dict):
        for k, v in cfg.items():
            if k in keys and not isinstance(v, (dict, list)):
                out.append((f"{where}{k}", v))
            elif isinstance(v, dict):
                out += _layer_counts(v, f"{where}{k}.", keys)
    return out


def _source_of(p, key: str, value: Any, src: str) -> str:
    """Where a config value came from: the params file's ``config:`` when it sets ``key`` (a dotted path into
    nested configs) to ``value``, else ``src`` (the folder's config.json)."""
    if getattr(p, "source", None) == "tiny":  # a tiny model's whole config is its params file's: already named
        return src
    over: Any = getattr(p, "config", None) or {}
    for part in key.split("."):
        over = over.get(part) if isinstance(over, dict) else None
    if over is not None and over == value:
        return f"config: of {model_file_label(p.name)}"
    return src


def config_problem(p, config: dict, kind: str, src: str = "its config") -> Optional[str]:
    """Why a model cannot be built from ``config`` (None: it can): a layer count over
    :data:`MAX_LAYERS` or not a whole number, or a ``model_type`` transformers does not know
    (a model with ``trust_remote_code`` brings its own). One line naming ``src``, or the params file's
    ``config:`` when the value came from there (:func:`_source_of`)."""
    for key, v in _layer_counts(config):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_LAYERS:
            return (f"{_source_of(p, key, v, src)}: {key} is {v!r}; a model may have 0 to {MAX_LAYERS} layers (the "
                    "limit on what a config may ask); fix the config")
    for key, v in _layer_counts(config, keys=SIZE_KEYS):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_SIZE):
            return (f"{_source_of(p, key, v, src)}: {key} is {v!r}; a size in a config is a whole number from 0 to "
                    f"{MAX_SIZE} (the limit on what a config may ask); fix the config")
    if kind != HF_KIND or getattr(p, "trust_remote_code", False):
        return None
    if "model_type" not in config:  # a params file's config: (the family's default type) or no type to check
        return None
    mt = config.get("model_type")
    if not isinstance(mt, str):
        return f"{src}: model_type is {mt!r}, not a name; re-save the model with save_pretrained"
    try:
        AutoConfig.for_model(mt)
    except (KeyError, ValueError):
        return (f"{src}: model_type '{mt}' is not one this transformers knows; use a model whose model_type "
                "transformers lists (or upgrade transformers)")
    return None


def _fields(obj: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return obj.to_dict()


def _hf_fields(model_type: str) -> dict[str, Any]:
    """Every name the config class accepts: its fields, the base PretrainedConfig's, the
    arguments of its ``__init__`` and its ``attribute_map`` aliases (``hidden_size`` for T5)."""
    cfg = AutoConfig.for_model(model_type)
    out = {**PretrainedConfig().to_dict(), **cfg.to_dict()}
    for name, par in inspect.signature(type(cfg).__init__).parameters.items():
        if par.kind in (par.POSITIONAL_OR_KEYWORD, par.KEYWORD_ONLY) and name != "self":
            out.setdefault(name, getattr(cfg, name, None) if par.default is inspect.Parameter.empty else par.default)
    for alias, target in getattr(cfg, "attribute_map", {}).items():
        out.setdefault(alias, out.get(target))
    out.setdefault("tie_word_embeddings", True)
    return out


def _type_ok(value: Any, default: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    if isinstance(default, dict):
        return isinstance(value, dict)
    return isinstance(value, type(default))


def _check_keys(config: dict, fields: dict[str, Any], where: str, prefix: str = "config") -> None:
    for k, v in config.items():
        if k not in fields:
            near = difflib.get_close_matches(k, list(fields), n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise ParamsError(f"{where}: key '{prefix}.{k}': unknown field of this config{hint}")
        if isinstance(v, float) and not math.isfinite(v):  # .nan / .inf: the kernel failed naming no key
            raise ParamsError(f"{where}: key '{prefix}.{k}': expected a finite number, got {v}")
        if not _type_ok(v, fields[k]):
            raise ParamsError(f"{where}: key '{prefix}.{k}': expected {type(fields[k]).__name__} like the default "
                              f"{fields[k]!r}, got {type(v).__name__} {v!r}")


def check_config(family: str, config: dict, where: str) -> None:
    """Unknown keys and wrongly typed values in a params file's ``config:`` (one-line ParamsError).

    HF families: the fields of ``AutoConfig.for_model(model_type)`` (``model_type`` from
    ``config`` or the family's tiny default); open_clip: ``embed_dim`` and the fields of
    ``CLIPVisionCfg`` / ``CLIPTextCfg`` under ``vision_cfg`` / ``text_cfg``.
    """
    if not config:
        return
    fs = spec(family)
    if not fs.hf:  # open_clip
        from open_clip.model import CLIPTextCfg, CLIPVisionCfg  # heavy optional dependency

        top = {k: v for k, v in fs.tiny_defaults.items() if k not in ("vision_cfg", "text_cfg")}
        top |= {"vision_cfg": {}, "text_cfg": {}, "quick_gelu": False, "cast_dtype": None, "init_logit_scale": 0.0,
                "init_logit_bias": None}
        _check_keys(config, top, where)
        for key, cls in (("vision_cfg", CLIPVisionCfg), ("text_cfg", CLIPTextCfg)):
            _check_keys(config.get(key) or {}, _fields(cls()), where, f"config.{key}")
        return
    model_type = config.get("model_type") or fs.tiny_defaults.get("model_type")
    try:
        fields = _hf_fields(model_type)
    except (KeyError, ValueError):
        raise ParamsError(f"{where}: key 'config.model_type': unknown model_type '{model_type}'") from None
    fields["model_type"] = model_type
    _check_keys(config, fields, where)
