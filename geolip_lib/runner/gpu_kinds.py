"""GPU kinds the plan knows (``run_all.py --plan --gpu-kind H100``): their datasheet specs, and GPU step rates for a
kind that was never measured, scaled from a measured kind's by those specs.

Specs: NVIDIA's datasheets (nvidia.com/en-us/data-center/<product>/, the PDF datasheet of each): memory (GB,
decimal, as sold), memory bandwidth (TB/s) and dense FLOPs (TFLOPS; the datasheets' tensor-core figures "with
sparsity" halved): FP32 (no tensor cores), TF32 and BF16 (tensor cores).
  H200 SXM: 141 GB HBM3e, 4.8 TB/s; FP32 67, TF32 494.5, BF16 989.5 (H200 datasheet, 2024)
  H100 SXM: 80 GB HBM3, 3.35 TB/s; FP32 67, TF32 494.5, BF16 989.5 (H100 datasheet, 2023)
  H100 PCIe: 80 GB HBM2e, 2.0 TB/s; FP32 51, TF32 378, BF16 756 (H100 datasheet, 2023)
  A100 80GB SXM: 2.039 TB/s; A100 40GB SXM: 1.555 TB/s; both FP32 19.5, TF32 156, BF16 312 (A100 datasheet, 2021)
  L40S: 48 GB GDDR6, 0.864 TB/s; FP32 91.6, TF32 183, BF16 362 (L40S datasheet, 2023)
  L4: 24 GB GDDR6, 0.3 TB/s; FP32 30.3, TF32 60, BF16 121 (L4 datasheet, 2023)
  A10: 24 GB GDDR6, 0.6 TB/s; FP32 31.2, TF32 62.5, BF16 125 (A10 datasheet, 2021)

Scaling (:func:`scaled_rows`), an ASSUMPTION said so in the plan: a step measured on kind A takes on kind B
``A's seconds x A's resource / B's resource``, the resource of the step (:data:`STEP_RESOURCE`): the forward pass is
float32 matmuls (torch's default: no TF32) -> FP32 FLOPs; the battery, the operators and the null seed are many
SVDs / eigendecompositions of one weight at a time, and a build moves every weight: memory bandwidth. Host work
(a job's fixed cost, 01's sample matrices) is not scaled. Measured rows of kind B (``benchmarks/gpu_rates.py --out``
on a box with that GPU) replace the scaled ones.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class GpuKind:
    name: str
    memory_gb: float  # as sold (decimal GB)
    bandwidth: float  # TB/s
    fp32: float  # dense TFLOPS
    tf32: float
    bf16: float
    matches: tuple  # lower-case pieces of torch.cuda.get_device_name that make a GPU this kind (all of one)


KINDS = {k.name: k for k in (
    GpuKind("H200", 141, 4.8, 67, 494.5, 989.5, (("h200",),)),
    GpuKind("H100", 80, 3.35, 67, 494.5, 989.5, (("h100", "hbm3"), ("h100", "sxm"))),
    GpuKind("H100-PCIe", 80, 2.0, 51, 378, 756, (("h100", "pcie"),)),
    GpuKind("A100", 80, 2.039, 19.5, 156, 312, (("a100", "80gb"),)),
    GpuKind("A100-40GB", 40, 1.555, 19.5, 156, 312, (("a100", "40gb"), ("a100",))),
    GpuKind("L40S", 48, 0.864, 91.6, 183, 362, (("l40s",),)),
    GpuKind("L4", 24, 0.3, 30.3, 60, 121, (("l4",),)),
    GpuKind("A10", 24, 0.6, 31.2, 62.5, 125, (("a10",),)),
)}
STEP_RESOURCE = {"load": "bandwidth", "forward": "fp32", "battery": "bandwidth", "operators": "bandwidth",
                 "null_battery_one_seed": "bandwidth"}
SCALED_WORDS = "memory bandwidth (build, battery, operators, null seed) and FP32 FLOPs (forward)"


def known() -> str:
    return ", ".join(KINDS)


def kind_named(name: str) -> Optional[GpuKind]:
    """The kind ``--gpu-kind NAME`` names (case-insensitive), None when unknown."""
    return next((k for n, k in KINDS.items() if n.lower() == str(name).strip().lower()), None)


def kind_of(gpu: str) -> Optional[GpuKind]:
    """The kind of a GPU by its torch name ("NVIDIA H100 80GB HBM3" -> H100), None when none matches."""
    low = gpu.lower().replace("-", " ")
    words = set(low.split())
    for k in KINDS.values():
        for need in k.matches:
            if all((p in words) if p in ("l4", "a10") else (p in low) for p in need):
                return k
    return None


def scaled_rows(rows: Sequence, to: GpuKind) -> list:
    """``rows`` (StepRate of one measured kind) as kind ``to`` would take them (module docstring); each row's
    ``gpu`` becomes ``to``'s name and ``scaled_from`` the measured GPU's."""
    out = []
    for r in rows:
        src = kind_of(r.gpu)
        if src is None:
            continue
        res = STEP_RESOURCE.get(r.step, "bandwidth")
        factor = getattr(src, res) / getattr(to, res)
        out.append(dataclasses.replace(r, seconds=r.seconds * factor, gpu=f"NVIDIA {to.name}", scaled_from=src.name))
    return out


def assumed_speedup(speedup: float, kind: Optional[GpuKind], measured_on: str = "H200") -> float:
    """The ASSUMED GPU speed-up of notebooks with no GPU steps (rates.yaml's, stated for the measured GPU) on
    ``kind``: x its memory bandwidth / the measured GPU's."""
    base = KINDS.get(measured_on)
    return speedup if kind is None or base is None else speedup * kind.bandwidth / base.bandwidth
