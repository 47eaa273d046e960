"""Answers remembered by a digest of their inputs (``geolip_lib.runner.remembered``): read back
equal and of the same types, computed again for another key, a broken record or ``GEOLIP_REMEMBER=0``, never
for an exception; and the runner's answers read back are those it computes (a tiny model's problems and size,
a claims file's problems, the cost fits)."""
from __future__ import annotations

import dataclasses
import json
import math
import os

import pytest

from geolip_lib.runner import cost_model, jobs, model_checks, model_sizes
from geolip_lib.runner import remembered as R

pytestmark = pytest.mark.unit


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    monkeypatch.delenv("GEOLIP_REMEMBER", raising=False)
    return tmp_path


class Counter:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_encode_round_trips_types_exactly():
    v = [None, True, 0, 1.0, -0.0, math.inf, "s", (1, (2.5, "x")), {"a": [1, {3: "three", (1, 2): None}]}, []]
    back = R.decode(json.loads(json.dumps(R.encode(v))))
    assert back == v
    assert type(back[2]) is int and type(back[3]) is float and type(back[7]) is tuple
    assert list(back[8]["a"][1]) == [3, (1, 2)]
    for bad in (object(), {1.5: {2}}, [b"bytes"]):
        with pytest.raises(R.Unrememberable):
            R.encode(bad)


def test_remembered_once_per_key_and_recomputed_when_broken_or_off(cache, monkeypatch):
    f = Counter({"n": (1, 2)})
    assert R.remembered("k", ["a"], f) == {"n": (1, 2)} and f.calls == 1
    assert R.remembered("k", ["a"], f) == {"n": (1, 2)} and f.calls == 1  # read back
    assert R.remembered("k", ["b"], f) == {"n": (1, 2)} and f.calls == 2  # another key
    records = list((cache / "remembered" / "k").iterdir())
    assert len(records) == 2
    for rec in records:
        rec.write_text("{broken", encoding="utf-8")
    assert R.remembered("k", ["a"], f) == {"n": (1, 2)} and f.calls == 3
    assert R.remembered("k", ["a"], f, check=lambda v: False) and f.calls == 4  # a value of the wrong shape
    monkeypatch.setenv("GEOLIP_REMEMBER", "0")
    assert R.remembered("k", ["a"], f) and f.calls == 5
    assert R.remembered("k", [object()], f) and f.calls == 6  # a key that is not plain data: computed


def test_an_exception_is_never_remembered(cache):
    calls = []

    def fail():
        calls.append(1)
        raise ValueError("boom")

    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            R.remembered("k", ["x"], fail)
    assert len(calls) == 2
    assert not (cache / "remembered" / "k").exists()


def test_a_value_that_is_not_plain_data_is_returned_but_not_kept(cache):
    f = Counter(object())
    assert R.remembered("k", [], f) is f.value and R.remembered("k", [], f) is f.value and f.calls == 2


def _twice(fn, monkeypatch):
    """``fn()`` computed (GEOLIP_REMEMBER=0), then remembered, then read back."""
    monkeypatch.setenv("GEOLIP_REMEMBER", "0")
    computed = fn()
    monkeypatch.delenv("GEOLIP_REMEMBER")
    return computed, fn(), fn()


def test_a_tiny_models_problems_read_back_are_those_computed(cache, tmp_path, monkeypatch):
    bad = tmp_path / "tiny-bret.yaml"
    bad.write_text("name: tiny-bret\nfamily: bert\nsource: tiny\ntokenizer: minilm\n"
                   "config: {hidden_sizee: 32, num_hidden_layers: 2}\n", encoding="utf-8")
    for name in ("tiny-bert", str(bad)):
        computed, first, again = _twice(lambda: model_checks.model_problems(name), monkeypatch)
        assert computed == first == again
    assert "hidden_sizee" in computed[0]
    assert len(list((cache / "remembered" / "model-problems").iterdir())) == 2


