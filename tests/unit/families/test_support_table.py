"""The support table of geolip_lib/families/README.md and the tiny model_type params files are the registry's (scripts/support_table.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from geolip_lib import families
from geolip_lib.params import load_model_params

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("support_table", ROOT / "scripts" / "support_table.py")
support_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(support_table)


def test_readme_table_is_the_registrys():
    text = (ROOT / "geolip_lib" / "families" / "README.md").read_text(encoding="utf-8")
    assert support_table.readme_section(text) == support_table.table().strip("\n"), \
        "geolip_lib/families/README.md's support table differs from the registry: run scripts/support_table.py --write"


def test_the_table_has_a_row_per_model_type_and_40_or_more():
    types = {mt for s in families.REGISTRY.values() for mt in s.model_types}
    rows = support_table.rows()
    assert [r[0] for r in rows] == sorted(types) and len(rows) >= 40


def test_tiny_type_params_files_are_the_registrys():
    assert support_table.stale_params() == [], "run scripts/support_table.py --write"


@pytest.mark.parametrize("name", sorted(families.tiny_type_models()))
def test_tiny_type_params_validate(name):
    p = load_model_params(name)
    fam = families.spec(p.family)
    assert p.source == "tiny" and (not fam.hf or p.config["model_type"] in fam.model_types)


def test_a_missing_marker_is_one_line():
    with pytest.raises(ValueError) as e:
        support_table.readme_section("no markers here")
    assert "\n" not in str(e.value) and "support-table:start" in str(e.value)
