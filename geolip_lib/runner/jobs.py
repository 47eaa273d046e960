"""Jobs: a profile expanded into (notebook x model) jobs and checked before any kernel starts.

Preflight (:func:`jobs_for_profile`) names every problem it finds, one line each: unsafe,
over-long or duplicate job ids, parameters of the wrong type or out of their declared range
(:func:`check_parameters`, :mod:`.parameters`), a kernel that is not installed, a model whose
params, config or weight files cannot be used (:mod:`.model_checks`).

The job itself is :mod:`.jobspec`; the notebooks :mod:`.notebooks`; what an output root
records :mod:`.root_record`; ``--resume`` :mod:`.resume`. Their names are re-exported here
(the runner's callers import them from ``runner.jobs``).
"""
from __future__ import annotations

import os
from pathlib import Path

from .. import params as _params
from ..caption_sets import source_problem as caption_source_problem
from ..lazy import lazy
from ..params import ParamsError, add_model_file, check_name, load_model_params, load_profile, model_names
from ..paths import PARAMS, ROOT
from .jobspec import Job, JobResult, job_dir  # noqa: F401 - re-exported
from .model_checks import model_problems  # noqa: F401 - re-exported
from .notebooks import (_parameters_cell, adds_no_models, notebook_declared, notebook_defaults,  # noqa: F401
                        notebook_digest, notebook_parameters, notebook_path, notebooks_dir, read_notebook,
                        reads_other_jobs)
from .parameters import (ANY, EXPRESSION, RangeSyntaxError, check_value, compile_range, range_names,
                         range_problem)
from .parameters import coerce_parameter  # noqa: F401 - re-exported (run_all, tests)
from .remembered import file_digest, lines_ok, remembered
from .resume import FINGERPRINT, fingerprint, is_done, job_models, stale_reasons  # noqa: F401 - re-exported
from .root_record import (ROOT_PROFILE, check_ours, check_report_root, claim_root,  # noqa: F401 - re-exported
                          root_profile)

_kernelspec = lazy("jupyter_client.kernelspec")
claims = lazy("geolip_lib.claims")  # with the metrics it reads (torch, scipy): only for a job naming a claims file


