"""OPT adapter (HF ``OPTModel`` / ``OPTForCausalLM``): separate q/k/v/out projections with biases.

Names (under ``model.``)::

    decoder.embed_tokens, decoder.embed_positions (offset 2)   embed
    decoder.layers.{i}.self_attn.{q,k,v,out}_proj              q / k / v / o (self, decoder)
    decoder.layers.{i}.fc1 / fc2                               mlp_in / mlp_out (ReLU)
    decoder.layers.{i}.{self_attn_layer_norm,final_layer_norm}, decoder.final_layer_norm   norm
    decoder.project_in / project_out                           other (embedding projection, OPT-350m)
    lm_head.weight                                             unembed (tied: absent)

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)``; positions are added to the input.
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)decoder\.layers\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"self_attn\.q_proj\.", "q", "decoder", "self"),
    (_L + r"self_attn\.k_proj\.", "k", "decoder", "self"),
    (_L + r"self_attn\.v_proj\.", "v", "decoder", "self"),
    (_L + r"self_attn\.out_proj\.", "o", "decoder", "self"),
    (_L + r"fc1\.", "mlp_in", "decoder"),
    (_L + r"fc2\.", "mlp_out", "decoder"),
    (_L + r"(?:self_attn_layer_norm|final_layer_norm)\.", "norm", "decoder"),
    (r"(?:^|\.)decoder\.embed_(?:tokens|positions)\.weight$", "embed", "decoder"),
    (r"(?:^|\.)decoder\.final_layer_norm\.", "norm", "decoder"),
    (r"(?:^|\.)decoder\.project_(?:in|out)\.", "other", "decoder", None, "embedding projection"),
    (r"(?:^|\.)lm_head\.weight$", "unembed", None),
    (r"(?:^|\.)(?:score|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map OPT tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "opt", "hidden_size", "num_attention_heads")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))
