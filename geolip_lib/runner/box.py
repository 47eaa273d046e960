"""The box a plan is judged against: what is free on this machine (:func:`detect_gpus`,
:func:`host_memory`: its RAM or its container's memory limit, the filesystems of :func:`_fs_key`) or a box
described by ``--gpus``,
``--gpu-memory``, ``--host-memory`` and ``--disk`` (:func:`target_box`)."""
from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import psutil

from ..lazy import lazy
from .cgroup import PROC, MemoryLimit, memory_limits
from .model_sizes import GB, PlanError

torch = lazy("torch")  # only to count this machine's GPUs (detect_gpus)


def _fs_key(path: Path) -> tuple[int, Path]:
    """(device id, existing ancestor) of a path that may not exist yet."""
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return os.stat(p).st_dev, p


#: what a GPU that torch could use leaves on a machine without torch being imported: the NVIDIA driver
#: (``/proc/driver/nvidia``, ``/dev/nvidia*``, ``nvidia-smi``), WSL2's GPU (``/dev/dxg``), ROCm's (``/dev/kfd``)
GPU_SIGNS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/dev/kfd")


def gpu_here() -> bool:
    """Whether this machine shows any sign of a GPU (:data:`GPU_SIGNS`); without one, torch sees none either,
    and the plan need not import it to count them."""
    return any(os.path.exists(p) for p in GPU_SIGNS) or shutil.which("nvidia-smi") is not None


def detect_gpus() -> list[int]:
    """Free bytes per visible GPU (``torch.cuda.mem_get_info``); empty without CUDA (without importing torch
    on a machine with no sign of a GPU: :func:`gpu_here`)."""
    if not gpu_here() or not torch.cuda.is_available():
        return []
    return [int(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count())]


@dataclass(frozen=True)
class HostMemory:
    """This box's memory: ``total`` (its RAM, or the tightest cgroup memory limit below it), what a new
    process may use now (``available``: the host's, no more than any limit leaves) and the ``limit`` that
    makes the box, if one does."""

    total: int
    available: int
    limit: Optional[MemoryLimit] = None

    def describe(self) -> str:
        """``2.00 GB cgroup v1 limit (/sys/fs/cgroup/memory/box)`` or ``24.00 GB RAM``."""
        return self.limit.describe() if self.limit else f"{self.total / GB:.2f} GB RAM"


def host_memory(proc: Path = PROC) -> HostMemory:
    """The memory of this box now (:class:`HostMemory`): ``psutil.virtual_memory()`` and the memory limits of
    this process's cgroups (:func:`.cgroup.memory_limits`)."""
    vm = psutil.virtual_memory()
    limits = memory_limits(proc)
    tight = min(limits, key=lambda m: m.limit, default=None)
    limit = tight if tight is not None and tight.limit < vm.total else None
    return HostMemory(limit.limit if limit else int(vm.total),
                      int(min([vm.available] + [m.available for m in limits])), limit)


def available_memory() -> int:
    """Host memory available to a new process now (:func:`host_memory`)."""
    return host_memory().available


MAX_GPUS = 4096  # --gpus above this is refused (the plan holds one entry per GPU)
MAX_GB = {"--gpu-memory": 10_000, "--host-memory": 1_000_000, "--disk": 100_000_000}  # GB (decimal)


def target_box(gpus: Optional[int] = None, gpu_memory: Optional[float] = None, host_memory: Optional[float] = None,
               disk: Optional[float] = None) -> dict:
    """The what-if of :func:`make_plan` for a box that is not this one (``run_all.py --plan --gpus 8
    --gpu-memory 80 --host-memory 1000 --disk 2000``; sizes in GB, decimal): keyword arguments for
    :func:`make_plan` plus ``gpu_ids`` (the GPU ids to hand out). What is not given is this machine's.
    A bad combination is one :class:`PlanError` line naming the flag. Without ``disk`` the disk of a
    target box is not judged (this machine's free disk says nothing about it)."""
    for flag, v in (("--gpus", gpus), ("--gpu-memory", gpu_memory), ("--host-memory", host_memory), ("--disk", disk)):
        if v is None:
            continue
        if not math.isfinite(v):
            raise PlanError(f"{flag} {v}: give a finite number" + (" of GPUs" if flag == "--gpus" else " (GB)"))
        if v < 0 or (v == 0 and flag != "--gpus"):
            raise PlanError(f"{flag} {v:g}: give a number {'>= 0' if flag == '--gpus' else '> 0 (GB)'}")
        limit = MAX_GPUS if flag == "--gpus" else MAX_GB[flag]
        if v > limit:
            raise PlanError(f"{flag} {v:g}: over the limit of {limit:g}{'' if flag == '--gpus' else ' GB'} the plan "
                            f"accepts; give the box's real {'GPU count' if flag == '--gpus' else 'size'}")
    if gpu_memory is not None and gpus is None:
        raise PlanError(f"--gpu-memory {gpu_memory:g}: give --gpus N too (how many GPUs of that memory)")
    if gpus and gpu_memory is None:
        raise PlanError(f"--gpus {gpus}: give --gpu-memory GB too (the memory of one GPU, e.g. 80 for an H100 80GB)")
    if (gpus is not None or disk is not None) and host_memory is None:
        raise PlanError("a target box (--gpus / --disk) needs --host-memory GB too: its RAM available to the run "
                        "(without it the plan would judge host memory against this machine's)")
    out: dict = {"target": {}}
    if gpus is not None:
        out["gpus"] = [int(gpu_memory * GB)] * int(gpus) if gpus else []
        out["gpu_ids"] = [str(i) for i in range(int(gpus))]
        out["target"]["gpus"] = gpus
    if host_memory is not None:
        out["free_mem"] = int(host_memory * GB)
        out["target"]["host"] = host_memory
    if disk is not None:
        out["free_disk"] = int(disk * GB)
        out["target"]["disk"] = disk
    elif out["target"]:  # another box, its disk not given: not judged against this machine's
        out["target"]["disk"] = None
    return out
