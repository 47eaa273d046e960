"""How a plan is written: sizes and durations (:func:`_gb`, :func:`_span`), the rows' sources in words
(:data:`SOURCE_WORDS`), and what would make a job fit (:func:`advise`)."""
from __future__ import annotations

import math
import re
from typing import Optional

from .memory_rules import CUDA_CONTEXT, HEADROOM
from .model_sizes import GB


def _gb(n: float) -> str:
    return f"{n / GB:.2f}"


def _duration(sec: float) -> str:
    """``40 s``, ``35 min``, ``2.1 h``."""
    if sec < 90:
        return f"{sec:.0f} s"
    if sec < 5400:
        return f"{sec / 60:.0f} min"
    return f"{sec / 3600:.1f} h"


def _span(sec: float, span: Optional[tuple]) -> str:
    """``2 min (1-4)``: the estimate and its range in the unit of the estimate's own scale."""
    if not span or span[0] == span[1]:
        return _duration(sec)
    unit, div = ("s", 1) if sec < 90 else ("min", 60) if sec < 5400 else ("h", 3600)
    fmt = (lambda x: f"{x / div:.1f}") if unit == "h" else (lambda x: f"{x / div:.0f}")
    return f"{fmt(sec)} ({fmt(span[0])}-{fmt(span[1])}) {unit}"


WIDTH = 120  # the plan's lines fit a 120-column terminal
# the rows' "from" parts, in words (model_sizes / estimate write them short, the tests read them so)
SOURCE_WORDS = [
    (r"config on meta device", "parameters counted on the model's config (built without weights)"),
    (r"file header", "parameters counted from the file's header (its tensors' shapes; nothing converted yet: the "
                     "first load converts it once and checks it against its own runtime)"),
    (r"download converted copy", "disk: the float32 folder the first load converts the file into (.cache/converted)"),
    (r"params file size_note", "parameters from its params file's size_note (no config at hand: shapes are bounded "
                               "from above)"),
    (r"download measured", "download: its files on disk, measured"),
    (r"download config x dtype", "download: parameters x bytes per parameter of the stored dtype"),
    (r"download size_note x dtype", "download: size_note's parameters x bytes per parameter"),
    (r"download size_note", "download: its params file's size_note"),
    (r"download none", None),
    (r"download stored files", "download: the real checkpoint's files as stored (stored_checkpoints.yaml, with "
                               "their source)"),
    (r"stored_checkpoints\.yaml", "parameters and shapes of the real checkpoint from stored_checkpoints.yaml (no "
                                  "config at hand)"),
    (r"memory: rule \d\d", None),  # the usual case: said once, above the notes
    (r"(memory: )?rule generic.*", "memory: no rule for this notebook (generic: its model and two float32 copies of "
                                   "its largest tensor)"),
    (r"rule \w+: the kernel's own peak", "memory: the kernel's own peak (no rule for this notebook)"),
    (r"measured on the demo sizes", "memory: measured on the demo profile's sizes"),
]


def _in_words(part: str) -> Optional[str]:
    for pattern, words in SOURCE_WORDS:
        if re.fullmatch(pattern, part):
            return words
    return part


def _count(n: int) -> str:
    if not n:
        return "-"
    for unit, s in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= unit:
            return f"{n / unit:.1f}{s}"
    return str(n)


# ============================================================================ what would make a job fit
TWIN_SWITCH = {"01_embedding_terrain": "RANDOM_INIT_BASELINE", "02_weight_topology": "NULL_BASELINE",
               "04_wordnet_alignment": "RANDOM_INIT_BASELINE", "06_qk_operators": "RANDOM_INIT_BASELINE",
               "07_cross_scale_projection": "B_RANDOM_INIT"}


