"""The plan of a run before it starts (``run_all.py --plan``): per job, what it needs and how long
it should take, against this machine or a box described by ``--gpus``, ``--gpu-memory``,
``--host-memory`` and ``--disk`` (:func:`target_box`).

The per-job rows and where their numbers come from: :mod:`.estimate` (with the rules of
:mod:`.memory_rules` and the cost model of :mod:`.cost_model`) and :mod:`.model_sizes` (sizing a
model without loading it); what is free: :mod:`.box`; how the plan is written and what would make
a job fit: :mod:`.plan_text`.
"""
from __future__ import annotations

import math
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

from ..paths import ROOT, cache_root
from .box import (  # noqa: F401 - re-exported
    MAX_GB, MAX_GPUS, HostMemory, _fs_key, available_memory, detect_gpus, host_memory, target_box)
from .estimate import (  # noqa: F401 - re-exported: the rows of the plan
    CUDA_CONTEXT, DISK_KINDS, HEADROOM, RATES_FILE, RULES, DiskItem, JobEstimate, Rates, Rule, estimate_job,
    load_rates)
from .gpu_rates import plan_lines
from .jobs import notebook_defaults, reads_other_jobs
from .model_sizes import (  # noqa: F401 - re-exported: the plan's model sizing
    DTYPE_BYTES, GB, ModelInfo, PlanError, hf_cache_dir, model_info, parse_size_note)
