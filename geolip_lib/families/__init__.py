"""The model-family registry: one :class:`FamilySpec` per family (see ``spec.py``).

::

    from geolip_lib import families

    families.FAMILIES                  # ('t5', 't5_v1_1', 'bert', 'dinov2', 'open_clip', 'decoder_lm')
    fs = families.spec("bert")         # unknown name -> one-line ValueError naming the known families
    fs.stacks, fs.is_text, fs.sizes_of(config)
    families.family_of_model_type("qwen3")          # 'decoder_lm' (None when unknown)
    families.family_of_config({"model_type": "t5", "feed_forward_proj": "gated-gelu"})  # 't5_v1_1'

Adding a family: one module here with its spec, an entry in :data:`REGISTRY`, a weight
adapter in ``models/adapters/`` (see "Adding a model family" in geolip_lib/README.md).

Importing this package also gives the weight catalog (``models.adapters.catalog``, a lower
layer that cannot import the registry) its family detection: :func:`install` hands it
:func:`adapter_for`.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from ..models.adapters import dispatch as _dispatch
from ..models.adapters import matrices as _matrices
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
from .open_clip import OPEN_CLIP
from .opt import OPT
from .spec import DEFAULT_PROMPT, FamilySpec, Sizes, config_dict
from .t5 import T5, T5_V1_1

#: family name -> spec, in the order of ``params/models`` documentation (the families of issue 24 after the first six)
REGISTRY: dict[str, FamilySpec] = {s.name: s for s in (T5, T5_V1_1, BERT, DINOV2, OPEN_CLIP, DECODER_LM, GPT2, GPT_NEOX,
                                                       GPTJ, OPT, BLOOM, FALCON, DISTILBERT, ALBERT, DEBERTA_V2, BART,
                                                       CLIP, ANY)}
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


def adapter_for(family: Optional[str], config: Mapping) -> tuple[str, Any]:
    """``(name, adapter function)`` for a catalog: the given family, else the config's, else generic."""
    fam = family or family_of_config(config) or _dispatch.GENERIC
    if fam == _dispatch.GENERIC:
        return fam, _dispatch.generic_adapter()
    return fam, spec(fam).adapter


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
                         "description": f"Tiny random {mt} ({fam} family) from its transformers config (issue 24)."}
    return out


def attention_skipped(lm: Any, section: str, reason: str = "no attention block with separate or fused Q/K in "
                      "the catalog") -> str:
    """The one line a notebook prints for an attention section that does not apply to ``lm``.

    Family ``any`` (a model_type no family knows): which adapter would enable the section; any other
    family: ``reason``.
    """
    if getattr(lm, "family", None) == ANY.name:
        return _matrices.missing_adapter(config_dict(lm.config).get("model_type"), f"{lm.name}: {section}")
    return f"{lm.name}: {reason} — {section} skipped."


def install() -> None:
    """Give the weight catalog (``models.adapters.dispatch``) the registry's family detection."""
    _dispatch.install(adapter_for, FAMILIES)


install()

__all__ = ["DEFAULT_PROMPT", "FAMILIES", "FAMILY_SOURCES", "REGISTRY", "TINY_TYPE_PREFIX", "FamilySpec", "Sizes",
           "adapter_for", "attention_skipped", "tiny_type_models", "config_dict", "family_of_config", "family_of_model", "family_of_model_type", "spec"]
