"""BERT-like encoders (BERT, RoBERTa, XLM-R, ELECTRA, MiniLM): one ``encoder`` stack, absolute positions.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
BERT adapter (HF ``BertModel`` and heads; also MiniLM, RoBERTa, ELECTRA names).

Names (optionally under ``bert.``/``roberta.``/...)::

    embeddings.{word,position,token_type}_embeddings.weight   embed
    embeddings.LayerNorm.{weight,bias}                         norm / bias
    encoder.layer.{i}.attention.self.{query,key,value}.weight  q / k / v (self, encoder)
    encoder.layer.{i}.attention.output.dense.weight            o
    encoder.layer.{i}.attention.output.LayerNorm.weight        norm
    encoder.layer.{i}.intermediate.dense.weight                mlp_in
    encoder.layer.{i}.output.dense.weight                      mlp_out
    encoder.layer.{i}.output.LayerNorm.weight                  norm
    pooler.dense.weight, cls.*                                 other (head, not the encoder)
"""
from __future__ import annotations

import re


from ..checkpoints.schema import Entry, attn_entry, get_int
from ..validation import fail
from .spec import FamilySpec, Sizes, hidden_to_cpu
from ..lazy import lazy

nn = lazy("torch.nn")

_LAYER = re.compile(r"^(?:.*\.)?encoder\.layer\.(?P<layer>\d+)\.(?P<rest>.+)$")
_SUB = {
    "attention.self.query": ("q", "self"), "attention.self.key": ("k", "self"),
    "attention.self.value": ("v", "self"), "attention.output.dense": ("o", "self"),
    "intermediate.dense": ("mlp_in", None), "output.dense": ("mlp_out", None),
    "attention.output.LayerNorm": ("norm", None), "output.LayerNorm": ("norm", None),
}


def adapt(tensors, config) -> list:
    """Map BERT tensor names to catalog entries (see the module docstring)."""
    d = get_int(config, "hidden_size")
    n_heads = get_int(config, "num_attention_heads")
    if d is None or n_heads is None:
        raise ValueError("config: BERT adapter needs hidden_size and num_attention_heads")
    hd = d // n_heads
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _LAYER.match(name)
        if m:
            layer, rest = int(m["layer"]), m["rest"]
            sub, _, kind = rest.rpartition(".")
            if sub in _SUB:
                role, attn = _SUB[sub]
                if kind == "weight" and role in ("q", "k", "v", "o"):
                    out.append(attn_entry(name, info, role, stack="encoder", attn=attn, layer=layer,
                                          n_heads=n_heads, head_dim=hd, expect_in=d))
                elif kind == "weight":
                    out.append(Entry(name, role, "encoder", attn, layer, shape, info.dtype))
                else:  # bias
                    out.append(Entry(name, "bias", "encoder", attn, layer, shape, info.dtype,
                                     of=role if role != "norm" else "norm"))
                continue
            out.append(Entry(name, "other", "encoder", None, layer, shape, info.dtype))
            continue
        if re.search(r"embeddings\.(word|position|token_type)_embeddings\.weight$", name):
            out.append(Entry(name, "embed", "encoder", None, None, shape, info.dtype))
        elif re.search(r"embeddings\.LayerNorm\.weight$", name):
            out.append(Entry(name, "norm", "encoder", None, None, shape, info.dtype))
        elif name.endswith(".bias") or name.endswith("position_ids"):
            out.append(Entry(name, "bias" if name.endswith(".bias") else "other", "encoder", None, None,
                             shape, info.dtype))
        elif re.search(r"cls\.predictions\.decoder\.weight$", name):
            out.append(Entry(name, "unembed", None, None, None, shape, info.dtype))
        elif re.search(r"(^|\.)embeddings_project\.weight$", name):  # ELECTRA: embedding_size -> hidden_size
            out.append(Entry(name, "other", "encoder", None, None, shape, info.dtype, note="embedding projection"))
        elif re.search(r"(^|\.)(pooler|cls|classifier|lm_head|generator_predictions|generator_lm_head|"
                       r"discriminator_predictions)\.", name):
            # task head on top of the encoder: named here so the warning stays quiet
            out.append(Entry(name, "other", None, None, None, shape, info.dtype, note="task head"))
        else:
            out.append(Entry(name, "other", None, None, None, shape, info.dtype))
    return out


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
    sizes=_sizes, adapt=adapt, text_hidden=_text_hidden,
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
