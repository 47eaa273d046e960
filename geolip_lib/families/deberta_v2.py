"""DeBERTa-v2 / v3 (disentangled attention: content and relative-position terms): one ``encoder`` stack."""
from __future__ import annotations

from ..models.adapters import deberta_v2 as _adapter
from .hf import base, blocks_at, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


DEBERTA_V2 = FamilySpec(
    name="deberta_v2", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("deberta-v2",), sizes=_sizes, adapter=_adapter, text_hidden=encoder_hidden,
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
