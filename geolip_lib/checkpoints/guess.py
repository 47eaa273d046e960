"""Name guesses for a checkpoint no family knows: the generic fallback and the adapter of family ``any``.

Roles come from common substrings (q_proj/query/.q., k..., out_proj/o_proj/.o.,
qkv/in_proj/c_attn (fused, split in thirds when rows == 3·cols), fc1/c_fc/up_proj/wi/
intermediate, gate, fc2/c_proj/down_proj/wo/output.dense, norm/ln, embed/wte/wpe,
lm_head), layers from ``layers.N``/``layer.N``/``block(s).N``/``h.N``/``resblocks.N``,
stacks from ``encoder``/``decoder``/``vision|visual``/``text``, and heads from the
config (``num_attention_heads``/``n_head``/``num_heads``) when present.

A guess never makes attention out of a name alone: an attention role (q/k/v/o/qkv) is given only
to a tensor whose module path says attention (``attn``, ``attention``, ``SelfAttention``...).
A state-space or recurrent sequence mixer (Mamba's ``mixer.{in_proj,x_proj,dt_proj,out_proj,
conv1d,A_log,D}``) is not attention: its tensors are kept as role ``other`` with the note
:data:`~.schema.MIXER_NOTE`, with their layer, and the catalog says once what is not analysed
(:meth:`~.schema.Catalog.not_analysed`). ``families.catalog()`` warns that the generic guesses were
used and lists every 2-D tensor left as ``other`` without a note.

Layer 1 (checkpoints).
"""
from __future__ import annotations

import re
from dataclasses import replace

from .schema import MIXER_NOTE, Entry, get_int, split_fused

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
_ATTN_ROLES = ("q", "k", "v", "o", "qkv")
#: a module path that says attention: the only place a guess gives an attention role
ATTENTION_PATH = re.compile(r"attn|attention", re.IGNORECASE)
#: a sequence mixer that is not attention (Mamba / Mamba-2 ``mixer``, Jamba's ``mamba``, ``ssm``)
MIXER_PATH = re.compile(r"(?:^|\.)(?:mixer|mamba|ssm)\.", re.IGNORECASE)


def _role(name: str) -> str:
    low = name.lower()
    for pat, r in _RULES:
        if re.search(pat, name if r == "qkv" else low):
            return r
    return "other"


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
        role = _role(name)
        mixer = MIXER_PATH.search(name) is not None and not ATTENTION_PATH.search(name)
        if name.endswith(".bias"):
            out.append(Entry(name, "bias", stack, None, layer, shape, info.dtype, note=MIXER_NOTE if mixer else None))
            continue
        if mixer and role != "norm":
            out.append(Entry(name, "other", stack, None, layer, shape, info.dtype, note=MIXER_NOTE))
            continue
        if role in _ATTN_ROLES and (len(shape) != 2 or not ATTENTION_PATH.search(name)):
            role = "other"
        if role in _ATTN_ROLES:
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


def adapt_without_heads(tensors, config) -> list:
    """The guesses of :func:`adapt` with no head layout (family ``any``): no attention block can form."""
    return [replace(e, attn=None, n_heads=None, head_dim=None, n_kv_heads=None) for e in adapt(tensors, {})]


__all__ = ["ATTENTION_PATH", "MIXER_PATH", "adapt", "adapt_without_heads"]
