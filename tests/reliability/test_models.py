"""Probes of model files: corrupt weights found in preflight and named, corrupt caches rebuilt,
typos in a model's nested ``config:`` caught before any kernel starts."""
from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from geolip_lib.models import check
from geolip_lib.models.loading import ModelLoadError
from geolip_lib.models.config_checks import check_config
from geolip_lib.models.preflight import safetensors_problems
from geolip_lib.params import ParamsError


def _local_model(tmp_path, corrupt: str):
    d = tmp_path / "weights"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "bert"}))
    f = d / "model.safetensors"
    save_file({"w": torch.zeros(64, 64)}, str(f))
    data = f.read_bytes()
    f.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00garbage" * 50, "empty": b""}[corrupt])
    y = tmp_path / "broken.yaml"
    y.write_text(f"name: broken\nfamily: bert\nsource: local\nlocal_dir: {d}\n")
    return y, f


@pytest.mark.parametrize("corrupt,why", [("truncated", "incomplete metadata"), ("garbage", "header too large"),
                                         ("empty", "the file is empty")])
def test_corrupt_local_weights_fail_in_preflight_naming_model_and_file(tmp_path, corrupt, why):
    y, f = _local_model(tmp_path, corrupt)
    with pytest.raises(ModelLoadError) as exc:
        check(y)
    msg = str(exc.value)
    assert msg.startswith(f"model 'broken': corrupt weight file {f}: ") and why in msg
    assert "re-save the model" in msg and "\n" not in msg


def test_sound_weights_pass(tmp_path):
    d = tmp_path / "ok"
    d.mkdir()
    save_file({"w": torch.ones(3, 3)}, str(d / "model.safetensors"))
    assert safetensors_problems(d) == []


