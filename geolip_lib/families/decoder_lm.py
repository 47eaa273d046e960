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


_CAUSAL_IDS = dict(bos_token_id=101, eos_token_id=102, pad_token_id=0)  # the minilm tokenizer's [CLS]/[SEP]/[PAD]
_BASE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             head_dim=8, max_position_embeddings=256, attention_dropout=0.0, **_CAUSAL_IDS)
_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16)
#: model_type -> its tiny config: every decoder the family covers by a config check alone (same tensor names)
TINY_TYPES: dict = {mt: dict(_BASE, **extra) for mt, extra in {
    "llama": {}, "mistral": {}, "qwen2": {}, "qwen3": {}, "gemma": {}, "gemma2": {}, "phi3": {}, "olmo2": {},
    "gemma3_text": {"sliding_window": 16}, "olmo": {}, "olmo3": {}, "granite": {}, "smollm3": {}, "helium": {},
    "glm4": {}, "cohere": {}, "cohere2": {}, "exaone4": {}, "seed_oss": {}, "arcee": {}, "ministral": {},
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen2_moe": dict(_MOE, shared_expert_intermediate_size=32, decoder_sparse_step=1),
    "qwen3_moe": dict(_MOE, decoder_sparse_step=1),
}.items()}


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


_QWEN35 = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
               head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
               linear_value_head_dim=8, max_position_embeddings=256,
               layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"])
TINY_TYPES["qwen3_5"] = dict(text_config=dict(_QWEN35, **_CAUSAL_IDS), tie_word_embeddings=True,
                             vision_config=dict(depth=1, hidden_size=32, num_heads=4, intermediate_size=64,
                                                out_hidden_size=32))
TINY_TYPES["qwen3_next"] = dict(_QWEN35, **_MOE, **_CAUSAL_IDS, shared_expert_intermediate_size=32,
                                decoder_sparse_step=1)

DECODER_LM = FamilySpec(
    name="decoder_lm", stacks=("decoder",), is_text=True, is_generative=True,
    auto_class="AutoModelForCausalLM",
    model_types=tuple(("llama", "mistral", "qwen2", "qwen3", "qwen3_5", "qwen3_5_text", "qwen3_next", "gemma", "gemma2",
                       "phi3", "olmo2") + tuple(k for k in TINY_TYPES if k not in ("qwen3_5_text", "qwen3_5", "qwen3_next",
                                                                     "llama", "mistral", "qwen2", "qwen3", "gemma",
                                                                     "gemma2", "phi3", "olmo2"))),
    sizes=_sizes, adapter=_adapter, text_hidden=_text_hidden,
    locate_blocks=locate_blocks, hook_stack={"encoder": "decoder"},
    encoder=encoder, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="qwen3_5_text", hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8, linear_num_key_heads=2,
                       linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                       layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                       max_position_embeddings=256, tie_word_embeddings=True),
    tiny_tokenizer="minilm", tiny_model_types=TINY_TYPES,
    left_out={"*": "RoPE", "gemma2": "RoPE, soft-cap",
              **{mt: "RoPE, q/k rms" for mt in ("qwen3", "qwen3_5", "qwen3_5_text", "qwen3_next", "qwen3_moe", "olmo2",
                                                 "olmo3", "gemma3_text", "exaone4")}},
    qk_statement="Decoder LMs: RoPE rotates q and k by position before q.k * scale (1/sqrt(head_dim), Gemma: "
                 "query_pre_attn_scalar^-1/2); the bilinear form W_q^T W_k (with the biases of Qwen2) is the score "
                 "at zero offset and leaves the rotation out. With per-head q/k RMSNorm (Qwen3, Qwen3.5, OLMo 2, "
                 "Gemma 3) the gains are folded into W_q and W_k (diag(g_q) W_q, diag(g_k) W_k) where the catalog "
                 "reads them; the per-token 1/rms(q), 1/rms(k) factors are not bilinear and are left out. Gemma 2 "
                 "soft-caps the scores (tanh(s / c) * c), also left out; Granite scales by attention_multiplier.",
)