def test_a_tiny_models_size_read_back_is_the_one_computed(cache, monkeypatch):
    def info():
        model_sizes.model_info.cache_clear()
        return model_sizes.model_info("tiny-bert")

    computed, first, again = _twice(info, monkeypatch)
    assert computed == first == again and computed.params > 0
    assert [f.name for f in dataclasses.fields(again)] == [f.name for f in dataclasses.fields(computed)]
    model_sizes.model_info.cache_clear()


def test_claims_problems_read_back_are_those_computed(cache, monkeypatch):
    for value in ("seed-001", "no-such-claims", "../seed-001"):
        computed, first, again = _twice(lambda: jobs.claims_problems(value, "job x: parameter CLAIMS"), monkeypatch)
        assert computed == first == again
    assert jobs.claims_problems("seed-001", "w") == []
    assert "unknown claims file 'no-such-claims'" in jobs.claims_problems("no-such-claims", "w")[0]


def test_cost_fits_read_back_are_those_computed_with_their_warnings(cache, tmp_path, monkeypatch, capsys):
    timings = tmp_path / "timings"
    timings.mkdir()
    for f in cost_model.TIMINGS_DIR.glob("*.json"):
        (timings / f.name).write_bytes(f.read_bytes())
    (timings / "broken.json").write_text("{not json", encoding="utf-8")

    def fits():
        cost_model.fitted_costs.cache_clear()
        return cost_model.fitted_costs(timings)

    computed, first, again = _twice(fits, monkeypatch)
    assert computed == first == again and computed
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "broken.json" in ln]
    assert len(warned) == 3  # printed by each: computed, remembered, read back
    cost_model.fitted_costs.cache_clear()


# ------------------------------------------------------------------ answers that read a model's own files
def test_path_state_sees_every_change_of_a_folder(tmp_path):
    """A rewrite that keeps size and mtime (``touch -r``), a file replaced by a pipe, one added, one removed and a
    link pointed elsewhere each change the state of the folder; reading a file does not."""
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text('{"a": 1}', encoding="utf-8")
    (d / "w.bin").write_bytes(b"x" * 10)
    seen = [R.path_state(str(d))]

    def changed():
        now = R.path_state(str(d))
        assert now not in seen
        seen.append(now)

    (d / "w.bin").read_bytes()
    assert R.path_state(str(d)) == seen[-1]  # read only
    st = (d / "w.bin").stat()
    (d / "w.bin").write_bytes(b"y" * 10)
    os.utime(d / "w.bin", ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime, another content
    changed()
    (d / "config.json").unlink()
    os.mkfifo(d / "config.json")
    changed()
    (d / "extra.safetensors").write_bytes(b"")
    changed()
    (d / "extra.safetensors").unlink()
    changed()
    (tmp_path / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "b.txt").write_text("bb", encoding="utf-8")
    (d / "vocab.txt").symlink_to(tmp_path / "a.txt")
    changed()
    (d / "vocab.txt").unlink()
    (d / "vocab.txt").symlink_to(tmp_path / "b.txt")
    changed()
    assert R.path_state(str(tmp_path / "absent")) is None
    assert R.path_state(str(d / "w.bin"))[0] == "file"


def test_remembered_reading_is_read_back_only_while_the_files_are_as_they_were(cache, tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}", encoding="utf-8")
    f = Counter(["a problem"])
    reads = lambda: [str(d)]  # noqa: E731
    assert R.remembered_reading("r", ["k"], f, reads) == ["a problem"] and f.calls == 1
    assert R.remembered_reading("r", ["k"], f, reads) == ["a problem"] and f.calls == 1  # read back
    (d / "config.json").write_text('{"x": 1}', encoding="utf-8")
    assert R.remembered_reading("r", ["k"], f, reads) and f.calls == 2  # a file changed: computed again
    assert R.remembered_reading("r", ["k"], f, reads) and f.calls == 2
    assert R.remembered_reading("r", ["k2"], f, lambda: None) and f.calls == 3  # nothing named: not kept
    assert R.remembered_reading("r", ["k2"], f, lambda: None) and f.calls == 4
    assert R.remembered_reading("r", ["k3"], f, lambda: [str(tmp_path / "gone")]) and f.calls == 5  # missing: not kept
    assert R.remembered_reading("r", ["k3"], f, lambda: [str(tmp_path / "gone")]) and f.calls == 6

    def broken():
        raise OSError("cannot")
    assert R.remembered_reading("r", ["k4"], f, broken) and f.calls == 7  # the files cannot be named: computed
    assert R.remembered_reading("r", ["k4"], f, broken) and f.calls == 8


def _gpt2_folder(d):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=64, n_positions=32)).save_pretrained(d)
    return d


