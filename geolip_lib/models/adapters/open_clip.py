"""open_clip adapter (CLIP ViT, both towers), from the model's state dict saved as safetensors.

Names::

    visual.transformer.resblocks.{i}.attn.in_proj_weight   qkv (3D, D) -> views q / k / v (stack vision)
    transformer.resblocks.{i}.attn.in_proj_weight          qkv (text tower, stack text)
    *.resblocks.{i}.attn.out_proj.weight                   o
    *.resblocks.{i}.mlp.c_fc.weight / mlp.c_proj.weight     mlp_in / mlp_out
    *.resblocks.{i}.ln_1 / ln_2, visual.ln_pre/ln_post, ln_final   norm
    *.resblocks.{i}.ls_1.gamma / ls_2.gamma                 other (layer scale)
    visual.conv1.weight, visual.class_embedding, *positional_embedding, token_embedding   embed
    visual.proj, text_projection, logit_scale               other (projection heads)

Head counts come from the open_clip model config (``vision_cfg.width / head_width``,
default head_width 64; ``text_cfg.heads``, default 8), as open_clip builds them.
The fused ``in_proj_weight`` rows are [W_q; W_k; W_v] (torch ``nn.MultiheadAttention``).
"""
from __future__ import annotations

import re

from .schema import Entry, attn_entry, split_fused

_BLOCK = re.compile(r"^(?P<vis>(?:.*\.)?visual\.)?(?:.*\.)?transformer\.resblocks\.(?P<layer>\d+)\.(?P<rest>.+)$")
_MLP = {"mlp.c_fc": "mlp_in", "mlp.c_proj": "mlp_out", "mlp.fc1": "mlp_in", "mlp.fc2": "mlp_out"}


def _heads(config: dict, tower: str, width: int) -> int:
    if tower == "vision":
        vc = config.get("vision_cfg") or {}
        hw = vc.get("head_width", 64)
        return max(1, width // hw)
    tc = config.get("text_cfg") or {}
    return int(tc.get("heads", 8))


def adapt(tensors, config) -> list:
    """Map open_clip tensor names to catalog entries (see the module docstring)."""
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _BLOCK.match(name)
        if m:
            stack = "vision" if m["vis"] else "text"
            layer, rest = int(m["layer"]), m["rest"]
            sub, _, kind = rest.rpartition(".")
            if rest == "attn.in_proj_weight":
                D = shape[1]
                nh = _heads(config, stack, D)
                if shape[0] != 3 * D or D % nh:
                    raise ValueError(f"weights: tensor {name!r} has shape {shape}, expected (3*{D}, {D}) "
                                     f"with {D} divisible by {nh} heads")
                parent = attn_entry(name, info, "qkv", stack=stack, attn="self", layer=layer, n_heads=nh,
                                    head_dim=D // nh)
                out.append(parent)
                out.extend(split_fused(parent))
            elif rest == "attn.in_proj_bias":
                parent = Entry(name, "bias", stack, "self", layer, shape, info.dtype, of="qkv")
                out.append(parent)
                out.extend(split_fused(parent, ("bias", "bias", "bias")))
                out[-3:] = [e.__class__(**{**e.__dict__, "of": r}) for e, r in zip(out[-3:], "qkv")]
            elif sub == "attn.out_proj" and kind == "weight":
                D = shape[0]
                nh = _heads(config, stack, D)
                out.append(attn_entry(name, info, "o", stack=stack, attn="self", layer=layer, n_heads=nh,
                                      head_dim=D // nh))
            elif sub in _MLP:
                out.append(Entry(name, _MLP[sub] if kind == "weight" else "bias", stack, None, layer, shape,
                                 info.dtype))
            elif sub in ("ln_1", "ln_2", "ln_attn", "ln_inner", "attn.ln_inner", "mlp.ln"):
                out.append(Entry(name, "norm" if kind == "weight" else "bias", stack, None, layer, shape,
                                 info.dtype))
            elif sub.startswith("ls_"):
                out.append(Entry(name, "other", stack, None, layer, shape, info.dtype, note="layer scale"))
            elif kind == "bias":
                out.append(Entry(name, "bias", stack, None, layer, shape, info.dtype))
            else:
                out.append(Entry(name, "other", stack, None, layer, shape, info.dtype))
            continue
        vis = name.startswith("visual.") or ".visual." in name
        stack = "vision" if vis else "text"
        base = name.split(".")[-1] if not name.endswith((".weight", ".bias")) else ".".join(name.split(".")[-2:])
        if base in ("conv1.weight", "class_embedding", "positional_embedding", "token_embedding.weight"):
            out.append(Entry(name, "embed", stack, None, None, shape, info.dtype))
        elif re.search(r"(ln_pre|ln_post|ln_final)\.weight$", name):
            out.append(Entry(name, "norm", stack, None, None, shape, info.dtype))
        elif name.endswith(".bias"):
            out.append(Entry(name, "bias", stack, None, None, shape, info.dtype))
        elif base in ("proj", "text_projection", "logit_scale", "logit_bias"):
            out.append(Entry(name, "other", stack, None, None, shape, info.dtype, note="projection head"))
        else:
            out.append(Entry(name, "other", stack if vis else None, None, None, shape, info.dtype))
    return out


#: the open_clip checkpoint's config file (``{"model_cfg": {...}}`` or the bare model config)
CONFIG_FILE = "open_clip_config.json"
#: the ``model_type`` the catalog gives an open_clip config (which has none)
MODEL_TYPE = "open_clip"


def normalise_config(cfg: dict) -> dict:
    """An open_clip config as the catalog keeps it: the ``model_cfg`` with ``model_type`` set."""
    inner = cfg.get("model_cfg", cfg)
    return {**inner, "model_type": inner.get("model_type", MODEL_TYPE)}
