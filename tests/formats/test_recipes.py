"""The recipes of params/README.md "Your model, in the format you keep", run from that page's own text.

A new user writes a params file from the docs alone and runs ``--plan`` first: each fenced block after a
``<!-- recipe: NAME -->`` marker is run here as written (the model folders ``my-bert``, ``my-gpt2``, ``my-llama``,
``my-marian`` are tiny random models of those families, saved with their tokenizers in a temporary folder; the
names in the text are replaced by their paths there), so that the page and the code cannot drift apart. Then
every model the recipes wrote is planned with no ``size_note:`` (``run_all.py --plan``) and loaded, and its
weights are compared with the transformers model it came from: bit-equal for float32 files, within the stored
type's rounding for int8.

Notebooks 01, 02 and 06 on the same files (same metrics as on the original folders) are the ``families`` step's
(:mod:`tests.formats.test_recipes_notebooks`): they take minutes, these take about two.
"""
from __future__ import annotations

import shlex
import shutil
import sys

import pytest
import torch
import yaml

from geolip_lib import models
from geolip_lib.models import converted
from geolip_lib.params import load_model_params
from geolip_lib.models.tiny import build_tiny

pytestmark = [pytest.mark.integration]

from tests.formats.recipes import MADE_FROM, in_workdir, recipes


def test_the_page_has_every_recipe():
    assert set(recipes()) == {"torch-onnx-export", "optimum-export", "ct2-convert", "gguf-convert", "params", "run"}
    docs = [yaml.safe_load(d) for d in recipes()["params"][1].split("\n---\n")]
    assert {d["name"] for d in docs} == set(MADE_FROM)
    assert not any("size_note" in d for d in docs), "the recipes' params files plan from the file, not a size_note"


def test_recipes_write_their_files(made, work):
    assert (work / "my-bert-onnx" / "model.onnx").is_file() and (work / "my-bert-onnx" / "tokenizer.json").is_file()
    assert (work / "my-gpt2-onnx" / "model.onnx").is_file() and (work / "my-gpt2-onnx" / "config.json").is_file()
    for d, tok in (("my-llama-ct2", "tokenizer.model"), ("my-marian-ct2", "tokenizer.json")):
        assert (work / d / "model.bin").is_file() and (work / d / tok).is_file()
    assert (work / "my-llama-gguf" / "my-llama.gguf").is_file()
    print("recipe seconds:", made, file=sys.stderr)


@pytest.mark.parametrize("name", sorted(MADE_FROM))
def test_plan_reads_the_file_before_any_conversion(made, work, name, plan):
    """The run recipe's --plan line, for each model: it plans from the file's header (no size_note), and --plan
    converts nothing. A checkout whose cache already holds this byte-equal export (an earlier run of these recipes)
    plans from the converted folder's config instead."""
    line = next(line for line in recipes()["run"][1].splitlines() if "--plan" in line)
    args = shlex.split(in_workdir(line.replace("my-bert-onnx", name), work))
    assert args[:2] == [".venv/bin/python", "run_all.py"] and args[-1] == "--plan", args
    p = load_model_params(work / f"{name}.yaml")
    before = converted.existing_dir(p) if p.source in converted.CONVERTERS else None
    code, lines = plan(*args[2:-1])
    assert code == 0, "\n".join(lines[-30:])
    assert "fits." in lines and not any("size_note" in ln for ln in lines), lines
    if p.source in ("onnx", "ctranslate2"):
        read = "from the file's header" if before is None else "counted on the model's config"
        assert any(read in ln for ln in lines), (before, lines)
    if p.source in converted.CONVERTERS and before is None:  # (a rerun's export is byte-equal: converted before)
        assert converted.existing_dir(p) is None, "--plan converted the file"


@pytest.mark.parametrize("name", sorted(MADE_FROM))
def test_imported_weights_equal_the_original(made, work, name):
    original, exact = MADE_FROM[name]
    lm = models.load(work / f"{name}.yaml")
    ref = models.load({"name": f"{original}-local", "family": lm.family, "source": "local",
                       "local_dir": str(work / original)})
    got, want = lm.model.state_dict(), ref.model.state_dict()
    shared = [k for k in want if k in got]
    assert len(shared) >= 0.9 * len(want), f"{name}: only {len(shared)} of {len(want)} keys"
    for k in shared:
        a, b = got[k].float(), want[k].float()
        assert a.shape == b.shape, k
        if exact or a.ndim < 2:
            assert torch.equal(a, b), f"{name}: {k} differs from the original (max {float((a - b).abs().max()):.3g})"
        else:  # int8 per output row: w = q / scale, scale = 127 / max|row|: half a step at most
            step = b.abs().amax(dim=tuple(range(1, b.ndim)), keepdim=True) / 127
            assert bool(((a - b).abs() <= step / 2 + 1e-7).all()), f"{name}: {k} beyond int8 rounding"
    if not exact:
        assert "int8" in (lm.conversion or {}).get("dtypes", {}), "the record says what was dequantized"


def test_a_plan_of_a_file_not_converted_yet_is_remembered_with_its_folder(made, work, tmp_path):
    """The model's checks and size are remembered with the state of what they read (runner/remembered.py): for a
    file not converted yet, the file and its folder (its header, Optimum's config.json, the tokenizer's files,
    external data), so that a file added or changed beside it makes the answer stale."""
    from geolip_lib.runner.model_checks import model_reads

    shutil.copytree(work / "my-gpt2-onnx", tmp_path / "my-gpt2-onnx")
    fields = {**next(d for d in map(yaml.safe_load, recipes()["params"][1].split("\n---\n"))
                     if d["name"] == "my-gpt2-onnx"), "local_dir": str(tmp_path / "my-gpt2-onnx")}
    p = load_model_params(fields)
    folder = tmp_path / "my-gpt2-onnx"
    d = converted.existing_dir(p)  # a byte-equal export converted earlier in this session: its folder is read
    assert model_reads(p) == [str(folder / "model.onnx"), str(d if d is not None else folder)]
    (folder / "added_tokens.json").write_text("{}", encoding="utf-8")  # the key reads the folder's files too
    assert converted.existing_dir(p) is None and model_reads(p) == [str(folder / "model.onnx"), str(folder)]
