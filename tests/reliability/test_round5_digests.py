"""Round five: no stale digest, no derived copy trusted as found.

A file replaced by another of the same size and mtime (``cp -p``, ``rsync -a``, ``touch -r``) kept its old
sha256, and every derived copy keyed by that digest was served for the new file; a planted entry of
``<cache>/sha256.json`` was recorded as a file's digest; a derived copy (a dequantized GGUF, a converted ONNX /
CTranslate2 file, a rounded or canonical-layout safetensors copy, an assembled package) replaced in the cache was
loaded and reported with the source's sha256; an edited GGUF header record built the model; a remembered check
outlived a new hub revision; a prepared stamp naming ``/`` said "nothing to fetch".

Each probe does what the user did and asserts what the user must see: the reader (the sha256 cache, a derived
folder, the header record), the loader, ``run_all --plan`` or ``scripts/fetch_packaged.py``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from geolip_lib import provenance

pytestmark = pytest.mark.unit


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------ 1. same size and mtime, other bytes
def _replace_keeping_size_and_mtime(f: Path, data: bytes, how: str) -> None:
    """``f`` gets ``data`` (of its size) and keeps its mtime, the way ``how`` does it."""
    st = f.stat()
    time.sleep(0.02)  # a later change, as in life (file times tick in jiffies)
    if how == "cp -p":  # copied over in place: the same inode, the source's mtime
        src = f.parent / "other-checkpoint"
        src.write_bytes(data)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        shutil.copy2(src, f)
    elif how == "rsync -a":  # a temporary file with the source's mtime, renamed over it
        tmp = f.parent / f".{f.name}.tmp"
        tmp.write_bytes(data)
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, f)
    else:  # touch -r: rewritten in place, then its old mtime put back
        f.write_bytes(data)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = f.stat()
    assert (now.st_size, now.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


@pytest.mark.parametrize("how", ["cp -p", "rsync -a", "touch -r"])
def test_a_file_replaced_with_the_same_size_and_mtime_gets_its_own_sha256(tmp_path, how):
    """Two checkpoints of one architecture have the same size; ``cp -p`` keeps the mtime: the old digest was
    printed as the new file's, and every copy keyed by it (dequantized, converted, rounded) was the old one."""
    cache = tmp_path / "sha256.json"
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"A" * 4096)
    assert provenance.file_sha256(f, cache=cache) == _sha(b"A" * 4096)
    _replace_keeping_size_and_mtime(f, b"B" * 4096, how)
    assert provenance.file_sha256(f, cache=cache) == _sha(b"B" * 4096)


def test_the_sha256_cache_is_read_bounded_and_kept_small(tmp_path, monkeypatch):
    """A 254 MB ``sha256.json`` was read whole on every call (every weight file of every job); it grew by an entry
    per file version and never shrank. Over its limit it is read as empty and written small again; entries of
    files that are gone (or changed since) are dropped, and the count is capped."""
    cache = tmp_path / "sha256.json"
    gone = {f"{tmp_path}/gone-{i:06d}.safetensors|4096|{i}|{i}|{i}|1": "0" * 64 for i in range(40000)}
    cache.write_text(json.dumps(gone))
    assert cache.stat().st_size > provenance.SHA_CACHE_MAX_BYTES
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    assert provenance.file_sha256(f, cache=cache) == _sha(b"weights")
    kept = json.loads(cache.read_text())
    assert cache.stat().st_size < 4096 and list(kept.values()) == [_sha(b"weights")]
    # under the limit, a cache of many entries of files that are gone is pruned to the files that are there
    cache.write_text(json.dumps(dict(list(gone.items())[:2000])))
    g = tmp_path / "v.bin"
    g.write_bytes(b"other weights")
    assert provenance.file_sha256(g, cache=cache) == _sha(b"other weights")
    assert sorted(json.loads(cache.read_text()).values()) == sorted([_sha(b"other weights")])
    # the count is capped: the newest entries stay
    monkeypatch.setattr(provenance, "SHA_CACHE_MAX_ENTRIES", 8)
    files = []
    for i in range(provenance.SHA_CACHE_MAX_ENTRIES + 5):
        h = tmp_path / "many" / f"{i}.bin"
        h.parent.mkdir(exist_ok=True)
        h.write_bytes(str(i).encode())
        files.append(h)
    for h in files:
        provenance.file_sha256(h, cache=cache)
    kept = json.loads(cache.read_text())
    assert len(kept) == provenance.SHA_CACHE_MAX_ENTRIES and _sha(str(len(files) - 1).encode()) in kept.values()


def test_a_sha256_cache_that_is_a_pipe_is_not_waited_on(tmp_path):
    """A named pipe as ``sha256.json`` blocked every job's provenance forever."""
    cache = tmp_path / "sha256.json"
    os.mkfifo(cache)
    f = tmp_path / "w.bin"
    f.write_bytes(b"weights")
    t0 = time.monotonic()
    assert provenance.file_sha256(f, cache=cache) == _sha(b"weights")
    assert time.monotonic() - t0 < 5


# ------------------------------------------------------------------ 2. a planted digest
def test_a_planted_digest_is_not_taken_as_the_files_sha256(tmp_path):
    """``path|size|mtime -> 000...`` planted in ``sha256.json`` was recorded in the provenance as the file's
    sha256 (and keyed every derived copy). The key binds the file's inode and ctime too (which a copy, a
    restore or a rewrite changes, and which cannot be set back), and a value is 64 hex digits or ignored."""
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"the real weights")
    st = f.stat()
    cache = tmp_path / "sha256.json"
    cache.write_text(json.dumps({f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}": "0" * 64}))
    assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights")
    key = provenance.sha_cache_key(f.resolve(), f.stat())
    for planted in ("0" * 63 + "g", "0" * 65, ["0" * 64], None):
        cache.write_text(json.dumps({key: planted}))
        assert provenance.file_sha256(f, cache=cache) == _sha(b"the real weights")
