"""Table-driven name rules: a family lists ``(regex, role, stack, attn)`` rules; :func:`build` makes the entries.

Most architectures differ only in their tensor names, so an adapter is a list of rules and a
function giving the head layout of an attention (stack, kind). A rule's regex is searched in
the tensor name; its named group ``layer`` (if any) is the layer, a group ``stack`` (if any)
overrides the rule's stack through :data:`STACK_ALIASES`. The first matching rule wins; a name
no rule matches is role ``other`` (listed by the catalog's warning).

Suffixes decide the kind: ``....bias`` (1-D) is role ``bias`` with ``of=`` the rule's role,
``...weight`` (or any 2-D tensor) takes the rule's role. A rule with role ``qkv`` is a fused
projection in the *canonical* layout [Q rows; K rows; V rows] (the loader writes every
checkpoint whose stored layout differs in that layout first: GPT-2's transposed ``Conv1D``,
GPT-NeoX / BLOOM / Falcon's per-head interleaving; see ``FamilySpec.canonical_tensor``): it is
kept once as ``qkv`` and viewed as ``q``/``k``/``v`` with row slices, its bias likewise.

Layer 1 (checkpoints): knows no family; each family file (``families/<family>.py``) lists its rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from .schema import Entry, attn_entry

#: a ``stack`` group's text -> the catalog's stack
STACK_ALIASES = {"encoder": "encoder", "decoder": "decoder", "text_model": "text", "vision_model": "vision",
                 "text": "text", "vision": "vision"}
_ATTN = ("q", "k", "v", "o")


@dataclass(frozen=True)
class Heads:
    """Head layout of one attention kind: query heads, head width, key/value heads, model width."""

    n_heads: int
    head_dim: int
    n_kv_heads: int
    d_model: int


@dataclass(frozen=True)
class Rule:
    """``pattern`` (searched in the name) -> ``role`` in ``stack`` (attention kind ``attn`` or None).

    ``note``: why a recognised tensor stays role ``other`` (task head, router, ...).
    """

    pattern: str
    role: str
    stack: Optional[str] = None
    attn: Optional[str] = None
    note: Optional[str] = None

    def __post_init__(self):
        object.__setattr__(self, "_rx", re.compile(self.pattern))


def rules(*rows) -> list:
    """``rules(("regex", "role", "stack", "attn"[, "note"]), ...)`` -> list of :class:`Rule`."""
    return [Rule(*r) for r in rows]


def fused_views(entry: Entry, sizes: Sequence[tuple]) -> list:
    """Views of a fused (canonical) tensor: ``sizes`` = ((role, rows), ...) in row order."""
    out, start = [], 0
    for role, rows in sizes:
        out.append(replace(entry, role=role, shape=(rows,) + tuple(entry.shape[1:]), row_slice=(start, start + rows),
                           parent=entry.name, of=role if entry.role == "bias" else None))
        start += rows
    if start != entry.shape[0]:
        raise ValueError(f"weights: tensor {entry.name!r} has {entry.shape[0]} rows, expected {start} "
                         f"({' + '.join(f'{r} {role}' for role, r in sizes)}; config and checkpoint disagree)")
    return out


def build(tensors, rule_list: Sequence[Rule], heads: Callable[[Optional[str], Optional[str]], Heads],
          expert: Optional[Callable[[str], Optional[int]]] = None) -> list:
    """Entries of every tensor (see the module docstring).

    ``heads(stack, attn)`` gives the layout of that attention; ``expert(name)`` (MoE) the
    expert index a tensor belongs to (None: not an expert's).
    """
    out = []
    for name, info in tensors.items():
        shape = tuple(info.shape)
        rule, m = None, None
        for r in rule_list:
            m = r._rx.search(name)
            if m:
                rule = r
                break
        if rule is None:
            out.append(Entry(name, "other", None, None, None, shape, info.dtype))
            continue
        gd = m.groupdict()
        layer = int(gd["layer"]) if gd.get("layer") is not None else None
        stack = STACK_ALIASES.get(gd.get("stack") or "", rule.stack) if gd.get("stack") else rule.stack
        role, attn = rule.role, rule.attn
        ex = expert(name) if expert is not None else None
        is_bias = name.endswith(".bias") or (name.endswith("_bias") and len(shape) == 1)
        if rule.note is not None or role == "other":
            out.append(Entry(name, "other", stack, attn, layer, shape, info.dtype, note=rule.note))
        elif role in _ATTN + ("qkv",):
            h = heads(stack, attn)
            if is_bias:
                e = Entry(name, "bias", stack, attn, layer, shape, info.dtype, of=role)
                out.append(e)
                if role == "qkv":
                    out.extend(fused_views(e, _qkv_rows(h)))
            elif role == "qkv":
                e = Entry(name, "qkv", stack, attn, layer, shape, info.dtype, n_heads=h.n_heads, head_dim=h.head_dim,
                          n_kv_heads=h.n_kv_heads)
                if len(shape) != 2 or shape[1] != h.d_model:
                    raise ValueError(f"weights: tensor {name!r} has shape {shape}, expected (..., {h.d_model}) "
                                     "(config and checkpoint disagree; pass the right config or family)")
                out.append(e)
                out.extend(fused_views(e, _qkv_rows(h)))
            else:
                out.append(attn_entry(name, info, role, stack=stack, attn=attn, layer=layer, n_heads=h.n_heads,
                                      head_dim=h.head_dim, n_kv_heads=h.n_kv_heads, expect_in=h.d_model))
        elif is_bias:
            out.append(Entry(name, "bias", stack, None, layer, shape, info.dtype, of=role, expert=ex))
        else:
            out.append(Entry(name, role, stack, None, layer, shape, info.dtype, expert=ex))
    return out


def _qkv_rows(h: Heads) -> tuple:
    return (("q", h.n_heads * h.head_dim), ("k", h.n_kv_heads * h.head_dim), ("v", h.n_kv_heads * h.head_dim))


def need(cfg: dict, family: str, *keys) -> list:
    """The integers ``keys`` of ``cfg`` (one line naming the missing key otherwise)."""
    out = []
    for k in keys:
        v = cfg.get(k)
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"config: the {family} adapter needs the integer {k!r} (pass the model's config.json)")
        out.append(v)
    return out


__all__ = ["Heads", "Rule", "STACK_ALIASES", "build", "fused_views", "need", "rules"]
