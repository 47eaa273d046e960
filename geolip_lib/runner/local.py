"""The local executor: a profile's jobs on this machine, up to ``jobs`` at once.

Each job runs in a thread of this process (:func:`execute.execute_job` is thread-safe: the
kernel is its own process with its own environment). On a GPU box each job gets its own
GPUs through ``CUDA_VISIBLE_DEVICES`` (a model's ``gpus:`` asks for several); on a CPU
each kernel gets ``cores // (default parallel jobs)`` threads
(threads: :func:`.resources.kernel_threads`, the same whatever ``--jobs`` is, so that the
metrics do not depend on it). A notebook that reads other jobs' results (03, 15) starts only once every job before it
has finished, and nothing after it starts before it ends: the results are those of a
sequential run. Ctrl-C kills every kernel (with its process group) and removes their
partial results.
"""
from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from .. import models  # sizes and checks of models: their submodules are imported on first use
from ..params import load_model_params
from ..paths import REPORTS
from .admission import MemoryGate
from .claims_run import CLAIMS_NOTEBOOK, claims_jobs
from .execute import execute_job, job_paths, kill_all_kernels, recover
from .jobs import (Job, JobResult, check_ours, claim_root, job_models, jobs_for_profile, notebook_defaults, stale_reasons,
                   with_timeout)
from .lock import RunError, prepare_root, run_lock
from .plan import check_fit, make_plan
from .ray_executor import run_jobs_ray
from .resources import default_jobs, visible_gpus
from .schedule import Interrupted, Progress, Running, gpus_wanted, schedule  # noqa: F401 - Interrupted: what run_all.py catches
from .warm import WarmPool


def run_jobs(jobs: Sequence[Job], out_root: Path, *, jobs_at_once: Optional[int] = None, resume: bool = False,
             console=None, execute: Callable[..., JobResult] = execute_job,
             gpus: Optional[Sequence[str]] = None, warm: Optional[bool] = None,
             pool: Optional[WarmPool] = None, plan=None) -> list[JobResult]:
    """Run ``jobs`` (profile order) into ``out_root``, up to ``jobs_at_once`` at a time.

    Returns one :class:`JobResult` per job handled, in profile order. A failing job never
    stops the batch; a full disk does (the remaining jobs could not write either). Ctrl-C
    raises :class:`Interrupted` after every kernel is killed. ``warm``: start kernels from a
    zygote that has imported torch & co. once (:mod:`.warm`; default on, ``GEOLIP_WARM=0``
    turns it off); or ``pool``, a zygote already started by the caller. ``plan``: the run's
    :class:`.plan.Plan`; a job then starts only where its estimated host peak fits beside the
    running jobs' (:meth:`.plan.Plan.admits`), else it waits for one to end; and only when the memory
    free now holds it (:class:`.admission.MemoryGate`: other programs may hold part of the box; it waits,
    one line a minute, until they free it).
    """
    if pool is not None:
        return _run_jobs(jobs, out_root, jobs_at_once=jobs_at_once, resume=resume, console=console,
                         execute=execute, gpus=gpus, pool=pool, plan=plan)
    with WarmPool(enabled=warm, log=out_root_log(out_root)) as pool:
        return _run_jobs(jobs, out_root, jobs_at_once=jobs_at_once, resume=resume, console=console,
                         execute=execute, gpus=gpus, pool=pool, plan=plan)


def out_root_log(out_root: Path) -> Path:
    """Where the run's own helpers log (the warm-kernel zygote): ``<root>/.runner.log``."""
    return Path(out_root) / ".runner.log"


def _run_jobs(jobs, out_root, *, jobs_at_once, resume, console, execute, gpus, pool, plan=None) -> list[JobResult]:
    console = console or sys.stderr
    out_root = Path(out_root).resolve()
    gpus = list(visible_gpus() if gpus is None else gpus)
    n = jobs_at_once or default_jobs(gpus)
    progress = Progress(console, len(jobs), parallel=n > 1)
    return schedule(jobs, out_root, _Threads(n, gpus, pool, execute, out_root, progress, plan), progress,
                    resume=resume)


