"""Generic name-pattern adapter: the fallback for architectures without an adapter.

It guesses roles from common substrings (q_proj/query/.q., k..., out_proj/o_proj/.o.,
qkv/in_proj/c_attn (fused, split in thirds when rows == 3·cols), fc1/c_fc/up_proj/wi/
intermediate, gate, fc2/c_proj/down_proj/wo/output.dense, norm/ln, embed/wte/wpe,
lm_head), layers from ``layers.N``/``layer.N``/``block(s).N``/``h.N``/``resblocks.N``,
stacks from ``encoder``/``decoder``/``vision|visual``/``text``, and heads from the
config (``num_attention_heads``/``n_head``/``num_heads``) when present. ``catalog()``
warns that the generic adapter was used and lists every 2-D tensor left as ``other``.
"""
from __future__ import annotations

import re

from .schema import Entry, get_int, split_fused

_LAYER = re.compile(r"(?:^|\.)(?:layers?|blocks?|h|resblocks)\.(\d+)\.")
_RULES = [  # (regex on the name, role); first match wins
    (r"(q_proj|query|\.q\.|\.wq\.)", "q"), (r"(k_proj|\.key\.|\.k\.|\.wk\.)", "k"),
    (r"(v_proj|value|\.v\.|\.wv\.)", "v"),
    (r"(qkv|in_proj|c_attn|query_key_value|Wqkv)", "qkv"),
    (r"(o_proj|out_proj|attention\.output\.dense|\.o\.|\.wo\.|attn\.proj|attn\.c_proj|dense$)", "o"),
    (r"(gate)", "mlp_gate"),
    (r"(fc1|c_fc|up_proj|\.wi\.|\.wi_1\.|intermediate|dense_h_to_4h|\.w1\.|\.w3\.)", "mlp_in"),
    (r"(fc2|mlp\.c_proj|down_proj|\.wo\.|output\.dense|dense_4h_to_h|\.w2\.)", "mlp_out"),
    (r"(norm|ln_|layernorm|\.ln\.)", "norm"),
    (r"(lm_head|unembed)", "unembed"),
    (r"(embed|wte|wpe|tok_embeddings)", "embed"),
]


def adapt(tensors, config) -> list:
    """Guess catalog entries from tensor names (see the module docstring)."""
    n_heads = get_int(config or {}, "num_attention_heads", "n_head", "num_heads")
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        m = _LAYER.search(name)
        layer = int(m[1]) if m else None
        low = name.lower()
        stack = next((s for k, s in (("encoder", "encoder"), ("decoder", "decoder"), ("visual", "vision"),
                                     ("vision", "vision"), ("text", "text")) if k in low), None)
        role = "other"
        for pat, r in _RULES:
            if re.search(pat, name if r == "qkv" else low):
                role = r
                break
        if name.endswith(".bias"):
            out.append(Entry(name, "bias", stack, None, layer, shape, info.dtype))
            continue
        if role in ("q", "k", "v", "o", "qkv") and len(shape) != 2:
            role = "other"
        if role in ("q", "k", "v", "o", "qkv"):
            d = shape[1] if role != "o" else shape[0]
            hd = d // n_heads if n_heads and d % n_heads == 0 else None
            e = Entry(name, role, stack, "self", layer, shape, info.dtype, n_heads=n_heads if hd else None,
                      head_dim=hd, n_kv_heads=n_heads if hd else None)
            if role == "qkv" and shape[0] == 3 * shape[1]:
                out.append(e)
                out.extend(split_fused(e))
            elif role == "qkv":
                out.append(Entry(name, "other", stack, None, layer, shape, info.dtype))
            else:
                out.append(e)
        elif role in ("mlp_in", "mlp_gate", "mlp_out") and len(shape) != 2:
            out.append(Entry(name, "other", stack, None, layer, shape, info.dtype))
        else:
            out.append(Entry(name, role, stack, None, layer, shape, info.dtype))
    return out
