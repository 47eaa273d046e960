"""The Ray executor: a profile's jobs as Ray tasks, on a running Ray cluster or a local Ray.

``run_all.py --executor ray`` joins the cluster at ``--ray-address`` (or ``$RAY_ADDRESS``),
else starts a local Ray for the run and shuts it down at the end. Each job is one Ray task
(``max_retries=0``) asking for ``num_gpus`` (its model's ``gpus:``, 1 for jobs without a
model) when the cluster has GPUs and ``num_cpus``; the task calls
:func:`execute.execute_job` on the worker, with ``CUDA_VISIBLE_DEVICES`` as Ray set it and
``OMP_NUM_THREADS`` = the task's CPUs, so the kernel uses what Ray gave the task.

Code on the workers: every box runs this checkout at the same path, with its ``.venv`` (Ray
starts workers with the Python that ran ``ray start``); the tasks get ``PYTHONPATH=<this
checkout>``. Not a Ray ``working_dir``: that would unpack the code elsewhere, and the
project's caches (``.cache/``: WordNet arrays, tokenizers, encodings) and model params are
found relative to the checkout. A node whose checkout differs from the driver's
(``geolip_lib`` code) is refused at start, with one line.

Where results land (``--ray-results``):

* ``shared`` (default for a local Ray): the task writes straight into the output root, so
  that root must be on storage every node mounts (checked at start: each node must see a
  probe file the driver wrote, else one line says to pass ``--ray-results return``);
* ``return`` (default when joining a cluster): the task runs into a temporary directory on
  its worker and sends the finished (or failed) job directory back as a tar archive; the
  driver unpacks it into the output root (``publish``: atomic, as locally). Notebooks that
  read other jobs' results (03, 15) get the ``metrics.json`` of every finished job sent
  along.

A job whose worker dies (killed, out of memory, node lost) is reported as failed
(``<job>.failed/error.txt``) and the batch goes on; ``--resume``, the ordering of readers
of other jobs and the one line per job are those of the local executor
(:func:`schedule.schedule`). Ctrl-C cancels every task (its kernel is stopped, its partial
result removed) and raises :class:`local.Interrupted`.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from ..paths import ROOT
from .execute import DISK_FULL, _fail, _is_disk_full, _one_line_error, _repoint_injected, job_paths, publish
from .jobs import Job, JobResult, job_dir, reads_other_jobs
from .schedule import Interrupted, Progress, gpus_wanted
from .lock import RootVanished, RunError, UnsafePathError, remove_entry
from .ray_cluster import _is_local_cluster, _route_ray_logs, check_cluster, connect  # noqa: F401 - connect re-exported
from .ray_worker import _finished_metrics, _untar, _worker_job
from .schedule import Running, schedule

MODES = ("shared", "return")
#: the driver's settings that change what a job computes or prints: sent to every task
#: (per-box settings such as HF_HOME belong in the environment of ``ray start`` on each box)
FORWARDED_ENV = ("GEOLIP_NOTEBOOKS", "GEOLIP_MODEL_FILES", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TQDM_DISABLE",
                 "PYDEVD_DISABLE_FILE_VALIDATION", "MPLBACKEND")
DIED = "the Ray worker running it died"
DRIVER_LOG = ".ray-driver.log"


# ----------------------------------------------------------------------------- the driver


class _RayLauncher:
    """Starts jobs as Ray tasks (see :class:`schedule.Launcher`)."""

    def __init__(self, out_root: Path, mode: str, num_cpus_per_job: Optional[int]):
        import ray

        self.ray, self.out_root, self.mode = ray, out_root, mode
        self.refs: dict = {}  # ObjectRef -> (Running, GPUs it asked for)
        self.gpus_busy = 0  # GPUs asked for by the tasks in flight
        self.cpus_asked = num_cpus_per_job
        self.runtime_env = {"env_vars": {"PYTHONPATH": str(ROOT),
                                         **{k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}}}
        self.task = ray.remote(max_retries=0)(_worker_job)
        self._seen = 0.0
        self.refresh(force=True)

    # what the cluster has (re-read every 10 s: nodes join and leave)
    def refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self._seen < 10:
            return
        self._seen = time.monotonic()
        nodes = [n.get("Resources", {}) for n in self.ray.nodes() if n.get("Alive")]
        self.node_gpus = [int(r.get("GPU", 0)) for r in nodes]
        self.node_cpus = [int(r.get("CPU", 0)) for r in nodes]
        self.has_gpus = any(self.node_gpus)
        if self.has_gpus:  # each job's CPUs: the smallest CPU share per GPU of a GPU node
            share = min(c // g for c, g in zip(self.node_cpus, self.node_gpus) if g) or 1
            self.cpus = self.cpus_asked or max(1, share)
            self.capacity = sum(self.node_gpus)
        else:
            self.cpus = self.cpus_asked or 1
            self.capacity = sum(c // self.cpus for c in self.node_cpus)

    def gpus_for(self, job: Job) -> int:
        return gpus_wanted(job) if self.has_gpus else 0

    def has_room(self, running: dict) -> bool:
        self.refresh()
        return len(running) < self.capacity or not running  # one task always: Ray queues it

    def refuse(self, job: Job) -> Optional[str]:
        want = self.gpus_for(job)
        if want > max(self.node_gpus, default=0):
            return (f"its model asks for {want} GPUs (gpus: in params/models/{job.model}.yaml) and the largest "
                    f"Ray node has {max(self.node_gpus, default=0)}")
        if not self.has_gpus and self.cpus > max(self.node_cpus, default=0):
            return f"it asks for {self.cpus} CPUs and the largest Ray node has {max(self.node_cpus, default=0)}"
        return None

    def fits(self, job: Job, running: dict) -> bool:
        if not self.has_gpus:
            return True
        return not running or self.gpus_busy + self.gpus_for(job) <= self.capacity

    def start(self, i: int, job: Job) -> Running:
        want = self.gpus_for(job)
        cpus = self.cpus * max(1, want)
        inputs = _finished_metrics(self.out_root) if self.mode == "return" and reads_other_jobs(job.notebook) else None
        ref = self.task.options(num_cpus=cpus, num_gpus=want, runtime_env=self.runtime_env,
                                name=f"{job.notebook}/{job.job_id}").remote(job, str(self.out_root), self.mode,
                                                                              cpus, inputs)
        r = Running(job, i, time.perf_counter(), [], ref)
        self.refs[ref] = (r, want)
        self.gpus_busy += want
        return r

    def wait(self, timeout: float):
        if not self.refs:
            return None
        ready, _ = self.ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if not ready:
            return None
        r, want = self.refs.pop(ready[0])
        self.gpus_busy -= want  # Ray frees the task's CPUs and GPUs itself
        return r.index, self.land(r, ready[0])

    def release(self, r: Running) -> None:
        pass  # counted in wait()

    def stop(self, running: list) -> None:
        """Cancel every task: first as Ray's KeyboardInterrupt (execute_job stops its kernel and
        removes its partial result), then, for any still running after 15 s, kill its worker."""
        refs = [r.handle for r in running]
        for ref in refs:
            self.ray.cancel(ref)
        _, left = self.ray.wait(refs, num_returns=len(refs), timeout=15) if refs else ([], [])
        for ref in left:
            self.ray.cancel(ref, force=True)
        if left:
            self.ray.wait(left, num_returns=len(left), timeout=15)
        for r in running:  # a killed worker's partial result (shared storage)
            try:
                remove_entry(job_paths(r.job, self.out_root)[1], ignore_errors=True)
            except UnsafePathError:
                pass

    # a finished task -> the JobResult (died workers and returned directories handled here)
    def land(self, r: Running, ref) -> JobResult:
        try:
            res, payload = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            return self._died(r, exc)
        if self.mode == "return":
            res = _unpack(self.out_root, res, payload)
        return res

    def _died(self, r: Running, exc: BaseException) -> JobResult:
        ex = self.ray.exceptions
        if isinstance(exc, ex.RayTaskError) and not isinstance(exc, ex.TaskCancelledError):
            cause = getattr(exc, "cause", None) or exc
            msg = f"the Ray task failed: {_one_line_error(cause)}"
        else:
            msg = f"{DIED}: {_ray_one_line(exc)}"
        try:
            final, partial, failed = job_paths(r.job, self.out_root)
        except UnsafePathError as bad:
            return JobResult(r.job, False, job_dir(r.job, self.out_root), time.perf_counter() - r.started,
                             error=f"{msg}; {bad}")
        try:
            if os.path.islink(partial):
                os.unlink(partial)
            partial.mkdir(parents=True, exist_ok=True)  # shared: what the worker left; return: nothing came back
            remove_entry(failed, ignore_errors=True)
        except OSError:
            pass
        return _fail(r.job, partial, failed, msg, f"{type(exc).__name__}: {exc}", r.started)


def _ray_one_line(exc: BaseException) -> str:
    """Ray's error messages are paragraphs: the type and first sentence."""
    text = " ".join(str(exc).split())
    first = text.split(". ")[0].rstrip(".")
    return f"{type(exc).__name__}: {first}"[:300]


