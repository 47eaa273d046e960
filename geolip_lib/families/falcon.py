"""Falcon (fused ``query_key_value`` in three layouts, multi-query / grouped KV, RoPE or ALiBi): one ``decoder`` stack.

:func:`canonical_tensor` writes every layout as [W_q; W_k; W_v] (see ``models/adapters/falcon.py``).
"""
from __future__ import annotations

import torch

from ..models.adapters import falcon as _adapter
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, canonical_by_name, causal_hidden, regroup_rows
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h, head_dim=d // h,
                 n_kv_heads=_adapter.kv_heads(cfg))


def _canonical(t, cfg):
    h = int(cfg["num_attention_heads"])
    hd, kv = int(cfg["hidden_size"]) // h, _adapter.kv_heads(cfg)
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
    model_types=("falcon",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "falcon"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="falcon", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       new_decoder_architecture=True, num_kv_heads=2, hidden_dropout=0.0, attention_dropout=0.0,
                       max_position_embeddings=128, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    canonical_tensor=canonical_by_name(_adapter.FUSED, _canonical),
    left_out={"*": "RoPE"},  # ALiBi instead with alibi: true
    qk_statement="Falcon: RoPE rotates q and k by position (or, with alibi: true, ALiBi adds a per-head linear "
                 "position term); the bilinear form W_q^T W_k is the content score at zero offset and leaves "
                 "the position term out.",
)
