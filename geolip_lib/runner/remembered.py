"""Answers of the pre-kernel checks and of the plan remembered on disk, keyed by a digest of what they
read, so that a refusal or ``--plan`` of a profile seen before imports neither torch nor
transformers.

Some answers need those packages only to be computed: the fields of a transformers config class (the
check of a params file's ``config:``), the parameter count of a model built on the meta device (the
plan), the length of a tokenizer, a claims file validated by :mod:`geolip_lib.claims` (whose package
imports the metrics, torch and scipy). Importing them costs 10-20 s of CPU on a 2-core box, before the
first line of a refusal. Each such answer is a function of inputs that are cheap to digest: the params
of a tiny model (as loaded), the library's code (:func:`geolip_lib.provenance.library_hash`), the
installed versions of the packages that answer, the files read (by content, or by name, size and
mtime). :func:`remembered` looks the answer up under ``<cache>/remembered/<kind>/<sha256 of the
key>.json``; the first time, it computes it and writes it (atomically; a read-only cache only costs the
next computation). An exception is never remembered: the computation runs again and raises it.

A record holds its whole key (compared on reading), the sha256 of its value (a record whose value was
damaged is computed again, with one warning line, as for :mod:`geolip_lib.nullcache`'s records), the
value in an exact encoding, and a signature under this user's key, kept outside the cache
(:mod:`geolip_lib.cache_auth`): a record edited with its sha256 recomputed (a refusal turned into
``[]``) does not verify and is computed again, with one line. A record is read as data: a named pipe,
a device, a link or a file over :data:`MAX_RECORD_BYTES` is a miss, never a hang. Values are kept in
the exact encoding (:func:`encode`:
tuples, dicts with non-string keys, ints and floats kept apart); a value or key that is not plain data
(a date, a path, an object) is not remembered. ``GEOLIP_REMEMBER=0`` turns the cache off (every answer
is computed, as before). The callers: :mod:`.model_checks` (a tiny model's problems), :mod:`.model_sizes`
(a tiny model's size, the twin's limit), :mod:`.jobs` (a claims file's problems).

An answer that reads a model's own files (a PyPI package's folder, a GGUF, a converted ONNX or CTranslate2
file, a ``local_dir``) goes through :func:`remembered_reading`: the files are found while computing it, so
the record keeps the :func:`path_state` of each, and is read back only while each is as it was (a gigabyte
GGUF is not hashed on every refusal: its size, mtime, ctime and inode stand for its content).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

from ..cache_auth import read_or_none, write_record
from ..nullcache import value_digest
from ..paths import cache_root
from ..provenance import library_hash

T = TypeVar("T")

#: bump when what a record holds, or how a key is written, changes: every answer is computed afresh
FORMAT = 3
#: what one remembered answer may weigh (the largest, the fitted costs, are a few kB)
MAX_RECORD_BYTES = 16 * 1024 * 1024
#: the packages whose answers are remembered (a version change is a new key)
PACKAGES = ("torch", "transformers", "tokenizers", "safetensors", "huggingface_hub", "open_clip_torch", "pydantic",
            "PyYAML")


class Unrememberable(TypeError):
    """A key or value that is not plain data (it is computed every time instead)."""


def encode(value: Any) -> Any:
    """``value`` as JSON that :func:`decode` turns back into an equal value of the same types: None, bool,
    int, float, str and lists as they are; a tuple ``{"t": [...]}``, a dict ``{"d": {...}}`` (string keys)
    or ``{"p": [[key, value], ...]}`` (other keys). Anything else raises :class:`Unrememberable`."""
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [encode(v) for v in value]
    if t is tuple:
        return {"t": [encode(v) for v in value]}
    if t is dict:
        if all(type(k) is str for k in value):
            return {"d": {k: encode(v) for k, v in value.items()}}
        return {"p": [[encode(k), encode(v)] for k, v in value.items()]}
    raise Unrememberable(f"not plain data: {t.__name__}")


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote (``ValueError`` for what it never writes)."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if set(data) == {"t"} and isinstance(data["t"], list):
            return tuple(decode(v) for v in data["t"])
        if set(data) == {"d"} and isinstance(data["d"], dict):
            return {k: decode(v) for k, v in data["d"].items()}
        if set(data) == {"p"} and isinstance(data["p"], list):
            out = {}
            for pair in data["p"]:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError("a broken pair")
                k = decode(pair[0])
                if isinstance(k, (list, dict)):
                    raise ValueError("an unhashable key")
                out[k] = decode(pair[1])
            return out
        raise ValueError("an unknown tag")
    return data


@functools.lru_cache(maxsize=1)
def library() -> str:
    """sha256 of the library's code (once per process: a run does not edit it)."""
    return library_hash()


@functools.lru_cache(maxsize=1)
def versions() -> tuple:
    """``(python, (package, version or None), ...)`` of :data:`PACKAGES`."""
    out = []
    for dist in PACKAGES:
        try:
            out.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append((dist, None))
    return (sys.version, tuple(out))