def advise(r, plan) -> list[str]:
    """What would make job ``r`` fit the box of ``plan`` (a :class:`.plan.Plan`), one option a line with what it would then need and
    whether that fits: a dtype, the battery's work on the host, an offload (``device_map: auto``), more or
    fewer GPUs per job, a converted checkpoint, a smaller sample or no random-init null (last: the claims
    that read the null lose it). Arithmetic on the row's parts, not a new estimate: approximate."""
    kinds = {k for _, k in plan._job_shortfalls(r)}
    out: list[str] = []
    files = ", ".join(f"params/models/{m}.yaml" for m in r.models) or "its params file"
    parts, k = r.gpu_parts or {}, max(r.n_gpus, 1)
    f32 = parts.get("float32_model", 0) + parts.get("float32_twin", 0)
    if "gpu" in kinds:
        cap = min(plan.gpus[:k]) * (1 - HEADROOM)

        def verdict(need):
            return f"{_gb(need)} GB per GPU: " + ("fits" if need <= cap else f"still over {_gb(cap)}")

        if f32:
            out.append(f"dtype: bfloat16 in {files} (it loads float32) -> {verdict(r.gpu - f32 / 2 / k)}")
        if r.battery_on_device and parts.get("work"):
            out.append(f"DEVICE: cpu in this job's parameters (the battery's SVDs on the host, +{_gb(parts['work'])} "
                       f"GB host) -> {verdict(r.gpu - parts['work'] / k)}")
        held = parts.get("model", 0) + parts.get("twin", 0)
        if not r.offloads:
            spill = max(r.gpu - cap, 0) * k
            host = r.host + spill
            out.append(f"device_map: auto in {files} (accelerate offloads {_gb(spill)} GB to the host, slower) -> "
                       f"host peak {_gb(host)} GB: " + ("fits" if host <= plan.usable_mem else
                                                        f"over the host's {_gb(plan.usable_mem)}"))
        if len(plan.gpus) > k and held:
            n = len(plan.gpus)
            need = CUDA_CONTEXT + held / n + parts.get("work", 0)
            out.append(f"gpus: {n} in {files}{'' if r.offloads else ' with device_map: auto'} (the model spread "
                       f"over {n} GPUs) -> {verdict(need)}")
        if parts.get("twin") and r.notebook in TWIN_SWITCH:
            out.append(f"{TWIN_SWITCH[r.notebook]}: false (no random-init null: its claims lose the null) -> "
                       f"{verdict(r.gpu - parts['twin'] / k)}")
    if "gpus" in kinds:
        have = len(plan.gpus)
        if have:
            out.append(f"gpus: {have} in {files} (fewer GPUs per job) with device_map: auto: accelerate offloads to "
                       f"the host what {have} GPU(s) cannot hold")
        else:
            out.append(f"device: cpu in {files} (or plan a box with GPUs: --gpus N --gpu-memory GB)")
    if "host" in kinds:
        need = r.host / (1 - HEADROOM)
        out.append(f"a box with --host-memory {math.ceil(need / GB)} or more")

        def verdict_host(need):
            return f"host peak {_gb(need)} GB: " + ("fits" if need <= plan.usable_mem else
                                                     f"still over {_gb(plan.usable_mem)}")

        if parts.get("pickle"):
            out.append(f"convert the checkpoint to safetensors once (a load then streams tensor by tensor instead of "
                       f"reading the whole {_gb(parts['pickle'])} GB .bin) -> {verdict_host(r.host - parts['pickle'])}")
        if f32 and not r.n_gpus:
            out.append(f"dtype: bfloat16 in {files} (it loads float32) -> {verdict_host(r.host - f32 / 2)}")
        if r.notebook == "01_embedding_terrain" and not parts.get("pickle"):
            out.append("smaller samples: N_COS_SAMPLE / N_DIST_SAMPLE / PCA_ROWS in the profile (their matrices "
                       "grow with the square)")
        if r.twin and r.notebook in TWIN_SWITCH and r.notebook != "02_weight_topology":
            out.append(f"{TWIN_SWITCH[r.notebook]}: false (no whole random-init twin in memory; its claims lose "
                       f"the null)")
    return out
