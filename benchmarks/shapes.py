#!/usr/bin/env python
"""Wall time and peak memory of each job of a profile (default: ``shapes``), one job at a time.

Each job runs through the ordinary batch command, ``run_all.py --profile P --notebooks NB
[--models M] --out OUT --no-pdf``, so that exactly one job (one papermill kernel) runs per
call. While it runs, the process tree of that call is sampled every ``--every`` seconds
with psutil: the kernel (the ``ipykernel`` process) is found by its command line and its
peak resident memory is read from ``/proc/<pid>/status`` (``VmHWM``, the kernel's own
high-water mark, so no peak between two samples is missed); the summed RSS of the whole
tree (run_all + kernel) is the sampled maximum. The job's wall time is the kernel's
lifetime (start-up, every cell, shutdown); the call's total (with the report rebuild
run_all does after the job) is kept beside it. A job still running after ``--limit-s`` is
stopped (its process group is killed) and recorded as not finished.

Every job appends one JSON line to ``OUT/shapes_timings.jsonl``; ``--table`` prints the
markdown table of every line recorded there (the last record of each job), which is what
``benchmarks/README.md`` shows.

    .venv/bin/python benchmarks/shapes.py --out /tmp/shapes                  # every job of the shapes profile
    .venv/bin/python benchmarks/shapes.py --out /tmp/shapes --notebooks 02_weight_topology --models shapes-t5-small
    .venv/bin/python benchmarks/shapes.py --out /tmp/shapes --table          # the table only
    .venv/bin/python benchmarks/shapes.py --quick     # one job (02 on T5-small's shape) into /tmp/shapes-quick
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TIMINGS = "shapes_timings.jsonl"


def _hwm_mb(pid: int) -> float:
    """VmHWM (peak RSS) of a live process in MiB, 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return 0.0


def watch(cmd: list[str], limit_s: float, every: float, env: dict) -> dict:
    """Run ``cmd`` in its own process group; sample its process tree until it ends."""
    import psutil

    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    root = psutil.Process(p.pid)
    kernels: dict = {}  # pid -> {"hwm": MiB, "cpu": s, "first": s, "last": s}
    tree_peak, loads, timed_out = 0.0, [], False
    while p.poll() is None:
        now = time.perf_counter() - t0
        if now > limit_s:
            os.killpg(p.pid, signal.SIGKILL)
            timed_out = True
            break
        try:
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        rss = 0
        for q in procs:
            try:
                rss += q.memory_info().rss
                if q.pid not in kernels and "ipykernel" in " ".join(q.cmdline()):
                    kernels[q.pid] = {"hwm": 0.0, "cpu": 0.0, "first": now, "last": now, "proc": q}
            except psutil.Error:
                continue
        for pid, k in kernels.items():
            h = _hwm_mb(pid)
            if h:
                k["hwm"], k["last"] = max(k["hwm"], h), now
                try:
                    c = k["proc"].cpu_times()
                    k["cpu"] = c.user + c.system + c.children_user + c.children_system
                except psutil.Error:
                    pass
        tree_peak = max(tree_peak, rss / 2**20)
        loads.append(os.getloadavg()[0])
        time.sleep(every)
    out = p.communicate()[0] if not timed_out else ""
    total = time.perf_counter() - t0
    k = max(kernels.values(), key=lambda v: v["hwm"]) if kernels else None
    return {"rc": p.returncode, "timed_out": timed_out, "total_s": total,
            "kernel_s": (k["last"] - k["first"] + every) if k else None, "kernel_peak_mb": k["hwm"] if k else None,
            "kernel_cpu_s": k["cpu"] if k else None,
            "tree_peak_mb": tree_peak, "load_mean": sum(loads) / len(loads) if loads else None,
            "tail": out[-2000:]}


def _recorded(out: Path) -> set:
    path = out / TIMINGS
    if not path.exists():
        return set()
    recs = map(json.loads, path.read_text(encoding="utf-8").splitlines())
    return {(r["notebook"], r["job"]) for r in recs if r["ok"]}


