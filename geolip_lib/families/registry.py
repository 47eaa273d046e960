"""The model-family registry: one :class:`FamilySpec` per family, each in its own file (see ``spec.py``).

``REGISTRY`` (name -> spec), ``spec(name)``, the detection of a family from a ``model_type``
or a config, and the tiny model of every model_type. Re-exported by ``geolip_lib/families/__init__.py``.

Adding a family: one module ``families/<family>.py`` with its spec and its weight-name rules
(``adapt``), and an entry in :data:`REGISTRY` (see "Adding a model family" in geolip_lib/README.md).
"""
from __future__ import annotations

from typing import Any, Optional

from .albert import ALBERT
from .any import ANY
from .bart import BART
from .bert import BERT
from .bloom import BLOOM
from .clip import CLIP
from .decoder_lm import DECODER_LM
from .deberta_v2 import DEBERTA_V2
from .dinov2 import DINOV2
from .distilbert import DISTILBERT
from .falcon import FALCON
from .gpt2 import GPT2
from .gpt_neox import GPT_NEOX
from .gptj import GPTJ
from .mpnet import MPNET
from .open_clip import OPEN_CLIP
from .opt import OPT
from .spec import FamilySpec, config_dict
from .t5 import T5, T5_V1_1
from .whisper import WHISPER

#: family name -> spec, in the order of ``params/models`` documentation (the transformers families after the first six)
REGISTRY: dict[str, FamilySpec] = {s.name: s for s in (T5, T5_V1_1, BERT, DINOV2, OPEN_CLIP, DECODER_LM, GPT2, GPT_NEOX,
                                                       GPTJ, OPT, BLOOM, FALCON, DISTILBERT, ALBERT, DEBERTA_V2, BART,
                                                       CLIP, MPNET, WHISPER, ANY)}
FAMILIES: tuple = tuple(REGISTRY)
#: ``source:`` values that belong to one family (open_clip's model zoo) -> an example ``id:``
FAMILY_SOURCES: dict = {src: ex for s in REGISTRY.values() for src, ex in s.sources.items()}


def spec(name: str) -> FamilySpec:
    """The spec of family ``name``; an unknown name raises a one-line ValueError naming the known families."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"family: unknown family {name!r} (known: {', '.join(FAMILIES)})") from None


def family_of_model_type(model_type: Optional[str]) -> Optional[str]:
    """The first family (registry order) whose ``model_types`` contain ``model_type``; None when unknown.

    ``t5`` covers T5 v1.1 checkpoints too (they share the model_type): use
    :func:`family_of_config` to tell them apart by the feed-forward.
    """
    mt = str(model_type or "").lower()
    for s in REGISTRY.values():
        if mt in s.model_types:
            return s.name
    return None


def family_of_config(config: Any) -> Optional[str]:
    """The family of a config (HF config object or dict; open_clip ``model_cfg``), None when unknown.

    A family's ``detect`` test (open_clip's ``vision_cfg``/``text_cfg`` keys) is tried first;
    then the config's ``model_type`` must be one of a family's ``model_types`` and its
    ``matches`` test (if any) accept the config (T5 v1.1: a gated feed-forward).
    """
    cfg = config_dict(config)
    if not cfg:
        return None
    for s in REGISTRY.values():
        if s.detect is not None and s.detect(cfg):
            return s.name
    mt = str(cfg.get("model_type", "")).lower()
    for s in REGISTRY.values():
        if mt in s.model_types and (s.matches is None or s.matches(cfg)):
            return s.name
    return None


def family_of_model(model: Any) -> Optional[str]:
    """The family of an ``nn.Module`` from its ``config`` (None when unknown)."""
    cfg = getattr(model, "config", None)
    return family_of_config(cfg) if cfg is not None else None


#: prefix of the tiny params files with one model per model_type (``params/models/tiny-type-*.yaml``)
TINY_TYPE_PREFIX = "tiny-type-"


def tiny_type_models() -> dict:
    """``params/models`` name -> params dict of a tiny model of every (family, model_type) of the registry.

    Written by ``scripts/support_table.py --write`` (and checked by its test); ``make test-families`` runs
    notebooks 01, 02 and 06 on each. A model_type two families share (T5 / T5 v1.1) gets ``-<family>``
    on the second.
    """
    out: dict = {}
    seen: set = set()
    for fam, s in REGISTRY.items():
        for mt, cfg in s.tiny_configs().items():
            name = TINY_TYPE_PREFIX + mt + (f"-{fam}" if mt in seen else "")
            seen.add(mt)
            # the spec holds the config (tiny_model_types / tiny_defaults): the file names the model_type only
            out[name] = {"name": name, "family": fam, "source": "tiny", "seed": 0,
                         "config": {"model_type": mt} if s.hf else {},
                         "description": f"Tiny random {mt} ({fam} family) from its transformers config."}
    return out


__all__ = ["FAMILIES", "FAMILY_SOURCES", "REGISTRY", "TINY_TYPE_PREFIX", "family_of_config",
           "family_of_model", "family_of_model_type", "spec", "tiny_type_models"]
