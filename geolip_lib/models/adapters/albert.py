"""ALBERT adapter (HF ``AlbertModel`` and heads): one set of layers shared by every depth.

ALBERT stores ``num_hidden_groups`` layer groups of ``inner_group_num`` layers and applies group
``int(depth / (num_hidden_layers / num_hidden_groups))`` at each of the ``num_hidden_layers``
depths. The catalog's ``layer`` is the *stored* layer ``group · inner_group_num + inner``, not a
depth: with one group (every released ALBERT) there is one stored layer, so the battery's
cross-layer correlation has nothing to compare (correlation across depth is 1 by construction:
every depth applies the same matrices); with several groups it compares the groups.

Names (under ``albert.``)::

    embeddings.{word,position,token_type}_embeddings (width embedding_size), embeddings.LayerNorm
    encoder.embedding_hidden_mapping_in                          other (embedding -> hidden projection)
    encoder.albert_layer_groups.{g}.albert_layers.{j}.attention.{query,key,value,dense}   q / k / v / o
    ....albert_layers.{j}.ffn / ffn_output                       mlp_in / mlp_out
    ....albert_layers.{j}.{attention.LayerNorm,full_layer_layer_norm}   norm
    pooler, predictions.*, sop_classifier                        other (heads)
"""
from __future__ import annotations

import re
from dataclasses import replace

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)encoder\.albert_layer_groups\.(?P<group>\d+)\.albert_layers\.(?P<inner>\d+)\."
_RX = re.compile(_L)
RULES = rules(
    (_L + r"attention\.query\.", "q", "encoder", "self"),
    (_L + r"attention\.key\.", "k", "encoder", "self"),
    (_L + r"attention\.value\.", "v", "encoder", "self"),
    (_L + r"attention\.dense\.", "o", "encoder", "self"),
    (_L + r"ffn\.", "mlp_in", "encoder"),
    (_L + r"ffn_output\.", "mlp_out", "encoder"),
    (_L + r"(?:attention\.LayerNorm|full_layer_layer_norm)\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.(?:word|position|token_type)_embeddings\.weight$", "embed", "encoder"),
    (r"(?:^|\.)embeddings\.LayerNorm\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.(?:position_ids|token_type_ids)$", "other", "encoder", None, "buffer"),
    (r"(?:^|\.)encoder\.embedding_hidden_mapping_in\.", "other", "encoder", None, "embedding projection"),
    (r"(?:^|\.)(?:pooler|predictions|sop_classifier|classifier|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map ALBERT tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "albert", "hidden_size", "num_attention_heads")
    inner = int(config.get("inner_group_num") or 1)
    out = []
    for e in build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d)):
        m = _RX.search(e.name)  # the stored layer: group * inner_group_num + inner
        out.append(replace(e, layer=int(m["group"]) * inner + int(m["inner"])) if m else e)
    return out
