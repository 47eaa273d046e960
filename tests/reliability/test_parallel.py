"""Parallel jobs (``--jobs N``) and warm kernels: what runs at once, what waits, and that an
interrupted or killed run leaves no process behind.

Throw-away notebooks that record when they ran and which process ran them; the equality of
real metrics between warm/parallel and cold/sequential executions is checked on the tiny
profile by the notebook tests (their session runs the common jobs with ``run_jobs(...,
jobs_at_once=2, warm=True)`` and compares re-executions with cold kernels).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

import run_all
from geolip_lib import results
from geolip_lib.runner import warm

from .conftest import ROOT, write_notebook

TIMED_NB = '''
import json, os, time
from tqdm.auto import tqdm
READ = lambda: []
from pathlib import Path
from geolip_lib import results
t0 = time.time()
out = results.job_dir(OUT_DIR, NAME, None)
Path(PIDS, f"{NAME}.pid").write_text(str(os.getpid()))
(out / "running").touch()
time.sleep(SLEEP)
seen = READ()
results.record(out, {"t0": t0, "t1": time.time(), "seen": seen, "threads": os.environ.get("OMP_NUM_THREADS"),
                     "warm": bool(os.environ.get("GEOLIP_WARM_SOCKET")), "tqdm": tqdm.__module__}, notebook=NAME, model=None,
               headline={"value": results.headline(1.0, interval="exact", label="Value")})
'''
TIMED_PARAMS = "OUT_DIR = None\nREPORT_ROOT = None\nNAME = 'x'\nSLEEP = 0.0\nPIDS = '/tmp'"


@pytest.fixture
def timed(sandbox, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    write_notebook(sandbox.nbdir / "t.ipynb", TIMED_NB, TIMED_PARAMS)
    # uses REPORT_ROOT outside its parameters cell: a reader of other jobs' results
    reader = TIMED_NB.replace("READ = lambda: []", "READ = lambda: sorted(p.parent.name for p in "
                              "Path(REPORT_ROOT).glob('*/*/metrics.json'))")
    write_notebook(sandbox.nbdir / "r.ipynb", reader, TIMED_PARAMS)
    sandbox.pids = pids
    return sandbox


def _profile(box, jobs: list[tuple[str, str, float]]) -> None:
    by_nb: dict[str, list] = {}
    for nb, name, sleep in jobs:
        by_nb.setdefault(nb, []).append(f"      - {{id: {name}, parameters: {{NAME: {name}, SLEEP: {sleep}, "
                                        f"PIDS: '{box.pids}'}}}}\n")
    box.write("".join(f"  {nb}:\n    per_model: false\n    jobs:\n" + "".join(rows) for nb, rows in by_nb.items()))


def _metrics(box, nb: str, name: str) -> dict:
    return results.read(box.out / nb / name)["metrics"]


@pytest.mark.slow
def test_two_jobs_run_at_once_on_warm_kernels_with_shared_cores(timed, capsys):
    _profile(timed, [("t", "a", 4.0), ("t", "b", 4.0)])
    code, lines = timed.main("--jobs", "2", "--warm", capsys=capsys)
    assert code == 0, lines
    a, b = _metrics(timed, "t", "a"), _metrics(timed, "t", "b")
    assert max(a["t0"], b["t0"]) < min(a["t1"], b["t1"]), "the two jobs did not overlap"
    assert a["threads"] == b["threads"] == str(max(1, (os.cpu_count() or 1) // 2))
    assert a["warm"] and b["warm"]
    # the notebook's progress bars (a cold kernel's ``tqdm.auto`` class), not the zygote's console bars
    assert a["tqdm"] == b["tqdm"] == "tqdm.auto"
    assert "[1/2] start t / a  (limit 1800 s)" in lines and "[2/2] start t / b  (limit 1800 s)" in lines
    assert sum(" ok " in ln for ln in lines) == 2
    assert not (timed.out / run_all.LOCK).exists()


@pytest.mark.slow
def test_a_reader_of_other_jobs_waits_for_every_earlier_job_and_nothing_overtakes_it(timed, capsys):
    # profile order: a (3 s), then the reader agg, then c (instant: it would overtake agg if allowed)
    timed.write("  t:\n    per_model: false\n    jobs:\n"
                f"      - {{id: a, parameters: {{NAME: a, SLEEP: 3.0, PIDS: '{timed.pids}'}}}}\n"
                "  r:\n    per_model: false\n    jobs:\n"
                f"      - {{id: agg, parameters: {{NAME: agg, PIDS: '{timed.pids}'}}}}\n"
                "  u:\n    per_model: false\n    jobs:\n"
                f"      - {{id: c, parameters: {{NAME: c, PIDS: '{timed.pids}'}}}}\n")
    write_notebook(timed.nbdir / "u.ipynb", TIMED_NB, TIMED_PARAMS)
    code, lines = timed.main("--jobs", "2", capsys=capsys)
    assert code == 0, lines
    a, agg, c = _metrics(timed, "t", "a"), _metrics(timed, "r", "agg"), _metrics(timed, "u", "c")
    assert agg["t0"] >= a["t1"] and agg["seen"] == ["a"], (a, agg)
    assert c["t0"] >= agg["t1"]


def _descendants(pid: int) -> list:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _start_two_sleepers(timed):
    _profile(timed, [("t", "a", 120.0), ("t", "b", 120.0)])
    cmd = [sys.executable, "run_all.py", "--profile", str(timed.profile), "--out", str(timed.out), "--no-pdf",
           "--jobs", "2", "--warm"]
    env = dict(os.environ, GEOLIP_NOTEBOOKS=str(timed.nbdir))
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.time() + 240
    while not all((timed.out / "t" / f".{j}.partial" / "running").exists() for j in "ab"):
        assert time.time() < deadline and proc.poll() is None, "the jobs never started"
        time.sleep(0.5)
    kernels = [int((timed.pids / f"{j}.pid").read_text()) for j in "ab"]
    family = _descendants(proc.pid)
    assert set(kernels) <= {p.pid for p in family}, "the kernels are not the runner's descendants"
    assert any("geolip_lib.runner.warm" in " ".join(p.cmdline()) for p in family), "no warm-kernel zygote"
    return proc, family, kernels


def _all_gone(procs, within_s: float = 20.0) -> list:
    _, alive = psutil.wait_procs(procs, timeout=within_s)
    return [p.pid for p in alive]


@pytest.mark.slow
def test_ctrl_c_with_two_running_jobs_stops_both_and_leaves_no_process(timed):
    proc, family, _ = _start_two_sleepers(timed)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 130, err
    assert lines[-1] == ("interrupted during t / a, t / b (their partial results were removed): 0 job(s) finished "
                         "and kept; rerun with --resume to go on"), err
    assert "Traceback" not in err
    assert _all_gone(family) == []
    assert not list((timed.out / "t").glob(".*.partial")) and not (timed.out / "t" / "a").exists()
    assert not (timed.out / run_all.LOCK).exists()


@pytest.mark.slow
def test_a_killed_runner_leaves_no_kernel_behind(timed):
    proc, family, kernels = _start_two_sleepers(timed)
    os.kill(proc.pid, signal.SIGKILL)  # the runner only: its kernels are in sessions of their own
    proc.wait(timeout=30)
    assert _all_gone(family, within_s=30) == []


def test_warm_spec_rewrites_only_ipykernel_argv():
    class Spec:
        argv = ["/venv/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]

    new = warm.warm_kernel_spec(Spec())
    assert new.argv == ["/venv/bin/python", "-m", "geolip_lib.runner.warm", "launch", "-f", "{connection_file}"]
    assert Spec.argv[2] == "ipykernel_launcher"  # the original is untouched

    class Other:
        argv = ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"]

    assert warm.warm_kernel_spec(Other()).argv == Other.argv


def test_jobs_must_be_positive(sandbox, capsys):
    code, lines = sandbox.main("--jobs", "0", capsys=capsys)
    assert code == 2 and lines == ["error: --jobs 0: give a number of jobs from 1 to 4096"]


def test_a_model_asking_for_more_gpus_than_the_box_has_fails_that_job_only(tmp_path, monkeypatch):
    from geolip_lib.runner import local

    jobs = run_all.jobs_for_profile("tiny", notebooks=["02_weight_topology"])[:2]
    monkeypatch.setattr(local, "gpus_wanted", lambda job: 3 if job is jobs[0] else 1)
    ran = []

    def fake_execute(job, out_root, env=None, device=""):
        ran.append((job.label, env.get("CUDA_VISIBLE_DEVICES"), device))
        return run_all.JobResult(job, True, out_root / job.notebook / job.job_id, 0.0, device=device)

    res = local.run_jobs(jobs, tmp_path / "o", jobs_at_once=2, execute=fake_execute, gpus=["0", "1"], warm=False,
                         console=sys.stderr)
    assert not res[0].ok and "asks for 3 GPUs" in res[0].error and "has 2" in res[0].error
    assert res[1].ok and ran == [(jobs[1].label, "0", "cuda:0")]


def test_each_parallel_job_gets_its_own_gpu(tmp_path):
    from geolip_lib.runner import local

    jobs = run_all.jobs_for_profile("tiny", notebooks=["01_embedding_terrain"])[:3]
    seen = {}
    lock_ = __import__("threading").Lock()
    active = set()
    overlaps = []

    def fake_execute(job, out_root, env=None, device=""):
        gpu = env["CUDA_VISIBLE_DEVICES"]
        with lock_:
            overlaps.append(gpu in active)
            active.add(gpu)
        time.sleep(0.3)
        with lock_:
            active.discard(gpu)
        seen[job.label] = (gpu, device)
        return run_all.JobResult(job, True, out_root, 0.0, device=device)

    res = local.run_jobs(jobs, tmp_path / "o", jobs_at_once=None, execute=fake_execute, gpus=["0", "1"], warm=False,
                         console=sys.stderr)
    assert all(r.ok for r in res) and len(seen) == 3
    assert not any(overlaps), "two jobs shared one GPU at the same time"
    assert {g for g, _ in seen.values()} == {"0", "1"} and all(d == f"cuda:{g}" for g, d in seen.values())


def test_jobs_whose_memory_peaks_do_not_fit_together_run_one_after_the_other(tmp_path):
    """--jobs 2 with a plan: two jobs whose estimated host peaks exceed the usable memory together never run at
    once (Qwen2.5-Coder's 12-19 GB jobs beside others on a 24 GB box); small ones still pair up."""
    import dataclasses
    import threading

    from geolip_lib.runner import local
    from geolip_lib.runner import plan as P

    jobs = run_all.jobs_for_profile("tiny", notebooks=["01_embedding_terrain"])[:4]
    big = {jobs[0].label, jobs[1].label}
    pl = P.make_plan(jobs, free_disk=10**15, free_mem=10**12, gpus=[], parallel=2, defaults=run_all.notebook_defaults)
    rows = [dataclasses.replace(r, host=(6 if r.label in big else 1) * 10**9) for r in pl.rows]
    pl = dataclasses.replace(pl, rows=rows, free_mem=int(10 * 10**9 / (1 - P.HEADROOM)) + 1)  # 10 GB usable
    lock_, active, pairs = threading.Lock(), set(), []

    def fake_execute(job, out_root, env=None, device=""):
        with lock_:
            active.add(job.label)
            pairs.append(frozenset(active))
        time.sleep(0.3)
        with lock_:
            active.discard(job.label)
        return run_all.JobResult(job, True, out_root, 0.0, device=device)

    res = local.run_jobs(jobs, tmp_path / "o", jobs_at_once=2, execute=fake_execute, gpus=[], warm=False,
                         console=sys.stderr, plan=pl)
    assert all(r.ok for r in res)
    assert not any(big <= p for p in pairs), "the two large jobs ran at once"
    assert any(len(p) == 2 for p in pairs), "small jobs beside each other (or a large one) should still pair up"
