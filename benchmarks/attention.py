#!/usr/bin/env python
"""Benchmark of geolip_lib.attention against the seeds' formulations.

1. HybridRelay dynamic path (seed 000) at S = 1024: our index gather
   (``topk_gather``: O(P*S*k*d) gathered values, gradient into an (B*P, S, d) buffer)
   vs THE SEED'S FORMULATION, re-written below as ``seed_dynamic_inputs`` (reference
   only, not library code): softmax over all keys, top-k gather + renormalise, and values
   gathered from a ``(B, P, S, S, d)`` expanded view whose gradient materialises a dense
   ``(B, P, S, S, d)`` buffer. Time and peak memory of forward and forward+backward, the
   ratio, and agreement of outputs and gradients.
2. TripleProductAttention vs StandardAttention (seed 003): time of one training step
   (forward, backward, Adam) of the copy-task model, the ratio, and activation memory.

Peak memory: on CUDA ``torch.cuda.max_memory_allocated``; on CPU each measurement runs in
a fresh subprocess that resets its peak resident set (``/proc/self/clear_refs``) and
reports the growth of the peak (``VmHWM``) over the resident set before the measured call.

    .venv/bin/python benchmarks/attention.py            # S = 1024
    .venv/bin/python benchmarks/attention.py --quick    # S = 512, fewer repeats
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from geolip_lib.attention import CopyModel, HybridRelay, copy_batch  # noqa: E402
from geolip_lib.attention.training import autograd_saved_bytes, time_call  # noqa: E402


# ------------------------------------------------------------------------------------------
# REFERENCE: the seed's formulation of the dynamic path (seed 000, HybridRelay.forward).
# Kept here only as the benchmark's peer; it is not part of geolip_lib.
# ------------------------------------------------------------------------------------------
def seed_dynamic_inputs(m: HybridRelay, patches: torch.Tensor) -> torch.Tensor:
    """Seed 000's dynamic path up to the dynamic MLP input, ``(B, S, P, k*d)``."""
    B, S, P, d = patches.shape
    k = m.n_dynamic
    pn = F.normalize(patches, dim=-1)
    Q = F.normalize(torch.einsum("bspd,pde->bspe", pn, m.q_proj), dim=-1)
    K = F.normalize(torch.einsum("bspd,pde->bspe", pn, m.k_proj), dim=-1)
    V = torch.einsum("bspd,pde->bspe", patches, m.v_proj)
    relevance = torch.einsum("bspd,btpd->bpst", Q, K)
    self_mask = torch.eye(S, device=patches.device, dtype=torch.bool)
    relevance = relevance.masked_fill(self_mask.unsqueeze(0).unsqueeze(0), -1e9)
    rel_weights = relevance.softmax(dim=-1)
    _, topk_idx = relevance.topk(k, dim=-1)
    topk_weights = torch.gather(rel_weights, -1, topk_idx)
    topk_weights = topk_weights / (topk_weights.sum(dim=-1, keepdim=True) + 1e-8)
    V_perm = V.permute(0, 2, 1, 3)
    topk_idx_v = topk_idx.unsqueeze(-1).expand(-1, -1, -1, -1, d)
    V_expanded = V_perm.unsqueeze(2).expand(-1, -1, S, -1, -1)  # (B, P, S, S, d)
    topk_V = torch.gather(V_expanded, 3, topk_idx_v)
    weighted_V = (topk_weights.unsqueeze(-1) * topk_V).reshape(B, P, S, k * d)
    return weighted_V.permute(0, 2, 1, 3)


def ours_dynamic_inputs(m: HybridRelay, patches: torch.Tensor) -> torch.Tensor:
    return m.dynamic_inputs(patches)[0]


IMPLS = {"ours": ours_dynamic_inputs, "seed": seed_dynamic_inputs}


