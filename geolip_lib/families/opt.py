"""OPT (separate q/k/v/out with biases, learned positions with offset 2): one ``decoder`` stack.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
OPT adapter (HF ``OPTModel`` / ``OPTForCausalLM``): separate q/k/v/out projections with biases.

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

from ..checkpoints.rules import Heads, build, need, rules
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, causal_hidden, d_heads
from .spec import FamilySpec, Sizes

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


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


OPT = FamilySpec(
    name="opt", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("opt",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "decoder.layers", "text": "decoder.layers"}, "opt"),
    hook_stack={"encoder": "decoder"}, encoder=lambda model: model.base_model.decoder,
    encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="opt", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                       word_embed_proj_dim=32, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                       **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    qk_statement="OPT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds the "
                 "x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
