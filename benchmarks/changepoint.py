#!/usr/bin/env python
"""geolip_lib.metrics.changepoint.locate: search speed and agreement, cost, and calibration.

    .venv/bin/python benchmarks/changepoint.py                  # all three parts
    .venv/bin/python benchmarks/changepoint.py --quick          # fewer repetitions
    .venv/bin/python benchmarks/changepoint.py --reps 100       # the calibration of the docstring

1. Search. Peer: the textbook brute force, one ``np.linalg.lstsq`` of ``[1, x, (x - tau)_+]``
   per breakpoint on a fine grid of ``tau`` (20001 values between the searched grid points),
   for ``--curves`` noisy hinge curves. Ours: the batched exact search (grid-point kinks plus
   Hudson's in-gap kinks, one matrix product per batch). Reports curves/s for both, the
   ratio, and the agreement: our least-squares RSS minus the brute force's (must be <= 0 up
   to rounding: the exact search cannot lose to a grid) and the largest breakpoint difference.
2. Cost of one ``locate`` call (n_boot = 1000) by grid size and number of seeds, for the
   default null (line) and ``null="quadratic"``.
3. Calibration: false positives on a straight line (and on a parabola with
   ``null="quadratic"``), detection of a hinge at 0.29, and coverage of 0.29 by the
   breakpoint interval, for 1, 3, 5 and 8 seeds, with errors independent along x or smooth
   per-seed curves (Gaussian process, length 0.1, plus white noise).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from geolip_lib.metrics import changepoint  # noqa: E402
from geolip_lib.metrics.changepoint import _Search  # noqa: E402

X = np.linspace(0.0, 0.6, 31)


def brute_force(x: np.ndarray, y: np.ndarray, n_tau: int = 20001) -> tuple[float, float]:
    """Least-squares hinge by scanning ``n_tau`` kinks, one lstsq each (the peer)."""
    best = (np.inf, np.nan)
    for t in np.linspace(x[1], x[-2], n_tau):
        D = np.column_stack([np.ones_like(x), x, np.maximum(x - t, 0.0)])
        res = np.linalg.lstsq(D, y, rcond=None)[1]
        rss = float(res[0]) if res.size else float(((y - D @ np.linalg.lstsq(D, y, rcond=None)[0]) ** 2).sum())
        if rss < best[0]:
            best = (rss, t)
    return best


def part_search(n_curves: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    Y = 0.5 + 2 * np.maximum(X - 0.29, 0) + rng.normal(0, 0.05, (n_curves, len(X)))
    t0 = time.perf_counter()
    peer = [brute_force(X, y) for y in Y]
    t_peer = time.perf_counter() - t0
    search = _Search(X, np.ones_like(X), "segmented", "line", 2)
    t0 = time.perf_counter()
    for _ in range(20):
        ours = search.scan(Y)
    t_ours = (time.perf_counter() - t0) / 20
    d_rss = ours["rss1"] - np.array([p[0] for p in peer])
    d_tau = np.abs(ours["tau"] - np.array([p[1] for p in peer]))
    print(f"1. search, {n_curves} hinge curves on {len(X)} points")
    print(f"   brute force (20001 lstsq per curve): {n_curves / t_peer:10.1f} curves/s")
    print(f"   batched exact search:                {n_curves / t_ours:10.1f} curves/s   "
          f"({t_peer / t_ours:.0f}x)")
    print(f"   RSS ours - brute force: max {d_rss.max():.2e} (<= 0 up to rounding), "
          f"largest breakpoint difference {d_tau.max():.2e}")


def part_cost(quick: bool) -> None:
    print("2. one locate call, n_boot = 1000 (seconds, best of 3)")
    rng = np.random.default_rng(1)
    for m in ([31, 121] if quick else [31, 61, 121, 241]):
        x = np.linspace(0, 0.6, m)
        for n in (1, 5, 10):
            Y = 0.5 + 2 * np.maximum(x - 0.29, 0) + rng.normal(0, 0.05, (n, m))
            row = []
            for null in ("line", "quadratic"):
                best = np.inf
                for r in range(3):
                    t0 = time.perf_counter()
                    changepoint.locate(x, Y, null=null, seed=r)
                    best = min(best, time.perf_counter() - t0)
                row.append(f"{null} {best:6.3f}")
            print(f"   {m:4d} grid points, {n:2d} seed(s): " + ", ".join(row))


def _gp(rng: np.random.Generator, n: int, length: float) -> np.ndarray:
    K = np.exp(-0.5 * ((X[:, None] - X[None]) / length) ** 2) + 1e-8 * np.eye(len(X))
    return (np.linalg.cholesky(K) @ rng.normal(size=(len(X), n))).T


def part_calibration(reps: int, n_boot: int) -> None:
    print(f"3. calibration, {reps} repetitions, n_boot {n_boot} (nominal: 5 % false positives, 95 % coverage)")
    line, hinge = 0.3 + 1.5 * X, 0.5 + 2 * np.maximum(X - 0.29, 0)
    quad = 0.2 + 0.3 * X - 1.2 * X ** 2
    kink = quad + 1.5 * np.maximum(X - 0.29, 0)
    for noise in ("independent", "smooth"):
        for n in (1, 3, 5, 8):
            rng = np.random.default_rng(n)
            c = dict.fromkeys(["fp line", "found", "covers", "fp quad", "found q", "covers q"], 0)
            for r in range(reps):
                E = (rng.normal(0, 0.05, (n, len(X))) if noise == "independent"
                     else 0.03 * _gp(rng, n, 0.1) + rng.normal(0, 0.02, (n, len(X))))
                c["fp line"] += changepoint.locate(X, line + E, n_boot=n_boot, seed=r)["found"]
                o = changepoint.locate(X, hinge + E, n_boot=n_boot, seed=r)
                c["found"] += o["found"]
                c["covers"] += o["fit"]["breakpoint_interval"].contains(0.29)
                c["fp quad"] += changepoint.locate(X, quad + E, n_boot=n_boot, seed=r, null="quadratic")["found"]
                o = changepoint.locate(X, kink + E, n_boot=n_boot, seed=r, null="quadratic")
                c["found q"] += o["found"]
                c["covers q"] += o["fit"]["breakpoint_interval"].contains(0.29)
            print(f"   {noise:11s} {n} seed(s): " + ", ".join(f"{k} {v / reps:4.2f}" for k, v in c.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer curves and repetitions")
    ap.add_argument("--curves", type=int, default=None, help="curves for part 1")
    ap.add_argument("--reps", type=int, default=None, help="repetitions for part 3")
    ap.add_argument("--n-boot", type=int, default=200, help="resamples per call in part 3")
    ap.add_argument("--parts", default="123", help="which parts to run, e.g. 12")
    a = ap.parse_args()
    if "1" in a.parts:
        part_search(a.curves or (5 if a.quick else 20))
    if "2" in a.parts:
        part_cost(a.quick)
    if "3" in a.parts:
        part_calibration(a.reps or (10 if a.quick else 100), a.n_boot)


if __name__ == "__main__":
    main()
