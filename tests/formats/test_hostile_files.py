"""The rules of every input, carried to what the new readers read beside a user's file, through ``run_all --plan``
(the path a new user takes first): Optimum's ``config.json``, CTranslate2's ``config.json``, an ONNX graph's external
data, the tokenizer's files, a head count of 0. Each damaged copy of a recipe's real export is one line naming the
file, exit 2, before any kernel, in bounded time, and nothing is converted.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
import yaml

from tests.formats.recipes import recipes

pytestmark = [pytest.mark.integration]


def _params(name: str) -> dict:
    return next(d for d in map(yaml.safe_load, recipes()["params"][1].split("\n---\n")) if d["name"] == name)


def _damage(folder: Path, case: str) -> Path:
    """Damage a copy of an export as ``case`` says; the file the refusal must name."""
    if case == "truncated graph":
        f = folder / "model.onnx"
        f.write_bytes(f.read_bytes()[:200])
    elif case == "truncated external data":
        f = folder / "model.onnx.data"
        f.write_bytes(f.read_bytes()[:100])
    elif case == "external data linked out of the folder":
        f = folder / "model.onnx.data"
        outside = folder.parent / f"outside-{folder.name}.data"
        shutil.move(f, outside)
        f.symlink_to(outside)
    elif case in ("config.json a pipe", "ct2 config.json a pipe"):
        f = folder / "config.json"
        f.unlink()
        os.mkfifo(f)
    elif case == "config.json NaN heads":
        f = folder / "config.json"
        f.write_text(f.read_text().replace('"n_head": 4', '"n_head": NaN'))
        assert "NaN" in f.read_text()
    elif case == "config.json huge":
        f = folder / "config.json"
        f.write_text('{"model_type": "gpt2", "pad": "' + "x" * (3 << 20) + '"}')
    elif case == "tokenizer a pipe":
        f = folder / "tokenizer.json"
        f.unlink()
        os.mkfifo(f)
    elif case == "truncated model.bin":
        f = folder / "model.bin"
        f.write_bytes(f.read_bytes()[:1000])
    else:
        raise AssertionError(case)
    return f


CASES = [("my-bert-onnx", "truncated graph"), ("my-bert-onnx", "truncated external data"),
         ("my-bert-onnx", "external data linked out of the folder"), ("my-bert-onnx", "tokenizer a pipe"),
         ("my-gpt2-onnx", "config.json a pipe"), ("my-gpt2-onnx", "config.json NaN heads"),
         ("my-gpt2-onnx", "config.json huge"), ("my-llama-ct2", "truncated model.bin"),
         ("my-llama-ct2", "ct2 config.json a pipe")]


ARGS = ("--profile", "demo", "--notebooks", "01_embedding_terrain")


@pytest.mark.parametrize("name, case", CASES, ids=[f"{n}-{c.replace(' ', '_')}" for n, c in CASES])
def test_a_damaged_file_beside_is_one_line_before_any_kernel(made, work, tmp_path, name, case, plan):
    folder = tmp_path / name
    shutil.copytree(work / name, folder, symlinks=True)
    bad = _damage(folder, case)
    fields = {**_params(name), "local_dir": str(folder)}
    y = tmp_path / f"{name}.yaml"
    y.write_text(yaml.safe_dump(fields), encoding="utf-8")
    t0 = time.monotonic()
    code, lines = plan(*ARGS, "--models", str(y))
    assert time.monotonic() - t0 < 60, "bounded: no pipe waited on"
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1, lines[-20:]
    assert str(bad) in errors[0] or str(folder) in errors[0], errors[0]
    assert "Traceback" not in errors[0] and "no config at hand" not in errors[0], errors[0]
    assert not list((tmp_path / name).glob("*.partial")), "nothing half-written beside the file"


def test_a_head_count_of_zero_is_one_line(made, work, tmp_path, plan):
    """``config: {num_attention_heads: 0}`` beside a CTranslate2 Llama (a converter once divided by it)."""
    fields = {**_params("my-llama-ct2"), "local_dir": str(work / "my-llama-ct2"),
              "config": {"model_type": "llama", "num_attention_heads": 0}}
    y = tmp_path / "my-llama-ct2.yaml"
    y.write_text(yaml.safe_dump(fields), encoding="utf-8")
    code, lines = plan(*ARGS, "--models", str(y))
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "num_attention_heads" in errors[0], lines[-20:]
