"""T5 and T5-v1.1 adapter (HF ``T5Model`` / ``T5ForConditionalGeneration`` / ``T5EncoderModel``).

Names (optionally under a prefix)::

    shared.weight                                         embed (V, D)
    {encoder,decoder}.embed_tokens.weight                 embed (tied copy)
    lm_head.weight                                        unembed
    {stack}.block.{i}.layer.0.SelfAttention.{q,k,v,o}     self attention
    decoder.block.{i}.layer.1.EncDecAttention.{q,k,v,o}   cross attention
    {stack}.block.{i}.layer.0.SelfAttention.relative_attention_bias  pos_bias (buckets, heads)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wi         mlp_in  (T5: ReLU)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wi_0/wi_1  mlp_gate / mlp_in  (T5-v1.1: GeGLU)
    {stack}.block.{i}.layer.{j}.DenseReluDense.wo         mlp_out
    {stack}.block.{i}.layer.{j}.layer_norm, {stack}.final_layer_norm   norm (RMS scale)

T5 does not scale q·k by 1/sqrt(head_dim) (the catalog's attention scale is 1).
"""
from __future__ import annotations

import re

from .schema import Entry, attn_entry, get_int

_BLOCK = re.compile(r"^(?:.*\.)?(?P<stack>encoder|decoder)\.block\.(?P<layer>\d+)\.layer\.\d+\.(?P<rest>.+)$")
#: T5 does not scale q·k (the catalog's attention scale)
ATTN_SCALE = 1.0
_PROJ = {"q": "q", "k": "k", "v": "v", "o": "o"}
_MLP = {"wi": "mlp_in", "wi_1": "mlp_in", "wi_0": "mlp_gate", "wo": "mlp_out"}


def adapt(tensors, config) -> list:
    """Map T5 tensor names to catalog entries (see the module docstring)."""
    d_model = get_int(config, "d_model")
    n_heads = get_int(config, "num_heads")
    d_kv = get_int(config, "d_kv")
    if d_model is None or n_heads is None or d_kv is None:
        raise ValueError("config: T5 adapter needs d_model, num_heads and d_kv (pass the model's config.json)")
    out = []
    for name, info in tensors.items():
        m = _BLOCK.match(name)
        if m:
            stack, layer, rest = m["stack"], int(m["layer"]), m["rest"]
            parts = rest.split(".")
            if parts[0] in ("SelfAttention", "EncDecAttention"):
                attn = "self" if parts[0] == "SelfAttention" else "cross"
                if parts[1] in _PROJ and parts[-1] == "weight":
                    out.append(attn_entry(name, info, _PROJ[parts[1]], stack=stack, attn=attn, layer=layer,
                                          n_heads=n_heads, head_dim=d_kv, expect_in=d_model))
                    continue
                if parts[1] == "relative_attention_bias":
                    if tuple(info.shape)[1:] != (n_heads,):
                        raise ValueError(f"weights: tensor {name!r} has shape {tuple(info.shape)}, "
                                         f"expected (num_buckets, {n_heads})")
                    out.append(Entry(name, "pos_bias", stack, attn, layer, tuple(info.shape), info.dtype,
                                     n_heads=n_heads))
                    continue
            if parts[0] == "DenseReluDense" and parts[1] in _MLP and parts[-1] == "weight":
                out.append(Entry(name, _MLP[parts[1]], stack, None, layer, tuple(info.shape), info.dtype))
                continue
            if parts[0] == "layer_norm":
                out.append(Entry(name, "norm", stack, None, layer, tuple(info.shape), info.dtype))
                continue
            out.append(Entry(name, "other", stack, None, layer, tuple(info.shape), info.dtype))
            continue
        if re.search(r"(^|\.)shared\.weight$", name):
            out.append(Entry(name, "embed", None, None, None, tuple(info.shape), info.dtype))
        elif m2 := re.match(r"^(?:.*\.)?(encoder|decoder)\.embed_tokens\.weight$", name):
            out.append(Entry(name, "embed", m2[1], None, None, tuple(info.shape), info.dtype))
        elif re.search(r"(^|\.)lm_head\.weight$", name):
            out.append(Entry(name, "unembed", None, None, None, tuple(info.shape), info.dtype))
        elif m3 := re.match(r"^(?:.*\.)?(encoder|decoder)\.final_layer_norm\.weight$", name):
            out.append(Entry(name, "norm", m3[1], None, None, tuple(info.shape), info.dtype))
        else:
            out.append(Entry(name, "other", None, None, None, tuple(info.shape), info.dtype))
    return out
