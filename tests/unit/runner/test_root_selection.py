"""The report's header describes the output root as a whole, not its last run. A
``--models my-phi3`` run, then ``--notebooks 15_seed_claims`` (what the report used to tell the user
to run) headed the report "narrowed by --notebooks 15_seed_claims"; a whole-profile run followed by a
rerun of 15 said the root was narrowed though it holds every job. The root's ``.profile.json`` keeps
the selection of all its runs: models and notebooks each the union of the runs' (a run of the whole
profile, or of every model, absorbs the others); a run of notebooks that only read the other jobs'
results (15's claims) adds its notebooks, never models."""
from __future__ import annotations

import pytest

from geolip_lib.report import pages
from geolip_lib.report.builder import recorded_selection
from geolip_lib.runner.jobs import claim_root
from geolip_lib.runner.notebooks import adds_no_models
from geolip_lib.runner.root_record import merged_selection

pytestmark = pytest.mark.unit

ALL = {"models": None, "notebooks": None}


def _runs(root, *selections):
    for sel in selections:
        claim_root(root, "demo", sel)
    return recorded_selection(root)


def test_the_claims_notebook_adds_no_models_and_a_model_notebook_does():
    assert adds_no_models("15_seed_claims")
    assert not adds_no_models("03_cross_model")  # it computes its own MODELS
    assert not adds_no_models("01_embedding_terrain")


def test_a_claims_run_after_a_models_run_leaves_the_root_narrowed_by_its_models(tmp_path):
    sel = _runs(tmp_path, {"models": ["my-phi3"], "notebooks": None}, {"models": None, "notebooks": ["15_seed_claims"]})
    assert sel == {"models": ["my-phi3"], "notebooks": None}


def test_a_rerun_of_the_claims_after_the_whole_profile_is_the_whole_profile(tmp_path):
    assert _runs(tmp_path, ALL, {"models": None, "notebooks": ["15_seed_claims"]}) == ALL


def test_runs_of_other_models_and_notebooks_add_up(tmp_path):
    sel = _runs(tmp_path, {"models": ["a"], "notebooks": ["01_embedding_terrain"]},
                {"models": ["b"], "notebooks": ["02_weight_topology"]})
    assert sel == {"models": ["a", "b"], "notebooks": ["01_embedding_terrain", "02_weight_topology"]}
    assert _runs(tmp_path, ALL) == ALL  # a run of the whole profile: the root is the whole profile


def test_the_first_run_and_an_older_root_record_the_run_itself(tmp_path):
    assert merged_selection(None, {"models": None, "notebooks": ["15_seed_claims"]}) == \
        {"models": None, "notebooks": ["15_seed_claims"]}
    (tmp_path / ".profile.json").write_text('{"profile": "demo"}\n')  # a root from before selections were kept
    assert _runs(tmp_path, {"models": ["x"], "notebooks": None}) == {"models": ["x"], "notebooks": None}


def test_the_header_after_a_models_run_and_a_claims_run_names_the_models_not_the_claims(tmp_path):
    sel = _runs(tmp_path, {"models": ["my-phi3"], "notebooks": None}, {"models": None, "notebooks": ["15_seed_claims"]})
    head = pages.run_description("demo", {}, {"description": "the demo", "selection": sel,
                                              "profile models": ["all-minilm-l6-v2"]})
    assert "--models my-phi3" in head and "15_seed_claims" not in head and "last run" not in head


# ---------------------------------------------------------------- --notebooks that feed the claims
def test_notebooks_that_feed_the_claims_name_the_claims_they_left_out():
    from geolip_lib.runner.jobs import claims_left_out

    assert claims_left_out("demo", ["02_weight_topology"]) == ["15_seed_claims"]
    assert claims_left_out("demo", ["02_weight_topology", "15_seed_claims"]) == []
    assert claims_left_out("demo", None) == []  # the whole profile: 15 runs
    assert claims_left_out("demo", ["15_seed_claims"]) == []


def test_a_run_of_notebooks_that_feed_the_claims_says_the_claims_did_not_run(tmp_path, monkeypatch, capsys):
    """A profile of notebook 'ok' then 'agg' (it reads the other jobs' results, loads no model): a run of
    --notebooks ok says in one line that agg did not run and what runs it; a run of both says nothing."""
    import run_all
    from tests.reliability.conftest import OK_NB, write_notebook

    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    write_notebook(nbdir / "ok.ipynb")
    write_notebook(nbdir / "agg.ipynb", OK_NB.replace('"ok"', '"agg"') + "\nprint(REPORT_ROOT)\n")
    monkeypatch.setattr(run_all, "NOTEBOOKS", nbdir)
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(nbdir))
    prof = tmp_path / "p.yaml"
    prof.write_text("name: p\ndescription: probe\nnotebooks:\n  ok:\n    per_model: false\n"
                    "  agg:\n    per_model: false\n", encoding="utf-8")
    argv = ["--profile", str(prof), "--out", str(tmp_path / "out"), "--no-pdf", "--jobs", "1"]
    assert run_all.main([*argv, "--notebooks", "ok"]) == 0
    err = capsys.readouterr().err.splitlines()
    said = [ln for ln in err if "agg" in ln and "did not run" in ln]
    assert len(said) == 1 and "--notebooks agg" in said[0] and "--resume" in said[0], err
    assert run_all.main([*argv, "--notebooks", "ok", "agg"]) == 0
    assert not [ln for ln in capsys.readouterr().err.splitlines() if "did not run" in ln]


# ---------------------------------------------------------------- a refusal after a notebook is saved
def test_the_claims_check_is_remembered_across_a_notebook_saved_with_outputs(tmp_path):
    """The claims check (torch, 4.3 CPU s) is remembered by what it reads of notebooks/: the
    entries' names and the .py files, not the .ipynb bytes JupyterLab rewrites on each save."""
    from geolip_lib.runner.jobs import notebooks_code_digest

    (tmp_path / "01_x.ipynb").write_text('{"cells": []}')
    (tmp_path / "01_x.py").write_text("record = 1\n")
    before = notebooks_code_digest(tmp_path)
    (tmp_path / "01_x.ipynb").write_text('{"cells": [], "outputs": ["saved in the lab"]}')
    assert notebooks_code_digest(tmp_path) == before
    (tmp_path / "01_x.py").write_text("record = 2\n")
    assert notebooks_code_digest(tmp_path) != before
    after_py = notebooks_code_digest(tmp_path)
    (tmp_path / "02_y.ipynb").write_text("{}")  # a new notebook name: the claims may name it
    assert notebooks_code_digest(tmp_path) != after_py
