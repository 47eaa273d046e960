"""CTranslate2 ``model.bin`` files (binary version 6) read without CTranslate2: the bounded reader.

Format (``ctranslate2/specs/model_spec.py``, ``ModelSpec._serialize``; little-endian)::

    uint32 binary_version (6)          string spec name       uint32 spec revision
    uint32 n_variables, then per variable:
        string name, uint8 rank, uint32 dims[rank], uint8 dtype id, uint32 nbytes, nbytes raw bytes
    uint32 n_aliases, then per alias: string alias, string variable name

A string is ``uint16 length`` (bytes including the trailing NUL), the UTF-8 bytes, the NUL. Dtype ids
(``include/ctranslate2/types.h``, ``_dtype_to_type_id``): 0 float32, 1 int8, 2 int16, 3 int32,
4 float16, 5 bfloat16. Aliases are written for variables equal to an earlier one (a tied output projection, but
also any two tensors that happen to be equal: every all-ones norm of a fresh model).

Bounded: the file must be a regular file (a link to one is followed: a Hugging Face cache snapshot links
``model.bin`` to ``../../blobs/<sha>``), at most :data:`MAX_BYTES`; it is read with bounded ``pread`` calls, each
checked against the file's end first. A truncated file, another binary version, sizes that disagree
(``nbytes != prod(dims) * itemsize``, data beyond the end, trailing bytes), rank > :data:`MAX_RANK`, more than
:data:`MAX_ELEMENTS` elements, a name over :data:`MAX_NAME` bytes, a duplicate name, an unknown dtype: one-line
``ValueError`` naming the file and what is wrong.

:func:`read` returns the values (float16 / bfloat16 become float32 exactly; integers keep their type);
:func:`read_header` walks the same table but reads only the settings (rank-0 variables: head counts, flags), not
the weights' bytes, so a preflight costs a few kilobytes of I/O whatever the file's size. :func:`dequantize`
turns int8 / int16 weights back into float32 with their ``weight_scale`` (``w = q / scale``; int8: one scale per
output row or conv channel, as ctranslate2 4.8.5 writes them; int16: one scalar): not lossless, and listed.
"""
from __future__ import annotations

import json
import os
import stat
import struct
from pathlib import Path
from typing import Optional

import numpy as np

__all__ = ["MAX_BYTES", "DEQUANTIZED", "dequantize", "folder_and_bin", "read", "read_header", "read_json",
           "resolve_aliases"]

#: the largest model.bin read (Whisper large-v3 in float32 is ~6.2 GB; base in float16 ~145 MB)
MAX_BYTES = 8 * 1024 ** 3
MAX_RANK = 8
MAX_ELEMENTS = 2 ** 34
MAX_NAME = 1024
MAX_VARIABLES = 100_000
BINARY_VERSION = 6
#: dtype id -> (numpy dtype of the stored bytes, name)
DTYPES = {0: ("<f4", "float32"), 1: ("i1", "int8"), 2: ("<i2", "int16"), 3: ("<i4", "int32"),
          4: ("<f2", "float16"), 5: ("<u2", "bfloat16")}
#: key of the variables dict listing the variables dequantized from int8/int16 (not a tensor)
DEQUANTIZED = "__dequantized__"


class _Cursor:
    """Bounded reads of an open file: every read is checked against the file's size first."""

    def __init__(self, fd: int, size: int, path: Path):
        self.fd, self.pos, self.path, self.end = fd, 0, path, size

    def fail(self, what: str):
        raise ValueError(f"CTranslate2 file {self.path}: {what}")

    def take(self, n: int, what: str) -> int:
        if n < 0 or self.pos + n > self.end:
            self.fail(f"truncated: {what} needs {n} bytes at offset {self.pos}, the file has {self.end}")
        p = self.pos
        self.pos += n
        return p

    def bytes(self, n: int, what: str) -> bytes:
        p = self.take(n, what)
        chunks, got = [], 0
        while got < n:
            b = os.pread(self.fd, min(n - got, 1 << 30), p + got)
            if not b:
                self.fail(f"truncated while reading {what} (the file shrank)")
            chunks.append(b)
            got += len(b)
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.bytes(struct.calcsize(fmt), what))

    def string(self, what: str) -> str:
        (n,) = self.unpack("<H", f"the length of {what}")
        if n < 1 or n - 1 > MAX_NAME:
            self.fail(f"{what} has length {n} (1..{MAX_NAME + 1} bytes with its NUL)")
        p = self.pos
        raw = self.bytes(n, what)
        if raw[-1] != 0:
            self.fail(f"{what} at offset {p} does not end with a NUL byte")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            self.fail(f"{what} at offset {p} is not UTF-8")


