#!/usr/bin/env python
"""How long ``run_all.py`` takes before it does anything (issue 38 §2): ``--help``, ``--plan --profile tiny``
and refusals (a flag out of range, an unknown profile, a profile parameter of the wrong type), each
against the goal of 2 s on a quiet machine.

Each command runs in a fresh interpreter (best of ``--repeat``); printed per command: the wall seconds,
the CPU seconds of the process (user + system: what the wall time is on a quiet machine, where nothing else
competes for the cores), the ratio CPU / goal, and the 1-minute load while it ran (a wall time at load 8 on
2 cores says little). The refusal of a bad parameter is made in a temporary copy of the tiny profile
(``--out`` is not needed: nothing runs).

    .venv/bin/python benchmarks/bench_startup.py            # every command, best of 3
    .venv/bin/python benchmarks/bench_startup.py --quick    # best of 1
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 2.0


def _bad_parameter_profile(tmp: Path) -> Path:
    """The tiny profile with one parameter of the wrong type (a refusal made by the parameter checks)."""
    prof = yaml.safe_load((ROOT / "params" / "profiles" / "tiny.yaml").read_text(encoding="utf-8"))
    prof["notebooks"]["01_embedding_terrain"]["parameters"]["N_COS_SAMPLE"] = "many"  # an int in the notebook
    f = tmp / "tiny-bad-parameter.yaml"
    f.write_text(yaml.safe_dump(prof), encoding="utf-8")
    return f


def timed(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit code) of ``run_all.py argv`` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(ROOT / "run_all.py"), *argv], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "GEOLIP_WARM": "0"})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per command (the best is printed)")
    ap.add_argument("--quick", action="store_true", help="one run per command")
    ap.add_argument("--only", nargs="+", help="only the commands with these names")
    a = ap.parse_args()
    repeat = 1 if a.quick else max(1, a.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        bad = _bad_parameter_profile(Path(tmp))
        commands = [
            ("--help", ["--help"], 0),
            ("refusal: --jobs 0", ["--jobs", "0"], 2),
            ("refusal: unknown profile", ["--profile", "no-such-profile", "--plan"], 2),
            ("refusal: bad parameter", ["--profile", str(bad), "--plan"], 2),
            ("--plan --profile tiny", ["--plan", "--profile", "tiny"], None),
        ]
        print(f"{'command':<28} {'wall s':>8} {'CPU s':>7} {'CPU/goal':>9} {'load':>5}  rc")
        worst = 0.0
        for name, argv, want in commands:
            if a.only and name not in a.only:
                continue
            best = None
            for _ in range(repeat):
                got = timed(argv)
                best = got if best is None or got[1] < best[1] else best
            wall, cpu, rc = best
            ok = want is None or rc == want
            worst = max(worst, cpu)
            print(f"{name:<28} {wall:8.2f} {cpu:7.2f} {cpu / GOAL_S:8.2f}x {os.getloadavg()[0]:5.1f}  {rc}"
                  + ("" if ok else f"  (expected exit {want})"))
    print(f"goal: each under {GOAL_S:.0f} s on a quiet machine (CPU s: the wall time without competition); "
          f"worst {worst:.2f} s = {worst / GOAL_S:.2f}x the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
