"""Record and read back experiment results (``metrics.json``), with atomic writes.

Every notebook ends with one call::

    results.record(OUT_DIR, metrics, headline={
        "pentachoron_cv": results.headline(cv, baseline=cv_gauss, baseline_kind="gaussian"),
    })

``metrics`` is any nested dict of numbers / strings / lists / arrays; numpy and torch
scalars and arrays are converted, NaN/Inf become ``null`` (JSON has no NaN).
``headline`` holds the few numbers the composite table of the report shows across
models, each beside its null baseline.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any


from .paths import REPORTS, ROOT  # noqa: F401 - re-exported (callers read results.ROOT / REPORTS)
from .validation import check_finite_scalar
from .lazy import lazy

np = lazy("numpy")
torch = lazy("torch")
METRICS_FILE = "metrics.json"
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: os.umask can only be read by setting it

#: nominal coverage of every headline interval
LEVEL = 0.95


# ------------------------------------------------------------------ the interval record
# (here, at the bottom layer, because a headline holds one; metrics.intervals computes them)

#: what kind of number a recorded quantity is:
#: ``exact`` — computed on all of the object (every row of the table, every Q weight, every
#: layer): nothing to resample, no interval (recorded as the degenerate ``[v, v]`` with
#: ``kind: "exact"`` and ``"exact (all N …)"`` as its method, printed without brackets);
#: ``sampled`` — an interval over what was sampled (simplices, rows, pairs, prompts);
#: ``over_seeds`` — an interval over training or initialisation seeds (a null's seeds too).
KINDS = ("exact", "sampled", "over_seeds")

#: relative slack of the "value inside its interval" check: float32 vs float64 round-off of
#: one number computed by two routes, never a statistical miss (those are 1e-3 and larger)
CONTAIN_RTOL = 1e-6


@dataclass(frozen=True)
class Interval:
    """A two-sided interval with how it was obtained and what kind of number it qualifies.

    Attributes
    ----------
    lo, hi : float
        Bounds (``lo <= hi``); NaN when the interval could not be formed.
    method : str
        For example ``"bootstrap BCa, 1000 resamples of 1000 simplices"``.
    level : float
        Nominal coverage (0.95).
    kind : {"sampled", "over_seeds", "exact"}
        :data:`KINDS`: over the sampling, over seeds, or none (exact).
    """

    lo: float
    hi: float
    method: str
    level: float = LEVEL
    kind: str = "sampled"

    def as_dict(self) -> dict:
        return {"lo": self.lo, "hi": self.hi, "method": self.method, "level": self.level, "kind": self.kind}

    def contains(self, x: float) -> bool:
        return bool(self.lo <= x <= self.hi)

    @property
    def finite(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)


def exact(value: Any, over: str | None = None) -> dict:
    """The record of an exact number (no sampling): ``[v, v]``, ``kind: "exact"``, method
    ``"exact (all <over>)"`` (``over``: what it is computed on, e.g. ``"30522 rows"``)."""
    v = None if value is None else float(value)
    method = f"exact (all {over})" if over else "exact (no sampling)"
    return {"lo": v, "hi": v, "method": method, "level": 1.0, "kind": "exact"}


def kind_of(interval: Any) -> str | None:
    """The kind (:data:`KINDS`) of an interval record; older records without ``kind`` are
    read from their method (``exact …``, ``… over N seeds``, else sampled)."""
    if interval is None:
        return None
    if isinstance(interval, Interval):
        return interval.kind
    if isinstance(interval, dict):
        if interval.get("kind") in KINDS:
            return interval["kind"]
        m = str(interval.get("method") or "")
        if m.startswith("exact"):
            return "exact"
        return "over_seeds" if "seeds" in m else "sampled"
    return "sampled"


def _bounds(interval: Any) -> tuple[float | None, float | None]:
    if interval is None:
        return None, None
    if isinstance(interval, Interval):
        lo, hi = interval.lo, interval.hi
    elif isinstance(interval, dict):
        lo, hi = interval.get("lo"), interval.get("hi")
    else:
        lo, hi = interval
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None, None
    return float(lo), float(hi)


def outside(value: Any, interval: Any) -> bool:
    """Whether a number lies outside its own interval (beyond :data:`CONTAIN_RTOL` round-off).

    ``False`` when there is no number or no finite interval to compare.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    v = float(value)
    lo, hi = _bounds(interval)
    if lo is None or not math.isfinite(v):
        return False
    tol = CONTAIN_RTOL * max(abs(v), abs(lo), abs(hi)) + 1e-12
    return bool(v < lo - tol or v > hi + tol)


