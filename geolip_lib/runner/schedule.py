"""The scheduling rules every executor follows, with the executor's own way of starting jobs.

:func:`schedule` walks a profile's jobs in profile order and asks a *launcher* (threads on
this machine, Ray tasks on a cluster) to start them: ``--resume`` skips finished jobs that
are still current (:func:`jobs.stale_reasons`) and says why it re-runs the others; a
notebook that reads other jobs' results (03, 15: :func:`jobs.reads_other_jobs`) starts only
once every job before it has finished, and nothing after it starts before it ends; a job
the launcher can never run (more GPUs than any machine has) fails with one line; a full
disk stops the batch; each finished job prints one line ``[i/N] ok|FAIL <label>  12.3s``.
Ctrl-C (or SIGTERM) asks the launcher to stop everything it started and raises
:class:`Interrupted`; an output root or lock removed while the run goes
(:func:`.lock.check_root`, every half second and before each publish) stops everything the
same way and raises a one-line :class:`.lock.RootVanished`.

These rules are written once, here: the local executor (threads, :mod:`.local`) and the
Ray executor (:mod:`.ray_executor`) are launchers.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol, Sequence

from ..params import load_model_params
from .execute import DISK_FULL, INTERRUPTED, JobInterrupted, cell_progress
from .jobs import Job, JobResult, job_dir, reads_other_jobs, stale_reasons
from .lock import RootVanished, check_root


def gpus_wanted(job: Job) -> int:
    """GPUs one job needs: its model's ``gpus:`` (default 1); jobs without a model need 1."""
    if not job.model:
        return 1
    return load_model_params(job.model).gpus or 1


class Interrupted(Exception):
    """Ctrl-C during a run: the results so far and the jobs that were stopped."""

    def __init__(self, results: list, job: Optional[Job], stopped: Sequence[Job] = ()):
        super().__init__("interrupted")
        self.results, self.job, self.stopped = results, job, list(stopped)


@dataclass
class Running:
    """A started job (what the progress footer lists)."""

    job: Job
    index: int
    started: float
    gpus: list = field(default_factory=list)
    handle: object = None  # the launcher's own: a thread, a Ray ObjectRef


class Launcher(Protocol):
    """How an executor starts, waits for and stops jobs (see :func:`schedule`)."""

    def has_room(self, running: dict) -> bool:
        """Whether another job may start now (a slot, a worker)."""

    def refuse(self, job: Job) -> Optional[str]:
        """Why ``job`` can never run on this executor (one line), or None."""

    def fits(self, job: Job, running: dict) -> bool:
        """Whether ``job``'s resources (GPUs) are free now; False: wait for a job to end."""

    def start(self, i: int, job: Job) -> Running:
        """Start job number ``i``."""

    def wait(self, timeout: float):
        """``(i, JobResult)`` of a finished job (or ``(i, exception)`` to re-raise), or None."""

    def release(self, r: Running) -> None:
        """Give back what a finished job held."""

    def stop(self, running: list) -> None:
        """Ctrl-C: stop every running job and remove its partial result."""


