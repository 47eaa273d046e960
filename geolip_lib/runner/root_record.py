"""What an output root records about the run that writes it: ``.profile.json`` (the profile and the
``--models`` / ``--notebooks`` selection; another profile's root is refused), and whether a root
holds results for ``--report-only``. Read through :mod:`geolip_lib.roots`."""
from __future__ import annotations

import json
import os
from pathlib import Path

from .. import roots
from ..params import ParamsError
from ..results import atomic_write_text
from .lock import RunError
from .notebooks import adds_no_models


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


#: what a run itself leaves in a root before it records .profile.json (a lock, the zygote's log, a write probe)
_OWN_ENTRIES = (".run.lock", ".runner.log", ".write-test-")


def check_ours(out_root: Path) -> None:
    """Before a run writes into ``out_root``: a folder that exists, holds anything and is not a geolip
    output root (no :data:`ROOT_PROFILE`) is refused with one line (``--out`` an existing
    folder of one's own files overwrote its index.html and report.pdf and deleted a same-named
    ``<notebook>/<job>/``). A new or empty folder, or the root of an earlier run, is ours."""
    out_root = Path(out_root)
    if not out_root.is_dir() or (out_root / ROOT_PROFILE).is_file():
        return
    try:
        with os.scandir(out_root) as it:
            foreign = sorted(e.name for e in it if not e.name.startswith(_OWN_ENTRIES))
    except OSError:
        return  # prepare_root says why it cannot be written
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise RunError(f"output root {out_root} already holds files ({shown}) and is not a geolip output root (no "
                       f"{ROOT_PROFILE}); nothing was written: pass --out a new or empty folder, or the root of an "
                       "earlier run")


def _recorded(out_root: Path) -> dict | None:
    """The selection ``.profile.json`` holds (None: none, or not of the shape written here)."""
    try:
        sel = roots.read_json(out_root, Path(out_root) / ROOT_PROFILE, max_bytes=64 * 1024).get("selection")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(sel, dict) or not all(sel.get(k) is None or isinstance(sel.get(k), list)
                                            for k in ("models", "notebooks")):
        return None
    return {k: sel.get(k) for k in ("models", "notebooks")}


def _union(a: list | None, b: list | None) -> list | None:
    """Two runs' ``--models`` (or ``--notebooks``) together; None (every one) absorbs the other."""
    return None if a is None or b is None else sorted(set(map(str, a)) | set(map(str, b)))


def _adds_no_models(notebook: str) -> bool:
    try:
        return adds_no_models(notebook)
    except (OSError, ValueError, ParamsError):  # a notebook since renamed or removed: count its models
        return False


def merged_selection(old: dict | None, new: dict) -> dict:
    """The selection of an output root after a run of ``new`` on a root that held ``old`` (the header describes the root, not its last run): models and notebooks each the union of the
    two, None (every one) absorbing; a run of notebooks that only read the other jobs' results (15's
    claims: :func:`.notebooks.adds_no_models`) adds its notebooks and no models. No ``old`` (a new
    root, or one from before selections were kept): the run's own."""
    if old is None:
        return dict(new)
    nbs = new.get("notebooks")
    models = old.get("models") if nbs and all(_adds_no_models(nb) for nb in nbs) else \
        _union(old.get("models"), new.get("models"))
    return {"models": models, "notebooks": _union(old.get("notebooks"), nbs)}


def claim_root(out_root: Path, profile: str, selection: dict | None = None) -> None:
    """Before a run writes into ``out_root``: refuse a root of another profile (one-line RunError),
    else record ``profile`` in it (atomically), with the selection of every run of it when this run's
    ``selection`` is given (``{"models": [...] | None, "notebooks": [...] | None}``: ``--models`` /
    ``--notebooks``, merged with the root's by :func:`merged_selection`; the report's header names it)."""
    _other_profile(out_root, profile)
    if root_profile(out_root) is None or selection is not None:
        if selection is not None and root_profile(out_root) is not None:
            selection = merged_selection(_recorded(out_root), selection)
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
