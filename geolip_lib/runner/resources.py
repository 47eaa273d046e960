"""What this machine offers the runner: GPUs, the default number of parallel jobs, the
threads each kernel gets, and what a kernel that died most likely died of."""
from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Optional, Sequence

from ..paths import ROOT
from .cgroup import cgroup_dirs, cpu_count


def visible_gpus() -> list[str]:
    """GPU ids this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else ``nvidia-smi -L``
    (no torch import, no CUDA context in the runner); empty on a CPU machine."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))]


def default_jobs(gpus: Sequence[str]) -> int:
    """Every GPU on a GPU box; on a CPU, 2 workers and never more than the cores this process may
    use (:func:`.cgroup.cpu_count`: affinity, cpuset and a container's CPU quota; on the 2-core
    development machine 2 jobs at once took 4 tiny jobs from 336 s to 205 s:
    ``benchmarks/job_start.py --quick``; more workers than cores only share them)."""
    if gpus:
        return len(gpus)
    return max(1, min(2, cpu_count()))


@functools.lru_cache(maxsize=1)
def kernel_threads() -> int:
    """Threads per kernel (``OMP_NUM_THREADS``): the cores shared by the *default* number of
    parallel jobs, whatever ``--jobs`` is. torch's and BLAS's float reductions change in the
    last bits with the thread count (measured: 29 values of notebook 01 on tiny-t5 differ at
    ~1e-8 between 1 and 2 threads), so a thread count that followed ``--jobs`` would make
    ``--jobs 2`` differ from ``--jobs 1``. The cores are those this process may use
    (:func:`.cgroup.cpu_count`). An ``OMP_NUM_THREADS`` set by the user wins."""
    return max(1, cpu_count() // default_jobs(visible_gpus()))


def kernel_env(extra: Optional[dict] = None) -> dict:
    """The kernel's environment: this process's, this checkout first on ``PYTHONPATH`` (kernels
    import this checkout's ``geolip_lib`` and params, whatever an editable install in a shared
    venv points at), ``OMP_NUM_THREADS`` (:func:`.resources.kernel_threads`) and the same
    ``NUMBA_NUM_THREADS``, plus ``extra``."""
    env = dict(os.environ)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + parts)
    env.setdefault("OMP_NUM_THREADS", str(kernel_threads()))  # the same whatever --jobs is
    env.setdefault("NUMBA_NUM_THREADS", env["OMP_NUM_THREADS"])  # numba's pool (default: every core)
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def remove_orphan_dirs(prefix: str) -> None:
    """Temporary folders ``<tmp>/<prefix><pid>-*`` whose process is gone (a runner or Ray worker
    killed with SIGKILL cannot clean up): removed by the next one on this box. Hand-written:
    ``tempfile`` removes what a live process made, nothing names the dead one's."""
    for d in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
        try:
            pid = int(d.name[len(prefix):].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (ValueError, PermissionError, OSError):
            pass


# ----------------------------------------------------------------------------- a kernel that died
#: the line the warm-kernel launcher writes to the job's ``kernel.log`` when its kernel ended abnormally
#: (:mod:`.warm`: the zygote reaps the kernel with ``wait4`` and knows its peak RSS)
KERNEL_END = "geolip: kernel {pid} ended with status {status}; peak RSS {kb} kB"
_KERNEL_END_RE = re.compile(r"geolip: kernel \d+ ended with status (-?\d+); peak RSS (\d+) kB")


def _cgroup_events() -> Optional[Path]:
    """Where the out-of-memory killer counts its kills (``oom_kill N``) for this process's cgroup:
    ``memory.events`` (cgroup v2) or ``memory.oom_control`` (v1), of the innermost cgroup that has one;
    None when neither is readable."""
    found = [d / "memory.events" for d in cgroup_dirs(None)] + [d / "memory.oom_control" for d in cgroup_dirs("memory")]
    return next((p for p in found if p.is_file()), None)


def oom_kills() -> Optional[int]:
    """How many processes the out-of-memory killer has killed in this cgroup so far (None: unknown)."""
    p = _cgroup_events()
    if p is None:
        return None
    try:
        for ln in p.read_text().splitlines():
            k, _, v = ln.partition(" ")
            if k == "oom_kill":
                return int(v)
    except (OSError, ValueError):
        pass
    return None


def _size(kb: int) -> str:
    return f"{kb / 1024 ** 2:.1f} GB" if kb >= 1024 ** 2 else f"{kb / 1024:.0f} MB"


def _total_memory_kb() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
    except (ValueError, OSError, AttributeError):
        return None


class PeakMemory:
    """A cold kernel's peak resident memory: ``VmHWM`` of ``/proc/<pid>/status`` (the kernel's own
    high-water mark) read every ``every_s`` seconds by a daemon thread while the process lives;
    :attr:`kb` is the last value read, so a kernel killed while growing may have peaked a little
    higher. (A warm kernel's peak is exact: the zygote reaps it with ``wait4``.)"""

    def __init__(self, pid: Optional[int], every_s: float = 1.0):
        self.pid, self.every_s, self.kb = pid, every_s, None
        self._stop = threading.Event()

    def _read(self) -> bool:
        try:
            for ln in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if ln.startswith("VmHWM:"):
                    self.kb = int(ln.split()[1])
                    return True
        except (OSError, ValueError, IndexError):
            pass
        return False

    def _run(self) -> None:
        while self._read() and not self._stop.wait(self.every_s):
            pass

    def start(self) -> "PeakMemory":
        if self.pid:
            threading.Thread(target=self._run, daemon=True, name=f"peak-rss-{self.pid}").start()
        return self

    def stop(self) -> None:
        self._stop.set()


def kernel_death(returncode: Optional[int], log: Path, oom_before: Optional[int] = None,
                 sampled_kb: Optional[int] = None) -> str:
    """How a kernel that died most likely died, in words: the signal or exit code, the
    out-of-memory killer's count in this cgroup when it rose during the job, and the kernel's
    peak RSS where known (the warm launcher's line in ``kernel.log``, exact; for a cold kernel,
    which jupyter_client reaps without resource usage, ``sampled_kb`` from :class:`PeakMemory`).

    ``returncode``: the kernel process's (``Popen.returncode``: negative = killed by that
    signal); the warm launcher re-raises its kernel's signal on itself, so it reads the same."""
    status, kb = returncode, None
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 65536))
            found = _KERNEL_END_RE.findall(fh.read().decode("utf-8", "replace"))
        if found:
            status, kb = int(found[-1][0]), int(found[-1][1])
    except OSError:
        pass
    after = oom_kills()
    oom = oom_before is not None and after is not None and after > oom_before
    if status is None:
        how = "its exit status is unknown"
    elif status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        how = f"killed by {name} (signal {-status})"
        if oom:
            how += f", by the out-of-memory killer (memory.events oom_kill {oom_before} -> {after})"
        elif -status == signal.SIGKILL:
            how += ", likely out of memory (or killed by hand)"
    else:
        how = f"exited with code {status}"
        if oom:
            how += f"; the out-of-memory killer fired during the job (memory.events oom_kill {oom_before} -> {after})"
    at_least = kb is None and sampled_kb is not None
    kb = kb if kb is not None else sampled_kb
    if kb is not None:
        total = _total_memory_kb()
        how += (f": peak RSS {'at least ' if at_least else ''}{_size(kb)}"
                + (f" of {_size(total)} on this machine" if total else ""))
    return how
