"""DistilBERT (BERT-like, ``q_lin``/``k_lin``/...): one ``encoder`` stack, absolute positions.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
DistilBERT adapter (HF ``DistilBertModel`` and heads): BERT-like, one ``encoder`` stack.

Names (under ``distilbert.``)::

    embeddings.{word,position}_embeddings.weight, embeddings.LayerNorm   embed, norm
    transformer.layer.{i}.attention.{q,k,v,out}_lin         q / k / v / o (self, encoder)
    transformer.layer.{i}.ffn.lin1 / ffn.lin2               mlp_in / mlp_out (GELU)
    transformer.layer.{i}.{sa_layer_norm,output_layer_norm} norm
    vocab_transform, vocab_layer_norm, vocab_projector      other (MLM head; projector tied)

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim)`` (post-norm; absolute positions).
"""
from __future__ import annotations

from ..checkpoints.rules import Heads, build, need, rules
from .hf import base, blocks_at, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)transformer\.layer\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attention\.q_lin\.", "q", "encoder", "self"),
    (_L + r"attention\.k_lin\.", "k", "encoder", "self"),
    (_L + r"attention\.v_lin\.", "v", "encoder", "self"),
    (_L + r"attention\.out_lin\.", "o", "encoder", "self"),
    (_L + r"ffn\.lin1\.", "mlp_in", "encoder"),
    (_L + r"ffn\.lin2\.", "mlp_out", "encoder"),
    (_L + r"(?:sa_layer_norm|output_layer_norm)\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.(?:word|position)_embeddings\.weight$", "embed", "encoder"),
    (r"(?:^|\.)embeddings\.LayerNorm\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.position_ids$", "other", "encoder", None, "buffer"),
    (r"(?:^|\.)(?:vocab_transform|vocab_layer_norm|vocab_projector|pre_classifier|classifier|qa_outputs)\.",
     "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map DistilBERT tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "distilbert", "dim", "n_heads")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "dim", "n_heads", layers_key="n_layers")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


DISTILBERT = FamilySpec(
    name="distilbert", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("distilbert",), sizes=_sizes, adapt=adapt, text_hidden=encoder_hidden,
    locate_blocks=blocks_at({"encoder": "transformer.layer", "text": "transformer.layer"}, "distilbert"),
    encoder=base, objective="embedding_regression",
    tiny_defaults=dict(model_type="distilbert", dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                       max_position_embeddings=128, dropout=0.0, attention_dropout=0.0),
    tiny_tokenizer="minilm",
    qk_statement="DistilBERT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form "
                 "holds the x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
)
