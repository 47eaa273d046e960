"""Round two of what a user types.

Every probe runs ``run_all.main`` in-process and fails in preflight, before any kernel:
it asserts the exact line(s), exit code 2, that the output root was not created (or not
changed), and that a sentinel directory beside the output root survives.
"""
from __future__ import annotations

import json
import shutil

import pytest

import run_all
from geolip_lib import params
from geolip_lib.runner.jobs import ROOT_PROFILE

from .conftest import write_notebook

SAFE = ("is not a safe name: use letters, digits, '.', '_' and '-' only, one path component (no '/', not '.' or '..', "
        "not starting with '.', not ending in .failed/.partial)")
RANGED = ("OUT_DIR = None\nREPORT_ROOT = None\nMODEL = None  # a model name\nN = 10  # [1 ≤ x ≤ 10**6] an int\n"
          "P = 0.5  # [0 < x < 1] a probability\nLR = 1e-3  # [x > 0] a rate\n"
          "SEEDS = [0, 1]  # [len(x) ≥ 1 and all(s ≥ 0 for s in x)] seeds\n"
          "PATCH = 16  # [x ≥ 1] patch width\nDIM = 32  # [not x % PATCH] width, a multiple of PATCH\n"
          "MAYBE = None  # [x is None or x ≥ 1] None for all\nMODE = 'a'  # [x in ('a', 'b')] a choice")


@pytest.fixture
def box(sandbox):
    """The sandbox plus a notebook ``rng`` whose parameters declare ranges, and a sentinel
    directory beside the output root that no probe may touch."""
    write_notebook(sandbox.nbdir / "rng.ipynb", params=RANGED)
    sandbox.sentinel = sandbox.tmp / "sentinel"
    sandbox.sentinel.mkdir()
    (sandbox.sentinel / "keep.txt").write_text("keep")
    yield sandbox
    assert (sandbox.sentinel / "keep.txt").read_text() == "keep"  # nothing outside the root was touched


def refused(box, capsys, *args, root_existed: bool = False) -> list[str]:
    """Exit 2 and the lines printed; the output root is not created (unless it ``root_existed``)."""
    code, lines = box.main(*args, capsys=capsys)
    assert code == 2, lines
    assert root_existed or not box.out.exists(), lines
    return lines


def rng_job(param: str) -> str:
    return f"  rng:\n    per_model: false\n    jobs:\n      - {{id: a, parameters: {{{param}}}}}\n"


# ------------------------------------------------------------------ one safe path component
@pytest.mark.parametrize("bad", ["../../../x", "/tmp/abs", ".", "..", "a/b", ".hidden", "x.failed", "x.partial"])
def test_unsafe_job_id_is_refused(box, capsys, bad):
    box.write(f"  ok:\n    per_model: false\n    jobs:\n      - {{id: '{bad}'}}\n")
    assert refused(box, capsys) == [f"error: {box.profile}: key 'notebooks.ok.jobs.0.id': {bad!r} {SAFE}"]
    assert not box.out.exists()


@pytest.mark.parametrize("bad", ["../other/nb", "/etc", ".."])
def test_unsafe_notebook_key_is_refused(box, capsys, bad):
    box.write(f"  '{bad}':\n    per_model: false\n")
    assert refused(box, capsys) == [f"error: {box.profile}: key 'notebooks': notebook key {bad!r} {SAFE}"]


def test_unsafe_model_names_are_refused_in_a_profile_and_on_the_command_line(box, capsys):
    box.write("  ok:\n    models: ['../../x']\n")
    assert refused(box, capsys) == [f"error: {box.profile}: key 'notebooks.ok.models': '../../x' {SAFE}"]
    box.write("  ok:\n    per_model: false\n")
    assert refused(box, capsys, "--models", "../x") == [f"error: --models: model '../x': '../x' {SAFE}"]
    assert refused(box, capsys, "--notebooks", "../ok") == [f"error: --notebooks '../ok': '../ok' {SAFE}"]


