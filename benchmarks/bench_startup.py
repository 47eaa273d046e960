#!/usr/bin/env python
"""How long ``run_all.py`` takes before it does anything: ``--help``, ``--plan`` of the tiny and
the demo profiles and refusals (a flag out of range, an unknown profile, a parameter of the wrong type, a value out of its range,
an undeclared parameter, a model with no params file, an unknown claims file; and a wrong type in the demo
profile, whose models are PyPI packages), each against the goal of 2 s on a quiet machine.

Each command runs in a fresh interpreter (best of ``--repeat``); printed per command: the wall seconds,
the CPU seconds of the process (user + system: what the wall time is on a quiet machine, where nothing else
competes for the cores), the ratio CPU / goal, and the 1-minute load while it ran (a wall time at load 8 on
2 cores says little). The refusals are made in temporary copies of the tiny profile (``--out`` is not needed:
nothing runs).

A refusal or plan of a profile seen before reads the answers that need torch and transformers (a model's
config check and size: a tiny model's by its params, a model with files by their state too; the claims check,
the cost fits) from ``.cache/remembered`` (``geolip_lib.runner.
remembered``); the first run after a change of the library's code or of the installed packages computes them.
``--cold`` adds a column: the CPU seconds with ``GEOLIP_REMEMBER=0`` (every answer computed, as a first run).

    .venv/bin/python benchmarks/bench_startup.py            # every command, best of 3
    .venv/bin/python benchmarks/bench_startup.py --quick    # best of 1
    .venv/bin/python benchmarks/bench_startup.py --cold     # and once without the remembered answers
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


def _tiny_with(tmp: Path, name: str, change, profile: str = "tiny") -> Path:
    """A copy of the tiny (or another) profile changed by ``change(profile dict)`` (a refusal made by the checks)."""
    prof = yaml.safe_load((ROOT / "params" / "profiles" / f"{profile}.yaml").read_text(encoding="utf-8"))
    change(prof["notebooks"])
    f = tmp / f"{profile}-{name}.yaml"
    f.write_text(yaml.safe_dump(prof, sort_keys=False), encoding="utf-8")
    return f


def _refusals(tmp: Path) -> list[tuple[str, list[str], int]]:
    nb01 = lambda nbs: nbs["01_embedding_terrain"]  # noqa: E731
    wrong_type = _tiny_with(tmp, "wrong-type", lambda n: nb01(n)["parameters"].update(N_COS_SAMPLE="many"))
    out_of_range = _tiny_with(tmp, "out-of-range", lambda n: nb01(n)["parameters"].update(N_COS_SAMPLE=-1))
    undeclared = _tiny_with(tmp, "undeclared", lambda n: nb01(n)["parameters"].update(N_NO_SUCH=3))
    no_model = _tiny_with(tmp, "no-params-file", lambda n: nb01(n)["models"].append("no-such-model"))
    no_claims = _tiny_with(tmp, "no-claims-file",
                           lambda n: n["15_seed_claims"]["jobs"][0]["parameters"].update(CLAIMS="no-such-claims"))
    # the main job's profile (make report): its models are PyPI packages, checked from their files each time
    demo_wrong = _tiny_with(tmp, "wrong-type", lambda n: n["01_embedding_terrain"].setdefault("parameters", {})
                            .update(N_COS_SAMPLE="many"), profile="demo")
    return [
        ("refusal: --jobs 0", ["--jobs", "0"], 2),
        ("refusal: unknown profile", ["--profile", "no-such-profile", "--plan"], 2),
        ("refusal: wrong type", ["--profile", str(wrong_type), "--plan"], 2),
        ("refusal: out of range", ["--profile", str(out_of_range)], 2),
        ("refusal: undeclared param", ["--profile", str(undeclared), "--plan"], 2),
        ("refusal: no params file", ["--profile", str(no_model)], 2),
        ("refusal: no claims file", ["--profile", str(no_claims), "--plan"], 2),
        ("refusal: wrong type (demo)", ["--profile", str(demo_wrong), "--plan"], 2),
    ]


def timed(argv: list[str], remember: bool = True) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit code) of ``run_all.py argv`` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = {**os.environ, "GEOLIP_WARM": "0", **({} if remember else {"GEOLIP_REMEMBER": "0"})}
    r = subprocess.run([sys.executable, str(ROOT / "run_all.py"), *argv], cwd=ROOT, capture_output=True, text=True,
                       env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per command (the best is printed)")
    ap.add_argument("--quick", action="store_true", help="one run per command")
    ap.add_argument("--cold", action="store_true", help="also the CPU seconds with GEOLIP_REMEMBER=0 (a first run)")
    ap.add_argument("--only", nargs="+", help="only the commands with these names")
    a = ap.parse_args()
    repeat = 1 if a.quick else max(1, a.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        commands = [("--help", ["--help"], 0), *_refusals(Path(tmp)),
                    ("--plan --profile tiny", ["--plan", "--profile", "tiny"], None),
                    ("--plan --profile demo", ["--plan", "--profile", "demo"], None)]
        for _, argv, _ in commands[-2:]:  # once: what a profile seen before reads back is there (its first run
            timed(argv)  # computes it)
        cold = f" {'cold CPU s':>10}" if a.cold else ""
        print(f"{'command':<28} {'wall s':>8} {'CPU s':>7} {'CPU/goal':>9}{cold} {'load':>5}  rc")
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
            first = f" {timed(argv, remember=False)[1]:10.2f}" if a.cold else ""
            print(f"{name:<28} {wall:8.2f} {cpu:7.2f} {cpu / GOAL_S:8.2f}x{first} {os.getloadavg()[0]:5.1f}  {rc}"
                  + ("" if ok else f"  (expected exit {want})"))
    print(f"goal: each under {GOAL_S:.0f} s on a quiet machine (CPU s: the wall time without competition); "
          f"worst {worst:.2f} s = {worst / GOAL_S:.2f}x the goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