def _open_bounded(path: Path, max_bytes: int) -> tuple[int, int]:
    """An fd on ``path`` (a regular file, or a link to one: what it points at is judged) and its size."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ValueError(f"CTranslate2 file {path}: cannot be read ({exc.strerror})") from None
    target, flags = Path(os.path.realpath(path)), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"CTranslate2 file {path}: not a regular file (a pipe, device or folder); refused")
    fd = os.open(target, flags | getattr(os, "O_NOFOLLOW", 0))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ValueError(f"CTranslate2 file {path}: not a regular file; refused")
    if st.st_size > max_bytes:
        os.close(fd)
        raise ValueError(f"CTranslate2 file {path}: {st.st_size} bytes, over the cap of {max_bytes}")
    return fd, st.st_size


def _to_float(arr: np.ndarray, kind: str) -> np.ndarray:
    if kind == "float16":
        return arr.astype(np.float32)
    if kind == "bfloat16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.copy()  # writable, owns its memory


def read(path, *, max_bytes: int = MAX_BYTES, kinds: Optional[dict] = None, shapes: Optional[dict] = None,
         data: bool = True) -> tuple[str, int, dict, dict]:
    """``(spec_name, revision, {name: np.ndarray}, {alias: variable name})`` of a model.bin (see module doc).

    Floating values come back as float32 (float16 / bfloat16 exactly); integers keep their type.
    ``kinds``, when given, is filled with each variable's stored dtype name (``float16`` ...), for provenance;
    ``shapes`` with each variable's dims. ``data=False``: only rank-0 variables (settings) are read; the weights'
    bytes are skipped (their sizes still checked against the file's end).
    """
    path = Path(path)
    fd, size = _open_bounded(path, max_bytes)
    try:
        if size == 0:
            raise ValueError(f"CTranslate2 file {path}: empty")
        return _parse(_Cursor(fd, size, path), kinds, shapes, data)
    finally:
        os.close(fd)


def _parse(c: _Cursor, kinds: Optional[dict] = None, shapes: Optional[dict] = None,
           data: bool = True) -> tuple[str, int, dict, dict]:
    (version,) = c.unpack("<I", "the binary version")
    if version != BINARY_VERSION:
        c.fail(f"binary version {version}, this reader reads version {BINARY_VERSION} (not a CTranslate2 "
               f"model.bin, or another CTranslate2 release)")
    spec = c.string("the spec name")
    (revision,) = c.unpack("<I", "the spec revision")
    (n,) = c.unpack("<I", "the number of variables")
    if n > MAX_VARIABLES:
        c.fail(f"{n} variables (at most {MAX_VARIABLES})")
    variables: dict[str, np.ndarray] = {}
    for i in range(n):
        name = c.string(f"the name of variable {i}")
        if name in variables:
            c.fail(f"variable {name!r} appears twice")
        (rank,) = c.unpack("<B", f"the rank of {name!r}")
        if rank > MAX_RANK:
            c.fail(f"variable {name!r} has rank {rank} (at most {MAX_RANK})")
        dims = c.unpack(f"<{rank}I", f"the dims of {name!r}") if rank else ()
        count = 1
        for d in dims:
            count *= d
        if count > MAX_ELEMENTS:
            c.fail(f"variable {name!r} has dims {list(dims)}: {count} elements (at most 2**34)")
        (tid,) = c.unpack("<B", f"the dtype of {name!r}")
        if tid not in DTYPES:
            c.fail(f"variable {name!r} has dtype id {tid} (known: {sorted(DTYPES)})")
        np_dt, kind = DTYPES[tid]
        (nbytes,) = c.unpack("<I", f"the byte size of {name!r}")
        want = count * np.dtype(np_dt).itemsize
        if nbytes != want:
            c.fail(f"variable {name!r} says {nbytes} bytes, its dims {list(dims)} of {kind} need {want}")
        if not data and rank > 0:
            c.take(nbytes, f"the data of {name!r}")
            variables[name] = None  # placeholder: the name is known, its bytes were not read
        else:
            arr = np.frombuffer(c.bytes(nbytes, f"the data of {name!r}"), dtype=np_dt, count=count).reshape(dims)
            variables[name] = _to_float(arr, kind)
        if kinds is not None:
            kinds[name] = kind
        if shapes is not None:
            shapes[name] = tuple(int(x) for x in dims)
    (na,) = c.unpack("<I", "the number of aliases")
    if na > MAX_VARIABLES:
        c.fail(f"{na} aliases (at most {MAX_VARIABLES})")
    aliases: dict[str, str] = {}
    for i in range(na):
        alias = c.string(f"alias {i}")
        target = c.string(f"the target of alias {alias!r}")
        if alias in variables or alias in aliases:
            c.fail(f"alias {alias!r} repeats a name")
        if target not in variables:
            c.fail(f"alias {alias!r} names {target!r}, which is not a variable")
        aliases[alias] = target
    if c.pos != c.end:
        c.fail(f"{c.end - c.pos} bytes after the aliases (a CTranslate2 file ends there)")
    return spec, revision, variables, aliases




def dequantize(variables: dict) -> dict:
    """Variables with every int8/int16 ``X/weight`` divided by its ``X/weight_scale`` (scales removed)."""
    out, done = {}, []
    for name, v in variables.items():
        if name.endswith("/weight_scale"):
            continue
        scale = variables.get(name + "_scale") if name.endswith("/weight") else None
        if scale is not None and v.dtype in (np.int8, np.int16):
            s = np.asarray(scale, dtype=np.float32)
            if s.ndim == 1 and s.shape[0] == v.shape[0]:  # int8: one scale per output row / channel
                s = s.reshape(-1, *([1] * (v.ndim - 1)))
            elif s.ndim == v.ndim - 1 and s.shape[0] == v.shape[0]:  # amax over axis 1 of an N-d weight
                s = np.expand_dims(s, 1)
            elif s.ndim != 0:
                raise ValueError(f"CTranslate2 variable {name!r}: weight_scale of shape {s.shape} for {v.shape}")
            v = v.astype(np.float32) / s
            done.append(name)
        elif v.dtype in (np.int8, np.int16) and v.ndim > 1:
            raise ValueError(f"CTranslate2 variable {name!r} is {v.dtype} without a weight_scale")
        out[name] = v
    if done:
        out[DEQUANTIZED] = sorted(done)
    return out


def resolve_aliases(variables: dict, aliases: Optional[dict]) -> dict:
    v = {k: a for k, a in variables.items() if k != DEQUANTIZED}
    for alias, target in (aliases or {}).items():
        if alias in v or target not in variables:
            raise ValueError(f"CTranslate2 alias {alias!r} -> {target!r} is not usable")
        v[alias] = variables[target]
    return v


def read_header(path, *, max_bytes: int = MAX_BYTES) -> tuple[str, int, dict, dict, dict, dict]:
    """``(spec, revision, shapes, kinds, settings, aliases)`` of a model.bin without its weights' bytes:
    ``shapes``/``kinds``: every variable's dims and stored dtype; ``settings``: the rank-0 variables' values."""
    kinds: dict = {}
    shapes: dict = {}
    spec, revision, variables, aliases = read(path, max_bytes=max_bytes, kinds=kinds, shapes=shapes, data=False)
    return spec, revision, shapes, kinds, {k: v for k, v in variables.items() if v is not None}, aliases


def folder_and_bin(folder_or_model_bin, model_bin: str = "model.bin") -> tuple[Path, Path]:
    """``(folder, model.bin path)`` of a CTranslate2 model folder or of its ``model.bin`` (one line when neither)."""
    p = Path(folder_or_model_bin)
    if p.is_dir():
        return p, p / model_bin
    if p.exists() or p.is_symlink():
        return p.parent, p
    raise ValueError(f"CTranslate2 model {p}: no such file or folder (give the folder that holds model.bin, "
                     f"or the model.bin itself)")


def read_json(path: Path, cap: int = 64 * 1024 ** 2) -> Optional[dict]:
    """A JSON file of a CTranslate2 folder (config.json, the vocabulary), None when absent; bounded, one line
    when it is not a regular file, too big or not JSON."""
    path = Path(path)
    if not path.exists():
        return None
    if not path.is_file() or path.stat().st_size > cap:
        raise ValueError(f"CTranslate2 file {path}: not a regular file of at most {cap} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"CTranslate2 file {path}: not JSON ({str(exc).splitlines()[0]})") from None
