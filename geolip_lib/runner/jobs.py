"""Jobs: a profile expanded into (notebook x model) jobs, their parameters checked against
each notebook's declared defaults and ranges (:mod:`.parameters`), and the fingerprint
``--resume`` compares.

Preflight (:func:`jobs_for_profile`, before any kernel starts) names every problem it finds,
one line each: unsafe or duplicate job ids, parameters of the wrong type or out of their
declared range, a kernel that is not installed, a ``local_dir`` that does not exist, a model
whose ``config.json`` its declared family cannot describe. The output root records the
profile that writes it (:func:`claim_root`); ``--report-only`` needs a root with results
(:func:`check_report_root`).

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
from jupyter_client.kernelspec import KernelSpecManager

from ..models.common import ModelLoadError
from ..models.preflight import (HF_KIND, check_config, check_stored_model, config_problem, model_config,
                                trajectory_problems)
from .. import claims
from .. import params as _params
from .. import roots
from ..params import (ROOT, ModelParams, ParamsError, add_model_file, check_name, family_problem, load_model_params,
                      load_profile, model_file, model_names)
from ..paths import resolve
from ..provenance import library_hash
from ..results import atomic_write_text
from .lock import RunError
from .parameters import (ANY, EXPRESSION, Declared, RangeSyntaxError, check_value, compile_range, declared,
                         range_names, range_problem)
from .parameters import coerce_parameter  # noqa: F401 - re-exported (run_all, tests)


#: the longest job id: it is a folder name, and ``.<id>.partial`` must stay under the 255 bytes a
#: file name may have on every file system the runner writes to
MAX_JOB_ID = 100


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
    """Expand a profile into jobs and check them (every problem one line of one ParamsError).

    ``models``: names of params files or paths to them (``.yaml``); a model the profile does not
    list runs through every notebook of the profile that takes a model (``MODEL``), with the
    notebook's parameters from the profile.
    """
    prof = load_profile(profile, notebooks_dir=notebooks_dir())
    problems: list[str] = []
    for nb in notebooks or []:
        why = check_problem(nb, "--notebooks")
        if why:
            problems.append(why)
        elif nb not in prof.notebooks:
            problems.append(f"--notebooks: profile '{prof.name}' has no notebook '{nb}' "
                            f"(it has: {', '.join(prof.notebooks)})")
    extra, models = _extra_models(prof, models, problems)
    jobs: list[Job] = []
    for nb, entry in prof.notebooks.items():
        base = {**prof.defaults, **entry.parameters}
        specs = [(m, m, {}) for m in entry.models] if entry.per_model else []
        specs += [(j.id or j.model or "all", j.model, j.parameters) for j in entry.jobs]
        if not entry.per_model and not entry.jobs:
            specs = [("all", None, {})]
        seen: set[str] = set()
        for job_id, _, _ in specs:  # one result directory per job id
            if isinstance(job_id, str) and len(job_id) > MAX_JOB_ID:
                problems.append(f"profile '{prof.name}': notebook {nb}: job id '{job_id[:40]}...' is {len(job_id)} "
                                f"characters; a job id (a folder name, also as .<id>.partial) may have at most "
                                f"{MAX_JOB_ID}: give it a shorter id:")
            if job_id in seen:
                problems.append(f"profile '{prof.name}': notebook {nb}: job id '{job_id}' twice (two jobs would "
                                f"share {nb}/{job_id}/ and one would delete the other's result); give each job "
                                f"its own id:")
            seen.add(job_id)
        if extra and entry.per_model and "MODEL" in notebook_parameters(nb):
            specs += [(m, m, {}) for m in extra if m not in seen]
        if notebooks and nb not in notebooks:
            continue
        for job_id, model, extra_params in specs:
            if models and model not in models:
                continue  # --models selects model jobs only (jobs without a model are not "these models")
            jobs.append(Job(profile=prof.name, notebook=nb, job_id=job_id, model=model,
                            parameters={**base, **extra_params}, timeout_s=entry.timeout_s or prof.timeout_s,
                            kernel=prof.kernel))
    for m in extra:
        if not any(j.model == m for j in jobs):
            problems.append(f"--models: model '{m}' is in no notebook of profile '{prof.name}', and no notebook of it "
                            f"takes a model (MODEL, per_model)" + (f" among --notebooks {' '.join(notebooks)}"
                                                                  if notebooks else "")
                            + f"; its models: {', '.join(sorted(_profile_models(prof))) or 'none'}")
    problems += kernel_problems(prof.kernel, prof.name)
    try:
        check_parameters(jobs, prof.name)
    except ParamsError as exc:  # shown with the problems above: every problem, one line each
        problems += exc.lines
    if problems:
        raise ParamsError.of(problems)
    return jobs


def is_params_path(model: str) -> bool:
    """A ``--models`` entry that is the path of a params file."""
    return str(model).endswith((".yaml", ".yml"))


def check_problem(name: str, what: str) -> str | None:
    """Why ``name`` (a command-line name) cannot name a directory, as one line (None: it can)."""
    try:
        check_name(name, f"{what} '{name}'")
    except ParamsError as exc:
        return str(exc)
    return None


def _extra_models(prof, models, problems) -> tuple[list[str], list[str] | None]:
    """``--models``: (models outside the profile, the names selected). A ``.yaml`` path is a
    params file anywhere: the same file as ``params/models/<name>.yaml`` counts as that name;
    another is added for this run (:func:`geolip_lib.params.add_model_file`: the runner and its
    kernels find it by its name, which must not be a params/models name with other content)."""
    if not models:
        return [], models
    known = set(model_names())
    in_profile = _profile_models(prof)
    names, extra = [], []
    for m in models:
        if is_params_path(m):
            if not Path(m).is_file():
                what = "is a directory, not a params file" if Path(m).is_dir() else "no such params file"
                problems.append(f"--models: {m}: {what} (give a params/models name or the path of "
                                f"a model's .yaml)")
                continue
            try:
                mp = load_model_params(m)
            except ParamsError as exc:
                problems.extend(exc.lines)
                continue
            mine = _params.MODELS_DIR / f"{mp.name}.yaml"
            if mine.exists() and (mine.resolve() == Path(m).resolve() or mine.read_bytes() == Path(m).read_bytes()):
                m = mp.name  # the same file as params/models/<name>.yaml
            elif mine.exists() or mp.name in in_profile:
                problems.append(f"--models: {m}: params/models/{mp.name}.yaml exists with other content; rename the "
                                f"model (name: and the file name) or update that file")
                continue
            else:
                m = add_model_file(m)
        else:
            why = check_problem(m, "--models: model")
            if why:
                problems.append(why)
                continue
            if m not in known:
                problems.append(f"--models: unknown model '{m}' (known: {', '.join(sorted(known))}; "
                                f"add params/models/{m}.yaml to define it)")
                continue
        names.append(m)
        if m not in in_profile:
            extra.append(m)
    return extra, names


def _profile_models(prof) -> set[str]:
    return {m for e in prof.notebooks.values() for m in list(e.models) + [j.model for j in e.jobs if j.model]}


def kernel_problems(kernel: str, profile: str) -> list[str]:
    """The profile's ``kernel:`` must be an installed Jupyter kernelspec (what papermill starts)."""
    specs = KernelSpecManager().find_kernel_specs()
    if kernel in specs:
        return []
    return [f"profile '{profile}': key 'kernel': no Jupyter kernel '{kernel}' is installed (installed: "
            f"{', '.join(sorted(specs)) or 'none'}); set kernel: python3, or install it (jupyter kernelspec list)"]


