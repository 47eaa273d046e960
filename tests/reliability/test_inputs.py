"""Probes of what a user types: profiles, parameters, model files, command-line names.
Each fails in preflight (no kernel starts) with exactly one line and exit code 2."""
from __future__ import annotations

import pytest

from geolip_lib.params import ParamsError, load_model_params

JOB = "  ok:\n    per_model: false\n    jobs:\n      - {{id: a, parameters: {{{p}}}}}\n"


def one_line(sandbox, capsys, *args):
    code, lines = sandbox.main(*args, capsys=capsys)
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert not (sandbox.out / "ok").exists()  # nothing ran
    return lines[0]


@pytest.mark.parametrize("param,expected", [
    ("N: fifty", "parameter N: expected int like its default 10, got str 'fifty'"),
    ("FLAG: 'false'", "parameter FLAG: expected bool like its default True, got str 'false'"),
    ("FLAG: 1", "parameter FLAG: expected bool like its default True, got int 1"),
    ("N: 1.5", "parameter N: expected int like its default 10, got float 1.5"),
    ("VALUE: [1]", "parameter VALUE: expected float like its default 1.0, got list [1]"),
    ("ITEMS: 3", "parameter ITEMS: expected list like its default [1, 2], got int 3"),
    ("NAME: 3", "parameter NAME: expected str like its default 'x', got int 3"),
    ("FLAG: null", "parameter FLAG: expected bool like its default True, got NoneType None"),
])
def test_parameter_of_the_wrong_type(sandbox, capsys, param, expected):
    sandbox.write(JOB.format(p=param))
    line = one_line(sandbox, capsys)
    assert line == f"error: profile 'p': notebook ok (job a): {expected}"


@pytest.mark.parametrize("param,value", [("N: 1e3", 1000), ("VALUE: 1e3", 1000.0), ("VALUE: 2", 2.0),
                                         ("N: 4.0", 4), ("N: null", None), ("MAYBE: [a, 1]", ["a", 1]),
                                         ("ITEMS: []", [])])
def test_parameter_values_yaml_spells_differently_are_accepted(sandbox, param, value):
    import run_all

    sandbox.write(JOB.format(p=param))
    job = run_all.jobs_for_profile(str(sandbox.profile))[0]
    key = param.split(":")[0]
    assert job.parameters[key] == value and type(job.parameters[key]) is type(value)


def test_undeclared_parameter_is_a_typo(sandbox, capsys):
    sandbox.write(JOB.format(p="VALEU: 2.0"))
    assert "has no parameter VALEU (declared:" in one_line(sandbox, capsys)


def test_invalid_yaml_names_line_and_column(sandbox, capsys):
    sandbox.profile.write_text("name: p\nnotebooks:\n  ok: {per_model: false\n  x: 1\n", encoding="utf-8")
    line = one_line(sandbox, capsys)
    assert "not valid YAML (line 4, column" in line and "p.yaml" in line


def test_unknown_profile_key(sandbox, capsys):
    sandbox.profile.write_text("name: p\nnotebok: {}\n", encoding="utf-8")
    line = one_line(sandbox, capsys)
    assert "key 'notebok': unknown key (allowed:" in line


def test_profile_names_a_missing_notebook(sandbox, capsys):
    sandbox.write("  nope:\n    per_model: false\n")
    assert "key 'notebooks.nope': no" in one_line(sandbox, capsys)


def test_profile_names_an_unknown_model(sandbox, capsys):
    sandbox.write("  ok:\n    models: [no-such-model]\n")
    assert "key 'notebooks.ok.models': unknown model 'no-such-model'" in one_line(sandbox, capsys)


def test_unknown_profile_name(capsys):
    import run_all

    assert run_all.main(["--profile", "no-such-profile"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown profile 'no-such-profile'" in lines[0]


def test_models_flag_with_an_unknown_model(sandbox, capsys):
    assert "--models: unknown model 'tiny-bret'" in one_line(sandbox, capsys, "--models", "tiny-bret")


def test_models_flag_with_a_model_outside_the_profile(sandbox, capsys):
    line = one_line(sandbox, capsys, "--models", "tiny-bert")
    assert "--models: model 'tiny-bert' is in no notebook of profile 'p'" in line


def test_models_flag_selects_model_jobs_only(sandbox):
    import run_all

    sandbox.write("  ok:\n    per_model: true\n    models: [tiny-t5, tiny-bert]\n"
                  "    jobs:\n      - {id: agg, parameters: {VALUE: 2.0}}\n")
    jobs = run_all.jobs_for_profile(str(sandbox.profile), models=["tiny-t5"])
    assert [(j.job_id, j.model) for j in jobs] == [("tiny-t5", "tiny-t5")]


def test_notebooks_flag_with_an_unknown_notebook(sandbox, capsys):
    assert "--notebooks: profile 'p' has no notebook 'o1'" in one_line(sandbox, capsys, "--notebooks", "o1")


def _model_file(tmp_path, text):
    p = tmp_path / "m.yaml"
    p.write_text("name: m\n" + text, encoding="utf-8")
    return p


@pytest.mark.parametrize("text,message", [
    ("family: t5\nsource: hub\n", "key 'id': required when source is 'hub' (e.g. id: google-t5/t5-small)"),
    ("family: t5\nsource: local\n", "key 'id': required when source is 'local'"),
    ("family: t6\nsource: hub\nid: x\n", "key 'family': unknown family 't6' (known: t5, t5_v1_1, bert"),
    ("family: t5\nsource: hub\nid: x\ndtyp: float16\n", "key 'dtyp': unknown key"),
    ("family: t5\nsource: hub\nid: x\ndtype: float8\n", "key 'dtype': Input should be"),
    ("family: t5\nsource: hub\nid: x\nseed: many\n", "key 'seed':"),
])
def test_model_file_errors_name_file_and_key(tmp_path, text, message):
    with pytest.raises(ParamsError) as exc:
        load_model_params(_model_file(tmp_path, text))
    assert message in str(exc.value) and "m.yaml" in str(exc.value) and "\n" not in str(exc.value)


def test_model_file_whose_name_differs_from_the_file(tmp_path):
    p = tmp_path / "other.yaml"
    p.write_text("name: m\nfamily: t5\nsource: hub\nid: x\n", encoding="utf-8")
    with pytest.raises(ParamsError, match="key 'name': 'm' must equal the file name 'other'"):
        load_model_params(p)
