"""GPT-NeoX / Pythia adapter (HF ``GPTNeoXModel`` / ``GPTNeoXForCausalLM``), canonical layout.

The stored ``query_key_value`` interleaves per head (rows ``(n_heads, 3, head_dim)``: q_h, k_h,
v_h of head 0, then head 1, ...); the loader writes it as [W_q; W_k; W_v] (``(3, n_heads,
head_dim)`` rows, ``families/gpt_neox.py``), bias likewise. Names (under ``gpt_neox.``)::

    embed_in.weight                                   embed
    layers.{i}.attention.query_key_value              qkv -> q / k / v (self, decoder)
    layers.{i}.attention.dense                        o
    layers.{i}.mlp.dense_h_to_4h / dense_4h_to_h      mlp_in / mlp_out
    layers.{i}.{input,post_attention}_layernorm, final_layer_norm   norm
    embed_out.weight                                  unembed

Scores: ``q·k / sqrt(head_dim)`` after rotary embedding of the first ``rotary_pct·head_dim``
dimensions of q and k (RoPE: not in the bilinear form).
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)layers\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attention\.query_key_value\.", "qkv", "decoder", "self"),
    (_L + r"attention\.dense\.", "o", "decoder", "self"),
    (_L + r"attention\.(?:rotary_emb\.inv_freq|bias|masked_bias)$", "other", "decoder", None, "buffer"),
    (_L + r"mlp\.dense_h_to_4h\.", "mlp_in", "decoder"),
    (_L + r"mlp\.dense_4h_to_h\.", "mlp_out", "decoder"),
    (_L + r"(?:input|post_attention)_layernorm\.", "norm", "decoder"),
    (r"(?:^|\.)embed_in\.weight$", "embed", "decoder"),
    (r"(?:^|\.)final_layer_norm\.", "norm", "decoder"),
    (r"(?:^|\.)embed_out\.weight$", "unembed", None),
    (r"(?:^|\.)(?:score|classifier|qa_outputs)\.", "other", None, None, "task head"),
)
#: fused projections stored interleaved per head (the loader's canonical copy regroups them)
FUSED = r"(?:^|\.)layers\.\d+\.attention\.query_key_value\.(?:weight|bias)$"


def adapt(tensors, config) -> list:
    """Map GPT-NeoX tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "gpt_neox", "hidden_size", "num_attention_heads")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))