def run_jobs(profile: str, out: Path, models, notebooks, limit_s: float, every: float, threads: int,
             skip_done: bool = False) -> None:
    import run_all

    jobs = run_all.jobs_for_profile(profile, models, notebooks)
    env = dict(os.environ)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out.mkdir(parents=True, exist_ok=True)
    done = _recorded(out) if skip_done else set()
    for job in jobs:
        if (job.notebook, job.job_id) in done:
            continue
        sel = ([job.model] if job.model else None)
        same = run_all.jobs_for_profile(profile, sel, [job.notebook])
        if len(same) != 1:
            print(f"skip {job.label}: --notebooks/--models cannot select it alone ({len(same)} jobs match)",
                  file=sys.stderr)
            continue
        cmd = [sys.executable, "run_all.py", "--profile", profile, "--notebooks", job.notebook,
               "--out", str(out), "--no-pdf"] + (["--models", job.model] if job.model else [])
        print(f"{job.label} ...", end=" ", flush=True)
        r = watch(cmd, limit_s, every, env)
        jd = out / job.notebook / job.job_id
        ok = (jd / "metrics.json").exists() and r["rc"] == 0 and not r["timed_out"]
        err = ""
        if not ok and (out / job.notebook / f"{job.job_id}.failed" / "error.txt").exists():
            err = (out / job.notebook / f"{job.job_id}.failed" / "error.txt").read_text(errors="replace")[:300]
        rec = {"profile": profile, "notebook": job.notebook, "job": job.job_id, "model": job.model,
               "parameters": job.parameters, "ok": ok, "threads": threads or None, "cpus": os.cpu_count(),
               "when": time.strftime("%Y-%m-%d %H:%M"), "error": err or (r["tail"][-300:] if not ok else ""),
               **{k: v for k, v in r.items() if k != "tail"}}
        with open(out / TIMINGS, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")
        state = "ok" if ok else ("TIMED OUT" if r["timed_out"] else "FAILED")
        print(f"{state} kernel {r['kernel_s'] or 0:.0f} s (CPU {r['kernel_cpu_s'] or 0:.0f} s), "
              f"peak {r['kernel_peak_mb'] or 0:.0f} MiB (tree {r['tree_peak_mb']:.0f} MiB), "
              f"load {r['load_mean'] or 0:.1f}", flush=True)


def table(out: Path) -> str:
    """Markdown table of the last record of every job in ``OUT/shapes_timings.jsonl``."""
    path = out / TIMINGS
    if not path.exists():
        raise SystemExit(f"error: no {path}; run the jobs first (without --table)")
    last: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        last[(r["notebook"], r["job"])] = r
    rows = ["| notebook | job | result | wall (kernel) | CPU (kernel) | peak RSS (kernel VmHWM) | load avg |",
            "|---|---|---|---|---|---|---|"]
    for (nb, job), r in last.items():  # in the order they ran
        res = "ok" if r["ok"] else (f"stopped at {r['total_s']:.0f} s" if r["timed_out"] else "failed")
        wall = f"{r['kernel_s']:.0f} s" if r.get("kernel_s") else "-"
        peak = f"{r['kernel_peak_mb'] / 1024:.2f} GiB" if r.get("kernel_peak_mb") else "-"
        cpu = f"{r['kernel_cpu_s']:.0f} s" if r.get("kernel_cpu_s") else "-"
        load = f"{r['load_mean']:.1f}" if r.get("load_mean") is not None else "-"
        rows.append(f"| {nb} | {job} | {res} | {wall} | {cpu} | {peak} | {load} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="shapes", help="params/profiles/<name>.yaml (default: shapes)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/shapes"), help="output root (default /tmp/shapes)")
    ap.add_argument("--models", nargs="+", help="only these models")
    ap.add_argument("--notebooks", nargs="+", help="only these notebooks")
    ap.add_argument("--limit-s", type=float, default=1800, help="stop a job after this many seconds (default 1800)")
    ap.add_argument("--every", type=float, default=0.5, help="sampling period in seconds (default 0.5)")
    ap.add_argument("--threads", type=int, default=0,
                    help="OMP/MKL threads of the kernels (default 0: the libraries' default)")
    ap.add_argument("--skip-done", action="store_true", help="skip jobs OUT already holds a successful record of")
    ap.add_argument("--table", action="store_true", help="print the markdown table of what OUT holds, run nothing")
    ap.add_argument("--quick", action="store_true",
                    help="one job: 02_weight_topology on shapes-t5-small, into /tmp/shapes-quick unless --out "
                         "(make bench)")
    args = ap.parse_args()
    if args.quick:
        args.notebooks = args.notebooks or ["02_weight_topology"]
        args.models = args.models or ["shapes-t5-small"]
        if args.out == Path("/tmp/shapes"):
            args.out = Path("/tmp/shapes-quick")
    if args.limit_s <= 0 or args.every <= 0 or args.threads < 0:
        ap.error("--limit-s and --every must be > 0, --threads >= 0")
    if not args.table:
        from geolip_lib.params import ParamsError

        try:
            run_jobs(args.profile, args.out, args.models, args.notebooks, args.limit_s, args.every, args.threads,
                     args.skip_done)
        except ParamsError as exc:
            raise SystemExit(f"error: {exc}") from None
    print(table(args.out))


if __name__ == "__main__":
    main()
