"""BERT adapter (HF ``BertModel`` and heads; also MiniLM, RoBERTa, ELECTRA names).

Names (optionally under ``bert.``/``roberta.``/...)::

    embeddings.{word,position,token_type}_embeddings.weight   embed
    embeddings.LayerNorm.{weight,bias}                         norm / bias
    encoder.layer.{i}.attention.self.{query,key,value}.weight  q / k / v (self, encoder)
    encoder.layer.{i}.attention.output.dense.weight            o
    encoder.layer.{i}.attention.output.LayerNorm.weight        norm
    encoder.layer.{i}.intermediate.dense.weight                mlp_in
    encoder.layer.{i}.output.dense.weight                      mlp_out
    encoder.layer.{i}.output.LayerNorm.weight                  norm
    pooler.dense.weight, cls.*                                 other (head, not the encoder)
"""
from __future__ import annotations

import re

from .schema import Entry, attn_entry, get_int

_LAYER = re.compile(r"^(?:.*\.)?encoder\.layer\.(?P<layer>\d+)\.(?P<rest>.+)$")
_SUB = {
    "attention.self.query": ("q", "self"), "attention.self.key": ("k", "self"),
    "attention.self.value": ("v", "self"), "attention.output.dense": ("o", "self"),
    "intermediate.dense": ("mlp_in", None), "output.dense": ("mlp_out", None),
    "attention.output.LayerNorm": ("norm", None), "output.LayerNorm": ("norm", None),
}


def adapt(tensors, config) -> list:
    """Map BERT tensor names to catalog entries (see the module docstring)."""
    d = get_int(config, "hidden_size")
    n_heads = get_int(config, "num_attention_heads")
    if d is None or n_heads is None:
        raise ValueError("config: BERT adapter needs hidden_size and num_attention_heads")
    hd = d // n_heads
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _LAYER.match(name)
        if m:
            layer, rest = int(m["layer"]), m["rest"]
            sub, _, kind = rest.rpartition(".")
            if sub in _SUB:
                role, attn = _SUB[sub]
                if kind == "weight" and role in ("q", "k", "v", "o"):
                    out.append(attn_entry(name, info, role, stack="encoder", attn=attn, layer=layer,
                                          n_heads=n_heads, head_dim=hd, expect_in=d))
                elif kind == "weight":
                    out.append(Entry(name, role, "encoder", attn, layer, shape, info.dtype))
                else:  # bias
                    out.append(Entry(name, "bias", "encoder", attn, layer, shape, info.dtype,
                                     of=role if role != "norm" else "norm"))
                continue
            out.append(Entry(name, "other", "encoder", None, layer, shape, info.dtype))
            continue
        if re.search(r"embeddings\.(word|position|token_type)_embeddings\.weight$", name):
            out.append(Entry(name, "embed", "encoder", None, None, shape, info.dtype))
        elif re.search(r"embeddings\.LayerNorm\.weight$", name):
            out.append(Entry(name, "norm", "encoder", None, None, shape, info.dtype))
        elif name.endswith(".bias") or name.endswith("position_ids"):
            out.append(Entry(name, "bias" if name.endswith(".bias") else "other", "encoder", None, None,
                             shape, info.dtype))
        elif re.search(r"cls\.predictions\.decoder\.weight$", name):
            out.append(Entry(name, "unembed", None, None, None, shape, info.dtype))
        elif re.search(r"(^|\.)embeddings_project\.weight$", name):  # ELECTRA: embedding_size -> hidden_size
            out.append(Entry(name, "other", "encoder", None, None, shape, info.dtype, note="embedding projection"))
        elif re.search(r"(^|\.)(pooler|cls|classifier|lm_head|generator_predictions|generator_lm_head|"
                       r"discriminator_predictions)\.", name):
            # task head on top of the encoder: named here so the warning stays quiet
            out.append(Entry(name, "other", None, None, None, shape, info.dtype, note="task head"))
        else:
            out.append(Entry(name, "other", None, None, None, shape, info.dtype))
    return out
