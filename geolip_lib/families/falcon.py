"""Falcon (fused ``query_key_value`` in three layouts, multi-query / grouped KV, RoPE or ALiBi): one ``decoder`` stack.

:func:`canonical_tensor` writes every layout as [W_q; W_k; W_v] (see the weight names below).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
Falcon adapter (HF ``FalconModel`` / ``FalconForCausalLM``), canonical layout; RoPE or ALiBi.

The stored ``query_key_value`` has one of three layouts (HF ``FalconAttention._split_heads``):
``new_decoder_architecture`` — rows ``(n_kv, group + 2, head_dim)`` (the group's queries, then
its key and value); ``multi_query`` — [W_q (n_heads·head_dim); W_k (head_dim); W_v (head_dim)];
otherwise ``(n_heads, 3, head_dim)`` like BLOOM. The loader writes all three as
[W_q; W_k; W_v] (the spec's ``canonical_tensor``). Names (under ``transformer.``)::

    word_embeddings.weight                                 embed
    h.{i}.self_attention.query_key_value                   qkv -> q / k / v (self, decoder; GQA / MQA)
    h.{i}.self_attention.dense                             o
    h.{i}.mlp.dense_h_to_4h / dense_4h_to_h                mlp_in / mlp_out
    h.{i}.{input_layernorm,post_attention_layernorm,ln_attn,ln_mlp}, ln_f   norm
    lm_head.weight                                         unembed

Scores: ``q·k / sqrt(head_dim)`` after RoPE (``alibi: false``, the default) or plus ALiBi.
"""
from __future__ import annotations


from ..checkpoints.rules import Heads, build, need
from .bloom import FUSED, RULES  # the same tensor names (Falcon was derived from BLOOM's code)
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, regroup_rows
from .spec import FamilySpec, Sizes
from ..lazy import lazy

torch = lazy("torch")


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


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h, head_dim=d // h,
                 n_kv_heads=kv_heads(cfg))


def _canonical(t, cfg):
    h = int(cfg["num_attention_heads"])
    hd, kv = int(cfg["hidden_size"]) // h, kv_heads(cfg)
    if cfg.get("new_decoder_architecture"):  # (kv, group + 2, hd): the group's queries, its key, its value
        g = h // kv
        rest = t.shape[1:]
        x = t.reshape(kv, g + 2, hd, *rest)
        return torch.cat([x[:, :g].reshape(h * hd, *rest), x[:, g].reshape(kv * hd, *rest),
                          x[:, g + 1].reshape(kv * hd, *rest)]).contiguous()
    if kv == 1:  # multi-query: already [Q; K; V]
        return t
    return regroup_rows(t, (h, 3), hd)


FALCON = FamilySpec(
    name="falcon", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("falcon",), sizes=_sizes, adapt=adapt, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "falcon"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="falcon", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       new_decoder_architecture=True, num_kv_heads=2, hidden_dropout=0.0, attention_dropout=0.0,
                       max_position_embeddings=128, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(FUSED, _canonical),
    left_out={"*": "RoPE"},  # ALiBi instead with alibi: true
    qk_statement="Falcon: RoPE rotates q and k by position (or, with alibi: true, ALiBi adds a per-head linear "
                 "position term); the bilinear form W_q^T W_k is the content score at zero offset and leaves "
                 "the position term out.",
)
