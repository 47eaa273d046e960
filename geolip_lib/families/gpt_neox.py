"""GPT-NeoX / Pythia (fused ``query_key_value`` interleaved per head; partial rotary): one ``decoder`` stack.

:func:`canonical_tensor` regroups ``query_key_value`` from ``(n_heads, 3, head_dim)`` rows to
``(3, n_heads, head_dim)`` ([W_q; W_k; W_v]); the loader writes that copy (``.cache/safetensors/``).
"""
from __future__ import annotations

from ..models.adapters import gpt_neox as _adapter
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, d_heads, regroup_rows
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


def _regroup(t, cfg):
    h = int(cfg["num_attention_heads"])
    return regroup_rows(t, (h, 3), int(cfg["hidden_size"]) // h)


GPT_NEOX = FamilySpec(
    name="gpt_neox", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gpt_neox",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "layers", "text": "layers"}, "gpt_neox"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gpt_neox", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=128, rotary_pct=0.5, hidden_dropout=0.0,
                       attention_dropout=0.0, tie_word_embeddings=False, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(_adapter.FUSED, _regroup),
    left_out={"*": "RoPE"},
    qk_statement="GPT-NeoX: RoPE rotates the first rotary_pct*head_dim dimensions of q and k by position before "
                 "q.k/sqrt(head_dim); the bilinear form W_q^T W_k (with the biases) is the score at zero offset "
                 "and leaves the rotation out.",
)
