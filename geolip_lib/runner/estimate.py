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

The rules per notebook (memory, disk) are :mod:`.memory_rules`; a job's time is :func:`job_seconds`: its own
measurement where it ran, else the cost model fitted to measured jobs (:mod:`.cost_model`), else the rates of
``rates.yaml`` (:mod:`.rates`); :mod:`.calibration` turns an output root's measured jobs into ``timings/`` data.
"""
from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from ..params import load_model_params
from ..paths import ROOT, cache_root
from . import gpu_rates as G
from .cost_model import (  # noqa: F401 - re-exported: the cost model's names (tests, benchmarks)
    DEFAULT_FEATURES, FEATURES, MAX_JOB_SECONDS, MIN_FIT_PARAMS, N_NULL_SEEDS, NULL_NOTEBOOKS, TIMINGS_DIR, Fit,
    _parameters_key, cost_features, fit_notebook, fitted_costs, held_out_ratios, job_drivers, load_timings,
    null_share)
from .execute import TIMING
from .memory_rules import (  # noqa: F401 - re-exported: the rules (plan, tests)
    ALL_ENTRIES, CUDA_CONTEXT, DEFAULT_EXTRA, FIXED_HOST, GENERIC_MODEL_RULE, GENERIC_RULE, HEADROOM, KERNEL_HOST,
    MAPPED_PEAK, NOTEBOOK_EXTRA, OUTPUT_ALLOWANCE, RULES, USES_CUDA, Rule, _default_device, _models_of, _param)
from .model_sizes import GB, PlanError, hf_cache_dir, mapped_load, model_info, twin_max_params  # noqa: F401 - re-exported
from .rates import RATES_FILE, Rate, Rates, _nearest, _rate_seconds, load_rates  # noqa: F401 - re-exported


# ============================================================================ time
def _measured_here(job, out_root: Path) -> tuple[Optional[tuple[float, str]], Optional[str]]:
    """((seconds, device) from the job's own ``job_timing.json`` in the planned output root, if it ran there;
    a note when that file is there but unusable: its path and why it is ignored)."""
    job_id = getattr(job, "job_id", None)
    if not job_id:
        return None, None
    f = Path(out_root) / job.notebook / job_id / TIMING
    if not f.is_file():
        return None, None
    try:
        t = json.loads(f.read_text(encoding="utf-8")[:100_000])
        parts = [t["preflight_s"], t["kernel_start_s"], t["notebook_s"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"ignored {f}: not a job_timing.json ({type(exc).__name__}); estimated from the cost model"
    def ok(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= MAX_JOB_SECONDS

    if not all(ok(x) for x in parts):
        bad = next(x for x in parts if not ok(x))
        return None, (f"ignored {f}: {bad!r} is not a time in seconds (0 to {MAX_JOB_SECONDS}); "
                      f"estimated from the cost model")
    return (float(sum(parts)), str(t.get("device", "cpu"))), None


def _measured_in_timings(job, infos: Sequence, defaults=None) -> Optional[dict]:
    """The ``timings/`` row that measured this very job: same profile, notebook, job id and model(s),
    the same profile parameters and drivers (a row without parameters never matches)."""
    key, drivers = _parameters_key(job), job_drivers(job, infos, defaults)
    for r in load_timings():
        if (r.get("profile") == getattr(job, "profile", None) and r.get("notebook") == job.notebook
                and r.get("job") == job.job_id and r.get("parameters") == key
                and r.get("models") == [mi.name for mi in infos] and r.get("drivers") == drivers):
            return r
    return None


def job_seconds(job, infos: Sequence, device: str, out_root: Path, rates: Optional[Rates] = None,
                defaults=None) -> tuple[Optional[float], str, Optional[tuple[float, float]]]:
    """(estimated seconds or None, the basis in words, (low, high) or None) of one job (module docstring)."""
    rates = rates or load_rates()
    on_gpu, speed = device.startswith("cuda"), rates.gpu_speedup
    assumed = G.ASSUMED.format(speed) + rates.speedup_note
    here, ignored = _measured_here(job, out_root)
    if here is not None:
        secs, dev = here
        if dev.startswith("cuda") == on_gpu:
            return secs, f"time: this job's own, measured in this output root ({dev})", (secs, secs)
        if on_gpu:
            return (secs / speed, f"time: this job's own on the CPU, measured in this output root; {assumed}",
                    (secs / speed, secs / speed))
    nb = rates.per_model_as.get(job.notebook, job.notebook)
    fits = fitted_costs()
    fit = fits.get(nb)
    parts = [ignored] if ignored else []
    groups = [[mi] for mi in infos] if nb != job.notebook else [list(infos)]  # 03: 02's work once per model
    gpu = on_gpu and fit and not any(r.notebook == nb and r.device.startswith("cuda") for r in rates.rates) and \
        G.job_gpu_seconds(nb, fit, groups, functools.partial(job_drivers, job, defaults=defaults), cost_features,
                          kind=rates.gpu_kind)
    if gpu:  # measured GPU steps (gpu_rates.py)
        return gpu[0], "; ".join(parts + [gpu[1]]), gpu[2]
    row = _measured_in_timings(job, infos, defaults)
    if row is not None:  # this very job was measured (same parameters and models): its time, not a model's
        secs = float(row["seconds"])
        lo, hi = _pooled_spread(fits)
        parts.append(f"time: this job measured on the {row['profile']} profile (timings/{row['file']}, "
                     f"{'CPU seconds' if row['clock'] == 'cpu' else 'wall x load share'}); range = the fitted "
                     "notebooks' spread")
        if on_gpu:
            secs, parts = secs / speed, parts + [assumed]
        return secs, "; ".join(parts), (secs / hi, secs / lo)
    if on_gpu and any(r.notebook == nb and r.device.startswith("cuda") for r in rates.rates):
        total, basis = _rate_seconds(job, infos, rates, nb, gpu=True)  # a measured GPU rate: no assumption
        lo, hi = _pooled_spread(fits)
        return total, "; ".join(parts + [basis, "range = the fitted notebooks' spread"]), (total / hi, total / lo)
    if fit is not None and (fit.work_fitted or all(mi.params < MIN_FIT_PARAMS for mi in infos)):
        total = 0.0
        for g in groups or [[]]:
            total += fit.seconds(cost_features(nb, job_drivers(job, g, defaults)))
        lo, hi = total / fit.high, total / fit.low  # the measured spread of estimate / measured
        parts.append(f"time: {nb[:2]}'s cost model (CPU seconds, 1 thread) fitted to {fit.n} measured jobs "
                     f"(timings/), range = its 10-90 % spread")
        if max((mi.params for mi in infos), default=0) > 2 * fit.max_params:
            parts.append(f"extrapolated beyond the largest model measured for {nb[:2]} "
                         f"({fit.max_params / 1e6:.0f}M parameters)")
    else:
        total, basis = _rate_seconds(job, infos, rates, nb)
        if total is None:
            return None, "; ".join(parts + [basis]), None
        spread = _pooled_spread(fits)
        lo, hi = total / spread[1], total / spread[0]
        parts.append(basis)
        parts.append(f"{nb[:2]}: not fitted (fewer than 2 measured jobs on models >= {MIN_FIT_PARAMS / 1e6:.0f}M "
                     f"parameters); range = the fitted notebooks' spread")
    if on_gpu:
        total, lo, hi = total / speed, lo / speed, hi / speed
        parts.append(assumed)
    return total, "; ".join(dict.fromkeys(parts)), (lo, hi)


def _pooled_spread(fits: Mapping) -> tuple[float, float]:
    fitted = [f for f in fits.values() if f is not None and f.work_fitted]
    if not fitted:
        return 0.5, 2.0
    return min(min(f.low for f in fitted), 1.0), max(max(f.high for f in fitted), 1.0)


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
    span: Optional[tuple] = None  # (low, high) seconds: the fit's measured spread
    gpu_parts: dict = field(default_factory=dict)  # device bytes by part (model, twin, work, ...), for advice
    offloads: bool = False  # a model of it has device_map (accelerate offloads what does not fit)
    battery_on_device: bool = False  # its DEVICE work (02, 03) runs on the GPU
    twin: bool = False  # its random-init twin / null is on

    @property
    def n_gpus(self) -> int:
        return 0 if not self.device.startswith("cuda") else len(self.device.split(":", 1)[1].split(","))


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
    alone_host, alone_dev = 0, 0  # one_at_a_time: the largest model's own peak (each released before the next)
    parts = {"model": 0, "twin": 0, "work": 0, "float32_model": 0, "float32_twin": 0}  # device bytes, for advice
    for i, (name, mi) in enumerate(zip(names, infos)):
        if rule.one_at_a_time:  # the models before this one were released: it starts from nothing held
            alone_host, alone_dev = max(alone_host, load_peak, held + host_work), max(alone_dev, dev_mem)
            load_peak, held, host_work, dev_mem = 0, 0, 0, 0
        mp = load_model_params(name)
        if mi.download and mi.download_source == "converted copy":  # an ONNX / CTranslate2 file's folder, written
            # once by the first load: a cache, not a download
            items.append(DiskItem("caches", ("converted", name), mi.download, cache))
        elif mi.download:
            items.append(DiskItem("hub", ("hub", name), mi.download, mi.files_dir or hf_cache_dir(), mi.present))
        if mp.source == "tiny":
            built = any((cache / "tiny_models").glob(f"{name}-*"))
            items.append(DiskItem("caches", ("tiny", name), mi.params * 4, cache, built))
        if mp.revisions and mi.download:  # a hub trajectory: every revision is a snapshot of its own
            for rev in mp.revisions:
                items.append(DiskItem("hub", ("hub", name, rev), mi.download, mi.files_dir or hf_cache_dir(),
                                      mi.present))
        if rule.reads_weights and not mi.has_safetensors:
            items.append(DiskItem("caches", ("safetensors", name), mi.bytes, cache))
        # loading: from_pretrained on the CPU then .to(device); accelerate places tensor by tensor; a torch
        # pickle (.bin) is read whole in its stored dtype first (T5-v1.1-XXL: 44.5 GB of float32)
        transient = 2 * mi.bytes if mi.open_clip_checkpoint else (mi.largest_bytes if mp.device_map else mi.bytes)
        if mi.pickle:
            transient = mi.download + (0 if mp.device_map else mi.bytes)
            parts["pickle"] = parts.get("pickle", 0) + mi.download
            notes.append(f"{name}: its checkpoint is a torch pickle (.bin): a load reads it whole "
                         f"({mi.download / GB:.1f} GB of {mi.stored_dtype}) into host memory")
        twin_i = twin_on and (rule.models != "pair" or i == len(names) - 1)
        twin_mem = (mi.twin_run_bytes(rule.twin_tables) if rule.twin_whole else mi.twin_weights_bytes()) if twin_i else 0
        twin_generated = twin_i and not rule.twin_whole and (mi.params > twin_max_params() or rule.twin_sampled)
        if twin_i and rule.twin_sampled:
            twin_mem = min(twin_mem, 2 * mi.largest_bytes)  # the tensor generated + the one measured
        if twin_i and rule.twin_to_disk and not twin_generated:
            items.append(DiskItem("twin", ("twin", name), mi.bytes, cache))
        work = int(rule.host_l * mi.largest * 4 + rule.stack_share * mi.params * 4)
        dwork = int(rule.device_l * mi.largest)
        dwork_cpu = int(max(rule.device_l - 4, 0) * mi.largest)  # on the CPU the float32 matrix is no copy
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
            host_work += work + (twin_mem if twin_generated else 0) + (0 if dwork_on_gpu else dwork_cpu)
            dev_mem += mi.bytes + (0 if twin_generated else twin_mem) + (dwork if dwork_on_gpu else 0)
            parts["model"] += mi.bytes
            parts["twin"] += 0 if twin_generated else twin_mem
            parts["work"] += dwork if dwork_on_gpu else 0
            parts["float32_model"] += mi.bytes * (mi.dtype == "float32")
            parts["float32_twin"] += (0 if twin_generated else twin_mem) * (mi.dtype == "float32")
        else:
            load_peak = max(load_peak, held + max(transient, mi.bytes))
            held += mi.bytes
            host_work += twin_mem + work + dwork_cpu
            parts["float32_model"] += mi.bytes * (mi.dtype == "float32")  # what a bfloat16 load halves (advice)
            parts["float32_twin"] += twin_mem * (mi.dtype == "float32" and rule.twin_whole)
    if rule.one_at_a_time:
        load_peak, held, host_work = max(alone_host, load_peak, held + host_work), 0, 0
        dev_mem = max(alone_dev, dev_mem)
    if rule.models == "none":
        host = FIXED_HOST.get(job.notebook, KERNEL_HOST)
        gpu = CUDA_CONTEXT + host - KERNEL_HOST if on_gpu else 0
        src = "measured on the demo sizes" if job.notebook in FIXED_HOST else f"rule {rule_name}: the kernel's own peak"
    else:
        host = KERNEL_HOST + NOTEBOOK_EXTRA.get(job.notebook, DEFAULT_EXTRA) + max(load_peak, held + host_work)
        mapped = job.notebook in MAPPED_PEAK and not on_gpu and len(infos) == 1 and mapped_load(infos[0])
        if mapped and MAPPED_PEAK[job.notebook] * infos[0].bytes < host:
            host = MAPPED_PEAK[job.notebook] * infos[0].bytes
            notes.append(f"host: {MAPPED_PEAK[job.notebook]:.2f} x the model, as measured on a memory-mapped "
                         "model above 1e9 parameters (memory_rules.MAPPED_PEAK)")
        gpu = 0
        if on_gpu:
            per = dev_mem / max(k_gpus, 1)
            cap = min(gpu_free[:k_gpus]) if len(gpu_free) >= k_gpus and k_gpus else None
            usable = cap * (1 - HEADROOM) if cap is not None else None
            if usable is not None and any(load_model_params(m).device_map for m in names) \
                    and per + CUDA_CONTEXT > usable:
                spill = int((per + CUDA_CONTEXT - usable) * k_gpus)
                host += spill
                per = usable - CUDA_CONTEXT
                parts["offloaded"] = spill
                notes.append(f"device_map: auto offloads {spill / GB:.1f} GB to the CPU (the GPU kept "
                             f"{HEADROOM:.0%} free)")
            gpu = int(CUDA_CONTEXT + per)
        srcs = sorted({mi.source for mi in infos} | {f"download {mi.download_source}" for mi in infos if mi.download})
        src = "; ".join(srcs + [f"memory: rule {rule_name}"]) if infos else f"rule {rule_name}"
        if rule.models == "list" and not rule.one_at_a_time:
            notes.append("assumes 02's results are absent (it computes the battery itself)")
    disk = {k: 0 for k in DISK_KINDS}
    for it in items:
        disk[it.kind] = disk.get(it.kind, 0) + it.new
    seconds, time_basis, span = job_seconds(job, infos, device, out_root, rates, defaults)
    return JobEstimate(label=job.label, notebook=job.notebook, models=tuple(names),
                       params=sum(mi.params for mi in infos), download=sum(mi.download for mi in infos),
                       disk=disk, items=items, host=int(host), gpu=int(gpu), device=device, source=src, notes=notes,
                       seconds=seconds, time_basis=time_basis, span=span, gpu_parts=parts,
                       offloads=any(load_model_params(m).device_map for m in names),
                       battery_on_device=bool(rule.device_l) and on_gpu and
                       str(p("DEVICE", "auto")) in ("auto", "cuda"), twin=bool(twin_on and names))


if __name__ == "__main__":  # collect an output root's job timings into a data file of timings/
    from .calibration import main

    sys.exit(main())
