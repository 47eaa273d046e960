"""The jobs of a report root read back: one :class:`JobRecord` per finished, failed or incomplete job.

What a ``metrics.json`` says is checked here, once, before any of it reaches HTML: its shape
against :data:`METRICS_SCHEMA` (``jsonschema``), and every figure entry against its own job
directory. An entry of the wrong shape, a figure outside the job's folder or missing, a figure
without a title: each becomes one line in :attr:`JobRecord.problems` naming the file and the
field, the entry is left out (or captioned with its file name), and the rest is reported.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

OK, FAILED, INCOMPLETE = "ok", "failed", "incomplete"

#: figure files the report shows (as ``<img>``; embedded as ``data:`` URIs in the PDF)
FIGURE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}

_NUM = {"type": ["number", "null"]}
_STR = {"type": ["string", "null"]}
_INTERVAL = {"type": ["object", "null"], "properties": {"lo": _NUM, "hi": _NUM, "method": _STR, "level": _NUM}}
_HEADLINE = {"type": ["object", "null"], "properties": {
    "value": {"type": ["number", "string", "boolean", "null"]}, "interval": _INTERVAL, "label": _STR,
    "note": _STR, "fmt": _STR,
    "nulls": {"type": ["object", "null"], "additionalProperties": {"type": ["object", "null"], "properties": {
        "value": {"type": ["number", "string", "null"]}, "interval": _INTERVAL,
        "separated": {"type": ["boolean", "null"]}}}}}}
_MODEL = {"type": "object", "properties": {
    "name": _STR, "source": _STR, "id": _STR, "local_dir": _STR, "revision": _STR, "commit_hash": _STR,
    "dtype": _STR, "weights_note": _STR,
    "weights": {"type": ["object", "null"], "additionalProperties": {"type": "object", "properties": {"sha256": _STR}}}}}
#: the parts of ``metrics.json`` that the report reads (:func:`geolip_lib.results.record` writes them)
METRICS_SCHEMA = {"type": "object", "properties": {
    "headline": {"type": "object", "additionalProperties": _HEADLINE},
    "figures": {"type": "array", "items": {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "minLength": 1}, "title": _STR, "key": {"type": ["boolean", "null"]}}}},
    "provenance": {"type": "object", "properties": {
        "git": {"type": ["object", "null"], "properties": {"commit": _STR, "dirty": {"type": ["boolean", "null"]}}},
        "versions": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "null"]}},
        "device": {"type": ["object", "null"]},
        "models": {"type": ["array", "null"], "items": _MODEL}}}}}


@dataclass
class JobRecord:
    notebook: str
    job_id: str
    path: Path
    data: dict = field(default_factory=dict)
    error: str | None = None
    status: str = OK
    problems: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.error is not None and self.status == OK:
            self.status = FAILED

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def headline(self) -> dict:
        return self.data.get("headline") or {}

    @property
    def figures(self) -> list[dict]:
        """The figure entries that passed :func:`check_figures` (inside the job directory, present)."""
        return self.data.get("figures") or []

    @property
    def provenance(self) -> dict:
        return self.data.get("provenance") or {}


def _field(path) -> str:
    """``headline.cv.interval.lo`` / ``figures[2].title`` from a jsonschema error path."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _path_order(err) -> list[str]:
    return [f"{p:09d}" if isinstance(p, int) else str(p) for p in err.path]  # figures[2] before figures[10]


def check_shape(data: dict, where: Path) -> list[str]:
    """Drop every entry of ``data`` that does not have the shape the report reads; one line each.

    The entry dropped is the error's first two path steps (``headline.cv``, ``figures[1]``,
    ``provenance.git``): the one headline number, figure or provenance part that is wrong.
    """
    problems, drop = [], []
    for err in sorted(jsonschema.Draft7Validator(METRICS_SCHEMA).iter_errors(data), key=_path_order):
        path = list(err.path)
        # the entry to leave out: a headline number, a figure, a provenance part, one model of a list
        depth = 3 if len(path) >= 3 and isinstance(path[2], int) else 2
        cut = tuple(path[:depth])
        if any(cut[:len(d)] == d for d in drop):
            continue  # inside an entry already left out
        if cut in drop:
            continue
        drop.append(cut)
        problems.append(f"{where}: field '{_field(err.path) if err.path else _field(cut)}': {err.message}; "
                        f"left out of the report (rerun the job to rewrite its metrics.json)")
    gone = object()
    lists = []
    for cut in drop:  # mark first, then remove: list indices stay valid while marking
        parent = data
        for p in cut[:-1]:
            parent = parent[p]
        if isinstance(parent, list):
            parent[cut[-1]] = gone
            lists.append(parent)
        elif cut:
            parent.pop(cut[-1], None)
    for lst in lists:
        lst[:] = [x for x in lst if x is not gone]
    return problems


