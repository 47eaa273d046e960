"""The plan of a run before it starts (``run_all.py --plan``): per job, what it needs.

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

A GPU job's device memory: the CUDA context (:data:`CUDA_CONTEXT`, not measured: no GPU on
the machine this was written on) + what the table puts on the device (model, twin,
``DEVICE`` work). Twins are built on the model's device; generated twins on the CPU.
"""
from __future__ import annotations

import functools
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

GB = 1e9
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}

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
TWIN_TENSORS = 2  # tensors of a generated twin held at once (the one read + the one being drawn)
LARGEST_SHARE, LARGEST_CAP = 0.3, 248_320 * 4096  # size_note bounds (module docstring)
try:  # the on-demand twin's threshold lives with it
    from ..models.twin import TWIN_MAX_PARAMS
except ImportError:  # pragma: no cover - twin.py not there yet
    TWIN_MAX_PARAMS = 1_000_000_000


class PlanError(RuntimeError):
    """A run that cannot fit (one line naming the job and the shortfall), or a model the plan cannot size."""


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


# ============================================================================ models
@dataclass(frozen=True)
class ModelInfo:
    """What the plan knows about one model (see the module docstring for the sources)."""

    name: str
    params: int
    largest: int  # elements of the largest tensor
    width: int
    dtype: str  # load dtype (params file)
    download: int  # bytes of the model's files (hub snapshot / open_clip checkpoint); 0: nothing to fetch
    present: bool  # those files are already on disk
    files_dir: Optional[Path]  # where they are / will be
    has_safetensors: bool  # lm.weights_dir needs no copy
    open_clip_checkpoint: bool  # loaded through a CPU state dict (transient 2 M)
    source: str  # "config on meta device" | "params file size_note"
    download_source: str  # "measured" | "config x dtype" | "size_note" | "none"

    @property
    def bytes(self) -> int:
        return self.params * DTYPE_BYTES[self.dtype]

    @property
    def largest_bytes(self) -> int:
        return self.largest * DTYPE_BYTES[self.dtype]

    def twin_weights_bytes(self) -> int:
        """Memory of the twin's weights: the whole twin up to TWIN_MAX_PARAMS, else a few generated tensors."""
        return self.bytes if self.params <= TWIN_MAX_PARAMS else TWIN_TENSORS * self.largest_bytes


_NUM = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_size_note(note: str) -> tuple[Optional[int], Optional[int]]:
    """``"11B parameters, 22 GB in float16"`` -> ``(11e9, 22e9)``; either is None when absent.

    Decimal units (1 GB = 1e9 bytes), as model cards write them.
    """
    n = re.search(r"([\d.]+)\s*([KMBT]?)\s*param", note, re.I)
    s = re.search(r"([\d.]+)\s*([KMGT])B\b", note)
    params = int(float(n.group(1)) * _NUM[n.group(2).upper()]) if n else None
    size = int(float(s.group(1)) * _NUM[s.group(2).upper()]) if s else None
    return params, size


def _weight_files(d: Path) -> list[Path]:
    files = sorted(d.glob("*.safetensors"))
    return files or sorted(d.glob("pytorch_model*.bin")) + sorted(d.glob("open_clip_*model*.bin"))


def _hf_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE)


def _open_clip_checkpoint(p) -> tuple[Optional[Path], bool]:
    """(checkpoint file when present, True when it is a hub download) of an open_clip ``pretrained``."""
    if not p.pretrained:
        return None, False
    if "/" in p.pretrained or p.pretrained.endswith((".bin", ".pt", ".safetensors")):
        from ..models.loading import _resolve_dir

        f = _resolve_dir(p.pretrained)
        return (f if f.is_file() else None), False
    import open_clip
    from huggingface_hub import try_to_load_from_cache

    repo = (open_clip.get_pretrained_cfg(p.id, p.pretrained) or {}).get("hf_hub", "").strip("/")
    for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
        hit = try_to_load_from_cache(repo, fname, cache_dir=str(_hf_cache_dir())) if repo else None
        if isinstance(hit, str):
            return Path(hit), True
    return None, True


