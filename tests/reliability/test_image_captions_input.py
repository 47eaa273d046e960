"""Notebook 17's ``IMAGE_CAPTIONS`` is an input a colleague edits in a profile or a params file: every bad
value is one line and exit 2 before a kernel starts, and the check reads the folder's entries only."""
from __future__ import annotations

import os

import pytest

import run_all
from geolip_lib.caption_sets import source_problem
from tests.image_captions import write_image_captions

pytestmark = pytest.mark.unit


def _profile(tmp_path, value: str):
    p = tmp_path / "p.yaml"
    p.write_text("name: p\ndescription: probe\nnotebooks:\n  17_representational_alignment:\n    per_model: false\n"
                 "    parameters: {MODELS: [tiny-bert, tiny-qwen], N_INPUTS: 64, VISION_MODELS: [tiny-dinov2], "
                 f"IMAGE_CAPTIONS: {value}}}\n", encoding="utf-8")
    return p


@pytest.mark.parametrize("value, says", [
    # as many ``..`` as any clone's depth: it reaches /etc wherever the checkout lies
    ('"' + "../" * 40 + 'etc"', "holds neither state.json nor metadata"),
    ("5", "outside its range"),
    ('"{x}<script>"', "is not a folder"),
    ('"/dev/null"', "is not a folder"),
    ("LINK", "a link is not followed"),
    ("FIFO", "holds neither state.json nor metadata"),
])
def test_a_bad_image_caption_source_is_one_line_before_a_kernel(tmp_path, capsys, value, says):
    if value == "LINK":
        os.symlink(write_image_captions(tmp_path / "set", n=12), tmp_path / "link")
        value = f'"{tmp_path / "link"}"'
    if value == "FIFO":  # a named pipe where the metadata file belongs: never opened, so never a hang
        (tmp_path / "pipe").mkdir()
        os.mkfifo(tmp_path / "pipe" / "metadata.jsonl")
        value = f'"{tmp_path / "pipe"}"'
    code = run_all.main(["--profile", str(_profile(tmp_path, value)), "--out", str(tmp_path / "out"), "--no-pdf"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and 1 <= len(err) <= 2, err
    assert all("parameter IMAGE_CAPTIONS" in e for e in err) and any(says in e for e in err), err
    assert not (tmp_path / "out" / "17_representational_alignment").exists()


def test_the_named_sets_and_a_real_folder_pass(tmp_path):
    assert source_problem("wit_1024") is None
    assert source_problem(str(write_image_captions(tmp_path / "set", n=12))) is None
    assert "expected a name" in source_problem("a\x00b") and "expected a name" in source_problem("x" * 5000)
