"""BART-like encoder–decoders (BART, mBART, Pegasus, Marian): like T5 without relative position buckets.

Names (under ``model.``)::

    shared.weight, {encoder,decoder}.embed_tokens, {encoder,decoder}.embed_positions   embed
    {encoder,decoder}.layers.{i}.self_attn.{q,k,v,out}_proj     q / k / v / o (self)
    decoder.layers.{i}.encoder_attn.{q,k,v,out}_proj            q / k / v / o (cross)
    {stack}.layers.{i}.fc1 / fc2                                mlp_in / mlp_out
    {stack}.layers.{i}.{self_attn,encoder_attn,final}_layer_norm, {stack}.layernorm_embedding, {stack}.layer_norm   norm
    lm_head.weight, final_logits_bias                           unembed, bias

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)``; positions (learned with offset 2
in BART / mBART, sinusoidal in Pegasus / Marian) are added to the input: no position term
inside attention.
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)(?P<stack>encoder|decoder)\.layers\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"self_attn\.q_proj\.", "q", None, "self"),
    (_L + r"self_attn\.k_proj\.", "k", None, "self"),
    (_L + r"self_attn\.v_proj\.", "v", None, "self"),
    (_L + r"self_attn\.out_proj\.", "o", None, "self"),
    (_L + r"encoder_attn\.q_proj\.", "q", None, "cross"),
    (_L + r"encoder_attn\.k_proj\.", "k", None, "cross"),
    (_L + r"encoder_attn\.v_proj\.", "v", None, "cross"),
    (_L + r"encoder_attn\.out_proj\.", "o", None, "cross"),
    (_L + r"fc1\.", "mlp_in", None),
    (_L + r"fc2\.", "mlp_out", None),
    (_L + r"(?:self_attn_layer_norm|encoder_attn_layer_norm|final_layer_norm)\.", "norm", None),
    (r"(?:^|\.)shared\.weight$", "embed", None),
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.embed_(?:tokens|positions)\.weight$", "embed", None),
    (r"(?:^|\.)(?P<stack>encoder|decoder)\.(?:layernorm_embedding|layer_norm)\.", "norm", None),
    (r"(?:^|\.)lm_head\.weight$", "unembed", None),
    (r"(?:^|\.)final_logits_bias$", "bias", None),
    (r"(?:^|\.)(?:classification_head|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map BART-like tensor names to catalog entries (see the module docstring)."""
    d, he, hd_ = need(config, "bart", "d_model", "encoder_attention_heads", "decoder_attention_heads")

    def heads(stack, attn):
        h = hd_ if stack == "decoder" else he
        return Heads(h, d // h, h, d)
    return build(tensors, RULES, heads)
