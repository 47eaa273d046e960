"""GPT-J (separate q/k/v without bias, rotary on ``rotary_dim`` dimensions, parallel block): one ``decoder`` stack."""
from __future__ import annotations

from ..models.adapters import gptj as _adapter
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, causal_hidden, d_heads
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "n_embd", "n_head", layers_key="n_layer")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


GPTJ = FamilySpec(
    name="gptj", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("gptj",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "h", "text": "h"}, "gptj"), hook_stack={"encoder": "decoder"},
    encoder=lambda model: model.base_model, encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="gptj", n_embd=32, n_layer=2, n_head=4, n_inner=64, rotary_dim=4, n_positions=128,
                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False, **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    left_out={"*": "RoPE"},
    qk_statement="GPT-J: RoPE (interleaved pairs) rotates the first rotary_dim dimensions of q and k by position; "
                 "the bilinear form W_q^T W_k is the score at zero offset and leaves the rotation out.",
)
