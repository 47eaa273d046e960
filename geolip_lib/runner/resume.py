"""``--resume``: what a finished job's result depends on (:func:`fingerprint`: the notebook's cells,
the parameters, the models' params files, the library), and why it must run again
(:func:`stale_reasons`). The result is read through :mod:`geolip_lib.roots` (a linked job folder
is not this root's result)."""
from __future__ import annotations

from pathlib import Path

from .. import params as _params
from .. import roots
from ..params import model_file, model_names
from ..lazy import lazy
from ..provenance import library_hash
from .jobspec import Job, job_dir
from .notebooks import _sha, notebook_digest, reads_other_jobs

#: torch and transformers: only when a job has a model
preflight = lazy("geolip_lib.models.preflight")


FINGERPRINT = "fingerprint.json"


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
        f = model_file(m)
        models[m] = _sha(f.read_bytes()) if f.exists() else None
    return {"notebook": notebook_digest(job.notebook), "parameters": job.parameters, "model": job.model,
            "model_params": models, "weights": {m: _weights(m) for m in models}, "library": library_hash()}


def _weights(name: str) -> dict:
    """``{file: sha256}`` of a model's weight files (``preflight.weight_digests``); {} when its params
    do not load (the job's preflight names that)."""
    try:
        return preflight.weight_digests(_params.load_model_params(name))
    except (OSError, ValueError, RuntimeError):  # ParamsError is a ValueError, ModelLoadError a RuntimeError
        return {}


def stale_reasons(job: Job, out_root: Path) -> list[str]:
    """Why a finished job must run again (empty: it is done and current)."""
    d = job_dir(job, out_root)
    if not ((d / "metrics.json").exists() and (d / "executed.ipynb").exists()):
        return ["not run yet"]
    linked = roots.path_problem(out_root, d / "metrics.json", leaf_link_ok=False)
    if linked:  # a result reached through a link is not this root's: run the job again
        return [linked]
    try:
        roots.read_json(out_root, d / "metrics.json")
        old = roots.read_json(out_root, d / FINGERPRINT, max_bytes=4 * 1024 * 1024)
    except FileNotFoundError:
        return ["no fingerprint.json (made before fingerprints)"]
    except (OSError, ValueError):
        return ["metrics.json or fingerprint.json is unreadable"]
    if not isinstance(old, dict):
        return ["fingerprint.json is not a JSON object"]
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
            why.append(f"{_params._rel(model_file(m))} changed")
    ow = old.get("weights") if isinstance(old.get("weights"), dict) else {}
    for m, files in new["weights"].items():
        was = ow.get(m) if isinstance(ow.get(m), dict) else {}
        changed = sorted(f for f in set(files) | set(was) if files.get(f) != was.get(f))
        if changed:
            why.append(f"weights of {m} changed: {', '.join(changed[:3])}" + (" ..." if len(changed) > 3 else ""))
    if old.get("library") != new["library"]:
        why.append("geolip_lib code changed")
    if reads_other_jobs(job.notebook):
        mine = (d / "metrics.json").stat().st_mtime
        newer = sorted(f"{j.parent.name}/{j.name}" for j in roots.job_dirs(out_root)
                       if j != d and not j.name.endswith(".failed") and (j / "metrics.json").is_file()
                       and not (j / "metrics.json").is_symlink() and (j / "metrics.json").stat().st_mtime > mine)
        if newer:
            why.append(f"it reads other jobs' results, and {len(newer)} are newer: {', '.join(newer[:3])}"
                       + (" ..." if len(newer) > 3 else ""))
    return why


def is_done(job: Job, out_root: Path) -> bool:
    """Finished and current (see :func:`stale_reasons`)."""
    return not stale_reasons(job, out_root)
