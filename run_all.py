#!/usr/bin/env python
"""Batch executor: profile -> (notebook x model) jobs -> reports/<profile>/.

    python run_all.py --profile demo                      # every job of the profile, then the report
    python run_all.py --profile demo --models tiny-bert   # a subset of models
    python run_all.py --profile demo --notebooks 01_embedding_terrain
    python run_all.py --profile demo --resume             # skip finished jobs that are still current
    python run_all.py --profile demo --report-only        # rebuild the HTML/PDF report only
    python run_all.py --claims gao-2019 --out reports/demo  # a claims file's verdict matrix added to a root
    python run_all.py --profile paper --plan              # what each job needs, against what is free
    python run_all.py --profile demo --jobs 2             # two jobs at once (default: every GPU; 2 on a CPU)
    python run_all.py --profile paper --executor ray      # as Ray tasks on a running cluster (or a local Ray)

Each job runs its notebook with papermill into a temporary directory
``reports/<profile>/<notebook>/.<job>.partial`` and is renamed to
``reports/<profile>/<notebook>/<job>/`` only once it succeeded, so a killed run never
leaves a half-written result that counts as done. A failing job is kept as
``<job>.failed/`` (executed notebook up to the error, plus ``error.txt``), the batch goes
on, and the failures are listed at the end (exit code 1).

Fresh results: each finished job keeps ``fingerprint.json`` — digests of the notebook's
cells, the job's parameters, the params file of every model it names and the library's
code. ``--resume`` skips a job only when all four are unchanged, and prints why it re-ran
one otherwise. The console shows one line per job (and, running several at once, which
are running); what the kernel and papermill print (kernel start-up warnings, papermill's
logging) goes to the job's ``kernel.log``.

The logic lives in ``geolip_lib.runner`` (jobs, execute, local and Ray executors, plan);
this file is its command line and re-exports the names scripts and tests use.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

#: what this file re-exports for scripts and tests (``run_all.execute_job``, ``from run_all import main``), by the
#: module that defines it: imported on first use (PEP 562), so that ``--help`` and a refused flag import nothing of
#: the runner, and a refused profile or parameter nothing of torch, transformers or papermill
_EXPORTS = {
    "geolip_lib.runner.execute": ("DISK_FULL", "INTERRUPTED", "REPORTS", "STOP", "STOP_SIGNALS", "_fail",
                                  "_is_disk_full", "_one_line_error", "execute_job", "kernel_env", "on_stop_signal",
                                  "publish", "recover"),
    "geolip_lib.runner.jobs": ("FINGERPRINT", "Job", "JobResult", "check_parameters", "check_report_root",
                               "claim_root", "coerce_parameter", "fingerprint", "is_done", "job_dir", "job_models",
                               "jobs_for_profile", "notebook_defaults", "notebook_digest", "notebook_parameters",
                               "notebooks_dir", "reads_other_jobs", "stale_reasons", "with_timeout"),
    "geolip_lib.runner.local": ("Interrupted", "run", "run_jobs"),
    "geolip_lib.runner.lock": ("LOCK", "RunError", "prepare_root", "run_lock"),
    "geolip_lib.runner.plan": ("PlanError",),
    "geolip_lib.params": ("ParamsError", "load_profile"),
}
_HOME = {name: mod for mod, names in _EXPORTS.items() for name in names}


def __getattr__(name: str):
    """The re-exported runner names, imported when first read (``NOTEBOOKS``: the notebooks folder)."""
    if name == "NOTEBOOKS":
        value = importlib.import_module("geolip_lib.runner.notebooks").notebooks_dir()
    elif name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # once: a test's monkeypatch.setattr(run_all, "NOTEBOOKS", ...) then replaces it
    return value


#: the most jobs one run may hold at once (a typo such as --jobs 1000000000 is refused, not queued)
MAX_JOBS = 4096


def _flag_problem(args) -> str | None:
    """One line for flags that are out of range or belong to another mode (they would be ignored)."""
    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        return f"--jobs {args.jobs}: give a number of jobs from 1 to {MAX_JOBS}"
    if args.timeout is not None:
        from geolip_lib.params import MAX_TIMEOUT_S

        if not 1 <= args.timeout <= MAX_TIMEOUT_S:
            return f"--timeout {args.timeout}: give seconds from 1 to {MAX_TIMEOUT_S} (30 days)"
    box = [f for f, v in (("--gpus", args.gpus), ("--gpu-memory", args.gpu_memory), ("--host-memory",
                                                                                     args.host_memory),
                          ("--disk", args.disk), ("--gpu-kind", args.gpu_kind)) if v is not None]
    if args.report_only:  # the report is built from the root's results: what would run, and where, has no place
        ran = [f for f, given in (("--resume", args.resume), ("--skip-unfit", args.skip_unfit),
                                  ("--jobs", args.jobs is not None), ("--timeout", args.timeout is not None),
                                  ("--models", args.models), ("--notebooks", args.notebooks),
                                  ("--executor ray", args.executor == "ray"),
                                  ("--warm" if args.warm else "--cold", args.warm is not None)) if given] + box
        if ran:
            return (f"--report-only builds the report from the root's results and runs nothing; {' '.join(ran)} "
                    f"{'has' if len(ran) == 1 else 'have'} no effect with it: drop {'it' if len(ran) == 1 else 'them'}")
    if box and not args.plan:  # a run, --skip-unfit included, judges this machine's own GPUs, memory and disk
        return (f"{' '.join(box)} describe a box for --plan; add --plan (or leave them out to run here: a run"
                f"{', --skip-unfit included,' if args.skip_unfit else ''} judges this machine's own GPUs, memory "
                "and disk)")
    if args.gpu_kind is not None:
        from geolip_lib.runner.gpu_kinds import kind_named, known

        if kind_named(args.gpu_kind) is None:
            return f"--gpu-kind {args.gpu_kind!r}: not a GPU kind the plan knows; known: {known()}"
        if not args.gpus:
            return (f"--gpu-kind {args.gpu_kind} describes the GPUs of a target box: add --gpus N (>= 1) and "
                    "--host-memory GB")
    if args.claims is not None:
        clash = [f for f, v in (("--models", args.models), ("--notebooks", args.notebooks),
                                ("--report-only", args.report_only)) if v]
        if clash:
            return (f"--claims runs the claims notebook on the root's results; {' '.join(clash)} has no place "
                    "with it: drop one")
        if not args.claims:
            return "--claims: give one or more claims files (a name under params/claims/ or a path to a .yaml)"
    if args.plan and (args.resume or args.report_only):
        return f"--plan runs nothing; {'--resume' if args.resume else '--report-only'} has no effect with it: drop one"
    if args.executor != "ray" and (args.ray_address or args.ray_results):
        return "--ray-address / --ray-results are for --executor ray; add --executor ray or drop them"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default=None, help="params/profiles/<name>.yaml (default: demo; with --claims: the "
                                                     "profile the --out root holds)")
    ap.add_argument("--models", nargs="+", help="only these models")
    ap.add_argument("--notebooks", nargs="+", help="only these notebooks")
    ap.add_argument("--resume", action="store_true",
                    help="skip finished jobs whose notebook, parameters, model params and library code are unchanged")
    ap.add_argument("--report-only", action="store_true", help="only rebuild the report")
    ap.add_argument("--claims", nargs="*", metavar="FILE",
                    help="add the verdict matrices of these claims files (names under params/claims/, or paths) to "
                         "the --out root: one claims-notebook job each on the root's results, then the report")
    ap.add_argument("--no-pdf", action="store_true", help="skip report.pdf")
    ap.add_argument("--out", type=Path, help="output root (default: reports/<profile>)")
    ap.add_argument("--jobs", "-j", type=int, metavar="N",
                    help="run up to N jobs at once (default: one per GPU; on a CPU, 2 or the cores if fewer)")
    ap.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="local: threads on this machine; ray: Ray tasks (see --ray-address)")
    ap.add_argument("--ray-address", metavar="ADDR",
                    help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray started for this run)")
    ap.add_argument("--ray-results", choices=("shared", "return"), default=None,
                    help="shared: workers write into --out (shared storage); return: workers send each job "
                         "directory back to the driver (default: shared for a local Ray, return otherwise)")
    start = ap.add_mutually_exclusive_group()
    start.add_argument("--warm", dest="warm", action="store_true", default=None,
                       help="start kernels from a process that imported torch & co. once (the default; "
                            "GEOLIP_WARM=0 turns it off; see geolip_lib/runner/warm.py)")
    start.add_argument("--cold", dest="warm", action="store_false",
                       help="start every kernel as a fresh process (slower start, nothing shared)")
    ap.add_argument("--timeout", type=int, metavar="SECONDS",
                    help="time limit of every job of this run, the whole notebook (replaces timeout_s: of the "
                         "profile and of the models' params files; default: those)")
    ap.add_argument("--skip-unfit", action="store_true",
                    help="run only the jobs that fit this box (or, with --plan, show which would be left out); "
                         "the jobs left out are listed, one line each, before the first job")
    ap.add_argument("--plan", action="store_true",
                    help="print what each job needs (parameters, disk, memory, device, estimated time) and the totals "
                         "against what is free, then exit (2 when something does not fit)")
    box = ap.add_argument_group("--plan for a box that is not this one (sizes in GB, decimal; what is not given is "
                                "this machine's)")
    box.add_argument("--gpus", type=int, metavar="N", help="GPUs of the target box (0: a CPU box)")
    box.add_argument("--gpu-memory", type=float, metavar="GB",
                     help="memory of one of its GPUs (e.g. 80; default with --gpu-kind: that kind's)")
    box.add_argument("--gpu-kind", metavar="KIND",
                     help="its GPUs' kind (H200, H100, A100, L40S, ...: geolip_lib/runner/gpu_kinds.py): the GPU rates "
                          "measured on it, else the H200's scaled by the datasheets; implies --gpu-memory")
    box.add_argument("--host-memory", type=float, metavar="GB", help="its host memory available to the run")
    box.add_argument("--disk", type=float, metavar="GB",
                     help="its free disk for hub files, caches and outputs (not given: not judged for another box)")
    args = ap.parse_args(argv)
    problem = _flag_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # the runner, only now that the flags are known (a job's own imports, torch & co., come later still)
    from geolip_lib.params import ParamsError, load_profile
    from geolip_lib.runner.execute import INTERRUPTED, REPORTS, STOP, STOP_SIGNALS, on_stop_signal
    from geolip_lib.runner.jobs import JobResult, check_report_root, jobs_for_profile, with_timeout
    from geolip_lib.runner.local import Interrupted, run
    from geolip_lib.runner.lock import RunError, prepare_root
    from geolip_lib.runner.plan import PlanError

    notebooks = sys.modules[__name__].NOTEBOOKS  # through __getattr__, or what a test set
    INTERRUPTED.clear()
    STOP.reset()
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:  # Ctrl-C, SIGTERM, SIGHUP: remembered, then KeyboardInterrupt
            signal.signal(signum, on_stop_signal)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # kernels inherit this environment:
    os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars inside executed notebooks (run_all shows progress)
    # absolute once (not resolved: the root itself may be a link): readers take relative paths inside the root
    out_root = Path(os.path.abspath(args.out or REPORTS / Path(args.profile or "demo").stem))
    failures: list[JobResult] = []
    try:
        if args.claims:  # the root's own profile (checked against --profile): the claims read its results
            from geolip_lib.runner.claims_run import claims_profile

            args.profile = claims_profile(out_root, args.profile)
        args.profile = args.profile or "demo"
        if args.plan:
            from geolip_lib.runner.gpu_kinds import kind_named
            from geolip_lib.runner.local import plan_for
            from geolip_lib.runner.plan import load_rates, target_box
            from geolip_lib.runner.speed import apply_speed

            kind = kind_named(args.gpu_kind) if args.gpu_kind else None
            memory = args.gpu_memory if args.gpu_memory is not None or kind is None else kind.memory_gb
            box = target_box(args.gpus, memory, args.host_memory, args.disk)
            if kind is not None:
                box["rates"] = load_rates().for_kind(kind)
                if args.gpu_memory is None:
                    box["target"]["gpu_kind"] = kind.name
            if args.claims:
                from geolip_lib.runner.claims_run import claims_jobs

                jobs = with_timeout(claims_jobs(args.profile, args.claims), args.timeout)
            else:
                jobs = with_timeout(jobs_for_profile(args.profile, args.models, args.notebooks), args.timeout)
            plan = plan_for(jobs, out_root.resolve(), args.jobs, box)
            apply_speed(plan, pdf=not args.no_pdf)
            print(plan.render())
            from geolip_lib.devices import cuda_problem

            if problem := cuda_problem():  # a GPU torch cannot use: the plan above is a CPU plan
                print(f"warning: {problem}")
            if args.skip_unfit:  # what a run with --skip-unfit would do: exit 0 unless what remains does not fit
                unfit = plan.unfit()
                rest = [line for line in plan.shortfalls() if line.split(": ", 1)[0] not in unfit]
                return 2 if rest else 0
            return 2 if plan.shortfalls() else 0
        if not args.report_only:
            from geolip_lib.devices import cuda_problem

            if problem := cuda_problem():  # a GPU box whose driver torch cannot use: say so before any job
                print(f"warning: {problem}", file=sys.stderr)
        if args.report_only:  # a root with results of this profile, never created here (exit 2 otherwise)
            prepare_root(check_report_root(out_root, load_profile(args.profile, notebooks_dir=notebooks).name))
        if not args.report_only:
            t0 = time.perf_counter()
            opts = {}
            if args.executor == "ray":
                opts = {"address": args.ray_address, "results": args.ray_results}
            results = run(args.profile, args.models, args.notebooks, args.resume, out_root,
                          jobs_at_once=args.jobs, executor=args.executor, warm=args.warm,
                          skip_unfit=args.skip_unfit, timeout=args.timeout, claims=args.claims, **opts)
            failures = [r for r in results if not r.ok]
            done = sum(r.ok and not r.skipped for r in results)
            skipped = sum(r.skipped for r in results)
            print(f"{done} job(s) ran, {skipped} skipped (done), {len(failures)} failed "
                  f"in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
            from geolip_lib.runner.jobs import claims_left_out

            for nb in claims_left_out(args.profile, args.notebooks):  # fed by this run, not run by it: said
                print(f"note: {nb} did not run (not in --notebooks), so its verdicts do not read this run's "
                      f"results: run it with --notebooks {nb}, or the whole profile with --resume (it reruns "
                      "only what is stale)", file=sys.stderr)
        else:
            load_profile(args.profile, notebooks_dir=notebooks)
        from geolip_lib import report

        try:
            if args.report_only:  # the lock too: a live run's jobs would be read half-done, its running job "stopped"
                from geolip_lib.runner.lock import run_lock

                with run_lock(out_root, report_only=True):
                    paths = report.build(args.profile, out_root=out_root, pdf=not args.no_pdf)
            else:
                paths = report.build(args.profile, out_root=out_root, pdf=not args.no_pdf)
        except OSError as exc:  # the report's own writes (a full disk): one line, not a 230 KB traceback
            raise RunError(f"the report could not be written: {exc.strerror or exc}"
                           + (f" ({exc.filename})" if exc.filename else "")
                           + "; free space and rerun with --report-only") from None
    except (ParamsError, RunError, PlanError) as exc:
        for line in str(exc).splitlines() or [""]:  # every problem found, one line each
            print(f"error: {line}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        done = sum(r.ok and not r.skipped for r in exc.results)
        stopped = exc.stopped or ([exc.job] if exc.job else [])
        where = ""
        if len(stopped) == 1:
            where = f" during {stopped[0].label} (its partial result was removed)"
        elif stopped:
            where = f" during {', '.join(j.label for j in stopped)} (their partial results were removed)"
        print(f"{STOP.word}{where}: {done} job(s) finished and kept; rerun with --resume to go on", file=sys.stderr)
        return STOP.exit_code
    except KeyboardInterrupt:
        during = ("while planning; nothing was run" if args.plan
                  else "while building the report; rerun with --report-only")
        print(f"{STOP.word} {during}", file=sys.stderr)
        return STOP.exit_code
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
