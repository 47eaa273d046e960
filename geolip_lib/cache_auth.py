"""The one home of "a record of the project cache, read as data and authenticated".

The cache (``$GEOLIP_CACHE``, else ``<checkout>/.cache``) keeps answers that are costly to compute: the
random-init nulls (:mod:`geolip_lib.nullcache`), the remembered answers of the pre-kernel checks and the
plan (:mod:`geolip_lib.runner.remembered`), the GGUF header records (:mod:`geolip_lib.models.gguf`). A
sha256 of a record's value stored beside it detects damage, not forgery: whoever can write the cache can
recompute it. So each record is signed with an HMAC-SHA256 under a key the cache does not hold: a
per-user secret file, ``$XDG_CONFIG_HOME/geolip/secret`` (``~/.config/geolip/secret``), 32 random bytes as
64 hex digits, mode 0600, made on first use. A record whose signature does not verify (edited, forged,
written by another user or before records were signed) is a miss: computed again, one ``warning:`` line.

Every record is opened as the project opens its inputs (:func:`geolip_lib.roots.read_json_file`):
without blocking, without following a link, a regular file only (checked on the open file), at most a
given size; a named pipe, a device, a link or an oversized file is a miss too, never a hang.

A key file that others may read or write, that another user owns, that is not a regular file or does
not hold a key is not used: one line says so, and every cached answer is computed afresh (nothing is
read from the cache or written to it under no key) until it is fixed.

What a cache shared by several users trusts: a record verifies only under the key of the user who wrote
it. In a ``GEOLIP_CACHE`` that several users point at, each one's records are recomputed by the others
(and rewritten under their own key); nothing is ever trusted because of where it lies. The user-level
shared cache (``GEOLIP_SHARED_CACHE``) holds no signed record: only the WordNet lexicon, which is checked
against the invariants of its build before use (:mod:`geolip_lib.lexical.wordnet`).
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any, Optional

from .results import atomic_write_text
from .roots import RootReadError, read_file_bytes, read_json_file

__all__ = ["FIELD", "MAX_RECORD_BYTES", "RecordRefused", "authentic", "canonical", "key", "read_bytes",
           "read_or_none", "read_record", "secret_path", "sign", "verify", "write_record"]

#: the field of a record that holds its signature
FIELD = "hmac"
#: what one cached record may weigh (the largest, a null's five seeds of records, are a few MB)
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: levels of nesting a record may have (the remembered answers' exact encoding doubles a value's depth)
MAX_RECORD_DEPTH = 256
#: prefixed to every signed payload: a signature made here means nothing anywhere else
_DOMAIN = b"geolip cache record v1\0"


class RecordRefused(ValueError):
    """A cached record that is not used: one line naming the file and why (a miss: computed again)."""


def secret_path() -> Path:
    """Where this user's cache key lives: ``$XDG_CONFIG_HOME/geolip/secret``, else ``~/.config/geolip/secret``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "geolip" / "secret"


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)


