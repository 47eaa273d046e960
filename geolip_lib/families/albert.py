"""ALBERT (one set of layers shared by every depth; factorised embedding): one ``encoder`` stack.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
ALBERT adapter (HF ``AlbertModel`` and heads): one set of layers shared by every depth.

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

from ..checkpoints.rules import Heads, build, need, rules
from .hf import base, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes

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


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


SHARED = ("ALBERT applies one stored layer group at every depth (num_hidden_groups groups of inner_group_num "
          "layers for num_hidden_layers depths): the catalog's layers are the stored layers, so with one group "
          "cross-layer correlation has nothing to compare (across depth it is 1 by construction) and per-layer "
          "tables have one row for all depths; hidden states still vary by depth.")

ALBERT = FamilySpec(
    name="albert", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("albert",), sizes=_sizes, adapt=adapt, text_hidden=encoder_hidden,
    locate_blocks=None,  # modulator hooks: not defined (one stored layer runs at every depth)
    encoder=base, objective="embedding_regression",
    tiny_defaults=dict(model_type="albert", embedding_size=16, hidden_size=32, num_hidden_layers=3,
                       num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0),
    tiny_tokenizer="minilm", shared_layers=SHARED,
    qk_statement="ALBERT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) with the same W_q, W_k "
                 "at every depth; the bilinear form holds the x W_q^T W_k x term, the bias terms are extra.",
)
