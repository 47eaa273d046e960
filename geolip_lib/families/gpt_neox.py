"""GPT-NeoX / Pythia (fused ``query_key_value`` interleaved per head; partial rotary): one ``decoder`` stack.

:func:`canonical_tensor` regroups ``query_key_value`` from ``(n_heads, 3, head_dim)`` rows to
``(3, n_heads, head_dim)`` ([W_q; W_k; W_v]); the loader writes that copy (``.cache/safetensors/``).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
GPT-NeoX / Pythia adapter (HF ``GPTNeoXModel`` / ``GPTNeoXForCausalLM``), canonical layout.

The stored ``query_key_value`` interleaves per head (rows ``(n_heads, 3, head_dim)``: q_h, k_h,
v_h of head 0, then head 1, ...); the loader writes it as [W_q; W_k; W_v] (``(3, n_heads,
head_dim)`` rows, the spec's ``canonical_tensor``), bias likewise. Names (under ``gpt_neox.``)::

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

from ..checkpoints.rules import Heads, build, need, rules
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads, regroup_rows
from .spec import FamilySpec, Sizes

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


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


def _regroup(t, cfg):
    h = int(cfg["num_attention_heads"])
    return regroup_rows(t, (h, 3), int(cfg["hidden_size"]) // h)


GPT_NEOX = FamilySpec(
    name="gpt_neox", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gpt_neox",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "layers", "text": "layers"}, "gpt_neox"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gpt_neox", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=128, rotary_pct=0.5, hidden_dropout=0.0,
                       attention_dropout=0.0, tie_word_embeddings=False, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(FUSED, _regroup),
    left_out={"*": "RoPE"},
    qk_statement="GPT-NeoX: RoPE rotates the first rotary_pct*head_dim dimensions of q and k by position before "
                 "q.k/sqrt(head_dim); the bilinear form W_q^T W_k (with the biases) is the score at zero offset "
                 "and leaves the rotation out.",
)
