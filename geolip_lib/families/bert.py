"""BERT-like encoders (BERT, RoBERTa, XLM-R, ELECTRA, MiniLM): one ``encoder`` stack, absolute positions."""
from __future__ import annotations

import torch.nn as nn

from ..models.adapters import bert as _adapter
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


def _text_hidden(model, stack, ids, mask, dec) -> list:
    return hidden_to_cpu(model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)


def locate_blocks(model: nn.Module, stack: str):
    if stack == "decoder":
        fail("stack", "BERT has no decoder stack")
    if stack not in ("encoder", "text"):
        fail("stack", f"BERT models have one stack 'encoder', got {stack!r}")
    base = getattr(model, "bert", model)
    return base, base.encoder.layer


def encoder(model: nn.Module) -> nn.Module:
    """The base model (a task head's ``.bert``, else the model itself)."""
    return getattr(model, "bert", model)


BERT = FamilySpec(
    name="bert", stacks=("encoder",), is_text=True, is_generative=False,
    auto_class="AutoModel", model_types=("bert", "roberta", "xlm-roberta", "electra"),
    sizes=_sizes, adapter=_adapter, text_hidden=_text_hidden,
    locate_blocks=locate_blocks, encoder=encoder, objective="embedding_regression",
    qk_statement="BERT-like: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds "
                 "the x W_q^T W_k x term, the bias terms are extra; no position term inside attention.",
    tiny_defaults=dict(model_type="bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0),
    tiny_tokenizer="minilm",
    tiny_model_types={mt: {"model_type": mt, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                           "intermediate_size": 64, "max_position_embeddings": 130, "hidden_dropout_prob": 0.0,
                           "attention_probs_dropout_prob": 0.0, "pad_token_id": 0, **extra}
                      for mt, extra in (("roberta", {}), ("xlm-roberta", {}), ("electra", {"embedding_size": 16}))},
)
