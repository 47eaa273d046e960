"""The jobs of a report root read back: one :class:`JobRecord` per finished, failed or incomplete job.

What a ``metrics.json`` says is checked here, once, before any of it reaches HTML: its shape
against :data:`METRICS_SCHEMA` (``jsonschema``), and every figure entry against its own job
directory. An entry of the wrong shape, a figure outside the job's folder or missing, a figure
that is not a PNG or JPEG (by name and by its first bytes: an SVG linked "for full size" runs its
script) or is over :data:`MAX_FIGURE_BYTES`, a figure without a title: each becomes one line in :attr:`JobRecord.problems` naming the file and the
field, the entry is left out (or captioned with its file name), and the rest is reported.
Then what the shape cannot say (:func:`check_values`): a headline's ``fmt`` must be a format
spec of :data:`FMT` (no width: a ``fmt`` of ``>300000000`` would make a 300 MB cell), and a
value must lie inside its own interval (``results.outside``, the rule ``results.headline``
writes by). The root is read through :mod:`geolip_lib.roots` (no link followed, a file at most
``roots.MAX_JSON_BYTES`` long and ``roots.MAX_JSON_DEPTH`` deep).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from .. import roots
from ..results import outside

OK, FAILED, INCOMPLETE = "ok", "failed", "incomplete"

#: figure files the report shows (as ``<img>``; embedded as ``data:`` URIs in the PDF) and links at
#: full size: PNG and JPEG only (matplotlib writes PNG here). An SVG is inert inside ``<img>`` but
#: runs its script when its link is opened as a document, so it is never taken.
FIGURE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
#: the first bytes of each type: a figure's content must say what its name says
FIGURE_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",)}
#: the largest figure file the report takes (a 1 GB key figure drove the PDF step to 15 GB of memory)
MAX_FIGURE_BYTES = 20 * 2 ** 20

_NUM = {"type": ["number", "null"]}
_STR = {"type": ["string", "null"], "maxLength": 20000}  # a label or note, not a page
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
    # a file name -> {sha256, bytes}; a GGUF or simulated-quantized model adds flags and maps (provenance.model_info):
    # "dequantized"/"simulated": bool, "quantization"/"quantization_summary"/"rounded_from": objects, "gguf_file": object|null
    "dequantized": {"type": ["boolean", "null"]}, "trained_weights": {"type": ["boolean", "null"]},
    "weights": {"type": ["object", "null"], "additionalProperties": {
        "type": ["object", "boolean", "null"], "properties": {"sha256": _STR}}}}}
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


#: the format specs a headline's ``fmt`` may be: an optional sign, ``,``, ``.N`` (N ≤ 12) and a
#: type; no fill, alignment or width (a width is the size of the cell the report writes)
FMT = re.compile(r"[+\- ]?,?(\.(1[0-2]|[0-9]))?[deEfFgGos%]?")


#: headline numbers one job may show (the notebooks record at most a few dozen)
MAX_HEADLINES = 200


def check_values(data: dict, where: Path) -> list[str]:
    """Leave out every headline number whose ``fmt`` is not a spec of :data:`FMT` or whose value
    (or a null's) lies outside its own interval; one line each."""
    problems = []
    heads = data.get("headline") or {}
    if len(heads) > MAX_HEADLINES:  # a column each in the composite table
        problems.append(f"{where}: field 'headline': {len(heads)} numbers, more than the {MAX_HEADLINES} a job's "
                        f"table shows; the first {MAX_HEADLINES} are kept (rerun the job to rewrite its metrics.json)")
        for key in list(heads)[MAX_HEADLINES:]:
            heads.pop(key)
    for key in list(heads):
        h = heads[key]
        if not h:
            continue
        fmt = h.get("fmt")
        if fmt is not None and not FMT.fullmatch(fmt):
            shown = fmt if len(fmt) <= 20 else fmt[:20] + "..."
            problems.append(f"{where}: field 'headline.{key}.fmt': {shown!r} is not a number format the report "
                            "accepts (a sign, ',', '.N' with N ≤ 12 and one of d e f g o s %; no width); left out "
                            "of the report (rerun the job to rewrite its metrics.json)")
            heads.pop(key)
            continue
        bad = [("value", h.get("value"), h.get("interval"))]
        bad += [(f"nulls.{k}.value", n.get("value"), n.get("interval")) for k, n in (h.get("nulls") or {}).items() if n]
        for what, v, iv in bad:
            if outside(v, iv):
                problems.append(f"{where}: field 'headline.{key}.{what}': {v!r} lies outside its own interval "
                                f"[{iv.get('lo')!r}, {iv.get('hi')!r}]; left out of the report (metrics.json was "
                                "edited or damaged: rerun the job)")
                heads.pop(key)
                break
    return problems


def figure_file_problem(path: Path) -> str | None:
    """Why the figure file ``path`` (a regular file with a name of :data:`FIGURE_TYPES`) is not
    taken: over :data:`MAX_FIGURE_BYTES`, or bytes that are not the image its name says (an SVG
    or HTML page named ``.png`` would run script where a browser sniffs it). ``None``: take it."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        return f"which cannot be read ({exc.strerror or exc}); left out (rerun the job)"
    if size > MAX_FIGURE_BYTES:
        return (f"{size} bytes, over the limit of {MAX_FIGURE_BYTES} for a figure; left out (save the figure "
                f"smaller)")
    mime = FIGURE_TYPES[path.suffix.lower()]
    if not head.startswith(FIGURE_MAGIC[mime]):
        return (f"whose bytes are not a {mime.split('/')[1].upper()} image (they begin {head!r}); left out "
                f"(rerun the job)")
    return None


def check_figures(data: dict, job: Path, where: Path) -> list[str]:
    """Keep the figure entries whose file lies inside ``job`` (no absolute path, no ``..``, no
    symlink out) and exists, a PNG or JPEG by name and by its first bytes, at most
    :data:`MAX_FIGURE_BYTES` long; caption an untitled one with its file name.

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
        why = figure_file_problem(target)
        if why:
            problems.append(f"{where}: field 'figures[{i}].file' names {name!r}, {why}")
            continue
        if not fig.get("title"):
            problems.append(f"{where}: field 'figures[{i}].title' is missing; {name!r} is captioned with its file name")
            fig = {**fig, "title": Path(name).name}
        kept.append({**fig, "file": target.relative_to(root).as_posix()})
    if "figures" in data:
        data["figures"] = kept
    return problems


def read_record(notebook: str, job: Path, root: Path | None = None) -> JobRecord:
    """One finished job's record: ``metrics.json`` read (:func:`geolip_lib.roots.read_json`,
    inside ``root``: by default the job's output root), its shape, values and figures checked."""
    where = job / "metrics.json"
    try:
        data = roots.read_json(root if root is not None else job.parent.parent, where)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        why = str(exc) if isinstance(exc, roots.RootReadError) else f"{where}: unreadable ({exc})"
        return JobRecord(notebook, job.name, job, error=f"{why}; rerun with --resume")
    problems = check_shape(data, where)
    problems += check_values(data, where)
    problems += check_figures(data, job, where)
    return JobRecord(notebook, job.name, job, data, problems=problems)


def _first_line(path: Path) -> str:
    """The first line of a failed job's ``error.txt`` (read as at most 4 kB), or a placeholder."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", errors="replace").split("\n", 1)[0] or "failed"
    except OSError:
        return "failed (no error.txt)"


def collect(out_root: Path) -> dict[str, list[JobRecord]]:
    """Every completed, failed and incomplete job under ``out_root``, grouped by notebook (sorted).

    The job folders are :func:`geolip_lib.roots.job_dirs`: a notebook or job folder that is a
    link is never read. An unreadable ``metrics.json`` makes its job a failed record naming the
    file (the rest of the report still builds). A job folder without ``metrics.json``, or a
    ``.<job>.partial`` left by a killed run with no result beside it, is an *incomplete* record:
    listed, not dropped.
    """
    groups: dict[str, list[JobRecord]] = {}
    out_root = Path(out_root)
    for nb_dir in roots.notebook_dirs(out_root):
        recs = []
        names = {p.name for p in nb_dir.iterdir()}
        for job in sorted(roots.job_dirs(out_root, nb_dir.name, hidden=True), key=lambda p: p.name.lstrip(".")):
            if job.name.startswith("."):
                jid = job.name[1:-len(".partial")] if job.name.endswith(".partial") else ""
                if jid and jid not in names and f"{jid}.failed" not in names:
                    recs.append(JobRecord(nb_dir.name, jid, job, status=INCOMPLETE,
                                          error=f"incomplete: a run stopped while writing it ({job} is left); "
                                                f"rerun with --resume"))
                continue  # .partial (running or killed) and .old directories never count as results
            if job.name.endswith(".failed"):
                failed_txt = job / "error.txt"
                err = _first_line(failed_txt) if failed_txt.is_file() and not failed_txt.is_symlink() \
                    else "failed (no error.txt)"
                recs.append(JobRecord(nb_dir.name, job.name[:-7], job, error=err or "failed"))
            elif (job / "metrics.json").exists() or (job / "metrics.json").is_symlink():
                rec = read_record(nb_dir.name, job, out_root)
                failed = nb_dir / f"{job.name}.failed"
                if rec.ok and failed.is_dir() and not failed.is_symlink() and \
                        failed.stat().st_mtime > (job / "metrics.json").stat().st_mtime:
                    continue  # a rerun failed after this result: the failure is what is current
                recs.append(rec)
            elif f"{job.name}.failed" not in names:
                recs.append(JobRecord(nb_dir.name, job.name, job, status=INCOMPLETE,
                                      error=f"incomplete: {job} has no metrics.json (the job did not finish); "
                                            f"rerun with --resume"))
        if recs:
            groups[nb_dir.name] = recs
    return groups
