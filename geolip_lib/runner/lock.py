"""The output root: created and proven writable before any job, and one run at a time."""
from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path


class RunError(Exception):
    """A run that cannot start or go on (output root, lock): one line, exit code 2."""


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


LOCK = ".run.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def run_lock(out_root: Path, console=None):
    """One run per output root: ``<root>/.run.lock`` holds the pid and host of the run.

    A second run exits at once naming the running pid; a lock whose process is gone (same
    host) is taken over with a line saying so.
    """
    path = Path(out_root) / LOCK
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                other = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                other = {}
            pid, host = other.get("pid"), other.get("host")
            if isinstance(pid, int) and host == me["host"] and _alive(pid):
                raise RunError(f"another run_all (pid {pid}, started {other.get('started')}) is writing to "
                               f"{out_root}; wait for it to finish or pass another --out") from None
            if isinstance(pid, int) and host and host != me["host"]:
                raise RunError(f"{path}: run_all pid {pid} on host {host} (started {other.get('started')}) holds "
                               f"this output root; wait for it, pass another --out, or delete {path} if that run "
                               "is gone") from None
            print(f"taking over a stale lock in {out_root} "
                  + (f"(pid {pid} is no longer running)" if pid else "(unreadable lock file)"),
                  file=console or sys.stderr, flush=True)
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh)
        break
    else:
        raise RunError(f"{path}: could not take the lock; delete it if no run_all is using {out_root}")
    try:
        yield
    finally:
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == me["pid"]:
                path.unlink()
        except (OSError, ValueError):
            pass

