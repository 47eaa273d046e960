"""``run_all.py --claims FILE ...``: the verdict matrices of claims files added to an output root that
holds a run's results, without a profile written for them.

Each claims file becomes one job of the claims notebook (15) of the root's own profile, with the
profile's parameters for that notebook and ``CLAIMS`` set to the file: the job reads every result
of the root, as the profile's own claims jobs do, and the report then shows its matrix beside the
others. A file the profile already evaluates (a claims job of its own with the same ``CLAIMS``) reruns
that job rather than adding a second matrix of the same file. Every name is checked (a safe name,
a known or existing file, valid against the schema) before any kernel starts: one line each.
"""
from __future__ import annotations

from pathlib import Path

from ..params import ParamsError, load_profile, name_problem
from .jobs import check_parameters
from .jobspec import Job
from .lock import RunError
from .notebooks import notebook_defaults, notebooks_dir
from .root_record import check_report_root, root_profile

__all__ = ["CLAIMS_NOTEBOOK", "claims_profile", "claims_jobs"]

#: the notebook that evaluates a claims file against an output root's results
CLAIMS_NOTEBOOK = "15_seed_claims"
#: at most this many files in one --claims (each is a job; a typo such as a glob of a big folder is refused)
MAX_FILES = 64


def claims_profile(out_root: Path, given: str | None) -> str:
    """The profile of ``out_root`` (the one its ``.profile.json`` records), checked against ``--profile``
    when given; the root must exist and hold results (one-line ``RunError`` otherwise: there is nothing for
    a claims file to read)."""
    profile = given or root_profile(out_root)
    if profile is None:
        raise RunError(f"--claims: output root {out_root} records no profile (no .profile.json): run a profile "
                          "into it first (python run_all.py --profile <name> --out <root>), or pass the --out of an "
                          "earlier run")
    check_report_root(out_root, profile)
    return profile


def _file_id(name: str) -> str:
    """The job id of a claims file: its name, or a path's file stem."""
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def claims_jobs(profile: str, names: list[str]) -> list[Job]:
    """One claims-notebook job per claims file in ``names`` (a name under params/claims/ or a path to a
    ``.yaml``), with the profile's parameters for that notebook; every problem one line of one ParamsError."""
    prof = load_profile(profile, notebooks_dir=notebooks_dir())
    problems: list[str] = []
    if len(names) > MAX_FILES:
        raise ParamsError(f"--claims: {len(names)} files; give at most {MAX_FILES} at once")
    entry = prof.notebooks.get(CLAIMS_NOTEBOOK)
    base = {**prof.defaults, **(entry.parameters if entry is not None else {})}
    default = notebook_defaults(CLAIMS_NOTEBOOK).get("CLAIMS")
    own = {}  # the profile's own claims jobs, by the file they evaluate: rerun, not doubled
    for j in (entry.jobs if entry is not None else []):
        own.setdefault(str(j.parameters.get("CLAIMS", base.get("CLAIMS", default))), j.id or j.model or "all")
    jobs: list[Job] = []
    seen: dict[str, str] = {}
    for name in names:
        job_id = own.get(name) or own.get(_file_id(name)) or _file_id(name)
        why = name_problem(job_id)
        if why:
            problems.append(f"--claims {name!r}: {why}")
            continue
        if job_id.lower() in seen:
            problems.append(f"--claims: {name!r} and {seen[job_id.lower()]!r} would share the job "
                            f"{CLAIMS_NOTEBOOK}/{job_id}/; give each file once")
            continue
        seen[job_id.lower()] = name
        jobs.append(Job(profile=prof.name, notebook=CLAIMS_NOTEBOOK, job_id=job_id, model=None,
                        parameters={**base, "CLAIMS": name},
                        timeout_s=(entry.timeout_s if entry is not None else None) or prof.timeout_s,
                        kernel=prof.kernel))
    try:
        check_parameters(jobs, prof.name)  # CLAIMS: known, valid against the schema (claims_problems)
    except ParamsError as exc:
        problems += exc.lines
    if problems:
        raise ParamsError.of(problems)
    return jobs
