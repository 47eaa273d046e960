"""The notebooks a run executes: where they are (``$GEOLIP_NOTEBOOKS`` or ``notebooks/``, read at each
call so that a test or a second checkout can point elsewhere), each parsed once per modification
time, its parameters cell (names, declared defaults and ranges: :mod:`.parameters`), the digest
``--resume`` compares, and whether it reads other jobs' results.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from pathlib import Path

from ..lazy import lazy
from ..params import ROOT, ParamsError
from .parameters import EXPRESSION, Declared, declared

nbformat = lazy("nbformat")


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


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def notebook_digest(notebook: str) -> str:
    """sha256 of the notebook's cells (type + source): saving it in JupyterLab without an
    edit (new metadata, outputs) does not make results stale."""
    return _sha(json.dumps([[c.cell_type, c.source] for c in read_notebook(notebook).cells]).encode())


def reads_other_jobs(notebook: str) -> bool:
    """Whether the notebook reads other jobs' results (uses ``REPORT_ROOT`` outside its
    parameters cell: 03_cross_model, 15_seed_claims), so a newer result makes it stale and a
    parallel run starts it only after every job before it has finished."""
    return any("REPORT_ROOT" in c.source for c in read_notebook(notebook).cells
               if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))


def adds_no_models(notebook: str) -> bool:
    """Whether the notebook reads the other jobs' results and loads no model of its own (15's claims;
    not 03, which computes its ``MODELS``): ``--models`` keeps its job when a selected job feeds it,
    and a run of it adds no models to what an output root holds."""
    return reads_other_jobs(notebook) and not {"MODEL", "MODELS"} & set(notebook_parameters(notebook))
