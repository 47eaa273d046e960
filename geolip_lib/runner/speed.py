"""How fast this box runs the cost model's kernels now, against the same box quiet: the plan's speed factor.

The cost model (:mod:`.cost_model`) predicts a job's CPU seconds at one thread, fitted to jobs measured on the
2-core development machine. On a shared box the wall time is longer: at load 8-15 the plans were 4-11x low.
:func:`current_speed` runs about :data:`CALIBRATION_S` of the kernels the cost model's terms stand for (a
float32 matmul: the sample matrices and forward passes; ``eigvalsh``: the Gram / eigen work of the spectra;
element-wise work over a vector: loading, init, norms), with the kernel's thread count
(:func:`.resources.kernel_threads`), and counts the rounds it got done. The speed factor is the reference's
rounds per second (``timings/speed-reference.json``: the same calibration on this box, quiet) over today's:
under load the calibration shares the cores with everything else, exactly as a job will. The plan multiplies
every CPU job's estimate (and range) by it, and says so in its header (:func:`header_lines`).

Kept for :data:`TTL_S` in ``.cache/plan-speed.json`` (one small file, read at most :data:`CACHE_BYTES`); a cache
that is unreadable, from another thread count or reference, in the future, or out of range is ignored and
rewritten, never trusted. A plan for another box (``--gpus`` / ``--host-memory`` / ``--disk``) is not scaled:
this machine's load says nothing about it.

The report (``report.build``: an HTML page per executed notebook, ``index.html``, then ``report.pdf`` through
headless Chromium) is on the plan too: :func:`report_seconds`, the fixed cost and cost per job measured on the
tiny profile's output (the reference file's ``report`` entry), its CPU part scaled by the same factor.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from ..lazy import lazy
from ..paths import ROOT, cache_root
from ..results import atomic_write_text
from .cost_model import TIMINGS_DIR
from .model_sizes import PlanError
from .resources import kernel_threads

np = lazy("numpy")
_threadpoolctl = lazy("threadpoolctl")

REFERENCE_FILE = TIMINGS_DIR / "speed-reference.json"
CACHE_NAME = "plan-speed.json"
TTL_S = 300.0  # a calibration is reused this long (the load of a shared box changes over minutes)
CACHE_BYTES = 4096  # the cache file is one small JSON object; a larger file is not read
CALIBRATION_S = 1.0
FACTOR_RANGE = (0.01, 1000.0)  # a factor outside it is a broken measurement or cache, not a speed
MATMUL_N, EIG_N, ELEMENTWISE_N = 256, 128, 1 << 17  # one round: ~10 ms on the development machine, quiet


class CalibrationFailed(PlanError):
    """The calibration's processes did not give a rate (the plan then keeps the quiet speed, said so)."""


@dataclass(frozen=True)
class Speed:
    """One calibration: how much slower than quiet this box runs the kernels now."""

    factor: float  # the reference's rounds per second / today's (>= 1: slower than quiet)
    rate: float  # rounds per second now
    reference: float  # rounds per second quiet (the reference file)
    threads: int  # the kernel's thread count it ran with
    parallel: int  # the jobs at once it stood for: as many calibrations ran side by side
    load: float  # 1-minute load average when it ran
    cores: int
    at: float  # time.time() when it ran
    reference_threads: int  # the thread count the reference was measured with

    @property
    def age(self) -> float:
        return max(0.0, time.time() - self.at)


def _round(a, b, v) -> float:
    """One round of the calibration: a float32 matmul, an eigvalsh, element-wise work over a vector."""
    c = a @ b
    w = np.linalg.eigvalsh(c[:EIG_N, :EIG_N] + c[:EIG_N, :EIG_N].T)
    return float(w[-1]) + float(np.abs(np.tanh(v * 0.5) - v).sum())


def calibrate(threads: Optional[int] = None, seconds: float = CALIBRATION_S) -> tuple[float, int]:
    """(rounds per second, threads): the calibration's kernels run for about ``seconds`` of wall time with the
    BLAS pool limited to ``threads`` (default: the kernel's, :func:`.resources.kernel_threads`)."""
    threads = int(threads or kernel_threads())
    rng = np.random.default_rng(0)
    a = rng.standard_normal((MATMUL_N, MATMUL_N)).astype(np.float32)
    b = rng.standard_normal((MATMUL_N, MATMUL_N)).astype(np.float32)
    v = rng.standard_normal(ELEMENTWISE_N).astype(np.float32)
    with _threadpoolctl.threadpool_limits(limits=threads):
        _round(a, b, v)  # warm: the BLAS pool, the pages
        n, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < seconds:
            _round(a, b, v)
            n += 1
    return n / elapsed, threads


