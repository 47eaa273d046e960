#!/usr/bin/env python
"""Batch executor: profile -> (notebook x model) jobs -> reports/<profile>/.

    python run_all.py --profile demo                      # every job of the profile, then the report
    python run_all.py --profile demo --models tiny-bert   # a subset of models
    python run_all.py --profile demo --notebooks 01_embedding_terrain
    python run_all.py --profile demo --resume             # skip finished jobs that are still current
    python run_all.py --profile demo --report-only        # rebuild the HTML/PDF report only

Each job runs its notebook with papermill into a temporary directory
``reports/<profile>/<notebook>/.<job>.partial`` and is renamed to
``reports/<profile>/<notebook>/<job>/`` only once it succeeded, so a killed run never
leaves a half-written result that counts as done. A failing job is kept as
``<job>.failed/`` (executed notebook up to the error, plus ``error.txt``), the batch goes
on, and the failures are listed at the end (exit code 1).

Fresh results: each finished job keeps ``fingerprint.json`` — digests of the notebook's
cells, the job's parameters, the params file of every model it names and the library's
code. ``--resume`` skips a job only when all four are unchanged, and prints why it re-ran
one otherwise. The console shows one line per job; what the kernel and papermill print
(kernel start-up warnings, papermill's logging) goes to the job's ``kernel.log``.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from geolip_lib.params import ParamsError, load_profile, model_names  # noqa: E402

NOTEBOOKS = Path(os.environ.get("GEOLIP_NOTEBOOKS", ROOT / "notebooks"))
REPORTS = ROOT / "reports"


@dataclass
class Job:
    """One (notebook x model) execution."""

    profile: str
    notebook: str
    job_id: str
    model: str | None
    parameters: dict = field(default_factory=dict)
    timeout_s: int | None = None
    kernel: str = "python3"

    @property
    def label(self) -> str:
        return f"{self.notebook} / {self.job_id}"


@dataclass
class JobResult:
    job: Job
    ok: bool
    job_dir: Path
    seconds: float
    error: str | None = None
    skipped: bool = False


def jobs_for_profile(profile: str, models: list[str] | None = None,
                     notebooks: list[str] | None = None) -> list[Job]:
    """Expand a profile into jobs (validated params; unknown names are one-line errors)."""
    prof = load_profile(profile, notebooks_dir=NOTEBOOKS)
    known = set(model_names())
    in_profile = {m for e in prof.notebooks.values() for m in list(e.models) + [j.model for j in e.jobs if j.model]}
    for m in models or []:
        if m not in known:
            raise ParamsError(f"--models: unknown model '{m}' (known: {', '.join(sorted(known))}; "
                              f"add params/models/{m}.yaml to define it)")
        if m not in in_profile:
            raise ParamsError(f"--models: model '{m}' is in no notebook of profile '{prof.name}' "
                              f"(its models: {', '.join(sorted(in_profile))}); add it to the profile first")
    for nb in notebooks or []:
        if nb not in prof.notebooks:
            raise ParamsError(f"--notebooks: profile '{prof.name}' has no notebook '{nb}' "
                              f"(it has: {', '.join(prof.notebooks)})")
    jobs: list[Job] = []
    for nb, entry in prof.notebooks.items():
        if notebooks and nb not in notebooks:
            continue
        base = {**prof.defaults, **entry.parameters}
        specs = [(m, m, {}) for m in entry.models] if entry.per_model else []
        specs += [(j.id or j.model or "all", j.model, j.parameters) for j in entry.jobs]
        if not entry.per_model and not entry.jobs:
            specs = [("all", None, {})]
        for job_id, model, extra in specs:
            if models and model not in models:
                continue  # --models selects model jobs only (jobs without a model are not "these models")
            jobs.append(Job(profile=prof.name, notebook=nb, job_id=job_id, model=model,
                            parameters={**base, **extra}, timeout_s=entry.timeout_s or prof.timeout_s,
                            kernel=prof.kernel))
    check_parameters(jobs, prof.name)
    return jobs


def notebook_parameters(notebook: str) -> set[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (parsed with ast)."""
    import ast

    import nbformat

    path = NOTEBOOKS / f"{notebook}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ParamsError(f"{path}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    names: set[str] = set()
    for node in ast.parse(cells[0].source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


@functools.lru_cache(maxsize=None)
def notebook_defaults(notebook: str) -> dict:
    """The declared default of each parameter whose default is a Python literal."""
    import ast

    import nbformat

    nb = nbformat.read(str(NOTEBOOKS / f"{notebook}.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # an expression: not type-checked
    return out


_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}


def coerce_parameter(name: str, value, default):
    """``value`` checked against the type of the notebook's declared ``default``.

    Returns the value to inject (YAML reads ``1e3`` as a string: a numeric string is
    accepted where an int or float is declared); raises ValueError naming the expected
    type. A declared ``None`` accepts anything; ``None`` is accepted for any declared type
    except bool (notebooks treat it as "not set").
    """
    if default is None or (value is None and not isinstance(default, bool)):
        return value
    want = type(default)
    if want is bool:
        if isinstance(value, bool):
            return value
    elif want in (int, float):
        if isinstance(value, str):
            try:
                num = float(value)
            except ValueError:
                num = None
            if num is not None and (want is float or num.is_integer()):
                return int(num) if want is int else num
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if want is float:
                return float(value) if isinstance(value, int) else value
            if isinstance(value, int) or float(value).is_integer():
                return int(value)
    elif want in (list, tuple):
        if isinstance(value, (list, tuple)):
            return list(value)
    elif isinstance(value, want):
        return value
    raise ValueError(f"expected {_TYPE_NAMES.get(want, want.__name__)} like its default {default!r}, "
                     f"got {type(value).__name__} {value!r}")


def check_parameters(jobs: list[Job], profile: str) -> None:
    """Before any kernel starts: a profile parameter the notebook does not declare is a typo,
    and a value whose type differs from the declared default's is an error (one line each)."""
    declared: dict[str, set[str]] = {}
    checked: set[str] = set()
    for job in jobs:
        names = declared.setdefault(job.notebook, notebook_parameters(job.notebook))
        unknown = sorted(set(job.parameters) - names)
        if unknown:
            raise ParamsError(f"profile '{profile}': notebook {job.notebook} (job {job.job_id}) has no parameter "
                              f"{', '.join(unknown)} (declared: {', '.join(sorted(names))})")
        if "OUT_DIR" not in names:
            raise ParamsError(f"notebooks/{job.notebook}.ipynb: its parameters cell must declare OUT_DIR")
        if job.model and job.model not in checked:
            from geolip_lib.models.preflight import check_config
            from geolip_lib.params import load_model_params

            mp = load_model_params(job.model)
            check_config(mp.family, mp.config, f"params/models/{mp.name}.yaml")
            checked.add(job.model)
        defaults = notebook_defaults(job.notebook)
        for k, v in list(job.parameters.items()):
            if k not in defaults:
                continue
            try:
                job.parameters[k] = coerce_parameter(k, v, defaults[k])
            except ValueError as exc:
                raise ParamsError(f"profile '{profile}': notebook {job.notebook} (job {job.job_id}): parameter "
                                  f"{k}: {exc}") from None


def job_dir(job: Job, out_root: Path) -> Path:
    return out_root / job.notebook / job.job_id


FINGERPRINT = "fingerprint.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def notebook_digest(notebook: str) -> str:
    """sha256 of the notebook's cells (type + source): saving it in JupyterLab without an
    edit (new metadata, outputs) does not make results stale."""
    import nbformat

    nb = nbformat.read(str(NOTEBOOKS / f"{notebook}.ipynb"), as_version=4)
    return _sha(json.dumps([[c.cell_type, c.source] for c in nb.cells]).encode())


def job_models(job: Job) -> list[str]:
    """Models a job depends on: its own and any parameter value naming a params file."""
    known = set(model_names())
    names = [job.model] if job.model else []
    for v in job.parameters.values():
        for item in (v if isinstance(v, list) else [v]):
            if isinstance(item, str) and item in known and item not in names:
                names.append(item)
    return names


def fingerprint(job: Job) -> dict:
    """What a finished job's result depends on (compared by ``--resume``)."""
    from geolip_lib.params import PARAMS
    from geolip_lib.provenance import library_hash

    models = {}
    for m in job_models(job):
        f = PARAMS / "models" / f"{m}.yaml"
        models[m] = _sha(f.read_bytes()) if f.exists() else None
    return {"notebook": notebook_digest(job.notebook), "parameters": job.parameters, "model": job.model,
            "model_params": models, "library": library_hash()}


def stale_reasons(job: Job, out_root: Path) -> list[str]:
    """Why a finished job must run again (empty: it is done and current)."""
    d = job_dir(job, out_root)
    if not ((d / "metrics.json").exists() and (d / "executed.ipynb").exists()):
        return ["not run yet"]
    try:
        json.loads((d / "metrics.json").read_text(encoding="utf-8"))
        old = json.loads((d / FINGERPRINT).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ["no fingerprint.json (made before fingerprints)"]
    except ValueError:
        return ["metrics.json or fingerprint.json is unreadable"]
    new = fingerprint(job)
    why = []
    if old.get("notebook") != new["notebook"]:
        why.append(f"notebook {job.notebook} changed")
    op, np_ = old.get("parameters") or {}, new["parameters"]
    changed = sorted(k for k in set(op) | set(np_) if op.get(k) != np_.get(k))
    if changed:
        why.append("parameters changed: " + ", ".join(f"{k} {op.get(k)!r} -> {np_.get(k)!r}" for k in changed))
    om = old.get("model_params") or {}
    for m, h in new["model_params"].items():
        if om.get(m) != h:
            why.append(f"params/models/{m}.yaml changed")
    if old.get("library") != new["library"]:
        why.append("geolip_lib code changed")
    if reads_other_jobs(job.notebook):
        mine = (d / "metrics.json").stat().st_mtime
        newer = sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in out_root.glob("*/*/metrics.json")
                       if p.parent != d and not p.parent.name.startswith(".") and p.stat().st_mtime > mine)
        if newer:
            why.append(f"it reads other jobs' results, and {len(newer)} are newer: {', '.join(newer[:3])}"
                       + (" ..." if len(newer) > 3 else ""))
    return why


@functools.lru_cache(maxsize=None)
def reads_other_jobs(notebook: str) -> bool:
    """Whether the notebook reads other jobs' results (uses ``REPORT_ROOT`` outside its
    parameters cell: 03_cross_model, 15_seed_claims), so a newer result makes it stale."""
    import nbformat

    nb = nbformat.read(str(NOTEBOOKS / f"{notebook}.ipynb"), as_version=4)
    return any("REPORT_ROOT" in c.source for c in nb.cells
               if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))


def is_done(job: Job, out_root: Path) -> bool:
    """Finished and current (see :func:`stale_reasons`)."""
    return not stale_reasons(job, out_root)


@contextlib.contextmanager
def kernel_output_to(log: Path):
    """Send file descriptors 1 and 2 (kernel start-up noise, papermill's logging) to ``log``.

    The kernel is a child process: it inherits the descriptors at start, so this is the one
    place its stderr can be caught. The runner's own lines go to :data:`CONSOLE`.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log, "ab") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def execute_job(job: Job, out_root: Path | None = None, progress: bool = False) -> JobResult:
    """Run one job with papermill; atomic: the final directory appears only on success."""
    import papermill as pm

    out_root = Path(out_root) if out_root else REPORTS / job.profile
    final = job_dir(job, out_root)
    partial = final.parent / f".{job.job_id}.partial"
    failed = final.parent / f"{job.job_id}.failed"
    for d in (partial, failed):
        if d.exists():
            shutil.rmtree(d)
    partial.mkdir(parents=True)
    _checkout_first_on_path()
    params = dict(job.parameters)
    declared = notebook_parameters(job.notebook)
    injected = {"OUT_DIR": str(partial), "REPORT_ROOT": str(out_root), "MODEL": job.model}
    params.update({k: v for k, v in injected.items() if k in declared and (k != "MODEL" or v is not None)})
    t0 = time.perf_counter()
    try:
        if job.model is not None:
            from geolip_lib.models import check

            check(job.model)  # fail fast (bad params, hub model offline) with one line, not a kernel traceback
        fp = fingerprint(job)
        with kernel_output_to(partial / "kernel.log"):
            pm.execute_notebook(
                str(NOTEBOOKS / f"{job.notebook}.ipynb"), str(partial / "executed.ipynb"),
                parameters=params, kernel_name=job.kernel, cwd=str(NOTEBOOKS),
                progress_bar=progress, execution_timeout=job.timeout_s, log_output=False,
                report_mode=False,
            )
        if INTERRUPTED.is_set():  # a Ctrl-C that a library swallowed while the job ran
            raise KeyboardInterrupt
        if not (partial / "metrics.json").exists():
            raise RuntimeError("the notebook finished without recording metrics.json "
                               "(end it with job.finish(metrics, headline))")
        (partial / FINGERPRINT).write_text(json.dumps(fp, indent=1, default=str), encoding="utf-8")
        _repoint_injected(partial / "executed.ipynb", partial, final)
    except BaseException as exc:  # noqa: BLE001 - one failing job never takes the batch down
        if isinstance(exc, KeyboardInterrupt):
            shutil.rmtree(partial, ignore_errors=True)
            raise
        msg = _one_line_error(exc)
        if _is_disk_full(exc):
            msg = f"{DISK_FULL}: {msg}"
        return _fail(job, partial, failed, msg, traceback.format_exc(), t0)
    try:
        publish(partial, final)
    except OSError as exc:
        msg = (DISK_FULL + ": " if _is_disk_full(exc) else "") + f"could not move the result into place: {exc}"
        return _fail(job, partial, failed, msg, traceback.format_exc(), t0)
    return JobResult(job, True, final, time.perf_counter() - t0)


DISK_FULL = "disk full"


def _is_disk_full(exc: BaseException) -> bool:
    """ENOSPC / EDQUOT anywhere in the exception or its text (a kernel's OSError arrives as text)."""
    import errno

    seen = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        seen = seen.__cause__ or seen.__context__
    return "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc)


def _fail(job: Job, partial: Path, failed: Path, msg: str, tb: str, t0: float) -> "JobResult":
    """Keep a failed job as ``<job>.failed/`` with ``error.txt``. When even that cannot be
    written (a full disk), the partial directory is removed and the reason is still returned."""
    try:
        (partial / "error.txt").write_text(msg + "\n\n" + tb, encoding="utf-8")
        os.replace(partial, failed)
        where = failed
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(failed, ignore_errors=True)
        where = partial
    return JobResult(job, False, where, time.perf_counter() - t0, error=msg)


def publish(partial: Path, final: Path) -> None:
    """Move a finished job into place, replacing an older result.

    The old result is renamed to ``.<job>.old`` first and deleted only after the new one is
    in place; a run killed between the two renames leaves the old one there, and
    :func:`recover` (called by every run) puts it back. Old and new are never both lost.
    """
    old = final.parent / f".{final.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(partial, final)
    shutil.rmtree(old, ignore_errors=True)


def recover(out_root: Path, console=None) -> list[str]:
    """Put back results a killed run had moved aside (``.<job>.old`` without ``<job>``)."""
    restored = []
    for old in sorted(Path(out_root).glob("*/.*.old")):
        final = old.parent / old.name[1:-4]
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(old, final)
            restored.append(f"{old.parent.name}/{final.name}")
            print(f"restored the previous result of {old.parent.name}/{final.name} "
                  "(a run was stopped while replacing it)", file=console or sys.stderr, flush=True)
    return restored


def _checkout_first_on_path() -> None:
    """Kernels import this checkout's ``geolip_lib`` (and so its params), whatever an editable
    install in a shared venv points at: PYTHONPATH comes before site-packages' .pth entries."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not parts or parts[0] != str(ROOT):
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in parts if p != str(ROOT)])


def _repoint_injected(executed: Path, partial: Path, final: Path) -> None:
    """The injected parameters cell and papermill's metadata name the temporary directory;
    point them at the final one (the executed notebook is shown as HTML, and a stale
    ``.partial`` path misleads)."""
    import nbformat

    nb = nbformat.reads(executed.read_text(encoding="utf-8").replace(json.dumps(str(partial))[1:-1],
                                                                   json.dumps(str(final))[1:-1]), as_version=4)
    nbformat.write(nb, str(executed))  # the injected cell and papermill's metadata (parameters, output_path)


def _one_line_error(exc: BaseException) -> str:
    name = getattr(exc, "ename", None) or type(exc).__name__
    value = getattr(exc, "evalue", None) or str(exc)
    line = next((ln for ln in str(value).splitlines() if ln.strip()), "")
    return f"{name}: {line}"[:500]


INTERRUPTED = threading.Event()


def _on_sigint(signum, frame):
    """Ctrl-C: remember it (some library may swallow the KeyboardInterrupt while a kernel
    starts) and raise it as usual."""
    INTERRUPTED.set()
    raise KeyboardInterrupt


class RunError(Exception):
    """A run that cannot start or go on (output root, lock): one line, exit code 2."""


class Interrupted(Exception):
    """Ctrl-C during a run: the results so far and the job that was stopped."""

    def __init__(self, results: list, job: Job | None):
        super().__init__("interrupted")
        self.results, self.job = results, job


def prepare_root(out_root: Path) -> Path:
    """Create the output root and prove it is writable, before any job (one-line RunError)."""
    out_root = Path(out_root)
    try:
        if out_root.exists() and not out_root.is_dir():
            raise RunError(f"output root {out_root} is a file, not a directory; pass --out <directory>")
        out_root.mkdir(parents=True, exist_ok=True)
        probe = out_root / f".write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        raise RunError(f"output root {out_root} cannot be created or written ({exc.strerror or exc}); "
                       "pass --out <a writable directory>") from None
    return out_root


LOCK = ".run.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def run_lock(out_root: Path, console=None):
    """One run per output root: ``<root>/.run.lock`` holds the pid and host of the run.

    A second run exits at once naming the running pid; a lock whose process is gone (same
    host) is taken over with a line saying so.
    """
    import socket

    path = Path(out_root) / LOCK
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                other = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                other = {}
            pid, host = other.get("pid"), other.get("host")
            if isinstance(pid, int) and host == me["host"] and _alive(pid):
                raise RunError(f"another run_all (pid {pid}, started {other.get('started')}) is writing to "
                               f"{out_root}; wait for it to finish or pass another --out") from None
            if isinstance(pid, int) and host and host != me["host"]:
                raise RunError(f"{path}: run_all pid {pid} on host {host} (started {other.get('started')}) holds "
                               f"this output root; wait for it, pass another --out, or delete {path} if that run "
                               "is gone") from None
            print(f"taking over a stale lock in {out_root} "
                  + (f"(pid {pid} is no longer running)" if pid else "(unreadable lock file)"),
                  file=console or sys.stderr, flush=True)
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(me, fh)
        break
    else:
        raise RunError(f"{path}: could not take the lock; delete it if no run_all is using {out_root}")
    try:
        yield
    finally:
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == me["pid"]:
                path.unlink()
        except (OSError, ValueError):
            pass


def run(profile: str, models=None, notebooks=None, resume=False, out_root: Path | None = None,
        console=None) -> list[JobResult]:
    """Run a profile's jobs one after another; one line per job on ``console`` (stderr).

    Takes the output root's lock for the whole run; stops the batch when the disk is full
    (the remaining jobs could not write either); Ctrl-C raises :class:`Interrupted`.
    """
    console = console or sys.stderr
    jobs = jobs_for_profile(profile, models, notebooks)
    out_root = prepare_root(Path(out_root) if out_root else REPORTS / Path(profile).stem)
    results: list[JobResult] = []
    width = len(str(len(jobs)))
    with run_lock(out_root, console):
        recover(out_root, console)
        job = None
        try:
            for i, job in enumerate(jobs, 1):
                tag = f"[{i:>{width}}/{len(jobs)}]"
                if resume:
                    why = stale_reasons(job, out_root)
                    if not why:
                        results.append(JobResult(job, True, job_dir(job, out_root), 0.0, skipped=True))
                        print(f"{tag} skip  {job.label} (done, unchanged)", file=console, flush=True)
                        continue
                    if why != ["not run yet"]:
                        print(f"{tag} rerun {job.label}: {'; '.join(why)}", file=console, flush=True)
                res = execute_job(job, out_root)
                results.append(res)
                if INTERRUPTED.is_set():
                    raise KeyboardInterrupt
                status = "ok   " if res.ok else "FAIL "
                print(f"{tag} {status} {job.label}  {res.seconds:6.1f}s" + ("" if res.ok else f"  {res.error}"),
                      file=console, flush=True)
                if not res.ok and (res.error or "").startswith(DISK_FULL):
                    left = len(jobs) - i
                    print(f"stopping: the disk holding {out_root} is full; {left} job(s) not started. Free space, "
                          "then rerun with --resume.", file=console, flush=True)
                    break
        except KeyboardInterrupt:
            raise Interrupted(results, job) from None
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="demo", help="params/profiles/<name>.yaml (default: demo)")
    ap.add_argument("--models", nargs="+", help="only these models")
    ap.add_argument("--notebooks", nargs="+", help="only these notebooks")
    ap.add_argument("--resume", action="store_true",
                    help="skip finished jobs whose notebook, parameters, model params and library code are unchanged")
    ap.add_argument("--report-only", action="store_true", help="only rebuild the report")
    ap.add_argument("--no-pdf", action="store_true", help="skip report.pdf")
    ap.add_argument("--out", type=Path, help="output root (default: reports/<profile>)")
    args = ap.parse_args(argv)
    INTERRUPTED.clear()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # kernels inherit this environment:
    os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars inside executed notebooks (run_all shows progress)
    out_root = args.out or REPORTS / Path(args.profile).stem
    failures: list[JobResult] = []
    try:
        if args.report_only:
            prepare_root(out_root)
        if not args.report_only:
            t0 = time.perf_counter()
            results = run(args.profile, args.models, args.notebooks, args.resume, out_root)
            failures = [r for r in results if not r.ok]
            done = sum(r.ok and not r.skipped for r in results)
            skipped = sum(r.skipped for r in results)
            print(f"{done} job(s) ran, {skipped} skipped (done), {len(failures)} failed "
                  f"in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        else:
            load_profile(args.profile, notebooks_dir=NOTEBOOKS)
        from geolip_lib import report

        paths = report.build(args.profile, out_root=out_root, pdf=not args.no_pdf)
    except (ParamsError, RunError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        done = sum(r.ok and not r.skipped for r in exc.results)
        where = f" during {exc.job.label} (its partial result was removed)" if exc.job else ""
        print(f"interrupted{where}: {done} job(s) finished and kept; rerun with --resume to go on", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("interrupted while building the report; rerun with --report-only", file=sys.stderr)
        return 130
    for p in paths:
        print(p)
    if failures:
        print(f"\n{len(failures)} job(s) failed:", file=sys.stderr)
        for r in failures:
            print(f"  {r.job.label}: {r.error}\n    log: {r.job_dir / 'error.txt'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