def test_a_model_folders_problems_and_size_read_back_are_those_computed_and_follow_its_files(cache, tmp_path,
                                                                                              monkeypatch):
    """A ``local_dir`` model: its problems and its size are remembered with its folder's state; a weight file
    rewritten with another layer count is refused at once on the next check (not the remembered 'no problem')."""
    d = _gpt2_folder(tmp_path / "own")
    y = tmp_path / "own.yaml"
    y.write_text(f"name: own\nfamily: gpt2\nsource: local\nlocal_dir: {d}\n", encoding="utf-8")
    computed, first, again = _twice(lambda: model_checks.model_problems(str(y)), monkeypatch)
    assert computed == first == again == []
    assert len(list((cache / "remembered" / "model-problems").iterdir())) == 1

    def info():
        model_sizes.model_info.cache_clear()
        return model_sizes.model_info(str(y))

    computed, first, again = _twice(info, monkeypatch)
    assert computed == first == again and computed.params > 0 and computed.files_dir == d
    calls = []
    monkeypatch.setattr(model_checks, "_problems", lambda *a: calls.append(a) or [])
    assert model_checks.model_problems(str(y)) == [] and calls == []  # read back, not computed
    monkeypatch.undo()
    monkeypatch.setenv("GEOLIP_CACHE", str(cache))
    cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
    (d / "config.json").write_text(json.dumps({**cfg, "n_layer": 1}), encoding="utf-8")  # 2 layers of weights
    (line,) = model_checks.model_problems(str(y))
    assert "has no place in the model" in line, line
    model_sizes.model_info.cache_clear()


def test_an_edited_record_is_computed_again_with_one_warning(cache, tmp_path, capsys):
    """A record whose value was edited (a refusal turned into 'no problem', key intact) is not trusted: its
    signature no longer verifies, so the answer is computed again and one line says so (as for the null cache)."""
    d = tmp_path / "m"
    d.mkdir()
    f = Counter(["model 'm': a problem"])
    assert R.remembered_reading("r", ["k"], f, lambda: [str(d)]) == f.value and f.calls == 1
    (path,) = (cache / "remembered" / "r").iterdir()
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["value"] = []
    path.write_text(json.dumps(rec), encoding="utf-8")
    capsys.readouterr()
    assert R.remembered_reading("r", ["k"], f, lambda: [str(d)]) == f.value and f.calls == 2
    assert capsys.readouterr().err.splitlines() == [  # its signature (geolip_lib.cache_auth) is checked first
        f"warning: remembered answer {path}: its signature does not verify under your cache key (edited, forged, or "
        "written by another user or an older version); computing it again"]
    assert R.remembered_reading("r", ["k"], f, lambda: [str(d)]) == f.value and f.calls == 2  # rewritten whole
    g = Counter((1, 2.5))
    R.remembered("plain", ["k"], g)
    (path,) = (cache / "remembered" / "plain").iterdir()
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["value"]["t"][0] = 2
    path.write_text(json.dumps(rec), encoding="utf-8")
    assert R.remembered("plain", ["k"], g) == (1, 2.5) and g.calls == 2
    assert "its signature does not verify" in capsys.readouterr().err
