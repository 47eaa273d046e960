"""Reading an output root: the one home of "which job folders are there" and "read this JSON
file of a job", for every reader of a root (the report, the claims lead, ``--plan``,
``--resume``, the Ray worker's results).

* :func:`path_problem`: whether a path lies strictly inside the root, with no ``..`` and no
  symbolic link between the root and it (the runner's writes use it too:
  :func:`geolip_lib.runner.lock.inside_root`);
* :func:`notebook_dirs` / :func:`job_dirs`: the ``<root>/<notebook>/<job>/`` folders, each a
  real directory (``lstat``): a job folder that is a link to a folder elsewhere is never read,
  whatever it points at;
* :func:`read_json`: one file inside the root, read without following a link, at most
  ``max_bytes`` and at most ``max_depth`` levels of nesting (a deeply nested file would stop a
  reader with ``RecursionError``), else one-line :class:`RootReadError`.

The root itself may be a link (the user's ``--out``).
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Optional

#: what one ``metrics.json`` (or another JSON file of a job) may weigh; the largest the
#: notebooks write is a few hundred kB
MAX_JSON_BYTES = 64 * 1024 * 1024
#: levels of nesting a job's JSON file may have (the notebooks write at most about 8)
MAX_JSON_DEPTH = 64


class RootReadError(ValueError):
    """A file of an output root that is not read (a link, outside the root, too large, too
    deep, not JSON): one line naming the file."""


def path_problem(root: Path, path: Path, leaf_link_ok: bool = True, action: str = "read") -> Optional[str]:
    """Why ``path`` (absolute, or relative to ``root``) is not strictly inside ``root`` without
    a ``..`` or a symbolic link on the way (None: it is). A component that does not exist yet
    ends the walk (the runner creates it). ``leaf_link_ok``: the last component may itself be
    a link (a writer moves or unlinks it, never follows it); a reader passes False.
    ``action``: "read" or "written", the verb of the message.

    Hand-written: pathlib and os.path resolve or normalise ``..`` lexically, neither says
    whether a path passes through a link; this walks the components with ``lstat``."""
    root = Path(os.path.abspath(root))
    path = Path(path) if Path(path).is_absolute() else root / path
    parts = path.parts
    if parts[: len(root.parts)] != root.parts or len(parts) == len(root.parts):
        return f"{path} is not inside the output root {root}; nothing is {action} outside it"
    rel = parts[len(root.parts):]
    bad = next((c for c in rel if c in ("..", ".", "") or "\0" in c), None)
    if bad is not None:
        return f"{path}: the component {bad!r} would leave the output root {root}; nothing is {action} outside it"
    here = root
    for i, comp in enumerate(rel):
        here = here / comp
        last = i == len(rel) - 1
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            break
        except OSError as exc:
            return f"{here} cannot be read ({exc.strerror or exc})"
        if stat.S_ISLNK(st.st_mode):
            if last and leaf_link_ok:
                break
            return (f"{here} is a symbolic link (to {os.readlink(here)}); results are never {action} through links: "
                    f"remove it from the output root {root}")
        if not last and not stat.S_ISDIR(st.st_mode):
            return f"{here} is a file where a directory of results belongs; move it out of the output root {root}"
    return None


def _real_dirs(parent: Path) -> list[Path]:
    """The entries of ``parent`` that are directories, not links to one (``lstat``), sorted."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    return sorted((Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)), key=lambda p: p.name)


def notebook_dirs(root: Path) -> list[Path]:
    """``<root>/<notebook>/`` folders (real directories; ``_static``-like and hidden names skipped),
    as absolute paths (a relative ``root`` is taken from the working directory, once)."""
    return [p for p in _real_dirs(Path(os.path.abspath(root))) if not p.name.startswith(("_", "."))]


