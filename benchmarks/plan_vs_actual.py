#!/usr/bin/env python
"""Planned against actual wall time of a finished run: per job, the plan's estimate (the cost model's CPU seconds x
the speed factor the plan printed before the run) against its ``job_timing.json`` (preflight + kernel start +
notebook), their ratio actual / planned and its median, and the plan's time from start to end (jobs at ``--jobs``
at once, then the report) against the run's, given as ``--run-s``.

    .venv/bin/python run_all.py --profile tiny --plan | head -2          # note the factor: "... 2.96x slower ..."
    /usr/bin/time -f %e .venv/bin/python run_all.py --profile tiny --out /tmp/t
    .venv/bin/python benchmarks/plan_vs_actual.py --profile tiny --out /tmp/t --factor 2.96 --run-s 191
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from geolip_lib.runner.jobs import jobs_for_profile, notebook_defaults  # noqa: E402 - after sys.path
from geolip_lib.runner.plan import make_plan  # noqa: E402
from geolip_lib.runner.speed import Speed, apply_speed  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out", type=Path, required=True, help="the finished run's output root")
    ap.add_argument("--factor", type=float, required=True, help="the speed factor the plan printed before the run")
    ap.add_argument("--run-s", type=float, help="the run's wall seconds, start to end (report included)")
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--notebooks", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-pdf", action="store_true")
    a = ap.parse_args(argv)
    jobs = jobs_for_profile(a.profile, a.models, a.notebooks)
    plan = make_plan(jobs, out_root=ROOT / "benchmarks" / "no-such-root", defaults=notebook_defaults,
                     free_disk=10**15, free_mem=10**13, gpus=[], parallel=a.jobs)  # no job of the run takes over
    apply_speed(plan, pdf=not a.no_pdf, speed=Speed(a.factor, 1.0, a.factor, 1, a.jobs, 0.0, 2, 0.0, 1))
    ratios = []
    print(f"{'job':<56}{'planned s':>10}{'actual s':>10}{'ratio':>7}{'load':>7}")
    for row, job in zip(plan.rows, jobs):
        f = a.out / job.notebook / job.job_id / "job_timing.json"
        if row.seconds is None or not f.is_file():
            continue
        t = json.loads(f.read_text(encoding="utf-8"))
        wall = t["preflight_s"] + t["kernel_start_s"] + t["notebook_s"]
        ratios.append(wall / row.seconds)
        print(f"{job.label:<56}{row.seconds:>10.1f}{wall:>10.1f}{ratios[-1]:>7.2f}{t.get('load_1m') or 0:>7.1f}")
    if ratios:
        print(f"median actual / planned over {len(ratios)} jobs: {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})")
    planned = plan.timeline()[1] + (plan.report_s or 0)
    print(f"start to end: planned {planned:.0f} s (report {plan.report_s:.0f} s)"
          + (f", actual {a.run_s:.0f} s: ratio {a.run_s / planned:.2f}" if a.run_s else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