def file_digest(path: Path) -> Optional[str]:
    """sha256 of a regular file's bytes, None when it is not one (or unreadable)."""
    try:
        p = Path(path)
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
    except OSError:
        return None


def enabled() -> bool:
    return os.environ.get("GEOLIP_REMEMBER", "1") != "0"


def record_path(kind: str, key_text: str) -> Path:
    return cache_root() / "remembered" / kind / f"{hashlib.sha256(key_text.encode()).hexdigest()}.json"


def remembered(kind: str, key: Any, compute: Callable[[], T], check: Callable[[Any], bool] = lambda v: True) -> T:
    """``compute()``, or what it returned before for the same ``key`` (module docstring). ``key``: plain data
    holding everything the answer depends on besides the library code and :data:`PACKAGES` (both added
    here); ``check``: whether a value read back has the shape the caller expects (else it is recomputed)."""
    return _remember(kind, key, compute, check, None)


def _remember(kind: str, key: Any, compute: Callable[[], T], check: Callable[[Any], bool],
              reads: Optional[Callable[[], Optional[list]]]) -> T:
    """:func:`remembered` (``reads`` None) and :func:`remembered_reading` (a record with the files' states)."""
    if not enabled():
        return compute()
    try:
        key_text = json.dumps([FORMAT, kind, encode(key), library(), encode(versions())], allow_nan=True)
    except (Unrememberable, ValueError):
        return compute()
    path = record_path(kind, key_text)
    # read as data (a pipe, a device, a link or an oversized file is a miss, never a hang) and authenticated
    # (signed under this user's key, kept outside the cache): a miss otherwise, said in one line
    rec = read_or_none(path, "remembered answer", "computing it again", MAX_RECORD_BYTES)
    try:
        if rec is not None and rec.get("key") == key_text and "value" in rec and (
                reads is None or _as_they_were(rec.get("reads"))):
            if rec.get("sha256") != value_digest(rec["value"], allow_nan=True):  # damaged: said once
                print(f"warning: remembered answer {path}: its value does not match its sha256 (edited or damaged); "
                      "computing it again", file=sys.stderr)
            else:
                value = decode(rec["value"])
                if check(value):
                    return value
    except (ValueError, RecursionError, TypeError, KeyError):
        pass  # broken: computed and written again
    value = compute()
    rec = {"key": key_text}
    if reads is not None:
        try:
            paths = reads()
        except Exception:  # noqa: BLE001 - the files cannot be named: not remembered, computed next time
            paths = None
        if not paths or not all(isinstance(p, str) for p in paths):
            return value
        rec["reads"] = [[p, path_state(p)] for p in paths]
        if any(state is None for _, state in rec["reads"]):
            return value
    try:
        plain = encode(value)
        write_record(path, {**rec, "value": plain, "sha256": value_digest(plain, allow_nan=True)}, allow_nan=True)
    except (OSError, Unrememberable, ValueError):
        pass
    return value


def _as_they_were(reads: Any) -> bool:
    """A record's ``reads`` (``[[path, state], ...]``, not empty) are each in the state recorded."""
    return (isinstance(reads, list) and bool(reads)
            and all(isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and path_state(r[0]) == r[1]
                    for r in reads))


def path_state(path: str) -> Any:
    """What a file or folder is now, for :func:`remembered_reading`: a file's ``[kind, size, mtime_ns, ctime_ns,
    inode]`` (links followed), a folder's ``[name, that]`` of each entry directly in it (sorted), None when it
    does not exist. A rewritten, replaced, touched, added or removed file changes it; ctime and inode catch a
    file replaced by one of the same size and mtime (``cp -p``, ``touch -r``)."""
    def one(st: os.stat_result) -> list:
        kind = "file" if stat.S_ISREG(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"
        return [kind, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]

    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return one(st)
    out = []
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    out.append([e.name, one(os.stat(e.path))])
                except OSError:  # a broken link: its own state
                    out.append([e.name, None])
    except OSError:
        return None
    return [one(st), sorted(out)]


def remembered_reading(kind: str, key: Any, compute: Callable[[], T], reads: Callable[[], Optional[list]],
                       check: Callable[[Any], bool] = lambda v: True) -> T:
    """:func:`remembered` for an answer that also depends on files found while computing it (a model's folder,
    its GGUF file): ``reads()``, called after ``compute()``, names them (paths as strings; None: the answer is
    not remembered, e.g. nothing was at hand yet). The record keeps each one's :func:`path_state`; it is read
    back only while every one of them is as it was (a changed, added, removed or replaced file in a folder
    named, or the file named, is a new computation)."""
    return _remember(kind, key, compute, check, reads)


def lines_ok(value: Any) -> bool:
    """A list of problem lines (strings)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


__all__ = ["FORMAT", "PACKAGES", "Unrememberable", "decode", "enabled", "encode", "file_digest",
           "library", "lines_ok", "path_state", "record_path", "remembered", "remembered_reading", "versions"]
