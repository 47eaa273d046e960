"""devices.cuda_problem: a rented box whose NVIDIA driver cannot run torch's CUDA build is one line
(driver 535-570 with CUDA 13 wheels left torch.cuda.is_available() False, and every job
ran on the CPU without a word)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from geolip_lib import devices

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("driver,cuda,available,words", [
    ("570.86.15", "13.0", False, "too old for torch's CUDA 13.0 build (needs driver 580"),
    ("535.104.05", "13.0", False, "upgrade the driver (R580+)"),
    ("580.65.06", "13.0", False, "sees no GPU"),
    ("550.54.14", None, False, "CPU build"),
])
def test_a_driver_torch_cannot_use_is_one_line(driver, cuda, available, words):
    msg = devices.cuda_problem(driver, cuda, available)
    assert msg and words in msg and "\n" not in msg


@pytest.mark.parametrize("driver,cuda", [("580.65.06", "13.0"), ("560.35.03", "12.4"), (None, "13.0")])
def test_a_usable_driver_or_no_gpu_says_nothing(driver, cuda):
    assert devices.cuda_problem(driver, cuda, True if driver else False) is None


def test_no_nvidia_smi_here_is_no_problem(monkeypatch):
    monkeypatch.setattr(devices.shutil, "which", lambda name: None)
    assert devices.nvidia_driver() is None and devices.cuda_problem() is None


def test_the_driver_is_read_from_nvidia_smi(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 570.86.15\n")
    smi.chmod(0o755)
    monkeypatch.setattr(devices.shutil, "which", lambda name: str(smi))
    assert devices.nvidia_driver() == "570.86.15"
    msg = devices.cuda_problem(cuda_version="13.0", available=False)
    assert "570.86.15" in msg and "580" in msg


def test_setup_entry_point_prints_one_warning_or_nothing():
    r = subprocess.run([sys.executable, "-m", "geolip_lib.devices"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.count("\n") <= 1
