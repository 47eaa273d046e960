"""Where a result came from: code, packages, model, weights, device — and whether it is stale.

:func:`collect` is what every ``metrics.json`` records under ``"provenance"`` (the notebook
runtime calls it in :func:`geolip_lib.runtime.Job.finish`):

- ``git``: the commit (``git rev-parse HEAD``) and a dirty flag (tracked files modified);
- ``versions``: python, torch, transformers, open_clip, numpy and geolip;
- ``library_hash``: sha256 over the library's source files (what ``--resume`` compares);
- ``models``: for each model the notebook loaded, its source, id, revision (the hub's
  commit hash where there is one), the sha256 of each weight file, the dtype it computes in
  (``dtype``) and the dtype its weights are stored in (``stored_dtype``, from the safetensors
  headers: ``int8`` for a quantised file that was loaded as float32 says so);
- ``device``/``dtype``, ``parameters`` and ``wall_time_s`` (added by the runtime).

sha256 of a multi-GB weight file takes tens of seconds, so digests are cached in
``<cache>/sha256.json`` keyed by the file's path, size, mtime, ctime, inode and device
(:func:`sha_cache_key`, the fields of ``runner.remembered.path_state``): a file replaced by one of the
same size and mtime (``cp -p``, ``rsync -a``, ``touch -r``) has another inode or ctime, and neither can
be set back by hand, so it is hashed again. The cache is one record signed under the user's key
(:mod:`geolip_lib.cache_auth`, as the null cache and the remembered answers are): an entry planted by hand,
or a file written by another user or an older version, is not read (one ``warning:`` line) and the file is
hashed. It is read bounded (a regular file of at most :data:`SHA_CACHE_MAX_BYTES`, never a pipe or a link;
a larger, malformed or foreign one is read as empty and rebuilt), and kept small: each write drops the
entries of files that are gone or changed since, and keeps at most :data:`SHA_CACHE_MAX_ENTRIES`, the
newest. A value that is not 64 hex digits is ignored.

What a derived folder holds (a dequantized GGUF, a converted ONNX / CTranslate2 file, a rounded or
canonical-layout copy, an assembled package) is recorded when it is made (:func:`folder_record`: each
file's size, sha256 and :func:`file_state`) and checked on every use (:func:`folder_problem`): a file
replaced, added or removed since makes the copy rebuilt, never read as the source's.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import stat
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from safetensors import safe_open

from . import cache_auth
from .lazy import lazy
from .paths import ROOT, cache_root
from .roots import read_file_bytes

torch = lazy("torch")  # the device of a run (torch.cuda), read when a provenance is written

LIBRARY = Path(__file__).resolve().parent
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
PACKAGES = {"torch": "torch", "transformers": "transformers", "open_clip": "open_clip_torch", "numpy": "numpy",
            "geolip": "geolip"}


def git_info(root: Path = ROOT) -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout at ``root``."""
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


@lru_cache(maxsize=1)
def versions() -> dict:
    """Versions of python and the packages a result depends on (None when not installed)."""
    out = {"python": platform.python_version()}
    for key, dist in PACKAGES.items():
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[key] = None
    return out


def tree_hash(paths: Iterable[Path], root: Path | None = None) -> str:
    """sha256 over the (relative path, content) of ``paths``, in sorted order."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        rel = p.relative_to(root) if root else p
        h.update(str(rel).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def library_hash() -> str:
    """sha256 of every ``*.py`` file of ``geolip_lib`` (a code change makes results stale)."""
    return tree_hash((p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts), LIBRARY)


_HEX64 = re.compile(r"[0-9a-f]{64}")
#: the most ``sha256.json`` may weigh (an entry is about 250 bytes: :data:`SHA_CACHE_MAX_ENTRIES` fit well under it)
SHA_CACHE_MAX_BYTES = 2 * 1024 * 1024
#: the most entries ``sha256.json`` keeps (the newest): a checkout's weight files, converted and rounded copies
SHA_CACHE_MAX_ENTRIES = 4096


def file_state(st: os.stat_result) -> list[int]:
    """What a file is on disk without reading it: ``[size, mtime_ns, ctime_ns, inode, device]``. A rewrite, a
    replacement (``cp -p``, ``rsync -a``: another inode or ctime) or a touch changes it; ctime cannot be set by
    hand, so a file given back its old size and mtime still differs."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def sha_cache_key(path: Path, st: os.stat_result) -> str:
    """The key of ``path`` (absolute) in ``sha256.json``: the path and its :func:`file_state`. What the key binds
    is what stands for the content: a planted entry must name the file's inode, ctime and device of the moment,
    and goes stale at the next change of the file; the value must be 64 hex digits."""
    return "|".join([str(path), *map(str, file_state(st))])