#: the longest job id: it is a folder name, and ``.<id>.partial`` must stay under the 255 bytes a
#: file name may have on every file system the runner writes to
MAX_JOB_ID = 100


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
        folded: dict[str, str] = {}  # lower-cased id -> the first id seen
        for job_id, _, _ in specs:  # one result directory per job id
            if isinstance(job_id, str) and len(job_id) > MAX_JOB_ID:
                problems.append(f"profile '{prof.name}': notebook {nb}: job id '{job_id[:40]}...' is {len(job_id)} "
                                f"characters; a job id (a folder name, also as .<id>.partial) may have at most "
                                f"{MAX_JOB_ID}: give it a shorter id:")
            if job_id in seen:
                problems.append(f"profile '{prof.name}': notebook {nb}: job id '{job_id}' twice (two jobs would "
                                f"share {nb}/{job_id}/ and one would delete the other's result); give each job "
                                f"its own id:")
            elif isinstance(job_id, str) and job_id.lower() in folded:  # one folder on a case-insensitive disk
                problems.append(f"profile '{prof.name}': notebook {nb}: job ids '{folded[job_id.lower()]}' and "
                                f"'{job_id}' differ only in case (one folder on macOS / Windows disks, where one "
                                "result would replace the other); give them ids that differ in more than case")
            seen.add(job_id)
            if isinstance(job_id, str):
                folded.setdefault(job_id.lower(), job_id)
        if extra and entry.per_model and "MODEL" in notebook_parameters(nb):
            specs += [(m, m, {}) for m in extra if m not in seen]
        if notebooks and nb not in notebooks:
            continue
        for job_id, model, extra_params in specs:
            # --models selects model jobs; a model-free job that reads the others' results and loads no models
            # of its own (15's claims; not 03, whose MODELS it would compute) stays when a selected job feeds it
            # (every notebook before it in the profile), else it is left out
            if models and model not in models and not (model is None and jobs and adds_no_models(nb)):
                continue
            jobs.append(Job(profile=prof.name, notebook=nb, job_id=job_id, model=model,
                            parameters={**base, **extra_params},
                            timeout_s=_job_timeout(entry.timeout_s or prof.timeout_s, model),
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


def claims_left_out(profile: str, notebooks: list[str] | None) -> list[str]:
    """The notebooks of ``profile`` that only read the other jobs' results (15's claims:
    :func:`.notebooks.adds_no_models`) and that ``--notebooks`` left out though a selected notebook
    feeds them (comes before them in the profile): their verdicts do not read this run's results, which
    the run says in one line (the claims are never dropped silently). None: the whole profile."""
    if not notebooks:
        return []
    order = list(load_profile(profile, notebooks_dir=notebooks_dir()).notebooks)
    return [nb for i, nb in enumerate(order)
            if nb not in notebooks and set(order[:i]) & set(notebooks) and adds_no_models(nb)]


def with_timeout(jobs: list[Job], timeout: int | None) -> list[Job]:
    """``run_all.py --timeout``: every job's time limit replaced for this run (None: as planned)."""
    if timeout is not None:
        for j in jobs:
            j.timeout_s = int(timeout)
    return jobs


def _job_timeout(profile_s: int | None, model: str | None) -> int | None:
    """A job's time limit (the whole notebook): the profile's, raised by the model's params file
    ``timeout_s:`` (the larger of the two); ``run_all.py --timeout`` replaces it afterwards."""
    own = None
    if model is not None:
        try:
            own = load_model_params(model).timeout_s
        except ParamsError:
            own = None  # a bad params file is reported by check_parameters, one line
    return max((t for t in (profile_s, own) if t), default=None)


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
                what = "is a directory, not a params file" if Path(m).is_dir() else \
                    "not a regular file (a pipe, a device); not read" if Path(m).exists() else "no such params file"
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
    specs = _kernelspec.KernelSpecManager().find_kernel_specs()
    if kernel in specs:
        return []
    return [f"profile '{profile}': key 'kernel': no Jupyter kernel '{kernel}' is installed (installed: "
            f"{', '.join(sorted(specs)) or 'none'}); set kernel: python3, or install it (jupyter kernelspec list)"]


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
            problems += claims_problems(values["CLAIMS"], f"{where}: parameter CLAIMS")
        if "IMAGE_CAPTIONS" in decls and values.get("IMAGE_CAPTIONS") is not None and "IMAGE_CAPTIONS" not in mistyped:
            why = caption_source_problem(values["IMAGE_CAPTIONS"])  # the folder's entries only, never its images
            problems += [f"{where}: parameter IMAGE_CAPTIONS: {why}"] if why else []
    if problems:
        raise ParamsError.of(problems)


#: what a claims file's check reads besides the file itself: every claims file (seed-001's is loaded when
#: the claims package is imported), the notebooks (their names and the .py files whose records a claim must
#: name: :func:`notebooks_code_digest`) and the library's code (its producers of records; added by
#: :func:`.remembered.remembered`)
_CLAIMS_INPUTS = (PARAMS / "claims", ROOT / "notebooks")


def notebooks_code_digest(folder: Path) -> list:
    """What the claims check reads of the notebooks folder: the names of its entries and the bytes of its
    ``.py`` files, not the ``.ipynb`` files' (a notebook saved in JupyterLab with its outputs made the next
    claims check, and so every refusal, import torch again: 4.3 CPU s instead of 0.8)."""
    try:
        names = sorted(e.name for e in os.scandir(folder))
    except OSError:
        return [str(folder), None]
    return [str(folder), names, *([n, file_digest(Path(folder) / n)] for n in names if n.endswith(".py"))]


def claims_problems(value: str, what: str) -> list[str]:
    """Notebook 15's claims file (parameter ``CLAIMS``) known by name and valid, before any kernel
    (``claims.check_name`` and ``claims.load``): its problems, one line each (none: []). Remembered by the
    name, the claims files' and the notebooks' contents and the library's code (:mod:`.remembered`): the
    claims package imports the metrics, torch and scipy."""
    key = [value, what, str(Path.cwd()), _tree_digest(Path(value)) if value.endswith((".yaml", ".yml")) else None,
           _tree_digest(_CLAIMS_INPUTS[0]), notebooks_code_digest(_CLAIMS_INPUTS[1])]
    return remembered("claims-problems", key, lambda: _claims_problems(value, what), check=lines_ok)


def _claims_problems(value: str, what: str) -> list[str]:
    try:
        claims.load(claims.check_name(value, what))
    except ParamsError as exc:
        return exc.lines
    return []


def _tree_digest(path: Path) -> list:
    """``[path, [name, sha256 of its bytes or None], ...]`` of a file or of the entries of a folder (sorted)."""
    if not path.is_dir():
        return [str(path), file_digest(path)]
    try:
        names = sorted(e.name for e in os.scandir(path))
    except OSError:
        return [str(path), None]
    return [str(path), *([n, file_digest(path / n)] for n in names)]


