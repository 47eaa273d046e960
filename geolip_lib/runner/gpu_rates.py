"""A job's time on a GPU from measured per-step GPU rates (the plan's GPU rows).

Data: ``timings/*.jsonl`` beside this module, a JSON line per (model, step, device) as ``benchmarks/gpu_rates.py
--out`` writes them (a ``{"note": ...}`` line says where a file comes from). ``gpu-h200-2026-11-27.jsonl``: one
NVIDIA H200, torch 2.11 + CUDA 13, float32 random weights at the real architectures (``shapes-*``), commit
86af2d6; ``cpu2-2026-11-27.jsonl``: the same steps on the 2-core development CPU. Steps: ``load`` (build),
``forward`` (256 texts; DINOv2: 64 images), ``battery`` (``weights.run_battery``), ``operators``
(``operators.model.measure_model``), ``null_battery_one_seed`` (``random_init_weights(seed=1)`` + battery).
``*_error`` rows (the null crashed there then) are no rates. Timed before the battery and operators were
batched on the GPU: upper bounds for later code.

The model (simple on purpose): a GPU job of 01, 02, 03 (02 once per model of ``MODELS``) or 06 takes its
notebook's fixed cost (the CPU fit's ``a``: kernel, imports, figures, bootstraps: host work) + the GPU steps
it runs at the rates measured for a model of its size (+ 01's sample matrices, on the host, at the CPU rate):
02: ``runs x (load + battery) + (null seeds x null share + twin) x null_battery_one_seed``;
06: ``runs x (load + operators) + one twin build (load) + null seeds x null share x operators``;
01: ``(runs + null seeds x null share) x load + runs x forward`` (x images / 64 for an image model).
A step at ``P`` parameters: among the measured models of the same family (else all), log-log interpolation
between the two that bracket ``P``, else the nearest scaled by ``(P / P0) ** k``, ``k`` the step's log-log
slope over the measured models (clipped to [0, 2]). Not a GPU/CPU ratio x the CPU estimate: the CPU measured
one shape (T5-base: build 1.7x, forward 18x, battery 3.9x, operators 1.3x slower than the H200) and the GPU's
lead grows with size. ASSUMED: the null step where no model of the family measured it (the battery's rate x
the measured null / battery ratio), 06's null, and every other notebook (CPU estimate / ``gpu_speedup``,
``rates.yaml``); each row says which of its rates are measured (GPU, date) and which assumed. A GPU kind not
measured (``--gpu-kind``, or this machine's GPU: :mod:`.gpu_kinds`) takes the measured kind's rates scaled by the
datasheets, said ASSUMED; a GPU of no known kind takes them as they are, and the rows say whose they are.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from ..lazy import lazy
from ..params import load_model_params
from .gpu_kinds import SCALED_WORDS, GpuKind, kind_of, scaled_rows
from .model_sizes import PlanError

np = lazy("numpy")
torch = lazy("torch")

DATA_DIR = Path(__file__).with_name("timings")
STEPS = ("load", "forward", "battery", "operators", "null_battery_one_seed")
WORDS = {"load": "build", "forward": "forward", "battery": "battery", "operators": "operators",
         "null_battery_one_seed": "null seed"}
MAIN_STEP = {"01_embedding_terrain": "forward", "02_weight_topology": "battery", "06_qk_operators": "operators"}
NULL = "null_battery_one_seed"
ASSUMED = "GPU: the CPU estimate / {:g}, an ASSUMED speed-up (no GPU time measured for this notebook)"
NULL_OVER_BATTERY = 1.5  # assumed when neither device measured both (the CPU measured 1.41, the H200 1.68)


@dataclass(frozen=True)
class StepRate:
    """One measured step (one JSON line)."""

    model: str
    step: str
    device: str  # "cuda" | "cpu"
    seconds: float
    params: int
    family: str
    gpu: str = ""  # torch.cuda.get_device_name (cuda rows)
    date: str = ""
    n_inputs: int = 0
    scaled_from: str = ""  # not measured on this GPU: scaled from this kind's rows (.gpu_kinds.scaled_rows)


def _family(name: str) -> str:
    for n in (name, name.removeprefix("shapes-")):  # shapes-qwen3-4b has no params file: qwen3-4b's family
        try:
            return load_model_params(n).family or ""
        except Exception:  # noqa: BLE001 - a name without a params file: no family
            continue
    return ""


def parse_rows(text: str, where: str) -> list[StepRate]:
    """The rates of one jsonl file; a bad row is one :class:`PlanError` line naming it and the fix."""
    fix = "fix or delete that line (benchmarks/gpu_rates.py --out writes valid rows)"
    rows, params = [], {}
    date = (re.search(r"\d{4}-\d{2}-\d{2}", where) or [""])[0]
    for i, line in ((i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()):
        try:
            r = json.loads(line)
        except ValueError as exc:
            raise PlanError(f"{where} line {i}: not JSON ({exc}); {fix}") from None
        if not isinstance(r, dict) or ("note" in r and "step" not in r):
            continue  # a note line: where the file comes from
        for key in ("model", "step", "device", "seconds"):
            if key not in r:
                raise PlanError(f"{where} line {i}: key {key!r} missing (need model, step, device, seconds); {fix}")
        if str(r["step"]).endswith("error"):
            continue  # the step crashed: no rate
        sec = r["seconds"]
        if r["step"] not in STEPS:
            raise PlanError(f"{where} line {i}: step {r['step']!r} is none of {', '.join(STEPS)}; {fix}")
        if isinstance(sec, bool) or not isinstance(sec, (int, float)) or not math.isfinite(sec) or sec <= 0:
            raise PlanError(f"{where} line {i}: 'seconds' {sec!r} is not a time > 0; {fix}")
        p = params[r["model"]] = r.get("params", params.get(r["model"]))
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p <= 0):
            raise PlanError(f"{where} line {i}: 'params' {p!r} is not a count > 0; {fix}")
        rows.append((i, r))
    out = []
    for i, r in rows:
        if params.get(r["model"]) is None:
            raise PlanError(f"{where} line {i}: no 'params' for {r['model']} on any of its rows; {fix}")
        out.append(StepRate(r["model"], r["step"], str(r["device"]).split(":")[0], float(r["seconds"]),
                            params[r["model"]], r.get("family") or _family(r["model"]), r.get("gpu", ""),
                            r.get("date", date), int(r.get("n_inputs") or 0)))
    return out


@functools.lru_cache(maxsize=4)
def load_step_rates(directory: Path = DATA_DIR) -> tuple:
    """Every measured step of ``directory/*.jsonl`` (:class:`StepRate`)."""
    return tuple(r for f in sorted(Path(directory).glob("*.jsonl"))
                 for r in parse_rows(f.read_text(encoding="utf-8"), f.name))


@functools.lru_cache(maxsize=1)
def local_gpu() -> str:
    """This machine's GPU (``torch.cuda.get_device_name``), "" without CUDA."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""


def gpu_rows(rates: Sequence[StepRate], kind: Optional[GpuKind] = None) -> list[StepRate]:
    """The GPU rows the plan uses: those measured on ``kind`` (``--gpu-kind``; default: this machine's GPU's
    kind, if it is one of :data:`.gpu_kinds.KINDS`), else the most measured GPU's, scaled to ``kind`` by its
    datasheet (:func:`.gpu_kinds.scaled_rows`), else the most measured GPU's as they are."""
    cuda = [r for r in rates if r.device == "cuda"]
    names = [r.gpu for r in cuda]
    if kind is None and local_gpu() in names:
        return [r for r in cuda if r.gpu == local_gpu()]
    kind = kind or kind_of(local_gpu())
    if kind is not None:
        mine = [r for r in cuda if kind_of(r.gpu) == kind]
        if mine:
            picked = max(set(r.gpu for r in mine), key=[r.gpu for r in mine].count)
            return [r for r in mine if r.gpu == picked]
    pick = max(set(names), key=names.count, default="")
    rows = [r for r in cuda if r.gpu == pick]
    return (scaled_rows(rows, kind) or rows) if kind is not None else rows


def rates_words(g: StepRate) -> str:
    """Whose rates a row is: "H200 rates measured 2026-11-27", or scaled from them for another kind."""
    if g.scaled_from:
        return (f"{short_name(g.gpu)} rates ASSUMED: the {g.scaled_from}'s (measured {g.date}) scaled by the "
                f"datasheets' {SCALED_WORDS}")
    return f"{short_name(g.gpu)} rates measured {g.date}"


def short_name(gpu: str) -> str:
    """"NVIDIA H200" -> "H200"."""
    return gpu.replace("NVIDIA ", "").strip() or "GPU"


def _slope(pool: Sequence[StepRate]) -> float:
    x = np.log([r.params for r in pool])
    return float(np.clip(np.polyfit(x, np.log([r.seconds for r in pool]), 1)[0], 0, 2)) if np.ptp(x) > 0 else 1.0


def step_seconds(rows: Sequence[StepRate], step: str, params: int, family: str,
                 slope_of: Optional[str] = None) -> Optional[tuple[float, bool]]:
    """(seconds of ``step`` at ``params``, measured in the family?) or None where no model measured it."""
    pool = [r for r in rows if r.step == step]
    if not pool:
        return None
    fam = [r for r in pool if r.family == family and family]
    use = sorted(fam or pool, key=lambda r: r.params)
    lo, hi = [r for r in use if r.params <= params], [r for r in use if r.params >= params]
    if lo and hi and lo[-1].params != hi[0].params:
        a, b = lo[-1], hi[0]
        t = math.log(params / a.params) / math.log(b.params / a.params)
        return math.exp((1 - t) * math.log(a.seconds) + t * math.log(b.seconds)), bool(fam)
    near = min(use, key=lambda r: abs(math.log(params / r.params)))
    k = _slope([r for r in rows if r.step == (slope_of or step)] if len(pool) < 2 and slope_of else pool)
    return near.seconds * (params / near.params) ** k, bool(fam)


def null_ratio(rates: Sequence[StepRate]) -> tuple[float, str]:
    """(null_battery_one_seed / battery, where measured): the median over the models one device measured both
    on (the GPU's first), else :data:`NULL_OVER_BATTERY`."""
    for dev in ("cuda", "cpu"):
        rows = gpu_rows(rates) if dev == "cuda" else [r for r in rates if r.device == "cpu"]
        got = {(r.model, r.step): r.seconds for r in rows}
        both = [m for m, s in got if s == NULL and (m, "battery") in got]
        if both:
            return float(np.median([got[m, NULL] / got[m, "battery"] for m in both])), f"{', '.join(both)}, {dev}"
    return NULL_OVER_BATTERY, "not measured"


def job_gpu_seconds(nb: str, fit, groups: Sequence[Sequence], drivers: Callable[[Sequence], Mapping],
                    features: Callable[[str, Mapping], Mapping], rates: Optional[Sequence[StepRate]] = None,
                    kind: Optional[GpuKind] = None) -> Optional[tuple[float, str, tuple[float, float]]]:
    """(GPU seconds, the basis in words, (low, high)) of one job of notebook ``nb`` (03: 02, once per model);
    None when ``nb`` has no measured GPU step. ``fit``: the notebook's CPU fit (``estimate.Fit``: fixed cost,
    sample rate, spread); ``groups``: the model infos measured together; ``drivers``: ``estimate.job_drivers``
    of the job for a group; ``features``: ``estimate.cost_features``."""
    rates = load_step_rates() if rates is None else rates
    rows, main = gpu_rows(rates, kind), MAIN_STEP.get(nb)
    if main is None or not all(any(r.step == s for r in rows) for s in ("load", "battery", main)):
        return None
    total, measured, assumed, (ratio, where) = 0.0, set(), set(), null_ratio(rates)

    def at(step, d, fam, n=1.0):
        nonlocal total
        if n <= 0:
            return
        got = step_seconds(rows, step, max(int(d["params"]), 1), fam, slope_of="battery" if step == NULL else None)
        if step == NULL and not (got and got[1]):  # no null measured in this family: the battery x the ratio
            got = (step_seconds(rows, "battery", max(int(d["params"]), 1), fam)[0] * ratio, False)
            assumed.add(f"null seed: ASSUMED, the battery's rate x {ratio:.2f} (null / battery: {where})")
        else:
            measured.add(WORDS[step])
        total += n * got[0]

    for g in groups:
        d, fam = drivers(g), _family(g[0].name) if g else ""
        total += fit.fixed
        runs, nulls = d.get("runs", 1), d.get("null_seeds", 0) * d.get("null_share", 1.0)
        if not d.get("params"):
            continue
        if nb == "02_weight_topology":
            at("load", d, fam, runs), at("battery", d, fam, runs), at(NULL, d, fam, nulls + d.get("twin", 0))
        elif nb == "06_qk_operators":
            at("load", d, fam, runs), at("operators", d, fam, runs)
            if nulls:
                at("load", d, fam), at("operators", d, fam, nulls)
                assumed.add("null seeds: ASSUMED, a twin build + the operators' rate per seed share")
        else:  # 01: builds (trained, twin, null tables), a forward pass, the sample matrices on the host
            imgs = d.get("n_images", 0) / 64 if d.get("image_tokens") else 1.0
            at("load", d, fam, runs + nulls), at("forward", d, fam, runs * imgs)
            total += fit.rates.get("samples", 0.0) * features(nb, dict(d, params=0)).get("samples", 0.0)
    who = rates_words(rows[0]) + (f" (this machine's {short_name(local_gpu())} was not measured)"
                                  if kind is None and local_gpu() not in ("", rows[0].gpu) else "")
    words = [f"GPU: {nb[:2]}'s fixed cost (host, CPU fit) + {', '.join(w for w in WORDS.values() if w in measured)}"
             f" at {who}" + (" (01's sample matrices on the host)" if nb == "01_embedding_terrain" else "")]
    words += [f"GPU {a}" for a in sorted(assumed)] + [f"range = {nb[:2]}'s CPU spread"]
    return total, "; ".join(words), (total / fit.high, total / fit.low)


def checked_speedup(speed, where: str) -> float:
    """``rates.yaml``'s ``gpu_speedup`` (the ASSUMED GPU speed-up of notebooks without measured steps), checked."""
    if not isinstance(speed, (int, float)) or isinstance(speed, bool) or not math.isfinite(speed) or speed <= 0:
        raise PlanError(f"{where}: key 'gpu_speedup': expected a number > 0, got {speed!r}")
    return float(speed)


def plan_lines(speed: float, rates: Optional[Sequence[StepRate]] = None, kind: Optional[GpuKind] = None) -> list[str]:
    """The plan's block under its totals: the GPU step rates it used, per measured model, and the assumption."""
    rows = gpu_rows(load_step_rates() if rates is None else rates, kind)
    out = [f"  assumption: a GPU job of a notebook without measured GPU steps takes its CPU estimate / {speed:g};"
           " a job_timing.json of this output root or a device: cuda rate in rates.yaml replaces it"]
    if not rows:
        return out
    g = rows[0]
    out += [f"  GPU steps of 01, 02, 03, 06: {rates_words(g)} (float32, random weights at "
            "the real shapes; timings/*.jsonl, benchmarks/gpu_rates.py), timed before the battery and operators "
            "were batched on the GPU (upper bounds); seconds:",
            f"    {'model':<28}{'params':>8}" + "".join(f"{WORDS[s]:>11}" for s in STEPS)]
    got = {(r.model, r.step): r for r in rows}
    for m in dict.fromkeys(r.model for r in rows):
        p = next(r.params for r in rows if r.model == m)
        out.append(f"    {m:<28}" + (f"{p / 1e9:>7.1f}B" if p >= 1e9 else f"{p / 1e6:>7.0f}M") + "".join(
            f"{got[m, s].seconds:>11.2f}" if (m, s) in got else f"{'-':>11}" for s in STEPS))
    return out