def check_figures(data: dict, job: Path, where: Path) -> list[str]:
    """Keep the figure entries whose file lies inside ``job`` (no absolute path, no ``..``, no
    symlink out) and exists, with a known image type; caption an untitled one with its file name.

    Figures are read only from inside their own job directory: an entry naming ``/etc/passwd``
    or ``../../x`` is refused here and never read or embedded.
    """
    problems, kept = [], []
    root = job.resolve()
    for i, fig in enumerate(data.get("figures") or []):
        name = fig["file"]
        target = (job / name).resolve()
        if Path(name).is_absolute() or (target != root and root not in target.parents):
            problems.append(f"{where}: field 'figures[{i}].file' names {name!r}, outside its job directory; "
                            f"refused (a figure is read only from inside {job})")
            continue
        if target.suffix.lower() not in FIGURE_TYPES:
            problems.append(f"{where}: field 'figures[{i}].file' names {name!r}, not an image "
                            f"({', '.join(FIGURE_TYPES)}); left out")
            continue
        if not target.is_file():
            problems.append(f"{where}: field 'figures[{i}].file' names {name!r}, which does not exist in {job}; "
                            f"left out (rerun the job)")
            continue
        if not fig.get("title"):
            problems.append(f"{where}: field 'figures[{i}].title' is missing; {name!r} is captioned with its file name")
            fig = {**fig, "title": Path(name).name}
        kept.append({**fig, "file": target.relative_to(root).as_posix()})
    if "figures" in data:
        data["figures"] = kept
    return problems


def read_record(notebook: str, job: Path) -> JobRecord:
    """One finished job's record: ``metrics.json`` read, its shape and figures checked."""
    where = job / "metrics.json"
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        return JobRecord(notebook, job.name, job, error=f"{where}: unreadable ({exc}); rerun with --resume")
    problems = check_shape(data, where)
    problems += check_figures(data, job, where)
    return JobRecord(notebook, job.name, job, data, problems=problems)


def collect(out_root: Path) -> dict[str, list[JobRecord]]:
    """Every completed, failed and incomplete job under ``out_root``, grouped by notebook (sorted).

    An unreadable ``metrics.json`` makes its job a failed record naming the file (the rest
    of the report still builds). A job folder without ``metrics.json``, or a ``.<job>.partial``
    left by a killed run with no result beside it, is an *incomplete* record: listed, not dropped.
    """
    groups: dict[str, list[JobRecord]] = {}
    for nb_dir in sorted(p for p in out_root.iterdir()
                         if p.is_dir() and not p.is_symlink() and not p.name.startswith(("_", "."))):
        recs = []
        names = {p.name for p in nb_dir.iterdir()}
        for job in sorted(nb_dir.iterdir(), key=lambda p: p.name.lstrip(".")):
            if job.is_symlink() or not job.is_dir():
                continue  # a symlink is never followed: what it points at is outside this root's jobs
            if job.name.startswith("."):
                jid = job.name[1:-len(".partial")] if job.name.endswith(".partial") else ""
                if jid and jid not in names and f"{jid}.failed" not in names:
                    recs.append(JobRecord(nb_dir.name, jid, job, status=INCOMPLETE,
                                          error=f"incomplete: a run stopped while writing it ({job} is left); "
                                                f"rerun with --resume"))
                continue  # .partial (running or killed) and .old directories never count as results
            if job.name.endswith(".failed"):
                err = (job / "error.txt").read_text(encoding="utf-8", errors="replace").split("\n", 1)[0] \
                    if (job / "error.txt").is_file() else "failed (no error.txt)"
                recs.append(JobRecord(nb_dir.name, job.name[:-7], job, error=err or "failed"))
            elif (job / "metrics.json").exists():
                rec = read_record(nb_dir.name, job)
                failed = nb_dir / f"{job.name}.failed"
                if rec.ok and failed.is_dir() and failed.stat().st_mtime > (job / "metrics.json").stat().st_mtime:
                    continue  # a rerun failed after this result: the failure is what is current
                recs.append(rec)
            elif f"{job.name}.failed" not in names:
                recs.append(JobRecord(nb_dir.name, job.name, job, status=INCOMPLETE,
                                      error=f"incomplete: {job} has no metrics.json (the job did not finish); "
                                            f"rerun with --resume"))
        if recs:
            groups[nb_dir.name] = recs
    return groups
