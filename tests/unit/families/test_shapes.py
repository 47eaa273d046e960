"""Config from tensor shapes (``geolip_lib/families/shapes.py`` tables, ``geolip_lib.models.rebuild.infer_config``).

For the tiny config of every (family, model_type) of the registry, the model is built on the meta device and the
shapes of its checkpoint (the names transformers 4.x and a 5.x ``save_pretrained`` use) are given to
``infer_config`` with only the head counts (and the model_type); every size field of the tiny config comes back,
or is named in the notes as defaulted (a field no tensor shows). The same with the running model's 5.x names and a
head's prefix. Wrong or missing head counts, a given field that disagrees, a stray tensor, a missing one and a
broken shape each give a one-line ValueError.
"""
from __future__ import annotations

import json
import re

import pytest
import torch

from geolip_lib.families import REGISTRY, tiny_type_models
from geolip_lib.families.shapes import HOW, TABLES, table_of
from geolip_lib.models.rebuild import NOTES, _flat, _nest, infer_config
from geolip_lib.models.rebuild_classes import layouts, make_config

pytestmark = pytest.mark.unit

#: (family, model_type) of every tiny model of the registry whose family is a transformers one
CASES = sorted({(p["family"], p["config"]["model_type"]) for p in tiny_type_models().values() if p["config"]})
#: sizes no tensor has: every layer of these MoE stacks is sparse, so the dense ``intermediate_size`` is unused
UNUSED = {("qwen2_moe", "intermediate_size"), ("qwen3_moe", "intermediate_size"), ("qwen3_next", "intermediate_size")}
_TOKENS = re.compile(r"(^|\.)(\w+_token_id|vocab_size_pad)$")


def _get(config, dotted: str):
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def _has(config, dotted: str) -> bool:
    try:
        _get(config, dotted)
        return True
    except AttributeError:
        return False


_CACHE: dict = {}


def _tiny(fam: str, mt: str):
    """(tiny config dict, its config object, the largest candidate layout on meta), built once per session."""
    if (fam, mt) not in _CACHE:
        cfg = REGISTRY[fam].tiny_configs()[mt]
        conf = make_config(cfg)
        lay = max(layouts(conf), key=lambda lay: len(lay.ckpt))
        _CACHE[fam, mt] = cfg, conf, lay
    return _CACHE[fam, mt]


def _heads(fam: str, mt: str, cfg: dict, conf) -> dict:
    """model_type and the fields the table asks for (for this file's tensors), from the true config."""
    t = table_of(mt, fam)
    flat = _flat(cfg)
    given = {"model_type": mt}
    keys = _tiny(fam, mt)[2].ckpt
    for f in t.ask + tuple(f for f, rx in t.ask_if if any(re.search(r"(?:^|\.)" + rx, k) for k in keys)):
        given[f] = flat[f] if f in flat else _get(conf, f)
    return _nest(given)


def test_every_model_type_has_a_table_with_valid_rules():
    for fam, s in REGISTRY.items():
        if not s.hf:
            continue
        for mt in s.model_types:
            assert table_of(mt, fam) is not None, (fam, mt)
    for mt, t in TABLES.items():
        for f, rx, dim, how in t.rows:
            re.compile(rx)
            assert isinstance(dim, int) and (how is None or how[0] in HOW), (mt, f)
        for f, rx in t.layers:
            assert re.compile(rx).groups >= 1, (mt, f)
        assert t.ask, mt  # a head count is always asked for


@pytest.mark.parametrize("fam,mt", CASES, ids=[f"{f}-{m}" for f, m in CASES])
def test_infer_config_gives_back_the_sizes(fam, mt):
    cfg, conf, lay = _tiny(fam, mt)
    out = infer_config(fam, lay.ckpt, _heads(fam, mt, cfg, conf))
    assert json.loads(json.dumps(out)) == out  # JSON-able, notes included
    notes = out.pop(NOTES)
    assert out["model_type"] == mt and notes["read"]
    got = make_config(out)
    for f, v in _flat(cfg).items():
        if isinstance(v, bool) or not isinstance(v, int) or _TOKENS.search(f) or (mt, f) in UNUSED:
            continue
        if f in notes["defaulted"]:
            continue  # named in the notes for the caller: no shape shows it
        if not _has(got, f):  # a field the family's tiny config sets that this config class does not have
            assert f not in _flat(make_config({"model_type": mt}).to_dict()), f
            continue
        assert _get(got, f) == _get(conf, f), (f, _get(got, f), _get(conf, f))
    # the model built from the inferred config has the same tensors, shape for shape
    lay2 = max(layouts(got), key=lambda lay: len(lay.ckpt))
    assert {k: s for k, s in lay2.ckpt.items() if k in lay.ckpt} == lay.ckpt
    # a whole config.json beside the file (nulls for "the default" included) agrees with the shapes
    full = infer_config(fam, lay.ckpt, json.loads(conf.to_json_string()))
    assert full.pop(NOTES)["class"] == notes["class"]


