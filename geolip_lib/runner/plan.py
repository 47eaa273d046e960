"""The plan of a run before it starts (``run_all.py --plan``): per job, what it needs.

The per-job rows and where their numbers come from: :mod:`.estimate` (rules, measured
constants) and :mod:`.model_sizes` (sizing a model without loading it).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Optional, Sequence

import psutil
import torch

from ..paths import ROOT, cache_root
from .estimate import (  # noqa: F401 - re-exported: the rows of the plan
    DISK_KINDS, RULES, DiskItem, JobEstimate, Rule, estimate_job)
from .jobs import notebook_defaults
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
                                 n_gpus=len(gpus), gpu_free=gpus))
    places = [Path(out_root) if out_root else ROOT / "reports", cache_root(), hf_cache_dir()]
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