@functools.lru_cache(maxsize=None)
def model_info(name: str) -> ModelInfo:
    """Size a model without loading its weights (see the module docstring for the sources)."""
    from ..models import preflight
    from ..params import load_model_params

    p = load_model_params(name)
    found = preflight.model_config(p)
    files_dir = found[2] if found else None
    if found is not None:
        cfg, kind, _ = found
        model = preflight.meta_model(p, cfg, kind)
        params = sum(t.numel() for t in model.parameters())  # a shared Parameter is listed once
        largest = max(t.numel() for t in model.parameters())
        width = int(cfg.get("hidden_size") or cfg.get("d_model") or cfg.get("embed_dim")
                    or (cfg.get("text_config") or {}).get("hidden_size") or math.isqrt(largest))
        stored = str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32").replace("torch.", "")
        source = "config on meta device"
        download, dl_source = params * DTYPE_BYTES.get(stored, 4), "config x dtype"
        del model
    else:
        n, size = parse_size_note(p.size_note)
        if n is None and size is None:
            raise PlanError(f"model '{p.name}': no config at hand ('{p.id}' is not in the Hugging Face cache and "
                            f"no local_dir) and no size_note; add size_note: \"<N>B parameters, <S> GB\" to "
                            f"params/models/{p.name}.yaml or set local_dir:")
        params = n if n is not None else size // DTYPE_BYTES[p.dtype]
        largest = int(min(LARGEST_SHARE * params, LARGEST_CAP))
        width = math.isqrt(params // 100)
        source = "params file size_note"
        download, dl_source = (size, "size_note") if size is not None else (params * DTYPE_BYTES[p.dtype],
                                                                          "size_note x dtype")
    present, is_oc = False, p.family == "open_clip"
    oc_checkpoint = is_oc and p.source == "open_clip" and not p.local_dir
    if p.source == "tiny":
        download, dl_source, present = 0, "none", True  # built locally (its cache counts as a cache)
    elif oc_checkpoint:
        ckpt, from_hub = _open_clip_checkpoint(p)
        if ckpt is not None:
            download, dl_source, present, files_dir = ckpt.stat().st_size, "measured", True, ckpt.parent
        elif from_hub:
            download = params * 4 if dl_source == "config x dtype" else download  # open_clip checkpoints: float32
            files_dir = _hf_cache_dir()
    elif files_dir is not None and _weight_files(files_dir):
        download = sum(f.stat().st_size for f in _weight_files(files_dir))  # follows the cache's symlinks
        dl_source, present = "measured", True
    elif p.source == "hub" and not p.local_dir:
        files_dir = _hf_cache_dir()
    has_st = (not is_oc and p.source != "tiny" and (files_dir is None or not present
                                                    or any(files_dir.glob("*.safetensors"))))
    if p.source == "tiny":
        has_st = p.dtype == "float32"  # tiny files are float32; another dtype is written lazily
    elif is_oc and not oc_checkpoint:
        has_st = p.dtype == "float32" and files_dir is not None and any(files_dir.glob("*.safetensors"))
    return ModelInfo(name=p.name, params=int(params), largest=int(largest), width=int(width), dtype=p.dtype,
                     download=int(download), present=present, files_dir=files_dir, has_safetensors=has_st,
                     open_clip_checkpoint=oc_checkpoint, source=source, download_source=dl_source)


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
    from ..params import load_model_params

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
                 gpu_free: Sequence[int] = ()) -> JobEstimate:
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
    """
    from ..models.tokenizers import cache_root
    from ..params import ROOT, load_model_params

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
            items.append(DiskItem("hub", ("hub", name), mi.download, mi.files_dir or _hf_cache_dir(), mi.present))
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
    return JobEstimate(label=job.label, notebook=job.notebook, models=tuple(names),
                       params=sum(mi.params for mi in infos), download=sum(mi.download for mi in infos),
                       disk=disk, items=items, host=int(host), gpu=int(gpu), device=device, source=src, notes=notes)


# ============================================================================ the plan
def _fs_key(path: Path) -> tuple[int, Path]:
    """(device id, existing ancestor) of a path that may not exist yet."""
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return os.stat(p).st_dev, p


def detect_gpus() -> list[int]:
    """Free bytes per visible GPU (``torch.cuda.mem_get_info``); empty without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [int(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count())]


def available_memory() -> int:
    """Host memory available to a new process (``psutil.virtual_memory().available``)."""
    import psutil

    return int(psutil.virtual_memory().available)


def _gb(n: float) -> str:
    return f"{n / GB:.2f}"


def _count(n: int) -> str:
    if not n:
        return "-"
    for unit, s in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= unit:
            return f"{n / unit:.1f}{s}"
    return str(n)


