"""Admission by the box, not the moment: a job that fits the box's memory but not what is free now waits, one
line a minute, and starts when the memory is there (``geolip_lib.runner.admission.MemoryGate`` in the local
launcher); ``--plan`` names the jobs that would wait; a job over the box itself is still refused."""
from __future__ import annotations

import dataclasses
import io

import pytest

import run_all
from geolip_lib.runner import local, plan as P
from geolip_lib.runner.admission import MemoryGate
from geolip_lib.runner.box import HostMemory
from geolip_lib.runner.schedule import Progress, schedule

pytestmark = pytest.mark.unit
GB = 10**9


class _Clock:
    """A minute passes at each reading."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        self.t += 61.0
        return self.t


def _memory(*free):
    """The box (10 GB RAM) with ``free[i]`` GB available at the i-th reading, the last one after that."""
    seen = []

    def read():
        seen.append(1)
        return HostMemory(10 * GB, int(free[min(len(seen), len(free)) - 1] * GB))

    return read


def test_the_gate_holds_a_job_until_memory_is_free_saying_so_each_minute():
    said = []
    gate = MemoryGate({"a": 3 * GB, "b": 2 * GB}, said.append, memory=_memory(1, 2, 5), kernels=lambda: 0,
                      held=lambda: int(0.5 * GB), clock=_Clock())
    assert not gate.admits("a", []) and not gate.admits("a", [])
    assert gate.admits("a", [])  # 5 GB free >= 3 GB peak + 1 GB kept free of the 10 GB box
    assert len(said) == 3 and all(s.startswith("waiting for memory: a needs 4.00 GB free") for s in said[:2])
    assert "1.00 GB free now of 10.00 GB RAM; other processes hold 8.50 GB" in said[0]
    assert "2.00 GB free now" in said[1] and said[1].endswith("waiting 61 s")
    assert said[2].startswith("memory free: a starts after waiting 2 min")


def test_running_jobs_count_by_the_part_of_their_planned_peak_not_yet_held():
    said = []
    gate = MemoryGate({"a": 3 * GB, "b": 2 * GB}, said.append, memory=_memory(4.5), kernels=lambda: 1 * GB,
                      held=lambda: GB, clock=_Clock())
    assert not gate.admits("b", ["a"])  # 2 + (3 - 1 held already) + 1 kept free > 4.5
    assert "5.00 GB free (its peak 2.00 GB, 2.00 GB of it for the jobs running beside it" in said[0]
    gate.kernels = lambda: 3 * GB  # a at its peak: nothing more to come
    assert gate.admits("b", ["a"])


def test_a_run_waits_then_starts_the_job(tmp_path):
    jobs = run_all.jobs_for_profile("tiny", notebooks=["02_weight_topology"])[:2]
    pl = P.make_plan(jobs, free_disk=10**15, free_mem=10**12, gpus=[], parallel=1, defaults=run_all.notebook_defaults)
    rows = [dataclasses.replace(r, host=2 * GB) for r in pl.rows]
    pl = dataclasses.replace(pl, rows=rows)
    ran = []

    def fake_execute(job, out_root, env=None, device=""):
        ran.append(job.label)
        return run_all.JobResult(job, True, out_root, 0.0, device=device)

    console = io.StringIO()
    progress = Progress(console, len(jobs), parallel=False)
    gate = MemoryGate(pl.peaks(), progress.line, memory=_memory(1, 1, 1, 8), kernels=lambda: 0, held=lambda: 0,
                      clock=_Clock())
    launcher = local._Threads(1, [], None, fake_execute, tmp_path, progress, pl, gate=gate)
    res = schedule(jobs, tmp_path, launcher, progress)
    out = console.getvalue().splitlines()
    assert all(r.ok for r in res) and ran == [j.label for j in jobs]
    waits = [ln for ln in out if ln.startswith("waiting for memory:")]
    assert len(waits) == 3 and all(jobs[0].label in ln and "1.00 GB free now of 10.00 GB RAM" in ln for ln in waits)
    first_start = next(i for i, ln in enumerate(out) if "start " in ln)
    assert out[first_start - 1].startswith(f"memory free: {jobs[0].label} starts after waiting")
    assert not any(jobs[1].label in ln for ln in waits)  # the second found its memory at once


def _box_plan(host_gb, free_gb, box_gb=10):
    job = run_all.jobs_for_profile("tiny", notebooks=["02_weight_topology"])[0]
    pl = P.make_plan([job], free_disk=10**15, free_mem=10**12, gpus=[], defaults=run_all.notebook_defaults)
    return dataclasses.replace(pl, rows=[dataclasses.replace(pl.rows[0], host=int(host_gb * GB))],
                               free_mem=int(free_gb * GB), box_mem=box_gb * GB, mem_note=f"{box_gb:.2f} GB RAM"), job


def test_plan_says_which_jobs_would_wait_and_refuses_only_what_cannot_fit_the_box():
    pl, job = _box_plan(host_gb=5, free_gb=3)
    assert pl.shortfalls() == [] and pl.unfit() == {} and pl.waits() == [job.label]
    text = " ".join(pl.render().split())
    assert "the box: 10.00 GB RAM; 3.00 GB available now" in text
    assert f"would wait for memory (they fit the box, not the 3.00 GB free now: 7.00 GB is in use; a run starts " \
           f"them when it is free): {job.label}" in text
    assert text.endswith("fits.")
    P.check_fit(pl)  # a run is not refused: it waits
    roomy, _ = _box_plan(host_gb=5, free_gb=9)
    assert roomy.waits() == [] and "would wait" not in roomy.render()
    over, _ = _box_plan(host_gb=9.5, free_gb=9.9)
    assert over.waits() == [] and over.unfit() and "this box's 10.00 GB RAM (9.00 GB with 10% kept free)" in \
        over.shortfalls()[0]
    with pytest.raises(P.PlanError, match=r"^cannot fit: .*host memory: needs 9.50 GB at its peak, this box's"):
        P.check_fit(over)


def test_this_machine_plan_judges_the_box_not_the_moment(tmp_path):
    job = run_all.jobs_for_profile("tiny", notebooks=["02_weight_topology"])[0]
    pl = P.make_plan([job], free_disk=10**15, gpus=[], defaults=run_all.notebook_defaults, out_root=tmp_path)
    mem = P.host_memory()
    assert pl.box_mem == mem.total and pl.mem_note == mem.describe() and 0 < pl.free_mem <= mem.total
    assert f"the box: {mem.describe()};" in " ".join(pl.render().split())
