"""BLOOM (fused ``query_key_value`` interleaved per head, ALiBi): one ``decoder`` stack.

:func:`canonical_tensor` regroups ``query_key_value`` as [W_q; W_k; W_v] (see ``gpt_neox.py``).
"""
from __future__ import annotations

from ..models.adapters import bloom as _adapter
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads, regroup_rows
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


def _regroup(t, cfg):
    h = int(cfg["n_head"])
    return regroup_rows(t, (h, 3), int(cfg["hidden_size"]) // h)


BLOOM = FamilySpec(
    name="bloom", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("bloom",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "bloom"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="bloom", hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
                       attention_dropout=0.0, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(_adapter.FUSED, _regroup),
    left_out={"*": "ALiBi"},
    qk_statement="BLOOM: ALiBi adds slope_h * (key position) to each score (a per-head linear distance penalty "
                 "after the softmax's row shift); the bilinear form W_q^T W_k (with the biases) holds the content "
                 "term q.k/sqrt(head_dim) only.",
)