def containment_problems(tree: Any, where: str = "") -> list[str]:
    """Every ``{"value": v, "interval": {...}}`` in ``tree`` (a headline, a claims block, a
    whole ``metrics.json``) whose value lies outside its interval, one line each with its path.

    A null's ``{"value", "interval"}`` is checked the same way.
    """
    out: list[str] = []
    if isinstance(tree, dict):
        if "value" in tree and isinstance(tree.get("interval"), (dict, Interval)) and outside(tree["value"], tree["interval"]):
            iv = tree["interval"] if isinstance(tree["interval"], dict) else tree["interval"].as_dict()
            out.append(f"{where or '<root>'}: value {tree['value']!r} lies outside its interval "
                       f"[{iv.get('lo')!r}, {iv.get('hi')!r}] ({iv.get('method')})")
        for k, v in tree.items():
            out += containment_problems(v, f"{where}.{k}" if where else str(k))
    elif isinstance(tree, (list, tuple)) and not isinstance(tree, Interval):
        for i, v in enumerate(tree):
            out += containment_problems(v, f"{where}[{i}]")
    return out


def separates(interval: Any, null: Any, null_interval: Any = None) -> bool | None:
    """Whether the interval excludes the null (and the null's own interval, when given).

    ``None`` when there is no interval or no null value to compare. An exact value's
    interval is ``[v, v]``: it is separated when ``v`` lies outside the null's interval.
    """
    lo, hi = _bounds(interval)
    if lo is None or null is None or not isinstance(null, (int, float)) or not math.isfinite(null):
        return None
    nlo, nhi = _bounds(null_interval)
    if nlo is None:
        nlo = nhi = float(null)
    return bool(hi < nlo or lo > nhi)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``.

    A reader (or a killed run) never sees a half-written file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp creates 0600; results are shared files (0644 under umask 022)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Text version of :func:`atomic_write_bytes` (UTF-8)."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def to_jsonable(obj: Any) -> Any:
    """Convert numpy/torch/Path objects to plain JSON types; NaN/Inf -> None."""
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().cpu().numpy()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, Path):
        return str(obj)
    if obj is None or isinstance(obj, (int, str)):
        return obj
    if hasattr(obj, "_asdict"):
        return to_jsonable(obj._asdict())
    if hasattr(obj, "__dataclass_fields__"):
        return to_jsonable(dataclasses.asdict(obj))
    return str(obj)


def _interval_record(value: Any, interval: Any, kind: str | None, over: str | None) -> dict | None:
    if isinstance(interval, str):
        if interval != "exact":
            raise ValueError(f"interval: expected an Interval, (lo, hi) or 'exact', got {interval!r}")
        return exact(value, over)
    if isinstance(interval, Interval):
        iv: dict | None = interval.as_dict()
    elif isinstance(interval, dict):
        iv = dict(interval)
    elif interval is not None:
        lo, hi = interval
        iv = {"lo": lo, "hi": hi, "method": "given", "level": 0.95}
    else:
        return None
    if kind is not None:
        iv["kind"] = kind
    iv.setdefault("kind", kind_of(iv))
    return iv