# ------------------------------------------------------------------ item 5: duplicates
def test_two_jobs_with_one_id_are_refused_and_plan_refuses_too(box, capsys):
    box.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a}\n      - {id: a, parameters: {N: 2}}\n")
    line = ("error: profile 'p': notebook ok: job id 'a' twice (two jobs would share ok/a/ and one would delete the "
            "other's result); give each job its own id:")
    assert refused(box, capsys) == [line]
    assert refused(box, capsys, "--plan") == [line]
    assert not box.out.exists()


def test_a_model_listed_twice_is_refused(box, capsys):
    box.write("  ok:\n    models: [tiny-bert, tiny-bert]\n")
    assert refused(box, capsys) == [
        f"error: {box.profile}: key 'notebooks.ok.models': model 'tiny-bert' listed twice: two jobs would share one "
        f"result directory; list each model once"]
    box.write("  ok:\n    models: [tiny-bert]\n    jobs:\n      - {model: tiny-bert, parameters: {N: 2}}\n")
    assert refused(box, capsys) == [
        "error: profile 'p': notebook ok: job id 'tiny-bert' twice (two jobs would share ok/tiny-bert/ and one would "
        "delete the other's result); give each job its own id:"]


# ------------------------------------------------------------------ item 6: finite, typed, in range
OUT = "(declared beside its default {d} in the notebook's parameters cell); give a value in that range"


@pytest.mark.parametrize("param,expected", [
    ("N: -5", "parameter N: -5 is outside its range [1 ≤ x ≤ 10**6] " + OUT.format(d=10)),
    ("N: 0", "parameter N: 0 is outside its range [1 ≤ x ≤ 10**6] " + OUT.format(d=10)),
    ("N: 1e12", "parameter N: 1000000000000 is outside its range [1 ≤ x ≤ 10**6] " + OUT.format(d=10)),
    ("P: 1.5", "parameter P: 1.5 is outside its range [0 < x < 1] " + OUT.format(d=0.5)),
    ("LR: .inf", "parameter LR: expected a finite float, got inf"),
    ("LR: .nan", "parameter LR: expected a finite float, got nan"),
    ("LR: -1e-3", "parameter LR: -0.001 is outside its range [x > 0] " + OUT.format(d=0.001)),
    ("SEEDS: [a, b]", "parameter SEEDS: item 0: expected int like the items of its default [0, 1], got str 'a'"),
    ("SEEDS: [1, .inf]", "parameter SEEDS: item 1: expected a finite int, got inf"),
    ("SEEDS: []", "parameter SEEDS: [] is outside its range [len(x) ≥ 1 and all(s ≥ 0 for s in x)] "
     + OUT.format(d=[0, 1])),
    ("MAYBE: 0", "parameter MAYBE: 0 is outside its range [x is None or x ≥ 1] " + OUT.format(d=None)),
    ("MODE: c", "parameter MODE: 'c' is outside its range [x in ('a', 'b')] " + OUT.format(d="'a'")),
    ("PATCH: 24", "parameter DIM: its default 32 is outside its range [not x % PATCH] with PATCH = 24 "
     + OUT.format(d=32)),
])
def test_parameter_out_of_range_or_not_finite(box, capsys, param, expected):
    box.write(rng_job(param))
    assert refused(box, capsys) == [f"error: profile 'p': notebook rng (job a): {expected}"]
    assert not box.out.exists()


def test_values_in_range_are_accepted(box):
    box.write(rng_job("N: 1e3, P: 0.25, SEEDS: [3], MAYBE: null, MODE: b, PATCH: 8, DIM: 64"))
    job = run_all.jobs_for_profile(str(box.profile))[0]
    assert {k: job.parameters[k] for k in ("N", "SEEDS", "MAYBE", "DIM")} == {"N": 1000, "SEEDS": [3], "MAYBE": None,
                                                                               "DIM": 64}


