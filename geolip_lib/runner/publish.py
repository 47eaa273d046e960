"""A finished job moved into place (:func:`publish`), results a killed run had moved aside put back
(:func:`recover`), and the executed notebook pointed at its final folder (:func:`_repoint_injected`)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..lazy import lazy
from .lock import UnsafePathError, check_root, inside_root, remove_entry
from .resume import FINGERPRINT

nbformat = lazy("nbformat")


def publish(partial: Path, final: Path, root: Path) -> None:
    """Move a finished job into place inside the output root ``root``, replacing an older result.

    The old result is renamed to ``.<job>.old`` first and deleted only after the new one is
    in place; a run killed between the two renames leaves the old one there, and
    :func:`recover` (called by every run) puts it back. Old and new are never both lost.
    Both paths must lie in one directory inside ``root`` with no symbolic link on the way
    (one-line :class:`.lock.UnsafePathError`); an entry in the way that is a link is moved
    or unlinked as a link, never followed; a root this run locked that was deleted or
    replaced meanwhile is :class:`.lock.RootVanished` (nothing is published into it).
    """
    final, partial = inside_root(root, final), inside_root(root, partial)
    if partial.parent != final.parent:
        raise UnsafePathError(f"{partial} and {final} are not in one directory; a result is only renamed in place")
    if os.path.islink(partial) or not partial.is_dir():
        raise UnsafePathError(f"{partial} is not a directory the runner wrote; nothing was published")
    check_root(root)
    if os.path.isdir(final) and not os.path.islink(final) and not (
            os.path.lexists(os.path.join(final, "metrics.json")) or os.path.lexists(os.path.join(final, FINGERPRINT))):
        raise UnsafePathError(f"{final} holds no geolip result (no metrics.json): it was not replaced; move it away "
                              "or pass another --out")
    old = final.parent / f".{final.name}.old"
    remove_entry(old)
    if os.path.lexists(final):
        os.replace(final, old)  # a link or a file is moved as itself
    os.replace(partial, final)
    remove_entry(old, ignore_errors=True)


def recover(out_root: Path, console=None) -> list[str]:
    """Put back results a killed run had moved aside (``.<job>.old`` without ``<job>``).

    Only real directories count: a notebook folder or a ``.old`` entry that is a symbolic link
    (or a file) is never followed; such an ``.old`` is unlinked, with a line saying so."""
    restored = []
    out_root = Path(out_root)
    console = console or sys.stderr
    try:
        nb_dirs = sorted(e.path for e in os.scandir(out_root) if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return restored
    for nb in map(Path, nb_dirs):
        try:
            olds = sorted(e for e in os.scandir(nb) if e.name.startswith(".") and e.name.endswith(".old"))
        except OSError:
            continue
        for entry in olds:
            old, name = Path(entry.path), entry.name[1:-4]
            if name in ("", ".", ".."):
                continue
            if not entry.is_dir(follow_symlinks=False):
                remove_entry(old, ignore_errors=True)
                print(f"removed {old}: a {'symbolic link' if entry.is_symlink() else 'file'} where a moved-aside "
                      "result belongs (not followed)", file=console, flush=True)
                continue
            final = nb / name
            if os.path.lexists(final):
                remove_entry(old, ignore_errors=True)
            else:
                os.replace(old, final)
                restored.append(f"{nb.name}/{final.name}")
                print(f"restored the previous result of {nb.name}/{final.name} "
                      "(a run was stopped while replacing it)", file=console, flush=True)
    return restored


def _repoint_injected(executed: Path, partial: Path, final: Path) -> None:
    """The injected parameters cell and papermill's metadata name the temporary directory;
    point them at the final one (the executed notebook is shown as HTML, and a stale
    ``.partial`` path misleads)."""
    nb = nbformat.reads(executed.read_text(encoding="utf-8").replace(json.dumps(str(partial))[1:-1],
                                                                   json.dumps(str(final))[1:-1]), as_version=4)
    nbformat.write(nb, str(executed))  # the injected cell and papermill's metadata (parameters, output_path)
