"""The former time estimate, kept as data: ``rates.yaml`` (measured and extrapolated job times, its header says
where each comes from), scaled by parameters from the nearest rate. Used for notebooks the cost model
(:mod:`.cost_model`) has no work rates for, and for a GPU rate measured on a GPU."""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import yaml

from ..params import load_model_params
from . import gpu_rates as G
from .gpu_kinds import GpuKind, assumed_speedup
from .model_sizes import PlanError

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
    gpu_kind: Optional[GpuKind] = None  # --gpu-kind: the GPU the plan's GPU rows are for (None: this machine's)
    speedup_note: str = ""  # how gpu_speedup was made from rates.yaml's for gpu_kind

    def for_kind(self, kind: Optional[GpuKind]) -> "Rates":
        """These rates for GPUs of ``kind``: its measured or scaled step rates (:mod:`.gpu_kinds`) and the
        ASSUMED speed-up x its memory bandwidth / the H200's (the GPU the speed-up is stated for)."""
        if kind is None:
            return self
        speed = round(assumed_speedup(self.gpu_speedup, kind), 2)
        note = "" if speed == self.gpu_speedup else \
            f" (rates.yaml's {self.gpu_speedup:g} x the {kind.name}'s / H200's memory bandwidth)"
        return dataclasses.replace(self, gpu_kind=kind, gpu_speedup=speed, speedup_note=note)


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


def _nearest(pool: Sequence[Rate], params: int, family: str, profile: str) -> Rate:
    """The rate at the job's profile's sizes (else the paper's, else any), of the same model family when
    there is one, nearest in parameters (log scale)."""
    pool = [r for r in pool if r.sizes == profile] or [r for r in pool if r.sizes == "paper"] or list(pool)
    pool = [r for r in pool if r.family == family] or pool
    return min(pool, key=lambda r: abs(math.log(max(params, 1) / max(r.params, 1))))


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