def notebook_parameters(notebook: str) -> set[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (parsed with ast)."""
    names: set[str] = set()
    for node in ast.parse(_parameters_cell(notebook).source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def notebook_declared(notebook: str) -> dict[str, Declared]:
    """Each parameter's declared default, range and description (:func:`.parameters.declared`)."""
    return declared(_parameters_cell(notebook).source)


def notebook_defaults(notebook: str) -> dict:
    """The declared default of each parameter whose default is a Python literal."""
    return {k: d.default for k, d in notebook_declared(notebook).items() if d.default is not EXPRESSION}


def check_parameters(jobs: list[Job], profile: str) -> None:
    """Before any kernel starts: a profile parameter the notebook does not declare is a typo; a
    value must have the declared default's type, be finite and lie in the declared range; each
    model's params must describe a model that is there (every problem one line)."""
    problems: list[str] = []
    declared_names: dict[str, set[str]] = {}
    checked: set[str] = set()
    for job in jobs:
        if job.notebook not in declared_names:
            declared_names[job.notebook] = names = notebook_parameters(job.notebook)
            if "OUT_DIR" not in names:
                problems.append(f"notebooks/{job.notebook}.ipynb: its parameters cell must declare OUT_DIR")
            decls = notebook_declared(job.notebook)
            defaults = {k: d.default for k, d in decls.items() if d.default is not EXPRESSION}
            for d in decls.values():
                if d.range is not None:
                    try:
                        compile_range(d.range)
                        range_problem(d, defaults)
                    except RangeSyntaxError as exc:
                        problems.append(f"notebooks/{job.notebook}.ipynb: parameter {d.name}: {exc}")
        names = declared_names[job.notebook]
        where = f"profile '{profile}': notebook {job.notebook} (job {job.job_id})"
        unknown = sorted(set(job.parameters) - names)
        if unknown:
            problems.append(f"{where} has no parameter {', '.join(unknown)} (declared: {', '.join(sorted(names))})")
        if job.model and job.model not in checked:
            checked.add(job.model)
            problems += model_problems(job.model)
        decls = notebook_declared(job.notebook)
        mistyped = set()
        for k, v in list(job.parameters.items()):
            if k not in decls:
                continue
            try:
                job.parameters[k] = check_value(decls[k], v)
            except ValueError as exc:
                mistyped.add(k)
                problems.append(f"{where}: parameter {k}: {exc}")
        # then the ranges (a range may read other parameters: those of the right type)
        values = {**{k: d.default for k, d in decls.items() if d.default is not EXPRESSION}, **job.parameters}
        for d in decls.values():
            try:
                if d.name in mistyped or mistyped & set(range_names(d.range or ANY)):
                    continue
                why = range_problem(d, values)
            except (RangeSyntaxError, SyntaxError):
                continue  # named once above
            if why:
                problems.append(f"{where}: parameter {d.name}: {why}")
        if "CLAIMS" in decls and "CLAIMS" not in mistyped and isinstance(values.get("CLAIMS"), str):
            try:  # notebook 15's claims file: known by name and valid, before any kernel (claims.check_name)
                claims.load(claims.check_name(values["CLAIMS"], f"{where}: parameter CLAIMS"))
            except ParamsError as exc:
                problems += exc.lines
    if problems:
        raise ParamsError.of(problems)


def model_problems(name: str) -> list[str]:
    """A model's params checked before any kernel: ``config:`` keys and types, a ``local_dir``
    that exists, a ``config.json`` whose ``model_type`` the declared family lists."""
    try:
        mp = load_model_params(name)
    except ParamsError as exc:
        return exc.lines
    own = model_file(mp.name)  # params/models/<name>.yaml, or a file given by path to --models
    f = f"params/models/{mp.name}.yaml" if own == _params.MODELS_DIR / f"{mp.name}.yaml" else _params._rel(own)
    try:
        check_config(mp.family, mp.config, f)
    except ParamsError as exc:
        return exc.lines
    if mp.checkpoints:  # a trajectory's folders (issue 24 §4), each checked like a local_dir (issue 30)
        lines = _params.checkpoint_problems(mp, own)
        if lines:
            return lines
        lines = trajectory_problems(mp, f)
        if lines:
            return lines
    raw, key = (mp.local_dir, "local_dir") if mp.local_dir else ((mp.id, "id") if mp.source == "local" else (None, ""))
    if raw:
        d = resolve(raw)
        if not d.is_dir():
            rel = "" if Path(raw).is_absolute() else f"; a relative path is read from the checkout root {ROOT}"
            what = "is a file, not a folder" if d.exists() else "does not exist"
            return [f"{f}: key '{key}': directory {d} {what}{rel}; fix the path"]
    if mp.source == "tiny":
        why = family_problem(mp.family, mp.config.get("model_type"), "its config:")
        if not why:
            why = config_problem(mp, mp.config, HF_KIND, "its config")
        return [f"{f}: {why}"] if why else []
    return _config_family_problems(mp, f)


def _config_family_problems(mp: ModelParams, f: str) -> list[str]:
    try:
        found = model_config(mp)  # local_dir / package / cached hub config.json: no download
    except roots.RootReadError as exc:  # a pipe, too large, too deep, not an object: its own line
        return [f"{f}: {exc}"]
    except (OSError, ValueError) as exc:
        return [f"{f}: the model's config cannot be read ({type(exc).__name__}: {exc}); fix or re-save it"]
    except Exception:  # noqa: BLE001 - a source that needs the kernel (an uncached hub model): checked at load
        return []
    if not found:
        return []
    cfg, kind, d = found
    src = f"{d / 'config.json'}" if d is not None else "its config"
    if kind != HF_KIND:
        mt = "open_clip"
        src = f"{d}" if d is not None else "its config"
    else:
        mt = cfg.get("model_type")
        if mt is None:
            return [f"{f}: {src} has no model_type; re-save the model with save_pretrained"]
    why = family_problem(mp.family, mt, src) or config_problem(mp, cfg, kind, src)
    if why:
        return [f"{f}: {why}"]
    try:  # the weight files at hand: corrupt or lying headers, pickles, integer / quantised / misshapen tensors
        check_stored_model(mp)
    except ModelLoadError as exc:
        return [f"{f}: {exc}"]
    return []


#: the file in an output root naming the profile that writes it
ROOT_PROFILE = ".profile.json"


def root_profile(out_root: Path) -> str | None:
    """The profile an output root holds (None: none recorded)."""
    try:
        got = roots.read_json(out_root, Path(out_root) / ROOT_PROFILE, max_bytes=64 * 1024).get("profile")
    except (OSError, ValueError, AttributeError):
        return None
    return got if isinstance(got, str) else None


def _other_profile(out_root: Path, profile: str) -> None:
    other = root_profile(out_root)
    if other is not None and other != profile:
        raise RunError(f"output root {out_root} holds the results of profile '{other}', not '{profile}'; "
                       f"pass --out <another directory> for profile '{profile}' (or --profile {other})")


def claim_root(out_root: Path, profile: str, selection: dict | None = None) -> None:
    """Before a run writes into ``out_root``: refuse a root of another profile (one-line RunError),
    else record ``profile`` in it (atomically), with the run's ``selection`` when given
    (``{"models": [...] | None, "notebooks": [...] | None}``: ``--models`` / ``--notebooks``; the
    report's header names it)."""
    _other_profile(out_root, profile)
    if root_profile(out_root) is None or selection is not None:
        atomic_write_text(Path(out_root) / ROOT_PROFILE, json.dumps(
            {"profile": profile, **({"selection": selection} if selection is not None else {})}) + "\n")


def check_report_root(out_root: Path, profile: str) -> Path:
    """``--report-only``: the root must exist, hold results (a job directory, a failed or a
    half-written job) and belong to ``profile``; it is never created (one-line RunError)."""
    out_root = Path(out_root)
    if not out_root.exists():
        raise RunError(f"output root {out_root} does not exist: nothing to report; run without --report-only "
                       f"first, or pass the --out of an earlier run")
    if not out_root.is_dir():
        raise RunError(f"output root {out_root} is a file, not a directory; pass --out <directory>")
    _other_profile(out_root, profile)
    found = any((j / "metrics.json").is_file() or j.name.endswith((".failed", ".partial"))
                for j in roots.job_dirs(out_root, hidden=True))
    if not found:
        raise RunError(f"output root {out_root} holds no results (no <notebook>/<job>/ directory); run without "
                       f"--report-only first, or pass the --out of an earlier run")
    return out_root


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
        f = model_file(m)
        models[m] = _sha(f.read_bytes()) if f.exists() else None
    return {"notebook": notebook_digest(job.notebook), "parameters": job.parameters, "model": job.model,
            "model_params": models, "library": library_hash()}


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


def reads_other_jobs(notebook: str) -> bool:
    """Whether the notebook reads other jobs' results (uses ``REPORT_ROOT`` outside its
    parameters cell: 03_cross_model, 15_seed_claims), so a newer result makes it stale and a
    parallel run starts it only after every job before it has finished."""
    return any("REPORT_ROOT" in c.source for c in read_notebook(notebook).cells
               if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))


def is_done(job: Job, out_root: Path) -> bool:
    """Finished and current (see :func:`stale_reasons`)."""
    return not stale_reasons(job, out_root)

