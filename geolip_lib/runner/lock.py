"""The output root: created and proven writable before any job, one run at a time, and
nothing written, replaced or removed outside it.

* :func:`prepare_root` / :func:`run_lock`: the root and its ``.run.lock``;
* :func:`inside_root` / :func:`remove_entry`: every path the runner writes, renames or
  removes is checked to lie inside the root without passing through a symbolic link, and an
  entry is removed without following a link (a ``.failed`` that is a link to a directory
  elsewhere is unlinked, never emptied);
* :func:`check_root`: the root and the lock this run holds are still the ones it took (an
  ``rm -rf`` of the root mid-run stops the run instead of publishing into a recreated root).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import time
from pathlib import Path

from ..roots import path_problem


class RunError(Exception):
    """A run that cannot start or go on (output root, lock): one line, exit code 2."""


class UnsafePathError(RunError):
    """A result path that would leave the output root or pass through a symbolic link."""


class RootVanished(RunError):
    """The output root or its lock was removed or replaced while the run was going
    (``root_gone``: the root itself, not only the lock)."""

    def __init__(self, msg: str, root_gone: bool = True):
        super().__init__(msg)
        self.root_gone = root_gone


def prepare_root(out_root: Path) -> Path:
    """Create the output root and prove it is writable, before any job (one-line RunError)."""
    out_root = Path(out_root)
    try:
        if out_root.exists() and not out_root.is_dir():
            raise RunError(f"output root {out_root} is a file, not a directory; pass --out <directory>")
        out_root.mkdir(parents=True, exist_ok=True)
        probe = out_root / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        raise RunError(f"output root {out_root} cannot be created or written ({exc.strerror or exc}); "
                       "pass --out <a writable directory>") from None
    return out_root


# ----------------------------------------------------------------------------- paths inside the root
def inside_root(root: Path, path: Path) -> Path:
    """``path`` (absolute, or relative to ``root``) checked to lie strictly inside ``root``, with
    no ``..`` in it and no symbolic link between ``root`` and it; the leaf itself may be a link
    (it is then moved or unlinked, never followed: :func:`remove_entry`). One-line
    :class:`UnsafePathError` otherwise. ``root`` itself may be a link (the user's ``--out``).
    The walk is :func:`geolip_lib.roots.path_problem` (its one home, shared with every reader)."""
    why = path_problem(root, path, leaf_link_ok=True, action="written")
    if why:
        raise UnsafePathError(why)
    return Path(path) if Path(path).is_absolute() else Path(os.path.abspath(root)) / path


def remove_entry(path: Path, ignore_errors: bool = False) -> None:
    """Remove a file, a symbolic link (the link, not what it points to) or a directory tree at
    ``path``; nothing when there is none. ``shutil.rmtree`` alone refuses a link with an
    ``OSError`` and would follow one given as the path's parent; the callers check the parent
    with :func:`inside_root`, and rmtree does not follow links inside the tree."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        if ignore_errors:
            return
        raise
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        if not ignore_errors:
            raise


# ----------------------------------------------------------------------------- the lock
LOCK = ".run.lock"
#: roots locked by this process: resolved path -> (device, inode) of the root and inode of its lock
_HELD: dict[str, tuple[int, int, int]] = {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unusable(path: Path) -> str | None:
    """Why an existing ``.run.lock`` cannot be a lock file (a directory, a link, a device), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a lock file"
    if stat.S_ISLNK(st.st_mode):
        return f"is a symbolic link (to {os.readlink(path)}), not a lock file"
    return "is not a regular file"


@contextlib.contextmanager
def run_lock(out_root: Path, console=None, report_only: bool = False):
    """One run per output root: ``<root>/.run.lock`` holds the pid and host of the run.

    A second run exits at once naming the running pid; a lock whose process is gone (same
    host) is taken over with a line saying so. A ``.run.lock`` that is no file (a directory,
    a link) or cannot be created is one line naming it (RunError, exit 2). While the lock is
    held, :func:`check_root` says whether the root and the lock are still this run's.
    ``report_only``: the lock of ``--report-only``, whose refusal says why it waits (a live run's
    jobs would be read half-done, its running job as stopped).
    """
    path = Path(out_root) / LOCK
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    for _ in range(3):
        why = _unusable(path)
        if why:
            raise RunError(f"{path} {why}; remove it if no run_all is using {out_root}")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            try:
                other = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                other = {}
            if not isinstance(other, dict):
                other = {}
            pid, host = other.get("pid"), other.get("host")
            if isinstance(pid, int) and host == me["host"] and _alive(pid):
                if report_only:
                    raise RunError(f"another run_all (pid {pid}, started {other.get('started')}) is writing to "
                                   f"{out_root}; its report is built when it ends (--report-only now would show its "
                                   "running jobs as stopped): wait for it to finish") from None
                raise RunError(f"another run_all (pid {pid}, started {other.get('started')}) is writing to "
                               f"{out_root}; wait for it to finish or pass another --out") from None
            if isinstance(pid, int) and host and host != me["host"]:
                raise RunError(f"{path}: run_all pid {pid} on host {host} (started {other.get('started')}) holds "
                               f"this output root; wait for it, pass another --out, or delete {path} if that run "
                               "is gone") from None
            print(f"taking over a stale lock in {out_root} "
                  + (f"(pid {pid} is no longer running)" if isinstance(pid, int) else "(unreadable lock file)"),
                  file=console or sys.stderr, flush=True)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise RunError(f"{path}: the stale lock cannot be removed ({exc.strerror or exc}); remove it by "
                               f"hand if no run_all is using {out_root}") from None
            continue
        except OSError as exc:
            raise RunError(f"{path}: the lock cannot be created ({exc.strerror or exc}); "
                           "pass --out <a writable directory>") from None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh)
        break
    else:
        raise RunError(f"{path}: could not take the lock; delete it if no run_all is using {out_root}")
    key = str(Path(out_root).resolve())
    try:
        root_st, lock_st = os.stat(out_root), os.lstat(path)
        _HELD[key] = (root_st.st_dev, root_st.st_ino, lock_st.st_ino)
    except OSError:
        pass
    try:
        yield
    finally:
        _HELD.pop(key, None)
        try:
            if os.path.isfile(path) and not os.path.islink(path) and \
                    json.loads(path.read_text(encoding="utf-8")).get("pid") == me["pid"]:
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass


def check_root(out_root: Path) -> None:
    """Raise :class:`RootVanished` (one line) when the output root this process locked, or its
    lock, was removed or replaced since :func:`run_lock` took it; nothing for a root this
    process does not hold (a Ray worker's temporary root)."""
    root = Path(out_root).resolve()
    held = _HELD.get(str(root))
    if held is None:
        return
    try:
        st = os.stat(root)
    except FileNotFoundError:
        raise RootVanished(f"the output root {root} was deleted or moved away while the run was going") from None
    except OSError as exc:
        raise RootVanished(f"the output root {root} can no longer be read ({exc.strerror or exc})") from None
    if (st.st_dev, st.st_ino) != held[:2]:
        raise RootVanished(f"the output root {root} was deleted and created again while the run was going")
    try:
        lock_ino = os.lstat(root / LOCK).st_ino
    except OSError:
        raise RootVanished(f"the lock {root / LOCK} was deleted while the run was going "
                           "(another run could now write to the same root)", root_gone=False) from None
    if lock_ino != held[2]:
        raise RootVanished(f"the lock {root / LOCK} was replaced while the run was going "
                           "(another run may be writing to the same root)", root_gone=False)
