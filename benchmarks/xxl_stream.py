#!/usr/bin/env python
"""The 11B case: the streamed weight battery on a T5-v1.1-XXL-shaped float16 checkpoint.

1. Writes a synthetic checkpoint with the real tensor names and shapes of google/t5-v1_1-xxl
   (d_model 4096, d_ff 10240, 64 heads x d_kv 64, 24 + 24 blocks, vocabulary 32128,
   GeGLU ``wi_0`` / ``wi_1``, relative attention bias in block 0, untied ``lm_head``),
   float16, as ``model-0000k-of-0000n.safetensors`` shards of at most ``--shard-gb`` plus
   ``model.safetensors.index.json`` and ``config.json`` (about 22.3 GB), one tensor at a
   time: the writer never holds more than one row chunk of one tensor. The files are then
   checked with the safetensors library itself (``preflight.safetensors_problems``).
2. Runs the battery in a subprocess (so that its peak RSS is its own: ``VmHWM``), limited
   to the first ``--layers N`` blocks of each stack (``run_battery(cat=...)`` with the
   catalog filtered by layer; no library change needed), in two timed parts: the tensors
   outside the blocks (embedding, LM head, final norms) and the N blocks per stack. Prints
   the time per block pair (encoder block + decoder block), the extrapolated total for
   24 + 24 blocks, and checks peak RSS <= 2 x the largest tensor as loaded + 1.5 GiB.
3. Deletes the checkpoint unless ``--keep``.

    .venv/bin/python benchmarks/xxl_stream.py --layers 2          # ~22 GB written under /tmp/xxl
    .venv/bin/python benchmarks/xxl_stream.py --dir /data/xxl --keep --layers 24
    .venv/bin/python benchmarks/xxl_stream.py --dir /data/xxl --reuse --layers 4   # skip writing
    .venv/bin/python benchmarks/xxl_stream.py --quick    # XXL widths, 1 block per stack written (~1.5 GB), 1 run

``--quick`` (what ``make bench`` runs): the checkpoint holds the XXL embedding, LM head and the first
block of each stack at their real shapes (its ``config.json`` says 1 + 1 layers), the battery runs on
that block pair and the full battery is extrapolated from it as usual.

Why the safetensors files are written by hand: the safetensors library serialises only
from tensors that are all in memory at once (``save_file`` takes a dict of tensors,
``serialize_file`` a dict of their bytes), so a 2 GB shard would need 2 GB (plus its
float32 source) in memory. The format is a fixed, documented layout (8-byte little-endian
header length, a JSON header of dtype / shape / data_offsets padded with spaces to a
multiple of 8, then the raw little-endian row-major bytes in offset order), so the
header is computed from the shapes up front and each tensor's bytes are appended row
chunk by row chunk. The written files are validated by ``safetensors.safe_open``
(``geolip_lib.models.preflight.safetensors_problems``), and one tensor is read back
through ``safe_open`` and compared with the generator's output.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.weights import peak_rss_mb  # noqa: E402 - one home for the VmHWM reader

# google/t5-v1_1-xxl config.json (its architecture fields)
XXL_CONFIG = {
    "architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "vocab_size": 32128, "d_model": 4096,
    "d_kv": 64, "d_ff": 10240, "num_layers": 24, "num_decoder_layers": 24, "num_heads": 64,
    "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128, "dropout_rate": 0.1,
    "layer_norm_epsilon": 1e-6, "initializer_factor": 1.0, "feed_forward_proj": "gated-gelu",
    "tie_word_embeddings": False, "is_encoder_decoder": True, "pad_token_id": 0, "eos_token_id": 1,
    "decoder_start_token_id": 0, "torch_dtype": "float16",
}
N_BLOCKS = XXL_CONFIG["num_layers"]
INDEX = "model.safetensors.index.json"
CHUNK_BYTES = 32 << 20  # float32 rows generated (and float16 rows written) per step


def tensor_specs() -> list[tuple[str, tuple]]:
    """(name, shape) of every tensor of the real checkpoint, in T5's state-dict order.

    Taken from transformers' own T5ForConditionalGeneration built on the meta device (no
    memory); ``encoder.embed_tokens`` / ``decoder.embed_tokens`` are views of ``shared``
    and are not stored, ``lm_head`` is stored (T5 v1.1 unties it).
    """
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = {k: v for k, v in XXL_CONFIG.items() if k not in ("architectures", "model_type", "torch_dtype")}
    with torch.device("meta"):
        model = T5ForConditionalGeneration(T5Config(**cfg))
    skip = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}
    return [(k, tuple(v.shape)) for k, v in model.state_dict().items() if k not in skip]


def _std(name: str, shape: tuple) -> float:
    """A plausible init scale: 1 for embeddings and norm scales, fan_in^-1/2 for matrices."""
    if name in ("shared.weight", "lm_head.weight") or len(shape) == 1:
        return 1.0
    return shape[-1] ** -0.5


def _rows(shape: tuple) -> tuple[int, int]:
    rows = shape[0]
    cols = 1
    for s in shape[1:]:
        cols *= s
    return rows, cols


def _fill(name: str, shape: tuple, seed: int):
    """Yield the float16 row chunks of one tensor (norm scales are ones, like T5's init)."""
    import torch

    rows, cols = _rows(shape)
    if len(shape) == 1:
        yield torch.ones(shape, dtype=torch.float16)
        return
    g = torch.Generator().manual_seed(seed)
    step = max(1, CHUNK_BYTES // (4 * cols))
    std = _std(name, shape)
    for a in range(0, rows, step):
        b = min(rows, a + step)
        yield torch.randn(b - a, cols, generator=g).mul_(std).to(torch.float16)


def shard_plan(specs: list, shard_bytes: int) -> list[list]:
    """Greedy packing of the tensors, in order, into shards of at most ``shard_bytes``."""
    shards, cur, size = [], [], 0
    for name, shape in specs:
        nb = 2 * _rows(shape)[0] * _rows(shape)[1]
        if cur and size + nb > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += nb
    if cur:
        shards.append(cur)
    return shards


def _header(shard: list) -> bytes:
    meta: dict = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape in shard:
        nb = 2 * _rows(shape)[0] * _rows(shape)[1]
        meta[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(meta, separators=(",", ":")).encode()
    return h + b" " * (-len(h) % 8)  # the format pads the header with spaces to 8-byte alignment


def write_checkpoint(d: Path, shard_bytes: int, seed: int = 0) -> dict:
    """Write the shards, the index and config.json into ``d``; returns what was written."""
    specs = tensor_specs()
    shards = shard_plan(specs, shard_bytes)
    n = len(shards)
    total = sum(2 * _rows(s)[0] * _rows(s)[1] for _, s in specs)
    weight_map, t0 = {}, time.perf_counter()
    for k, shard in enumerate(shards, 1):
        fname = f"model-{k:05d}-of-{n:05d}.safetensors"
        part = d / (fname + ".partial")
        h = _header(shard)
        with open(part, "wb") as fh:
            fh.write(len(h).to_bytes(8, "little"))
            fh.write(h)
            for name, shape in shard:
                for chunk in _fill(name, shape, seed + len(weight_map)):
                    fh.write(chunk.numpy().data)
                weight_map[name] = fname
        part.rename(d / fname)
        done = sum(2 * _rows(s)[0] * _rows(s)[1] for nm, s in specs if nm in weight_map)
        el = time.perf_counter() - t0
        print(f"  wrote {fname} ({(d / fname).stat().st_size / 2**30:.2f} GiB); {done / 2**30:.1f} of "
              f"{total / 2**30:.1f} GiB in {el:.0f} s ({done / 2**20 / max(el, 1e-9):.0f} MiB/s)", flush=True)
    (d / INDEX).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2),
                           encoding="utf-8")
    (d / "config.json").write_text(json.dumps(XXL_CONFIG, indent=2), encoding="utf-8")
    return {"n_tensors": len(specs), "n_shards": n, "bytes": total, "seconds": time.perf_counter() - t0}


def verify(d: Path, seed: int = 0) -> None:
    """Every shard opens with safetensors itself; one tensor reads back equal to the generator's output."""
    import torch
    from safetensors import safe_open

    from geolip_lib.models.preflight import safetensors_problems

    bad = safetensors_problems(d)
    if bad:
        raise SystemExit(f"error: {bad[0][0]}: {bad[0][1]} (delete {d} and write it again)")
    specs = tensor_specs()
    i = next(i for i, (nm, _) in enumerate(specs) if nm.endswith("block.0.layer.0.SelfAttention.q.weight"))
    name, shape = specs[i]
    fname = json.loads((d / INDEX).read_text(encoding="utf-8"))["weight_map"][name]
    with safe_open(str(d / fname), framework="pt") as fh:
        got = fh.get_slice(name)[0:8]
    want = next(_fill(name, shape, seed + i))[:8]
    if not torch.equal(got, want):
        raise SystemExit(f"error: {name} in {fname} does not read back as written")


def is_complete(d: Path) -> bool:
    idx = d / INDEX
    if not idx.is_file() or not (d / "config.json").is_file():
        return False
    wm = json.loads(idx.read_text(encoding="utf-8"))["weight_map"]
    return sorted(wm) == sorted(n for n, _ in tensor_specs()) and all((d / f).is_file() for f in set(wm.values()))


def _our_files(d: Path) -> list[Path]:
    return sorted(d.glob("model-*-of-*.safetensors")) + sorted(d.glob("model-*-of-*.safetensors.partial")) + \
        [p for p in (d / INDEX, d / "config.json") if p.exists()]


# ============================================================================ battery (child process)
def limited_catalog(cat, layers: int | None, part: str):
    """The catalog restricted to ``part``: "outside" (tensors of no block) or "blocks" (blocks < layers)."""
    keep = [e for e in cat.entries if (e.layer is None) == (part == "outside")
            and (part == "outside" or layers is None or e.layer < layers)]
    return dataclasses.replace(cat, entries=keep)


def child(d: str, layers: int, threads: int) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)

    from geolip_lib.families import catalog
    from geolip_lib.weights import TensorStore
    from geolip_lib.weights.battery import run_battery

    store = TensorStore(d)
    cat = catalog(store, family="t5_v1_1")
    base = peak_rss_mb()
    out = {"threads": torch.get_num_threads(), "import_rss_mb": base,
           "unclassified": [e.name for e in cat.unclassified()], "largest": max(store.names(), key=store.nbytes)}
    out["largest_bytes_stored"] = store.nbytes(out["largest"])
    # the fused engine reads every tensor with TensorStore.get's default dtype, float32
    out["largest_bytes_loaded"] = math.prod(store.shape(out["largest"])) * torch.finfo(torch.float32).bits // 8
    for part in ("outside", "blocks"):
        sub = limited_catalog(cat, layers, part)
        if not sub.entries:
            out[part] = {"seconds": 0.0, "n_tensors": 0}
            continue
        t, c = time.perf_counter(), time.process_time()
        res = run_battery(store, cat=sub, device="cpu")
        out[part] = {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c,
                     "n_tensors": len(sub.stored()),
                     "bytes": sum(store.nbytes(e.name) for e in sub.stored()),
                     "parts": {k: round(v, 2) for k, v in res.seconds.items()}, "n_svd": len(res.svd),
                     "n_qk_layers": len(res.qk["layers"]), "peak_rss_mb": peak_rss_mb()}
        del res
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def run_child(d: Path, layers: int, threads: int) -> dict:
    p = subprocess.run([sys.executable, __file__, "--child", str(d), str(layers), str(threads)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"error: the battery subprocess failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/xxl"), help="where the checkpoint goes (default /tmp/xxl)")
    ap.add_argument("--layers", type=int, default=2,
                    help=f"blocks per stack the battery runs on (1-{N_BLOCKS}; default 2, the fewest with "
                         "cross-layer cosines)")
    ap.add_argument("--shard-gb", type=float, default=2.0, help="largest shard in GiB (default 2)")
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint (default: delete it at the end)")
    ap.add_argument("--reuse", action="store_true", help="use a complete checkpoint already in --dir")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads of the battery (default 0: torch's default; on a loaded shared machine 1 "
                         "avoids the oversubscribed threads spinning)")
    ap.add_argument("--quick", action="store_true",
                    help="write only the first block of each stack (XXL shapes, ~1.5 GB) into /tmp/xxl-quick and run "
                         "the battery on it (make bench)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:  # tensor_specs and config.json read XXL_CONFIG: a checkpoint of 1 + 1 blocks at XXL widths
        XXL_CONFIG.update(num_layers=1, num_decoder_layers=1)
        args.layers = 1
        if args.dir == Path("/tmp/xxl"):
            args.dir = Path("/tmp/xxl-quick")
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    if not 1 <= args.layers <= N_BLOCKS:
        ap.error(f"--layers {args.layers}: give a number of blocks per stack from 1 to {N_BLOCKS}")
    if args.threads < 0:
        ap.error(f"--threads {args.threads}: give 0 (torch's default) or a positive number")
    if args.shard_gb < 0.3:
        ap.error(f"--shard-gb {args.shard_gb}: a shard must hold the largest tensor (0.25 GiB); give >= 0.3")
    d = args.dir.expanduser().resolve()
    specs = tensor_specs()
    total = sum(2 * _rows(s)[0] * _rows(s)[1] for _, s in specs)
    reuse = args.reuse and d.is_dir() and is_complete(d)
    if args.reuse and not reuse:
        print(f"--reuse: no complete checkpoint in {d}; writing one", file=sys.stderr)
    if not reuse:
        if d.exists() and any(p for p in d.iterdir() if p not in _our_files(d)):
            raise SystemExit(f"error: --dir {d} holds other files; give an empty or new directory")
        d.mkdir(parents=True, exist_ok=True)
        for p in _our_files(d):
            p.unlink()
        free = shutil.disk_usage(d).free
        if free < total + (1 << 30):
            raise SystemExit(f"error: {d} has {free / 2**30:.1f} GiB free; the checkpoint needs "
                             f"{total / 2**30:.1f} GiB + 1 GiB margin (free space or give --dir elsewhere)")
    try:
        import torch

        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; shared 2-core machine: "
              "times are noisy, the peak RSS is not")
        if reuse:
            print(f"reusing the checkpoint in {d}")
            w = None
        else:
            print(f"writing a T5-v1.1-XXL-shaped float16 checkpoint: {len(specs)} tensors, "
                  f"{sum(_rows(s)[0] * _rows(s)[1] for _, s in specs) / 1e9:.2f} B parameters, "
                  f"{total / 2**30:.1f} GiB, shards <= {args.shard_gb} GiB, into {d}")
            w = write_checkpoint(d, int(args.shard_gb * 2**30))
        t = time.perf_counter()
        verify(d)
        print(f"  safetensors check of every shard + read-back: {time.perf_counter() - t:.1f} s")
        load0 = os.getloadavg()[0]
        r = run_child(d, args.layers, args.threads)
        r["load"] = (load0, os.getloadavg()[0])
    finally:
        if not args.keep and not reuse:
            for p in _our_files(d):
                p.unlink()
            if d.exists() and not any(d.iterdir()):
                d.rmdir()
    L = args.layers
    per = r["blocks"]["seconds"] / L
    extrap = r["outside"]["seconds"] + per * N_BLOCKS
    per_cpu = r["blocks"]["cpu_seconds"] / L
    extrap_cpu = r["outside"]["cpu_seconds"] + per_cpu * N_BLOCKS
    loaded, stored = r["largest_bytes_loaded"], r["largest_bytes_stored"]
    goal = (2 * loaded + (3 << 29)) / 2**20
    peak = r["peak_rss_mb"]
    if w:
        print(f"written: {w['n_tensors']} tensors in {w['n_shards']} shards, {w['bytes'] / 2**30:.2f} GiB in "
              f"{w['seconds']:.0f} s ({w['bytes'] / 2**20 / w['seconds']:.0f} MiB/s)")
    if r["unclassified"]:
        print(f"  unclassified 2-D tensors: {r['unclassified']}")
    print(f"battery ({r['threads']} torch threads, CPU; 1-min load average {r['load'][0]:.1f} at start, "
          f"{r['load'][1]:.1f} at the end, on {os.cpu_count()} cores), first {L} of {N_BLOCKS} blocks per stack:")
    for part, label in (("outside", "outside the blocks (embedding, lm_head, final norms)"),
                        ("blocks", f"{L} encoder + {L} decoder blocks")):
        p = r[part]
        print(f"  {label}: {p['seconds']:.1f} s (CPU {p.get('cpu_seconds', 0):.1f} s), {p['n_tensors']} tensors, "
              f"{p.get('bytes', 0) / 2**30:.2f} GiB, {p.get('n_svd', 0)} spectra; by part (s): {p.get('parts', {})}")
    print(f"  time per block pair (encoder + decoder block): {per:.1f} s wall, {per_cpu:.1f} s CPU")
    print(f"  extrapolated full battery (outside + {N_BLOCKS} block pairs): {extrap:.0f} s = {extrap / 60:.1f} min "
          "wall, "
          f"{extrap_cpu / 60:.1f} min CPU (EXTRAPOLATED from {L} block pairs)")
    print(f"peak RSS of the battery process (VmHWM): {peak:.0f} MiB (after imports: {r['import_rss_mb']:.0f} MiB); "
          f"largest tensor {r['largest']} {stored / 2**20:.0f} MiB as stored (float16), "
          f"{loaded / 2**20:.0f} MiB as loaded (float32, TensorStore.get's default)")
    print(f"goal: peak RSS <= 2 x {loaded / 2**20:.0f} MiB + 1536 MiB = {goal:.0f} MiB: "
          f"{'OK' if peak <= goal else 'FAIL'} (checkpoint {total / 2**30:.1f} GiB)")


if __name__ == "__main__":
    main()
