"""Family ``any`` on a model without attention ("Silent"): a tiny Mamba's catalog.

Nothing is attention unless its module path says so: Mamba's ``mixer.out_proj`` is not an
attention ``o``; the mixer's tensors are catalogued (role ``other`` / ``bias``, note
:data:`MIXER_NOTE`, with their layer), and one line, said once per process, names what is not
analysed. Built from a real ``MambaModel`` state dict (names and shapes as transformers writes them).
"""
import importlib
import warnings

import pytest
import torch
from transformers import MambaConfig, MambaModel

from geolip_lib import families
from geolip_lib.checkpoints import MIXER_NOTE, NotAnalysedWarning, UnclassifiedWeightsWarning

catalog_module = importlib.import_module("geolip_lib.families.catalog")  # the module (the package re-exports the function)

CFG = dict(model_type="mamba", hidden_size=32, state_size=8, num_hidden_layers=2, expand=2, conv_kernel=4,
           vocab_size=64)
ATTN = ("q", "k", "v", "o", "qkv")


@pytest.fixture(scope="module")
def mamba_state():
    torch.manual_seed(0)
    cfg = MambaConfig(**{k: v for k, v in CFG.items() if k != "model_type"})
    return MambaModel(cfg).state_dict()


@pytest.fixture()
def fresh_lines(monkeypatch):
    """Each test starts with no not-analysed line said yet (the set is process-wide by design)."""
    monkeypatch.setattr(catalog_module, "_SAID", set())


def _catalog(state, family="any"):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cat = families.catalog(state, config=CFG, family=family)
    return cat, rec


def test_no_attention_role_and_every_mixer_tensor_catalogued_with_its_layer(mamba_state, fresh_lines):
    cat, _ = _catalog(mamba_state)
    assert cat.family == "any" and not cat.has_attention and cat.attention_blocks() == []
    assert not [e.name for e in cat.entries if e.role in ATTN or e.attn is not None]
    mixer_names = {n for n in mamba_state if ".mixer." in n}
    assert {e.name for e in cat.mixers()} == mixer_names and len(mixer_names) == 2 * 9
    for e in cat.mixers():
        assert e.note == MIXER_NOTE and e.layer == int(e.name.split(".")[1])
        assert e.role == ("bias" if e.name.endswith(".bias") else "other")
    out_proj = next(e for e in cat.entries if e.name == "layers.0.mixer.out_proj.weight")
    assert out_proj.role == "other" and out_proj.shape == (32, 64)
    # the rest keeps its guessed role: embeddings, the layer norms
    assert {e.name: e.role for e in cat.entries if ".mixer." not in e.name} == {
        "embeddings.weight": "embed", "layers.0.norm.weight": "norm", "layers.1.norm.weight": "norm",
        "norm_f.weight": "norm"}
    assert cat.unclassified() == []  # recognised: not listed as unclassified either


def test_one_line_says_what_is_not_analysed_once(mamba_state, fresh_lines):
    lines = []
    for _ in range(3):  # a notebook builds the model's catalog, the twin's and the battery's
        _, rec = _catalog(mamba_state)
        lines += [str(w.message) for w in rec if issubclass(w.category, NotAnalysedWarning)]
        assert not [w for w in rec if issubclass(w.category, UnclassifiedWeightsWarning)]
    assert len(lines) == 1 and "\n" not in lines[0]
    cat, _ = _catalog(mamba_state)
    assert cat.not_analysed() == lines[0]
    for part in ("in_proj", "x_proj", "dt_proj", "out_proj", "conv1d", "A_log", "'mamba'", "18 tensors in 2 layers",
                 "not attention", "sparsity"):
        assert part in lines[0], part


def test_the_generic_fallback_does_not_make_attention_of_a_mixer(mamba_state, fresh_lines):
    cat, rec = _catalog(mamba_state, family="generic")
    assert cat.family == "generic" and not cat.has_attention
    assert not [e.name for e in cat.entries if e.role in ATTN]
    assert len(cat.mixers()) == 18


def test_attention_guesses_need_an_attention_path():
    """A GPT-Neo under ``any`` keeps q/k/v/o (its path says ``attn.attention``); the same leaf names outside
    an attention module are not attention (role other, listed as unclassified)."""
    from geolip_lib.checkpoints import TensorInfo
    from geolip_lib.checkpoints.guess import adapt, adapt_without_heads

    infos = {"h.0.attn.attention.q_proj.weight": TensorInfo((32, 32)),
             "h.0.attn.attention.out_proj.weight": TensorInfo((32, 32)),
             "h.0.proj.out_proj.weight": TensorInfo((32, 32)), "h.0.value_head.weight": TensorInfo((1, 32)),
             "h.0.mlp.c_fc.weight": TensorInfo((64, 32))}
    roles = {e.name: (e.role, e.attn, e.n_heads) for e in adapt_without_heads(infos, {})}
    assert roles == {"h.0.attn.attention.q_proj.weight": ("q", None, None),
                     "h.0.attn.attention.out_proj.weight": ("o", None, None),
                     "h.0.proj.out_proj.weight": ("other", None, None), "h.0.value_head.weight": ("other", None, None),
                     "h.0.mlp.c_fc.weight": ("mlp_in", None, None)}
    with_heads = {e.name: e.n_heads for e in adapt(infos, {"num_attention_heads": 4})}
    assert with_heads["h.0.attn.attention.q_proj.weight"] == 4 and with_heads["h.0.proj.out_proj.weight"] is None


def test_a_catalog_with_attention_says_nothing_is_left_out(fresh_lines):
    from geolip_lib.checkpoints import Catalog, Entry

    cat = Catalog(entries=[Entry("l.0.attn.q_proj.weight", "q", "decoder", "self", 0, (8, 8), n_heads=2, head_dim=4,
                                 n_kv_heads=2)], family="x", config={"model_type": "x"})
    assert cat.has_attention and cat.mixers() == [] and cat.not_analysed() == ""
