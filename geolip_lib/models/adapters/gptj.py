"""GPT-J adapter (HF ``GPTJModel`` / ``GPTJForCausalLM``): separate q/k/v without biases, parallel block.

Names (under ``transformer.``)::

    wte.weight                                     embed
    h.{i}.attn.{q,k,v}_proj, h.{i}.attn.out_proj   q / k / v / o (self, decoder)
    h.{i}.mlp.fc_in / mlp.fc_out                   mlp_in / mlp_out
    h.{i}.ln_1, ln_f                               norm
    lm_head.{weight,bias}                          unembed

Scores: ``q·k / sqrt(head_dim)`` after rotary embedding (interleaved pairs) of the first
``rotary_dim`` dimensions of q and k (RoPE: not in the bilinear form).
"""
from __future__ import annotations

from .rules import Heads, build, need, rules

_L = r"(?:^|\.)h\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attn\.q_proj\.", "q", "decoder", "self"),
    (_L + r"attn\.k_proj\.", "k", "decoder", "self"),
    (_L + r"attn\.v_proj\.", "v", "decoder", "self"),
    (_L + r"attn\.out_proj\.", "o", "decoder", "self"),
    (_L + r"attn\.(?:bias|masked_bias|embed_positions)$", "other", "decoder", None, "buffer"),
    (_L + r"mlp\.fc_in\.", "mlp_in", "decoder"),
    (_L + r"mlp\.fc_out\.", "mlp_out", "decoder"),
    (_L + r"ln_1\.", "norm", "decoder"),
    (r"(?:^|\.)wte\.weight$", "embed", "decoder"),
    (r"(?:^|\.)ln_f\.", "norm", "decoder"),
    (r"(?:^|\.)lm_head\.", "unembed", None),
    (r"(?:^|\.)(?:score|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map GPT-J tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "gptj", "n_embd", "n_head")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))
