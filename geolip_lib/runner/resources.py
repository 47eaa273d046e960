"""What this machine offers the runner: GPUs, the default number of parallel jobs, and the
threads each kernel gets."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Optional, Sequence

from ..paths import ROOT


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
    """Every GPU on a GPU box; on a CPU, 2 workers and never more than the cores (on the
    2-core development machine 2 jobs at once took 4 tiny jobs from 336 s to 205 s:
    ``benchmarks/job_start.py --quick``; more workers than cores only share them)."""
    if gpus:
        return len(gpus)
    return max(1, min(2, os.cpu_count() or 1))


@functools.lru_cache(maxsize=1)
def kernel_threads() -> int:
    """Threads per kernel (``OMP_NUM_THREADS``): the cores shared by the *default* number of
    parallel jobs, whatever ``--jobs`` is. torch's and BLAS's float reductions change in the
    last bits with the thread count (measured: 29 values of notebook 01 on tiny-t5 differ at
    ~1e-8 between 1 and 2 threads), so a thread count that followed ``--jobs`` would make
    ``--jobs 2`` differ from ``--jobs 1``. An ``OMP_NUM_THREADS`` set by the user wins."""
    return max(1, (os.cpu_count() or 1) // default_jobs(visible_gpus()))


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