@dataclass
class Plan:
    """The rows, the totals and what was found free (see :func:`make_plan`)."""

    rows: list  # JobEstimate, in run order
    free_disk: dict  # filesystem path -> free bytes
    free_mem: int
    gpus: list  # free bytes per GPU
    parallel: int = 1

    def _new_items(self) -> list[tuple[JobEstimate, DiskItem]]:
        """(row, item) for each item the run writes, once per key, in run order."""
        seen, out = set(), []
        for r in self.rows:
            for it in r.items:
                if it.key not in seen:
                    seen.add(it.key)
                    out.append((r, it))
        return out

    def _fs(self, where: Path) -> Path:
        if len(self.free_disk) == 1:  # one filesystem (found so, or given as free_disk=)
            return next(iter(self.free_disk))
        dev = _fs_key(where)[0]
        for root in self.free_disk:
            if _fs_key(root)[0] == dev:
                return root
        return next(iter(self.free_disk))

    @property
    def totals(self) -> dict:
        """New disk by kind and by filesystem (shared items once), memory peaks, GPU peak."""
        by_kind = {k: 0 for k in DISK_KINDS}
        by_fs: dict[Path, int] = {}
        for _, it in self._new_items():
            by_kind[it.kind] = by_kind.get(it.kind, 0) + it.new
            fs = self._fs(it.where)
            by_fs[fs] = by_fs.get(fs, 0) + it.new
        hosts = sorted((r.host for r in self.rows), reverse=True)
        gpus = sorted((r.gpu for r in self.rows if r.gpu), reverse=True)
        return {"disk": sum(by_kind.values()), "disk_by_kind": by_kind, "disk_by_fs": by_fs,
                "download": sum(it.bytes for _, it in self._new_items() if it.kind == "hub" and not it.present),
                "host_peak": hosts[0] if hosts else 0, "host_parallel": sum(hosts[:self.parallel]),
                "gpu_peak": gpus[0] if gpus else 0, "gpu_parallel": sum(gpus[:self.parallel])}

    def shortfalls(self) -> list[str]:
        """One line per shortfall: the job, the resource, what it needs and what there is."""
        out = []
        used: dict[Path, int] = {}
        full: set = set()
        for r, it in self._new_items():
            fs = self._fs(it.where)
            used[fs] = used.get(fs, 0) + it.new
            if it.new and used[fs] > self.free_disk[fs] and fs not in full:
                full.add(fs)
                out.append(f"{r.label}: disk on {fs}: the run needs {_gb(used[fs])} GB there up to this job "
                           f"({it.kind}: {_gb(it.new)} GB for {it.key[1]}), {_gb(self.free_disk[fs])} GB free")
        for r in self.rows:
            if r.host > self.free_mem:
                out.append(f"{r.label}: host memory: needs {_gb(r.host)} GB at its peak, "
                           f"{_gb(self.free_mem)} GB available")
            if r.n_gpus and r.n_gpus > len(self.gpus):
                have = f"{len(self.gpus)} found" if self.gpus else "none found"
                out.append(f"{r.label}: GPU: device {r.device} needs {r.n_gpus} GPU(s), {have}; "
                           "run it on a GPU machine or set device: cpu in its model's params file")
            elif r.n_gpus and r.gpu > min(self.gpus[:r.n_gpus]):
                out.append(f"{r.label}: GPU memory: needs {_gb(r.gpu)} GB per GPU, "
                           f"{_gb(min(self.gpus[:r.n_gpus]))} GB free on {r.device}")
        if self.parallel > 1:
            top = sorted(self.rows, key=lambda r: r.host, reverse=True)[:self.parallel]
            need = sum(r.host for r in top)
            if len(top) > 1 and need > self.free_mem and all(r.host <= self.free_mem for r in top):
                out.append(f"{', '.join(r.label for r in top)}: host memory with --jobs {self.parallel}: their peaks "
                           f"add up to {_gb(need)} GB, {_gb(self.free_mem)} GB available; lower --jobs")
        return out

    def render(self) -> str:
        """A fixed-width table (sizes in GB, decimal), the totals, the free resources and the verdict."""
        head = ("job", "params", "download", "hub", "caches", "twin", "host", "GPU", "device", "from")
        rows = [(r.label, _count(r.params), _gb(r.download) if r.download else "-",
                 *(_gb(r.disk.get(k, 0)) for k in ("hub", "caches", "twin")), _gb(r.host),
                 _gb(r.gpu) if r.gpu else "-", r.device, r.source + "".join(f"; {n}" for n in r.notes))
                for r in self.rows]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        fmt = "  ".join(f"{{:{'<' if i in (0, 8, 9) else '>'}{w}}}" for i, w in enumerate(widths[:-1])) + "  {}"
        lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths[:-1]), "-" * 4)]
        lines += [fmt.format(*row) for row in rows]
        t = self.totals
        k = t["disk_by_kind"]
        lines += ["", f"disk (new, shared files once): {_gb(t['disk'])} GB = hub {_gb(k['hub'])} + caches "
                  f"{_gb(k['caches'])} + twin {_gb(k['twin'])} + outputs {_gb(k['outputs'])}"]
        lines += [f"  on {fs}: {_gb(n)} GB needed, {_gb(self.free_disk[fs])} GB free"
                  for fs, n in t["disk_by_fs"].items()]
        par = f"; {self.parallel} at once: {_gb(t['host_parallel'])} GB" if self.parallel > 1 else ""
        lines.append(f"host memory: largest peak {_gb(t['host_peak'])} GB{par}; {_gb(self.free_mem)} GB available")
        gpus = ", ".join(_gb(g) for g in self.gpus) or "none"
        lines.append(f"GPU memory: largest peak {_gb(t['gpu_peak'])} GB per GPU; free per GPU: {gpus}")
        short = self.shortfalls()
        lines += ["", "does not fit:" if short else "fits."] + [f"  {s}" for s in short]
        return "\n".join(lines)