def test_a_corrupt_tiny_model_cache_entry_is_rebuilt(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    check("tiny-dinov2")  # builds the cache entry (no tokenizer)
    entry = next((tmp_path / "cache" / "tiny_models").glob("tiny-dinov2-*"))
    f = entry / "model.safetensors"
    f.write_bytes(f.read_bytes()[:100])
    capsys.readouterr()
    check("tiny-dinov2")
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rebuilding the corrupt tiny-model cache entry {entry} (model.safetensors:"), err
    assert safetensors_problems(entry) == []


@pytest.mark.parametrize("family,config,message", [
    ("t5", {"hidden_sise": 64}, "key 'config.hidden_sise': unknown field of this config (did you mean 'hidden_size'?)"),
    ("bert", {"num_hidden_layers": "2"}, "key 'config.num_hidden_layers': expected int like the default 12, got str '2'"),
    ("bert", {"num_hidden_layers": 2.5}, "key 'config.num_hidden_layers': expected int like the default 12, got float 2.5"),
    ("bert", {"hidden_dropout_prob": "none"}, "key 'config.hidden_dropout_prob': expected float"),
    ("dinov2", {"mlp_ratio": [4]}, "key 'config.mlp_ratio': expected int"),
    ("open_clip", {"vision_cfg": {"widht": 32}}, "key 'config.vision_cfg.widht': unknown field of this config "
                                                 "(did you mean 'width'?)"),
    ("open_clip", {"txt_cfg": {}}, "key 'config.txt_cfg': unknown field of this config (did you mean 'text_cfg'?)"),
    ("decoder_lm", {"model_type": "qwen9"}, "key 'config.model_type': unknown model_type 'qwen9'"),
])
def test_nested_config_typos_and_types(family, config, message):
    with pytest.raises(ParamsError) as exc:
        check_config(family, config, "params/models/m.yaml")
    assert str(exc.value) == f"params/models/m.yaml: {message}" or str(exc.value).startswith(
        f"params/models/m.yaml: {message}"), str(exc.value)


def test_every_shipped_model_config_is_valid():
    from geolip_lib.params import load_model_params, model_names

    for name in model_names():
        p = load_model_params(name)
        check_config(p.family, p.config, name)


def test_preflight_of_a_profile_checks_model_configs(tmp_path, monkeypatch, capsys):
    import run_all
    from geolip_lib import params

    models = tmp_path / "models"
    shutil.copytree(params.MODELS_DIR, models)
    (models / "tiny-bert.yaml").write_text((models / "tiny-bert.yaml").read_text().replace(
        "hidden_size:", "hidden_sise:"))
    monkeypatch.setattr(params, "MODELS_DIR", models)
    prof = tmp_path / "p.yaml"
    prof.write_text("name: p\nnotebooks:\n  02_weight_topology:\n    models: [tiny-bert]\n")
    assert run_all.main(["--profile", str(prof), "--out", str(tmp_path / "out"), "--no-pdf"]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert lines == ["error: params/models/tiny-bert.yaml: key 'config.hidden_sise': unknown field of this config "
                     "(did you mean 'hidden_size'?)"]
    assert not (tmp_path / "out" / "02_weight_topology").exists()


def test_nan_weights_are_named_at_load(tmp_path):
    from geolip_lib.models import load

    lm = load("tiny-bert")
    with torch.no_grad():
        w = lm.model.get_input_embeddings().weight
        w[3, :5] = float("nan")
        w[4, 0] = float("inf")
    d = tmp_path / "nan-bert"
    lm.model.save_pretrained(d)
    lm.tokenizer.save_pretrained(d)
    y = tmp_path / "nan-bert.yaml"
    y.write_text(f"name: nan-bert\nfamily: bert\nsource: local\nlocal_dir: {d}\n")
    with pytest.raises(ModelLoadError) as exc:
        load(y)
    n = w.numel()
    assert str(exc.value) == (f"model 'nan-bert': tensor embeddings.word_embeddings.weight has 5 NaN and 1 Inf values "
                              f"(of {n}); the checkpoint is corrupt: re-download or re-save it")


def test_metric_inputs_count_non_finite_values():
    from geolip_lib import metrics as M

    X = torch.randn(20, 4)
    X[0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"^X: contains 1 NaN and 0 Inf values \(of 80\)"):
        M.participation_ratio(X)


def test_a_crafted_trainer_state_pickle_is_refused(tmp_path):
    """ModulatorTrainer.load reads trainer_state.pt with weights_only=True: no code runs."""
    import pickle

    from geolip_lib.modulators.trainer import MODULATOR_FILE, STATE_FILE, ModulatorTrainer

    class Evil:
        def __reduce__(self):
            return (open, (str(tmp_path / "pwned"), "w"))

    save_file({"x": torch.zeros(1)}, str(tmp_path / MODULATOR_FILE))
    (tmp_path / STATE_FILE).write_bytes(pickle.dumps({"optimizer": Evil()}))
    trainer = ModulatorTrainer.__new__(ModulatorTrainer)
    trainer.modulator = torch.nn.Module()
    trainer.modulator.register_buffer("x", torch.zeros(1))
    with pytest.raises(ValueError) as exc:
        ModulatorTrainer.load(trainer, tmp_path)
    assert str(exc.value).startswith(f"directory: {tmp_path / STATE_FILE} is not a plain trainer state")
    assert not (tmp_path / "pwned").exists()


def test_a_tiny_model_entry_given_other_valid_weights_is_rebuilt(tmp_path, monkeypatch, capsys):
    """Valid weights of other values put in a tiny-model cache entry were loaded as the seeded model: the entry
    records the files it was built with (size, sha256, state), so a replaced file is found and the entry rebuilt
    (a file added beside them, too)."""
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    check("tiny-dinov2")
    entry = next((tmp_path / "cache" / "tiny_models").glob("tiny-dinov2-*"))
    f = entry / "model.safetensors"
    with safe_open(str(f), framework="pt") as fh:
        seeded = {k: fh.get_tensor(k) for k in fh.keys()}
    save_file({k: v * 3 for k, v in seeded.items()}, str(f), metadata={"format": "pt"})
    capsys.readouterr()
    check("tiny-dinov2")
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rebuilding the corrupt tiny-model cache entry {entry} (geolip_tiny.json: model.safetensors "
                          "is not the file written when the copy was made"), err
    with safe_open(str(f), framework="pt") as fh:
        assert all(torch.equal(fh.get_tensor(k), v) for k, v in seeded.items())
    (entry / "extra.safetensors").write_bytes(f.read_bytes())
    check("tiny-dinov2")
    assert "extra.safetensors was added after the copy was made" in capsys.readouterr().err
    assert not (entry / "extra.safetensors").exists()


def test_an_edited_tokenizer_cache_entry_is_rebuilt(tmp_path, monkeypatch, capsys):
    """A vocabulary edited in ``<cache>/tokenizers`` tokenized every text of every tiny model with it: the folder
    records the files it was built with, so an edit is found and the tokenizer built again as it was."""
    from geolip_lib.models import tokenizers

    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    d = tokenizers.tokenizer_dir("minilm")
    vocab = d / "tokenizer.json"
    before = vocab.read_bytes()
    assert b'"cat"' in before and b'"dog"' in before
    vocab.write_bytes(before.replace(b'"cat"', b'"tac"', 1))  # the same size, another vocabulary
    assert tokenizers.tokenizer_dir("minilm") == d
    err = capsys.readouterr().err
    assert f"rebuilding the corrupt tokenizer cache entry {d} (geolip_tokenizer.json: tokenizer.json is not the " \
           "file written when the copy was made" in err, err
    assert vocab.read_bytes() == before
