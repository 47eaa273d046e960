"""open_clip CLIP models (not transformers): a ``text`` and a ``vision`` tower, own checkpoint format.

Sizes are the text tower's (``text_cfg``); the vision tower's are in ``vision_cfg``.
Hidden states are captured by hooks on the towers' residual blocks (input of block 0, then
the output of every block).
"""
from __future__ import annotations

import torch

from ..models.adapters import open_clip as _adapter
from .spec import FamilySpec, Sizes, no_output_embeddings

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
    sizes=_sizes, adapter=_adapter,
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
