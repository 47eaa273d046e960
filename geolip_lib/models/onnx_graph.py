"""Bounded reading of ONNX files: one file, or the set of parts an exporter wrote for one model.

Why by hand: ``onnx.load`` follows any external-data path it is given and trusts every byte count; a model
file downloaded from elsewhere must not make us read outside its folder, a FIFO, or more than the cap. So:

* the path must be a regular file of at most ``max_bytes`` (4 GiB: protobuf itself stops at 2 GiB, external
  data counts towards the cap too);
* external data is accepted only in a regular file inside the ONNX file's own folder (no absolute path, no
  ``..``, no link out of it), with offset + length inside that file;
* every initializer's data must hold exactly dims x dtype; sparse initializers are refused.

Optimum writes one file per part for encoder-decoders (``encoder_model.onnx``, ``decoder_model.onnx``,
``decoder_with_past_model.onnx``, ``decoder_model_merged.onnx`` whose two branches are ``If`` subgraphs):
naming any of them reads every part present in that folder (:func:`load`). Nodes are walked into subgraphs
(``If``/``Loop``/``Scan`` bodies) so an initializer's consumers are found wherever they are.

:class:`Part` reads no tensor data until :meth:`Part.array` is asked for one (internal data is inside the
protobuf, so parsing the file holds it in memory, but nothing is decoded or checked before it is used).
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

__all__ = ["MAX_BYTES", "OPTIMUM_PARTS", "OnnxImportError", "Part", "fail", "load", "load_proto", "regular_file"]

#: the largest ONNX file read (with its external data)
MAX_BYTES = 4 * 1024**3
#: Optimum's part files of one model -> their role
OPTIMUM_PARTS = {"encoder_model.onnx": "encoder", "decoder_model.onnx": "decoder",
                 "decoder_with_past_model.onnx": "decoder_with_past", "decoder_model_merged.onnx": "decoder_merged"}
#: suffixes an exporter adds to initializer names (Optimum's merge of two decoders)
ADDED_SUFFIXES = ("_merged_0",)
_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}
_READABLE = _FLOATS | {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT8, onnx.TensorProto.UINT8,
                       onnx.TensorProto.BOOL}


class OnnxImportError(ValueError):
    """An ONNX file that cannot be read as the model asked for (the message is one line)."""


def fail(msg: str) -> OnnxImportError:
    return OnnxImportError(" ".join(str(msg).split()))


def regular_file(path: Path, max_bytes: int, what: str) -> os.stat_result:
    try:
        st = path.stat()
    except OSError as e:
        raise fail(f"{what} {path}: cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise fail(f"{what} {path} is not a regular file")
    if st.st_size > max_bytes:
        raise fail(f"{what} {path} is {st.st_size:,} B, over the cap of {max_bytes:,} B")
    return st


def load_proto(path: Path, max_bytes: int = MAX_BYTES) -> onnx.ModelProto:
    """The model's protobuf, external data not loaded (its references are checked when a tensor is read)."""
    regular_file(path, max_bytes, "ONNX file")
    try:
        model = onnx.load_model(str(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError) as e:
        raise fail(f"{path.name} is not a readable ONNX model ({type(e).__name__}: {e})") from None
    if not model.graph.node:
        raise fail(f"{path.name} has no graph nodes (not an ONNX model, or truncated)")
    if len(model.graph.sparse_initializer):
        raise fail(f"{path.name} has sparse initializers ({model.graph.sparse_initializer[0].name} ...): not supported")
    return model


def _extent(t, folder: Path) -> tuple:
    """Where an initializer stored outside the model file lies: ``(file, offset, length)``, checked to be a plain
    path inside ``folder`` and a range inside that file (nothing is read)."""
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    if not loc or os.path.isabs(loc) or Path(loc).is_absolute() or ".." in Path(loc).parts:
        raise fail(f"initializer {t.name}: external data {loc!r} is not a plain path inside the model's folder; "
                   f"refused")
    target = (folder / loc).resolve()
    if folder.resolve() not in target.parents:
        raise fail(f"initializer {t.name}: external data {loc!r} resolves outside the model's folder; refused")
    st = regular_file(target, MAX_BYTES, f"initializer {t.name}: external data")  # the total is checked below
    try:
        offset = int(info.get("offset", 0))
        length = int(info.get("length", st.st_size - offset))
    except ValueError:
        raise fail(f"initializer {t.name}: external data offset/length are not integers") from None
    if offset < 0 or length < 0 or offset + length > st.st_size:
        raise fail(f"initializer {t.name}: external data [{offset}, {offset + length}) lies outside {loc} "
                   f"({st.st_size} B)")
    return target, offset, length


def _external(t, folder: Path, budget: list) -> bytes:
    """The bytes of an initializer stored outside the model file, if they lie inside ``folder``."""
    target, offset, length = _extent(t, folder)
    budget[0] -= length
    if budget[0] < 0:
        raise fail(f"initializer {t.name}: external data takes the file and its data over the cap")
    with open(target, "rb") as f:
        f.seek(offset)
        return f.read(length)


def array(t, folder: Path, budget: list) -> np.ndarray:
    """An initializer as a numpy array, after checking that its data holds exactly dims x dtype."""
    dims = tuple(int(d) for d in t.dims)
    if any(d < 0 for d in dims):
        raise fail(f"initializer {t.name}: negative dims {dims}")
    n = int(np.prod(dims, dtype=np.int64))
    if t.data_type == onnx.TensorProto.BFLOAT16:
        raise fail(f"initializer {t.name}: bfloat16 is not read (export in float32 or float16)")
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
    except (KeyError, TypeError, ValueError):
        raise fail(f"initializer {t.name}: unknown data type {t.data_type}") from None
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raw = _external(t, folder, budget)
    elif t.HasField("raw_data"):
        raw = t.raw_data
    else:
        raw = None
    if raw is not None:
        if len(raw) != n * dtype.itemsize:
            raise fail(f"initializer {t.name}: {len(raw)} B of data, dims {list(dims)} x {dtype} need "
                       f"{n * dtype.itemsize} B")
        if t.data_type not in _READABLE:
            raise fail(f"initializer {t.name}: data type {onnx.TensorProto.DataType.Name(t.data_type)} not supported")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).reshape(dims).astype(dtype)
    fld = onnx.helper.tensor_dtype_to_field(t.data_type)
    count = len(getattr(t, fld))
    if t.data_type in (onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128):
        count //= 2
    if count != n:
        raise fail(f"initializer {t.name}: {count} values in {fld}, dims {list(dims)} need {n}")
    return numpy_helper.to_array(t)


