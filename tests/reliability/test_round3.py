"""Round three: output-root reading, the report's reading of ``metrics.json``,
checkpoints held to the ``local_dir`` rules, bounded work for every input, notebooks in git.

Every probe that the runner can refuse before a kernel runs ``run_all.main`` in-process and
asserts the exact line, exit code 2, that the output root was not created and that a sentinel
beside it survives (the ``box`` fixture of round two). Probes of the readers call the reader.
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import nbformat
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

from geolip_lib import params, report, roots
from geolip_lib.claims import evaluation
from geolip_lib.report.records import read_record
from geolip_lib.runner import ray_worker
from geolip_lib.runner.jobs import Job, model_problems, stale_reasons

from .conftest import ROOT
from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two

PER_MODEL = "  rng:\n    per_model: true\n    models: [{m}]\n"


def _gpt2(d: Path, n_embd: int = 16, n_layer: int = 2) -> Path:
    torch.manual_seed(0)
    cfg = GPT2Config(n_embd=n_embd, n_layer=n_layer, n_head=2, vocab_size=64, n_positions=32)
    GPT2LMHeadModel(cfg).save_pretrained(d)
    return d


def _params_file(tmp: Path, name: str, local: Path, family: str = "gpt2", checkpoints=()) -> Path:
    y = tmp / f"{name}.yaml"
    text = f"name: {name}\nfamily: {family}\nsource: local\nlocal_dir: {local}\n"
    if checkpoints:
        text += "checkpoints:\n" + "".join(f"  - {c}\n" for c in checkpoints)
    y.write_text(text)
    return y


def _run_model(box, capsys, y: Path) -> list[str]:
    """run_all with ``--models y`` on the per-model notebook ``rng``: exit 2, the root not created."""
    box.write(f"  rng:\n    per_model: true\n    models: []\n")
    return refused(box, capsys, "--models", str(y))


# ------------------------------------------------------------------ one reader of an output root
def _result(job: Path, value: float = 1.0, model: str | None = None) -> Path:
    job.mkdir(parents=True)
    (job / "metrics.json").write_text(json.dumps({
        "model": model, "metrics": {"v": value},
        "headline": {"v": {"value": value, "interval": {"lo": value - 1, "hi": value + 1}, "fmt": ".3f"}}}))
    (job / "executed.ipynb").write_text("{}")
    (job / "fingerprint.json").write_text("{}")
    return job


@pytest.fixture
def linked_root(tmp_path):
    """``<root>/01_embedding_terrain/t5-small`` a link to a finished-looking job outside the root."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    _result(outside / "t5-small", 42.0, model="t5-small")
    _result(root / "01_embedding_terrain" / "mine", 1.0, model="mine")
    (root / "01_embedding_terrain" / "t5-small").symlink_to(outside / "t5-small")
    (root / "02_linked").symlink_to(outside)
    return root, outside


def test_a_linked_job_folder_is_read_by_no_reader(linked_root):
    root, outside = linked_root
    assert [p.name for p in roots.job_dirs(root)] == ["mine"]
    assert [p.name for p in roots.notebook_dirs(root)] == ["01_embedding_terrain"]
    # the report
    assert {nb: [r.job_id for r in recs] for nb, recs in report.collect(root).items()} == \
        {"01_embedding_terrain": ["mine"]}
    # the claims lead
    assert list(evaluation._read_jobs(root, "01_embedding_terrain")) == ["mine"]
    assert evaluation._read_jobs(root, "02_linked") == {}
    # resume: a result reached through a link is not this root's
    job = Job(profile="p", notebook="01_embedding_terrain", job_id="t5-small", model=None)
    (why,) = stale_reasons(job, root)
    assert why == (f"{root / '01_embedding_terrain' / 't5-small'} is a symbolic link (to {outside / 't5-small'}); "
                   f"results are never read through links: remove it from the output root {root}")
    # the Ray worker's copy of finished results (what 03 and 15 read on a node)
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(ray_worker._finished_metrics(root))) as tar:
        assert tar.getnames() == ["01_embedding_terrain/mine/metrics.json"]
    assert json.loads((outside / "t5-small" / "metrics.json").read_text())["metrics"]["v"] == 42.0