def calibrate_as_jobs(threads: int, parallel: int = 1, seconds: float = CALIBRATION_S) -> float:
    """Rounds per second of one of ``parallel`` calibrations run side by side, each in a session of its own as a
    job's kernel runs apart from the plan's process (where the kernel groups a session's processes for its
    scheduler, ``sched_autogroup``, work in other sessions shares the cores by session): the mean of their rates."""
    cmd = [sys.executable, "-m", "geolip_lib.runner.speed", "--child", str(threads), str(seconds)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    procs, rates = [], []
    try:
        procs = [subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True) for _ in range(max(1, parallel))]
        for p in procs:
            out, _ = p.communicate(timeout=120 + 60 * seconds)
            rates.append(float(json.loads(out.strip().splitlines()[-1])))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError, TypeError) as exc:
        raise CalibrationFailed(f"the plan's speed calibration failed ({type(exc).__name__}: {str(exc)[:200]}); "
                        f"run it alone to see why: {' '.join(cmd[1:])}") from None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if not all(math.isfinite(r) and r > 0 for r in rates):
        raise CalibrationFailed(f"the plan's speed calibration gave no rate ({rates}); run it alone: "
                                f"{' '.join(cmd[1:])}")
    return sum(rates) / len(rates)


def load_reference(path: Path = REFERENCE_FILE) -> dict:
    """The reference file, checked: one :class:`PlanError` line naming what is wrong."""
    where = f"timings/{Path(path).name}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        rates = data["calibration"]["rounds_per_s"]
        rates = {int(k): float(v) for k, v in rates.items()}
        report = {k: float(data["report"][k]) for k in ("fixed_s", "per_job_s", "pdf_s")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PlanError(f"{where}: not a speed reference ({type(exc).__name__}: {exc}); restore it from git or "
                        "remeasure it quiet: .venv/bin/python -m geolip_lib.runner.speed --reference") from None
    bad = [x for x in list(rates.values()) + list(report.values()) if not (math.isfinite(x) and x >= 0)]
    if not rates or bad or min(rates.values()) <= 0:
        raise PlanError(f"{where}: rounds_per_s and the report's seconds must be finite numbers > 0")
    return {"rounds_per_s": rates, "report": report}


def _reference_for(threads: int, ref: dict) -> tuple[float, int]:
    rates = ref["rounds_per_s"]
    t = threads if threads in rates else min(rates, key=lambda k: abs(k - threads))
    return rates[t], t


def _from_cache(path: Path, threads: int, parallel: int, reference: float) -> Optional[Speed]:
    """The cached calibration when it is fresh and sound, else None (never trusted otherwise)."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > CACHE_BYTES:
            return None
        s = Speed(**json.loads(path.read_text(encoding="utf-8")))
        nums = (s.factor, s.rate, s.reference, s.load, s.at)
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in nums):
            return None
    except (OSError, ValueError, TypeError):
        return None
    age = time.time() - s.at
    if (s.threads != threads or s.parallel != parallel or s.reference != reference or not 0 <= age <= TTL_S
            or not FACTOR_RANGE[0] <= s.factor <= FACTOR_RANGE[1]
            or not math.isclose(s.factor, s.reference / s.rate if s.rate > 0 else -1, rel_tol=1e-6)):
        return None
    return s


def current_speed(threads: Optional[int] = None, parallel: int = 1, use_cache: bool = True,
                  cache: Optional[Path] = None, reference: Optional[dict] = None) -> Speed:
    """This box's speed factor now for ``parallel`` jobs at once (module docstring): cached for :data:`TTL_S`,
    else measured (:func:`calibrate_as_jobs`) and cached."""
    threads, parallel = int(threads or kernel_threads()), max(1, int(parallel))
    ref = reference or load_reference()
    ref_rate, ref_threads = _reference_for(threads, ref)
    # one file per number side by side: a plan asks for both (its jobs side by side and those that run alone)
    name = CACHE_NAME if parallel == 1 else CACHE_NAME.replace(".json", f"-{parallel}.json")
    path = Path(cache) if cache else cache_root() / name
    if use_cache and (hit := _from_cache(path, threads, parallel, ref_rate)) is not None:
        return hit
    rate = calibrate_as_jobs(threads, parallel)
    factor = min(max(ref_rate / rate, FACTOR_RANGE[0]), FACTOR_RANGE[1])
    s = Speed(factor, ref_rate / factor, ref_rate, threads, parallel, round(os.getloadavg()[0], 2),
              os.cpu_count() or 1, time.time(), ref_threads)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(asdict(s)) + "\n")
    except OSError:  # a read-only cache: the plan still has its measurement, only not kept
        pass
    return s


def scale_rows(rows, speed: Speed, alone: Optional[Speed] = None, alone_labels: frozenset = frozenset()) -> None:
    """Every CPU job's estimate and range x the speed factor (a GPU job's device steps are not this CPU's); the
    rows of ``alone_labels`` (jobs that run alone) x ``alone``'s factor instead."""
    for r in rows:
        if r.seconds is None or r.device.startswith("cuda"):
            continue
        f = (alone if alone_labels and r.label in alone_labels else speed).factor
        r.seconds *= f
        if r.span:
            r.span = (r.span[0] * f, r.span[1] * f)


def report_seconds(n_jobs: int, pdf: bool = True, factor: float = 1.0, ref: Optional[dict] = None) -> float:
    """The report's build time (``report.build``) for ``n_jobs`` jobs: (fixed + per job) x ``factor`` (its CPU
    work) + the PDF (Chromium printing: wall time, most of it waiting on MathJax's time budget, not scaled)."""
    r = (ref or load_reference())["report"]
    return factor * (r["fixed_s"] + r["per_job_s"] * n_jobs) + (r["pdf_s"] if pdf else 0.0)


def apply_speed(plan, pdf: bool = True, speed: Optional[Speed] = None) -> None:
    """``run_all.py --plan``: this box's speed factor on every CPU job's estimate, and the report's build time
    (scaled the same way); a plan for another box (its ``target``) keeps the quiet speed."""
    factor, ref = 1.0, load_reference()  # a broken reference file: one line (exit 2)
    if not plan.target:
        try:
            plan.speed = speed or current_speed(parallel=plan.parallel, reference=ref)
        except CalibrationFailed as exc:  # not the user's input: the plan goes on at the quiet speed, said so
            print(f"warning: {exc}; the plan's CPU times are at the quiet speed", file=sys.stderr)
        else:
            # a job whose memory peak leaves no room beside it runs alone: it shares the cores with no job of its
            # own run, so it is scaled by a calibration run alone, not by two side by side
            alone = frozenset(plan.memory_alone()) if getattr(plan, "parallel", 1) > 1 else frozenset()
            plan.speed_alone = current_speed(parallel=1, reference=ref) if alone else None
            scale_rows(plan.rows, plan.speed, plan.speed_alone, alone)
            factor = plan.speed.factor
    plan.report_s = report_seconds(len(plan.rows), pdf, factor, ref)


def header_lines(speed: Optional[Speed], target: bool = False, alone: Optional[Speed] = None) -> list[str]:
    """The plan's first lines: the speed factor it scaled the CPU estimates by, and the load it was measured at;
    ``alone``: the factor of the jobs that run alone (one calibration, not ``speed.parallel`` side by side)."""
    if target:
        return ["speed: CPU estimates at the development machine's quiet speed (a target box: this machine's "
                "load says nothing about it)"]
    if speed is None:
        return []
    ref = "" if speed.reference_threads == speed.threads else \
        f" (reference measured at {speed.reference_threads} thread(s))"
    when = f"measured {speed.age:.0f} s ago" if speed.age >= 1 else "measured now"
    return [f"speed: this box runs the cost model's kernels {speed.factor:.2f}x slower than quiet ({when}: "
            f"{CALIBRATION_S:g} s of matmul, eigvalsh and element-wise work at {speed.threads} thread(s){ref}, "
            f"{speed.parallel} at once as the jobs run; "
            f"load {speed.load:.1f} on {speed.cores} cores); CPU job times below are x {speed.factor:.2f}"] + \
        ([f"    except the jobs that run alone (no other job fits beside them): x {alone.factor:.2f}, one "
          "calibration alone"] if alone is not None and speed.parallel > 1 else [])


def main(argv=None) -> int:
    """``--reference``: measure the calibration quiet and write it into the reference file (its report entry
    kept); without it, print today's factor."""
    ap = argparse.ArgumentParser(prog="python -m geolip_lib.runner.speed")
    ap.add_argument("--reference", action="store_true", help="write today's rates as the quiet reference")
    ap.add_argument("--child", nargs=2, metavar=("THREADS", "SECONDS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:  # one calibration of calibrate_as_jobs: its rate, one JSON number
        print(json.dumps(calibrate(int(a.child[0]), float(a.child[1]))[0]))
        return 0
    if not a.reference:
        s = current_speed(use_cache=False)
        print("\n".join(header_lines(s)))
        return 0
    data = json.loads(REFERENCE_FILE.read_text(encoding="utf-8")) if REFERENCE_FILE.is_file() else {}
    rates = {}
    for t in sorted({1, 2, kernel_threads()}):
        rates[str(t)] = round(max(calibrate_as_jobs(t, 1, 2.0) for _ in range(3)), 2)  # the best of three
    data["calibration"] = dict(rounds_per_s=rates, load_1m=round(os.getloadavg()[0], 2),
                               date=time.strftime("%Y-%m-%d"))
    atomic_write_text(REFERENCE_FILE, json.dumps(data, indent=1) + "\n")
    print(f"{rates} -> {REFERENCE_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