def job_dirs(root: Path, notebook: Optional[str] = None, hidden: bool = False) -> list[Path]:
    """The job folders ``<root>/<notebook>/<job>/`` of one notebook (or of all), each a real
    directory inside the root: a link (to a folder anywhere) is never returned, and neither is
    a notebook folder that is a link. ``hidden``: also ``.<job>.partial`` / ``.<job>.old``
    folders (the report lists a killed run's); ``<job>.failed`` folders are always returned
    (callers tell them by name). Absolute paths: :func:`read_json` reads a relative path as
    relative to the root, so a relative ``--out`` must not reach it twice."""
    root = Path(os.path.abspath(root))
    if notebook is not None:
        nb = root / notebook
        if path_problem(root, nb, leaf_link_ok=False) is not None:
            return []
        nbs = [nb] if os.path.isdir(nb) else []
    else:
        nbs = notebook_dirs(root)
    return [j for nb in nbs for j in _real_dirs(nb) if hidden or not j.name.startswith(".")]


def finished_metrics(root: Path, notebook: str) -> list[tuple[Path, dict]]:
    """``(job folder, metrics.json payload)`` of every finished job of ``notebook`` under
    ``root``, in job order: real folders only (:func:`job_dirs`; no ``.partial`` / ``.failed``
    job), each file read bounded by :func:`read_json`; a job whose ``metrics.json`` is absent,
    refused or not a JSON object is left out (the report lists such jobs as failed). The one
    home of "the results of one notebook" for the claims lead, the quantization table and
    notebook 03."""
    root = Path(os.path.abspath(root))
    out = []
    for job in job_dirs(root, notebook):
        if job.name.endswith(".failed"):
            continue
        try:
            data = read_json(root, job / "metrics.json")
        except (OSError, RootReadError):
            continue
        if isinstance(data, dict):
            out.append((job, data))
    return out


def _depth(obj: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, walked without recursion; stops past ``limit``."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        x, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(x, dict):
            stack.extend((v, d + 1) for v in x.values())
        elif isinstance(x, list):
            stack.extend((v, d + 1) for v in x)
    return deepest


def read_json(root: Path, path: Path, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``path`` (inside ``root``, no link on the way or at the end), at most
    ``max_bytes`` long and ``max_depth`` levels deep; one-line :class:`RootReadError` otherwise.
    ``FileNotFoundError`` passes through (a caller tells "not there" from "refused")."""
    why = path_problem(root, path, leaf_link_ok=False)
    if why:
        raise RootReadError(why)
    path = Path(path) if Path(path).is_absolute() else Path(root) / path
    return read_json_file(path, max_bytes, max_depth, follow=False, what="a job's JSON file",
                          remedy="rerun the job to rewrite it")


def read_file_bytes(path: Path, max_bytes: int, *, follow: bool = True, what: str = "this file",
                    remedy: str = "rewrite it") -> bytes:
    """The bytes of a file read as every input of the project is read: opened without blocking (a named pipe
    would block the reader forever), a regular file only (checked on the open file), at most ``max_bytes``;
    ``follow=False`` refuses a link too. ``FileNotFoundError`` passes through; anything else is a one-line
    :class:`RootReadError`."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RootReadError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise RootReadError(f"{path}: not a regular file (a pipe, a device or a folder); not read")
        if st.st_size > max_bytes:
            raise RootReadError(f"{path}: {st.st_size} bytes, over the limit of {max_bytes} for {what}; "
                                f"not read ({remedy})")
        raw = fh.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise RootReadError(f"{path}: over the limit of {max_bytes} bytes for {what}; not read ({remedy})")
    return raw


def read_json_file(path: Path, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
                   follow: bool = True, what: str = "this JSON file", remedy: str = "rewrite it") -> Any:
    """A JSON file that is not in an output root (a model's ``config.json``: a link into the
    Hugging Face cache is normal there), read bounded: a regular file (a named pipe would block
    the reader forever), at most ``max_bytes``, at most ``max_depth`` levels deep; one-line
    :class:`RootReadError` otherwise. ``follow=False``: a link is refused too."""
    path = Path(path)
    raw = read_file_bytes(path, max_bytes, follow=follow, what=what, remedy=remedy)
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RootReadError(f"{path}: nested deeper than {max_depth} levels; not read ({remedy})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise RootReadError(f"{path}: not valid JSON ({str(exc).splitlines()[0]}); not read ({remedy})") from None
    if _depth(data, max_depth) > max_depth:
        raise RootReadError(f"{path}: nested deeper than {max_depth} levels; not read ({remedy})")
    return data
