"""ONNX initializers placed at the state-dict keys of the transformers class that was exported.

Exporters keep some weights under their parameter names and rename others; each placement records how it was
found, so that a reader can follow every key back to the file:

* ``name``: an initializer (or an ``Identity`` copy of one, an exporter's deduplication) named after the state
  dict: kept as stored (an exporter never transposes a tensor it keeps by name), minus the ``prefix.`` the
  export added (a wrapper module's attribute) and Optimum's ``_merged_0`` suffix;
* ``node``: an anonymous initializer (TorchScript's ``onnx::MatMul_N``) named by the node that consumes it,
  ``/encoder/layer.0/attention/self/query/MatMul`` -> ``encoder.layer.0.attention.self.query.weight``;
* ``metadata``: the same from the dynamo exporter's node metadata ``pkg.torch.onnx.name_scopes`` (its module
  path), for its ``val_N`` tensors (folded transposes).

A MatMul's weight is (in, out): transposed back to torch's (out, in); a Gemm's follows ``transB``; a bias is
the Add after that MatMul (or the Gemm's third input); ``MatMul(x, Transpose(W))`` (Optimum's tied output
projection) places W as it is; an embedding the Gather's table; a norm's weight the
LayerNormalization's (or the Mul's, decomposed) input. Optimum's encoder part names its tensors relative to the
encoder (``block.0...``): they are placed under the encoder's path in the full model (``encoder.``,
``model.encoder.``), read off the decoder part's names. Integer tensors and scalars are shape constants and
computed constants, never weights; every other initializer not placed is listed in ``left_out``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .onnx_graph import ADDED_SUFFIXES, Part, dtype_name, fail, is_float

__all__ = ["ONE_PLUS_NORMS", "Placement", "materialize", "place", "unfold_norms"]

#: buffers transformers computes at load (rotary frequencies, position ranges): not in a state dict
BUFFERS = ("inv_freq", "original_inv_freq", "position_ids", "_float_tensor")
_ANONYMOUS = re.compile(r"^(onnx::|val_\d+|_val_|/)|^[^.]*$")


@dataclass
class Placement:
    """Where one state-dict key comes from: the part file, the initializer, how it was found, the node that
    named it, whether it was transposed and its shape in torch's layout."""

    key: str
    part: int
    source: str
    how: str
    transposed: bool
    shape: tuple
    dtype: str
    node: str = ""
    #: what the exporter added to the torch value before storing it (a folded ``1 + weight``), subtracted on read
    offset: float = 0.0

    def record(self, parts: list) -> dict:
        return {"key": self.key, "file": parts[self.part].path.name, "initializer": self.source, "how": self.how,
                "node": self.node, "transposed": self.transposed, "shape": list(self.shape), "dtype": self.dtype,
                **({"offset": self.offset} if self.offset else {})}


def _strip_added(name: str) -> str:
    for s in ADDED_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def _module(n) -> tuple[Optional[str], str]:
    """The module path of the torch module a node was exported from, and how it was read."""
    for m in n.metadata_props:
        if m.key == "pkg.torch.onnx.name_scopes":
            try:
                scopes = ast.literal_eval(m.value)
            except (ValueError, SyntaxError):
                break
            if isinstance(scopes, list) and len(scopes) >= 2 and scopes[-2]:
                return str(scopes[-2]), "metadata"
            return None, "metadata"
    if n.name.startswith("/"):
        parts = n.name.strip("/").split("/")
        return (".".join(parts[:-1]) or None), "node"
    return None, ""


def _encoder_prefix(parts: list) -> str:
    """Where Optimum's encoder part lives in the full model, read off a decoder part's names."""
    for p in parts:
        if p.role.startswith("decoder"):
            for name in p.inits:
                m = re.match(r"^(.*?)decoder\.", name)
                if m:
                    return m.group(1) + "encoder."
    return "encoder."