def test_read_json_refuses_a_linked_file_a_large_file_and_a_deep_one(tmp_path):
    root = tmp_path / "root"
    (root / "nb" / "a").mkdir(parents=True)
    (tmp_path / "secret.json").write_text('{"s": 1}')
    (root / "nb" / "a" / "metrics.json").symlink_to(tmp_path / "secret.json")
    with pytest.raises(roots.RootReadError) as exc:
        roots.read_json(root, root / "nb" / "a" / "metrics.json")
    assert str(exc.value).startswith(f"{root / 'nb' / 'a' / 'metrics.json'} is a symbolic link")
    big = root / "nb" / "a" / "big.json"
    big.write_text(json.dumps({"x": "y" * 200}))
    with pytest.raises(roots.RootReadError) as exc:
        roots.read_json(root, big, max_bytes=100)
    assert str(exc.value) == (f"{big}: {big.stat().st_size} bytes, over the limit of 100 for a job's JSON file; not "
                              "read (rerun the job to rewrite it)")
    for depth in (100, 100_000):  # below and past the json module's own recursion limit
        deep = root / "nb" / "a" / f"deep{depth}.json"
        deep.write_text("[" * depth + "]" * depth)
        with pytest.raises(roots.RootReadError) as exc:
            roots.read_json(root, deep)
        assert str(exc.value) == f"{deep}: nested deeper than 64 levels; not read (rerun the job to rewrite it)"
    with pytest.raises(roots.RootReadError):
        roots.read_json(root, tmp_path / "secret.json")  # outside the root


# ------------------------------------------------------------------ the report's reading of metrics.json
def _metrics(job: Path, headline: dict) -> Path:
    job.mkdir(parents=True, exist_ok=True)
    (job / "metrics.json").write_text(json.dumps({"headline": headline}))
    return job / "metrics.json"


def test_a_headline_fmt_with_a_width_is_refused_and_the_rest_kept(tmp_path):
    where = _metrics(tmp_path / "r" / "nb" / "a", {
        "huge": {"value": 1.0, "fmt": ">300000000"}, "fine": {"value": 2.0, "fmt": "+.3f"}})
    rec = read_record("nb", where.parent)
    assert rec.problems == [f"{where}: field 'headline.huge.fmt': '>300000000' is not a number format the report "
                            "accepts (a sign, ',', '.N' with N ≤ 12 and one of d e f g o s %; no width); left out of "
                            "the report (rerun the job to rewrite its metrics.json)"]
    assert list(rec.headline) == ["fine"]


def test_a_value_outside_its_interval_is_an_error_not_a_dagger(tmp_path):
    where = _metrics(tmp_path / "r" / "nb" / "a", {
        "edited": {"value": 9.0, "interval": {"lo": 0.0, "hi": 1.0}},
        "null_edited": {"value": 0.5, "interval": {"lo": 0.0, "hi": 1.0},
                        "nulls": {"gaussian": {"value": 7.0, "interval": {"lo": 2.0, "hi": 3.0}}}},
        "fine": {"value": 0.5, "interval": {"lo": 0.0, "hi": 1.0}}})
    rec = read_record("nb", where.parent)
    assert rec.problems == [
        f"{where}: field 'headline.edited.value': 9.0 lies outside its own interval [0.0, 1.0]; left out of the report "
        "(metrics.json was edited or damaged: rerun the job)",
        f"{where}: field 'headline.null_edited.nulls.gaussian.value': 7.0 lies outside its own interval [2.0, 3.0]; "
        "left out of the report (metrics.json was edited or damaged: rerun the job)"]
    assert list(rec.headline) == ["fine"]