def _unpack(out_root: Path, res: JobResult, payload) -> JobResult:
    """``return`` mode: the job directory a worker sent back, moved into ``out_root``
    (executed notebook re-pointed from the worker's temporary root to ``out_root``)."""
    tmp_root, data = payload
    job = res.job
    t0 = time.perf_counter() - res.seconds
    try:
        final, staging, failed = job_paths(job, out_root)
    except UnsafePathError as exc:
        return JobResult(job, False, job_dir(job, out_root), res.seconds, error=str(exc), device=res.device)
    try:
        remove_entry(staging)
        staging.mkdir(parents=True)
        if data is not None:
            _untar(data, staging)
            for p in staging.rglob("*"):  # landing time, as if written here: --resume compares mtimes
                os.utime(p)
            if (staging / "executed.ipynb").exists():
                _repoint_injected(staging / "executed.ipynb", Path(tmp_root), out_root)
        if res.ok:
            publish(staging, final, out_root)
            return dataclasses.replace(res, job_dir=final)
        if data is None:  # the worker could not even keep its error: write it here
            return _fail(job, staging, failed, res.error or "failed", "", t0, res.device)
        remove_entry(failed)
        os.replace(staging, failed)
        return dataclasses.replace(res, job_dir=failed)
    except RootVanished:  # the scheduler stops the run; nothing goes into a recreated root
        remove_entry(staging, ignore_errors=True)
        raise
    except (OSError, UnsafePathError) as exc:
        msg = (DISK_FULL + ": " if _is_disk_full(exc) else "") + f"could not unpack the result sent back: {exc}"
        remove_entry(staging, ignore_errors=True)
        return JobResult(job, False, staging, res.seconds, error=msg, device=res.device)


