"""Decoder-only causal LMs (Llama, Mistral, Qwen2/3/3.5, Gemma, Phi-3, OLMo 2): one ``decoder`` stack, GQA.

Tiny models use Qwen3.5 (``model_type: qwen3_5_text``): hybrid Gated-DeltaNet
``linear_attention`` + gated GQA ``full_attention`` layers, ``num_key_value_heads <
num_attention_heads``.
"""
from __future__ import annotations

import torch.nn as nn

from ..models.adapters import decoder_lm as _adapter
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu


def _sizes(cfg: dict) -> Sizes:
    cfg = {**(cfg.get("text_config") or {}), **cfg} if isinstance(cfg.get("text_config"), dict) and \
        "hidden_size" not in cfg else cfg
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h,
                 head_dim=int(cfg.get("head_dim") or d // h), n_kv_heads=int(cfg.get("num_key_value_heads") or h))


def _text_hidden(model, stack, ids, mask, dec) -> list:
    out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    return hidden_to_cpu(out.hidden_states)


def encoder(model: nn.Module) -> nn.Module:
    """The base model under the LM head (final hidden state after the last norm)."""
    return model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model


def locate_blocks(model: nn.Module, stack: str):
    if stack not in ("decoder", "text"):
        fail("stack", f"decoder LMs have one stack 'decoder', got {stack!r}")
    base = encoder(model)
    if not hasattr(base, "layers"):
        fail("model", "decoder LM without a .layers ModuleList (unsupported architecture)")
    return base, base.layers


DECODER_LM = FamilySpec(
    name="decoder_lm", stacks=("decoder",), is_text=True, is_generative=True,
    auto_class="AutoModelForCausalLM",
    model_types=("llama", "mistral", "qwen2", "qwen3", "qwen3_5", "qwen3_5_text", "qwen3_next", "gemma", "gemma2",
                 "phi3", "olmo2"),
    sizes=_sizes, adapter=_adapter, text_hidden=_text_hidden,
    locate_blocks=locate_blocks, hook_stack={"encoder": "decoder"},
    encoder=encoder, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="qwen3_5_text", hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8, linear_num_key_heads=2,
                       linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                       layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                       max_position_embeddings=256, tie_word_embeddings=True),
    tiny_tokenizer="minilm",
)
