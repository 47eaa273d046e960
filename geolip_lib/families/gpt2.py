"""GPT-2 (``Conv1D`` projections, fused ``c_attn``): one ``decoder`` stack, learned absolute positions.

The checkpoint stores every ``Conv1D`` weight as ``(in, out)``; :func:`canonical_tensor` transposes
them to ``(out, in)`` (the layout of ``nn.Linear`` and of every other adapter), so the fused
``c_attn`` becomes [W_q; W_k; W_v] of shape ``(3·D, D)``: the loader writes that copy once to
``.cache/safetensors/`` and the weight battery and QK operators read it (TransformerLens converts
GPT-2 the same way).
"""
from __future__ import annotations

from ..models.adapters import gpt2 as _adapter
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads
from .spec import FamilySpec, Sizes

CAUSAL_IDS = dict(bos_token_id=101, eos_token_id=102, pad_token_id=0)  # the minilm tokenizer's [CLS]/[SEP]/[PAD]


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "n_embd", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


GPT2 = FamilySpec(
    name="gpt2", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gpt2",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "gpt2"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gpt2", n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=128,
                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(_adapter.CONV1D, lambda t, cfg: t.t().contiguous()),
    qk_statement="GPT-2: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds "
                 "the x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
