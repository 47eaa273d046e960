"""The limits of the container (control group) this process runs in: memory (cgroup v2 ``memory.max`` /
``memory.current``, v1 ``memory.limit_in_bytes`` / ``memory.usage_in_bytes``) and CPU (v2 ``cpu.max``, v1
``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, and the CPUs the scheduler lets it use: cpuset,
``os.sched_getaffinity``).

Every cgroup from this process's own up to the root of each mounted hierarchy is read (a parent's limit binds
its children): the mounts come from ``<proc>/mountinfo``, this process's cgroups from ``<proc>/cgroup``, so that
a test reads another process's (``/proc/<pid>``) or a fixture tree. Page cache the kernel reclaims before it
kills anything (``inactive_file`` of ``memory.stat``; v1's hierarchical ``total_inactive_file``) counts as
available, as ``MemAvailable`` counts it for the host."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

PROC = Path("/proc/self")
#: a limit at or above this is none: v1 writes "no limit" as 9223372036854771712 (page counter max x page size)
UNLIMITED = 1 << 62


@dataclass(frozen=True)
class MemoryLimit:
    """One cgroup's memory limit: the cgroup ``version`` ("v1", "v2"), its directory, the limit and what the
    cgroup uses now (bytes), of it ``inactive_file`` page cache."""

    version: str
    path: Path
    limit: int
    usage: int
    inactive_file: int = 0

    @property
    def available(self) -> int:
        """What a new process may still use under this limit: the limit less what is used, reclaimable cache
        counted as free."""
        return max(0, self.limit - max(0, self.usage - self.inactive_file))

    def describe(self) -> str:
        """``2.00 GB cgroup v1 limit (/sys/fs/cgroup/memory/box)``."""
        return f"{self.limit / 1e9:.2f} GB cgroup {self.version} limit ({self.path})"


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes (``\\040``)."""
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, ch)
    return field


def _mounts(proc: Path) -> list[tuple[Optional[list], Path, str]]:
    """``(controllers, mount point, root)`` per cgroup mount: controllers None for cgroup2, else the v1
    hierarchy's (``["memory"]``, ``["cpu", "cpuacct"]``); root: the cgroup the mount shows at its mount point."""
    try:
        lines = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return []
    out = []
    for ln in lines:
        pre, sep, post = ln.partition(" - ")
        f, g = pre.split(), post.split()
        if not sep or len(f) < 5 or len(g) < 3:
            continue
        if g[0] == "cgroup2":
            out.append((None, Path(_unescape(f[4])), _unescape(f[3])))
        elif g[0] == "cgroup":
            ctrls = [o for o in g[2].split(",") if o not in ("rw", "ro") and "=" not in o]
            out.append((ctrls, Path(_unescape(f[4])), _unescape(f[3])))
    return out


def cgroup_dirs(controller: Optional[str], proc: Path = PROC) -> list[Path]:
    """The directories of this process's cgroup and of each parent up to the hierarchy's mount point, innermost
    first: for the v1 ``controller`` ("memory", "cpu"), or for cgroup v2 (``None``). Empty when that hierarchy is
    not mounted or ``<proc>/cgroup`` cannot be read. A cgroup path outside the mount's root (a container that
    sees the host's paths and its own cgroup mounted at the mount point) starts at the mount point."""
    try:
        lines = (proc / "cgroup").read_text().splitlines()
    except OSError:
        return []
    mine = None
    for ln in lines:
        _, ctrls, path = (ln.split(":", 2) + ["", ""])[:3]
        if (controller is None and ctrls == "") or (controller is not None and controller in ctrls.split(",")):
            mine = path
            break
    if mine is None:
        return []
    for ctrls, point, root in _mounts(proc):
        if (ctrls is not None) if controller is None else (ctrls is None or controller not in ctrls):
            continue
        rel = os.path.relpath(mine, root) if (mine + "/").startswith(root.rstrip("/") + "/") else "."
        d = point / rel if rel != "." else point
        if not d.is_dir():
            d = point
        out = [d]
        while out[-1] != point and point in out[-1].parents:
            out.append(out[-1].parent)
        return out
    return []


def _read_int(path: Path) -> Optional[int]:
    try:
        text = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    if text == "max":
        return UNLIMITED
    try:
        return int(text)
    except ValueError:
        return None


def _stat(path: Path, *keys: str) -> int:
    """The first of ``keys`` found in a ``memory.stat`` (0 when none is)."""
    try:
        found = dict(ln.split(" ", 1) for ln in path.read_text().splitlines() if " " in ln)
    except OSError:
        return 0
    for k in keys:
        if k in found:
            try:
                return int(found[k])
            except ValueError:
                return 0
    return 0


def memory_limits(proc: Path = PROC) -> list[MemoryLimit]:
    """Every memory limit set on this process's cgroups (v2 and v1), innermost first; empty without one."""
    out = []
    for d in cgroup_dirs(None, proc):
        limit = _read_int(d / "memory.max")
        if limit is not None and limit < UNLIMITED:
            out.append(MemoryLimit("v2", d, limit, _read_int(d / "memory.current") or 0,
                                   _stat(d / "memory.stat", "inactive_file")))
    for d in cgroup_dirs("memory", proc):
        limit = _read_int(d / "memory.limit_in_bytes")
        if limit is not None and limit < UNLIMITED:
            out.append(MemoryLimit("v1", d, limit, _read_int(d / "memory.usage_in_bytes") or 0,
                                   _stat(d / "memory.stat", "total_inactive_file", "inactive_file")))
    return out


def cpu_quota(proc: Path = PROC) -> Optional[float]:
    """The CPUs this process's cgroups allow (quota / period, the smallest on the way up; v2 ``cpu.max``, v1
    ``cpu.cfs_quota_us``), e.g. 1.5; None without a quota."""
    quotas = []
    for d in cgroup_dirs(None, proc):
        try:
            q, _, p = (d / "cpu.max").read_text().strip().partition(" ")
            if q != "max":
                quotas.append(int(q) / int(p or 100000))
        except (OSError, ValueError, ZeroDivisionError):
            pass
    for d in cgroup_dirs("cpu", proc):
        q, p = _read_int(d / "cpu.cfs_quota_us"), _read_int(d / "cpu.cfs_period_us")
        if q is not None and q > 0 and p:
            quotas.append(q / p)
    return min(quotas) if quotas else None


def cpu_count(proc: Path = PROC) -> int:
    """The cores this process may use: those its affinity allows (cpuset, ``taskset``), no more than its
    cgroup's CPU quota rounded up; at least 1."""
    try:
        cores = len(os.sched_getaffinity(int(proc.name) if proc.name.isdigit() else 0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpu_quota(proc)
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)
