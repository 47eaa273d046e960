"""Falcon adapter (HF ``FalconModel`` / ``FalconForCausalLM``), canonical layout; RoPE or ALiBi.

The stored ``query_key_value`` has one of three layouts (HF ``FalconAttention._split_heads``):
``new_decoder_architecture`` — rows ``(n_kv, group + 2, head_dim)`` (the group's queries, then
its key and value); ``multi_query`` — [W_q (n_heads·head_dim); W_k (head_dim); W_v (head_dim)];
otherwise ``(n_heads, 3, head_dim)`` like BLOOM. The loader writes all three as
[W_q; W_k; W_v] (``families/falcon.py``). Names (under ``transformer.``)::

    word_embeddings.weight                                 embed
    h.{i}.self_attention.query_key_value                   qkv -> q / k / v (self, decoder; GQA / MQA)
    h.{i}.self_attention.dense                             o
    h.{i}.mlp.dense_h_to_4h / dense_4h_to_h                mlp_in / mlp_out
    h.{i}.{input_layernorm,post_attention_layernorm,ln_attn,ln_mlp}, ln_f   norm
    lm_head.weight                                         unembed

Scores: ``q·k / sqrt(head_dim)`` after RoPE (``alibi: false``, the default) or plus ALiBi.
"""
from __future__ import annotations

from .bloom import FUSED, RULES  # the same tensor names (Falcon was derived from BLOOM's code)
from .rules import Heads, build, need


def kv_heads(config: dict) -> int:
    """Key/value heads of a Falcon config (its three attention layouts)."""
    h = int(config["num_attention_heads"])
    if config.get("new_decoder_architecture"):
        return int(config.get("num_kv_heads") or h)
    return 1 if config.get("multi_query", True) else h


def adapt(tensors, config) -> list:
    """Map Falcon tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "falcon", "hidden_size", "num_attention_heads")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, kv_heads(config), d))
