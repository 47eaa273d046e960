#!/usr/bin/env python
"""Per-step rates of geolip's heavy work on each device: what ``run_all.py --plan`` scales its GPU rows from.

Per model and device: build (``geolip_lib.models.load``: random weights for ``tiny-*`` / ``shapes-*``
models), a forward pass (``lm.hidden_states`` of 256 texts; an image model: 64 random 224 px images),
the weight battery (``weights.run_battery``, notebook 02's core), the QK operators
(``operators.model.measure_model``, 06's core) and one null seed's battery
(``lm.random_init_weights(seed=1)`` then ``run_battery``). Prints a table per model and device and,
where both devices ran, the speed-up CPU s / GPU s per step. Times are wall seconds (CUDA synchronised).

``--out FILE`` appends one JSON line per step, flushed (a run stopped by a timeout keeps what it did),
in the format of ``geolip_lib/runner/timings/*.jsonl``: the plan reads every such file there, so a
GPU's rows join the plan by appending to a new ``timings/gpu-<name>-<date>.jsonl``. Add your own rows
when a GPU is lent. A failed step is written as ``<step>_error`` with its message (no rate).

    .venv/bin/python benchmarks/gpu_rates.py --quick                 # tiny-t5 on the CPU (~20 s)
    .venv/bin/python benchmarks/gpu_rates.py --device cuda --out geolip_lib/runner/timings/gpu-a100-$(date +%F).jsonl
    .venv/bin/python benchmarks/gpu_rates.py --device cuda --out timings   # the same, named after this GPU's kind

A kind's measured rows replace the rates ``run_all.py --plan --gpu-kind KIND`` otherwise scales from the H200's
(``geolip_lib/runner/gpu_kinds.py``: the kinds, their datasheet specs, how a torch GPU name maps to a kind).
    .venv/bin/python benchmarks/gpu_rates.py shapes-t5-base --device cpu,cuda   # both, with the ratio
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from geolip_lib.runner.gpu_kinds import kind_of, known  # noqa: E402 - after the checkout is on sys.path
from geolip_lib.runner.gpu_rates import short_name  # noqa: E402

STEPS = ("load", "forward", "battery", "operators", "null_battery_one_seed")
SHORT = {"load": "build", "forward": "forward", "battery": "battery", "operators": "operators",
         "null_battery_one_seed": "null seed"}
MODELS = ["shapes-t5-base", "shapes-bert-large-uncased", "shapes-dinov2-large", "shapes-qwen3.5-0.8b"]
IMAGE_FAMILIES = ("dinov2",)


def texts(n: int) -> list[str]:
    words = [("edge", "polygon", "centre"), ("face", "tree", "bank"), ("root", "cat", "house"),
             ("leaf", "river", "hill")]
    return [f"the {w} of a small {v} is near the {u}" for w, v, u in (words * (n // 4 + 1))[:n]]


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def measure(name: str, device: str, a, out) -> dict:
    """The steps of one model on one device: {step: seconds} (failed steps: absent, written as *_error)."""
    from geolip_lib.models import load
    from geolip_lib.operators.model import measure_model
    from geolip_lib.weights import run_battery

    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    got, base = {}, {"model": name, "device": device, "dtype": a.dtype, "date": datetime.date.today().isoformat(),
                     "commit": commit(), "threads": torch.get_num_threads()}
    if cuda:
        base["gpu"] = torch.cuda.get_device_name(0)

    def rec(step, seconds, **kw):
        row = dict(base, step=step, seconds=round(seconds, 3), **kw)
        if cuda:
            row["gpu_peak_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 3)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        if not step.endswith("error"):
            got[step] = seconds
        else:
            print(f"  {name} on {device}: {step}: {row['error']}", flush=True)

    def timed(step, fn):
        if step.removesuffix("_battery_one_seed") not in a.steps and step not in a.steps:
            return
        try:
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            kw = fn() or {}
            sync()
            rec(step, time.perf_counter() - t0, **kw)
        except Exception as e:  # noqa: BLE001 - a failed step is recorded, the others still run
            rec(step + "_error", 0.0, error=f"{type(e).__name__}: {e}"[:300])

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    lm = load(name, device=device, dtype=a.dtype)
    sync()
    base.update(params=sum(p.numel() for p in lm.model.parameters()), family=lm.family)
    rec("load", time.perf_counter() - t0)
    if lm.family in IMAGE_FAMILIES:
        x = torch.rand(min(a.texts, 64), 3, 224, 224, generator=torch.Generator().manual_seed(0))
    else:
        x = texts(a.texts)
    timed("forward", lambda: {"n_inputs": len(x), "layers": len(lm.hidden_states(x).layers)})
    timed("battery", lambda: {"svd_rows": len(run_battery(lm, device=device).svd)})
    timed("operators", lambda: measure_model(lm, device=device) and None)
    timed("null_battery_one_seed", lambda: run_battery(lm.random_init_weights(seed=1), config=lm.config,
                                                       family=lm.family, device=device) and None)
    del lm
    if cuda:
        torch.cuda.empty_cache()
    return got


def table(name: str, by_dev: dict) -> list[str]:
    devs = list(by_dev)
    lines = [f"{name}  (seconds)", f"  {'device':<8}" + "".join(f"{SHORT[s]:>11}" for s in STEPS)]
    for d in devs:
        lines.append(f"  {d:<8}" + "".join(f"{by_dev[d][s]:>11.2f}" if s in by_dev[d] else f"{'-':>11}"
                                           for s in STEPS))
    if "cpu" in by_dev and len(devs) > 1:
        for d in (d for d in devs if d != "cpu"):
            lines.append(f"  {'cpu/' + d:<8}" + "".join(
                f"{by_dev['cpu'][s] / by_dev[d][s]:>10.1f}x" if s in by_dev["cpu"] and s in by_dev[d] else f"{'-':>11}"
                for s in STEPS))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help=f"params/models names (default: {' '.join(MODELS)})")
    ap.add_argument("--quick", action="store_true", help="tiny-t5 on the CPU, 32 texts")
    ap.add_argument("--device", default=None, help="cpu, cuda or cpu,cuda (default: cpu, and cuda when available)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--texts", type=int, default=None, help="inputs of the forward pass (default 256; quick 32)")
    ap.add_argument("--steps", default="load,forward,battery,operators,null",
                    help="comma-separated: load, forward, battery, operators, null")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--out", type=Path, help="append one JSON line per step to this file ('timings': to "
                    "geolip_lib/runner/timings/gpu-<kind>-<date>.jsonl, which --plan reads)")
    a = ap.parse_args(argv)
    models = a.models or (["tiny-t5"] if a.quick else MODELS)
    a.texts = a.texts or (32 if a.quick else 256)
    a.steps = set(a.steps.split(","))
    devices = (a.device or ("cpu" if a.quick or not torch.cuda.is_available() else "cpu,cuda")).split(",")
    if any(d.startswith("cuda") for d in devices) and not torch.cuda.is_available():
        print("no CUDA device here: running on the CPU only")
        devices = [d for d in devices if not d.startswith("cuda")] or ["cpu"]
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.out == Path("timings"):
        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""
        kind = kind_of(gpu)
        if kind is None:
            print(f"note: {gpu or 'no GPU'} is none of the plan's kinds ({known()}); its rows are read for this "
                  "machine's own GPU only (add it to geolip_lib/runner/gpu_kinds.py for --gpu-kind)")
        name = (kind.name if kind else short_name(gpu) or "cpu").lower().replace(" ", "-")
        a.out = ROOT / "geolip_lib" / "runner" / "timings" / f"gpu-{name}-{datetime.date.today().isoformat()}.jsonl"
    out = open(a.out, "a", encoding="utf-8") if a.out else None
    print(f"models: {' '.join(models)}; devices: {', '.join(devices)}; {a.dtype}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads" + (f"; {torch.cuda.get_device_name(0)}" if torch.cuda.is_available()
                                                  else ""))
    rc = 0
    for name in models:
        by_dev = {}
        for dev in devices:
            try:
                by_dev[dev] = measure(name, dev, a, out)
            except Exception as e:  # noqa: BLE001 - the model failed to load: say so, go on with the next
                print(f"  {name} on {dev}: {type(e).__name__}: {e}"[:400])
                rc = 1
        print("\n".join(table(name, by_dev)), flush=True)
    if out:
        out.close()
        print(f"rows appended to {a.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
