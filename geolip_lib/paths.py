"""Where things live: the checkout, its params and reports, and the project cache (bottom layer).

One home for the repository root and the cache root, which five modules used to compute
each for itself. Nothing here imports another ``geolip_lib`` module.
"""
from __future__ import annotations

import os
from pathlib import Path

#: the checkout (the directory holding ``geolip_lib/``, ``params/``, ``notebooks/``)
ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "params"
REPORTS = ROOT / "reports"


def cache_root() -> Path:
    """Root of the project cache: ``$GEOLIP_CACHE``, else ``<checkout>/.cache`` (read at call time)."""
    return Path(os.environ.get("GEOLIP_CACHE", ROOT / ".cache"))


def cache_problem() -> str | None:
    """Why the project cache (:func:`cache_root`) cannot be used, in one line, or ``None``: it
    (or, where it does not exist yet, the nearest folder above it that does) must be a folder
    this user can write. Checked when a profile is loaded, before any output root is created
    or kernel started (a file or a read-only folder gave a traceback deep in a run)."""
    env = os.environ.get("GEOLIP_CACHE")
    root = cache_root()
    name = f"GEOLIP_CACHE={env}" if env is not None else f"the project cache {root}"
    fix = ("set GEOLIP_CACHE to a folder you can write, or unset it for <checkout>/.cache" if env is not None
           else "set GEOLIP_CACHE to a folder you can write")
    if env is not None and not env.strip():
        return f"{name} is not a writable folder: it is empty; {fix}"
    p = Path(os.path.abspath(root))
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    if not p.is_dir():
        what = "a file" if p.is_file() else ("a broken link" if p.is_symlink() else "not a folder")
        return f"{name} is not a writable folder: {p} is {what}; {fix}"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{name} is not a writable folder: {p} is read-only; {fix}"
    return None


def shared_cache_root() -> Path | None:
    """A cache shared by every checkout of this user (None: off): ``$GEOLIP_SHARED_CACHE``, else
    ``$XDG_CACHE_HOME/geolip`` (``~/.cache/geolip``); ``GEOLIP_SHARED_CACHE=`` (empty) turns it
    off. Holds only derived files whose name carries the key of everything they derive from (the
    WordNet lexicon arrays), so a second clone copies them instead of rebuilding them (~50 s)."""
    env = os.environ.get("GEOLIP_SHARED_CACHE")
    if env is not None:
        return Path(os.path.expanduser(env)) if env.strip() else None
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "geolip"


def resolve(path: str | os.PathLike) -> Path:
    """``path`` with ``~`` expanded; a relative path is taken from the checkout, not the cwd
    (a notebook's working directory is its own folder)."""
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else ROOT / p


__all__ = ["PARAMS", "REPORTS", "ROOT", "cache_problem", "cache_root", "resolve"]
