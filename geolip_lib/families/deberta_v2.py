"""DeBERTa-v2 / v3 (disentangled attention: content and relative-position terms): one ``encoder`` stack.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
DeBERTa-v2 / v3 adapter (HF ``DebertaV2Model`` and heads): disentangled attention.

Names (under ``deberta.``)::

    embeddings.word_embeddings, embeddings.position_embeddings (absent when position_biased_input=False)   embed
    encoder.layer.{i}.attention.self.{query_proj,key_proj,value_proj}   q / k / v (self, encoder)
    encoder.layer.{i}.attention.self.pos_{key,query}_proj               other (relative-position projections)
    encoder.layer.{i}.attention.output.dense                            o
    encoder.layer.{i}.intermediate.dense / output.dense                 mlp_in / mlp_out
    encoder.layer.{i}.{attention.output,output}.LayerNorm, encoder.LayerNorm, embeddings.LayerNorm   norm
    encoder.rel_embeddings                                              other (relative-position embeddings)
    encoder.conv.*                                                      other (ConvLayer of DeBERTa-v2-xlarge)

Scores: content-to-content ``(x W_q^T + b_q)(x W_k^T + b_k)^T`` plus, with ``relative_attention``,
the content-to-position and position-to-content terms of ``pos_att_type`` (``c2p``, ``p2c``),
all divided by ``sqrt(head_dim · (1 + len(pos_att_type)))``. The bilinear form is the
content-to-content term with that scale (:func:`attn_scale`); the relative terms are left out.
"""
from __future__ import annotations

from ..checkpoints.rules import Heads, build, need, rules
from .hf import base, blocks_at, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes

_L = r"(?:^|\.)encoder\.layer\.(?P<layer>\d+)\."
RULES = rules(
    (_L + r"attention\.self\.query_proj\.", "q", "encoder", "self"),
    (_L + r"attention\.self\.key_proj\.", "k", "encoder", "self"),
    (_L + r"attention\.self\.value_proj\.", "v", "encoder", "self"),
    (_L + r"attention\.self\.pos_(?:key|query)_proj\.", "other", "encoder", None, "relative-position projection"),
    (_L + r"attention\.output\.dense\.", "o", "encoder", "self"),
    (_L + r"intermediate\.dense\.", "mlp_in", "encoder"),
    (_L + r"output\.dense\.", "mlp_out", "encoder"),
    (_L + r"(?:attention\.output|output)\.LayerNorm\.", "norm", "encoder"),
    (r"(?:^|\.)embeddings\.(?:word|position|token_type)_embeddings\.weight$", "embed", "encoder"),
    (r"(?:^|\.)embeddings\.embed_proj\.", "other", "encoder", None, "embedding projection"),
    (r"(?:^|\.)(?:embeddings|encoder)\.LayerNorm\.", "norm", "encoder"),
    (r"(?:^|\.)encoder\.rel_embeddings\.", "other", "encoder", None, "relative-position embeddings"),
    (r"(?:^|\.)encoder\.conv\.", "other", "encoder", None, "convolution layer"),
    (r"(?:^|\.)embeddings\.position_ids$", "other", "encoder", None, "buffer"),
    (r"(?:^|\.)(?:pooler|cls|lm_predictions|classifier|qa_outputs|mask_predictions)\.", "other", None, None,
     "task head"),
)


def scale_factor(config: dict) -> int:
    """``1 + len(pos_att_type)`` with relative attention on, else 1 (HF ``DisentangledSelfAttention``)."""
    pos = config.get("pos_att_type") or []
    if isinstance(pos, str):
        pos = [p.strip() for p in pos.lower().split("|") if p.strip()]
    return 1 + len(pos) if config.get("relative_attention") else 1


def attn_scale(config: dict, head_dim: int) -> float:
    """The q·k scale of the content-to-content term: ``1 / sqrt(head_dim · scale_factor)``."""
    return float(head_dim * scale_factor(config)) ** -0.5



def adapt(tensors, config) -> list:
    """Map DeBERTa-v2 tensor names to catalog entries (see the module docstring)."""
    d, h = need(config, "deberta-v2", "hidden_size", "num_attention_heads")
    return build(tensors, RULES, lambda stack, attn: Heads(h, d // h, h, d))


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


DEBERTA_V2 = FamilySpec(
    name="deberta_v2", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("deberta-v2",), sizes=_sizes, adapt=adapt, attn_scale=attn_scale,
    text_hidden=encoder_hidden,
    locate_blocks=blocks_at({"encoder": "encoder.layer", "text": "encoder.layer"}, "deberta_v2"),
    encoder=base, objective="embedding_regression",
    # DeBERTa-v3's attention: relative c2p + p2c terms, no absolute positions at the input
    tiny_defaults=dict(model_type="deberta-v2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=128, relative_attention=True,
                       pos_att_type=["p2c", "c2p"], position_buckets=16, max_relative_positions=-1,
                       position_biased_input=False, norm_rel_ebd="layer_norm", share_att_key=True,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
    tiny_tokenizer="minilm",
    left_out={"*": "relative c2p/p2c"},
    qk_statement="DeBERTa-v2: scores are content-to-content (x W_q^T + b_q)(x W_k^T + b_k)^T plus the relative "
                 "content-to-position and position-to-content terms of pos_att_type, all over "
                 "sqrt(head_dim * (1 + len(pos_att_type))); the bilinear form is the content-to-content term with "
                 "that scale and leaves the relative terms out.",
)
