"""DistilBERT (BERT-like, ``q_lin``/``k_lin``/...): one ``encoder`` stack, absolute positions."""
from __future__ import annotations

from ..models.adapters import distilbert as _adapter
from .hf import base, blocks_at, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "dim", "n_heads", layers_key="n_layers")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


DISTILBERT = FamilySpec(
    name="distilbert", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("distilbert",), sizes=_sizes, adapter=_adapter, text_hidden=encoder_hidden,
    locate_blocks=blocks_at({"encoder": "transformer.layer", "text": "transformer.layer"}, "distilbert"),
    encoder=base, objective="embedding_regression",
    tiny_defaults=dict(model_type="distilbert", dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                       max_position_embeddings=128, dropout=0.0, attention_dropout=0.0),
    tiny_tokenizer="minilm",
    qk_statement="DistilBERT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form "
                 "holds the x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
