"""Every notebook: committed without outputs, one parameters cell, jupytext pair in sync,
present in every profile; every profile validates."""
from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

from geolip_lib.params import load_profile, profile_names

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb") if not p.name.startswith("00_"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_clean_parametrized_and_paired(path):
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        f"{path.name} carries outputs: strip them (executed copies belong in reports/)"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: expected exactly one cell tagged 'parameters'"
    names = [ln.split("=")[0].strip() for ln in tagged[0].source.splitlines()
             if "=" in ln and not ln.lstrip().startswith("#")]
    assert names and all(n.isupper() or n.replace("_", "").isupper() for n in names), names
    assert all("#" in ln for ln in tagged[0].source.splitlines() if "=" in ln), \
        f"{path.name}: every parameter needs a comment"
    py = path.with_suffix(".py")
    assert py.exists(), f"{path.name} has no jupytext pair {py.name}"
    paired = jupytext.read(str(py))
    strip = lambda cells: [(c.cell_type, c.source.strip()) for c in cells]  # noqa: E731
    assert strip(paired.cells) == strip(nb.cells), f"{path.name} and {py.name} differ: run `make notebooks`"


# Profiles that run a few notebooks on purpose (families: 01/02/06 on every model family, CI's
# second step); every other profile makes a whole findings report and must cover every notebook.
FOCUSED_PROFILES = {"families"}


@pytest.mark.parametrize("profile", profile_names())
def test_profiles_validate_and_cover_every_notebook(profile):
    prof = load_profile(profile)
    if profile in FOCUSED_PROFILES:  # validated above; it runs a few notebooks on purpose
        assert prof.notebooks
        return
    missing = [p.stem for p in NOTEBOOKS if p.stem not in prof.notebooks]
    assert not missing, f"profile {profile} lacks {missing}"


MAX_CELL_LINES = 15  # code lines (not blank, not comments) per cell; the parameters cell is exempt
BANNED_IMPORTS = ("matplotlib", "seaborn")


def _code_lines(src: str) -> int:
    return sum(1 for ln in src.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "%", "!")))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_narrative_plus_library_calls(path):
    """Thin notebooks: one runtime.start, one job.finish, no functions, short cells,
    figures drawn by library functions (no matplotlib in the notebook), no printed dicts."""
    import ast

    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
    text = "\n".join(c.source for c in code)
    assert text.count("runtime.start(") == 1, f"{path.name}: open with exactly one job = runtime.start(...)"
    assert text.count("job.finish(") == 1, f"{path.name}: close with exactly one job.finish(...)"
    for i, cell in enumerate(code):
        n = _code_lines(cell.source)
        assert n <= MAX_CELL_LINES, f"{path.name} code cell {i}: {n} lines (max {MAX_CELL_LINES}): move it to the library"
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            assert not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)), \
                f"{path.name} code cell {i}: defines a function/class (line {node.lineno}): move it to the library"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                assert not any(m.split(".")[0] in BANNED_IMPORTS for m in mods), \
                    f"{path.name} code cell {i}: imports {mods}: figures are <package>/plots.py functions"
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                assert all(isinstance(a, (ast.Constant, ast.JoinedStr)) for a in node.args), \
                    f"{path.name} code cell {i} line {node.lineno}: print only sentences; show data with job.table"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_parses_every_parameter(path, caplog):
    """papermill infers each parameter's type from its line; a line it cannot parse is logged
    ("Unable to parse line ...") and the parameter is missing from `papermill --help-notebook`."""
    import logging

    import papermill as pm

    with caplog.at_level(logging.WARNING, logger="papermill"):
        params = pm.inspect_notebook(str(path))
    assert not [r.getMessage() for r in caplog.records], [r.getMessage() for r in caplog.records]
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    import ast

    declared = {t.id for node in ast.parse(cell.source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    assert set(params) == declared