#: the refusals of a sha256 cache already said in this process, with the file's state (a cache that cannot be
#: rewritten is said once, not on every file hashed; one edited again is said again)
_SAID: set = set()


def _read_sha_cache(cache: Path) -> dict:
    """The digests of ``sha256.json`` (a record ``{"entries": {key: sha256}}`` signed under the user's key,
    :mod:`.cache_auth`) that have their shape: string keys to 64 lowercase hex digits. Read bounded (a regular
    file of at most :data:`SHA_CACHE_MAX_BYTES`, never a pipe or a link); anything else is read as empty and
    rebuilt: a file that is a list, a number, ``NaN``, damaged, oversized or not signed by this user costs a
    re-hash (said in one line), never a job (``[]`` failed every job before; a 254 MB file was read whole on
    every call; an entry planted by hand was taken as the file's digest)."""
    if cache_auth.key() is None:  # no usable key (said once by cache_auth): nothing cached is trusted
        return {}
    try:
        rec = cache_auth.read_record(cache, SHA_CACHE_MAX_BYTES)
    except FileNotFoundError:
        return {}
    except (OSError, cache_auth.RecordRefused) as exc:
        try:
            said = (str(exc), *file_state(os.lstat(cache)))  # the same refusal of the same file: said once
        except OSError:
            said = (str(exc),)
        if said not in _SAID:
            _SAID.add(said)
            print(f"warning: sha256 cache {exc}; hashing the file again", file=sys.stderr, flush=True)
        return {}
    known = rec.get("entries")
    if not isinstance(known, dict):
        return {}
    return {k: v for k, v in known.items() if isinstance(v, str) and _HEX64.fullmatch(v)}


def _write_sha_cache(cache: Path, entries: dict) -> None:
    """``entries`` as the signed record of ``sha256.json`` (atomically; nothing is written without a usable key,
    and a read-only cache only costs the next run a re-hash)."""
    try:
        cache_auth.write_record(cache, {"entries": entries})
    except OSError:
        pass


def _still_current(key: str) -> bool:
    """An entry whose file is still there as it was when hashed (a gone or changed file's entry can never be
    read again: it is dropped)."""
    path = key.rsplit("|", 5)[0]
    try:
        return sha_cache_key(Path(path), os.stat(path)) == key
    except OSError:
        return False


def hash_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 4 MiB blocks (no cache: :func:`file_sha256` caches it)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: str | os.PathLike, cache: Path | None = None) -> str:
    """sha256 of a file, cached in ``<cache>/sha256.json`` by its path and :func:`file_state` (module docstring)."""
    path = Path(path).resolve()
    key = sha_cache_key(path, path.stat())
    cache = cache or cache_root() / "sha256.json"
    known = _read_sha_cache(cache)
    if key in known:
        return known[key]
    digest = hash_file(path)
    if sha_cache_key(path, path.stat()) != key:  # changed while it was read: not remembered under either state
        return digest
    known = _read_sha_cache(cache)  # re-read before writing: another job may have added entries meanwhile
    kept = [(k, v) for k, v in known.items() if k != key and _still_current(k)]
    kept = kept[-(SHA_CACHE_MAX_ENTRIES - 1):] + [(key, digest)]
    _write_sha_cache(cache, dict(kept))
    return digest


def folder_record(folder: Path, skip: Iterable[str] = ()) -> dict:
    """``{relative path: {"bytes", "sha256", "state"}}`` of every regular file under ``folder`` (but ``skip``):
    what a derived folder holds when it is made, kept in its own record and checked by :func:`folder_problem`.
    ``state`` is :func:`file_state` without the device: renaming the folder into place keeps it."""
    folder = Path(folder)
    out = {}
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder).as_posix()
        if rel in skip or f.is_symlink() or not f.is_file():
            continue
        st = f.stat()
        out[rel] = {"bytes": st.st_size, "sha256": hash_file(f), "state": file_state(st)[:4]}
    return out