def test_a_deeply_nested_metrics_json_is_one_failed_record_and_the_rest_built(tmp_path):
    root = tmp_path / "r"
    _result(root / "nb" / "good")
    deep = root / "nb" / "deep"
    deep.mkdir(parents=True)
    (deep / "metrics.json").write_text('{"headline": {}, "x": ' + "[" * 50_000 + "]" * 50_000 + "}")
    recs = {r.job_id: r for r in report.collect(root)["nb"]}
    assert recs["good"].ok and not recs["good"].problems
    assert recs["deep"].error == (f"{deep / 'metrics.json'}: nested deeper than 64 levels; not read (rerun the job to "
                                  "rewrite it); rerun with --resume")


# ------------------------------------------------------------------ bounded work for every input
BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


def test_a_yaml_alias_bomb_in_a_profile_is_one_line(box, capsys):
    box.profile.write_text("name: p\ndescription: x\nnotebooks: {}\n" + BOMB)
    (line,) = refused(box, capsys)
    assert line == (f"error: {params._rel(box.profile)}: its YAML aliases expand to more than 100000 nodes (the limit "
                    "for a params, profile or claims file; 597871 counted so far); write the values out instead of "
                    "nesting aliases")


def test_a_yaml_alias_bomb_in_a_claims_file_and_an_oversized_file_are_one_line(tmp_path):
    from geolip_lib.claims import registry

    f = tmp_path / "bomb.yaml"
    f.write_text("name: bomb\n" + BOMB)
    with pytest.raises(params.ParamsError) as exc:
        registry.load(f)
    assert str(exc.value).startswith(f"{params._rel(f)}: its YAML aliases expand to more than 100000 nodes")
    f.write_text("name: big\n# " + "x" * params.YAML_MAX_BYTES + "\n")
    with pytest.raises(params.ParamsError) as exc:
        registry.load(f)
    assert str(exc.value) == (f"{params._rel(f)}: larger than 1048576 bytes, the limit for a params, profile or claims "
                              "file; split it or remove what is not parameters")


def test_a_job_id_of_300_characters_is_refused_before_a_kernel(box, capsys):
    long_id = "j" * 300
    box.write(f"  ok:\n    per_model: false\n    jobs:\n      - {{id: {long_id}}}\n")
    (line,) = refused(box, capsys)
    assert line == (f"error: profile 'p': notebook ok: job id '{'j' * 40}...' is 300 characters; a job id (a folder "
                    "name, also as .<id>.partial) may have at most 100: give it a shorter id:")


def test_a_config_with_a_million_layers_is_one_line(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "deep")
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "n_layer": 1_000_000}))
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "deep", d))
    assert line == (f"error: {params._rel(tmp_path / 'deep.yaml')}: {d / 'config.json'}: n_layer is 1000000; a model "
                    "may have 0 to 1024 layers (the limit on what a config may ask); fix the config")


def test_a_model_type_transformers_does_not_know_under_family_any_is_one_line(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "odd")
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "model_type": "zorblax"}))
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "odd", d, family="any"))
    assert line == (f"error: {params._rel(tmp_path / 'odd.yaml')}: {d / 'config.json'}: model_type 'zorblax' is not "
                    "one this transformers knows; use a model whose model_type transformers lists (or upgrade "
                    "transformers)")