def _setup(S: int, B: int, D: int, device: str, grad: bool):
    torch.manual_seed(0)
    m = HybridRelay(D, 16, 8, 8, 3, 32).to(device)
    patches = m.norm(torch.randn(B, S, D, device=device)).detach().view(B, S, D // 16, 16)
    if grad:
        patches.requires_grad_(True)
    return m, patches


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as fh:
        return int(next(ln for ln in fh if ln.startswith(key + ":")).split()[1])


def _reset_peak_rss() -> None:
    """Reset VmHWM (peak resident set) to the current RSS (Linux >= 4.0, /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def measure_child(impl: str, S: int, B: int, D: int, backward: bool, device: str) -> dict:
    """One peak-memory measurement (meant to run in a fresh process on CPU)."""
    m, patches = _setup(S, B, D, device, backward)
    fn = IMPLS[impl]

    def call():
        out = fn(m, patches)
        if backward:
            out.sum().backward()
        return out

    if device == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        call()
        torch.cuda.synchronize()
        return {"peak_bytes": torch.cuda.max_memory_allocated() - base}
    _reset_peak_rss()
    before = _status_kib("VmRSS")
    call()
    return {"peak_bytes": max(0, _status_kib("VmHWM") - before) * 1024}


def peak_memory(impl: str, S: int, B: int, D: int, backward: bool, device: str) -> int:
    if device == "cuda":
        return measure_child(impl, S, B, D, backward, device)["peak_bytes"]
    cmd = [sys.executable, __file__, "--child", impl, str(S), str(B), str(D), str(int(backward))]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())})
    return json.loads(res.stdout.strip().splitlines()[-1])["peak_bytes"]


def bench_relay(S: int, B: int, D: int, n_iter: int, device: str) -> None:
    print(f"\n== 1. HybridRelay dynamic path: B={B} S={S} D={D} (P={D // 16} patches x 16, top-8), {device}")
    # agreement of outputs and of gradients w.r.t. the patches
    m, p = _setup(S, B, D, device, True)
    up = torch.randn(B, S, D // 16, 8 * 16, device=device)
    out = {}
    for name, fn in IMPLS.items():
        p.grad = None
        y = fn(m, p)
        (y * up).sum().backward()
        out[name] = (y.detach(), p.grad.detach().clone())
    dy = (out["ours"][0] - out["seed"][0]).abs().max().item()
    dg = (out["ours"][1] - out["seed"][1]).abs().max().item()
    scale = out["seed"][1].abs().max().item()
    print(f"agreement: max |out diff| = {dy:.2e}, max |grad diff| = {dg:.2e} (grad scale {scale:.2e})")
    del out, m, p

    rows = []
    for backward in (False, True):
        m, p = _setup(S, B, D, device, backward)
        r = {"pass": "forward+backward" if backward else "forward"}
        calls = {}
        for name, fn in IMPLS.items():
            def call(fn=fn):
                if backward:
                    p.grad = None
                    fn(m, p).sum().backward()
                else:
                    with torch.no_grad():
                        fn(m, p)
            calls[name] = call
        for name, ms in alternating_ms(calls, n_iter, warmup=1, device=device).items():
            r[f"{name}_ms"] = ms
            r[f"{name}_MiB"] = peak_memory(name, S, B, D, backward, device) / 2 ** 20
        rows.append(r)
        del m, p
    print(f"{'pass':>17} | {'seed ms':>9} {'ours ms':>9} {'speedup':>8} | {'seed MiB':>9} {'ours MiB':>9} {'mem ratio':>9}")
    for r in rows:
        print(f"{r['pass']:>17} | {r['seed_ms']:9.1f} {r['ours_ms']:9.1f} {r['seed_ms'] / r['ours_ms']:7.2f}x | "
              f"{r['seed_MiB']:9.1f} {r['ours_MiB']:9.1f} {r['seed_MiB'] / max(r['ours_MiB'], 1e-9):8.2f}x")
    dense = B * (D // 16) * S * S * 16 * 4 / 2 ** 20
    print(f"(the seed's (B, P, S, S, d) float32 gradient buffer alone is {dense:.0f} MiB)")


def alternating_ms(calls: dict, n_iter: int, warmup: int = 1, device: str = "cpu") -> dict:
    """Median ms of each callable, timed in alternation so that load changes hit all alike."""
    import statistics

    for fn in calls.values():
        for _ in range(warmup):
            fn()
    times = {k: [] for k in calls}
    for _ in range(n_iter):
        for k, fn in calls.items():
            times[k].append(time_call(fn, n_iter=1, warmup=0, device=device))
    return {k: statistics.median(v) for k, v in times.items()}


def bench_triple(T: int, batch: int, d_model: int, n_head: int, n_iter: int, device: str) -> None:
    print(f"\n== 2. Copy-task training step: batch={batch} T={T} d_model={d_model} heads={n_head}, {device}")
    x, y = (t.to(device) for t in copy_batch(batch, T, 16, torch.Generator().manual_seed(0)))
    steps, saved = {}, {}
    for a in ("standard", "triple"):
        torch.manual_seed(0)
        model = CopyModel(16, d_model, n_head, a).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def loss_fn(model=model):
            return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

        def step(opt=opt, loss_fn=loss_fn):
            opt.zero_grad(set_to_none=True)
            loss_fn().backward()
            opt.step()

        steps[a] = step
        saved[a] = autograd_saved_bytes(loss_fn)[1] / 2 ** 20
    ms = alternating_ms(steps, n_iter, warmup=2, device=device)
    print(f"{'attention':>10} | {'ms/step':>9} {'saved MiB':>10}")
    for a in steps:
        print(f"{a:>10} | {ms[a]:9.2f} {saved[a]:10.2f}")
    print(f"ratio triple/standard: time {ms['triple'] / ms['standard']:.2f}x, "
          f"activation memory {saved['triple'] / saved['standard']:.2f}x")


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        impl, S, B, D, bw = sys.argv[2:7]
        print(json.dumps(measure_child(impl, int(S), int(B), int(D), bool(int(bw)), "cpu")))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="S=512 and fewer repeats")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__}, device {device}, threads {torch.get_num_threads()}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared machine: timings are noisy)")
    t0 = time.perf_counter()
    S = 512 if args.quick else 1024
    bench_relay(S=S, B=2, D=128, n_iter=2 if args.quick else 3, device=device)
    bench_triple(T=64 if args.quick else 128, batch=32, d_model=128, n_head=4, n_iter=5 if args.quick else 10,
                 device=device)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