def folder_problem(folder: Path, record, skip: Iterable[str] = ()) -> str:
    """Why ``folder`` no longer holds what :func:`folder_record` recorded, or ``""``: no record, a file added,
    removed, replaced by a link, or whose bytes differ. A file as it was (its state unchanged) is not read; one
    whose state changed (the folder copied, restored) is hashed (:func:`file_sha256`, cached by its new state)
    and kept when its bytes are the recorded ones."""
    folder = Path(folder)
    if not isinstance(record, dict) or not record:
        return "its record lists no files (made by an older version, or edited)"
    skip = set(skip)
    found = sorted(f.relative_to(folder).as_posix() for f in folder.rglob("*")
                   if f.relative_to(folder).as_posix() not in skip and (f.is_symlink() or not f.is_dir()))
    extra = sorted(set(found) - set(record))
    if extra:
        return f"{extra[0]} was added after the copy was made"
    for rel, want in sorted(record.items()):
        f = folder / rel
        if not isinstance(want, dict) or not isinstance(want.get("sha256"), str):
            return f"its record of {rel} is not a digest (edited)"
        try:
            st = os.lstat(f)
        except OSError:
            return f"{rel} is missing (the copy lists it)"
        if not stat.S_ISREG(st.st_mode):
            return f"{rel} is not the regular file written when the copy was made"
        if file_state(st)[:4] == want.get("state") and st.st_size == want.get("bytes"):
            continue
        if st.st_size != want.get("bytes"):
            return f"{rel} has {st.st_size} bytes, {want.get('bytes')} when the copy was made (replaced)"
        got = file_sha256(f)
        if got != want["sha256"]:
            return f"{rel} is not the file written when the copy was made (sha256 {got[:12]}..., recorded " \
                   f"{str(want['sha256'])[:12]}...)"
    return ""


#: what a cache entry's own record may weigh (the file list of a folder: a few kB)
RECORD_MAX_BYTES = 1 << 20


def recorded_problem(folder: Path, record: str) -> str:
    """Why ``folder`` no longer holds what its own record file ``record`` lists (a JSON object whose ``files`` is
    its :func:`folder_record`, written last when the folder was made), or ``""``: the record missing or
    unreadable (read bounded, never a pipe: :func:`geolip_lib.roots.read_file_bytes`), or :func:`folder_problem`.
    One home for the caches that record what they hold (weight copies, tiny models, tokenizers)."""
    try:
        rec = json.loads(read_file_bytes(Path(folder) / record, RECORD_MAX_BYTES, what="a cache entry's record")
                         .decode("utf-8"))
    except (OSError, ValueError) as exc:
        return (str(exc).splitlines() or [""])[0] or type(exc).__name__
    return folder_problem(folder, rec.get("files") if isinstance(rec, dict) else None, skip=[record])


#: safetensors' dtype codes -> torch's names (what ``dtype`` in the provenance uses)
SAFETENSORS_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
                      "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "U16": "uint16", "U32": "uint32",
                      "U64": "uint64", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


def dtype_name(code: str) -> str:
    """torch's name of a safetensors dtype code (``I8`` -> ``int8``); the code itself when unknown."""
    return SAFETENSORS_DTYPES.get(code, code)


def tensor_headers(files: Iterable[Path]) -> dict[str, tuple[str, tuple, Path]]:
    """``name -> (safetensors dtype code, shape, file)`` of every tensor in the ``*.safetensors``
    ``files``, read from their headers only (``safe_open``: no tensor data is read)."""
    out: dict[str, tuple[str, tuple, Path]] = {}
    for f in files:
        if Path(f).suffix != ".safetensors":
            continue
        with safe_open(str(f), framework="pt") as fh:
            for k in fh.keys():
                sl = fh.get_slice(k)
                out[k] = (sl.get_dtype(), tuple(sl.get_shape()), Path(f))
    return out


