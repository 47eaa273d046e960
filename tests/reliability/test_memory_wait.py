"""A run while another process holds memory, for real: run_all and a holder in one small v1 memory cgroup
(made here as root, removed after). A job that fits the cgroup but not what the holder leaves waits, says so,
and runs once the holder exits; a run that fits beside a holder runs beside it. run_all exits 0 both times."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cgroups import ROOT, cgroup, hold, inside, stop

# whole runs of run_all in real cgroups (about 90 s together): CI's second step, beside the families
pytestmark = [pytest.mark.integration, pytest.mark.families]
GB = 10**9
#: one job of the tiny profile: planned at 1.11 GB host peak, a few seconds of work
JOB = ["--profile", "tiny", "--notebooks", "05_seed_stability", "--models", "tiny-t5", "--jobs", "1",
       "--no-pdf"]


def _run_all(d, started, out_root):
    env = dict(os.environ, HF_HUB_OFFLINE="1", GEOLIP_WARM="0")  # no zygote: the cgroup holds the kernel only
    return inside(d, [sys.executable, "run_all.py", *JOB, "--out", out_root], started, cwd=ROOT, env=env,
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_job_waits_for_memory_another_process_holds_then_runs(tmp_path):
    limit = 3 * GB // 4096 * 4096
    with cgroup("memory", **{"memory.limit_in_bytes": limit}) as (d, started):
        holder = hold(d, int(2.2 * GB), started)  # leaves < 1.11 GB peak + 0.3 GB kept free
        run = _run_all(d, started, tmp_path / "out")
        lines = []
        for ln in run.stdout:
            lines.append(ln.rstrip())
            if ln.startswith("waiting for memory:"):
                stop(holder)  # the holder exits: the job finds its memory
        run.wait(timeout=300)
    out = "\n".join(lines)
    assert run.returncode == 0, out
    wait = next(ln for ln in lines if ln.startswith("waiting for memory:"))
    assert "05_seed_stability / tiny-t5 needs" in wait and f"cgroup v1 limit ({d})" in wait
    assert "other processes hold" in wait
    assert any(ln.startswith("memory free: 05_seed_stability / tiny-t5 starts after waiting") for ln in lines), out
    assert any(" ok " in ln and "05_seed_stability / tiny-t5" in ln for ln in lines), out


def test_the_run_exits_0_while_another_process_holds_memory(tmp_path):
    limit = 4 * GB // 4096 * 4096
    with cgroup("memory", **{"memory.limit_in_bytes": limit}) as (d, started):
        holder = hold(d, 2 * GB, started)  # held the whole run
        run = _run_all(d, started, tmp_path / "out")
        out, _ = run.communicate(timeout=300)
        assert holder.poll() is None  # still holding when the run ended
        stop(holder)
    assert run.returncode == 0, out
    assert "waiting for memory" not in out and "05_seed_stability / tiny-t5" in out


def test_the_demo_runs_to_its_report_while_a_third_of_the_box_is_held(tmp_path):
    """The real profile beside a process holding 8 of 24 GB, at demo scale: a 6 GB box (cgroup) with 2 GB held
    the whole run; the demo's 01, 02 and 06 on all-MiniLM-L6-v2, two at once where they fit, then the report."""
    limit = 6 * GB // 4096 * 4096
    argv = [sys.executable, "run_all.py", "--profile", "demo", "--models", "all-minilm-l6-v2", "--notebooks",
            "01_embedding_terrain", "02_weight_topology", "06_qk_operators", "--jobs", "2", "--no-pdf",
            "--out", str(tmp_path / "out")]
    env = dict(os.environ, HF_HUB_OFFLINE="1", GEOLIP_WARM="0")
    with cgroup("memory", **{"memory.limit_in_bytes": limit}) as (d, started):
        holder = hold(d, 2 * GB, started)
        run = inside(d, argv, started, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = run.communicate(timeout=900)
        assert holder.poll() is None, out  # it held its 2 GB to the end
        stop(holder)
    assert run.returncode == 0, out
    for nb in ("01_embedding_terrain", "02_weight_topology", "06_qk_operators"):
        assert (tmp_path / "out" / nb / "all-minilm-l6-v2" / "metrics.json").is_file(), out
    assert (tmp_path / "out" / "index.html").is_file(), out
