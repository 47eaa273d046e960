"""open_clip CLIP models (not transformers): a ``text`` and a ``vision`` tower, own checkpoint format.

Sizes are the text tower's (``text_cfg``); the vision tower's are in ``vision_cfg``.
Hidden states are captured by hooks on the towers' residual blocks (input of block 0, then
the output of every block).

Weight names (:func:`adapt`: the catalog's rules)
-------------------------------------------------
open_clip adapter (CLIP ViT, both towers), from the model's state dict saved as safetensors.

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


from ..checkpoints.schema import Entry, attn_entry, split_fused
from .spec import FamilySpec, Sizes, no_output_embeddings
from ..lazy import lazy

torch = lazy("torch")

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


#: the ``source:`` value of open_clip's own model zoo (a name + pretrained tag)
SOURCE = "open_clip"
#: the tokenizer of every open_clip text tower here
TOKENIZER = "clip-bpe"
_CLIP_STATS = ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))


def _sizes(cfg: dict) -> Sizes:
    t = cfg["text_cfg"]
    d, h = int(t.get("width", 512)), int(t.get("heads", 8))
    return Sizes(d_model=d, n_layers=int(t.get("layers", 12)), n_heads=h, head_dim=d // h, n_kv_heads=h)


def _text_module(model):
    return model.text if hasattr(model, "text") else model


def _context_length(model) -> int:
    return int(_text_module(model).positional_embedding.shape[0])


def tower_hidden(model, tower: str, x) -> list:
    """Run one tower, capturing the input of block 0 and the output of every block."""
    if tower == "vision":
        tr, run = model.visual.transformer, model.encode_image
    else:
        tr = _text_module(model).transformer
        run = model.encode_text
    captured: list = []
    blocks = list(tr.resblocks)

    def pre(_mod, args, kwargs=None):
        captured.append(args[0] if args else kwargs.get("q_x"))

    def post(_mod, _args, out):
        captured.append(out[0] if isinstance(out, tuple) else out)

    handles = [blocks[0].register_forward_pre_hook(lambda mod, a: pre(mod, a))]
    handles += [b.register_forward_hook(post) for b in blocks]
    try:
        run(x)
    finally:
        for h in handles:
            h.remove()
    batch_first = getattr(tr, "batch_first", True)
    return [(h if batch_first else h.transpose(0, 1)).detach().to("cpu", torch.float32) for h in captured]


def _image_size(model, config) -> int:
    s = model.visual.image_size
    return int(s[0] if isinstance(s, (tuple, list)) else s)


def _image_stats(model):
    return (getattr(model.visual, "image_mean", None) or _CLIP_STATS[0],
            getattr(model.visual, "image_std", None) or _CLIP_STATS[1])


def _vision_tables(model) -> dict:
    out = {}
    if not hasattr(model, "visual"):
        return out
    pos = getattr(model.visual, "positional_embedding", None)
    if pos is not None:
        out["position"] = pos
    conv = getattr(model.visual, "conv1", None)
    if conv is not None:
        out["patch"] = conv.weight.flatten(1)
    return out


def _matches(cfg: dict) -> bool:
    return "vision_cfg" in cfg or "text_cfg" in cfg


OPEN_CLIP = FamilySpec(
    name="open_clip", stacks=("text", "vision"), is_text=True, is_generative=False, hf=False,
    model_types=("open_clip",), detect=_matches, sources={SOURCE: "ViT-B-16"},
    sizes=_sizes, adapt=adapt,
    input_embeddings=lambda model: _text_module(model).token_embedding.weight,
    output_embeddings=no_output_embeddings,
    text_hidden=lambda model, stack, ids, mask, dec: tower_hidden(model, "text", ids),
    vision_hidden=lambda model, x: tower_hidden(model, "vision", x),
    context_length=_context_length, image_size=_image_size, image_stats=_image_stats, vision_tables=_vision_tables,
    tiny_defaults=dict(embed_dim=32,
                       vision_cfg=dict(image_size=32, patch_size=8, width=32, layers=2, head_width=8, mlp_ratio=2.0),
                       text_cfg=dict(context_length=16, vocab_size=49408, width=32, heads=4, layers=2)),
    tiny_tokenizer=TOKENIZER, vocab_from_tokenizer=False,
    qk_statement="open_clip: torch MultiheadAttention, scores (x W_q^T + b_q)(x W_k^T + b_k)^T / sqrt(head_dim) from "
                 "the fused in_proj; the bilinear form holds the x W_q^T W_k x term, the bias terms are extra; the "
                 "text tower is causal.",
)