def place(parts: list, prefix: Optional[str] = None) -> tuple[dict, list, list]:
    """``(placements, left_out, notes)``: ``placements`` maps each state-dict key to the :class:`Placement` (or
    several, when two parts hold it: they are compared when read) ; ``left_out`` lists every initializer not
    placed (name, shape, file, consumers, why)."""
    pfx = prefix + "." if prefix else ""
    enc = _encoder_prefix(parts)
    out: dict[str, list] = {}
    left: list = []
    notes: list = []
    for ip, p in enumerate(parts):
        add = enc if p.role == "encoder" else ""
        placed: set = set()

        def put(key, src, how, transposed, node=""):
            t = p.inits[src]
            dims = tuple(int(d) for d in t.dims)
            shape = dims[::-1] if transposed else dims
            pl = Placement(add + key, ip, src, how, transposed, shape, dtype_name(t), node)
            have = out.setdefault(pl.key, [])
            if not any(h.part == ip and h.source == src and h.transposed == transposed for h in have):
                have.append(pl)
            placed.add(src)

        def under(mod: str) -> Optional[str]:
            if not pfx:
                return mod
            return mod[len(pfx):] if mod.startswith(pfx) else None

        # 1. by name: initializers and Identity copies named like a state-dict key
        for name in list(p.inits) + list(p.alias):
            src = p.source(name)
            t = p.inits[src]
            base = _strip_added(name)
            top_scalar = len(t.dims) == 0 and any(c.op_type == "Exp" for c in p.consumers.get(name, []))
            if not is_float(t) or (_ANONYMOUS.search(base) or len(t.dims) == 0) and not (
                    top_scalar and base.isidentifier() and not base.startswith(("val_", "_"))):
                continue  # a scalar kept by name only as a top-level parameter's exp (CLIP's logit_scale)
            key = under(base)
            if key is not None and base.rsplit(".", 1)[-1] not in BUFFERS:
                put(key, src, "name", False)
        # 2. anonymous weights by the node that consumes them
        linear_of: dict = {}
        for n in p.nodes:
            if n.op_type not in ("MatMul", "Gemm") or len(n.input) < 2:
                continue
            src = p.source(n.input[1])
            mod, how = _module(n)
            if src is None and mod is not None and under(mod) is not None and p.transposed_source(n.input[1]):
                # x @ Transpose(W): W is torch's (out, in) already (a tied output projection)
                put(under(mod) + ".weight", p.transposed_source(n.input[1]), how, False, n.name)
                linear_of[mod] = n.output[0]
                continue
            if src is None or not is_float(p.inits[src]) or len(p.inits[src].dims) != 2:
                continue
            if src in placed and not _ANONYMOUS.search(_strip_added(src)) or mod is None or under(mod) is None:
                continue  # a named (in, out) tensor (GPT-2's Conv1D) is placed by its name, as stored
            transb = next((a.i for a in n.attribute if a.name == "transB"), 0)
            put(under(mod) + ".weight", src, how, not (n.op_type == "Gemm" and transb), n.name)
            linear_of[mod] = n.output[0]
            if n.op_type == "Gemm" and len(n.input) > 2 and p.source(n.input[2]):
                b = p.source(n.input[2])
                if _ANONYMOUS.search(_strip_added(b)):
                    put(under(mod) + ".bias", b, how, False, n.name)
        head = {out_: mod_ for mod_, out_ in linear_of.items() if mod_.split(".")[-1] == "lm_head"}
        for n in p.nodes:
            mod, how = _module(n)
            if n.op_type == "Add" and mod is None and any(i in head for i in n.input):
                # a (1, vocab) tensor added to the output projection's product at the top level: the head's
                # logits bias (BART, Marian, mBART, Pegasus keep it as the buffer final_logits_bias)
                lm = next(head[i] for i in n.input if i in head)
                for x in n.input:
                    src = p.source(x)
                    if src and src not in placed and is_float(p.inits[src]) and len(p.inits[src].dims) == 2:
                        put(under(lm[: -len("lm_head")] + "final_logits_bias"), src, _module(n)[1] or "node", False,
                            n.name)
            if mod is None or under(mod) is None:
                continue
            key = under(mod)
            ins = [(i, p.source(x)) for i, x in enumerate(n.input)]
            table = ins[0][1] if n.op_type == "Gather" and ins else None
            if how == "metadata" and table in placed and len(p.inits[table].dims) == 2 \
                    and add + key + ".weight" not in out and is_float(p.inits[table]):
                put(key + ".weight", table, how, False, n.name)  # dynamo names a tied table once
            for i, src in ins:
                if src is None or src in placed or not is_float(p.inits[src]) \
                        or not _ANONYMOUS.search(_strip_added(src)):
                    continue
                nd = len(p.inits[src].dims)
                if n.op_type == "Add" and mod in linear_of and linear_of[mod] in n.input and nd == 1:
                    put(key + ".bias", src, how, False, n.name)
                elif n.op_type == "Gather" and i == 0 and nd == 2 and add + key + ".weight" not in out:
                    put(key + ".weight", src, how, False, n.name)
                elif n.op_type in ("LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization") \
                        and nd == 1:
                    put(key + (".weight" if i == 1 else ".bias"), src, how, False, n.name)
                elif n.op_type == "Mul" and nd == 1 and "norm" in key.lower():
                    put(key + ".weight", src, how, False, n.name)
        # 3. what is left: constants (integers, scalars) and anything else, listed with its consumers
        for name, t in p.inits.items():
            if name in placed:
                continue
            dims = tuple(int(d) for d in t.dims)
            users = p.consumers.get(name, []) + [c for a, s in p.alias.items() if s == name
                                                 for c in p.consumers.get(a, [])]
            cons = sorted({c.name or c.op_type for c in users})
            why = ("constant" if not is_float(t) or int(np.prod(dims, dtype=np.int64)) <= 1 else
                   "outside the prefix" if pfx and not _ANONYMOUS.search(_strip_added(name))
                   and not _strip_added(name).startswith(pfx) else "not placed")
            left.append({"name": name, "file": p.path.name, "shape": list(dims), "consumers": cons, "why": why})
            scopes = {(_module(c)[0] or "").lower() for c in users}
            if why == "not placed" and len(dims) >= 2 and any("position" in c.lower() or "embed" in c.lower()
                                                              for c in list(cons) + sorted(scopes)):
                dynamic = any(d is None for _, _, dims_ in p.inputs() for d in dims_)
                notes.append(f"{p.path.name}: {name} {list(dims)} feeds the embeddings ({cons[0]}) but is no "
                             f"weight: a position table folded to the rows used, " + (
                                 "by the graph optimizer (its positions do not depend on the dynamic axes: a "
                                 "vision tower's; export again with torch.onnx.export(..., dynamo=True, "
                                 "optimize=False), as params/README.md shows)" if dynamic else
                                 "the export was made with fixed shapes (export again with dynamic axes: "
                                 "torch.onnx.export(..., dynamo=True, dynamic_shapes={'input_ids': {0: batch, "
                                 "1: seq}, ...}), or Optimum's default)"))
            elif why == "not placed":
                notes.append(f"{p.path.name}: {name} {list(dims)} (used by {cons[0] if cons else 'no node'}) is not "
                             f"placed: no node names a module for it (a computed constant, or a weight the exporter "
                             f"folded into one)")
    _merge_repeated_calls(out)
    return out, left, notes