def headline(
    value: Any,
    *,
    interval: Any = None,
    nulls: dict | None = None,
    baseline: Any = None,
    baseline_kind: str | None = None,
    label: str | None = None,
    fmt: str = ".4g",
    note: str | None = None,
    kind: str | None = None,
    over: str | None = None,
    plug_in: Any = None,
    forced_by_shape: str | None = None,
) -> dict:
    """One headline number for the composite table: value, 95 % interval, null baselines.

    Parameters
    ----------
    value : float
        The measured value (``None`` when the measurement does not apply to this model).
        It must lie inside its interval (``ValueError`` otherwise): a biased estimator
        reports its bias-corrected estimate here and the plug-in as ``plug_in``.
    interval : Interval, dict, (lo, hi) or ``"exact"``
        The 95 % interval (:mod:`geolip_lib.metrics.intervals`). ``"exact"`` marks a number
        computed on all of the object (a count, a closed form, every row): it has no
        interval and is recorded as :func:`exact` (``[v, v]``, ``kind: "exact"``).
    kind : {"exact", "sampled", "over_seeds"}, optional
        :data:`KINDS`; read from the interval when not given.
    over : str, optional
        With ``interval="exact"``: what the number is computed on ("30522 rows"), shown
        as "exact (all 30522 rows)".
    plug_in : float, optional
        The plug-in estimate where ``value`` is bias-corrected (recorded beside it).
    forced_by_shape : str, optional
        The reason when the weight shapes alone force the value (a QK balance of 0.5
        under grouped-query attention): such a value stays out of pooled means and of
        verdicts (``geolip_lib.claims`` reads ``forced_by_shape``).
    nulls : dict, optional
        ``{kind: value}`` or ``{kind: {"value": v, "interval": ..., "per_seed": [...]}}`` — the
        same metric on each null model: ``"gaussian"`` (isotropic Gaussian of matched shape
        and scale), ``"random_init"`` (same architecture at random init), ``"sphere"``
        (uniform on the unit sphere), ``"shuffled"`` ... A null is a distribution: its
        interval is over its own seeds where it has them
        (:func:`geolip_lib.metrics.intervals.null_over_seeds`). Each null gets
        ``separated``: whether the interval excludes it (and its own interval).
    baseline, baseline_kind : optional
        One null given the short way (kept for callers that have a single null).
    label : str, optional
        Column label in the report (defaults to the key).
    fmt : str
        Format spec used when there is no interval.
    note : str, optional
        One sentence shown under the table (what the number means, why a null explains it).

    Returns
    -------
    dict
        ``value, interval, kind, nulls, baseline, baseline_kind, label, fmt, note`` and, where
        given, ``plug_in`` and ``forced_by_shape``.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        check_finite_scalar(value, f"headline {label or ''}".strip(),
                            remedy="a measurement that does not apply is value=None, with its reason in note=")
    iv = _interval_record(value, interval, "exact" if interval == "exact" else kind, over)
    if value is not None and outside(value, iv):
        raise ValueError(f"headline {label or ''}: value {value!r} lies outside its own interval "
                         f"[{iv['lo']!r}, {iv['hi']!r}] ({iv.get('method')}); report the estimate the "
                         f"interval is centred on (bias-corrected) and the plug-in as plug_in=")
    all_nulls: dict = {}
    if baseline is not None or baseline_kind is not None:
        all_nulls[baseline_kind or "null"] = baseline
    all_nulls.update(nulls or {})
    out_nulls = {}
    for nkind, nv in all_nulls.items():
        n_iv, extra = None, {}
        if isinstance(nv, dict):
            extra = {k: to_jsonable(v) for k, v in nv.items() if k not in ("value", "interval")}
            nv, n_iv = nv.get("value"), nv.get("interval")
        n_iv = _interval_record(nv, n_iv, None, None) if n_iv is not None else None
        nv = to_jsonable(nv)
        if nv is not None and outside(nv, n_iv):
            raise ValueError(f"headline {label or ''}: null {nkind} value {nv!r} lies outside its own interval "
                             f"[{n_iv['lo']!r}, {n_iv['hi']!r}] ({n_iv.get('method')})")
        out_nulls[nkind] = {"value": nv, "interval": to_jsonable(n_iv), **extra,
                            "separated": separates(iv, nv, n_iv) if value is not None else None}
    first = next(iter(out_nulls.items()), (None, {"value": None}))
    out = {"value": value, "interval": iv, "kind": None if iv is None else iv.get("kind"), "nulls": out_nulls,
           "baseline": first[1]["value"], "baseline_kind": first[0], "label": label, "fmt": fmt, "note": note}
    if plug_in is not None:
        out["plug_in"] = plug_in
    if forced_by_shape:
        out["forced_by_shape"] = forced_by_shape
    return out


def job_dir(out_dir: str | os.PathLike | None, notebook: str, model: str | None) -> Path:
    """The directory a notebook writes into.

    ``out_dir`` is the papermill parameter ``OUT_DIR``; when it is ``None`` (a person
    running the notebook by hand in JupyterLab) results go to
    ``reports/adhoc/<notebook>/<model>/``.
    """
    if out_dir is None:
        out_dir = REPORTS / "adhoc" / notebook / (model or "all")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def record(
    out_dir: str | os.PathLike,
    metrics: dict,
    *,
    headline: dict | None = None,  # noqa: A002 - mirrors the function name on purpose
    notebook: str | None = None,
    model: str | None = None,
    parameters: dict | None = None,
    figures: list | None = None,
    provenance: dict | None = None,
    not_run: Mapping[str, str] | None = None,
) -> Path:
    """Write ``<out_dir>/metrics.json`` atomically and return its path.

    Parameters
    ----------
    out_dir : path
        The job directory (see :func:`job_dir`).
    metrics : dict
        All recorded values (nested dicts allowed).
    headline : dict, optional
        ``{key: results.headline(...)}`` for the composite table.
    notebook, model : str, optional
        Identify the job (the report groups by them).
    parameters : dict, optional
        The notebook's parameters, kept for provenance.
    figures : list, optional
        ``[{"file", "title", "key"}]`` of the PNGs saved beside ``metrics.json``.
    provenance : dict, optional
        Commit, versions, model and weight digests, device (:mod:`geolip_lib.provenance`).
    not_run : mapping, optional
        ``{section title: one-line reason}`` for each section of the notebook that could not
        run on this model (a model without attention in a QK section, ...): recorded as the
        top-level ``"not_run"`` object, which the report shows where the section's figures
        would be (shared convention). Titles and reasons are non-empty one-line
        strings (:func:`check_not_run`).

    Raises ``ValueError`` (naming the file and the key path) when any recorded
    ``{"value", "interval"}`` has its value outside its interval (:func:`containment_problems`).
    """
    if not isinstance(metrics, dict):
        raise ValueError(f"metrics: expected a dict, got {type(metrics).__name__}")
    bad = containment_problems(to_jsonable({"headline": headline or {}, "metrics": metrics}))
    if bad:  # a point estimate always lies inside its interval
        raise ValueError(f"{Path(out_dir) / METRICS_FILE}: {bad[0]}"
                         + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    skipped = check_not_run(not_run)
    payload = {
        "notebook": notebook,
        "model": model,
        "parameters": parameters or {},
        "headline": headline or {},
        "metrics": metrics,
        "figures": figures or [],
        "provenance": provenance or {},
    }
    if skipped:
        payload["not_run"] = skipped
    text = json.dumps(to_jsonable(payload), indent=1, sort_keys=False, allow_nan=False)
    return atomic_write_text(Path(out_dir) / METRICS_FILE, text + "\n")


#: the longest section title / reason a ``not_run`` entry may carry (one line of the index)
NOT_RUN_MAX_CHARS = 500


def check_not_run(not_run: Any) -> dict:
    """``not_run`` as a plain ``{section title: reason}`` dict (``{}`` for None); one-line
    ``ValueError`` for anything else: a non-mapping, an empty or multi-line title or reason,
    or one longer than :data:`NOT_RUN_MAX_CHARS` characters."""
    if not_run is None:
        return {}
    if not isinstance(not_run, Mapping):
        raise ValueError(f"not_run: expected a mapping {{section title: one-line reason}}, "
                         f"got {type(not_run).__name__}")
    out = {}
    for title, reason in not_run.items():
        for what, text in (("section title", title), (f"reason of {title!r}", reason)):
            if not isinstance(text, str) or not text.strip() or "\n" in text or len(text) > NOT_RUN_MAX_CHARS:
                raise ValueError(f"not_run: the {what} must be a non-empty one-line string of at most "
                                 f"{NOT_RUN_MAX_CHARS} characters, got {text!r:.80}")
        out[title.strip()] = reason.strip()
    return out


class MetricsFileError(ValueError):
    """A ``metrics.json`` that cannot be read (message names the file)."""


def read(path: str | os.PathLike) -> dict:
    """Read a ``metrics.json`` (or the one inside a job directory); one-line error naming the file."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise MetricsFileError(f"{path}: unreadable metrics file ({type(exc).__name__}: {exc}); "
                               f"rerun its job with run_all.py --resume") from None
    if not isinstance(data, dict):
        raise MetricsFileError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


#: what a table cell with nothing to say looks like (None, NaN, "", the "–" of a missing value)
EMPTY_CELLS = ("", "–", "-", "n/a", "nan", "NaN", "None", "<NA>", "NaT")


def is_empty_cell(value: Any) -> bool:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    return str(value).strip() in EMPTY_CELLS


def nonempty_columns(rows: list, columns: list) -> list:
    """The one rule of every table shown (the notebooks' ``job.table`` and the report's tables):
    a column empty in every row ("note", "project definition", "null explains" where nothing
    applies) is dropped at render time."""
    return [c for c in columns if any(not is_empty_cell(r.get(c)) for r in rows)]