def _lying(tmp_path: Path, name: str, change) -> tuple[Path, Path]:
    good = _gpt2(tmp_path / "good")
    raw = (good / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    head, body = json.loads(raw[8:8 + n]), raw[8 + n:]
    n_out = change(head)
    hb = json.dumps(head).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text((good / "config.json").read_text())
    (d / "model.safetensors").write_bytes(struct.pack("<Q", n_out or len(hb)) + hb + body)
    return d, _params_file(tmp_path, name, d)


def _overlap(h):
    a, b = [k for k in h if k != "__metadata__"][:2]
    h[b]["data_offsets"] = h[a]["data_offsets"]


def _dtype(h):
    h[next(k for k in h if k != "__metadata__")]["dtype"] = "F16"


@pytest.mark.parametrize("name,change,why", [
    ("length", lambda h: 10 ** 15, "Error while deserializing header: header too large"),
    ("overlap", _overlap, "Error while deserializing header: invalid "),  # offset, or shape/dtype/offset: by order
    ("dtype", _dtype, "Error while deserializing header: invalid shape, data type, or offset for tensor"),
])
def test_a_safetensors_header_that_lies_is_one_line(box, capsys, tmp_path, name, change, why):
    d, y = _lying(tmp_path, name, change)
    (line,) = _run_model(box, capsys, y)
    head = f"error: {params._rel(y)}: model '{name}': corrupt weight file {d / 'model.safetensors'}: {why}"
    assert line.startswith(head) and line.endswith("; replace it (re-save the model with save_pretrained)"), line


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/geolip-round3-pwned",))


def test_a_bin_pickle_weights_only_refuses_is_found_in_preflight(box, capsys, tmp_path):
    d = tmp_path / "pk"
    d.mkdir()
    (d / "config.json").write_text((_gpt2(tmp_path / "good") / "config.json").read_text())
    torch.save({"w": torch.zeros(2), "x": _Evil()}, d / "pytorch_model.bin")
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "pk", d))
    assert line.startswith(f"error: {params._rel(tmp_path / 'pk.yaml')}: model 'pk': {d / 'pytorch_model.bin'} is not "
                           "a plain tensor file (UnpicklingError: it needs ")
    assert line.endswith("which weights_only refuses): a pickle that runs code is never loaded; convert it to "
                         "safetensors from a trusted copy")
    assert not Path("/tmp/geolip-round3-pwned").exists()


# ------------------------------------------------------------------ checkpoints held to the local_dir rules
@pytest.fixture
def steps(tmp_path):
    for s in ("step-0000", "step-0010"):
        _gpt2(tmp_path / s)
    return tmp_path


def _ck(tmp: Path, name: str, cks, local=None) -> str:
    return str(_params_file(tmp, name, local or tmp / "step-0000", checkpoints=cks))


def test_one_checkpoint_folder_spelled_three_ways_is_refused(steps):
    d = steps / "step-0010"
    lines = model_problems(_ck(steps, "dup", ["step-0010", "step-0010/", "./step-0010"]))
    assert lines == [f"params/models/dup.yaml: key 'checkpoints[{i}]': {d} is the folder of checkpoints[0] ({d}) "
                     "again; list each checkpoint once" for i in (1, 2)]


def test_checkpoints_of_two_widths_are_not_one_trajectory(steps):
    _gpt2(steps / "wide", n_embd=32)
    assert model_problems(_ck(steps, "two", ["step-0000", "wide"])) == [
        f"params/models/two.yaml: key 'checkpoints[1]': {steps / 'wide'} is gpt2 of width 32, 2 layers, 2 heads, "
        f"vocabulary 64, but checkpoints[0] ({steps / 'step-0000'}) is gpt2 of width 16, 2 layers, 2 heads, "
        "vocabulary 64: one trajectory is one architecture; give the checkpoints of one model"]
    _gpt2(steps / "deeper", n_layer=3)
    (line,) = model_problems(_ck(steps, "two", ["step-0000", "deeper"]))
    assert "is gpt2 of width 16, 3 layers" in line and "is gpt2 of width 16, 2 layers" in line


def test_an_int8_checkpoint_is_refused_like_an_int8_local_dir(steps):
    q = _gpt2(steps / "q")
    sd = load_file(q / "model.safetensors")
    save_file({k: (v * 10).to(torch.int8) if v.dim() == 2 else v for k, v in sd.items()}, str(q / "model.safetensors"),
              metadata={"format": "pt"})
    (line,) = model_problems(_ck(steps, "int8", ["step-0000", "q"]))
    assert line == (f"params/models/int8.yaml: key 'checkpoints[1]': model 'int8': tensor "
                    f"transformer.h.0.attn.c_attn.weight in {q / 'model.safetensors'} is stored as int8 where the "
                    "model has float32 weights (and 9 more tensor(s) like it): integer and quantised checkpoints are "
                    "refused (they would be cast to float and measured as the model); re-save it in float16 or "
                    "float32 (model.float().save_pretrained(...))")


