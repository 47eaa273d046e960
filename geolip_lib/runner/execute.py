"""One job, executed: papermill into ``<job>/.partial``, renamed into place only on success.

Thread-safe, so the local executor can run several jobs in one process and a Ray worker can
call it as is: the kernel is started here (``jupyter_client``) with its own stdout/stderr
going to the job's ``kernel.log`` and its own environment (``CUDA_VISIBLE_DEVICES``, thread
counts), and papermill executes the notebook in it. Nothing process-global (file
descriptors, the working directory) is touched while a job runs.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Optional

from .. import models  # its submodules (torch, transformers) are imported when a job's model is checked
from ..lazy import lazy
from ..paths import REPORTS  # noqa: F401 - re-exported (the default output root)
from .jobs import FINGERPRINT, Job, JobResult, fingerprint, job_dir, notebook_parameters, notebook_path, notebooks_dir
from .lock import RootVanished, UnsafePathError, check_root, inside_root, remove_entry
from .resources import PeakMemory, kernel_death, kernel_env, oom_kills
from .publish import _repoint_injected, publish, recover  # noqa: F401 - re-exported (run_all, Ray)
from .warm import SOCKET_ENV, kernel_manager

nbformat = lazy("nbformat")
pm = lazy("papermill")  # with nbclient and jupyter_client: ~1.5 s, only when a job runs
_jupyter = lazy("jupyter_core.utils")

TIMING = "job_timing.json"  # not timing.json: notebooks 12 and 14 write their own

#: set by the runner's SIGINT / SIGTERM handler (some library may swallow the KeyboardInterrupt)
INTERRUPTED = threading.Event()


class _StopSignal:
    """Which signal stopped the run (:func:`on_stop_signal`): the word the runner prints and its
    exit code, 128 + the signal (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""

    WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated (SIGTERM)", signal.SIGHUP: "hung up (SIGHUP)"}

    def __init__(self):
        self.signum = signal.SIGINT

    def reset(self) -> None:
        self.signum = signal.SIGINT

    @property
    def word(self) -> str:
        return self.WORDS.get(self.signum, f"stopped by signal {int(self.signum)}")

    @property
    def exit_code(self) -> int:
        return 128 + int(self.signum)


STOP = _StopSignal()
#: the signals the runner handles like Ctrl-C (one line, every kernel stopped, partial results removed)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


#: seconds a started kernel may take to answer (papermill's default, 60 s, fails jobs on a loaded box: seen at
#: load 21 on 2 cores, 'Kernel didn't respond in 60 seconds')
KERNEL_READY_S = 600


def on_stop_signal(signum, frame):
    """Ctrl-C, SIGTERM, SIGHUP: remember which and that it came (some library may swallow the
    KeyboardInterrupt while a kernel starts), and raise KeyboardInterrupt as Ctrl-C does."""
    STOP.signum = signum
    INTERRUPTED.set()
    raise KeyboardInterrupt

_CHECK_LOCK = threading.Lock()  # models.check may build a tiny model's cache entry: one at a time
_KERNELS: dict[int, object] = {}  # id -> KernelManager of every running kernel (killed on Ctrl-C)
_KERNELS_LOCK = threading.Lock()


class _JobLogs(logging.Handler):
    """papermill's and jupyter_client's log records go to the ``kernel.log`` of the job whose
    thread wrote them (the console shows the runner's one line per job only)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.files: dict[int, Path] = {}
        self.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))

    def emit(self, record):
        path = self.files.get(record.thread)
        if path is None:
            return
        try:
            with _open_log(path) as fh:  # never through a link
                fh.write((self.format(record) + "\n").encode("utf-8", "replace"))
        except OSError:
            pass


JOB_LOGS = _JobLogs()
for _name in ("papermill", "traitlets", "jupyter_client", "nbclient"):
    _lg = logging.getLogger(_name)
    _lg.addHandler(JOB_LOGS)
    _lg.propagate = False


class JobInterrupted(Exception):
    """The job's kernel was stopped by Ctrl-C (its partial result was removed)."""


def kill_all_kernels() -> int:
    """Kill every running kernel with its process group (Ctrl-C): no orphan survives the runner."""
    with _KERNELS_LOCK:
        kms = list(_KERNELS.values())
    for km in kms:
        prov = getattr(km, "provisioner", None)
        pgid, pid = getattr(prov, "pgid", None), getattr(prov, "pid", None)
        try:
            if pgid:
                os.killpg(pgid, signal.SIGKILL)
            elif pid:
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return len(kms)


def execute_job(job: Job, out_root: Path | None = None, progress: bool = False,
                env: Optional[dict] = None, device: str = "") -> JobResult:
    """Run one job with papermill; atomic: the final directory appears only on success.

    ``env``: extra environment variables for the kernel (the local executor passes
    ``CUDA_VISIBLE_DEVICES`` and thread counts); ``device``: a label recorded in the result.
    A Ctrl-C (:data:`INTERRUPTED`) removes the partial result and raises
    :class:`KeyboardInterrupt` in the main thread, :class:`JobInterrupted` elsewhere.
    """
    out_root = Path(out_root).resolve() if out_root else REPORTS / job.profile
    t0 = time.perf_counter()
    try:
        final, partial, failed = job_paths(job, out_root)
        for d in (partial, failed):
            remove_entry(d)  # a link is unlinked, never followed
        partial.mkdir(parents=True)
    except (UnsafePathError, OSError) as exc:  # preflight refuses these; this is the last line of defence
        msg = str(exc) if isinstance(exc, UnsafePathError) else f"cannot prepare the job directory: {exc}"
        return JobResult(job, False, job_dir(job, out_root), time.perf_counter() - t0, error=msg, device=device)
    params = dict(job.parameters)
    declared = notebook_parameters(job.notebook)
    injected = {"OUT_DIR": str(partial), "REPORT_ROOT": str(out_root), "MODEL": job.model}
    params.update({k: v for k, v in injected.items() if k in declared and (k != "MODEL" or v is not None)})
    km = peak = watchdog = None
    oom_before = oom_kills()
    try:
        if job.model is not None:
            with _CHECK_LOCK:
                # fail fast (bad params, hub model offline, int8 or misshapen weights) with one line, not a kernel traceback
                models.preflight.check_stored_model(models.check(job.model))
        fp = fingerprint(job)
        km = kernel_manager(job.kernel, warm=bool((env or {}).get(SOCKET_ENV)))
        with _KERNELS_LOCK:
            _KERNELS[id(km)] = km
        if INTERRUPTED.is_set():
            raise KeyboardInterrupt
        JOB_LOGS.files[threading.get_ident()] = partial / "kernel.log"
        t_kernel = time.perf_counter()
        with _open_log(partial / "kernel.log") as log:  # kernel start-up noise and stderr
            _jupyter.run_sync(km.start_kernel)(cwd=str(notebooks_dir()), env=kernel_env(env), stdout=log, stderr=log)
        if not (env or {}).get(SOCKET_ENV):  # a cold kernel: sample its peak memory (warm: the zygote knows it)
            peak = PeakMemory(getattr(km.provisioner, "pid", None)).start()
        t_nb = time.perf_counter()
        watchdog = _JobLimit(job.timeout_s, t0, km, partial / "executed.ipynb")  # the whole notebook, not one cell
        try:
            pm.execute_notebook(
                str(notebook_path(job.notebook)), str(partial / "executed.ipynb"),
                parameters=params, kernel_name=job.kernel, km=km,
                progress_bar=progress, execution_timeout=job.timeout_s, log_output=False,
                start_timeout=KERNEL_READY_S,
                report_mode=False,
            )
        finally:
            watchdog.cancel()
        if watchdog.fired.is_set():
            raise JobTimeLimit(watchdog.message())
        if INTERRUPTED.is_set():  # a Ctrl-C that a library swallowed while the job ran
            raise KeyboardInterrupt
        if not (partial / "metrics.json").exists():
            raise RuntimeError("the notebook finished without recording metrics.json "
                               "(end it with job.finish(metrics, headline))")
        (partial / FINGERPRINT).write_text(json.dumps(fp, indent=1, default=str), encoding="utf-8")
        # where the job's seconds went (benchmarks/job_start.py reads it; not part of the metrics)
        (partial / TIMING).write_text(json.dumps({
            "preflight_s": round(t_kernel - t0, 3), "kernel_start_s": round(t_nb - t_kernel, 3),
            "notebook_s": round(time.perf_counter() - t_nb, 3), "warm": bool((env or {}).get(SOCKET_ENV)),
            "device": device, "threads": (env or {}).get("OMP_NUM_THREADS"),
            # the plan's cost fit (runner/estimate.py) prefers CPU seconds to wall seconds on a shared machine;
            # a cold kernel is the provisioner's process (a warm one is the zygote's child: not known here)
            "kernel_cpu_s": None if (env or {}).get(SOCKET_ENV) else _cpu_seconds(getattr(km.provisioner, "pid", None)),
            "peak_rss_kb": getattr(peak, "kb", None), "load_1m": round(os.getloadavg()[0], 2)}, indent=1),
            encoding="utf-8")
        _repoint_injected(partial / "executed.ipynb", partial, final)
    except BaseException as exc:  # noqa: BLE001 - one failing job never takes the batch down
        if isinstance(exc, KeyboardInterrupt) or INTERRUPTED.is_set():
            _stop(km)
            remove_entry(partial, ignore_errors=True)
            if threading.current_thread() is threading.main_thread():
                raise KeyboardInterrupt from None
            raise JobInterrupted(job.label) from None
        try:  # a root deleted or replaced meanwhile: the scheduler stops the run, nothing is written into it
            check_root(out_root)
        except RootVanished:
            remove_entry(partial, ignore_errors=True)
            raise
        if watchdog is not None and watchdog.fired.is_set():  # the kernel was stopped at the job's time limit
            msg = watchdog.message()
        else:
            msg = _one_line_error(exc)
            death = _kernel_died(exc, km, partial / "kernel.log", oom_before, peak)
            if death:
                msg = f"{msg}: {death}"
        if _is_disk_full(exc):
            msg = f"{DISK_FULL}: {msg}"
        return _fail(job, partial, failed, msg, traceback.format_exc(), t0, device)
    finally:
        JOB_LOGS.files.pop(threading.get_ident(), None)
        if peak is not None:
            peak.stop()
        _stop(km)
    try:
        publish(partial, final, out_root)
    except RootVanished:  # the scheduler stops the run; nothing goes into a recreated root
        remove_entry(partial, ignore_errors=True)
        raise
    except (OSError, UnsafePathError) as exc:
        msg = (DISK_FULL + ": " if _is_disk_full(exc) else "") + f"could not move the result into place: {exc}"
        return _fail(job, partial, failed, msg, traceback.format_exc(), t0, device)
    return JobResult(job, True, final, time.perf_counter() - t0, device=device)


class JobTimeLimit(RuntimeError):
    """A job stopped at its time limit (its message is the one line the console and error.txt show)."""


class _JobLimit:
    """The job's time limit (``Job.timeout_s``: the whole notebook, from the job's start): a timer that
    stops the kernel when it runs out. papermill's ``execution_timeout`` is a per-cell limit, which a
    user does not mean by "timeout" (01 on Gemma failed at 975 s 'after 600 seconds')."""

    def __init__(self, limit: Optional[int], started: float, km, executed: Optional[Path] = None):
        self.limit, self.fired, self.km, self.executed, self.where = limit, threading.Event(), km, executed, None
        self.started, self.ran = started, None
        self.timer = None
        #: the limit ran out before the kernel had started (a slow preflight or kernel start): stopped at once
        self.late = bool(limit) and time.perf_counter() - started >= limit
        if limit:
            self.timer = threading.Timer(max(0.0, limit - (time.perf_counter() - started)), self._stop)
            self.timer.daemon = True
            self.timer.start()

    def _stop(self) -> None:
        self.ran = time.perf_counter() - self.started  # from the job's start to the stop (a late start: past the limit)
        self.where = None
        if self.executed is not None:  # the cell it is in, read before the stop (papermill then marks every cell)
            self.where = cell_progress(self.executed)
        self.fired.set()
        try:
            if self.km.has_kernel:
                _jupyter.run_sync(self.km.shutdown_kernel)(now=True)
        except Exception:  # noqa: BLE001 - a kernel already gone; papermill then ends the job
            pass

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def message(self) -> str:
        where = self.where
        at = f" in cell {where[0] + 1} of {where[1]}" if where and where[0] < where[1] else ""
        ran = self.limit if self.ran is None else round(self.ran)  # the real time, not the limit
        if ran > self.limit:
            at += f", past its limit of {self.limit} s" + (", which ran out before its kernel had started" if
                                                          self.late else "")
        return (f"time limit reached: the job ran {ran} s{at} (timeout_s: of the profile or the model's "
                "params file; run_all.py --timeout SECONDS raises it for a run); or plan it first with --plan: "
                "a smaller sample or a GPU")


#: the most of a partial executed notebook the progress reader opens (a notebook with big outputs is skipped)
CELL_PROGRESS_MAX_BYTES = 64 << 20


def cell_progress(executed: Path) -> Optional[tuple[int, int]]:
    """(code cells finished, code cells in all) of a notebook papermill is writing (it saves after each
    cell, with ``metadata.papermill.status``), or None when it cannot be read now (not written yet, a link,
    too big, half-written)."""
    try:
        fd = os.open(executed, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            if os.fstat(fh.fileno()).st_size > CELL_PROGRESS_MAX_BYTES:
                return None
            nb = json.loads(fh.read(CELL_PROGRESS_MAX_BYTES + 1))
        cells = [c for c in nb.get("cells", []) if isinstance(c, dict) and c.get("cell_type") == "code"]
        done = sum(1 for c in cells if ((c.get("metadata") or {}).get("papermill") or {}).get("status") == "completed")
        return done, len(cells)
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def job_paths(job: Job, out_root: Path) -> tuple[Path, Path, Path]:
    """``(final, partial, failed)`` directories of a job, each checked to lie inside ``out_root``
    without passing through a symbolic link (:func:`.lock.inside_root`: one-line UnsafePathError)."""
    for what, name in (("notebook", job.notebook), ("job id", job.job_id)):
        if name in ("", ".", "..") or "/" in name or os.sep in name or "\0" in name:
            where = Path(out_root) / job.notebook if what == "job id" else Path(out_root)
            raise UnsafePathError(f"{job.label}: {what} {name!r} is not a single folder name inside {where}; "
                                  "nothing is written for it")
    final = inside_root(out_root, job_dir(job, out_root))
    partial = inside_root(out_root, final.parent / f".{final.name}.partial")
    failed = inside_root(out_root, final.parent / f"{final.name}.failed")
    return final, partial, failed


def _open_log(path: Path):
    """The job's ``kernel.log`` for appending, never through a symbolic link (O_NOFOLLOW)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644), "ab")


def _cpu_seconds(pid: Optional[int]) -> Optional[float]:
    """User + system CPU seconds of a live process and its reaped children (``/proc/<pid>/stat``), or None."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return round(sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError, TypeError):
        return None


def _kernel_died(exc: BaseException, km, log: Path, oom_before, peak=None) -> str:
    """For a kernel that died under the notebook (nbclient's ``DeadKernelError``, or any error
    with the kernel process gone): how it most likely died (:func:`.resources.kernel_death`)."""
    proc = getattr(getattr(km, "provisioner", None), "process", None)
    code = proc.poll() if proc is not None else None
    if type(exc).__name__ != "DeadKernelError" and code is None:
        return ""
    return kernel_death(code, log, oom_before, getattr(peak, "kb", None))


def _stop(km) -> None:
    if km is None:
        return
    with _KERNELS_LOCK:
        _KERNELS.pop(id(km), None)
    try:
        if km.has_kernel:
            _jupyter.run_sync(km.shutdown_kernel)(now=True)
    except Exception:  # noqa: BLE001 - a kernel that is already gone
        pass


DISK_FULL = "disk full"


def _is_disk_full(exc: BaseException) -> bool:
    """ENOSPC / EDQUOT anywhere in the exception or its text (a kernel's OSError arrives as text)."""
    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        seen = seen.__cause__ or seen.__context__
    # a kernel's error (nbclient's CellExecutionError) carries its type and message apart from the
    # traceback, whose quoted source lines may mention the words without the error being one
    text = str(getattr(exc, "evalue", None) or exc)
    return "No space left on device" in text or "Disk quota exceeded" in text


def _fail(job: Job, partial: Path, failed: Path, msg: str, tb: str, t0: float, device: str = "") -> JobResult:
    """Keep a failed job as ``<job>.failed/`` with ``error.txt``. When even that cannot be
    written (a full disk), the partial directory is removed and the reason is still returned."""
    try:
        (partial / "error.txt").write_text(msg + "\n\n" + tb, encoding="utf-8")
        remove_entry(failed)
        os.replace(partial, failed)
        where = failed
    except OSError:
        remove_entry(partial, ignore_errors=True)
        remove_entry(failed, ignore_errors=True)
        where = partial
    return JobResult(job, False, where, time.perf_counter() - t0, error=msg, device=device)


def _one_line_error(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    line = next((ln for ln in str(value).splitlines() if ln.strip()), "")
    return f"{name}: {line}"[:500]

