"""Real control groups for tests (as root): a child of this process's own cgroup with a limit, commands run
inside it (``sh -c 'echo $$ > cgroup.procs; exec ...'``), every process we started there killed and the
cgroup removed after. Without the hierarchy or root, the test skips with the reason."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from geolip_lib.runner.cgroup import cgroup_dirs

ROOT = Path(__file__).resolve().parents[1]
#: a process that holds N bytes, every page written (a bytearray alone is zero pages the kernel never backs)
HOLD = ("import sys, time; n = int(sys.argv[1]); a = bytearray(n); a[::4096] = b'\\x01' * len(range(0, n, 4096)); "
        "print('held', flush=True); time.sleep(600)")


def where(controller):
    """This process's cgroup directory of a hierarchy (v1 ``controller``, or v2: None), or skip."""
    dirs = cgroup_dirs(controller)
    if not dirs:
        pytest.skip(f"no cgroup {'v2' if controller is None else 'v1 ' + controller} hierarchy mounted here")
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    return dirs[0]


@contextlib.contextmanager
def cgroup(controller, **files):
    """A new child cgroup of ours in that hierarchy (v1 ``controller`` or v2: None), ``files`` written into it
    (``**{"memory.limit_in_bytes": 2 * 10**9}``); yields its directory and the list of processes started in it
    (:func:`inside` adds to it), which are killed before the cgroup is removed."""
    d = where(controller) / f"geolip-test-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    started: list = []
    try:
        for name, value in files.items():
            (d / name).write_text(str(value))
        yield d, started
    finally:
        for p in started:  # only what this test started in it
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        for _ in range(50):
            try:
                d.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def inside(d: Path, argv, started: list, **kw) -> subprocess.Popen:
    """Start ``argv`` inside cgroup ``d`` (its pid written into ``cgroup.procs`` before it execs)."""
    p = subprocess.Popen(["sh", "-c", f'echo $$ > "{d}/cgroup.procs" && exec "$@"', "sh", *map(str, argv)], **kw)
    started.append(p)
    return p


def hold(d: Path, nbytes: int, started: list) -> subprocess.Popen:
    """A process in cgroup ``d`` holding ``nbytes`` (returns once they are held)."""
    p = inside(d, [sys.executable, "-c", HOLD, nbytes], started, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def stop(p: subprocess.Popen) -> None:
    """End a process this test started (by its pid)."""
    if p.poll() is None:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=30)
