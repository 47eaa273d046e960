"""DINOv2 / ViT (vision only): one ``vision`` stack; the only "embedding table" is the learned positions.

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
DINOv2 / ViT adapter (HF ``Dinov2Model``; old and transformers-5 names).

Names::

    embeddings.{cls_token,mask_token,register_tokens,position_embeddings}   embed
    embeddings.patch_embeddings.projection.weight                           embed (4-D conv)
    encoder.layer.{i}.attention.attention.{query,key,value}  (transformers < 5)
    encoder.layer.{i}.attention.{q,k,v}_proj                 (transformers >= 5)   q / k / v
    encoder.layer.{i}.attention.output.dense | attention.o_proj                   o
    encoder.layer.{i}.norm1/norm2, layernorm                                      norm
    encoder.layer.{i}.layer_scale{1,2}.lambda1                                    other (layer scale)
    encoder.layer.{i}.mlp.fc1 / fc2                                               mlp_in / mlp_out
    encoder.layer.{i}.intermediate.dense / output.dense (ViT)                     mlp_in / mlp_out
    pooler.dense (ViT)                                                            other (task head)
    encoder.layer.{i}.mlp.weights_in (fused SwiGLU, 2·hidden rows) / weights_out  mlp_gate+mlp_in / mlp_out

Stack ``vision``, self attention.
"""
from __future__ import annotations

import re
from dataclasses import replace

from ..checkpoints.schema import Entry, attn_entry, get_int, split_fused
from .spec import FamilySpec, Sizes, hf_vision_hidden, no_output_embeddings

_LAYER = re.compile(r"^(?:.*\.)?encoder\.layers?\.(?P<layer>\d+)\.(?P<rest>.+)$")
_SUB = {
    "attention.attention.query": "q", "attention.attention.key": "k", "attention.attention.value": "v",
    "attention.output.dense": "o", "attention.q_proj": "q", "attention.k_proj": "k",
    "attention.v_proj": "v", "attention.o_proj": "o",
    "mlp.fc1": "mlp_in", "mlp.fc2": "mlp_out", "mlp.weights_out": "mlp_out",
    "intermediate.dense": "mlp_in", "output.dense": "mlp_out",  # ViT
    "layernorm_before": "norm", "layernorm_after": "norm",      # ViT
    "norm1": "norm", "norm2": "norm",
}


def adapt(tensors, config) -> list:
    """Map DINOv2 tensor names to catalog entries (see the module docstring)."""
    d = get_int(config, "hidden_size")
    n_heads = get_int(config, "num_attention_heads")
    if d is None or n_heads is None:
        raise ValueError("config: dinov2 adapter needs hidden_size and num_attention_heads")
    hd = d // n_heads
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _LAYER.match(name)
        if m:
            layer, rest = int(m["layer"]), m["rest"]
            sub, _, kind = rest.rpartition(".")
            role = _SUB.get(sub)
            if role is not None and kind == "weight":
                if role in ("q", "k", "v", "o"):
                    out.append(attn_entry(name, info, role, stack="vision", attn="self", layer=layer,
                                          n_heads=n_heads, head_dim=hd, expect_in=d))
                else:
                    out.append(Entry(name, role, "vision", None, layer, shape, info.dtype))
            elif role is not None:
                out.append(Entry(name, "bias", "vision", "self" if role in "qkvo" else None, layer, shape,
                                 info.dtype, of=role))
            elif sub == "mlp.weights_in" and kind == "weight":
                parent = Entry(name, "other", "vision", None, layer, shape, info.dtype, note="fused SwiGLU in")
                out.append(parent)
                out.extend(replace(v, note=None) for v in split_fused(parent, ("mlp_gate", "mlp_in")))
            elif sub.startswith("layer_scale"):
                out.append(Entry(name, "other", "vision", None, layer, shape, info.dtype, note="layer scale"))
            else:
                out.append(Entry(name, "bias" if kind == "bias" else "other", "vision", None, layer, shape,
                                 info.dtype))
            continue
        if re.search(r"embeddings\.(cls_token|mask_token|register_tokens|position_embeddings)$", name) or \
                re.search(r"patch_embeddings\.projection\.weight$", name):
            out.append(Entry(name, "embed", "vision", None, None, shape, info.dtype))
        elif re.search(r"(^|\.)layernorm\.weight$", name):
            out.append(Entry(name, "norm", "vision", None, None, shape, info.dtype))
        elif re.search(r"(^|\.)(pooler|classifier)\.", name):
            out.append(Entry(name, "other", None, None, None, shape, info.dtype, note="task head"))
        elif name.endswith(".bias"):
            out.append(Entry(name, "bias", "vision", None, None, shape, info.dtype))
        else:
            out.append(Entry(name, "other", None, None, None, shape, info.dtype))
    return out


def _sizes(cfg: dict) -> Sizes:
    d, h = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    return Sizes(d_model=d, n_layers=int(cfg["num_hidden_layers"]), n_heads=h, head_dim=d // h, n_kv_heads=h)


def _vision_tables(model) -> dict:
    emb = model.embeddings
    return {"position": emb.position_embeddings[0], "patch": emb.patch_embeddings.projection.weight.flatten(1)}


DINOV2 = FamilySpec(
    name="dinov2", stacks=("vision",), is_text=False, is_generative=False,
    auto_class="AutoModel", model_types=("dinov2", "vit", "dinov2_with_registers"),
    sizes=_sizes, adapt=adapt,
    # the learned position embeddings (1 + n_patches, D), CLS position first
    input_embeddings=lambda model: model.embeddings.position_embeddings[0],
    output_embeddings=no_output_embeddings,
    vision_hidden=hf_vision_hidden, image_size=lambda model, config: int(config.image_size),
    vision_tables=_vision_tables,
    qk_statement="DINOv2 / ViT: scores are (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim); the bilinear form holds "
                 "the x W_q^T W_k x term, the bias terms are extra; positions are added to the patch tokens.",
    tiny_defaults=dict(model_type="dinov2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
                       image_size=32, patch_size=8, num_channels=3),
    tiny_tokenizer=None,
    tiny_model_types={
        "vit": dict(model_type="vit", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                    image_size=32, patch_size=8, num_channels=3),
        "dinov2_with_registers": dict(model_type="dinov2_with_registers", hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, mlp_ratio=2, image_size=32, patch_size=8,
                                      num_channels=3, num_register_tokens=2)},
)
