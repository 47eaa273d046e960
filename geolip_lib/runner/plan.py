"""The plan of a run before it starts (``run_all.py --plan``): per job, what it needs and how long
it should take, against this machine or a box described by ``--gpus``, ``--gpu-memory``,
``--host-memory`` and ``--disk`` (:func:`target_box`).

The per-job rows and where their numbers come from: :mod:`.estimate` (rules, measured
constants, the time rates of ``rates.yaml``) and :mod:`.model_sizes` (sizing a model without
loading it).
"""
from __future__ import annotations

import math
import os
import re
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

import psutil
import torch

from ..paths import ROOT, cache_root
from .estimate import (  # noqa: F401 - re-exported: the rows of the plan
    CUDA_CONTEXT, DISK_KINDS, HEADROOM, RATES_FILE, RULES, DiskItem, JobEstimate, Rates, Rule, estimate_job,
    load_rates)
from .gpu_rates import plan_lines
from .jobs import notebook_defaults, reads_other_jobs
from .model_sizes import (  # noqa: F401 - re-exported: the plan's model sizing
    DTYPE_BYTES, GB, TWIN_MAX_PARAMS, ModelInfo, PlanError, hf_cache_dir, model_info, parse_size_note)


# ============================================================================ the plan
def _fs_key(path: Path) -> tuple[int, Path]:
    """(device id, existing ancestor) of a path that may not exist yet."""
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    return os.stat(p).st_dev, p


def detect_gpus() -> list[int]:
    """Free bytes per visible GPU (``torch.cuda.mem_get_info``); empty without CUDA."""
    if not torch.cuda.is_available():
        return []
    return [int(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count())]


def available_memory() -> int:
    """Host memory available to a new process (``psutil.virtual_memory().available``)."""
    return int(psutil.virtual_memory().available)


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


MAX_GPUS = 4096  # --gpus above this is refused (the plan holds one entry per GPU)
MAX_GB = {"--gpu-memory": 10_000, "--host-memory": 1_000_000, "--disk": 100_000_000}  # GB (decimal)