@pytest.mark.parametrize("fam,mt", [("bert", "bert"), ("decoder_lm", "llama"), ("dinov2", "dinov2"),
                                    ("decoder_lm", "mixtral"), ("gpt2", "gpt2"), ("t5_v1_1", "t5")])
def test_runtime_names_and_head_prefixes(fam, mt):
    """5.x running names (DINOv2's q_proj, fused experts) and a head's prefix added or stripped infer the same."""
    cfg, conf, lay = _tiny(fam, mt)
    want = infer_config(fam, lay.ckpt, _heads(fam, mt, cfg, conf))
    got = infer_config(fam, lay.runtime, _heads(fam, mt, cfg, conf))
    assert got.pop(NOTES)["read"] == want[NOTES]["read"]
    assert got == {k: v for k, v in want.items() if k != NOTES}
    if lay.prefix and any(k.startswith(lay.prefix + ".") for k in lay.ckpt):
        p = lay.prefix + "."
        base = {(k[len(p):] if k.startswith(p) else p + k): s for k, s in lay.ckpt.items()
                if k.startswith(p)}  # the base model's keys without the prefix
        base_out = infer_config(fam, base, _heads(fam, mt, cfg, conf))
        assert {k: v for k, v in base_out.items() if k not in (NOTES, "tie_word_embeddings")} == \
               {k: v for k, v in want.items() if k not in (NOTES, "tie_word_embeddings")}