def stored_dtype(files: Iterable[Path]) -> str | None:
    """The dtype the weights are stored in: one name (``float16``), or each with its tensor
    count when they differ (``float32 (198), int64 (1)``); None without a readable safetensors file."""
    try:
        heads = tensor_headers(files)
    except Exception:  # noqa: BLE001 - a header preflight would have refused; provenance never fails a job
        return None
    counts: dict[str, int] = {}
    for code, _, _ in heads.values():
        counts[dtype_name(code)] = counts.get(dtype_name(code), 0) + 1
    if not counts:
        return None
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} ({v})" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def weight_files(directory: Path | None) -> list[Path]:
    if directory is None or not Path(directory).is_dir():
        return []
    return sorted(p for p in Path(directory).iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def model_provenance(lm: Any) -> dict:
    """Source, id, revision and weight digests of a :class:`~geolip_lib.models.LoadedModel`.

    Weight files are the files the model was read from (``lm.source_files``: the safetensors or
    ``pytorch_model.bin`` of a hub snapshot, local, package or tiny-cache folder, a GGUF file),
    else those of its ``weights_dir``. When the weight battery reads another folder (the
    canonical-layout copy of GPT-2 / GPT-NeoX / BLOOM / Falcon, the safetensors copy of a
    ``.bin`` checkpoint or of a dequantized GGUF), ``weights_copy`` names it.

    A model read from a GGUF file has ``dequantized: true`` and ``weights`` = ``{"dequantized":
    true, "quantization": {tensor: stored type}, "quantization_summary": {type: count},
    "gguf_file": {"name", "sha256", "bytes"}}``: its values are measured on dequantized weights.

    A model built in memory from a config (random-init twins) has no file; its identity is its
    params (config and seed), which ``--resume`` fingerprints.
    """
    p = lm.params
    wdir = getattr(lm, "_weights_dir", None)
    revision = getattr(p, "revision", None)
    commit = getattr(getattr(lm, "config", None), "_commit_hash", None)
    if commit is None and wdir is not None and Path(wdir).parent.name == "snapshots":
        commit = Path(wdir).name
    sources = [Path(f) for f in (getattr(lm, "source_files", None) or ()) if Path(f).is_file()]
    files = sources or weight_files(wdir)
    quant = getattr(lm, "quantization", None)
    if quant:
        counts: dict[str, int] = {}
        for t in quant["types"].values():
            counts[t] = counts.get(t, 0) + 1
        weights: dict = {"dequantized": True, "quantization": dict(quant["types"]),
                         "quantization_summary": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
                         "gguf_file": {"name": quant["gguf_file"], "sha256": quant["sha256"], "bytes": quant["bytes"]}}
        stored = "dequantized from GGUF (" + ", ".join(f"{k} ({v})" for k, v in weights["quantization_summary"].items()) + ")"
        if quant.get("simulated"):  # quantize: in the params (geolip_lib.models.quantize): no GGUF file, fp32 rounded
            weights = {**weights, "simulated": True, "gguf_file": None,
                       "rounded_from": {f.name: {"sha256": file_sha256(f), "bytes": f.stat().st_size} for f in files}}
            stored = f"{stored_dtype(files)} rounded to {quant['scheme']} and back (simulated quantization)"
    else:
        weights = {f.name: {"sha256": file_sha256(f), "bytes": f.stat().st_size} for f in files}
        stored = stored_dtype(files)
    conv = getattr(lm, "conversion", None)
    lossy: list = []
    if conv:  # an ONNX / CTranslate2 file converted once (geolip_lib.models.converted): what it was, how it was checked
        counts = conv.get("dtypes") or {}
        kinds = ", ".join(f"{k} ({v})" for k, v in counts.items()) if isinstance(counts, dict) else ", ".join(counts)
        # integer weights (CTranslate2's int8 / int16 quantization) are dequantized with their scales: not the
        # trained values, as for GGUF; float16 / bfloat16 widen to float32 exactly
        lossy = sorted(k for k in counts if str(k) in ("int8", "int16"))
        stored = (f"{conv.get('format')} file ({kinds or 'float32'}), "
                  f"{'dequantized' if lossy else 'converted'} to float32")
        if lossy:
            per = conv.get("stored") if isinstance(conv.get("stored"), dict) else {}
            weights = {**weights, "dequantized": True,
                       "quantization": {str(k): str(v) for k, v in per.items() if str(v) in lossy} or
                       {f"{conv.get('format')} {k}": str(k) for k in lossy}}

    copy = wdir if wdir is not None and sources and Path(wdir).resolve() not in {f.resolve().parent for f in sources} \
        else None
    return {
        "name": lm.name, "family": lm.family, "source": p.source, "id": getattr(p, "id", None),
        "description": getattr(p, "description", None),  # what the model is, for the verdict matrix
        "local_dir": getattr(p, "local_dir", None), "revision": revision, "commit_hash": commit,
        "dtype": str(lm.dtype).replace("torch.", ""), "stored_dtype": stored, "device": str(lm.device),
        "dequantized": bool(quant) or bool(lossy), "trained_weights": bool(getattr(p, "trained_weights", True))
        and "@random" not in str(lm.name),
        "weights": weights, "weights_copy": None if copy is None else str(copy),
        "weights_note": None if files else "built in memory from its params (config + seed); no weight file",
        "converted": {k: conv.get(k) for k in ("format", "file", "sha256", "bytes", "dtypes", "check", "left_out",
                                               "notes", "spec", "revision", "class", "model_type")
                      if conv.get(k) is not None} if conv else None,
    }


def device_info() -> dict:
    """The accelerator a kernel sees (name and count), or the CPU."""
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        return {"kind": "cuda", "count": n, "name": torch.cuda.get_device_name(0)}
    return {"kind": "cpu", "count": os.cpu_count(), "name": platform.processor() or platform.machine()}


def collect(models: Iterable[Any] = ()) -> dict:
    """The provenance block of ``metrics.json`` (the runtime adds parameters and wall time)."""
    return {"git": git_info(), "versions": dict(versions()), "library_hash": library_hash(),
            "device": device_info(), "models": [model_provenance(lm) for lm in models]}


__all__ = ["SHA_CACHE_MAX_BYTES", "SHA_CACHE_MAX_ENTRIES", "collect", "device_info", "dtype_name", "file_sha256", "hash_file",
           "file_state", "folder_problem", "folder_record", "git_info", "library_hash", "model_provenance",
           "sha_cache_key", "stored_dtype", "tensor_headers", "tree_hash", "versions"]
