"""The torch device a run asks for (bottom layer; one home for the ``"auto"`` rule), and the one
check that a GPU box's NVIDIA driver can run the installed torch (:func:`cuda_problem`)."""
from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any, Optional

from .lazy import lazy

torch = lazy("torch")  # imported on first use: cuda_problem on a box without an NVIDIA GPU needs no torch

#: the oldest Linux driver branch each CUDA major release runs on (NVIDIA's CUDA toolkit release notes,
#: "minimum required driver version" for minor-version compatibility: CUDA 12.x >= 525, CUDA 13.x >= 580)
MIN_DRIVER = {11: 450, 12: 525, 13: 580}


def pick_device(device: Any = "auto") -> torch.device:
    """``None`` or ``"auto"`` -> ``cuda`` when torch sees a GPU, else ``cpu``; anything else
    (``"cpu"``, ``"cuda:1"``, a ``torch.device``) is passed to torch."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def nvidia_driver(timeout: float = 10.0) -> Optional[str]:
    """The NVIDIA driver version ``nvidia-smi`` reports (``"570.86.15"``), or None without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=timeout).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"\b(\d{3,4})(\.\d+)+\b", out or "")
    return m.group(0) if m else None


def cuda_problem(driver: Optional[str] = "detect", cuda_version: Optional[str] = "detect",
                 available: Optional[bool] = None) -> Optional[str]:
    """One line when this box has an NVIDIA GPU that the installed torch cannot use, else None.

    A rented box with driver 535-570 and torch's CUDA 13 wheels: ``torch.cuda.is_available()`` is
    False and every job would silently run on the CPU. The arguments are for tests; by default
    they are read from ``nvidia-smi``, ``torch.version.cuda`` and ``torch.cuda.is_available()``.
    """
    driver = nvidia_driver() if driver == "detect" else driver
    if driver is None:
        return None  # no NVIDIA GPU (or no nvidia-smi): nothing to check
    cuda_version = torch.version.cuda if cuda_version == "detect" else cuda_version
    available = torch.cuda.is_available() if available is None else available
    if cuda_version is None:
        return (f"NVIDIA driver {driver} found, but the installed torch {torch.__version__} is a CPU build: "
                "jobs run on the CPU; install the CUDA build (make setup installs requirements.lock's)")
    major = int(str(cuda_version).split(".")[0])
    need = MIN_DRIVER.get(major)
    drv = int(driver.split(".")[0])
    if need is not None and drv < need:
        return (f"NVIDIA driver {driver} is too old for torch's CUDA {cuda_version} build (needs driver {need} or "
                f"later): torch.cuda.is_available() is {available} and jobs would run on the CPU; upgrade the "
                f"driver (R{need}+) or rent a box with one")
    if not available:
        return (f"NVIDIA driver {driver} found, but torch (CUDA {cuda_version}) sees no GPU "
                "(torch.cuda.is_available() is False: CUDA_VISIBLE_DEVICES, a container without the GPU, or a "
                "driver/library mismatch): jobs would run on the CPU")
    return None


__all__ = ["MIN_DRIVER", "cuda_problem", "nvidia_driver", "pick_device"]

if __name__ == "__main__":  # scripts/setup.sh: one warning line, never a failure
    problem = cuda_problem()
    if problem:
        print(f"[setup] warning: {problem}")
