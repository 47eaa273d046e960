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


@pytest.mark.parametrize("profile", profile_names())
def test_profiles_validate_and_cover_every_notebook(profile):
    prof = load_profile(profile)
    missing = [p.stem for p in NOTEBOOKS if p.stem not in prof.notebooks]
    assert not missing, f"profile {profile} lacks {missing}"