def test_a_checkpoint_that_is_a_file_says_so(steps):
    (steps / "afile").write_text("x")
    assert model_problems(_ck(steps, "file", ["step-0000", "afile"])) == [
        f"params/models/file.yaml: key 'checkpoints[1]': folder {steps / 'afile'} is a file, not a folder (a relative "
        "path is read from the params file's folder)"]


def test_a_local_dir_that_is_a_file_says_so(box, capsys, tmp_path):
    (tmp_path / "w").write_text("x")
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "wf", tmp_path / "w"))
    assert line == (f"error: {params._rel(tmp_path / 'wf.yaml')}: key 'local_dir': directory {tmp_path / 'w'} is a "
                    "file, not a folder; fix the path")


# ------------------------------------------------------------------ notebooks in git
def _tracked(pattern: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.split()]


def test_committed_notebooks_carry_no_outputs_and_no_papermill_metadata():
    """A clone where set-up has not run has no nbstripout filter: this is the check that
    outputs, execution counts, papermill metadata and an injected-parameters cell never
    reach the repository (the staged copy is what git holds)."""
    bad = []
    for path in _tracked("notebooks/*.ipynb"):
        staged = subprocess.run(["git", "show", f":{path.relative_to(ROOT)}"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout
        nb = nbformat.reads(staged, as_version=4)
        if "papermill" in nb.metadata:
            bad.append(f"{path.name}: metadata.papermill")
        for i, c in enumerate(nb.cells):
            if c.cell_type == "code" and (c.outputs or c.execution_count is not None):
                bad.append(f"{path.name}: cell {i} has outputs")
            if "injected-parameters" in c.metadata.get("tags", []) or "papermill" in c.metadata:
                bad.append(f"{path.name}: cell {i} is papermill's")
    assert bad == []


def test_gitignore_matches_a_venv_and_a_cache_that_are_links(tmp_path):
    """``.venv/`` matches only a directory: a ``.venv`` that is a link would be committed by
    ``git add -A``. The checkout's ``.gitignore`` in a fresh repository with links in their place."""
    repo = tmp_path / "clone"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".gitignore").write_text((ROOT / ".gitignore").read_text())
    (tmp_path / "elsewhere").mkdir()
    for name in (".venv", ".cache"):
        (repo / name).symlink_to(tmp_path / "elsewhere")
    (repo / "reports").mkdir()
    (repo / "reports" / "demo").symlink_to(tmp_path / "elsewhere")
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["??", ".gitignore"]


# ------------------------------------------------------------------ faults while the report is written
def test_a_full_disk_while_writing_the_report_is_one_line_and_leaves_no_partial(box, capsys, monkeypatch):
    from geolip_lib.report import notebook_doc

    _result(box.out / "ok" / "a")
    (box.out / ".profile.json").write_text('{"profile": "p"}')

    written = []

    def full(src, dst, *a, **k):  # the disk fills while the first file is written (a write names no file)
        Path(dst).write_bytes(b"half")
        written.append(Path(dst))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(notebook_doc.shutil, "copyfile", full)
    (line,) = refused(box, capsys, "--report-only", root_existed=True)
    partial = box.out / "_static" / ".mathjax.partial"
    assert line == (f"error: the report could not be written: No space left on device ({written[0]}); "
                    "free space and rerun with --report-only")
    assert partial in written[0].parents
    assert not partial.exists()


# ------------------------------------------------------------------ the next round (found while building this one)
def test_a_config_json_that_is_a_pipe_is_refused_not_waited_on(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "piped")
    (d / "config.json").unlink()
    os.mkfifo(d / "config.json")  # transformers would block on it inside the kernel until timeout_s
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "piped", d))
    assert line == (f"error: {params._rel(tmp_path / 'piped.yaml')}: {d / 'config.json'}: not a regular file (a pipe, "
                    "a device or a folder); not read")


