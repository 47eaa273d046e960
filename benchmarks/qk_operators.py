#!/usr/bin/env python
"""Benchmark: factored QK operators vs dense materialization, on a Qwen3-4B-shaped model.

Random weights shaped like Qwen3-4B's attention (hidden 2560, head_dim 128, 32 query heads,
8 kv heads, 36 layers; scaled 1/sqrt(hidden)). Two comparisons on the SAME weights:

1. All nonzero eigenvalues of every head's symmetric part S = (g + gᵀ)/2:
   dense   = materialize g = W_Q^hᵀ W_K^h (2560 × 2560) and run eigvalsh, per layer-head;
   factored = geolip_lib.operators.sym_eig (2·head_dim problem: Gram + Cholesky, float64).
   The dense side is timed on a few layer-heads and EXTRAPOLATED to all 36 × 32 (it would
   take tens of minutes here); the agreement is measured on those heads against a float64
   dense reference (max |Δλ| / max |λ|).
2. The layer-pair gram[L, L', h] = ⟨g_L^h, g_L'^h⟩_F:
   materialized = build every g_L^h, flatten, one (L × hidden²) Gram per head;
   factored     = geolip_lib.operators.layer_gram (syrk of the stacked head factors).
   Both are timed on one kv-head group (4 query heads sharing a kv head) and extrapolated
   ×8 groups, with their agreement on that group.

Both sides run single-threaded (torch and BLAS) so that the comparison is fair and stable
on a shared CPU; pass --threads N to change that. Times are process CPU seconds (with one
thread, the work done; robust when other jobs load the machine), wall seconds beside them.

    .venv/bin/python benchmarks/qk_operators.py            # 36 layers (about 2-4 min here)
    .venv/bin/python benchmarks/qk_operators.py --quick    # 6 layers
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from geolip_lib import operators as op  # noqa: E402


class Timer:
    """Accumulates process CPU time and wall time."""

    def __init__(self):
        self.cpu = self.wall = 0.0

    def __enter__(self):
        self._c, self._w = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.cpu += time.process_time() - self._c
        self.wall += time.perf_counter() - self._w


def make_weights(n_layers, hidden, head_dim, n_heads, n_kv_heads, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = hidden ** -0.5
    Wq = torch.randn(n_layers, n_heads * head_dim, hidden, generator=g) * s
    Wk = torch.randn(n_layers, n_kv_heads * head_dim, hidden, generator=g) * s
    return Wq, Wk


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="6 layers instead of 36")
    ap.add_argument("--layers", type=int, default=None, help="number of layers (default 36, quick 6)")
    ap.add_argument("--dense-heads", type=int, default=3, help="layer-heads timed densely (then extrapolated)")
    ap.add_argument("--threads", type=int, default=1, help="torch / BLAS threads for both sides")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    limiter = threadpool_limits(args.threads)
    hidden, d, H, Hk = 2560, 128, 32, 8
    L = args.layers or (6 if args.quick else 36)
    print(f"Qwen3-4B-shaped random QK weights: layers={L}, hidden={hidden}, head_dim={d}, "
          f"heads={H}, kv_heads={Hk}; threads={args.threads}")
    Wq, Wk = make_weights(L, hidden, d, H, Hk)
    n_total = L * H

    # ---------------------------------------------------------------- eigenvalues
    tf = Timer()
    with tf:
        ev = torch.stack([op.sym_eig(Wq[i], Wk[i], H, Hk)[0] for i in range(L)])      # (L, H, 2d)
    tfd = Timer()
    with tfd:
        for i in range(L):
            op.sym_eig(Wq[i], Wk[i], H, Hk, top_k=8)

    picks = [(0, 0), (L // 2, H // 2 + 1), (L - 1, H - 1), (1 % L, 5), (L // 3, 17)][:args.dense_heads]
    t64, t32 = Timer(), Timer()
    worst = worst32 = 0.0
    for (l, h) in picks:
        kv = h // (H // Hk)
        Q, K = Wq[l, h * d:(h + 1) * d], Wk[l, kv * d:(kv + 1) * d]
        with t64:
            g = Q.double().T @ K.double()
            lam = torch.linalg.eigvalsh(0.5 * (g + g.T))
        del g
        with t32:
            g32 = Q.T @ K
            lam32 = torch.linalg.eigvalsh(0.5 * (g32 + g32.T))
        del g32
        ref = lam[lam.abs().argsort(descending=True)][:2 * d]
        r32 = lam32.double()[lam32.abs().argsort(descending=True)][:2 * d]
        worst = max(worst, float((ev[l, h] - ref).abs().max() / ref.abs().max()))
        worst32 = max(worst32, float((r32 - ref).abs().max() / ref.abs().max()))
    k = len(picks)
    dense64, dense32 = t64.cpu / k * n_total, t32.cpu / k * n_total
    print("\n== all 2·head_dim nonzero eigenvalues of S for every layer-head (CPU s; wall s in brackets) ==")
    print(f"dense float64 (materialize + eigvalsh): {t64.cpu / k:.3f} s/head x {n_total} = {dense64:8.1f} s "
          f"[wall {t64.wall / k * n_total:.1f}]  (extrapolated from {k} heads)")
    print(f"dense float32 (materialize + eigvalsh): {t32.cpu / k:.3f} s/head x {n_total} = {dense32:8.1f} s "
          f"[wall {t32.wall / k * n_total:.1f}]  (extrapolated), rel. error vs float64 {worst32:.2e}")
    print(f"factored (geolip, float64):             {tf.cpu:8.2f} s [wall {tf.wall:.2f}] measured, all {n_total} heads "
          f"(+8 eigen-directions: {tfd.cpu:.2f} s)")
    print(f"speed-up vs dense float64: {dense64 / tf.cpu:7.1f}x   vs dense float32: {dense32 / tf.cpu:7.1f}x   "
          f"(goal >= 40x; wall-clock ratio vs float64 {t64.wall / k * n_total / tf.wall:.1f}x)")
    print(f"agreement with float64 dense reference: max |dλ| / max |λ| = {worst:.2e}  (goal <= 1e-6)")

    # ---------------------------------------------------------------- layer gram
    group = H // Hk
    Wq_g, Wk_g = Wq[:, :group * d], Wk[:, :d]          # query heads 0..group-1 share kv head 0
    tgf, tgd = Timer(), Timer()
    with tgf:
        gram_f = op.layer_gram(Wq_g, Wk_g, group, 1)
    gram_d = torch.empty(L, L, group, dtype=torch.float64)
    with tgd:
        Kd = Wk_g.double()
        for h in range(group):
            G = Wq_g[:, h * d:(h + 1) * d].double().transpose(1, 2) @ Kd          # (L, hidden, hidden)
            flat = G.reshape(L, -1)
            gram_d[:, :, h] = flat @ flat.T
            del G, flat
    agree = float((gram_f - gram_d).abs().max() / gram_d.abs().max())
    print(f"\n== layer-pair gram[L, L', h] over {L} layers (timed on one kv group of {group} heads, x{Hk} "
          f"extrapolated; CPU s, wall in brackets) ==")
    print(f"materialized (build g, flatten, Gram): {tgd.cpu:7.2f} s/group -> {tgd.cpu * Hk:8.1f} s all heads "
          f"[wall {tgd.wall * Hk:.1f}]")
    print(f"factored (geolip, syrk of factors):    {tgf.cpu:7.2f} s/group -> {tgf.cpu * Hk:8.1f} s all heads "
          f"[wall {tgf.wall * Hk:.1f}]")
    print(f"speed-up: {tgd.cpu / tgf.cpu:.2f}x (goal: no slower, >= 1x);  agreement max |d| / max = {agree:.2e}")
    # ---------------------------------------------------------------- batched paths
    t_one, t_many, t_torch = Timer(), Timer(), Timer()
    with t_one:
        one = op.measure_layers(Wq, Wk, H, Hk, top_k=8, chunk_bytes=1)      # one layer per eigen call (before)
    with t_many:
        many = op.measure_layers(Wq, Wk, H, Hk, top_k=8, chunk_bytes=1 << 30)  # layers batched (CUDA's default)
    with t_torch:
        gram_t = op.layer_gram(Wq_g, Wk_g, group, 1, method="torch")        # the CUDA path, here on the CPU
    d_ev = float((many.sym_eigs - one.sym_eigs).abs().max() / one.sym_eigs.abs().max())
    d_gt = float((gram_t - gram_f).abs().max() / gram_f.abs().max())
    print(f"\n== measure_layers (gram + norms + eigenvalues + 8 directions, all {L} layers; CPU s, wall in brackets) ==")
    print(f"one layer per eigen call: {t_one.cpu:7.2f} s [wall {t_one.wall:.2f}] | layers batched: {t_many.cpu:7.2f} s "
          f"[wall {t_many.wall:.2f}] | ratio {t_one.cpu / t_many.cpu:.2f}x | max |dλ| / max |λ| {d_ev:.1e}, "
          f"order equal: {bool(torch.equal(torch.sign(many.sym_eigs), torch.sign(one.sym_eigs)))}")
    print(f"layer_gram torch matmuls (CUDA's path) on this CPU: {t_torch.cpu:.2f} s/group vs syrk {tgf.cpu:.2f} s "
          f"(syrk kept on the CPU); agreement {d_gt:.1e}")
    limiter.unregister() if hasattr(limiter, "unregister") else None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