def make_plan(jobs: Iterable, devices: Optional[Mapping[str, str]] = None, free_disk: Optional[int] = None,
              free_mem: Optional[int] = None, gpus: Optional[Sequence[int]] = None, *, parallel: int = 1,
              out_root: Optional[Path] = None, defaults: Optional[Callable[[str], Mapping]] = None) -> Plan:
    """Estimate every job and find what is free.

    Parameters
    ----------
    jobs : iterable of Job-like
    devices : mapping label -> device, optional
        The device each job gets (the executor's assignment); default: :func:`estimate_job`'s.
    free_disk : int, optional
        Free bytes, taken as one filesystem holding everything (tests, what-ifs); default:
        ``shutil.disk_usage`` of the output root, the project cache and the HF cache.
    free_mem : int, optional
        Default :func:`available_memory`.
    gpus : sequence of int, optional
        Free bytes per GPU; default :func:`detect_gpus` (``[]``: no GPU).
    parallel : int
        Jobs run at once (``--jobs N``): the N largest host peaks must fit together.
    defaults : callable, optional
        See :func:`estimate_job` (default: ``geolip_lib.runner.jobs.notebook_defaults`` when present).
    """
    from ..models.tokenizers import cache_root
    from ..params import ROOT

    if parallel < 1:
        raise ValueError(f"parallel: expected >= 1 jobs at once, got {parallel}")
    if defaults is None:
        try:
            from .jobs import notebook_defaults as defaults
        except ImportError:  # pragma: no cover - the runner package without its jobs module
            defaults = None
    jobs = list(jobs)
    gpus = detect_gpus() if gpus is None else [int(g) for g in gpus]
    devices = dict(devices or {})
    rows = []
    for job in jobs:
        root = Path(out_root) if out_root else ROOT / "reports" / str(getattr(job, "profile", ""))
        rows.append(estimate_job(job, devices.get(job.label), out_root=root, defaults=defaults,
                                 n_gpus=len(gpus), gpu_free=gpus))
    places = [Path(out_root) if out_root else ROOT / "reports", cache_root(), _hf_cache_dir()]
    fs: dict[Path, int] = {}
    if free_disk is not None:
        fs[_fs_key(places[0])[1]] = int(free_disk)
    else:
        for place in places:
            dev, existing = _fs_key(place)
            if all(_fs_key(k)[0] != dev for k in fs):
                fs[existing] = shutil.disk_usage(existing).free
    return Plan(rows, fs, available_memory() if free_mem is None else int(free_mem), gpus, parallel)


def check_fit(plan: Plan) -> None:
    """Raise :class:`PlanError` with the first shortfall (one line), if any."""
    short = plan.shortfalls()
    if short:
        more = f" (+{len(short) - 1} more; see --plan)" if len(short) > 1 else ""
        raise PlanError(f"cannot fit: {short[0]}{more}")


__all__ = ["DiskItem", "JobEstimate", "ModelInfo", "Plan", "PlanError", "RULES", "Rule", "available_memory",
           "check_fit", "detect_gpus", "estimate_job", "make_plan", "model_info", "parse_size_note"]