@pytest.mark.parametrize("text,why", [
    ("[1, 2]", "a JSON list, not an object; re-save the model with save_pretrained"),
    ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64 levels; not read (re-save the model with "
                                                "save_pretrained)"),
])
def test_a_config_json_that_is_not_an_object_or_too_deep_is_one_line(box, capsys, tmp_path, text, why):
    d = _gpt2(tmp_path / "odd")
    (d / "config.json").write_text(text)
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "odd", d))
    assert line == f"error: {params._rel(tmp_path / 'odd.yaml')}: {d / 'config.json'}: {why}"


def test_a_tiny_model_asking_for_a_vocabulary_of_10_to_the_12_is_one_line(box, capsys, tmp_path):
    y = tmp_path / "huge.yaml"
    y.write_text("name: huge\nfamily: gpt2\nsource: tiny\nconfig: {vocab_size: 1000000000000}\n")
    (line,) = _run_model(box, capsys, y)
    assert line == (f"error: {params._rel(y)}: its config: vocab_size is 1000000000000; a size in a config is a whole "
                    "number from 0 to 10000000 (the limit on what a config may ask); fix the config")


def test_a_metrics_json_that_is_a_pipe_is_a_failed_record_not_a_hang(tmp_path):
    root = tmp_path / "r"
    _result(root / "nb" / "good")
    (root / "nb" / "piped").mkdir(parents=True)
    os.mkfifo(root / "nb" / "piped" / "metrics.json")
    recs = {r.job_id: r for r in report.collect(root)["nb"]}
    assert recs["good"].ok
    assert recs["piped"].error == (f"{root / 'nb' / 'piped' / 'metrics.json'}: not a regular file (a pipe, a device or "
                                   "a folder); not read; rerun with --resume")


def test_a_metrics_json_with_thousands_of_headline_numbers_keeps_the_first_200(tmp_path):
    where = _metrics(tmp_path / "r" / "nb" / "a", {f"k{i}": {"value": float(i)} for i in range(5000)})
    rec = read_record("nb", where.parent)
    assert rec.problems == [f"{where}: field 'headline': 5000 numbers, more than the 200 a job's table shows; the "
                            "first 200 are kept (rerun the job to rewrite its metrics.json)"]
    assert list(rec.headline) == [f"k{i}" for i in range(200)]


# ------------------------------------------------------------------ round four: tokenizer files (read inside the kernel)
def test_a_tokenizer_file_that_is_a_pipe_is_refused_before_a_kernel(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "tokpipe")
    os.mkfifo(d / "tokenizer.json")  # AutoTokenizer would block on it inside the kernel until timeout_s
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "tokpipe", d))
    assert line == (f"error: {params._rel(tmp_path / 'tokpipe.yaml')}: model 'tokpipe': {d / 'tokenizer.json'}: not a regular file (a pipe, a device or a "
                    "folder); not read")


def test_an_oversized_tokenizer_file_is_one_line_before_a_kernel(box, capsys, tmp_path, monkeypatch):
    from geolip_lib.models import preflight
    d = _gpt2(tmp_path / "tokbig")
    (d / "vocab.json").write_bytes(b"{" + b" " * 4096 + b"}")
    monkeypatch.setattr(preflight, "TOKENIZER_MAX_BYTES", 1024)  # the real limit is 128 MB
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "tokbig", d))
    assert line == (f"error: {params._rel(tmp_path / 'tokbig.yaml')}: model 'tokbig': {d / 'vocab.json'}: 4098 bytes, over the limit of 1024 for a tokenizer "
                    "file; not read (re-save the tokenizer with save_pretrained)")


def test_a_tokenizer_json_nested_too_deep_is_one_line_before_a_kernel(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "tokbig")
    (d / "vocab.json").write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    (line,) = _run_model(box, capsys, _params_file(tmp_path, "tokbig", d))
    assert line == (f"error: {params._rel(tmp_path / 'tokbig.yaml')}: model 'tokbig': {d / 'vocab.json'}: nested deeper than 64 levels; not read (re-save "
                    "the tokenizer with save_pretrained)")
