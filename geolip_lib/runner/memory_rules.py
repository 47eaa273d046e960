"""What each notebook holds in memory and writes to disk: the rules the plan's rows are made of
(:func:`.estimate.estimate_job` applies them; :mod:`.plan` adds the rows up).

Rules per notebook (the one place they are written; :data:`RULES`)
-------------------------------------------------------------------
Notation: ``M`` the model's bytes in its load dtype, ``L`` its largest tensor (elements),
``P`` its parameters, ``K`` the kernel's own peak (:data:`KERNEL_HOST`). Every model job
loads its model through ``runtime.start`` (``job.lm``): Hugging Face ``from_pretrained``
materialises it on the CPU, then ``.to(device)`` (host transient ``M``); with
``device_map`` accelerate places it directly (host transient: one tensor); open_clip reads
the checkpoint into a CPU state dict and copies it into the model (transient ``2 M``).

========  =======================================================================================
notebook  what it holds at its peak (host unless "device"); what it writes
========  =======================================================================================
01        model + whole twin at <= ``TWIN_MAX_PARAMS`` (``RANDOM_INIT_BASELINE``: ``lm.random_init()``,
          needed for its embedding table; above, every null seed's table is drawn alone and no
          twin is held: ``twin_tables``) + 3 float32 tables ``L`` (embedding, Gaussian, twin's) + 3
          cosine matrices ``N_COS_SAMPLE**2`` and ``N_DIST_SAMPLE**2`` floats.
02        model (``job.lm``) + battery: the tensor read and its block, 2 float32 ``L`` (host), and on
          ``DEVICE`` 12 bytes x ``L``: the matrix in float32 and its float64 copy for the exact-SVD
          fallback of an ill-conditioned matrix (``weights.spectral.svdvals``; the Gram matrices are
          ``min(m, n)**2``, small). Measured: 02 on shapes-qwen3.5-0.8b peaked at 8.55 GB (VmHWM,
          benchmarks/README.md, then with a whole float32 twin) where this rule, with that twin,
          said 10.8 GB (random weights never take the fallback; it was 16.9 GB with the former
          4 float32 + 3 float64 ``L``); 02 on shapes-t5-small (five whole null twins, code before d06a56f) peaked at
          2.16 GB. Since d06a56f the null's tensors are generated one at a time (2 ``L``:
          ``twin_sampled``), whatever the size; before that, the twin's *weights* (``NULL_BASELINE``: a
          state dict, whole at <= 1e9 parameters, generated tensor by tensor above:
          2 tensors ``L``). Writes ``M`` to ``.cache/safetensors`` when the model has no
          safetensors directory (open_clip checkpoints, non-float32 tiny models).
03        as 02, for every model of ``MODELS`` (all stay loaded: ``job.load`` keeps them for the
          provenance), assuming 02's results are absent (conservative: it reads them when present).
04        model + whole twin (``RANDOM_INIT_BASELINE``: the twin encodes the definitions) +
          encodings ``entries x width`` float32 (trained and twin), cached in ``.cache/encodings``.
05        model + encodings (trained only; the same file as 04's for equal ``MAX_ENTRIES`` / ``SEED``).
06        model + twin's weights (``RANDOM_INIT_BASELINE``; whole at <= 1e9 parameters, and then
          written to ``.cache/safetensors`` by ``operators.measure_model``; generated on
          demand above) + the q and k weights of one attention stack in float32 (``<= P / 6``:
          2 of the ~12 width**2 per layer) + ``L``. Saves eigen-directions (``SAVE_OPERATORS``).
07        models ``MODEL`` and ``MODEL_B`` + whole twin of B (``B_RANDOM_INIT``) + 3 float32 ``L``
          of each.
16        model + whole twin at <= ``TWIN_MAX_PARAMS`` (``RANDOM_INIT_SEEDS`` forward passes); above, the
          twin runs one block at a time (``models.layered``: ``ModelInfo.twin_run_bytes``, 3 ``L``)
          + the forward's hidden states and logits (``host_l``).
17        as 16, for each model of ``MODELS`` in turn: each (with its twins) is released before the next
          loads (``one_at_a_time``), so the peak is the largest model's, not their sum; the pooled
          features (inputs x layers x width per model) are small beside it.
08-11     model + modulator and its training state (<= 2 float32 ``L``: vocabulary x ``N_GEO``
          tables and Adam's moments, ``N_GEO`` <= width).
12-15     no model: the fixed peaks of :data:`FIXED_HOST`, measured on the demo sizes.
all       + the kernel (:data:`KERNEL_HOST`) + what the notebook itself allocates beyond this table
          (:data:`NOTEBOOK_EXTRA`: measured on the demo's MiniLM jobs of 01, 02, 06; others
          :data:`DEFAULT_EXTRA`).
========  =======================================================================================

01, 02, 06 and 16 on a CPU from memory-mapped safetensors above ``TWIN_MAX_PARAMS`` (``model_sizes.mapped_load``): the
smaller of this table and the measured peak per model byte (:data:`MAPPED_PEAK`).

A GPU job's device memory: the CUDA context (:data:`CUDA_CONTEXT`, not measured: no GPU on
the machine this was written on) + what the table puts on the device (model, twin,
``DEVICE`` work). Twins are built on the model's device; generated twins on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from ..params import load_model_params
from .model_sizes import GB

# measured on this machine (Debian, 2 shared cores, CPU only): /usr/bin/time -v "Maximum resident set
# size" of one job run through run_all.execute_job (the kernel's peak), demo profile sizes
KERNEL_HOST = int(0.74 * GB)  # python + torch + transformers + geolip_lib imported: 739,540 kB
FIXED_HOST = {  # model-free notebooks: the whole job's peak
    "12_constellation_relay": int(1.06 * GB),  # 1,059,508 kB
    "13_head_dim_cv": int(1.11 * GB),  # 1,110,040 kB
    "14_triple_product_attention": int(0.94 * GB),  # 936,672 kB
    "15_seed_claims": int(0.76 * GB),  # 759,512 kB
}
# model notebooks: measured peak minus this module's estimate of the MiniLM job (bootstraps, figures,
# probes): 01 1,894,688 kB (estimate 1.12 GB), 02 1,396,852 kB (1.39 GB), 06 1,188,856 kB (0.98 GB);
# the others (not measured) get the largest excess of a model-free notebook over KERNEL_HOST (13: 0.37 GB)
NOTEBOOK_EXTRA = {"01_embedding_terrain": int(0.77 * GB), "02_weight_topology": 0, "06_qk_operators": int(0.21 * GB)}
DEFAULT_EXTRA = int(0.37 * GB)
#: host peak / the model's bytes, measured (VmHWM, benchmarks/memory.py --quick, benchmarks/README.md) on a model
#: above TWIN_MAX_PARAMS loaded on the CPU from safetensors in its load dtype: memory-mapped, the load check hands
#: the pages back, so only what the job reads is resident (Qwen2.5-Coder-1.5B, 7.11 GB float32). The table above
#: counts the model whole beside every table (16: 12.9 GB planned, 7.83 GB measured; 01: 11.5, 8.78 (10.62 while its
#: forwards' pages stayed resident and a content CV copied the table to float64); 02: 13.45,
#: 2.84: its battery reads one tensor at a time from the mapped file; 06: 12.04, 2.49); such a job is planned at
#: the smaller of the two. Measured on this one model: another model's ratio may differ (a larger share of
#: its bytes in one tensor), which the 10 % kept free (HEADROOM) and the admission's live reading absorb
MAPPED_PEAK = {"16_contextual_geometry": 1.11, "01_embedding_terrain": 1.30,  # measured 1.10, 1.24
               "02_weight_topology": 0.43, "06_qk_operators": 0.38}  # measured 0.40, 0.35 (real profile's sizes)
HEADROOM = 0.10  # memory kept free: a job is planned at <= 90 % of a GPU's or the host's memory (allocator
# fragmentation, transient copies the rules do not list); never at exactly 40.00 of 40 GB
CUDA_CONTEXT = int(0.5 * GB)  # torch's CUDA context and allocator slack per GPU (typical, not measured here)
OUTPUT_ALLOWANCE = 50_000_000  # per job directory (figures, tables, executed notebook; <= 3 MB on demo)
ALL_ENTRIES = 20_000  # WordNet entries matched when MAX_ENTRIES is None (MiniLM: 14,484; notebook 05)


@dataclass(frozen=True)
class Rule:
    """What one notebook holds and writes (see the module docstring's table)."""

    models: str  # "job" (MODEL), "list" (every name of MODELS and VISION_MODELS), "pair" (MODEL and MODEL_B), "none"
    twin: Optional[str] = None  # the notebook parameter that turns the random-init twin on
    twin_whole: bool = False  # runs the twin (forward passes; whole at <= TWIN_MAX_PARAMS, block by block above); else only its weights
    twin_tables: bool = False  # above TWIN_MAX_PARAMS only the twin's tables (01: counted in host_l), no twin
    twin_to_disk: bool = False  # the whole (<= TWIN_MAX_PARAMS) twin is written to .cache/safetensors
    twin_sampled: bool = False  # the null's tensors are generated one at a time, whatever the size (02 since d06a56f)
    reads_weights: bool = False  # reads lm.weights_dir (a copy is written when there is none)
    host_l: float = 0.0  # float32 copies of the largest tensor on the host
    device_l: float = 0.0  # bytes per element of the largest tensor on the compute device (DEVICE)
    stack_share: float = 0.0  # float32 share of the parameters held (06: q and k of one stack)
    encodings: int = 0  # entries x width float32 encodings (cached)
    one_at_a_time: bool = False  # "list": each model (and its twin) is released before the next loads (17)


RULES: dict[str, Rule] = {
    "01_embedding_terrain": Rule("job", twin="RANDOM_INIT_BASELINE", twin_whole=True, twin_tables=True, host_l=3),
    "02_weight_topology": Rule("job", twin="NULL_BASELINE", reads_weights=True, host_l=2, device_l=12,
                               twin_sampled=True),
    "03_cross_model": Rule("list", twin="", twin_whole=True, reads_weights=True, host_l=2, device_l=12),
    "04_wordnet_alignment": Rule("job", twin="RANDOM_INIT_BASELINE", twin_whole=True, encodings=2),
    "05_seed_stability": Rule("job", encodings=1),
    "06_qk_operators": Rule("job", twin="RANDOM_INIT_BASELINE", twin_to_disk=True, reads_weights=True,
                            host_l=1, stack_share=1 / 6),
    "07_cross_scale_projection": Rule("pair", twin="B_RANDOM_INIT", twin_whole=True, host_l=3),
    "08_modulator_pipeline": Rule("job", host_l=2),
    "09_modulator_training": Rule("job", host_l=2),
    "10_alpha_sweep": Rule("job", host_l=2),
    "11_field_modulator": Rule("job", host_l=2),
    "12_constellation_relay": Rule("none"),
    "13_head_dim_cv": Rule("none"),
    "14_triple_product_attention": Rule("none"),
    "15_seed_claims": Rule("none"),
    "16_contextual_geometry": Rule("job", twin="RANDOM_INIT_SEEDS", twin_whole=True, host_l=2),
    "17_representational_alignment": Rule("list", twin="RANDOM_INIT_SEEDS", twin_whole=True, host_l=2,
                                          one_at_a_time=True),
}
GENERIC_MODEL_RULE, GENERIC_RULE = Rule("job", host_l=2), Rule("none")
USES_CUDA = {"12_constellation_relay", "14_triple_product_attention"}  # non-model notebooks that pick CUDA


def _param(job, name: str, defaults: Optional[Callable[[str], Mapping]], fallback: Any) -> Any:
    if name in (job.parameters or {}):
        return job.parameters[name]
    if defaults is not None:
        d = defaults(job.notebook)
        if name in d:
            return d[name]
    return fallback


def _default_device(notebook: str, model: Optional[str], n_gpus: int) -> str:
    if model is None:
        return "cuda:0" if notebook in USES_CUDA and n_gpus else "cpu"
    p = load_model_params(model)
    want = p.gpus or 1
    if p.device_map or p.device in ("auto", "cuda"):
        if not n_gpus:
            return "cpu" if (p.device_map or p.device == "auto") else "cuda:0"
        return "cuda:" + ",".join(str(i) for i in range(want))
    return p.device


def _models_of(job, rule: Rule, defaults) -> list[str]:
    if rule.models == "job":
        return [job.model] if job.model else []
    if rule.models == "pair":
        b = _param(job, "MODEL_B", defaults, None)
        return [m for m in dict.fromkeys([job.model, b]) if m]
    if rule.models == "list":  # and the vision towers beside the language models (17's image-caption pairs)
        names = list(_param(job, "MODELS", defaults, []) or []) + list(_param(job, "VISION_MODELS", defaults, []) or [])
        return list(dict.fromkeys(names))
    return []