WIDTH = 120  # the plan's lines fit a 120-column terminal
# the rows' "from" parts, in words (model_sizes / estimate write them short, the tests read them so)
SOURCE_WORDS = [
    (r"config on meta device", "parameters counted on the model's config (built without weights)"),
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


@dataclass
class Plan:
    """The rows, the totals and what was found free (see :func:`make_plan`)."""

    rows: list  # JobEstimate, in run order
    free_disk: dict  # filesystem path -> free bytes
    free_mem: int
    gpus: list  # free bytes per GPU
    parallel: int = 1
    target: dict = field(default_factory=dict)  # what was given for a box that is not this one (target_box)
    after_all: frozenset = frozenset()  # labels of jobs that start only when every job before them finished
    rates: Optional[Rates] = None

    def _new_items(self) -> list[tuple[JobEstimate, DiskItem]]:
        """(row, item) for each item the run writes, once per key, in run order."""
        seen, out = set(), []
        for r in self.rows:
            for it in r.items:
                if it.key not in seen:
                    seen.add(it.key)
                    out.append((r, it))
        return out

    @property
    def disk_unknown(self) -> bool:
        """A plan for a target box whose disk was not given: this machine's disk says nothing about it."""
        return "disk" in self.target and self.target["disk"] is None

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
            if self.disk_unknown:
                continue
            if it.new and used[fs] > self.free_disk[fs] and fs not in full:
                full.add(fs)
                out.append(f"{r.label}: disk on {fs}: the run needs {_gb(used[fs])} GB there up to this job "
                           f"({it.kind}: {_gb(it.new)} GB for {it.key[1]}), {_gb(self.free_disk[fs])} GB free")
        for r in self.rows:
            out += [line for line, _ in self._job_shortfalls(r)]
        if self.parallel > 1:
            top = sorted(self.rows, key=lambda r: r.host, reverse=True)[:self.parallel]
            need = sum(r.host for r in top)
            if len(top) > 1 and need > self.usable_mem and all(r.host <= self.usable_mem for r in top):
                out.append(f"{', '.join(r.label for r in top)}: host memory with --jobs {self.parallel}: their peaks "
                           f"add up to {_gb(need)} GB, {_gb(self.free_mem)} GB available; lower --jobs")
        return out

    @property
    def usable_mem(self) -> float:
        """Host memory a plan may use: what is available less the headroom (:data:`.estimate.HEADROOM`)."""
        return self.free_mem * (1 - HEADROOM)

    def _job_shortfalls(self, r) -> list[tuple[str, str]]:
        """(line, kind) per resource one job lacks; kind: "host", "gpus", "gpu"."""
        out = []
        if r.host > self.usable_mem:
            out.append((f"{r.label}: host memory: needs {_gb(r.host)} GB at its peak, {_gb(self.free_mem)} GB "
                        f"available ({_gb(self.usable_mem)} GB with {HEADROOM:.0%} kept free)", "host"))
        if r.n_gpus and r.n_gpus > len(self.gpus):
            have = f"{len(self.gpus)} found" if self.gpus else "none found"
            out.append((f"{r.label}: GPU: device {r.device} needs {r.n_gpus} GPU(s), {have}; "
                        "run it on a GPU machine or set device: cpu in its model's params file", "gpus"))
        elif not r.device.startswith(("cpu", "cuda")):  # the executor could not place it ("needs 2 GPUs, has 1")
            out.append((f"{r.label}: GPU: {r.device}", "gpus"))
        elif r.n_gpus and r.gpu > min(self.gpus[:r.n_gpus]) * (1 - HEADROOM):
            cap = min(self.gpus[:r.n_gpus])
            out.append((f"{r.label}: GPU memory: needs {_gb(r.gpu)} GB per GPU, {_gb(cap)} GB free on {r.device} "
                        f"({_gb(cap * (1 - HEADROOM))} GB with {HEADROOM:.0%} kept free)", "gpu"))
        return out

    def over_time(self, r, certain: bool = True) -> Optional[str]:
        """One line when job ``r``'s estimate exceeds its time limit (``timeout_s``): ``certain``, the low end
        of its range does ("will not finish"); else, its estimate does ("may not finish"). Said, not enforced:
        an estimate is not a measurement (notebooks measured on tiny models only are extrapolated), so a run
        is never refused for time; :meth:`time_lines` lists them in the plan and before a run."""
        if r.seconds is None or not r.timeout_s:
            return None
        low, high = r.span or (r.seconds, r.seconds)
        if (low if certain else r.seconds) <= r.timeout_s or (not certain and low > r.timeout_s):
            return None
        gpu = "" if r.device.startswith("cuda") else ", or a GPU"
        verb = "will not finish" if certain else "may not finish"
        if self.extrapolated(r):
            verb += " (an extrapolated estimate)"
        return (f"{r.label}: time: {verb}: estimated {_span(r.seconds, r.span)} against its limit of "
                f"{_duration(r.timeout_s)}; to finish: --timeout {int(math.ceil(high * 1.2))} (or timeout_s: in "
                f"its model's params file), a smaller sample{gpu}")

    def time_lines(self, measured_only: bool = False) -> list[str]:
        """``will not finish`` / ``may not finish`` lines, one per job estimated past its time limit
        (``measured_only``: leave out estimates extrapolated from another notebook's or size's rate)."""
        rows = [r for r in self.rows if not (measured_only and self.extrapolated(r))]
        return [ln for ln in (self.over_time(r) or self.over_time(r, certain=False) for r in rows) if ln]

    @staticmethod
    def extrapolated(r) -> bool:
        """An estimate not fitted to this notebook's measured jobs (rates.yaml's extrapolations, no rate)."""
        basis = r.time_basis or ""
        return "extrapolated" in basis or "no measured rate" in basis or "ASSUMED" in basis

    def unfit(self) -> dict:
        """label -> its shortfall lines, for the jobs that cannot run on this box (``--skip-unfit`` leaves them
        out; disk and the sum of parallel peaks are the run's, not one job's: :meth:`shortfalls` keeps them)."""
        out = {}
        for r in self.rows:
            lines = [line for line, _ in self._job_shortfalls(r)]
            if lines:
                out[r.label] = lines
        return out

    def advice(self, r) -> list[str]:
        """What would make one job fit, each option with the memory it would then need (see :func:`advise`)."""
        return advise(r, self)

    def timeline(self) -> tuple[float, float]:
        """(job time summed, elapsed with ``parallel`` jobs at once) of the jobs with an estimate, in seconds.

        Jobs start in profile order as slots free up (one slot per job, GPU groups not modelled); a job of
        ``after_all`` (03, 15: they read other jobs' results) waits until every job before it has finished.
        """
        slots, finish, last_start = [0.0] * self.parallel, [], 0.0
        for r in self.rows:
            sec = r.seconds or 0.0
            i = min(range(len(slots)), key=slots.__getitem__)
            start = max(slots[i], last_start)
            if r.label in self.after_all and finish:
                start = max(start, max(finish))
            slots[i] = start + sec
            finish.append(start + sec)
            last_start = start
        return sum(r.seconds or 0.0 for r in self.rows), max(finish, default=0.0)

    def render(self) -> str:
        """A fixed-width table (sizes in GB, decimal; times estimated), its notes, the totals against the
        free resources (or the target box's), and the verdict; every line fits :data:`WIDTH` columns."""
        notes: dict[str, int] = {}

        def keys(r) -> str:
            parts = [_in_words(p) for p in r.source.split("; ")] + list(r.notes) + r.time_basis.split("; ")
            return ",".join(str(notes.setdefault(p, len(notes) + 1)) for p in parts if p)

        head = ("job", "params", "disk GB", "host GB", "GPU GB", "device", "est. time", "notes")
        rows = [(r.label, _count(r.params), _gb(sum(r.disk.values())), _gb(r.host), _gb(r.gpu) if r.gpu else "-",
                 r.device, _span(r.seconds, r.span) if r.seconds is not None else "?", keys(r)) for r in self.rows]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        # the job column takes what the others leave of WIDTH; a longer job name gets a line of its own
        widths[0] = max(len(head[0]), min(widths[0], WIDTH - sum(widths[1:]) - 2 * (len(widths) - 1)))
        left = (0, 5, 7)
        fmt = "  ".join(f"{{:{'<' if i in left else '>'}{w}}}" for i, w in enumerate(widths))
        lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
        for row in rows:
            if len(row[0]) > widths[0]:
                lines += [row[0], fmt.format("", *row[1:])]
            else:
                lines.append(fmt.format(*row))
        lines = [ln.rstrip() for ln in lines]
        lines += ["", "disk GB: new disk the job writes (hub files, caches, random-init twin, outputs; files already "
                  "on disk count 0). host GB, GPU GB: peak memory, per GPU, in the dtype the job loads; each "
                  f"notebook's rule is in geolip_lib/runner/estimate.py; a job fits when its peak is at most "
                  f"{1 - HEADROOM:.0%} of the memory ({HEADROOM:.0%} headroom). est. time: estimate (low-high) from "
                  "the cost model fitted to measured jobs (geolip_lib/runner/timings/); ? = no rate. Notes:"]
        lines += [f"  {i}. {p}" for p, i in notes.items()]
        t = self.totals
        k = t["disk_by_kind"]
        lines += ["", f"disk (new, shared files once): {_gb(t['disk'])} GB = hub {_gb(k['hub'])} + caches "
                  f"{_gb(k['caches'])} + twin {_gb(k['twin'])} + outputs {_gb(k['outputs'])}; "
                  f"of it downloads: {_gb(t['download'])} GB"]
        if self.disk_unknown:
            lines.append("  on the target box: not judged (give --disk GB: its free disk)")
        else:
            given = " (the target box: --disk)" if self.target.get("disk") else ""
            lines += [f"  on {fs}: {_gb(n)} GB needed, {_gb(self.free_disk[fs])} GB free{given}"
                      for fs, n in t["disk_by_fs"].items()]
        par = f"; {self.parallel} at once: {_gb(t['host_parallel'])} GB" if self.parallel > 1 else ""
        where = "on the target box (--host-memory)" if "host" in self.target else "available here"
        lines.append(f"host memory: largest peak {_gb(t['host_peak'])} GB{par}; {_gb(self.free_mem)} GB {where}")
        if "gpus" in self.target:
            gpus = (f"{len(self.gpus)} GPU(s) of {_gb(self.gpus[0])} GB on the target box (--gpus, --gpu-memory)"
                    if self.gpus else "no GPU on the target box (--gpus 0)")
        else:
            gpus = "free per GPU here: " + (", ".join(_gb(g) for g in self.gpus) or "none")
        lines.append(f"GPU memory: largest peak {_gb(t['gpu_peak'])} GB per GPU; {gpus}")
        total, elapsed = self.timeline()
        lo = sum((r.span or (r.seconds, r.seconds))[0] for r in self.rows if r.seconds is not None)
        hi = sum((r.span or (r.seconds, r.seconds))[1] for r in self.rows if r.seconds is not None)
        unknown = [r for r in self.rows if r.seconds is None]
        lines.append(f"estimated time: {_duration(total)} of job time (range {_duration(lo)} to {_duration(hi)}); "
                     f"about {_duration(elapsed)} from start to end with {self.parallel} job(s) at once (jobs in "
                     f"profile order; those reading other jobs' results start after every job before them)")
        if unknown:
            bound = sum(r.timeout_s or 0 for r in unknown)
            lines.append(f"  not in it: {len(unknown)} job(s) with no measured rate ("
                         + ", ".join(r.label for r in unknown) + ")"
                         + (f"; their timeout_s bounds them: at most {_duration(bound)} more" if bound else ""))
        if any(r.device.startswith("cuda") for r in self.rows):
            lines += plan_lines((self.rates or load_rates()).gpu_speedup)
        over = self.time_lines()
        if over:
            lines += ["", f"time limits: {len(over)} job(s) estimated past their limit (the whole notebook; a job is "
                      "stopped there):"] + [f"  {ln}" for ln in over]
        short = self.shortfalls()
        fits = "fits." if not over else (f"fits in memory and disk; {len(over)} job(s) estimated past their time "
                                         "limit (above).")
        lines += ["", f"does not fit: {len(short)} problem(s), jobs that cannot run as planned:" if short else fits]
        unfit = self.unfit()
        advised = set()
        for s_ in short:
            lines.append(f"  {s_}")
            label = s_.split(": ", 1)[0]
            if label in unfit and label not in advised:
                advised.add(label)
                row = next(r for r in self.rows if r.label == label)
                lines += [f"      to fit: {a}" for a in self.advice(row)]
        if unfit:
            n_ok = len(self.rows) - len(unfit)
            lines += ["", f"--skip-unfit runs the {n_ok} job(s) that fit and leaves out {len(unfit)}: "
                      + ", ".join(unfit)]
        out = []
        for ln in lines:  # wrap what is longer than WIDTH, continuation lines indented
            indent = " " * (len(ln) - len(ln.lstrip()) + 4)
            out += textwrap.wrap(ln, WIDTH, subsequent_indent=indent, break_on_hyphens=False) or [""]
        return "\n".join(out)


# ============================================================================ what would make a job fit
TWIN_SWITCH = {"01_embedding_terrain": "RANDOM_INIT_BASELINE", "02_weight_topology": "NULL_BASELINE",
               "04_wordnet_alignment": "RANDOM_INIT_BASELINE", "06_qk_operators": "RANDOM_INIT_BASELINE",
               "07_cross_scale_projection": "B_RANDOM_INIT"}


def advise(r, plan: "Plan") -> list[str]:
    """What would make job ``r`` fit ``plan``'s box, one option a line with what it would then need and
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


def target_box(gpus: Optional[int] = None, gpu_memory: Optional[float] = None, host_memory: Optional[float] = None,
               disk: Optional[float] = None) -> dict:
    """The what-if of :func:`make_plan` for a box that is not this one (``run_all.py --plan --gpus 8
    --gpu-memory 80 --host-memory 1000 --disk 2000``; sizes in GB, decimal): keyword arguments for
    :func:`make_plan` plus ``gpu_ids`` (the GPU ids to hand out). What is not given is this machine's.
    A bad combination is one :class:`PlanError` line naming the flag. Without ``disk`` the disk of a
    target box is not judged (this machine's free disk says nothing about it)."""
    for flag, v in (("--gpus", gpus), ("--gpu-memory", gpu_memory), ("--host-memory", host_memory), ("--disk", disk)):
        if v is None:
            continue
        if not math.isfinite(v):
            raise PlanError(f"{flag} {v}: give a finite number" + (" of GPUs" if flag == "--gpus" else " (GB)"))
        if v < 0 or (v == 0 and flag != "--gpus"):
            raise PlanError(f"{flag} {v:g}: give a number {'>= 0' if flag == '--gpus' else '> 0 (GB)'}")
        limit = MAX_GPUS if flag == "--gpus" else MAX_GB[flag]
        if v > limit:
            raise PlanError(f"{flag} {v:g}: over the limit of {limit:g}{'' if flag == '--gpus' else ' GB'} the plan "
                            f"accepts; give the box's real {'GPU count' if flag == '--gpus' else 'size'}")
    if gpu_memory is not None and gpus is None:
        raise PlanError(f"--gpu-memory {gpu_memory:g}: give --gpus N too (how many GPUs of that memory)")
    if gpus and gpu_memory is None:
        raise PlanError(f"--gpus {gpus}: give --gpu-memory GB too (the memory of one GPU, e.g. 80 for an H100 80GB)")
    if (gpus is not None or disk is not None) and host_memory is None:
        raise PlanError("a target box (--gpus / --disk) needs --host-memory GB too: its RAM available to the run "
                        "(without it the plan would judge host memory against this machine's)")
    out: dict = {"target": {}}
    if gpus is not None:
        out["gpus"] = [int(gpu_memory * GB)] * int(gpus) if gpus else []
        out["gpu_ids"] = [str(i) for i in range(int(gpus))]
        out["target"]["gpus"] = gpus
    if host_memory is not None:
        out["free_mem"] = int(host_memory * GB)
        out["target"]["host"] = host_memory
    if disk is not None:
        out["free_disk"] = int(disk * GB)
        out["target"]["disk"] = disk
    elif out["target"]:  # another box, its disk not given: not judged against this machine's
        out["target"]["disk"] = None
    return out


def make_plan(jobs: Iterable, devices: Optional[Mapping[str, str]] = None, free_disk: Optional[int] = None,
              free_mem: Optional[int] = None, gpus: Optional[Sequence[int]] = None, *, parallel: int = 1,
              out_root: Optional[Path] = None, defaults: Optional[Callable[[str], Mapping]] = None,
              target: Optional[Mapping] = None, rates: Optional[Rates] = None) -> Plan:
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
    target : mapping, optional
        What of ``gpus`` / ``free_mem`` / ``free_disk`` describes a target box (:func:`target_box`), for the text.
    rates : Rates, optional
        The job times the estimates are scaled from (default ``rates.yaml``: :func:`.estimate.load_rates`).
    """
    if parallel < 1:
        raise ValueError(f"parallel: expected >= 1 jobs at once, got {parallel}")
    if defaults is None:
        defaults = notebook_defaults
    jobs = list(jobs)
    gpus = detect_gpus() if gpus is None else [int(g) for g in gpus]
    devices = dict(devices or {})
    rows = []
    for job in jobs:
        root = Path(out_root) if out_root else ROOT / "reports" / str(getattr(job, "profile", ""))
        rows.append(estimate_job(job, devices.get(job.label), out_root=root, defaults=defaults,
                                 n_gpus=len(gpus), gpu_free=gpus, rates=rates))
        rows[-1].timeout_s = getattr(job, "timeout_s", None)
    places = [Path(out_root) if out_root else ROOT / "reports", cache_root(), hf_cache_dir()]
    fs: dict[Path, int] = {}
    if free_disk is not None:
        fs[_fs_key(places[0])[1]] = int(free_disk)
    else:
        for place in places:
            dev, existing = _fs_key(place)
            if all(_fs_key(k)[0] != dev for k in fs):
                fs[existing] = shutil.disk_usage(existing).free
    after_all = frozenset(j.label for j in jobs if _reads_other_jobs(j.notebook))
    return Plan(rows, fs, available_memory() if free_mem is None else int(free_mem), gpus, parallel,
                dict(target or {}), after_all, rates)


def _reads_other_jobs(notebook: str) -> bool:
    try:
        return reads_other_jobs(notebook)
    except (OSError, ValueError):  # a notebook the plan was given without its file (tests, what-ifs)
        return False


def check_fit(plan: Plan) -> None:
    """Raise :class:`PlanError` with the first shortfall (one line), if any."""
    short = plan.shortfalls()
    if short:
        more = f" (+{len(short) - 1} more; see --plan)" if len(short) > 1 else ""
        raise PlanError(f"cannot fit: {short[0]}{more}")


__all__ = ["DiskItem", "JobEstimate", "ModelInfo", "Plan", "PlanError", "RULES", "Rule", "available_memory",
           "check_fit", "detect_gpus", "estimate_job", "make_plan", "model_info", "parse_size_note", "target_box"]
