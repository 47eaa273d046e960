"""The MPNet family's catalog (``geolip_lib/families/mpnet.py``) on real transformers state dicts.

Names and shapes as ``MPNetForMaskedLM`` / ``MPNetModel`` write them (all-mpnet-base-v2 is an
``MPNetModel`` saved without the ``mpnet.`` prefix): q/k/v/o of every layer, the encoder's one
relative position bias table as ``pos_bias`` (and it is the table the encoder's own
``compute_position_bias`` indexes), nothing left unclassified, the scores' relative bias named
as left out of W_Q^T W_K.
"""
import warnings

import pytest
import torch
from transformers import MPNetConfig, MPNetForMaskedLM, MPNetModel

from geolip_lib import families
from geolip_lib.checkpoints import TensorInfo, UnclassifiedWeightsWarning
from geolip_lib.families import catalog
from geolip_lib.families.mpnet import adapt
from geolip_lib.weights import TensorStore

N_LAYERS, D, H = 3, 32, 4
CFG = MPNetConfig(hidden_size=D, num_hidden_layers=N_LAYERS, num_attention_heads=H, intermediate_size=48,
                  vocab_size=64, max_position_embeddings=40, relative_attention_num_buckets=32)


@pytest.fixture(scope="module")
def mlm():
    torch.manual_seed(0)
    return MPNetForMaskedLM(CFG).eval()


def _infos(state) -> dict:
    return {k: TensorInfo(tuple(v.shape)) for k, v in state.items()}


def _catalog(state, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnclassifiedWeightsWarning)  # nothing left unclassified
        return catalog(state, config=CFG, **kw)


def test_the_family_is_found_by_model_type_and_names_the_relative_bias():
    assert families.family_of_model_type("mpnet") == "mpnet" and families.family_of_config(CFG) == "mpnet"
    s = families.spec("mpnet")
    assert s.left_out_of("mpnet") == ("relative bias",)
    assert "relative-position bias" in s.qk_statement and "leaves the relative bias" in s.qk_statement
    sz = s.sizes_of(CFG)
    assert (sz.d_model, sz.n_layers, sz.n_heads, sz.head_dim, sz.n_kv_heads) == (D, N_LAYERS, H, D // H, H)


def test_masked_lm_catalog_has_q_k_v_o_per_layer_and_one_shared_position_bias(mlm):
    state = mlm.state_dict()
    cat = _catalog(state)
    assert cat.family == "mpnet"
    # every tensor has an entry; the MLM decoder is tied to the word table and its bias to lm_head.bias (stored once)
    assert set(state) - {e.key for e in cat.entries} == {"lm_head.decoder.weight", "lm_head.decoder.bias"}
    roles = {(e.role, e.layer) for e in cat.matrices()}
    assert roles == {(r, i) for r in ("q", "k", "v", "o", "mlp_in", "mlp_out") for i in range(N_LAYERS)}
    for i in range(N_LAYERS):
        for r in ("q", "k", "v", "o"):
            (e,) = cat.select(role=r, layer=i)
            assert e.name == f"mpnet.encoder.layer.{i}.attention.attn.{r}.weight"
            assert (e.stack, e.attn, e.shape, e.n_heads, e.head_dim) == ("encoder", "self", (D, D), H, D // H)
    assert {e.shape for e in cat.select(role="mlp_in")} == {(48, D)}
    assert {e.shape for e in cat.select(role="mlp_out")} == {(D, 48)}
    blocks = cat.attention_blocks()
    assert [(b.stack, b.attn, b.layer, b.n_heads, b.head_dim, b.n_kv_heads) for b in blocks] == \
        [("encoder", "self", i, H, D // H, H) for i in range(N_LAYERS)]
    assert all(set(b.biases) == {"q", "k", "v", "o"} for b in blocks)
    assert abs(blocks[0].scale - (D // H) ** -0.5) < 1e-12
    (pb,) = cat.select(role="pos_bias")
    assert (pb.name, pb.stack, pb.attn, pb.layer, pb.shape, pb.n_heads) == \
        ("mpnet.encoder.relative_attention_bias.weight", "encoder", "self", None, (32, H), H)
    # 2 norms a layer + the embeddings' LayerNorm; word and position tables; the tied MLM decoder
    assert len(cat.select(role="norm")) == 2 * N_LAYERS + 1
    assert sorted(e.name for e in cat.select(role="embed")) == \
        ["mpnet.embeddings.position_embeddings.weight", "mpnet.embeddings.word_embeddings.weight"]
    assert not cat.select(role="unembed")  # tied
    untied = {e.name: e for e in adapt(_infos(state), CFG.to_dict())}  # the rules see every name, tied or not
    assert (untied["lm_head.decoder.weight"].role, untied["lm_head.decoder.bias"].note) == ("unembed", "task head")
    others = [e for e in cat.entries if e.role == "other"]
    assert others and all(e.note == "task head" and e.name.startswith("lm_head.") for e in others)


def test_the_pos_bias_entry_is_the_table_the_encoder_adds_in_every_layer(mlm, tmp_path):
    """The stored table, indexed by the encoder's own buckets, is the (heads, S, S) bias every layer receives."""
    mlm.save_pretrained(tmp_path)
    store = TensorStore(tmp_path)
    (pb,) = catalog(store, config=CFG).select(role="pos_bias")
    T = store.get(pb, torch.float32)  # (buckets, heads)
    S = 11
    pos = torch.arange(S)
    buckets = mlm.mpnet.encoder.relative_position_bucket(pos[None, :] - pos[:, None])  # j - i
    with torch.no_grad():
        ref = mlm.mpnet.encoder.compute_position_bias(torch.zeros(1, S, D))[0]  # (heads, S, S)
    assert torch.equal(T[buckets].permute(2, 0, 1), ref)
    assert ref.std() > 0  # a random table: the comparison has teeth


def test_sentence_transformers_names_without_prefix_and_the_pooler():
    """all-mpnet-base-v2 stores an ``MPNetModel`` with no ``mpnet.`` prefix; its pooler is a task head."""
    torch.manual_seed(1)
    state = MPNetModel(CFG).state_dict()
    assert "encoder.layer.0.attention.attn.q.weight" in state
    cat = _catalog(state)
    assert len(cat.attention_blocks()) == N_LAYERS and len(cat.select(role="pos_bias")) == 1
    assert {e.name for e in cat.entries if e.role == "other"} == {"pooler.dense.weight", "pooler.dense.bias"}
    assert not cat.select(role="unembed")


def test_a_table_with_the_wrong_number_of_heads_is_one_line_naming_it(mlm):
    state = dict(mlm.state_dict())
    state["mpnet.encoder.relative_attention_bias.weight"] = torch.zeros(32, H + 1)
    with pytest.raises(ValueError) as ei:
        adapt(_infos(state), CFG.to_dict())
    msg = str(ei.value)
    assert "\n" not in msg and "relative_attention_bias" in msg and f"(num_buckets, {H})" in msg
