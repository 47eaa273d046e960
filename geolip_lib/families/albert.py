"""ALBERT (one set of layers shared by every depth; factorised embedding): one ``encoder`` stack."""
from __future__ import annotations

from ..models.adapters import albert as _adapter
from .hf import base, d_heads, encoder_hidden
from .spec import FamilySpec, Sizes


def _sizes(cfg: dict) -> Sizes:
    d, n, h, hd, kv = d_heads(cfg, "hidden_size", "num_attention_heads")
    return Sizes(d_model=d, n_layers=n, n_heads=h, head_dim=hd, n_kv_heads=kv)


SHARED = ("ALBERT applies one stored layer group at every depth (num_hidden_groups groups of inner_group_num "
          "layers for num_hidden_layers depths): the catalog's layers are the stored layers, so with one group "
          "cross-layer correlation has nothing to compare (across depth it is 1 by construction) and per-layer "
          "tables have one row for all depths; hidden states still vary by depth.")

ALBERT = FamilySpec(
    name="albert", stacks=("encoder",), is_text=True, is_generative=False, auto_class="AutoModel",
    model_types=("albert",), sizes=_sizes, adapter=_adapter, text_hidden=encoder_hidden,
    locate_blocks=None,  # modulator hooks: not defined (one stored layer runs at every depth)
    encoder=base, objective="embedding_regression",
    tiny_defaults=dict(model_type="albert", embedding_size=16, hidden_size=32, num_hidden_layers=3,
                       num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0),
    tiny_tokenizer="minilm", shared_layers=SHARED,
    qk_statement="ALBERT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) with the same W_q, W_k "
                 "at every depth; the bilinear form holds the x W_q^T W_k x term, the bias terms are extra.",
)