def _merge_repeated_calls(out: dict) -> None:
    """TorchScript scopes a module's second call ``query_1`` (ALBERT's shared layer, run once per layer) and
    gives that call its own copy of the weight: placed at the module's key when that key is placed too (the
    copies must hold the same values, checked when read)."""
    for key in sorted(out):
        parts = key.split(".")
        for i, c in enumerate(parts[:-1]):
            m = re.match(r"^(.+)_(\d+)$", c)
            if m:
                base = ".".join(parts[:i] + [m.group(1)] + parts[i + 1:])
                if base in out and base != key:
                    out[base].extend(out.pop(key))
                    break


#: model types whose RMSNorm multiplies by ``1 + weight``: a graph computes ``1 + weight`` once, and exporters
#: fold that sum into the initializer the norm's Mul reads (the parameter itself is then not in the file)
ONE_PLUS_NORMS = ("gemma", "gemma2", "gemma3", "gemma3_text")


def unfold_norms(placements: dict, parts: list, model_type: str) -> list:
    """For :data:`ONE_PLUS_NORMS`: a norm weight found anonymous at a Mul holds ``1 + weight``; mark it to have 1
    subtracted (exact: ``s - 1`` is exact for s in [0.5, 2] and ``1 + (s - 1)`` gives s back, so the rebuilt
    norm scales exactly as the graph does). Returns the notes."""
    if model_type not in ONE_PLUS_NORMS:
        return []
    done = []
    for key, pls in placements.items():
        for pl in pls:
            op = next((n.op_type for n in parts[pl.part].nodes if n.name == pl.node), "")
            if key.endswith("norm.weight") and op == "Mul" and _ANONYMOUS.search(_strip_added(pl.source)):
                pl.offset = 1.0
                done.append(key)
    return [f"{len(set(done))} {model_type} norm weights stored as 1 + weight (folded by the exporter): 1 "
            f"subtracted ({sorted(set(done))[0]} ...)"] if done else []


def materialize(placements: dict, parts: list) -> dict:
    """The tensors of the placements (numpy, torch layout); a key held twice must hold the same values."""
    tensors = {}
    for key, pls in placements.items():
        val = None
        for pl in pls:
            a = parts[pl.part].array(pl.source)
            a = np.ascontiguousarray(a.T) if pl.transposed else a
            a = (a - np.asarray(pl.offset, dtype=a.dtype)).astype(a.dtype) if pl.offset else a
            if val is None:
                val, first = a, pl
            elif val.shape != a.shape or not np.array_equal(val, a):
                raise fail(f"{key}: {parts[first.part].path.name}:{first.source} and "
                           f"{parts[pl.part].path.name}:{pl.source} hold different values; refused")
        tensors[key] = val
    return tensors
