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

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "reports"
METRICS_FILE = "metrics.json"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``.

    A reader (or a killed run) never sees a half-written file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
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
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(obj, torch.Tensor):
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
        import dataclasses

        return to_jsonable(dataclasses.asdict(obj))
    return str(obj)


def headline(
    value: Any,
    *,
    baseline: Any = None,
    baseline_kind: str | None = None,
    label: str | None = None,
    fmt: str = ".4g",
) -> dict:
    """One headline number for the composite table.

    Parameters
    ----------
    value : float
        The measured value.
    baseline : float, optional
        The same metric on the null baseline.
    baseline_kind : str, optional
        ``"gaussian"`` (isotropic Gaussian of matched shape/scale), ``"random_init"``
        (same architecture at random init), ``"shuffled"``...
    label : str, optional
        Column label in the report (defaults to the key).
    fmt : str
        Format spec used by the report.
    """
    return {"value": value, "baseline": baseline, "baseline_kind": baseline_kind,
            "label": label, "fmt": fmt}


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
    """
    if not isinstance(metrics, dict):
        raise ValueError(f"metrics: expected a dict, got {type(metrics).__name__}")
    payload = {
        "notebook": notebook,
        "model": model,
        "parameters": parameters or {},
        "headline": headline or {},
        "metrics": metrics,
    }
    text = json.dumps(to_jsonable(payload), indent=1, sort_keys=False, allow_nan=False)
    return atomic_write_text(Path(out_dir) / METRICS_FILE, text + "\n")


def read(path: str | os.PathLike) -> dict:
    """Read a ``metrics.json`` (or the one inside a job directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS_FILE
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
