"""OPT (separate q/k/v/out with biases, learned positions with offset 2): one ``decoder`` stack."""
from __future__ import annotations

from ..models.adapters import opt as _adapter
from .gpt2 import CAUSAL_IDS
from .hf import blocks_at, causal_hidden, d_heads
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


OPT = FamilySpec(
    name="opt", stacks=("decoder",), is_text=True, is_generative=True, auto_class="AutoModelForCausalLM",
    model_types=("opt",), sizes=_sizes, adapter=_adapter, text_hidden=causal_hidden,
    locate_blocks=blocks_at({"decoder": "decoder.layers", "text": "decoder.layers"}, "opt"),
    hook_stack={"encoder": "decoder"}, encoder=lambda model: model.base_model.decoder,
    encoder_kwargs={"use_cache": False}, objective="causal_completion",
    tiny_defaults=dict(model_type="opt", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                       word_embed_proj_dim=32, max_position_embeddings=128, dropout=0.0, attention_dropout=0.0,
                       **CAUSAL_IDS),
    tiny_tokenizer="minilm",
    qk_statement="OPT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds the "
                 "x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