class _Threads:
    """The local executor's launcher for :func:`.schedule.schedule`: one thread per job (each
    with its own kernel process), up to ``n`` at once, each with its own GPUs and, with a plan, no
    more at once than their estimated host peaks allow (a large model's jobs run alone) and none before
    the memory free now holds it (``gate``, default :class:`.admission.MemoryGate` on the plan's peaks)."""

    def __init__(self, n: int, gpus: list, pool, execute, out_root: Path, progress: Progress, plan=None,
                 gate: Optional[MemoryGate] = None):
        self.n, self.gpus, self.free, self.plan = n, list(gpus), list(gpus), plan
        self.pool, self.execute, self.out_root, self.progress = pool, execute, out_root, progress
        self.done: "queue.Queue[tuple[int, object]]" = queue.Queue()
        zygote = getattr(getattr(pool, "proc", None), "pid", None)
        self.gate = gate if gate is not None or plan is None else MemoryGate(
            plan.peaks(), progress.line, exclude=[zygote] if zygote else [])

    def _want(self, job: Job) -> int:
        return gpus_wanted(job) if self.gpus else 0

    def has_room(self, running: dict) -> bool:
        return len(running) < self.n

    def refuse(self, job: Job) -> Optional[str]:
        want = self._want(job)
        if want > len(self.gpus):
            return (f"its model asks for {want} GPUs (gpus: in params/models/{job.model}.yaml) "
                    f"and this machine has {len(self.gpus)}")
        return None

    def fits(self, job: Job, running: dict) -> bool:
        labels = [r.job.label for r in running.values()]
        if self.plan is not None and not self.plan.admits(job.label, labels):
            return False  # host memory: it waits for a running job to end
        if self._want(job) > len(self.free):
            return False
        return self.gate is None or self.gate.admits(job.label, labels)  # the memory free now

    def start(self, i: int, job: Job) -> Running:
        want = self._want(job)
        job_gpus, self.free[:] = self.free[:want], self.free[want:]
        device = ("cuda:" + ",".join(job_gpus)) if job_gpus else "cpu"
        env = dict(self.pool.env()) if self.pool is not None else {}
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(job_gpus)
        t = threading.Thread(target=self._work, args=(i, job, env, device), daemon=True, name=f"job-{i}")
        limit = f"  (limit {job.timeout_s} s)" if job.timeout_s else ""
        self.progress.line(f"{self.progress.tag(i)} start {job.label}" + (f"  ({device})" if job_gpus else "") + limit)
        t.start()
        return Running(job, i, time.perf_counter(), job_gpus, t)

    def _work(self, i: int, job: Job, env: dict, device: str) -> None:
        try:
            self.done.put((i, self.execute(job, self.out_root, env=env, device=device)))
        except BaseException as exc:  # noqa: BLE001 - re-raised by the scheduler
            self.done.put((i, exc))

    def wait(self, timeout: float):
        try:
            return self.done.get(timeout=timeout)
        except queue.Empty:
            return None

    def release(self, r: Running) -> None:
        self.free.extend(r.gpus)

    def stop(self, running: list) -> None:
        kill_all_kernels()
        deadline = time.time() + 30
        for r in running:  # each thread removes its partial result and returns
            r.handle.join(timeout=max(0.1, deadline - time.time()))
        kill_all_kernels()  # one that started while we waited


def planned_devices(jobs: Sequence[Job], gpus: Sequence[str], n: int) -> dict:
    """The device each job would get (for ``--plan``): GPU groups handed out in profile order
    as jobs finish, one job per free group; ``cpu`` without GPUs."""
    if not gpus:
        return {j.label: "cpu" for j in jobs}
    out, cursor = {}, 0
    for job in jobs:
        want = gpus_wanted(job)
        if want > len(gpus):
            out[job.label] = f"needs {want} GPUs, has {len(gpus)}"
            continue
        if cursor + want > len(gpus):
            cursor = 0
        out[job.label] = "cuda:" + ",".join(gpus[cursor:cursor + want])
        cursor += want
    return out


def plan_for(jobs: Sequence[Job], out_root: Path, jobs_at_once: Optional[int] = None, box: Optional[dict] = None):
    """The run's plan (:mod:`.plan`) with this executor's device assignment; ``box``: a target box's
    what-if (:func:`.plan.target_box`) instead of this machine's GPUs, memory and disk."""
    box = dict(box or {})
    gpus = box.pop("gpu_ids", None)
    gpus = visible_gpus() if gpus is None else gpus
    n = jobs_at_once or default_jobs(gpus)
    return make_plan(jobs, devices=planned_devices(jobs, gpus, n), parallel=n, out_root=out_root,
                     defaults=notebook_defaults, **box)


