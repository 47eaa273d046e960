"""BLOOM adapter (HF ``BloomModel`` / ``BloomForCausalLM``), canonical layout; ALiBi positions.

The stored ``query_key_value`` interleaves per head (rows ``(n_heads, 3, head_dim)``); the loader
writes it as [W_q; W_k; W_v] (``families/bloom.py``), bias likewise. Names (under ``transformer.``)::

    word_embeddings.weight, word_embeddings_layernorm       embed, norm
    h.{i}.self_attention.query_key_value                    qkv -> q / k / v (self, decoder)
    h.{i}.self_attention.dense                              o
    h.{i}.mlp.dense_h_to_4h / dense_4h_to_h                 mlp_in / mlp_out
    h.{i}.{input,post_attention}_layernorm, ln_f            norm
    lm_head.weight                                          unembed (tied: absent)

Scores: ``q·k / sqrt(head_dim) + m_h · j`` — ALiBi adds a per-head slope ``m_h`` times the key
position ``j`` (equivalently ``-m_h (i - j)`` after the softmax's row shift); the bilinear form
holds the content term only.
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)h\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"self_attention\.query_key_value\.", "qkv", "decoder", "self"),
    (_L + r"self_attention\.dense\.", "o", "decoder", "self"),
    (_L + r"mlp\.dense_h_to_4h\.", "mlp_in", "decoder"),
    (_L + r"mlp\.dense_4h_to_h\.", "mlp_out", "decoder"),
    # Falcon (derived from BLOOM's code) shares these names and adds ln_attn / ln_mlp: adapters/falcon.py reuses RULES
    (_L + r"(?:input_layernorm|post_attention_layernorm|ln_attn|ln_mlp)\.", "norm", "decoder"),
    (r"(?:^|\.)word_embeddings\.weight$", "embed", "decoder"),
    (r"(?:^|\.)(?:word_embeddings_layernorm|ln_f)\.", "norm", "decoder"),
    (r"(?:^|\.)lm_head\.weight$", "unembed", None),
    (r"(?:^|\.)(?:score|qa_outputs)\.", "other", None, None, "task head"),
)
FUSED = r"(?:^|\.)h\.\d+\.self_attention\.query_key_value\.(?:weight|bias)$"


def adapt(tensors, config) -> list:
    """Map BLOOM tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "bloom", "hidden_size", "n_head")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))
