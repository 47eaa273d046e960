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


def resolve(path: str | os.PathLike) -> Path:
    """``path`` with ``~`` expanded; a relative path is taken from the checkout, not the cwd
    (a notebook's working directory is its own folder)."""
    p = Path(os.path.expanduser(str(path)))
    return p if p.is_absolute() else ROOT / p


__all__ = ["PARAMS", "REPORTS", "ROOT", "cache_root", "resolve"]