def dtype_name(t) -> str:
    return onnx.helper.tensor_dtype_to_np_dtype(t.data_type).name if t.data_type != onnx.TensorProto.BFLOAT16 \
        else "bfloat16"


def is_float(t) -> bool:
    return t.data_type in _FLOATS


def _walk(graph, out: list, inits: dict, path: Path) -> None:
    """Every node of ``graph`` and its subgraphs (If/Loop/Scan bodies), and every initializer."""
    for t in graph.initializer:
        if t.name in inits:
            raise fail(f"{path.name}: initializer {t.name} appears twice")
        inits[t.name] = t
    for n in graph.node:
        out.append(n)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _walk(a.g, out, inits, path)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    _walk(g, out, inits, path)


@dataclass
class Part:
    """One ONNX file of a model: its nodes (subgraphs included), initializers, consumers and Identity aliases."""

    path: Path
    role: str
    proto: onnx.ModelProto
    budget: list
    nodes: list = field(default_factory=list)
    inits: dict = field(default_factory=dict)
    consumers: dict = field(default_factory=dict)
    alias: dict = field(default_factory=dict)
    producers: dict = field(default_factory=dict)
    _arrays: dict = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path, role: str, max_bytes: int) -> "Part":
        proto = load_proto(path, max_bytes)
        part = cls(path, role, proto, [max_bytes - path.stat().st_size])
        _walk(proto.graph, part.nodes, part.inits, path)
        for n in part.nodes:
            for i in n.input:
                part.consumers.setdefault(i, []).append(n)
            for o in n.output:
                part.producers[o] = n
            if n.op_type == "Identity" and len(n.input) == 1 and n.input[0] in part.inits:
                part.alias[n.output[0]] = n.input[0]  # an exporter's deduplication: a named copy of an initializer
        return part

    def source(self, name: str) -> Optional[str]:
        """The initializer behind a tensor name (itself, or the one an Identity copies), or None."""
        name = self.alias.get(name, name)
        return name if name in self.inits else None

    def transposed_source(self, name: str) -> Optional[str]:
        """The 2-D initializer that a Transpose node turns into ``name`` (Optimum's tied output projection:
        ``MatMul(x, Transpose(wte))``), or None."""
        n = self.producers.get(name)
        if n is None or n.op_type != "Transpose" or len(n.input) != 1:
            return None
        perm = next((list(a.ints) for a in n.attribute if a.name == "perm"), [1, 0])
        src = self.source(n.input[0])
        return src if src is not None and len(self.inits[src].dims) == 2 and perm == [1, 0] else None

    def check_extents(self) -> None:
        """Every initializer stored outside the file lies inside its data file: a truncated or damaged data file
        is refused before a model is written, even where the damage falls on a tensor that is not placed (a
        buffer, a constant) -- the header reads no data and does not check this."""
        folder = self.path.resolve().parent
        for t in self.inits.values():
            if t.data_location == onnx.TensorProto.EXTERNAL:
                _extent(t, folder)

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = array(self.inits[name], self.path.resolve().parent, self.budget)
        return self._arrays[name]

    def inputs(self) -> list:
        """The graph's inputs that are not initializers: (name, elem dtype, dims with None for symbolic)."""
        out = []
        for i in self.proto.graph.input:
            if i.name in self.inits:
                continue
            tt = i.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim]
            out.append((i.name, tt.elem_type, dims))
        return out

    def outputs(self) -> list:
        return [o.name for o in self.proto.graph.output]

    def opset(self) -> int:
        return max((o.version for o in self.proto.opset_import if o.domain in ("", "ai.onnx")), default=0)


def load(path: Path, max_bytes: int = MAX_BYTES) -> list:
    """The parts of the model ``path`` belongs to: every Optimum part present beside it when it is one of them,
    else the file alone."""
    path = Path(path)
    if path.name not in OPTIMUM_PARTS:
        return [Part.read(path, "model", max_bytes)]
    regular_file(path, max_bytes, "ONNX file")
    parts = []
    for fname, role in OPTIMUM_PARTS.items():
        p = path.parent / fname
        if p == path or p.exists():
            parts.append(Part.read(p, role, max_bytes))
    return parts