def run_jobs_ray(jobs: Sequence[Job], out_root: Path, *, resume: bool = False, console=None,
                 address: Optional[str] = None, results: Optional[str] = None,
                 num_cpus_per_job: Optional[int] = None) -> list[JobResult]:
    """Run ``jobs`` as Ray tasks into ``out_root`` (see the module docstring).

    ``address``: the cluster (default ``$RAY_ADDRESS``, else a local Ray started and shut
    down here); ``results``: ``shared`` or ``return`` (default: shared for a local Ray,
    return when joining a cluster); ``num_cpus_per_job``: CPUs each task asks for (default
    1 on a CPU-only cluster, on a GPU cluster the CPUs per GPU of its GPU nodes, times the
    job's GPUs). Same results, lines and exceptions as :func:`local.run_jobs`.
    """
    if results is not None and results not in MODES:
        raise RunError(f"--ray-results {results}: expected one of {', '.join(MODES)}")
    console = console or sys.stderr
    out_root = Path(out_root).resolve()
    import ray

    joined_before = ray.is_initialized()
    try:
        try:
            started_here = connect(address, log_file=out_root / DRIVER_LOG, console=console)
            local = started_here or (joined_before and _is_local_cluster())
            mode = results or ("shared" if local else "return")
            launcher = _RayLauncher(out_root, mode, num_cpus_per_job)
            check_cluster(out_root, mode, launcher.runtime_env)
        except KeyboardInterrupt:  # Ctrl-C while Ray starts: no job has started yet
            raise Interrupted([], None) from None
        progress = Progress(console, len(jobs), parallel=launcher.capacity > 1)
        return schedule(jobs, out_root, launcher, progress, resume=resume)
    finally:
        if not joined_before:  # stops the local Ray started here; leaves a joined cluster running
            ray.shutdown()
            _route_ray_logs(None)  # closes the log file


