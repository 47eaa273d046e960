"""Host peak of each Qwen2.5-Coder-1.5B job of the real profile beside the model's float32 bytes.

    .venv/bin/python benchmarks/memory.py                     # the real profile's Qwen jobs, its parameters
    .venv/bin/python benchmarks/memory.py --quick             # the same jobs on smaller samples (same tables, same models)
    .venv/bin/python benchmarks/memory.py --notebooks 01_embedding_terrain 16_contextual_geometry
    .venv/bin/python benchmarks/memory.py --root /tmp/before  # another checkout of the code (a before/after)
    .venv/bin/python benchmarks/memory.py --read /tmp/mem     # print the table of a finished run

Each job of ``params/profiles/real.yaml`` that runs ``qwen2.5-coder-1.5b`` (01, 02, 06, 16) is
run alone, one after the other, through ``run_all.py --cold`` (a cold kernel: the runner samples
its ``VmHWM``, the peak resident set, into ``job_timing.json``'s ``peak_rss_kb``) from a
profile written beside the output (``<out>/memory.yaml``; the jobs in ``<out>/run``). ``--quick`` keeps every table and
model whole and shrinks only the samples (bootstrap resamples, simplices, words), so the peak
it reports is the full run's within the samples' own arrays. The goal: 01 and 16 at most
10 GB, and every job near the model's own bytes (``peak / model`` about 1.5 plus the kernel).
Exit 1 when a job fails or is over the goal.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder-1.5b"
GOAL_GB = {"01_embedding_terrain": 10.0, "16_contextual_geometry": 10.0}
N_PARAMS = 1_777_088_000  # Qwen2.5-Coder-1.5B as its GGUF stores it (an untied head): ~7.1 GB in float32
# --quick: smaller samples; the tables (151,936 x 1,536), the model and its twins stay whole
QUICK = {"01_embedding_terrain": {"N_COS_SAMPLE": 500, "N_SIMPLICES": 200, "N_DIST_SAMPLE": 500, "N_BOOT": 50},
         "16_contextual_geometry": {"N_WORDS": 7, "MAX_CONTEXTS": 5, "N_BOOT": 50, "GAUSSIAN_SEEDS": 2,
                                    "N_PAIRS": 500}}


def jobs(notebooks, quick: bool) -> dict:
    """The real profile's Qwen jobs as a profile of their own: ``{notebook: {jobs: [...]}}``."""
    real = yaml.safe_load((ROOT / "params" / "profiles" / "real.yaml").read_text(encoding="utf-8"))
    out = {}
    for nb, spec in real["notebooks"].items():
        if notebooks and nb not in notebooks:
            continue
        params = dict(spec.get("parameters") or {})
        found = [j for j in spec.get("jobs") or [] if j.get("model") == MODEL]
        if found:
            params.update(found[0].get("parameters") or {})
        elif MODEL not in (spec.get("models") or []):
            continue
        if quick:
            params.update(QUICK.get(nb, {}))
        out[nb] = {"per_model": False, "jobs": [{"id": MODEL, "model": MODEL, "parameters": params}]}
    return out


def run(root: Path, out: Path, notebooks, quick: bool) -> int:
    out.mkdir(parents=True, exist_ok=True)
    nbs = jobs(notebooks, quick)
    prof = {"name": "memory", "description": f"{MODEL}'s jobs of the real profile, one at a time (benchmarks/memory.py)",
            "kernel": "python3", "timeout_s": 3600, "defaults": {}, "notebooks": nbs}
    path = out / "memory.yaml"
    path.write_text(yaml.safe_dump(prof, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root), "GEOLIP_CACHE": os.environ.get("GEOLIP_CACHE", str(ROOT / ".cache"))}
    for nb in nbs:  # one at a time: two 1.5B jobs at once would each see the other's memory taken
        cmd = [sys.executable, str(root / "run_all.py"), "--profile", str(path), "--notebooks", nb, "--cold",
               "--jobs", "1", "--no-pdf", "--out", str(out / "run")]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, cwd=str(root), env=env, check=False)
    return report(out)


def report(out: Path) -> int:
    files = sorted((ROOT / ".cache" / "gguf").glob("qwen2.5-coder-1.5b-*/model.safetensors"))
    model_gb = (files[0].stat().st_size if files else N_PARAMS * 4) / 1e9  # the dequantized float32 copy it loads
    print(f"{MODEL}: {model_gb:.2f} GB in float32 (its dequantized model.safetensors)")
    print(f"{'job':<26} {'peak RSS GB':>11} {'peak / model':>12} {'goal GB':>8} {'notebook s':>10}")
    bad = 0
    for t in sorted(out.glob(f"run/*/{MODEL}/job_timing.json")):
        nb = t.parent.parent.name
        rec = json.loads(t.read_text(encoding="utf-8"))
        kb = rec.get("peak_rss_kb")
        gb = None if kb is None else kb * 1024 / 1e9
        goal = GOAL_GB.get(nb)
        over = gb is None or (goal is not None and gb > goal)
        bad += over
        print(f"{nb:<26} {'-' if gb is None else f'{gb:.2f}':>11} {'-' if gb is None else f'{gb / model_gb:.2f}':>12} "
              f"{'-' if goal is None else f'{goal:.1f}':>8} {rec.get('notebook_s', 0):>10.0f}{'  OVER' if over else ''}")
    failed = sorted(p.parent.name for p in out.glob(f"run/*/{MODEL}/error.txt"))
    for f in failed:
        print(f"failed: {f}")
    return 1 if bad or failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller samples (the tables and models stay whole)")
    ap.add_argument("--notebooks", nargs="+", help="only these notebooks")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/geolip-memory"), help="output root")
    ap.add_argument("--read", type=Path, help="only print the table of a finished run under this root")
    a = ap.parse_args(argv)
    if a.read:
        return report(a.read)
    return run(a.root.resolve(), a.out, a.notebooks, a.quick)


if __name__ == "__main__":
    sys.exit(main())
