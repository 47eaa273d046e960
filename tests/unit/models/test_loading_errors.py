"""models.load error paths: each failure is one line that names the model and the fix."""
from __future__ import annotations

import pytest

from geolip_lib import models
from geolip_lib.models import sources
from geolip_lib.models.tokenizers import minilm_dir
from geolip_lib.params import load_model_params

pytestmark = pytest.mark.unit


def _one_line(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg, msg
    return msg


@pytest.fixture
def offline_empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path


@pytest.mark.parametrize("name", ["t5-small", "bert-large-uncased", "dinov2-large", "qwen3.5-0.8b"])
def test_hub_id_offline_not_cached_is_one_clear_line(offline_empty_cache, name):
    with pytest.raises(models.ModelLoadError) as ei:
        models.load(name)
    msg = _one_line(ei)
    p = load_model_params(name)
    assert f"model '{name}'" in msg and p.id in msg
    assert "HF_HUB_OFFLINE=1" in msg
    assert f"set local_dir: /path/to/model in params/models/{name}.yaml" in msg


def test_hub_id_from_dict_offline(offline_empty_cache):
    with pytest.raises(models.ModelLoadError, match="'nobody/none' is not in the Hugging Face cache"):
        models.load({"name": "x", "family": "bert", "source": "hub", "id": "nobody/none"})


def test_hub_local_dir_replaces_hub_and_missing_dir_is_named(offline_empty_cache, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(models.ModelLoadError) as ei:
        models.load({"name": "x", "family": "t5", "source": "hub", "id": "google-t5/t5-small",
                     "local_dir": str(missing)})
    msg = _one_line(ei)
    assert str(missing) in msg and "does not exist" in msg


def test_unknown_model_name():
    with pytest.raises(models.ParamsError) as ei:
        models.load("no-such-model")
    assert "unknown model 'no-such-model'" in _one_line(ei)


def test_bad_override_is_a_params_error():
    with pytest.raises(models.ParamsError, match="'dtype'"):
        models.load("tiny-bert", dtype="float8")
    with pytest.raises(models.ParamsError, match="'colour'"):
        models.load("tiny-bert", colour="red")


def test_local_source_needs_a_directory():
    with pytest.raises(models.ModelLoadError, match="needs local_dir"):
        models.load({"name": "x", "family": "bert", "source": "local"})


def test_missing_package_says_how_to_install():
    with pytest.raises(models.ModelLoadError) as ei:
        models.load({"name": "x", "family": "bert", "source": "package", "id": "no-such-pkg-geolip"})
    assert "pip install no-such-pkg-geolip" in _one_line(ei)


def test_directory_without_a_model_is_one_line(tmp_path):
    (tmp_path / "readme.txt").write_text("empty")
    with pytest.raises(models.ModelLoadError) as ei:
        models.load({"name": "x", "family": "bert", "source": "local", "local_dir": str(tmp_path)})
    assert "cannot load a bert model" in _one_line(ei)


def test_open_clip_unknown_tag_offline(offline_empty_cache):
    with pytest.raises(models.ModelLoadError) as ei:
        models.load({"name": "x", "family": "open_clip", "source": "open_clip", "id": "ViT-B-16",
                     "pretrained": "no_such_tag"})
    assert "set local_dir: in params/models/x.yaml" in _one_line(ei)


class _Recorder:
    """Stands in for the transformers auto class; records from_pretrained kwargs."""

    calls: list = []

    @classmethod
    def from_pretrained(cls, path, **kw):
        cls.calls.append(kw)
        from transformers import AutoModel
        return AutoModel.from_pretrained(path, dtype=kw["dtype"], **{k: v for k, v in kw.items() if k in (
            "output_loading_info", "ignore_mismatched_sizes")})  # the loader's own check reads what was loaded


@pytest.mark.parametrize("flag", [False, True])
def test_trust_remote_code_only_when_the_params_file_says_so(monkeypatch, flag):
    _Recorder.calls = []
    monkeypatch.setattr(sources, "model_class", lambda family: _Recorder)
    lm = models.load({"name": "x", "family": "bert", "source": "local", "local_dir": str(minilm_dir()),
                      "trust_remote_code": flag})
    assert lm.family == "bert"
    kw = _Recorder.calls[-1]
    assert kw.get("trust_remote_code", False) is flag
    assert ("trust_remote_code" in kw) is flag


def test_device_auto_picks_cpu_without_cuda(monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert models.pick_device("auto").type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert models.pick_device("auto").type == "cuda"
    assert models.pick_device("cpu").type == "cpu"


def test_check_is_a_cheap_preflight(offline_empty_cache, tmp_path):
    assert models.check("tiny-bert").name == "tiny-bert"
    assert models.check("all-minilm-l6-v2").source == "package"
    with pytest.raises(models.ModelLoadError, match="set local_dir: /path/to/model in params/models/t5-base.yaml"):
        models.check("t5-base")
    with pytest.raises(models.ModelLoadError, match="does not exist"):
        models.check({"name": "x", "family": "bert", "source": "local", "local_dir": str(tmp_path / "no")})
    with pytest.raises(models.ParamsError):
        models.check("no-such-model")
