"""BLOOM (fused ``query_key_value`` interleaved per head, ALiBi): one ``decoder`` stack.

:func:`canonical_tensor` regroups ``query_key_value`` as [W_q; W_k; W_v] (see ``gpt_neox.py``).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
BLOOM adapter (HF ``BloomModel`` / ``BloomForCausalLM``), canonical layout; ALiBi positions.

The stored ``query_key_value`` interleaves per head (rows ``(n_heads, 3, head_dim)``); the loader
writes it as [W_q; W_k; W_v] (the spec's ``canonical_tensor``), bias likewise. Names (under ``transformer.``)::

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

from ..checkpoints.rules import Heads, build, need, rules
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads, regroup_rows
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)h\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"self_attention\.query_key_value\.", "qkv", "decoder", "self"),
    (_L + r"self_attention\.dense\.", "o", "decoder", "self"),
    (_L + r"mlp\.dense_h_to_4h\.", "mlp_in", "decoder"),
    (_L + r"mlp\.dense_4h_to_h\.", "mlp_out", "decoder"),
    # Falcon (derived from BLOOM's code) shares these names and adds ln_attn / ln_mlp: falcon.py reuses RULES
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


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


def _regroup(t, cfg):
    h = int(cfg["n_head"])
    return regroup_rows(t, (h, 3), int(cfg["hidden_size"]) // h)


BLOOM = FamilySpec(
    name="bloom", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("bloom",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "bloom"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="bloom", hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
                       attention_dropout=0.0, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(FUSED, _regroup),
    left_out={"*": "ALiBi"},
    qk_statement="BLOOM: ALiBi adds slope_h * (key position) to each score (a per-head linear distance penalty "
                 "after the softmax's row shift); the bilinear form W_q^T W_k (with the biases) holds the content "
                 "term q.k/sqrt(head_dim) only.",
)