def _one_line(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400
    return msg


def test_heads_are_asked_for_by_the_config_s_own_name():
    for fam, mt, field in [("decoder_lm", "llama", "num_attention_heads"), ("gpt2", "gpt2", "n_head"),
                           ("whisper", "whisper", "encoder_attention_heads"), ("t5", "t5", "num_heads"),
                           ("distilbert", "distilbert", "n_heads"), ("albert", "albert", "num_hidden_layers"),
                           ("clip", "clip", "text_config.num_attention_heads")]:
        cfg, conf, lay = _tiny(fam, mt)
        given = _flat(_heads(fam, mt, cfg, conf))
        given.pop(field)
        with pytest.raises(ValueError) as e:
            infer_config(fam, lay.ckpt, _nest(given))
        msg = _one_line(e)
        assert f"needs {field}:" in msg and "add config:" in msg and "params file" in msg
        assert "add config: {text_config: {num_attention_heads: N}}" in msg if "." in field else \
            f"add config: {{{field}: N}}" in msg


def test_model_type_is_asked_for_when_the_family_has_several():
    cfg, conf, lay = _tiny("bert", "roberta")
    with pytest.raises(ValueError) as e:
        infer_config("bert", lay.ckpt, {"num_attention_heads": 4})
    msg = _one_line(e)
    assert "config: {model_type: ...}" in msg and "roberta" in msg and "xlm-roberta" in msg
    with pytest.raises(ValueError, match="not one of family bert"):
        infer_config("bert", lay.ckpt, {"model_type": "llama", "num_attention_heads": 4})
    with pytest.raises(ValueError, match="unknown family"):
        infer_config("nope", lay.ckpt, {})


def test_hostile_shapes_and_fields_give_one_line():
    cfg, conf, lay = _tiny("decoder_lm", "llama")
    good = {"model_type": "llama", "num_attention_heads": 4}
    with pytest.raises(ValueError) as e:  # 3 heads do not divide the 32 query rows
        infer_config("decoder_lm", lay.ckpt, {**good, "num_attention_heads": 3})
    assert "num_attention_heads=3 does not divide" in _one_line(e)
    with pytest.raises(ValueError) as e:  # BERT has no head width among its shapes: transformers refuses
        infer_config("bert", _tiny("bert", "bert")[2].ckpt, {"model_type": "bert", "num_attention_heads": 3})
    msg = _one_line(e)
    assert "transformers builds no model from this config" in msg and "not a multiple" in msg
    assert msg.endswith("check the given fields (the head count?)")
    with pytest.raises(ValueError) as e:  # ALBERT: 3 heads of 32 // 3 = 10 make 30 rows, not the file's 32
        infer_config("albert", _tiny("albert", "albert")[2].ckpt, {"num_attention_heads": 3, "num_hidden_layers": 3})
    msg = _one_line(e)
    assert "attention.query.weight is [32, 32] in the file, [30, 32] by the config" in msg
    assert msg.endswith("check the given num_attention_heads, num_hidden_layers")
    with pytest.raises(ValueError) as e:  # a given size the shapes contradict
        infer_config("decoder_lm", lay.ckpt, {**good, "num_hidden_layers": 5})
    msg = _one_line(e)
    assert "num_hidden_layers is given as 5 but the shapes say 2" in msg
    with pytest.raises(ValueError) as e:
        infer_config("decoder_lm", {**lay.ckpt, "model.layers.0.extra.weight": (3, 3)}, good)
    assert "tensor model.layers.0.extra.weight has no place in LlamaForCausalLM" in _one_line(e)
    shapes = dict(lay.ckpt)
    del shapes["model.layers.1.mlp.down_proj.weight"]
    with pytest.raises(ValueError) as e:
        infer_config("decoder_lm", shapes, good)
    assert "model.layers.1.mlp.down_proj.weight" in _one_line(e) and "not in the file" in str(e.value)
    for bad in [(float("nan"), 32), (-1, 32), ("x", 32), (2.5, 32), None]:
        with pytest.raises(ValueError) as e:
            infer_config("decoder_lm", {**lay.ckpt, "model.norm.weight": bad}, good)
        assert "tensor model.norm.weight: shape" in _one_line(e)
    shapes = dict(lay.ckpt)
    shapes["model.layers.0.mlp.up_proj.weight"] = (48, 32)  # one layer wider than the others
    with pytest.raises(ValueError) as e:
        infer_config("decoder_lm", shapes, good)
    msg = _one_line(e)
    assert "model.layers.0.mlp.up_proj.weight is [48, 32] in the file, [64, 32] by the config" in msg
    with pytest.raises(ValueError, match="holds no tensors"):
        infer_config("decoder_lm", {}, good)


def test_given_fields_win_and_the_notes_say_what_was_defaulted():
    cfg, conf, lay = _tiny("decoder_lm", "llama")
    out = infer_config("decoder_lm", lay.ckpt, {"model_type": "llama", "num_attention_heads": 4,
                                                "rope_theta": 1234.0, "num_hidden_layers": 2})
    notes = out[NOTES]
    assert out["rope_theta"] == 1234.0 and "rope_theta" in notes["given"]
    assert "num_hidden_layers" in notes["given"] and "num_hidden_layers" not in notes["read"]
    assert {"vocab_size", "hidden_size", "intermediate_size", "num_key_value_heads"} <= set(notes["read"])
    assert notes["sources"]["vocab_size"] == "model.embed_tokens.weight"
    assert "rms_norm_eps" in notes["defaulted"] and "rope_theta" not in notes["defaulted"]
    assert out["num_key_value_heads"] == 2 and out["head_dim"] == 8
    # no lm_head among the shapes: the output table is the input table
    shapes = {k: s for k, s in lay.ckpt.items() if k != "lm_head.weight"}
    tied = infer_config("decoder_lm", shapes, {"model_type": "llama", "num_attention_heads": 4})
    assert tied["tie_word_embeddings"] is True and "tie_word_embeddings" in tied[NOTES]["read"]
    assert "tie_word_embeddings" not in tied[NOTES]["defaulted"] and "tie_word_embeddings" in notes["defaulted"]
    untied = infer_config("decoder_lm", shapes, {"model_type": "llama", "num_attention_heads": 4,
                                                 "tie_word_embeddings": False})
    assert untied[NOTES]["class"] == "LlamaModel"  # an untied head with no table: the file is the bare model
    assert notes["class"] == "LlamaForCausalLM"


def test_family_with_one_model_type_needs_no_model_type():
    cfg, conf, lay = _tiny("gpt2", "gpt2")
    out = infer_config("gpt2", lay.ckpt, {"n_head": 4})
    assert out["model_type"] == "gpt2" and out["n_layer"] == 2 and out["n_inner"] == 64


def test_a_head_count_that_divides_cannot_be_checked():
    """Documented limit: 2 heads of 16 fit the same shapes as 4 of 8 -- why the count is asked for, never guessed."""
    cfg, conf, lay = _tiny("bert", "bert")
    out = infer_config("bert", lay.ckpt, {"model_type": "bert", "num_attention_heads": 2})
    assert out["num_attention_heads"] == 2 and out["hidden_size"] == 32
    assert torch.Size(lay.ckpt["bert.encoder.layer.0.attention.self.query.weight"]) == (32, 32)


def test_a_model_type_without_a_table_needs_its_whole_config():
    """family ``any`` (no model_type of its own): a llama reads through the decoder table; a model_type with no
    table is checked on meta from a whole config, and refused without one."""
    cfg, conf, lay = _tiny("decoder_lm", "llama")
    out = infer_config("any", lay.ckpt, {"model_type": "llama", "num_attention_heads": 4})
    assert out["hidden_size"] == 32 and out[NOTES]["class"] == "LlamaForCausalLM"
    mamba = make_config({"model_type": "mamba", "hidden_size": 32, "state_size": 8, "num_hidden_layers": 2,
                         "vocab_size": 100})
    shapes = max(layouts(mamba), key=lambda lay: len(lay.ckpt)).ckpt
    with pytest.raises(ValueError) as e:
        infer_config("any", shapes, {"model_type": "mamba"})
    assert "no shape table" in _one_line(e) and "config.json beside the file" in str(e.value)
    whole = json.loads(mamba.to_json_string())
    assert infer_config("any", shapes, whole)["hidden_size"] == 32
    with pytest.raises(ValueError) as e:  # and checked: a whole config that does not fit the shapes
        infer_config("any", shapes, {**whole, "hidden_size": 48})
    assert "in the file" in _one_line(e)