def _create(path: Path) -> None:
    """A new key at ``path``, made whole before it appears (a temporary file linked into place): two
    processes making it at once agree on the one that was linked first."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: its key is the key
    finally:
        os.unlink(tmp)


def _key_problem(path: Path, st: os.stat_result) -> Optional[str]:
    """Why the key file ``path`` (its ``fstat``) is not used, or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"the cache key {path} is not a regular file; remove it (a new key is made on the next run)"
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if st.st_uid != uid:
        return (f"the cache key {path} belongs to uid {st.st_uid}, not to you (uid {uid}); remove it "
                "(a new key is made on the next run)")
    if st.st_mode & 0o077:
        return (f"the cache key {path} is open to group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"anyone who reads it can forge cached answers: chmod 600 {path}")
    return None


@functools.lru_cache(maxsize=8)
def _load(path_text: str) -> Optional[bytes]:
    """The key in ``path_text`` (made there on first use), or None with one ``warning:`` line (once per
    process and path)."""
    path = Path(path_text)
    off = "cached answers are not trusted and are computed afresh"
    try:
        if not os.path.lexists(path):
            _create(path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        _warn(f"no cache key: {path} cannot be made or opened ({exc.strerror or exc}); {off} (set "
              "XDG_CONFIG_HOME to a folder you can write)")
        return None
    with os.fdopen(fd, "rb") as fh:
        why = _key_problem(path, os.fstat(fh.fileno()))
        raw = fh.read(129) if why is None else b""
    if why is None:
        text = raw.decode("ascii", "replace").strip()
        if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
            why = (f"the cache key {path} does not hold a key (64 hex digits); remove it (a new key is made on "
                   "the next run)")
    if why is not None:
        _warn(f"{why}; until then {off}")
        return None
    return bytes.fromhex(text)


def key() -> Optional[bytes]:
    """This user's cache key (made on first use), or None when it cannot be used (said once)."""
    return _load(str(secret_path()))


def sign(payload: bytes) -> Optional[str]:
    """The HMAC-SHA256 (hex) of ``payload`` under this user's key; None when there is no usable key."""
    k = key()
    return None if k is None else hmac.new(k, _DOMAIN + payload, hashlib.sha256).hexdigest()


def verify(payload: bytes, tag: Any) -> bool:
    """Whether ``tag`` is :func:`sign`'s signature of ``payload`` (compared in constant time)."""
    mine = sign(payload)
    return mine is not None and isinstance(tag, str) and hmac.compare_digest(mine, tag)


def canonical(record: dict) -> bytes:
    """The bytes a record's signature covers: its JSON with sorted keys and no spaces, without
    :data:`FIELD` (a record read back gives the same bytes as the record written)."""
    body = {k: v for k, v in record.items() if k != FIELD}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True, ensure_ascii=True).encode()


def authentic(record: Any) -> bool:
    """Whether ``record`` (a JSON object read back) carries a signature of its own content under this user's key."""
    try:
        return isinstance(record, dict) and verify(canonical(record), record.get(FIELD))
    except (TypeError, ValueError, RecursionError):
        return False


def read_record(path: Path, max_bytes: int = MAX_RECORD_BYTES) -> dict:
    """The record in ``path`` without its signature, read bounded (module docstring) and authenticated.
    ``FileNotFoundError`` passes through (not there yet); anything else that is not an authentic JSON
    object is a one-line :class:`RecordRefused` naming the file."""
    try:
        rec = read_json_file(Path(path), max_bytes, MAX_RECORD_DEPTH, follow=False, what="a cache record",
                             remedy="it is computed again")
    except RootReadError as exc:
        raise RecordRefused(str(exc)) from None
    if not isinstance(rec, dict):
        raise RecordRefused(f"{path}: a JSON {type(rec).__name__}, not a record")
    if not authentic(rec):
        raise RecordRefused(f"{path}: its signature does not verify under your cache key (edited, forged, or written "
                            "by another user or an older version)")
    return {k: v for k, v in rec.items() if k != FIELD}


def read_or_none(path: Path, what: str, then: str, max_bytes: int = MAX_RECORD_BYTES) -> Optional[dict]:
    """:func:`read_record`, or None for a miss: no key (said once by :func:`key`), no record, or a record
    refused, which one line names: ``warning: <what> <path>: <why>; <then>``."""
    if key() is None:
        return None
    try:
        return read_record(path, max_bytes)
    except FileNotFoundError:
        return None
    except RecordRefused as exc:
        _warn(f"{what} {exc}; {then}")
        return None


def write_record(path: Path, record: dict, allow_nan: bool = False) -> bool:
    """``record`` signed and written atomically to ``path`` (a pipe or a link there is replaced, never
    followed); False when there is no usable key (nothing written). ``OSError`` passes through."""
    if key() is None:
        return False
    plain = json.loads(json.dumps(record, allow_nan=allow_nan))  # signed as it will be read back (a tuple as a
    tag = sign(canonical(plain))                                  # list, an int key as a string)
    atomic_write_text(path, json.dumps({**plain, FIELD: tag}, allow_nan=allow_nan))
    return True


def read_bytes(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of a cached file that is not a JSON record (the WordNet lexicon arrays), read as
    :func:`read_record` reads one (:func:`geolip_lib.roots.read_file_bytes`), links followed (the shared cache
    may link its files): a regular file only, at most ``max_bytes``; ``FileNotFoundError`` passes through,
    anything else a :class:`RecordRefused`."""
    try:
        return read_file_bytes(path, max_bytes, what=what, remedy="it is rebuilt")
    except RootReadError as exc:
        raise RecordRefused(str(exc)) from None
