"""The cost model of a job's time, fitted to measured jobs (``timings/*.json`` beside this module).

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

import contextlib
import dataclasses
import functools
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..lazy import lazy
from .memory_rules import ALL_ENTRIES, RULES, _param
from .remembered import file_digest, remembered

np = lazy("numpy")
_optimize = lazy("scipy.optimize")  # nnls: scipy.optimize takes ~1 s to import, needed only to fit the model

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
    (1: the whole model, every seed), as notebooks 01, 02 and 06 build their nulls (a sample of each seed's layers)
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
    with one line on stderr naming it (NaN or negative seconds ended every plan in a traceback)."""
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
    coef, _ = _optimize.nnls(X * w[:, None] / scale, y * w)
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
    """notebook -> :class:`Fit` over every measured job of ``timings/``. Remembered by the files' contents
    and the library's code (:mod:`.remembered`: the fit imports scipy), with the warnings reading them
    printed, which are printed again whenever the fits are read back."""
    def compute() -> list:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):  # load_timings' warnings: kept with the fits
            rows = load_timings(directory)
            fits = {nb: fit_notebook(nb, rows) for nb in sorted({r["notebook"] for r in rows})}
        return [err.getvalue(), {nb: dataclasses.asdict(f) if f is not None else None for nb, f in fits.items()}]

    d = Path(directory)
    key = [str(d), [[f.name, file_digest(f)] for f in sorted(d.glob("*.json"))]]
    warnings, fits = remembered("fitted-costs", key, compute, check=_fits_ok)
    if warnings:
        sys.stderr.write(warnings)
    return {nb: Fit(**f) if f is not None else None for nb, f in fits.items()}


def _fits_ok(value) -> bool:
    names = {f.name for f in dataclasses.fields(Fit)}
    return (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], dict)
            and all(f is None or (isinstance(f, dict) and set(f) == names) for f in value[1].values()))


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


CORES = 2  # the development machine's cores (where timings/ was measured)


def load_slowdown(load: float, cores: int = CORES, k: float = 1.0) -> float:
    """Wall / CPU seconds of a one-thread job at 1-minute load ``load`` on ``cores`` cores: it got about
    ``min(1, k x cores / load)`` of a core (``k`` > 1: the load average counts more than what competes)."""
    return max(1.0, float(load) / (k * cores)) if load else 1.0


def held_out_wall_ratios(rows: Sequence[Mapping], cores: int = CORES, k: float = 1.0
                         ) -> list[tuple[dict, float]]:
    """Actual / planned wall time of each job measured both ways (its CPU seconds and its wall time at its
    load, ``clock: cpu``), its notebook fitted without it: planned = the fit's CPU seconds x the slowdown at
    the job's load (:func:`load_slowdown`, what the plan's calibrated speed factor stands for)."""
    out = []
    for r in rows:
        if r.get("clock") != "cpu" or not r.get("wall_s") or not r.get("load_1m"):
            continue
        fit = fit_notebook(r["notebook"], [x for x in rows if x is not r and x["notebook"] == r["notebook"]])
        if fit is None:
            continue
        planned = fit.seconds(cost_features(r["notebook"], r["drivers"])) * load_slowdown(r["load_1m"], cores, k)
        out.append((r, float(r["wall_s"]) / max(planned, 1e-9)))
    return out


def _parameters_key(job) -> str:
    """The job's profile parameters as canonical JSON: a measured row stands for a job to be planned
    only when these are the same (the drivers do not carry every size a notebook takes: 09's epochs)."""
    return json.dumps(job.parameters, sort_keys=True, default=str)

