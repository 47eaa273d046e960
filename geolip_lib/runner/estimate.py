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
08-11     model + modulator and its training state (<= 2 float32 ``L``: vocabulary x ``N_GEO``
          tables and Adam's moments, ``N_GEO`` <= width).
12-15     no model: the fixed peaks of :data:`FIXED_HOST`, measured on the demo sizes.
all       + the kernel (:data:`KERNEL_HOST`) + what the notebook itself allocates beyond this table
          (:data:`NOTEBOOK_EXTRA`: measured on the demo's MiniLM jobs of 01, 02, 06; others
          :data:`DEFAULT_EXTRA`).
========  =======================================================================================

Time (:func:`job_seconds`: a cost model fitted to measured jobs, ``timings/*.json`` beside this module)
-----------------------------------------------------------------------------------------------------
A job's CPU seconds at one thread = its notebook's fixed cost + rates x the work its drivers ask for
(:func:`job_drivers`, :func:`cost_features`): parameters x passes (element-wise work over every weight: load,
random init, sparsity, norms), parameters x width x passes (the Gram / eigen work of every matrix: sum of
``m n min(m, n)``), and the notebook's sample work (01: the cosine / distance / PCA matrices of the trained
table and of its Gaussian, sphere and random-init nulls per seed, and the probe tokens through the model; 04:
the definitions through the model and its twin). passes = the checkpoints of a trajectory (each loaded and
measured: 300 checkpoints cost 300 times one) + the random-init null builds (``N_NULL_SEEDS`` seeds of
:func:`null_share` of the model) + a twin. The fixed cost and rates are fitted per notebook by non-negative
least squares on relative errors (:func:`fit_notebook`) to the measured jobs of the demo, families and
shapes profiles (``timings/``: per job its drivers and seconds, the kernel's CPU seconds where recorded, else
its wall seconds scaled by the load); each estimate prints the 10-90 % spread of estimate / measured over
those jobs (leave-one-out) as its range. :func:`held_out_ratios` is the test's held-out check. A notebook
measured only on tiny models gets no work rates from the fit; such jobs on real models keep the former
``rates.yaml`` estimate (nearest rate, scaled by parameters), said so in their row, with the fitted
notebooks' spread as range. A job already run in the planned output root takes its own ``job_timing.json``
(a file whose times are not finite seconds in 0 to 30 days is ignored, with one line naming it).

MEASURED: the fit's rates (CPU seconds, 2-core machine); on a GPU, 01, 02, 03, 06 from GPU step rates measured on an
H200 (:mod:`.gpu_rates`), others CPU / ``gpu_speedup`` (ASSUMED, said so). No rate: bounded by its ``timeout_s``.
A GPU job's device memory: the CUDA context (:data:`CUDA_CONTEXT`, not measured: no GPU on
the machine this was written on) + what the table puts on the device (model, twin,
``DEVICE`` work). Twins are built on the model's device; generated twins on the CPU.
"""
from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import yaml
from scipy.optimize import nnls

from ..params import load_model_params
from ..roots import RootReadError, job_dirs, read_json
from ..paths import ROOT, cache_root
from . import gpu_rates as G
from .execute import TIMING
from .jobs import jobs_for_profile, notebook_defaults
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
HEADROOM = 0.10  # memory kept free: a job is planned at <= 90 % of a GPU's or the host's memory (allocator
# fragmentation, transient copies the rules do not list); never at exactly 40.00 of 40 GB
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
    twin_sampled: bool = False  # the null's tensors are generated one at a time, whatever the size (02 since d06a56f)
    reads_weights: bool = False  # reads lm.weights_dir (a copy is written when there is none)
    host_l: float = 0.0  # float32 copies of the largest tensor on the host
    device_l: float = 0.0  # bytes per element of the largest tensor on the compute device (DEVICE)
    stack_share: float = 0.0  # float32 share of the parameters held (06: q and k of one stack)
    encodings: int = 0  # entries x width float32 encodings (cached)


RULES: dict[str, Rule] = {
    "01_embedding_terrain": Rule("job", twin="RANDOM_INIT_BASELINE", twin_whole=True, host_l=3),
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
    speed = G.checked_speedup(raw.get("gpu_speedup"), where)
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


MAX_JOB_SECONDS = 30 * 86_400  # a job_timing.json claiming more than 30 days (or < 0, or not finite): ignored


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


def _nearest(pool: Sequence[Rate], params: int, family: str, profile: str) -> Rate:
    """The rate at the job's profile's sizes (else the paper's, else any), of the same model family when
    there is one, nearest in parameters (log scale)."""
    pool = [r for r in pool if r.sizes == profile] or [r for r in pool if r.sizes == "paper"] or list(pool)
    pool = [r for r in pool if r.family == family] or pool
    return min(pool, key=lambda r: abs(math.log(max(params, 1) / max(r.params, 1))))


# ---------------------------------------------------------------------------- the cost model
# A job's CPU seconds (one thread) = a + sum_k b_k x_k: ``a`` its notebook's fixed cost (kernel, imports, figures,
# tables), ``x_k`` the work its drivers ask for (job_drivers, cost_features), ``b_k >= 0`` seconds per unit of
# work, fitted per notebook to the measured jobs of timings/*.json (fit_costs: non-negative least squares on
# relative errors). Drivers: parameters P, width D, vocabulary rows V, layers, the checkpoints of a trajectory
# (each loaded and measured in turn), the random-init null builds (N_NULL_SEEDS seeds of the share of the model
# one null build covers: null_share) and the notebook's sample sizes.
TIMINGS_DIR = Path(__file__).with_name("timings")
FEATURES = {  # notebook -> the work terms its fit uses (besides the fixed cost)
    "01_embedding_terrain": ("weights", "samples"),
    "02_weight_topology": ("weights", "spectra"),
    "03_cross_model": ("weights", "spectra"),
    "06_qk_operators": ("weights", "spectra"),
    "04_wordnet_alignment": ("weights", "samples"),
}
DEFAULT_FEATURES = ("weights",)
N_NULL_SEEDS = 5  # geolip_lib.metrics.intervals.N_NULL_SEEDS (kept in step by test_estimate.py)
NULL_NOTEBOOKS = {"01_embedding_terrain": "RANDOM_INIT_BASELINE", "02_weight_topology": "NULL_BASELINE",
                  "06_qk_operators": "RANDOM_INIT_BASELINE"}  # notebooks whose random-init null has N_NULL_SEEDS seeds
TEXT_PROBE_TOKENS = 200  # notebook 01's probe sentences (probes.SENTENCES) through a text stack, about
DEFINITION_TOKENS = 16  # a WordNet definition (notebook 04), about
MIN_FIT_PARAMS = 10_000_000  # a notebook's work rates are fitted only when it was measured on a model this large


def null_share(notebook: str, info) -> float:
    """The share of the model one random-init null build covers, averaged over the ``N_NULL_SEEDS`` seeds
    (1: the whole model, every seed), as notebooks 01, 02 and 06 build their nulls since issue 31 §2
    (commit d06a56f): 01: seed 0 is the whole twin, seeds 1... draw the input-embedding table alone
    (a vision model's table is not one stored tensor: the whole twin); 02: every seed measures a sample of
    each group's layers, ``m = max(2, ceil(L / 5))`` of ``L`` (``weights.nulls.battery_null``), seed 0 also
    the tensors outside the layers (embeddings, norms); 06: seed 0 every layer, seeds 1... the same sample
    (``operators.nulls.operator_null``). ``L`` is taken as the model's blocks (:attr:`ModelInfo.layers`;
    a model with two stacks of L/2 samples a little more). A warm null cache (a rerun) costs less: not
    counted (the plan is for a first run)."""
    if info is None or not info.params:
        return 1.0
    S = N_NULL_SEEDS
    table = min(1.0, info.vocab * info.width / info.params) if info.vocab else 0.0
    if notebook == "01_embedding_terrain":
        return (1.0 + (S - 1) * table) / S if table else 1.0
    L = info.layers
    if not L:
        return 1.0
    f = min(1.0, max(2, math.ceil(L / 5)) / L)
    if notebook == "02_weight_topology":
        return f * (1.0 - table) + table / S
    if notebook == "06_qk_operators":
        return (1.0 + (S - 1) * f) / S
    return 1.0


def job_drivers(job, infos: Sequence, defaults=None) -> dict:
    """What a job's time depends on (numbers only: the measured data keeps them per job)."""
    def p(name, fallback):
        return _param(job, name, defaults, fallback)

    P = sum(mi.params for mi in infos)
    main = max(infos, key=lambda mi: mi.params) if infos else None
    nulls = 0
    if job.notebook in NULL_NOTEBOOKS and infos and bool(p(NULL_NOTEBOOKS[job.notebook], True)):
        nulls = N_NULL_SEEDS
    d = {"params": P, "width": main.width if main else 0, "layers": main.layers if main else 0,
         "vocab": main.vocab if main else 0, "image_tokens": main.image_tokens if main else 0,
         "runs": 1 + max((mi.checkpoints for mi in infos), default=0), "null_seeds": nulls,
         "null_share": null_share(job.notebook, main) if main else 0.0, "twin": 0}
    rule = RULES.get(job.notebook)
    if rule is not None and rule.twin is not None and job.notebook not in NULL_NOTEBOOKS:
        d["twin"] = int(rule.twin == "" or bool(p(rule.twin, rule.models != "pair")))
    if job.notebook == "01_embedding_terrain":
        d.update(n_cos=int(p("N_COS_SAMPLE", 2000)), n_dist=int(p("N_DIST_SAMPLE", 1000)),
                 pca_rows=int(p("PCA_ROWS", None) or d["vocab"]), n_images=int(p("N_IMAGES", 8)))
    if job.notebook in ("04_wordnet_alignment", "05_seed_stability"):
        d.update(entries=int(p("MAX_ENTRIES", None) or ALL_ENTRIES))
    return d


def cost_features(notebook: str, d: Mapping) -> dict:
    """The work terms of :data:`FEATURES` from a job's drivers (units chosen so that each is O(1-1000))."""
    P, D = float(d.get("params", 0)), float(d.get("width", 0))
    passes = d.get("runs", 1) + d.get("null_seeds", 0) * d.get("null_share", 1.0) + d.get("twin", 0)
    out = {"weights": P * passes / 1e9,  # element-wise work over every weight: load, init, sparsity, norms (x 1e9)
           "spectra": P * D * passes / 1e12}  # Gram / eigen work of every matrix: sum m n min(m, n) <= P D (x 1e12)
    if notebook == "01_embedding_terrain":
        rows = min(d.get("pca_rows", 0) or d.get("vocab", 0), d.get("vocab", 0) or 0)
        tables = d.get("runs", 1) + 3 * d.get("null_seeds", 0)  # trained + (Gaussian, sphere, random-init) per seed
        table = 2.0 * D * (d.get("n_cos", 0) ** 2 + d.get("n_dist", 0) ** 2) + 2.0 * rows * D * D
        tokens = d.get("n_images", 0) * d.get("image_tokens", 0) if d.get("image_tokens") else TEXT_PROBE_TOKENS
        out["samples"] = (tables * table + 2.0 * P * tokens * d.get("runs", 1)) / 1e12  # FLOPs x 1e12
    elif notebook == "04_wordnet_alignment":
        out["samples"] = 2.0 * P * d.get("entries", 0) * DEFINITION_TOKENS * (1 + d.get("twin", 0)) / 1e12
    return out


@dataclass(frozen=True)
class Fit:
    """One notebook's fitted cost: seconds = fixed + sum(rates[k] * feature k); the spread of its log-ratios."""

    notebook: str
    fixed: float
    rates: dict  # feature -> seconds per unit (>= 0)
    low: float  # 10th percentile of estimate / measured over its jobs (leave-one-out where there are >= 4)
    high: float  # 90th percentile
    n: int  # jobs it was fitted on
    max_params: int  # the largest model among them (beyond: extrapolated)
    work_fitted: bool  # its rates were fitted (>= 2 jobs >= MIN_FIT_PARAMS measured); else fixed cost only

    def seconds(self, features: Mapping) -> float:
        return self.fixed + sum(self.rates.get(k, 0.0) * features.get(k, 0.0) for k in self.rates)


MAX_JOB_SECONDS = 30 * 24 * 3600  # a measured job of more than 30 days is a damaged row, not a measurement


def _good_seconds(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= MAX_JOB_SECONDS and math.isfinite(x)


def load_timings(directory: Path = TIMINGS_DIR) -> list[dict]:
    """The measured jobs of ``timings/*.json`` (rows with notebook, model, profile, drivers, seconds, clock).
    A file that is not JSON, or a row without a notebook, drivers or finite seconds in (0, 30 days], is left out
    with one line on stderr naming it (issue 39: NaN or negative seconds ended every plan in a traceback)."""
    rows = []
    for f in sorted(Path(directory).glob("*.json")):
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
            found = data.get("rows", []) if isinstance(data, dict) else None
        except (OSError, ValueError) as exc:
            found, why = None, str(exc)[:80]
        else:
            why = "its rows are not a list"
        if not isinstance(found, list):
            print(f"warning: timings/{f.name} left out: {why}", file=sys.stderr)
            continue
        for i, r in enumerate(found):
            if not (isinstance(r, dict) and isinstance(r.get("notebook"), str) and isinstance(r.get("drivers"), dict)
                    and _good_seconds(r.get("seconds"))):
                secs = r.get("seconds") if isinstance(r, dict) else None
                print(f"warning: timings/{f.name} row {i} left out: seconds {secs!r} (expected a number in "
                      f"(0, {MAX_JOB_SECONDS}]) or no notebook / drivers", file=sys.stderr)
                continue
            rows.append(dict(r, file=f.name))
    return rows


def _nnls_fit(notebook: str, rows: Sequence[Mapping], feats: Sequence[str]) -> tuple[float, dict]:
    """Non-negative least squares of seconds on (1, features), each row weighted by 1 / its seconds (relative
    error), with scipy's NNLS."""
    X = np.array([[1.0] + [cost_features(notebook, r["drivers"]).get(k, 0.0) for k in feats] for r in rows])
    y = np.array([float(r["seconds"]) for r in rows])
    w = 1.0 / y
    scale = np.maximum(np.abs(X).max(axis=0), 1e-300)
    coef, _ = nnls(X * w[:, None] / scale, y * w)
    coef = coef / scale
    return float(coef[0]), {k: float(c) for k, c in zip(feats, coef[1:])}


def fit_notebook(notebook: str, rows: Sequence[Mapping]) -> Optional[Fit]:
    """The fit of one notebook's measured jobs (None without any)."""
    rows = [r for r in rows if r["notebook"] == notebook]
    if not rows:
        return None
    big = max(r["drivers"].get("params", 0) for r in rows)
    n_big = sum(r["drivers"].get("params", 0) >= MIN_FIT_PARAMS for r in rows)
    # work rates need the work to vary: at least two jobs on models >= MIN_FIT_PARAMS and four in all
    feats = FEATURES.get(notebook, DEFAULT_FEATURES) if n_big >= 2 and len(rows) >= 4 else ()
    fixed, rates = _nnls_fit(notebook, rows, feats)
    ratios = []
    for i, r in enumerate(rows):  # leave-one-out where there are enough jobs, else in-sample
        if len(rows) >= 4:
            f0, r0 = _nnls_fit(notebook, rows[:i] + rows[i + 1:], feats)
        else:
            f0, r0 = fixed, rates
        est = f0 + sum(r0[k] * cost_features(notebook, r["drivers"]).get(k, 0.0) for k in feats)
        ratios.append(max(est, 1e-9) / float(r["seconds"]))
    lo, hi = np.quantile(ratios, [0.1, 0.9]) if len(ratios) > 1 else (ratios[0], ratios[0])
    return Fit(notebook, fixed, rates, float(lo), float(hi), len(rows), int(big), bool(feats))


@functools.lru_cache(maxsize=2)
def fitted_costs(directory: Path = TIMINGS_DIR) -> dict:
    """notebook -> :class:`Fit` over every measured job of ``timings/``."""
    rows = load_timings(directory)
    return {nb: fit_notebook(nb, rows) for nb in sorted({r["notebook"] for r in rows})}


def held_out_ratios(rows: Sequence[Mapping], every: int = 3) -> list[tuple[Mapping, float]]:
    """Estimate / measured of each job of a held-out third (every ``every``-th job of each notebook, in
    file order), each notebook fitted on the other jobs only."""
    out = []
    for nb in sorted({r["notebook"] for r in rows}):
        mine = [r for r in rows if r["notebook"] == nb]
        held = mine[every - 1::every]
        train = [r for r in mine if not any(r is h for h in held)]
        fit = fit_notebook(nb, train)
        if fit is None:
            continue
        for r in held:
            out.append((r, fit.seconds(cost_features(nb, r["drivers"])) / float(r["seconds"])))
    return out


CORES = 2  # the development machine's cores (where timings/ was measured): a wall time at load L took about
# min(1, CORES / L) of a core; a row measured only as wall time (warm kernels) is converted so (collect_timings)


def collect_timings(root: Path, profile: str, cores: int = CORES, null_share_was: Optional[float] = None,
                    k: float = 1.0) -> list[dict]:
    """One row per finished job of an output root (its ``job_timing.json``): notebook, model, profile, the
    drivers of :func:`job_drivers`, seconds and how they were measured. ``seconds``: the cold kernel's CPU
    seconds where recorded (``clock: cpu``), else wall seconds x min(1, cores / load) (``clock:
    wall-load``: ``k`` calibrates that share on jobs measured both ways); rows with neither are left out.
    ``null_share_was``: the null share of the code that ran (a run from before a change of :func:`null_share`).
    Reads through :mod:`geolip_lib.roots` (no link followed)."""
    by_label = {(j.notebook, j.job_id): j for j in jobs_for_profile(profile)}
    rows = []
    for d in job_dirs(root):
        job = by_label.get((d.parent.name, d.name))
        if job is None:
            continue
        try:
            t = read_json(root, d / TIMING)
        except (FileNotFoundError, RootReadError):
            continue
        try:
            wall = sum(float(t.get(k) or 0) for k in ("preflight_s", "kernel_start_s", "notebook_s"))
            cpu, load = t.get("kernel_cpu_s"), t.get("load_1m")
            share = min(1.0, k * cores / float(load)) if load else 1.0
            if cpu:  # the kernel's CPU seconds + the runner's preflight (wall, scaled like a wall time)
                secs, clock = float(cpu) + float(t.get("preflight_s") or 0) * share, "cpu"
            elif load:
                secs, clock = wall * share, "wall-load"
            else:
                continue
        except (TypeError, ValueError, ZeroDivisionError, AttributeError):
            secs, clock = float("nan"), "unreadable"
        if not _good_seconds(secs):  # a hand-edited job_timing.json (NaN, negative): never written into timings/
            print(f"warning: {d}: job_timing.json gives {secs!r} seconds; left out", file=sys.stderr)
            continue
        rule = RULES.get(job.notebook) or GENERIC_MODEL_RULE
        infos = [model_info(m) for m in _models_of(job, rule, notebook_defaults)]
        drivers = job_drivers(job, infos, notebook_defaults)
        if null_share_was is not None and drivers["null_seeds"]:
            drivers["null_share"] = null_share_was
        rows.append({"profile": profile, "notebook": job.notebook, "job": job.job_id,
                     "models": [mi.name for mi in infos], "drivers": drivers, "seconds": round(secs, 2), "clock": clock,
                     "wall_s": round(wall, 2), "cpu_s": cpu, "load_1m": load,
                     "peak_rss_kb": t.get("peak_rss_kb"), "parameters": _parameters_key(job)})
    return rows


def _parameters_key(job) -> str:
    """The job's profile parameters as canonical JSON: a measured row stands for a job to be planned
    only when these are the same (the drivers do not carry every size a notebook takes: 09's epochs)."""
    return json.dumps(job.parameters, sort_keys=True, default=str)


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
    assumed = G.ASSUMED.format(speed)
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
        G.job_gpu_seconds(nb, fit, groups, functools.partial(job_drivers, job, defaults=defaults), cost_features)
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


def _rate_seconds(job, infos: Sequence, rates: Rates, nb: str, gpu: bool = False) -> tuple[Optional[float], str]:
    """The former estimate (``rates.yaml``: the nearest measured or extrapolated rate, scaled by parameters),
    for notebooks the cost model has no work rates for, and for a GPU rate measured on a GPU."""
    pool = [r for r in rates.rates if r.notebook == nb and r.device.startswith("cuda") == gpu]
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
        parts.append(f"time: {r.notebook[:2]}'s {r.basis} rate on {r.model} (rates.yaml), {how}"
                     + ("" if r.device == "cpu" else f" ({r.device})"))
        if r.sizes != "paper":
            parts.append(f"{r.notebook[:2]}'s rate is at reduced sizes ({r.sizes})")
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
    span: Optional[tuple] = None  # (low, high) seconds: the fit's measured spread
    gpu_parts: dict = field(default_factory=dict)  # device bytes by part (model, twin, work, ...), for advice
    offloads: bool = False  # a model of it has device_map (accelerate offloads what does not fit)
    battery_on_device: bool = False  # its DEVICE work (02, 03) runs on the GPU
    twin: bool = False  # its random-init twin / null is on

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
    parts = {"model": 0, "twin": 0, "work": 0, "float32_model": 0, "float32_twin": 0}  # device bytes, for advice
    for i, (name, mi) in enumerate(zip(names, infos)):
        mp = load_model_params(name)
        if mi.download:
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
        twin_mem = (mi.bytes if rule.twin_whole else mi.twin_weights_bytes()) if twin_i else 0
        twin_generated = twin_i and not rule.twin_whole and (mi.params > TWIN_MAX_PARAMS or rule.twin_sampled)
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
        if rule.models == "list":
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
    import argparse

    ap = argparse.ArgumentParser(prog="python -m geolip_lib.runner.estimate",
                                 description="collect an output root's measured jobs into a timings/ data file")
    ap.add_argument("cmd", choices=["collect"])
    ap.add_argument("root", type=Path)
    ap.add_argument("profile")
    ap.add_argument("out", type=Path)
    ap.add_argument("--note", default="")
    ap.add_argument("--null-share-was", type=float, help="the null share of the code that ran (before a change)")
    ap.add_argument("--k", type=float, default=1.0, help="wall -> CPU calibration of wall-only rows")
    a = ap.parse_args()
    found = collect_timings(a.root, a.profile, null_share_was=a.null_share_was, k=a.k)
    a.out.write_text(json.dumps({"note": a.note, "rows": found}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(found)} job(s) -> {a.out}")
