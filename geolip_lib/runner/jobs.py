"""Jobs: a profile expanded into (notebook x model) jobs, their parameters checked against
each notebook's declared defaults, and the fingerprint ``--resume`` compares.

The notebooks directory is ``$GEOLIP_NOTEBOOKS`` or ``notebooks/`` (read at each call, so a
test or a second checkout can point elsewhere); parsed notebooks are cached by path and
modification time.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..models.preflight import check_config
from ..params import PARAMS, ROOT, ParamsError, load_model_params, load_profile, model_names
from ..provenance import library_hash


def notebooks_dir() -> Path:
    """Where the notebooks are: ``$GEOLIP_NOTEBOOKS`` or the checkout's ``notebooks/``."""
    return Path(os.environ.get("GEOLIP_NOTEBOOKS") or ROOT / "notebooks")


def notebook_path(notebook: str) -> Path:
    return notebooks_dir() / f"{notebook}.ipynb"


@functools.lru_cache(maxsize=256)
def _read(path: str, mtime_ns: int):
    return nbformat.read(path, as_version=4)


def read_notebook(notebook: str):
    """The parsed notebook (cached until the file changes)."""
    p = notebook_path(notebook)
    return _read(str(p), p.stat().st_mtime_ns)


def _parameters_cell(notebook: str):
    cells = [c for c in read_notebook(notebook).cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ParamsError(f"{notebook_path(notebook)}: expected exactly one cell tagged 'parameters', "
                          f"found {len(cells)}")
    return cells[0]

@dataclass
class Job:
    """One (notebook x model) execution."""

    profile: str
    notebook: str
    job_id: str
    model: str | None
    parameters: dict = field(default_factory=dict)
    timeout_s: int | None = None
    kernel: str = "python3"

    @property
    def label(self) -> str:
        return f"{self.notebook} / {self.job_id}"


@dataclass
class JobResult:
    job: Job
    ok: bool
    job_dir: Path
    seconds: float
    error: str | None = None
    skipped: bool = False
    device: str = ""  # what the executor gave it: "cpu", "cuda:0,1", "ray:<node>"


def jobs_for_profile(profile: str, models: list[str] | None = None,
                     notebooks: list[str] | None = None) -> list[Job]:
    """Expand a profile into jobs (validated params; unknown names are one-line errors)."""
    prof = load_profile(profile, notebooks_dir=notebooks_dir())
    known = set(model_names())
    in_profile = {m for e in prof.notebooks.values() for m in list(e.models) + [j.model for j in e.jobs if j.model]}
    for m in models or []:
        if m not in known:
            raise ParamsError(f"--models: unknown model '{m}' (known: {', '.join(sorted(known))}; "
                              f"add params/models/{m}.yaml to define it)")
        if m not in in_profile:
            raise ParamsError(f"--models: model '{m}' is in no notebook of profile '{prof.name}' "
                              f"(its models: {', '.join(sorted(in_profile))}); add it to the profile first")
    for nb in notebooks or []:
        if nb not in prof.notebooks:
            raise ParamsError(f"--notebooks: profile '{prof.name}' has no notebook '{nb}' "
                              f"(it has: {', '.join(prof.notebooks)})")
    jobs: list[Job] = []
    for nb, entry in prof.notebooks.items():
        if notebooks and nb not in notebooks:
            continue
        base = {**prof.defaults, **entry.parameters}
        specs = [(m, m, {}) for m in entry.models] if entry.per_model else []
        specs += [(j.id or j.model or "all", j.model, j.parameters) for j in entry.jobs]
        if not entry.per_model and not entry.jobs:
            specs = [("all", None, {})]
        for job_id, model, extra in specs:
            if models and model not in models:
                continue  # --models selects model jobs only (jobs without a model are not "these models")
            jobs.append(Job(profile=prof.name, notebook=nb, job_id=job_id, model=model,
                            parameters={**base, **extra}, timeout_s=entry.timeout_s or prof.timeout_s,
                            kernel=prof.kernel))
    check_parameters(jobs, prof.name)
    return jobs


def notebook_parameters(notebook: str) -> set[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (parsed with ast)."""
    names: set[str] = set()
    for node in ast.parse(_parameters_cell(notebook).source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def notebook_defaults(notebook: str) -> dict:
    """The declared default of each parameter whose default is a Python literal."""
    out = {}
    for node in ast.parse(_parameters_cell(notebook).source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # an expression: not type-checked
    return out


_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}


def coerce_parameter(name: str, value, default):
    """``value`` checked against the type of the notebook's declared ``default``.

    Returns the value to inject (YAML reads ``1e3`` as a string: a numeric string is
    accepted where an int or float is declared); raises ValueError naming the expected
    type. A declared ``None`` accepts anything; ``None`` is accepted for any declared type
    except bool (notebooks treat it as "not set").
    """
    if default is None or (value is None and not isinstance(default, bool)):
        return value
    want = type(default)
    if want is bool:
        if isinstance(value, bool):
            return value
    elif want in (int, float):
        if isinstance(value, str):
            try:
                num = float(value)
            except ValueError:
                num = None
            if num is not None and (want is float or num.is_integer()):
                return int(num) if want is int else num
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if want is float:
                return float(value) if isinstance(value, int) else value
            if isinstance(value, int) or float(value).is_integer():
                return int(value)
    elif want in (list, tuple):
        if isinstance(value, (list, tuple)):
            return list(value)
    elif isinstance(value, want):
        return value
    raise ValueError(f"expected {_TYPE_NAMES.get(want, want.__name__)} like its default {default!r}, "
                     f"got {type(value).__name__} {value!r}")


def check_parameters(jobs: list[Job], profile: str) -> None:
    """Before any kernel starts: a profile parameter the notebook does not declare is a typo,
    and a value whose type differs from the declared default's is an error (one line each)."""
    declared: dict[str, set[str]] = {}
    checked: set[str] = set()
    for job in jobs:
        names = declared.setdefault(job.notebook, notebook_parameters(job.notebook))
        unknown = sorted(set(job.parameters) - names)
        if unknown:
            raise ParamsError(f"profile '{profile}': notebook {job.notebook} (job {job.job_id}) has no parameter "
                              f"{', '.join(unknown)} (declared: {', '.join(sorted(names))})")
        if "OUT_DIR" not in names:
            raise ParamsError(f"notebooks/{job.notebook}.ipynb: its parameters cell must declare OUT_DIR")
        if job.model and job.model not in checked:
            mp = load_model_params(job.model)
            check_config(mp.family, mp.config, f"params/models/{mp.name}.yaml")
            checked.add(job.model)
        defaults = notebook_defaults(job.notebook)
        for k, v in list(job.parameters.items()):
            if k not in defaults:
                continue
            try:
                job.parameters[k] = coerce_parameter(k, v, defaults[k])
            except ValueError as exc:
                raise ParamsError(f"profile '{profile}': notebook {job.notebook} (job {job.job_id}): parameter "
                                  f"{k}: {exc}") from None


def job_dir(job: Job, out_root: Path) -> Path:
    return out_root / job.notebook / job.job_id


FINGERPRINT = "fingerprint.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def notebook_digest(notebook: str) -> str:
    """sha256 of the notebook's cells (type + source): saving it in JupyterLab without an
    edit (new metadata, outputs) does not make results stale."""
    return _sha(json.dumps([[c.cell_type, c.source] for c in read_notebook(notebook).cells]).encode())


def job_models(job: Job) -> list[str]:
    """Models a job depends on: its own and any parameter value naming a params file."""
    known = set(model_names())
    names = [job.model] if job.model else []
    for v in job.parameters.values():
        for item in (v if isinstance(v, list) else [v]):
            if isinstance(item, str) and item in known and item not in names:
                names.append(item)
    return names


def fingerprint(job: Job) -> dict:
    """What a finished job's result depends on (compared by ``--resume``)."""
    models = {}
    for m in job_models(job):
        f = PARAMS / "models" / f"{m}.yaml"
        models[m] = _sha(f.read_bytes()) if f.exists() else None
    return {"notebook": notebook_digest(job.notebook), "parameters": job.parameters, "model": job.model,
            "model_params": models, "library": library_hash()}


def stale_reasons(job: Job, out_root: Path) -> list[str]:
    """Why a finished job must run again (empty: it is done and current)."""
    d = job_dir(job, out_root)
    if not ((d / "metrics.json").exists() and (d / "executed.ipynb").exists()):
        return ["not run yet"]
    try:
        json.loads((d / "metrics.json").read_text(encoding="utf-8"))
        old = json.loads((d / FINGERPRINT).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ["no fingerprint.json (made before fingerprints)"]
    except ValueError:
        return ["metrics.json or fingerprint.json is unreadable"]
    new = fingerprint(job)
    why = []
    if old.get("notebook") != new["notebook"]:
        why.append(f"notebook {job.notebook} changed")
    op, np_ = old.get("parameters") or {}, new["parameters"]
    changed = sorted(k for k in set(op) | set(np_) if op.get(k) != np_.get(k))
    if changed:
        why.append("parameters changed: " + ", ".join(f"{k} {op.get(k)!r} -> {np_.get(k)!r}" for k in changed))
    om = old.get("model_params") or {}
    for m, h in new["model_params"].items():
        if om.get(m) != h:
            why.append(f"params/models/{m}.yaml changed")
    if old.get("library") != new["library"]:
        why.append("geolip_lib code changed")
    if reads_other_jobs(job.notebook):
        mine = (d / "metrics.json").stat().st_mtime
        newer = sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in out_root.glob("*/*/metrics.json")
                       if p.parent != d and not p.parent.name.startswith(".") and p.stat().st_mtime > mine)
        if newer:
            why.append(f"it reads other jobs' results, and {len(newer)} are newer: {', '.join(newer[:3])}"
                       + (" ..." if len(newer) > 3 else ""))
    return why


def reads_other_jobs(notebook: str) -> bool:
    """Whether the notebook reads other jobs' results (uses ``REPORT_ROOT`` outside its
    parameters cell: 03_cross_model, 15_seed_claims), so a newer result makes it stale and a
    parallel run starts it only after every job before it has finished."""
    return any("REPORT_ROOT" in c.source for c in read_notebook(notebook).cells
               if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))


def is_done(job: Job, out_root: Path) -> bool:
    """Finished and current (see :func:`stale_reasons`)."""
    return not stale_reasons(job, out_root)