def _obtainable(jobs: Sequence[Job]) -> list:
    """The jobs whose models can be obtained: a hub model neither cached nor reachable is left
    out of the plan (its jobs fail at once with their one line, as without a plan)."""
    problems: dict = {}
    out = []
    for job in jobs:
        names = job_models(job)
        for m in names:
            if m not in problems:
                problems[m] = models.locate.hub_problem(m)
        if not any(problems[m] for m in names):
            out.append(job)
    return out


def _check_stored_weights(jobs: Sequence[Job]) -> None:
    """Every model's weight files at hand: stored dtypes and shapes against its config
    (:func:`..models.preflight.check_stored_model`), before any kernel: one line, exit 2."""
    for name in sorted({m for j in jobs for m in job_models(j)}):
        try:
            models.preflight.check_stored_model(load_model_params(name))
        except models.ModelLoadError as exc:
            raise RunError(str(exc)) from None


def run(profile: str, models=None, notebooks=None, resume=False, out_root: Optional[Path] = None,
        console=None, jobs_at_once: Optional[int] = None, executor: str = "local", warm: Optional[bool] = None,
        check_plan: bool = True, skip_unfit: bool = False, timeout: Optional[int] = None,
        claims: Optional[list] = None, **executor_options) -> list[JobResult]:
    """Expand a profile and run its jobs under the output root's lock (see :func:`run_jobs`).

    Before any job, the plan of the jobs that will run is checked against the free disk and
    memory (:func:`.plan.check_fit`: one-line ``PlanError``); it is computed while the
    warm-kernel zygote imports. ``claims``: the claims-notebook jobs of these claims files instead of the
    profile's jobs (``run_all.py --claims``, :mod:`.claims_run`).
    """
    console = console or sys.stderr
    if claims:
        jobs, notebooks = claims_jobs(profile, list(claims)), [CLAIMS_NOTEBOOK]
    else:
        jobs = jobs_for_profile(profile, models, notebooks)
    jobs = with_timeout(jobs, timeout)  # --timeout: the run's job limit
    out_root = Path(out_root) if out_root else REPORTS / Path(profile).stem
    check_ours(out_root)  # an existing folder of someone's own files is never written into (one line)
    out_root = prepare_root(out_root).resolve()
    try:
        return _run_locked(jobs, out_root, resume, console, jobs_at_once, executor, warm, check_plan,
                           executor_options, {"models": list(models) if models else None,
                                              "notebooks": list(notebooks) if notebooks else None}, skip_unfit)
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM before the first job started
        raise Interrupted([], None) from None


def _run_locked(jobs, out_root, resume, console, jobs_at_once, executor, warm, check_plan, executor_options,
                selection=None, skip_unfit=False):
    with run_lock(out_root, console):
        if jobs:  # the root records its profile; another profile's root is refused (one line, exit 2)
            claim_root(out_root, jobs[0].profile, selection)  # and the --models / --notebooks of this run
        recover(out_root, console)
        for job in jobs:  # every result path inside the root, no link on the way (one line, exit 2)
            job_paths(job, out_root)
        _check_stored_weights(jobs)

        def check(at_once):  # the jobs that will run (under --resume, the stale ones) must fit; the plan
            if check_plan:  # is then what the launcher reads each job's memory peak from
                pending = [j for j in jobs if not resume or stale_reasons(j, out_root)]
                plan = plan_for(_obtainable(pending), out_root, at_once)
                if skip_unfit:  # --skip-unfit: the jobs that cannot fit are left out, named (H5)
                    unfit = plan.unfit()
                    for label, lines in unfit.items():
                        print(f"left out (--skip-unfit): {lines[0]}", file=console)
                    jobs[:] = [j for j in jobs if j.label not in unfit]
                    plan = plan_for(_obtainable([j for j in pending if j.label not in unfit]), out_root, at_once)
                check_fit(plan)
                for line in plan.time_lines(measured_only=True):  # said before the first job, never enforced
                    print(f"warning: {line}", file=console)
                alone = plan.memory_alone()
                if alone:
                    print(f"note: run alone (host memory; the others {plan.parallel} at once): {', '.join(alone)}",
                          file=console)
                return plan
            return None

        if executor == "ray":
            check(1)
            return run_jobs_ray(jobs, out_root, resume=resume, console=console, **executor_options)
        with WarmPool(enabled=warm, log=out_root_log(out_root)) as pool:
            plan = check(jobs_at_once)  # while the zygote imports
            return run_jobs(jobs, out_root, jobs_at_once=jobs_at_once, resume=resume, console=console, pool=pool,
                            plan=plan)
