"""MPNet (BERT-like encoder with a T5-style relative position bias): one ``encoder`` stack.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
MPNet adapter (HF ``MPNetModel`` / ``MPNetForMaskedLM``; sentence-transformers' all-mpnet-base-v2).

Names (optionally under ``mpnet.``)::

    embeddings.{word,position}_embeddings.weight               embed
    embeddings.LayerNorm.{weight,bias}                         norm / bias
    embeddings.position_ids                                    other (buffer)
    encoder.layer.{i}.attention.attn.{q,k,v,o}.weight          q / k / v / o (self, encoder)
    encoder.layer.{i}.attention.LayerNorm.weight               norm
    encoder.layer.{i}.intermediate.dense.weight                mlp_in (GELU)
    encoder.layer.{i}.output.dense.weight                      mlp_out
    encoder.layer.{i}.output.LayerNorm.weight                  norm
    encoder.relative_attention_bias.weight                     pos_bias (32 buckets, heads): one table every layer reads
    lm_head.decoder.weight                                     unembed (tied: absent)
    pooler.*, lm_head.{dense,layer_norm,bias}, classifier.*    other (task head)

Scores: ``(x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) + bias[bucket(j - i), head]``: the encoder computes the
relative position bias once (bidirectional buckets as T5's encoder, max distance 128) and adds it in every layer;
absolute positions are also added to the input (post-norm).
"""
from __future__ import annotations

from dataclasses import replace

from ..checkpoints.rules import Heads, build, need, rules
from .hf import base, blocks_at, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)encoder\.layer\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attention\.attn\.q\.", "q", "encoder", "self"),
    (_L + r"attention\.attn\.k\.", "k", "encoder", "self"),
    (_L + r"attention\.attn\.v\.", "v", "encoder", "self"),
    (_L + r"attention\.attn\.o\.", "o", "encoder", "self"),
    (_L + r"intermediate\.dense\.", "mlp_in", "encoder"),
    (_L + r"output\.dense\.", "mlp_out", "encoder"),
    (_L + r"(?:attention\.LayerNorm|output\.LayerNorm)\.", "norm", "encoder"),
    (r"(?:^|\.)encoder\.relative_attention_bias\.weight$", "pos_bias", "encoder"),
    (r"(?:^|\.)embeddings\.(?:word|position)_embeddings\.weight$", "embed", "encoder"),
    (r"(?:^|\.)embeddings\.LayerNorm\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.position_ids$", "other", "encoder", None, "buffer"),
    (r"(?:^|\.)lm_head\.decoder\.weight$", "unembed", None),
    (r"(?:^|\.)(?:pooler|lm_head|classifier|qa_outputs)\.", "other", None, None, "task head"),
)


def adapt(tensors, config) -> list:
    """Map MPNet tensor names to catalog entries (see the module docstring).

    The relative position bias is one ``(buckets, heads)`` table of the encoder's self-attention, shared by
    every layer (layer None), like T5's first-layer table.
    """
    d, h = need(config, "mpnet", "hidden_size", "num_attention_heads")
    out = []
    for e in build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d)):
        if e.role == "pos_bias":
            if len(e.shape) != 2 or e.shape[1] != h:
                raise ValueError(f"weights: tensor {e.name!r} has shape {e.shape}, expected (num_buckets, {h}) "
                                 "(config and checkpoint disagree)")
            e = replace(e, attn="self", n_heads=h)
        out.append(e)
    return out


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


MPNET = FamilySpec(
    name="mpnet", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("mpnet",), sizes=_sizes, adapt=adapt, text_hidden=encoder_hidden,
    locate_blocks=blocks_at({"encoder": "encoder.layer", "text": "encoder.layer"}, "mpnet"),
    encoder=base, objective="embedding_regression",
    # transformers' MPNetEncoder.compute_position_bias always buckets with 32 (its default), whatever the config says
    tiny_defaults=dict(model_type="mpnet", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=130, relative_attention_num_buckets=32,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0),
    tiny_tokenizer="minilm",
    left_out={"*": "relative bias"},
    qk_statement="MPNet: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) plus a learned relative-position "
                 "bias per head and distance bucket (one table, computed once by the encoder and added in every "
                 "layer); the bilinear form W_q^T W_k holds the x W_q^T W_k x term and leaves the relative bias "
                 "(and the q/k bias terms) out.",
)