from .speed import Speed, header_lines
from .plan_text import (  # noqa: F401 - re-exported: how the plan is written
    SOURCE_WORDS, TWIN_SWITCH, WIDTH, _count, _duration, _gb, _in_words, _span, advise)


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
    box_mem: Optional[int] = None  # the box's memory (RAM or its cgroup limit); None: free_mem (a what-if, a test)
    mem_note: str = ""  # where box_mem comes from: "24.00 GB RAM", "2.00 GB cgroup v1 limit (/sys/fs/...)"
    speed: Optional[Speed] = None  # the speed factor the CPU estimates were scaled by (.speed.apply_speed)
    speed_alone: Optional[Speed] = None  # the factor of the jobs that run alone (one calibration alone)
    report_s: Optional[float] = None  # the report's (and PDF's) build time after the jobs (.speed.report_seconds)

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
        return out

    def memory_alone(self) -> list[str]:
        """The jobs whose host peak leaves no room for another job beside them at ``--jobs N > 1``: the run
        starts them when nothing else runs, and nothing beside them (:meth:`admits`). Not a shortfall: a
        batch with one large model among small ones runs, two at once where memory allows (the real
        profile's Qwen2.5-Coder jobs on a 24 GB box)."""
        if self.parallel < 2:
            return []
        smallest = min((r.host for r in self.rows), default=0)
        return [r.label for r in self.rows if r.host + smallest > self.usable_mem >= r.host]

    def peaks(self) -> dict:
        """Each job's estimated host peak (bytes) by label: what :meth:`admits` adds up."""
        return {r.label: r.host for r in self.rows}

    def admits(self, label: str, running: Iterable[str]) -> bool:
        """Whether job ``label`` may start beside the jobs ``running`` (labels): their estimated host peaks
        together within the usable memory. A job alone is always admitted (its own fit is a shortfall)."""
        running = list(running)
        if not running:
            return True
        peaks = self.peaks()
        return peaks.get(label, 0) + sum(peaks.get(r, 0) for r in running) <= self.usable_mem

    @property
    def box(self) -> int:
        """The box's host memory a job is judged against: its RAM or cgroup limit (:func:`.box.host_memory`),
        or the memory given (``--host-memory``, tests)."""
        return self.free_mem if self.box_mem is None else self.box_mem

    @property
    def usable_mem(self) -> float:
        """Host memory a plan may use: the box's less the headroom (:data:`.estimate.HEADROOM`)."""
        return self.box * (1 - HEADROOM)

    @property
    def usable_now(self) -> float:
        """What is free now less the headroom kept free of the box: a job above it waits (:meth:`waits`)."""
        return self.free_mem - self.box * HEADROOM

    def waits(self) -> list[str]:
        """The jobs that fit the box's memory but not what is free now (other programs hold the rest): a run
        holds them until it is free (:class:`.admission.MemoryGate`); not a shortfall."""
        return [r.label for r in self.rows if self.usable_now < r.host <= self.usable_mem]

    def _job_shortfalls(self, r) -> list[tuple[str, str]]:
        """(line, kind) per resource one job lacks; kind: "host", "gpus", "gpu"."""
        out = []
        if r.host > self.usable_mem:
            box = f"this box's {self.mem_note}" if self.mem_note else f"{_gb(self.box)} GB available"
            out.append((f"{r.label}: host memory: needs {_gb(r.host)} GB at its peak, {box} ({_gb(self.usable_mem)} "
                        f"GB with {HEADROOM:.0%} kept free)", "host"))
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
        lines = header_lines(self.speed, bool(self.target), self.speed_alone)
        lines += [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
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
        if "host" in self.target or not self.mem_note:
            where = "on the target box (--host-memory)" if "host" in self.target else "available here"
            lines.append(f"host memory: largest peak {_gb(t['host_peak'])} GB{par}; {_gb(self.free_mem)} GB {where}")
        else:
            lines.append(f"host memory: largest peak {_gb(t['host_peak'])} GB{par}; the box: {self.mem_note}; "
                         f"{_gb(self.free_mem)} GB available now")
            wait = self.waits()
            if wait:
                lines.append(f"  would wait for memory (they fit the box, not the {_gb(self.free_mem)} GB free now: "
                             f"{_gb(self.box - self.free_mem)} GB is in use; a run starts them when it is free): "
                             + ", ".join(wait))
        alone = self.memory_alone()
        if alone:
            lines.append(f"  run alone (no other job fits beside their peak; the others run {self.parallel} at once): "
                         + ", ".join(alone))
        if "gpus" in self.target:
            kind = self.target.get("gpu_kind")  # the memory is that kind's datasheet's (no --gpu-memory given)
            given = f"--gpus, --gpu-kind {kind}" if kind else "--gpus, --gpu-memory"
            gpus = (f"{len(self.gpus)} GPU(s) of {_gb(self.gpus[0])} GB on the target box ({given})"
                    if self.gpus else "no GPU on the target box (--gpus 0)")
        else:
            gpus = "free per GPU here: " + (", ".join(_gb(g) for g in self.gpus) or "none")
        lines.append(f"GPU memory: largest peak {_gb(t['gpu_peak'])} GB per GPU; {gpus}")
        total, elapsed = self.timeline()
        lo = sum((r.span or (r.seconds, r.seconds))[0] for r in self.rows if r.seconds is not None)
        hi = sum((r.span or (r.seconds, r.seconds))[1] for r in self.rows if r.seconds is not None)
        unknown = [r for r in self.rows if r.seconds is None]
        report = f"; then the report (HTML, PDF) about {_duration(self.report_s)}" if self.report_s else ""
        lines.append(f"estimated time: {_duration(total)} of job time (range {_duration(lo)} to {_duration(hi)}); "
                     f"about {_duration(elapsed + (self.report_s or 0))} from start to end with {self.parallel} job(s) "
                     f"at once (jobs in profile order; those reading other jobs' results start after every job "
                     f"before them){report}")
        if unknown:
            bound = sum(r.timeout_s or 0 for r in unknown)
            lines.append(f"  not in it: {len(unknown)} job(s) with no measured rate ("
                         + ", ".join(r.label for r in unknown) + ")"
                         + (f"; their timeout_s bounds them: at most {_duration(bound)} more" if bound else ""))
        if any(r.device.startswith("cuda") for r in self.rows):
            rates = self.rates or load_rates()
            lines += plan_lines(rates.gpu_speedup, kind=rates.gpu_kind)
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
        The host memory of the box (a what-if, tests); default: this machine's (:func:`.box.host_memory`: its
        RAM or cgroup limit, and what is available now).
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
    mem = host_memory() if free_mem is None else None  # this machine's box; else the memory given
    return Plan(rows, fs, mem.available if mem else int(free_mem), gpus, parallel, dict(target or {}), after_all,
                rates, box_mem=mem.total if mem else None, mem_note=mem.describe() if mem else "")


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
