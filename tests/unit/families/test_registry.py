"""The family registry: one spec per family, params read it, sizes and accessors agree with the models."""
from __future__ import annotations

import pytest
import torch

from geolip_lib import families, models
from geolip_lib.families import FAMILIES, REGISTRY, FamilySpec, family_of_config, family_of_model_type, spec
from geolip_lib.params import ParamsError, load_model_params, model_names


def _tiny_models() -> dict:
    """family -> the first (sorted) ``params/models/tiny-*.yaml`` of that family."""
    out: dict = {}
    for name in (n for n in model_names() if n.startswith("tiny-") and not n.startswith(families.TINY_TYPE_PREFIX)):
        p = load_model_params(name)
        if p.source == "tiny":
            out.setdefault(p.family, name)
    return out


#: one tiny model per family (params/models/tiny-*.yaml)
TINY = _tiny_models()


def test_every_family_has_a_spec_and_a_tiny_model():
    assert TINY["decoder_lm"] == "tiny-qwen" and TINY["t5"] == "tiny-t5"
    assert set(FAMILIES) == set(REGISTRY) == set(TINY), "every family needs a spec and a tiny params file"
    for name in FAMILIES:
        s = spec(name)
        assert isinstance(s, FamilySpec) and s.name == name
        assert s.stacks and s.sizes and callable(s.adapt)
        assert s.tiny_defaults
        assert s.hf == (s.auto_class is not None)
        assert (s.tiny_tokenizer is not None) == s.is_text
        with pytest.raises(Exception):  # frozen
            s.name = "x"


def test_unknown_family_is_one_line():
    with pytest.raises(ValueError) as e:
        spec("resnet")
    msg = str(e.value)
    assert "\n" not in msg and "resnet" in msg and all(f in msg for f in FAMILIES)


def test_params_take_the_family_list_from_the_registry():
    with pytest.raises(ParamsError) as e:
        load_model_params({"name": "m", "family": "resnet", "source": "tiny"})
    msg = str(e.value)
    assert "\n" not in msg and "key 'family'" in msg and "resnet" in msg and all(f in msg for f in FAMILIES)
    assert load_model_params({"name": "m", "family": "bert", "source": "tiny"}).family == "bert"


def test_model_types_and_configs():
    assert family_of_model_type("qwen3") == "decoder_lm"
    assert family_of_model_type("roberta") == "bert"
    assert family_of_model_type("resnet") is None
    assert family_of_config({"model_type": "t5", "feed_forward_proj": "gated-gelu"}) == "t5_v1_1"
    assert family_of_config({"model_type": "t5"}) == "t5"
    assert family_of_config({"model_cfg": {"vision_cfg": {}, "text_cfg": {}}}) == "open_clip"
    assert family_of_config({}) is None
    for name, s in REGISTRY.items():  # no model_type claimed twice, except T5 / T5 v1.1 (told apart by `matches`)
        for other in REGISTRY.values():
            if other is not s and set(s.model_types) & set(other.model_types):
                assert s.matches is not None and other.matches is not None


@pytest.fixture(scope="module", params=sorted(TINY))
def tiny(request):
    return request.param, models.load(TINY[request.param])


def test_tiny_model_loads_with_its_family(tiny):
    fam, lm = tiny
    assert lm.family == fam and lm.spec is spec(fam)
    assert lm.stacks == spec(fam).stacks and lm.is_text == spec(fam).is_text
    assert lm.is_generative == spec(fam).is_generative


def test_sizes_match_the_config(tiny):
    fam, lm = tiny
    s = lm.spec.sizes_of(lm.config)
    if lm.spec.hf:
        c = lm.config.get_text_config()  # CLIP / SigLIP: the text tower's sizes
        assert s.d_model == c.hidden_size  # T5: attribute_map d_model -> hidden_size
        assert s.n_heads == c.num_attention_heads
        assert s.n_layers == c.num_hidden_layers
        assert s.head_dim == getattr(c, "d_kv", None) or getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        kv = getattr(c, "num_key_value_heads", None) or getattr(c, "num_kv_heads", None)  # Falcon: num_kv_heads
        assert s.n_kv_heads == (kv or c.num_attention_heads)
        blocks = lm.spec.locate_blocks(lm.model, lm.stacks[0])[1] if lm.spec.locate_blocks else None
        if blocks is not None:
            assert len(blocks) == s.n_layers
    else:
        t = lm.config["model_cfg"]["text_cfg"]
        assert (s.d_model, s.n_layers, s.n_heads) == (t["width"], t["layers"], t["heads"])
        assert s.head_dim * s.n_heads == s.d_model
    hs = lm.hidden_states(["a cat sat"]) if lm.is_text else lm.hidden_states(torch.zeros(1, 3, lm.image_size, lm.image_size))
    assert len(hs.layers) == s.n_layers + 1 and hs.layers[-1].shape[-1] == s.d_model


def test_accessors_return_the_right_shapes(tiny):
    fam, lm = tiny
    s = lm.spec.sizes_of(lm.config)
    E = lm.input_embeddings()
    width = getattr(lm.config, "embedding_size", None) if fam == "albert" else None  # factorised embedding
    assert E.dtype == torch.float32 and E.ndim == 2 and E.shape[1] == (width or s.d_model)
    if lm.is_text:
        assert E.shape[0] >= len(lm.tokenizer) or fam == "open_clip"
    O = lm.output_embeddings()
    assert O is None or O.shape == E.shape
    assert (O is not None) == (fam in ("t5_v1_1", "gpt_neox", "gptj"))  # the untied tiny models
    if lm.spec.encoder is not None:
        enc = lm.tokenize(["a cat sat", "two"])
        h = lm.spec.encode(lm.model, enc["input_ids"], enc["attention_mask"])
        assert tuple(h.shape) == (2, enc["input_ids"].shape[1], s.d_model)
    if lm.spec.vision_tables is not None:
        tables = lm.spec.vision_tables(lm.model)
        assert set(tables) == {"position", "patch"}


def test_catalog_detects_the_family_from_the_files(tiny):
    from geolip_lib.families import catalog

    fam, lm = tiny
    cat = catalog(lm.weights_dir)
    if fam == "any":  # no family knows the model_type: the catalog falls back to the generic guesses
        assert cat.family == "generic" and not catalog(lm).attention_blocks()
        return
    assert cat.family == fam
    assert len(cat.attention_blocks()) > 0


def test_objectives_and_prompts_come_from_the_spec():
    from geolip_lib.lexical.representations import prompt_for
    from geolip_lib.modulators.objectives import LOSSES, OBJECTIVES

    for name, s in REGISTRY.items():
        assert prompt_for(name) == s.prompt
        if s.objective:
            assert OBJECTIVES[name] is LOSSES[s.objective]
        else:
            assert name not in OBJECTIVES