def schedule(jobs: Sequence[Job], out_root: Path, launcher: Launcher, progress, *,
             resume: bool = False) -> list[JobResult]:
    """Run ``jobs`` through ``launcher`` (rules in the module docstring); results in profile order."""
    results: dict[int, JobResult] = {}
    progress.out_root = Path(out_root)  # where the heartbeat reads each running job's cell count
    pending = list(enumerate(jobs, 1))
    running: dict[int, Running] = {}
    stop_reason = None
    current: Optional[Job] = None
    announced: set = set()
    try:
        while pending or running:
            check_root(out_root)
            while pending and launcher.has_room(running) and stop_reason is None and not INTERRUPTED.is_set():
                i, job = pending[0]
                if resume:
                    why = stale_reasons(job, out_root)
                    if not why:
                        pending.pop(0)
                        results[i] = JobResult(job, True, job_dir(job, out_root), 0.0, skipped=True)
                        progress.line(f"{progress.tag(i)} skip  {job.label} (done, unchanged)")
                        continue
                    if why != ["not run yet"] and i not in announced:
                        progress.line(f"{progress.tag(i)} rerun {job.label}: {'; '.join(why)}")
                        announced.add(i)
                barrier = reads_other_jobs(job.notebook)
                if barrier and running:
                    break  # it reads every earlier job's results: wait for them
                if running and any(reads_other_jobs(r.job.notebook) for r in running.values()):
                    break  # nothing overtakes a job that reads the others
                never = launcher.refuse(job)
                if never:
                    pending.pop(0)
                    results[i] = JobResult(job, False, job_dir(job, out_root), 0.0, error=never)
                    progress.line(f"{progress.tag(i)} FAIL  {job.label}  {never}")
                    continue
                if not launcher.fits(job, running):
                    break  # wait for resources
                pending.pop(0)
                current = job
                running[i] = launcher.start(i, job)
                if barrier:
                    break
            if not running:
                if stop_reason or INTERRUPTED.is_set() or not pending:
                    break
                time.sleep(0.5)  # nothing may start yet (no room): do not spin
                continue
            got = launcher.wait(0.5)
            if got is None:
                progress.footer(running)
                continue
            i, res = got
            if isinstance(res, JobInterrupted):
                raise KeyboardInterrupt
            if isinstance(res, BaseException):
                raise res
            launcher.release(running.pop(i))
            results[i] = res
            status = "ok   " if res.ok else "FAIL "
            progress.line(f"{progress.tag(i)} {status} {res.job.label}  {res.seconds:6.1f}s"
                          + ("" if res.ok else f"  {res.error}"))
            if not res.ok and (res.error or "").startswith(DISK_FULL) and stop_reason is None:
                stop_reason = "disk"
                progress.line(f"stopping: the disk holding {out_root} is full; {len(pending)} job(s) not started. "
                              "Free space, then rerun with --resume.")
                pending.clear()
        check_root(out_root)  # the last job's result went into this run's root, not a recreated one
    except KeyboardInterrupt:
        INTERRUPTED.set()
        stopped = [r.job for r in running.values()]
        launcher.stop(list(running.values()))
        progress._clear()
        done = [results[k] for k in sorted(results)]
        raise Interrupted(done, stopped[0] if stopped else current, stopped) from None
    except RootVanished as exc:  # nothing may be published into a root that is gone or recreated
        INTERRUPTED.set()  # the running jobs remove their partial results instead of publishing
        stopped = [r.job for r in running.values()]
        launcher.stop(list(running.values()))
        progress._clear()
        if exc.root_gone:
            _remove_recreated(out_root, jobs)
        INTERRUPTED.clear()  # the stop is done: a later run in this process starts clean
        n = sum(r.ok and not r.skipped for r in results.values())
        raise RootVanished(f"{exc}: stopped {len(stopped)} running job(s) and published nothing more "
                           f"({n} finished before); rerun to start again", exc.root_gone) from None
    return [results[k] for k in sorted(results)]


def _remove_recreated(out_root: Path, jobs: Sequence[Job]) -> None:
    """Directories the stopped kernels may have created again in a removed root, and that root:
    removed when empty (``rmdir``: nothing another process put there is touched)."""
    for nb in sorted({j.notebook for j in jobs}):
        try:
            (out_root / nb).rmdir()
        except OSError:
            pass
    try:
        out_root.rmdir()
    except OSError:
        pass


class Progress:
    """One line per started / finished job; on a terminal, a footer with every running job, its
    elapsed time and the cell it is in (``cell 5 of 23``), refreshed each second; elsewhere, that
    list every 60 s (a heartbeat: with ``--jobs 1`` too, so a long job is never silent)."""

    #: seconds between two reads of one job's partial notebook for its cell count
    CELL_EVERY = 10.0

    def __init__(self, console, total: int, parallel: bool, every: float = 60.0):
        self.console, self.total, self.parallel, self.every = console, total, parallel, every
        self.width = len(str(total))
        self.tty = bool(getattr(console, "isatty", lambda: False)())
        self.last_footer = time.perf_counter()
        self.footer_shown = False
        self.out_root: Optional[Path] = None
        self._cells: dict = {}  # label -> (read at, text)

    def tag(self, i: int) -> str:
        return f"[{i:>{self.width}}/{self.total}]"

    def line(self, text: str) -> None:
        self._clear()
        print(text, file=self.console, flush=True)

    def _clear(self):
        if self.tty and self.footer_shown:
            self.console.write("\r\033[K")
            self.footer_shown = False

    def cell(self, job: Job) -> str:
        """`` cell 5 of 23`` for a running job (read from its partial notebook every :attr:`CELL_EVERY` s)."""
        if self.out_root is None:
            return ""
        now = time.perf_counter()
        seen = self._cells.get(job.label)
        if seen is None or now - seen[0] >= self.CELL_EVERY:
            where = cell_progress(self.out_root / job.notebook / f".{job.job_id}.partial" / "executed.ipynb")
            text = f", cell {min(where[0] + 1, where[1])} of {where[1]}" if where and where[1] else ""
            seen = self._cells[job.label] = (now, text)
        return seen[1]

    def footer(self, running: dict, force: bool = False) -> None:
        if not running:
            return
        now = time.perf_counter()
        every = 1.0 if self.tty else self.every
        if not force and now - self.last_footer < every:
            return
        self.last_footer = now
        items = ", ".join(f"{r.job.label} {now - r.started:.0f}s{self.cell(r.job)}"
                          + (f" (gpu {','.join(r.gpus)})" if r.gpus else "")
                          for r in sorted(running.values(), key=lambda r: r.index))
        text = f"running {len(running)}: {items}"
        if self.tty:
            cols = shutil.get_terminal_size((120, 20)).columns
            self.console.write("\r\033[K" + text[: cols - 1])
            self.console.flush()
            self.footer_shown = True
        elif not force:
            print(text, file=self.console, flush=True)
