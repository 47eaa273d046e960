"""What one job needs (the rows of ``run_all.py --plan``; :mod:`.plan` adds them up).

For every job: the parameter count and download size of its model(s), the disk it needs
(hub snapshot, project caches, random-init twin, outputs), its peak host and GPU memory
and the device it would get; then the totals against the free disk, memory and GPUs
found. :func:`check_fit` stops a run that cannot fit with one line naming the job and
the shortfall. Jobs are duck-typed: anything with ``notebook``, ``model``, ``parameters``
and ``label`` (``geolip_lib.runner.jobs.Job``).

Where the numbers come from (each row says which, in its ``source``)
----------------------------------------------------------------------
* **config on meta device**: the model is built from its config on ``torch.device("meta")``
  (shapes, no storage; :func:`geolip_lib.models.preflight.meta_model`): exact parameter
  count (shared tensors once, an untied output table counted), the largest tensor and the
  width. Tiny models (their resolved config), open_clip names (the config shipped with
  open_clip), package / local models and hub models whose snapshot is in the Hugging Face
  cache or ``local_dir``.
* **params file size_note**: a hub model with no config at hand (not cached, offline):
  ``size_note: "11B parameters, 22 GB in float16"`` gives the count and the download. The
  shapes are then bounded: width ``<= sqrt(params / 100)`` (every transformer here has
  ``params >= 100 * width**2``), largest tensor ``<= min(0.3 * params, 248320 * 4096)``
  elements (30 %: T5-small's embedding share, the highest of the hub models; the cap is a
  Qwen3.5-size vocabulary at width 4096). Upper bounds: rows from a size_note over-estimate
  working sets, never under-estimate them.
* **measured**: files already on disk (hub snapshot, package, local directory) are summed
  (their download is then 0 new bytes); fixed costs below were measured on this machine.

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
01        model + whole twin (``RANDOM_INIT_BASELINE``: ``lm.random_init()``, needed for its
          embedding table) + 3 float32 tables ``L`` (embedding, Gaussian, twin's) + 3 cosine
          matrices ``N_COS_SAMPLE**2`` and ``N_DIST_SAMPLE**2`` floats.
02        model (``job.lm``) + battery: a block of <= 4 float32 tensors ``L`` (host) and 3 float64
          ``L`` for SVD / QK problems on ``DEVICE``; twin's *weights* (``NULL_BASELINE``: a
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
08-11     model + modulator and its training state (<= 2 float32 ``L``: vocabulary x ``N_GEO``
          tables and Adam's moments, ``N_GEO`` <= width).
12-15     no model: the fixed peaks of :data:`FIXED_HOST`, measured on the demo sizes.
all       + the kernel (:data:`KERNEL_HOST`) + what the notebook itself allocates beyond this table
          (:data:`NOTEBOOK_EXTRA`: measured on the demo's MiniLM jobs of 01, 02, 06; others
          :data:`DEFAULT_EXTRA`).
========  =======================================================================================

Time (:func:`job_seconds`; the rates are data: ``rates.yaml`` beside this module)
---------------------------------------------------------------------------------
A job's estimated time is the measured (or, where the benchmark README extrapolated, extrapolated)
time of the same notebook on the model nearest in parameters, scaled by the ratio of parameters
(notebooks that repeat another's work per model, 03, sum it per model; model-free notebooks: as
measured). The rates are CPU times at one thread per kernel. A job planned on a GPU divides its
CPU estimate by ``gpu_speedup``, an assumption stated in its row, until a GPU time is measured:
a rate with ``device: cuda`` in ``rates.yaml``, or the job's own ``job_timing.json`` in the planned
output root (a job run once on the box is estimated from its own time). A notebook without any
rate says so; the totals bound it by its ``timeout_s``.

A GPU job's device memory: the CUDA context (:data:`CUDA_CONTEXT`, not measured: no GPU on
the machine this was written on) + what the table puts on the device (model, twin,
``DEVICE`` work). Twins are built on the model's device; generated twins on the CPU.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import yaml

from ..params import load_model_params
from ..paths import ROOT, cache_root
from .execute import TIMING
from .model_sizes import GB, TWIN_MAX_PARAMS, PlanError, hf_cache_dir, model_info

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
CUDA_CONTEXT = int(0.5 * GB)  # torch's CUDA context and allocator slack per GPU (typical, not measured here)
OUTPUT_ALLOWANCE = 50_000_000  # per job directory (figures, tables, executed notebook; <= 3 MB on demo)
ALL_ENTRIES = 20_000  # WordNet entries matched when MAX_ENTRIES is None (MiniLM: 14,484; notebook 05)


@dataclass(frozen=True)
class Rule:
    """What one notebook holds and writes (see the module docstring's table)."""

    models: str  # "job" (MODEL), "list" (every name of MODELS), "pair" (MODEL and MODEL_B), "none"
    twin: Optional[str] = None  # the notebook parameter that turns the random-init twin on
    twin_whole: bool = False  # needs the whole twin (forward passes); else only its weights
    twin_to_disk: bool = False  # the whole (<= TWIN_MAX_PARAMS) twin is written to .cache/safetensors
    reads_weights: bool = False  # reads lm.weights_dir (a copy is written when there is none)
    host_l: float = 0.0  # float32 copies of the largest tensor on the host
    device_l: float = 0.0  # float64 copies of the largest tensor on the compute device (DEVICE)
    stack_share: float = 0.0  # float32 share of the parameters held (06: q and k of one stack)
    encodings: int = 0  # entries x width float32 encodings (cached)


RULES: dict[str, Rule] = {
    "01_embedding_terrain": Rule("job", twin="RANDOM_INIT_BASELINE", twin_whole=True, host_l=3),
    "02_weight_topology": Rule("job", twin="NULL_BASELINE", reads_weights=True, host_l=4, device_l=3),
    "03_cross_model": Rule("list", twin="", twin_whole=True, reads_weights=True, host_l=4, device_l=3),
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
}
GENERIC_MODEL_RULE, GENERIC_RULE = Rule("job", host_l=2), Rule("none")
USES_CUDA = {"12_constellation_relay", "14_triple_product_attention"}  # non-model notebooks that pick CUDA


# ============================================================================ time
RATES_FILE = Path(__file__).with_name("rates.yaml")


@dataclass(frozen=True)
class Rate:
    """One job time of ``rates.yaml`` (its header says where each comes from)."""

    notebook: str
    model: str
    params: int  # 0: a model-free notebook
    seconds: float
    basis: str  # "measured" | "extrapolated"
    sizes: str  # "paper" or what was reduced
    device: str = "cpu"
    clock: str = "cpu"  # "cpu": the kernel's CPU time; "wall": its wall time on a loaded machine
    note: str = ""
    family: str = ""  # the model's family (params/models/<model>.yaml)


@dataclass(frozen=True)
class Rates:
    gpu_speedup: float  # assumed, until GPU rates are measured
    per_model_as: dict  # notebook -> the notebook whose work it repeats per model of its MODELS
    rates: tuple  # Rate


@functools.lru_cache(maxsize=4)
def load_rates(path: Path = RATES_FILE) -> Rates:
    """``rates.yaml``, checked: a bad entry is one :class:`PlanError` line naming the file and the key."""
    where = Path(path).name
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PlanError(f"{where}: cannot be read ({str(exc).splitlines()[0]})") from None
    speed = raw.get("gpu_speedup")
    if not isinstance(speed, (int, float)) or isinstance(speed, bool) or speed <= 0:
        raise PlanError(f"{where}: key 'gpu_speedup': expected a number > 0, got {speed!r}")
    out = []
    for i, r in enumerate(raw.get("rates") or []):
        try:
            rate = Rate(**r)
        except TypeError as exc:
            raise PlanError(f"{where}: rates[{i}]: {exc} (keys: {', '.join(Rate.__dataclass_fields__)})") from None
        if not (isinstance(rate.seconds, (int, float)) and rate.seconds > 0 and isinstance(rate.params, int)
                and rate.params >= 0 and rate.basis in ("measured", "extrapolated")):
            raise PlanError(f"{where}: rates[{i}] ({rate.notebook} / {rate.model}): seconds > 0, params >= 0 "
                            f"and basis measured|extrapolated expected")
        out.append(rate)
    return Rates(float(speed), dict(raw.get("per_model_as") or {}), tuple(out))


def _measured_here(job, out_root: Path) -> Optional[tuple[float, str]]:
    """(seconds, device) from the job's own ``job_timing.json`` in the planned output root, if it ran there."""
    job_id = getattr(job, "job_id", None)
    if not job_id:
        return None
    try:
        t = json.loads((Path(out_root) / job.notebook / job_id / TIMING).read_text(encoding="utf-8"))
        return float(t["preflight_s"]) + float(t["kernel_start_s"]) + float(t["notebook_s"]), str(t["device"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _nearest(pool: Sequence[Rate], params: int, family: str, profile: str) -> Rate:
    """The rate at the job's profile's sizes (else the paper's, else any), of the same model family when
    there is one, nearest in parameters (log scale)."""
    pool = [r for r in pool if r.sizes == profile] or [r for r in pool if r.sizes == "paper"] or list(pool)
    pool = [r for r in pool if r.family == family] or pool
    return min(pool, key=lambda r: abs(math.log(max(params, 1) / max(r.params, 1))))


def job_seconds(job, infos: Sequence, device: str, out_root: Path,
                rates: Optional[Rates] = None) -> tuple[Optional[float], str]:
    """(estimated seconds or None, the basis in words) of one job (see the module docstring)."""
    rates = rates or load_rates()
    on_gpu, speed = device.startswith("cuda"), rates.gpu_speedup
    assumed = f"GPU: the CPU time (1 thread) / {speed:g}, an assumed speed-up (no GPU time measured yet)"
    here = _measured_here(job, out_root)
    if here is not None:
        secs, dev = here
        if dev.startswith("cuda") == on_gpu:
            return secs, f"time: this job's own, measured in this output root ({dev})"
        if on_gpu:
            return secs / speed, f"time: this job's own on the CPU, measured in this output root; {assumed}"
    nb = rates.per_model_as.get(job.notebook, job.notebook)
    pool = [r for r in rates.rates if r.notebook == nb]
    gpu_pool = [r for r in pool if r.device.startswith("cuda")]
    use_gpu = bool(on_gpu and gpu_pool)
    pool = gpu_pool if use_gpu else [r for r in pool if not r.device.startswith("cuda")]
    if not pool:
        return None, f"time: no measured rate for notebook {job.notebook[:2]} yet"
    sizes = [(mi.params, mi.name) for mi in infos] if nb != job.notebook else \
        [(sum(mi.params for mi in infos), infos[0].name if infos else None)]
    total, used = 0.0, []
    for n, name in sizes or [(0, None)]:
        r = _nearest(pool, n, load_model_params(name).family if name else "", str(getattr(job, "profile", "")))
        total += r.seconds * (n / r.params) if (n and r.params) else r.seconds
        used.append(r)
    parts = []
    for r in dict.fromkeys(used):
        how = "scaled by parameters" if r.params else "as it is"
        parts.append(f"time: {r.notebook[:2]}'s {r.basis} rate on {r.model}, {how}"
                     + ("" if r.device == "cpu" else f" ({r.device})"))
        profile = str(getattr(job, "profile", "")) or "paper"
        at = "the paper profile's sizes" if r.sizes == "paper" else f"reduced sizes ({r.sizes})"
        if r.sizes != profile and profile == "paper":
            parts.append(f"{r.notebook[:2]}'s rate is at {at}: a lower bound")
        elif r.sizes != profile:
            parts.append(f"{r.notebook[:2]}'s rate is at {at}; profile {profile} may use other sizes")
        if r.clock == "wall":
            parts.append("rate: a wall time on a loaded machine (over-estimates)")
    if on_gpu and not use_gpu:
        total = total / speed
        parts.append(assumed)
    return total, "; ".join(dict.fromkeys(parts))


# ============================================================================ jobs
DISK_KINDS = ("hub", "caches", "twin", "outputs")


@dataclass(frozen=True)
class DiskItem:
    """Bytes one job writes somewhere; ``key`` identifies what jobs share (counted once)."""

    kind: str  # "hub" | "caches" | "twin" | "outputs"
    key: tuple
    bytes: int
    where: Path
    present: bool = False  # already on disk: needs no new space

    @property
    def new(self) -> int:
        return 0 if self.present else self.bytes


@dataclass
class JobEstimate:
    """One row of the plan."""

    label: str
    notebook: str
    models: tuple  # model names the job loads
    params: int  # parameters of those models (summed)
    download: int  # bytes of their files (hub snapshot / checkpoint), present or not
    disk: dict  # kind -> bytes this job writes (before sharing between jobs), present files excluded
    items: list  # DiskItem
    host: int  # peak host bytes
    gpu: int  # peak bytes per GPU it uses (0 on the CPU)
    device: str  # "cpu", "cuda:0", "cuda:0,1"
    source: str  # where the numbers came from
    notes: list = field(default_factory=list)
    seconds: Optional[float] = None  # estimated time (None: no rate for its notebook)
    time_basis: str = ""  # where the time comes from, in words
    timeout_s: Optional[int] = None  # the job's own limit (bounds a job without a rate)

    @property
    def n_gpus(self) -> int:
        return 0 if not self.device.startswith("cuda") else len(self.device.split(":", 1)[1].split(","))


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
    if rule.models == "list":
        return list(_param(job, "MODELS", defaults, []) or [])
    return []


def estimate_job(job, device: Optional[str] = None, *, out_root: Optional[Path] = None,
                 defaults: Optional[Callable[[str], Mapping]] = None, n_gpus: int = 0,
                 gpu_free: Sequence[int] = (), rates: Optional[Rates] = None) -> JobEstimate:
    """The plan's row for one job.

    Parameters
    ----------
    job : Job-like
        ``notebook``, ``model``, ``parameters``, ``label``.
    device : str, optional
        The device it gets (``"cpu"``, ``"cuda:0"``, ``"cuda:0,1"``); default: from its
        model's params (``device: auto`` / ``device_map``: the first ``gpus:`` GPUs when
        ``n_gpus`` > 0, else the CPU).
    out_root : Path, optional
        Where its job directory goes (default ``reports/<profile>``).
    defaults : callable, optional
        ``notebook -> {parameter: declared default}`` (``geolip_lib.runner.jobs.notebook_defaults``)
        for parameters the profile leaves out; without it a missing parameter takes the
        conservative value (twin on, every entry).
    gpu_free : sequence of int
        Free bytes per GPU (``device_map`` jobs offload to the host what does not fit).
    rates : Rates, optional
        The job times its estimated time is scaled from (default :func:`load_rates`).
    """
    # a notebook without a rule (a user's new one) gets the generic one: its model and two
    # float32 copies of the largest tensor, said so in its row
    rule = RULES.get(job.notebook) or (GENERIC_MODEL_RULE if job.model else GENERIC_RULE)
    rule_name = job.notebook[:2] if job.notebook in RULES else "generic (no rule for this notebook in RULES)"
    names = _models_of(job, rule, defaults)
    infos = [model_info(m) for m in names]
    device = device or _default_device(job.notebook, job.model or (names[0] if names else None), n_gpus)
    on_gpu = device.startswith("cuda")
    k_gpus = len(device.split(":", 1)[1].split(",")) if on_gpu and ":" in device else int(on_gpu)
    cache, out_root = cache_root(), Path(out_root) if out_root else ROOT / "reports" / str(getattr(job, "profile", ""))
    items = [DiskItem("outputs", ("outputs", job.label), OUTPUT_ALLOWANCE, out_root)]
    notes: list[str] = []

    def p(name, fallback):
        return _param(job, name, defaults, fallback)

    # the twin's switch; a missing one is taken as on (07's B_RANDOM_INIT: off, its declared default)
    twin_on = rule.twin is not None and (rule.twin == "" or bool(p(rule.twin, rule.models != "pair")))
    # host: peak while loading model i (the models before it held) and the held set at the work's peak
    load_peak, held, host_work, dev_mem = 0, 0, 0, 0
    for i, (name, mi) in enumerate(zip(names, infos)):
        mp = load_model_params(name)
        if mi.download:
            items.append(DiskItem("hub", ("hub", name), mi.download, mi.files_dir or hf_cache_dir(), mi.present))
        if mp.source == "tiny":
            built = any((cache / "tiny_models").glob(f"{name}-*"))
            items.append(DiskItem("caches", ("tiny", name), mi.params * 4, cache, built))
        if rule.reads_weights and not mi.has_safetensors:
            items.append(DiskItem("caches", ("safetensors", name), mi.bytes, cache))
        # loading: from_pretrained on the CPU then .to(device); accelerate places tensor by tensor
        transient = 2 * mi.bytes if mi.open_clip_checkpoint else (mi.largest_bytes if mp.device_map else mi.bytes)
        twin_i = twin_on and (rule.models != "pair" or i == len(names) - 1)
        twin_mem = (mi.bytes if rule.twin_whole else mi.twin_weights_bytes()) if twin_i else 0
        twin_generated = twin_i and not rule.twin_whole and mi.params > TWIN_MAX_PARAMS
        if twin_i and rule.twin_to_disk and not twin_generated:
            items.append(DiskItem("twin", ("twin", name), mi.bytes, cache))
        work = int(rule.host_l * mi.largest * 4 + rule.stack_share * mi.params * 4)
        dwork = int(rule.device_l * mi.largest * 8)
        if rule.encodings:
            n = p("MAX_ENTRIES", None) or ALL_ENTRIES
            enc = int(n) * mi.width * 4
            work += rule.encodings * enc  # trained (and twin) encodings + the static rows
            if p("ENCODING_CACHE", True):
                items.append(DiskItem("caches", ("encodings", name, n), enc, cache))
                if rule.encodings > 1:
                    items.append(DiskItem("caches", ("encodings-twin", name, n), enc, cache))
        if job.notebook == "01_embedding_terrain":
            work += 3 * 4 * (int(p("N_COS_SAMPLE", 5000)) ** 2 + int(p("N_DIST_SAMPLE", 2000)) ** 2)
        if job.notebook == "06_qk_operators" and p("SAVE_OPERATORS", True):
            # eigen-directions: TOP_K of 2*head_dim per head, head_dim >= 64: <= TOP_K/64 of q and k
            items.append(DiskItem("outputs", ("operators", job.label),
                              int(2 * int(p("TOP_K", 8)) / 64 * mi.params / 6 * 4), out_root))
        battery_dev = str(p("DEVICE", "auto")) if rule.device_l else "auto"
        dwork_on_gpu = on_gpu and battery_dev in ("auto", "cuda")
        if on_gpu:  # the model goes to the device; a generated twin is drawn on the CPU
            load_peak = max(load_peak, held + transient)
            host_work += work + (twin_mem if twin_generated else 0) + (0 if dwork_on_gpu else dwork)
            dev_mem += mi.bytes + (0 if twin_generated else twin_mem) + (dwork if dwork_on_gpu else 0)
        else:
            load_peak = max(load_peak, held + max(transient, mi.bytes))
            held += mi.bytes
            host_work += twin_mem + work + dwork
    if rule.models == "none":
        host = FIXED_HOST.get(job.notebook, KERNEL_HOST)
        gpu = CUDA_CONTEXT + host - KERNEL_HOST if on_gpu else 0
        src = "measured on the demo sizes" if job.notebook in FIXED_HOST else f"rule {rule_name}: the kernel's own peak"
    else:
        host = KERNEL_HOST + NOTEBOOK_EXTRA.get(job.notebook, DEFAULT_EXTRA) + max(load_peak, held + host_work)
        gpu = 0
        if on_gpu:
            per = dev_mem / max(k_gpus, 1)
            cap = min(gpu_free[:k_gpus]) if len(gpu_free) >= k_gpus and k_gpus else None
            if cap is not None and any(load_model_params(m).device_map for m in names) and per + CUDA_CONTEXT > cap:
                spill = int((per + CUDA_CONTEXT - cap) * k_gpus)
                host += spill
                per = cap - CUDA_CONTEXT
                notes.append(f"device_map offloads {spill / GB:.1f} GB to the CPU")
            gpu = int(CUDA_CONTEXT + per)
        srcs = sorted({mi.source for mi in infos} | {f"download {mi.download_source}" for mi in infos if mi.download})
        src = "; ".join(srcs + [f"memory: rule {rule_name}"]) if infos else f"rule {rule_name}"
        if rule.models == "list":
            notes.append("assumes 02's results are absent (it computes the battery itself)")
    disk = {k: 0 for k in DISK_KINDS}
    for it in items:
        disk[it.kind] = disk.get(it.kind, 0) + it.new
    seconds, time_basis = job_seconds(job, infos, device, out_root, rates)
    return JobEstimate(label=job.label, notebook=job.notebook, models=tuple(names),
                       params=sum(mi.params for mi in infos), download=sum(mi.download for mi in infos),
                       disk=disk, items=items, host=int(host), gpu=int(gpu), device=device, source=src, notes=notes,
                       seconds=seconds, time_basis=time_basis)
