"""Model families: one file per family, holding its :class:`FamilySpec` and its weight-name rules.

::

    from geolip_lib import families

    families.FAMILIES                  # ('t5', 't5_v1_1', 'bert', 'dinov2', 'open_clip', 'decoder_lm', ...)
    fs = families.spec("bert")         # unknown name -> one-line ValueError naming the known families
    fs.stacks, fs.is_text, fs.sizes_of(config), fs.adapt(tensors, config)
    families.family_of_model_type("qwen3")          # 'decoder_lm' (None when unknown)
    families.family_of_config({"model_type": "t5", "feed_forward_proj": "gated-gelu"})  # 't5_v1_1'
    cat = families.catalog(lm)         # the weight catalog (geolip_lib.checkpoints.Catalog); or a weights dir

``families/<family>.py`` is the whole family: the spec (stacks, forwards, sizes, tiny configs ...)
and ``adapt(tensors, config)``, the tensor-name rules the weight catalog reads (most are a table
of ``(regex, role, stack, attn)`` rows for :mod:`geolip_lib.checkpoints.rules`). ``registry.py``
lists the families; ``catalog.py`` builds a catalog with them. Layer 2: imports only the bottom
layer and :mod:`geolip_lib.checkpoints` (layer 1); ``models/`` imports this package, never the
reverse. Adding a family: one file and its entry in ``registry.REGISTRY`` (see "Adding a model
family" in geolip_lib/README.md).
"""
from __future__ import annotations

from .catalog import GENERIC, attention_skipped, catalog, config_to_dict, family_for
from .registry import (FAMILIES, FAMILY_SOURCES, REGISTRY, TINY_TYPE_PREFIX, family_of_config, family_of_model,
                       family_of_model_type, spec, tiny_type_models)
from .spec import DEFAULT_PROMPT, FamilySpec, Sizes, config_dict

__all__ = ["DEFAULT_PROMPT", "FAMILIES", "FAMILY_SOURCES", "GENERIC", "REGISTRY", "TINY_TYPE_PREFIX", "FamilySpec",
           "Sizes", "attention_skipped", "catalog", "config_dict", "config_to_dict", "family_for", "family_of_config",
           "family_of_model", "family_of_model_type", "spec", "tiny_type_models"]
