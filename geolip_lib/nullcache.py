"""A cache of random-init nulls, shared by the notebooks and runs on one checkout.

A random-init null depends only on the architecture (the model's config, family and dtype),
its init seeds, what is computed (the notebook's quantity, its parameters, the layers sampled)
and the library's code — never on the trained weights. :func:`cached` keys a JSON record by
all of these (sha256 of the canonical JSON of the key plus
:func:`geolip_lib.provenance.library_hash`), so a second job that asks for the same null (a
re-run, ``--resume``, another output root, ``--jobs 2`` running the same model twice) reads it
instead of building 5 random models again.

Results are identical whether or not the cache was hit: on a miss the computed value is
passed through the same JSON round trip as a hit (``to_jsonable`` then ``json.loads``), so
the caller always sees the stored form. Writes are atomic (temporary file + ``os.replace``,
:func:`geolip_lib.results.atomic_write_text`): two jobs computing the same null at once both
write the same bytes and a reader sees either nothing or a whole record. Each record is
signed with an HMAC under this user's key, kept outside the cache (:mod:`geolip_lib.cache_auth`):
the sha256 of its value stored beside it detects damage, the signature forgery too (numbers edited
and the digest recomputed). A record that cannot be read as data (a pipe, a device, a link, an
oversized file: never waited on), whose signature does not verify, whose stored key differs (a
hash collision), whose value does not match its sha256 or is not the shape its caller expects
(``expect_len``: five seeds' records, not ``[]``) is recomputed and replaced, with one
``warning:`` line (none for a key that differs). A caller's drivers can say whether the value
came from the cache (``note``: ``from_cache``). Location: ``<project cache>/nulls/<what>/<sha256>.json`` (``$GEOLIP_CACHE``, else
``<checkout>/.cache``); ``GEOLIP_NULL_CACHE=off`` switches the cache off (benchmarks time the
computation itself).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from .cache_auth import read_or_none, write_record
from .paths import cache_root
from .provenance import library_hash
from .results import to_jsonable

__all__ = ["cached", "cache_key", "cache_path", "enabled", "value_digest", "ENV"]

#: environment switch: "off" / "0" / "no" disables the cache
ENV = "GEOLIP_NULL_CACHE"


@functools.lru_cache(maxsize=1)
def _library() -> str:
    """The library hash once per process: the code this process imported, not files edited since."""
    return library_hash()


def enabled() -> bool:
    return os.environ.get(ENV, "on").strip().lower() not in ("off", "0", "no", "false")


def cache_key(what: str, key: Mapping[str, Any]) -> dict:
    """The full key of a record: ``what``, the caller's ``key`` (JSON-able) and the library hash."""
    if not what or not all(c.isalnum() or c in "._-" for c in what):
        raise ValueError(f"what: expected a safe name (letters, digits, ._-), got {what!r}")
    return {"what": what, "key": to_jsonable(dict(key)), "library": _library()}


def cache_path(full_key: Mapping[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(full_key, sort_keys=True, allow_nan=False).encode()).hexdigest()
    return cache_root() / "nulls" / full_key["what"] / f"{digest}.json"


def value_digest(value: Any, allow_nan: bool = False) -> str:
    """sha256 of a value's canonical JSON (sorted keys, no spaces; no NaN unless ``allow_nan``): stored with each
    record (here, and in :mod:`geolip_lib.runner.remembered`)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"),
                                     allow_nan=allow_nan).encode()).hexdigest()


def _record_problem(rec: dict, expect_len: Optional[int]) -> Optional[str]:
    """Why a record whose key is this one is not used: its value edited or damaged (its sha256
    differs), or not the shape the caller expects (``expect_len``: a list of that many)."""
    try:
        if not isinstance(rec.get("sha256"), str) or value_digest(rec["value"]) != rec["sha256"]:
            return "its value does not match its sha256 (edited or damaged)"
    except (TypeError, ValueError):
        return "its value is not plain JSON"
    value = rec["value"]
    if expect_len is not None:
        if not isinstance(value, list):
            return f"its value is a {type(value).__name__} where a list of {expect_len} is expected"
        if len(value) != expect_len:
            return f"its value is a list of {len(value)} where {expect_len} are expected"
    return None


def cached(what: str, key: Mapping[str, Any], compute: Callable[[], Any], *, expect_len: Optional[int] = None,
           note: Optional[dict] = None) -> tuple[Any, bool]:
    """``(value, hit)``: the stored value of ``(what, key)`` or ``compute()``'s, stored.

    The value is returned in its JSON form either way (NaN -> None, tuples -> lists, numpy
    -> Python), so a hit and a miss give the same object. Each record stores the sha256 of its
    value (:func:`value_digest`) and is signed under this user's key; a record that is not read
    as data, whose signature does not verify, whose value does not match its sha256, or that is
    not a list of ``expect_len`` items where the caller says so, is recomputed and replaced, with
    one ``warning:`` line on stderr. ``note``: a dict (the caller's drivers) that gets
    ``from_cache``: whether the value was read from the cache.
    """
    full = cache_key(what, key)
    hit, value = False, None
    if enabled():
        path = cache_path(full)
        # read as data (a pipe, a device, a link or an oversized file is a miss, never a hang) and
        # authenticated (signed under this user's key, not the cache's): a miss otherwise, said in one line
        rec = read_or_none(path, "null cache record", "recomputing it")
        if rec is not None and rec.get("key") == full and "value" in rec:  # another key: a collision, recomputed
            why = _record_problem(rec, expect_len)
            if why is None:
                hit, value = True, rec["value"]
            else:
                print(f"warning: null cache record {path}: {why}; recomputing it", file=sys.stderr, flush=True)
        if not hit:
            value = json.loads(json.dumps(to_jsonable(compute()), allow_nan=False))
            try:
                write_record(path, {"key": full, "value": value, "sha256": value_digest(value)})
            except (OSError, ValueError):
                pass  # a read-only or full cache costs time, never the result
    else:
        value = json.loads(json.dumps(to_jsonable(compute()), allow_nan=False))
    if note is not None:
        note["from_cache"] = hit
    return value, hit