def test_every_error_is_shown_one_line_each(box, capsys):
    box.write(rng_job("N: -5, P: 2.0, SEEDS: [x]"))
    lines = refused(box, capsys)
    assert lines == [
        "error: profile 'p': notebook rng (job a): parameter SEEDS: item 0: expected int like the items of its default "
        "[0, 1], got str 'x'",
        "error: profile 'p': notebook rng (job a): parameter N: -5 is outside its range [1 ≤ x ≤ 10**6] "
        + OUT.format(d=10),
        "error: profile 'p': notebook rng (job a): parameter P: 2.0 is outside its range [0 < x < 1] "
        + OUT.format(d=0.5)]


def test_a_model_file_with_two_errors_names_both(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text("name: m\nfamily: t6\nsource: hub\nid: x\ndtype: float8\n", encoding="utf-8")
    with pytest.raises(params.ParamsError) as exc:
        params.load_model_params(p)
    lines = str(exc.value).splitlines()
    assert len(lines) == 2 and "key 'family': unknown family 't6'" in lines[0] and "key 'dtype':" in lines[1]


@pytest.mark.parametrize("where,head", [("profile", "timeout_s: {v}\n"), ("notebook", "")])
@pytest.mark.parametrize("value", [0, -5])
def test_timeout_of_zero_or_less_is_refused(box, capsys, where, head, value):
    nb = "  ok:\n    per_model: false\n" + (f"    timeout_s: {value}\n" if where == "notebook" else "")
    box.write(nb, head="name: p\n" + head.format(v=value))
    key = "timeout_s" if where == "profile" else "notebooks.ok.timeout_s"
    assert refused(box, capsys) == [
        f"error: {box.profile}: key '{key}': expected a number of seconds >= 1, got {value} (0 or less would mean no "
        f"limit at all; remove the key for the profile's default)"]


@pytest.mark.parametrize("param,expected", [
    ("N_SIMPLICES: -5", "parameter N_SIMPLICES: -5 is outside its range [2 ≤ x ≤ 10**6]"),
    ("N_COS_SAMPLE: 0", "parameter N_COS_SAMPLE: 0 is outside its range [2 ≤ x ≤ 100_000]"),
    ("N_SIMPLICES: 1e12", "parameter N_SIMPLICES: 1000000000000 is outside its range [2 ≤ x ≤ 10**6]"),
])
def test_shipped_notebook_names_its_own_parameter(tmp_path, monkeypatch, capsys, param, expected):
    monkeypatch.delenv("GEOLIP_NOTEBOOKS", raising=False)
    prof = tmp_path / "p.yaml"
    prof.write_text(f"name: p\nnotebooks:\n  01_embedding_terrain:\n    models: [tiny-bert]\n"
                    f"    parameters: {{{param}}}\n")
    assert run_all.main(["--profile", str(prof), "--out", str(tmp_path / "out"), "--no-pdf"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: profile 'p': notebook 01_embedding_terrain (job tiny-bert): {expected} (declared beside its default")
    assert not (tmp_path / "out").exists()


def test_eval_size_is_named_not_batch_size(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GEOLIP_NOTEBOOKS", raising=False)
    prof = tmp_path / "p.yaml"
    prof.write_text("name: p\nnotebooks:\n  14_triple_product_attention:\n    per_model: false\n"
                    "    parameters: {EVAL_SIZE: 0}\n")
    assert run_all.main(["--profile", str(prof), "--out", str(tmp_path / "out"), "--no-pdf"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "error: profile 'p': notebook 14_triple_product_attention (job all): parameter EVAL_SIZE: 0 is outside its "
        "range [1 ≤ x ≤ 2**16]")


def test_every_shipped_notebook_declares_a_range_its_defaults_satisfy():
    """Every numeric or list parameter of every notebook has a range (``[any]`` on purpose), and the
    defaults lie inside (ranges that read other parameters are evaluated with their defaults)."""
    from geolip_lib.paths import ROOT
    from geolip_lib.runner.parameters import EXPRESSION, declared, range_problem

    import jupytext

    for py in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        cell = next(c for c in jupytext.read(str(py)).cells if "parameters" in c.metadata.get("tags", []))
        decls = declared(cell.source)
        defaults = {k: d.default for k, d in decls.items() if d.default is not EXPRESSION}
        for d in decls.values():
            numeric = isinstance(d.default, (int, float, list)) and not isinstance(d.default, bool)
            assert d.range is not None or not numeric, f"{py.name}: {d.name} declares no range"
            assert range_problem(d, defaults) is None, f"{py.name}: {d.name}: {range_problem(d, defaults)}"


# ------------------------------------------------------------------ item 8: --report-only needs a root with results
def test_report_only_on_a_missing_root_names_it_and_creates_nothing(box, capsys):
    box.out = box.tmp / "typo"
    assert refused(box, capsys, "--report-only") == [
        f"error: output root {box.out} does not exist: nothing to report; run without --report-only first, or pass "
        f"the --out of an earlier run"]
    assert not box.out.exists()


def test_report_only_on_an_empty_root(box, capsys):
    box.out.mkdir()
    assert refused(box, capsys, "--report-only", root_existed=True) == [
        f"error: output root {box.out} holds no results (no <notebook>/<job>/ directory); run without --report-only "
        f"first, or pass the --out of an earlier run"]
    assert list(box.out.iterdir()) == []


# ------------------------------------------------------------------ item 9: the root records its profile
def test_a_second_profile_on_a_root_is_refused_naming_both(box, capsys):
    box.out.mkdir()
    run_all.claim_root(box.out, "demo")  # what a run of profile demo left (its first step under the lock)
    (box.out / "ok" / "a").mkdir(parents=True)
    (box.out / "ok" / "a" / "metrics.json").write_text("{}")
    line = (f"error: output root {box.out} holds the results of profile 'demo', not 'p'; pass --out <another "
            f"directory> for profile 'p' (or --profile demo)")
    for args in ((), ("--resume",), ("--report-only",)):
        assert refused(box, capsys, *args, root_existed=True) == [line]
    assert json.loads((box.out / ROOT_PROFILE).read_text()) == {"profile": "demo"}
    assert sorted(p.name for p in box.out.iterdir()) == [ROOT_PROFILE, "ok"]


# ------------------------------------------------------------------ item 13: kernel
def test_a_kernel_that_is_not_installed_is_refused(box, capsys):
    box.write("  ok:\n    per_model: false\n", head="name: p\nkernel: python4\n")
    (line,) = refused(box, capsys)
    assert line.startswith("error: profile 'p': key 'kernel': no Jupyter kernel 'python4' is installed (installed: ")
    assert "python3" in line and line.endswith("set kernel: python3, or install it (jupyter kernelspec list)")


# ------------------------------------------------------------------ your own model
@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    d = tmp_path / "models"
    shutil.copytree(params.MODELS_DIR, d)
    monkeypatch.setattr(params, "MODELS_DIR", d)
    return d


def _local(models_dir, tmp_path, name, family, config):
    w = tmp_path / f"{name}-weights"
    w.mkdir()
    (w / "config.json").write_text(json.dumps(config))
    (models_dir / f"{name}.yaml").write_text(f"name: {name}\nfamily: {family}\nsource: local\nlocal_dir: {w}\n")
    return w


def test_a_gpt2_declared_as_bert_is_refused(box, capsys, models_dir, tmp_path):
    w = _local(models_dir, tmp_path, "my-gpt2", "bert", {"model_type": "gpt2", "n_embd": 32})
    box.write("  ok:\n    models: [my-gpt2]\n")
    assert refused(box, capsys) == [
        f"error: params/models/my-gpt2.yaml: key 'family': 'bert' cannot describe this model: {w / 'config.json'} "
        f"says model_type 'gpt2', which family gpt2 knows; set family: gpt2"]


def test_a_model_type_no_family_knows_says_add_a_family(box, capsys, models_dir, tmp_path):
    w = _local(models_dir, tmp_path, "my-mamba", "decoder_lm", {"model_type": "mamba-xyz"})
    box.write("  ok:\n    models: [my-mamba]\n")
    assert refused(box, capsys) == [
        f"error: params/models/my-mamba.yaml: key 'family': 'decoder_lm' cannot describe this model: "
        f"{w / 'config.json'} says model_type 'mamba-xyz', which no family knows; set family: any (embeddings, "
        f"hidden states and weights; no attention analyses) or add a family "
        f"(geolip_lib/README.md#adding-a-model-family)"]


def test_a_mistyped_local_dir_names_the_path(box, capsys, models_dir, tmp_path):
    (models_dir / "my-bert.yaml").write_text(f"name: my-bert\nfamily: bert\nsource: hub\nid: x/y\n"
                                             f"local_dir: {tmp_path / 'no-such-dir'}\n")
    box.write("  ok:\n    models: [my-bert]\n")
    assert refused(box, capsys, "--plan") == [
        f"error: params/models/my-bert.yaml: key 'local_dir': directory {tmp_path / 'no-such-dir'} does not exist; "
        f"fix the path"]


def test_a_model_no_profile_lists_runs_through_the_notebooks_that_take_a_model(box, capsys):
    write_notebook(box.nbdir / "takes.ipynb",
                   params="OUT_DIR = None\nMODEL = 'tiny-bert'  # a model\nN = 1  # [x ≥ 1] n")
    box.write("  takes:\n    models: [tiny-t5]\n    parameters: {N: 3}\n  ok:\n    per_model: false\n")
    jobs = run_all.jobs_for_profile(str(box.profile), models=["tiny-bert"])
    assert [(j.notebook, j.job_id, j.model, j.parameters) for j in jobs] == [("takes", "tiny-bert", "tiny-bert",
                                                                             {"N": 3})]
    box.write("  ok:\n    per_model: false\n")
    (line,) = refused(box, capsys, "--models", "tiny-bert")
    assert line == ("error: --models: model 'tiny-bert' is in no notebook of profile 'p', and no notebook of it takes "
                    "a model (MODEL, per_model); its models: none")


# ------------------------------------------------------------------ item 6, runtime: a non-finite loss or headline
def test_a_non_finite_training_loss_names_the_step_and_value():
    import torch

    from geolip_lib.attention.training import train_classifier, train_copy
    from geolip_lib.validation import NonFiniteError

    x, y = torch.randn(8, 4), torch.zeros(8, dtype=torch.long)
    x[0, 0] = float("nan")
    with pytest.raises(NonFiniteError) as exc:
        train_classifier(torch.nn.Linear(4, 3), x, y, epochs=3)
    assert str(exc.value) == ("training loss: became nan at step 1; the job stops and publishes nothing (lower LR, or "
                              "check the inputs for NaN / Inf)")
    with pytest.raises(NonFiniteError, match=r"^training loss \(standard, seed 0\): became nan at step 1; "):
        train_copy("standard", vocab=6, seq_len=4, d_model=8, n_head=2, steps=5, lr=float("inf"), batch_size=4,
                   seed=0, eval_size=4, time_steps=False)


def test_a_non_finite_headline_is_refused():
    from geolip_lib import results

    with pytest.raises(ValueError) as exc:
        results.headline(float("inf"), interval="exact", label="accuracy")
    assert str(exc.value) == ("headline accuracy: is inf; the job stops and publishes nothing (a measurement that "
                              "does not apply is value=None, with its reason in note=)")
    assert results.headline(None, label="accuracy")["value"] is None


NAN_NB = '''
import torch
from geolip_lib import results
from geolip_lib.attention.training import train_classifier
x, y = torch.randn(8, 4), torch.zeros(8, dtype=torch.long)
x[0, 0] = float("nan")
out = results.job_dir(OUT_DIR, "nan", None)
r = train_classifier(torch.nn.Linear(4, 3), x, y, epochs=3)
results.record(out, {"acc": r["acc"]}, notebook="nan", model=None,
               headline={"acc": results.headline(r["acc"], interval="exact", label="accuracy")})
'''


def test_a_job_whose_loss_becomes_nan_fails_and_publishes_nothing(box, capsys):
    """One kernel (about 10 s here): the job's one line names the step and the value; no result directory."""
    write_notebook(box.nbdir / "nan.ipynb", body=NAN_NB, params="OUT_DIR = None\nREPORT_ROOT = None")
    box.write("  nan:\n    per_model: false\n")
    code, lines = box.main("--cold", "--jobs", "1", capsys=capsys)
    assert code == 1, lines
    fail = [ln for ln in lines if "FAIL" in ln]
    assert len(fail) == 1 and "NonFiniteError: training loss: became nan at step 1; the job stops and publishes " \
                               "nothing" in fail[0], lines
    assert not (box.out / "nan" / "all").exists() and (box.out / "nan" / "all.failed" / "error.txt").exists()


def test_a_params_file_given_by_path_runs_by_its_name(box, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(params.MODEL_FILES_ENV, "")  # restored after the probe (the run sets it for its kernels)
    write_notebook(box.nbdir / "takes.ipynb",
                   params="OUT_DIR = None\nMODEL = 'tiny-bert'  # a model\nN = 1  # [x ≥ 1] n")
    box.write("  takes:\n    models: [tiny-t5]\n")
    mine = tmp_path / "elsewhere" / "my-bert.yaml"
    mine.parent.mkdir()
    mine.write_text((params.MODELS_DIR / "tiny-bert.yaml").read_text().replace("name: tiny-bert", "name: my-bert"))
    jobs = run_all.jobs_for_profile(str(box.profile), models=[str(mine)])
    assert [(j.job_id, j.model) for j in jobs] == [("my-bert", "my-bert")]
    assert params.load_model_params("my-bert").name == "my-bert" and params.model_file("my-bert") == mine
    assert refused(box, capsys, "--models", str(tmp_path / "typo.yaml")) == [
        f"error: --models: {tmp_path / 'typo.yaml'}: no such params file (give a params/models name or the path of "
        f"a model's .yaml)"]


def test_problems_of_several_kinds_are_all_shown(box, capsys):
    box.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a}\n      - {id: a}\n"
              "  rng:\n    per_model: false\n    parameters: {N: 0}\n", head="name: p\nkernel: python4\n")
    lines = refused(box, capsys)
    assert len(lines) == 3 and "job id 'a' twice" in lines[0] and "no Jupyter kernel 'python4'" in lines[1]
    assert lines[2].startswith("error: profile 'p': notebook rng (job all): parameter N: 0 is outside its range")


# ------------------------------------------------------------------ a directory where a file belongs
def test_a_directory_where_a_file_belongs_is_one_line(box, capsys):
    """A profile path, a profile .yaml or a --models params file that is a directory: one line naming
    it as a directory (not 'file not found', not 'not a safe name'), exit 2, nothing created."""
    (box.tmp / "prof.yaml").mkdir()
    (box.tmp / "model.yaml").mkdir()
    box.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a}\n")
    code = run_all.main(["--profile", str(box.tmp), "--out", str(box.out), "--no-pdf"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and err == [f"error: profile '{box.tmp}': is a directory; give a profile name "
                                 f"({', '.join(params.profile_names())}) or the path of a profile .yaml file"]
    code = run_all.main(["--profile", str(box.tmp / "prof.yaml"), "--out", str(box.out), "--no-pdf"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and err == [f"error: {box.tmp / 'prof.yaml'}: is a directory, not a YAML file; give the path "
                                 "of the .yaml file"]
    assert refused(box, capsys, "--models", str(box.tmp / "model.yaml")) == [
        f"error: --models: {box.tmp / 'model.yaml'}: is a directory, not a params file (give a params/models name "
        "or the path of a model's .yaml)"]
    assert not box.out.exists()
