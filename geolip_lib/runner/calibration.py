"""Measured jobs into the cost model's data: an output root's ``job_timing.json`` files as the rows of a
``timings/`` file (:func:`collect_timings`; ``python -m geolip_lib.runner.estimate collect ROOT PROFILE OUT``)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from ..roots import RootReadError, job_dirs, read_json
from .cost_model import CORES, _good_seconds, _parameters_key, job_drivers, load_slowdown
from .execute import TIMING
from .jobs import jobs_for_profile, notebook_defaults
from .memory_rules import GENERIC_MODEL_RULE, RULES, _models_of
from .model_sizes import model_info



def collect_timings(root: Path, profile: str, cores: int = CORES, null_share_was: Optional[float] = None,
                    k: float = 1.0) -> list[dict]:
    """One row per finished job of an output root (its ``job_timing.json``): notebook, model, profile, the
    drivers of :func:`job_drivers`, seconds and how they were measured. ``seconds``: the cold kernel's CPU
    seconds where recorded (``clock: cpu``), else wall seconds x min(1, cores / load) (``clock:
    wall-load``: ``k`` calibrates that share on jobs measured both ways); rows with neither are left out.
    ``null_share_was``: the null share of the code that ran (a run from before a change of :func:`null_share`).
    Reads through :mod:`geolip_lib.roots` (no link followed)."""
    by_label = {(j.notebook, j.job_id): j for j in jobs_for_profile(profile)}
    rows = []
    for d in job_dirs(root):
        job = by_label.get((d.parent.name, d.name))
        if job is None:
            continue
        try:
            t = read_json(root, d / TIMING)
        except (FileNotFoundError, RootReadError):
            continue
        try:
            wall = sum(float(t.get(k) or 0) for k in ("preflight_s", "kernel_start_s", "notebook_s"))
            cpu, load = t.get("kernel_cpu_s"), t.get("load_1m")
            share = 1.0 / load_slowdown(float(load), cores, k)
            if cpu:  # the kernel's CPU seconds + the runner's preflight (wall, scaled like a wall time)
                secs, clock = float(cpu) + float(t.get("preflight_s") or 0) * share, "cpu"
            elif load:
                secs, clock = wall * share, "wall-load"
            else:
                continue
        except (TypeError, ValueError, ZeroDivisionError, AttributeError):
            secs, clock = float("nan"), "unreadable"
        if not _good_seconds(secs):  # a hand-edited job_timing.json (NaN, negative): never written into timings/
            print(f"warning: {d}: job_timing.json gives {secs!r} seconds; left out", file=sys.stderr)
            continue
        rule = RULES.get(job.notebook) or GENERIC_MODEL_RULE
        infos = [model_info(m) for m in _models_of(job, rule, notebook_defaults)]
        drivers = job_drivers(job, infos, notebook_defaults)
        if null_share_was is not None and drivers["null_seeds"]:
            drivers["null_share"] = null_share_was
        rows.append({"profile": profile, "notebook": job.notebook, "job": job.job_id,
                     "models": [mi.name for mi in infos], "drivers": drivers, "seconds": round(secs, 2), "clock": clock,
                     "wall_s": round(wall, 2), "cpu_s": cpu, "load_1m": load,
                     "peak_rss_kb": t.get("peak_rss_kb"), "parameters": _parameters_key(job)})
    return rows


def main(argv=None) -> int:
    """``collect ROOT PROFILE OUT``: an output root's measured jobs into a data file of ``timings/``."""
    ap = argparse.ArgumentParser(prog="python -m geolip_lib.runner.estimate",
                                 description="collect an output root's measured jobs into a timings/ data file")
    ap.add_argument("cmd", choices=["collect"])
    ap.add_argument("root", type=Path)
    ap.add_argument("profile")
    ap.add_argument("out", type=Path)
    ap.add_argument("--note", default="")
    ap.add_argument("--null-share-was", type=float, help="the null share of the code that ran (before a change)")
    ap.add_argument("--k", type=float, default=1.0, help="wall -> CPU calibration of wall-only rows")
    a = ap.parse_args(argv)
    found = collect_timings(a.root, a.profile, null_share_was=a.null_share_was, k=a.k)
    a.out.write_text(json.dumps({"note": a.note, "rows": found}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(found)} job(s) -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
