#!/usr/bin/env python
"""Batched pentachoron CV (geolip_lib.metrics) vs the seed's per-simplex Python loop.

    .venv/bin/python benchmarks/pentachoron.py            # MiniLM embedding, 200k simplices
    .venv/bin/python benchmarks/pentachoron.py --quick    # 50k / 1k simplices
    .venv/bin/python benchmarks/pentachoron.py --data gaussian --dim 384

Peer: the seed's code (seed 001 §1 / §13a): for each simplex, ``rng.choice(V, 5,
replace=False)``, a bordered 6 x 6 Cayley–Menger matrix filled pair by pair in Python and
``np.linalg.det``. It is timed twice: as the seed runs it (sampling inside the loop) and on
exactly the simplices the batched code drew (volume computation only), which also gives the
agreement (max relative difference of volumes; the loop runs on float64 copies of the rows).
Throughputs are the best of ``--repeats`` runs. Goal: >= 400k simplices/s, >= 40x the loop,
agreement <= 1e-6.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from geolip_lib import metrics as M  # noqa: E402


def seed_cm_volume_sq(points: np.ndarray) -> float:
    """The seed's ``cayley_menger_volume_sq`` (bordered CM determinant, pair loop)."""
    n = len(points)
    D = np.zeros((n + 1, n + 1))
    D[0, 1:] = 1
    D[1:, 0] = 1
    for i in range(n):
        for j in range(i + 1, n):
            d_sq = np.sum((points[i] - points[j]) ** 2)
            D[i + 1, j + 1] = d_sq
            D[j + 1, i + 1] = d_sq
    k = n - 1
    return (-1) ** (k + 1) * np.linalg.det(D) / ((2 ** k) * math.factorial(k) ** 2)


def seed_loop(E: np.ndarray, n: int, seed: int) -> np.ndarray:
    """The seed's loop as written: sample inside the loop, keep positive volumes."""
    rng = np.random.default_rng(seed)
    vols = []
    for _ in range(n):
        idx = rng.choice(E.shape[0], size=5, replace=False)
        v = seed_cm_volume_sq(E[idx])
        if v > 0:
            vols.append(np.sqrt(v))
    return np.array(vols)


def load_data(kind: str, dim: int, seed: int) -> tuple[np.ndarray, str]:
    if kind == "minilm":
        try:
            from geolip_lib import models
            E = models.load("all-minilm-l6-v2").input_embeddings().numpy()
            return E, "all-MiniLM-L6-v2 token embedding"
        except Exception as exc:  # noqa: BLE001 - fall back, and say so
            print(f"(MiniLM unavailable: {exc}; using a Gaussian matrix)")
    E = np.random.default_rng(seed).standard_normal((30522, dim)).astype(np.float32)
    return E, f"Gaussian 30522 x {dim} float32"


def best_time(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["minilm", "gaussian"], default="minilm")
    ap.add_argument("--dim", type=int, default=384, help="columns of the Gaussian data")
    ap.add_argument("--n-batched", type=int, default=200_000, help="simplices for the batched code")
    ap.add_argument("--n-loop", type=int, default=5_000, help="simplices for the loops")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="50k batched / 1k loop simplices")
    a = ap.parse_args(argv)
    if a.quick:
        a.n_batched, a.n_loop = 50_000, 1_000
    E, label = load_data(a.data, a.dim, a.seed)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"data: {label}, shape {E.shape} {E.dtype}; machine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f}, torch threads {torch.get_num_threads()}")

    t_b, res = best_time(lambda: M.pentachoron_cv(E, a.n_batched, seed=a.seed), a.repeats)
    thr_b = a.n_batched / t_b

    t_seed, seed_vols = best_time(lambda: seed_loop(E, a.n_loop, a.seed), 1)
    thr_seed = a.n_loop / t_seed

    sub = res.indices[: a.n_loop]
    E64 = E.astype(np.float64)
    t_same, ref = best_time(lambda: np.array([seed_cm_volume_sq(E64[i]) for i in sub]), 1)
    thr_same = a.n_loop / t_same
    ours_sq = M.cayley_menger_volume_sq(E[sub])  # identical to pentachoron_cv's volumes
    ours = np.sqrt(np.clip(ours_sq, 0, None))
    ref_v = np.sqrt(np.clip(ref, 0, None))
    ok = ref_v > 0
    max_rel = float(np.max(np.abs(ours[ok] - ref_v[ok]) / ref_v[ok]))
    kept = res.volumes[: int(res.valid[: a.n_loop].sum())]
    cv_vs_direct = float(np.max(np.abs(ours[res.valid[: a.n_loop]] - kept) / kept))

    print()
    print(f"{'implementation':46s} {'simplices':>10s} {'seconds':>9s} {'simplices/s':>12s}")
    print(f"{'batched geolip metrics.pentachoron_cv':46s} {a.n_batched:>10,d} {t_b:9.3f} {thr_b:12,.0f}")
    print(f"{'seed loop (sampling + CM det per simplex)':46s} {a.n_loop:>10,d} {t_seed:9.3f} {thr_seed:12,.0f}")
    print(f"{'seed CM det loop on the same simplices':46s} {a.n_loop:>10,d} {t_same:9.3f} {thr_same:12,.0f}")
    print()
    print(f"speed-up vs the seed loop:                 {thr_b / thr_seed:8.1f}x")
    print(f"speed-up vs the CM loop on same simplices: {thr_b / thr_same:8.1f}x")
    print(f"max relative volume difference (same simplices, n={int(ok.sum())}): {max_rel:.3e}")
    print(f"batched CV = {res.cv:.6f} (n_valid {res.n_valid}/{res.n_sampled}); "
          f"seed-loop CV = {seed_vols.std() / seed_vols.mean():.6f} (its own {len(seed_vols)} draws)")
    print(f"pentachoron_cv volumes vs cayley_menger_volume on those simplices: max rel diff {cv_vs_direct:.1e}")
    goals = {"throughput >= 400k/s": thr_b >= 4e5, ">= 40x the seed loop": thr_b / thr_seed >= 40,
             "agreement <= 1e-6": max_rel <= 1e-6}
    print("goals: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in goals.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
