#!/usr/bin/env python
"""Where a job's seconds go: runner preflight, kernel start, the first cell (imports + model load), the rest.

Runs a profile (default: demo) twice into temporary roots — the way runs were before
(one job at a time, cold kernels: ``--jobs 1``, ``GEOLIP_WARM=0``) and the default way
(``--jobs`` default, warm kernels) — and prints, for each, the wall time of the batch and
the mean per-job breakdown read from each job's ``job_timing.json`` (written by the runner) and
the executed notebook's cell durations (papermill). Then the ratio of the two wall times,
and whether every ``metrics.json`` is equal apart from its provenance.

    .venv/bin/python benchmarks/job_start.py                    # demo profile, both ways (~20 min here)
    .venv/bin/python benchmarks/job_start.py --quick            # 4 jobs of the tiny profile
    .venv/bin/python benchmarks/job_start.py --summarize ROOT   # the breakdown of an existing run
"""
from __future__ import annotations

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def breakdown(root: Path) -> dict:
    """Mean seconds per job: preflight, kernel start, import cell, work, over the finished jobs."""
    rows = []
    for t in sorted(Path(root).glob("*/*/job_timing.json")):
        timing = json.loads(t.read_text())
        nb = json.loads((t.parent / "executed.ipynb").read_text())
        cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
        dur = [(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0) for c in cells]
        imp = next((i for i, c in enumerate(cells) if "geolip_lib" in "".join(c["source"])
                    and "import" in "".join(c["source"])
                    and "injected-parameters" not in c["metadata"].get("tags", [])), None)
        imp_s = dur[imp] if imp is not None else 0.0
        rows.append({"job": f"{t.parent.parent.name}/{t.parent.name}", "preflight": timing["preflight_s"],
                     # the kernel is ready when papermill's first cell runs: launch + the wait before it
                     "kernel": timing["kernel_start_s"] + max(0.0, timing["notebook_s"] - sum(dur)),
                     "imports": imp_s, "work": sum(dur) - imp_s,
                     "notebook": timing["notebook_s"], "warm": timing.get("warm")})
    if not rows:
        return {"jobs": 0}
    mean = {k: st.mean(r[k] for r in rows) for k in ("preflight", "kernel", "imports", "work", "notebook")}
    return {"jobs": len(rows), **{k: round(v, 2) for k, v in mean.items()},
            "sum_job_s": round(sum(r["preflight"] + r["kernel"] + r["notebook"] for r in rows), 1)}


def run(profile: str, out: Path, extra: list, env: dict, models=None) -> float:
    cmd = [sys.executable, str(ROOT / "run_all.py"), "--profile", profile, "--out", str(out), "--no-pdf", *extra]
    if models:
        cmd += ["--models", *models]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(r.stderr[-3000:], file=sys.stderr)
    return wall


def same_metrics(a: Path, b: Path) -> tuple[int, list]:
    differ, n = [], 0
    for m in sorted(a.glob("*/*/metrics.json")):
        other = b / m.relative_to(a)
        x, y = json.loads(m.read_text()), json.loads(other.read_text()) if other.exists() else None
        n += 1
        if y is None:
            differ.append(f"{m.parent.parent.name}/{m.parent.name} (missing)")
            continue
        x.pop("provenance", None)
        y.pop("provenance", None)
        if x != y:
            differ.append(f"{m.parent.parent.name}/{m.parent.name}")
    return n, differ


def show(name: str, wall: float, b: dict) -> None:
    print(f"{name:<34} wall {wall:7.1f} s  jobs {b['jobs']:>3}  per job: preflight {b.get('preflight', 0):5.2f} s, "
          f"kernel start {b.get('kernel', 0):5.2f} s, first cell (imports + model load) {b.get('imports', 0):5.2f} s, "
          f"work {b.get('work', 0):6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="demo")
    ap.add_argument("--quick", action="store_true", help="4 tiny-profile jobs of notebooks 01 and 02")
    ap.add_argument("--summarize", type=Path, help="only print the breakdown of this output root")
    ap.add_argument("--keep", type=Path, help="keep both output roots under this directory")
    args = ap.parse_args()
    if args.summarize:
        show(str(args.summarize), float("nan"), breakdown(args.summarize))
        return
    extra, models, profile = [], None, args.profile
    if args.quick:
        profile, extra, models = "tiny", ["--notebooks", "01_embedding_terrain", "02_weight_topology"], \
            ["tiny-t5", "tiny-qwen"]
    base = Path(tempfile.mkdtemp(prefix="geolip-jobstart-")) if not args.keep else args.keep
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    before, after = base / "before", base / "after"
    w0 = run(profile, before, extra + ["--jobs", "1"], {**env, "GEOLIP_WARM": "0"}, models)
    w1 = run(profile, after, extra + ["--warm"], env, models)
    print(f"profile {profile}, {os.cpu_count()} cores")
    show("before (--jobs 1, cold kernels)", w0, breakdown(before))
    show("after (default --jobs, warm)", w1, breakdown(after))
    n, differ = same_metrics(before, after)
    print(f"speed-up {w0 / w1:.2f}x; metrics.json equal apart from provenance: {n - len(differ)}/{n}"
          + (f" (differ: {', '.join(differ)})" if differ else ""))
    if not args.keep:
        import shutil

        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
