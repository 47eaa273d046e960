"""models.load on every tiny family, MiniLM (real weights), and the local / open_clip sources."""
from __future__ import annotations

import functools
import json

import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open

from geolip_lib import models
from geolip_lib.models.loading import STACKS

pytestmark = pytest.mark.integration

TINY = {  # name -> family
    "tiny-t5": "t5", "tiny-t5-v1_1": "t5_v1_1", "tiny-bert": "bert", "tiny-dinov2": "dinov2",
    "tiny-open-clip": "open_clip", "tiny-qwen": "decoder_lm", "tiny-qwen-wide": "decoder_lm",
}
TEXTS = ["the cat sat on the mat", "dogs bark", "seven red apples and 12 green pears fell down"]


@functools.lru_cache(maxsize=None)
def _load(name):
    return models.load(name)


def _images(lm, b=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, 3, lm.image_size, lm.image_size, generator=g)


def _n_layers(lm, stack):
    c = lm.config
    if lm.family in ("t5", "t5_v1_1"):
        return c.num_layers if stack == "encoder" else c.num_decoder_layers
    if lm.family == "open_clip":
        cfg = c["model_cfg"]["vision_cfg" if stack == "vision" else "text_cfg"]
        return cfg["layers"]
    return c.num_hidden_layers


def _inputs(lm, stack):
    return _images(lm) if stack == "vision" else TEXTS


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_model_loads_with_the_contract(name):
    lm = _load(name)
    assert lm.name == name and lm.family == TINY[name] and lm.params.name == name
    assert not lm.model.training
    assert lm.is_text == (lm.family != "dinov2")
    assert (lm.tokenizer is None) == (lm.family == "dinov2")
    assert lm.device.type == "cpu"
    E = lm.input_embeddings()
    assert E.dtype == torch.float32 and E.device.type == "cpu" and E.ndim == 2
    if lm.is_text:
        assert E.shape[0] == len(lm.tokenizer)
    else:  # DINOv2: position table, CLS + patches
        assert E.shape[0] == 1 + (lm.image_size // lm.config.patch_size) ** 2
    E[0, 0] += 1.0  # a copy: the model is untouched
    assert not torch.equal(E, lm.input_embeddings())


@pytest.mark.parametrize("name", sorted(TINY))
def test_hidden_states_layer_count_and_shapes(name):
    lm = _load(name)
    D = lm.input_embeddings().shape[1]
    for stack in STACKS[lm.family]:
        hs = lm.hidden_states(_inputs(lm, stack), stack=stack)
        assert len(hs.layers) == _n_layers(lm, stack) + 1
        B, S = hs.mask.shape
        assert B == 3
        for h in hs.layers:
            assert h.shape == (B, S, D) and h.dtype == torch.float32 and torch.isfinite(h).all()
        if stack == "vision":
            assert hs.mask.all()
        else:
            assert hs.mask.sum(1).min() < hs.mask.sum(1).max()  # padding is marked
        # layers really change the representation
        assert not torch.allclose(hs.layers[0], hs.layers[-1])


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-t5", "tiny-qwen", "all-minilm-l6-v2"])
def test_hidden_states_do_not_depend_on_batching(name):
    lm = _load(name)
    for stack in lm.stacks:
        a = lm.hidden_states(TEXTS, stack=stack, batch_size=1)
        b = lm.hidden_states(TEXTS, stack=stack, batch_size=8)
        assert torch.equal(a.mask, b.mask)
        m = a.mask.bool()
        for x, y in zip(a.layers, b.layers):
            torch.testing.assert_close(x[m], y[m], atol=1e-4, rtol=1e-4)


def test_embedding_layer_is_the_token_embedding_for_bert_free_models():
    # T5 applies no scaling/position to its input: layer 0 == embedding lookup
    lm = _load("tiny-t5")
    ids = lm.tokenize(TEXTS)["input_ids"]
    hs = lm.hidden_states(TEXTS, stack="encoder")
    torch.testing.assert_close(hs.layers[0], lm.input_embeddings()[ids])


def test_unknown_stack_and_bad_texts_are_value_errors():
    lm = _load("tiny-bert")
    with pytest.raises(ValueError, match="stack"):
        lm.hidden_states(TEXTS, stack="decoder")
    with pytest.raises(ValueError, match="texts"):
        lm.hidden_states("a single string")
    with pytest.raises(ValueError, match="inputs: stack 'vision'.*takes images"):
        _load("tiny-dinov2").hidden_states(TEXTS)


@pytest.mark.parametrize("name", sorted(TINY))
def test_random_init_same_shapes_different_values(name):
    lm = _load(name)
    r = lm.random_init()
    assert r.family == lm.family and r.tokenizer is lm.tokenizer and not r.model.training
    sa, sb = lm.model.state_dict(), r.model.state_dict()
    assert sa.keys() == sb.keys()
    assert all(sa[k].shape == sb[k].shape for k in sa)
    assert not torch.equal(lm.input_embeddings(), r.input_embeddings())
    # seeded: the same seed gives the same baseline, another seed another one
    assert torch.equal(r.input_embeddings(), lm.random_init().input_embeddings())
    assert not torch.equal(r.input_embeddings(), lm.random_init(seed=123).input_embeddings())
    assert (lm.output_embeddings() is None) == (r.output_embeddings() is None)
    # its weights can be streamed too
    files = list(r.weights_dir.glob("*.safetensors"))
    assert files


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_weights_are_real_safetensors_files(name):
    lm = _load(name)
    files = sorted(lm.weights_dir.glob("*.safetensors"))
    from geolip_lib.models.tokenizers import cache_root

    assert files and lm.weights_dir.parent == cache_root() / "tiny_models"
    sd = lm.model.state_dict()
    with safe_open(str(files[0]), "pt") as f:
        keys = list(f.keys())
        assert len(keys) >= 10
        for k in keys[:5]:
            torch.testing.assert_close(f.get_tensor(k), sd[k].cpu())
    meta = json.loads((lm.weights_dir / "geolip_tiny.json").read_text())
    assert meta["name"] == name and meta["seed"] == lm.params.seed


def test_tiny_build_is_deterministic(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    a = models.load("tiny-bert")
    assert str(a.weights_dir).startswith(str(tmp_path))
    import shutil
    shutil.rmtree(a.weights_dir)
    b = models.load("tiny-bert")
    for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)
    assert torch.equal(a.input_embeddings(), _load("tiny-bert").input_embeddings())


def test_t5_families_differ_in_ffn_and_tying():
    t5, v11 = _load("tiny-t5"), _load("tiny-t5-v1_1")
    assert not t5.config.is_gated_act and v11.config.is_gated_act
    assert t5.output_embeddings() is None
    U = v11.output_embeddings()
    assert U is not None and U.shape == v11.input_embeddings().shape
    assert not torch.equal(U, v11.input_embeddings())
    with safe_open(str(next(v11.weights_dir.glob("*.safetensors"))), "pt") as f:
        assert {"shared.weight", "lm_head.weight"} <= set(f.keys())


def test_tiny_t5_unigram_tokenizer_has_t5_specials():
    tok = _load("tiny-t5").tokenizer
    assert (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2)
    assert tok.convert_tokens_to_ids("<extra_id_0>") == len(tok) - 1
    assert tok.convert_tokens_to_ids("<extra_id_99>") == len(tok) - 100
    ids = tok("the cat")["input_ids"]
    assert ids[-1] == tok.eos_token_id and tok.unk_token_id not in ids
    assert len(tok("7")["input_ids"]) == 2  # a number is one piece (+ </s>)
    assert tok.decode(ids, skip_special_tokens=True) == "the cat"


def test_tiny_qwen_is_gqa_and_shares_vocab_with_wide():
    q, w = _load("tiny-qwen"), _load("tiny-qwen-wide")
    for lm in (q, w):
        assert lm.config.num_key_value_heads < lm.config.num_attention_heads
        assert "full_attention" in lm.config.layer_types
        k = lm.model.model.layers[lm.config.layer_types.index("full_attention")].self_attn.k_proj.weight
        assert k.shape[0] == lm.config.num_key_value_heads * lm.config.head_dim
    assert q.tokenizer.get_vocab() == w.tokenizer.get_vocab()
    assert q.input_embeddings().shape[0] == w.input_embeddings().shape[0]
    assert q.input_embeddings().shape[1] < w.input_embeddings().shape[1]


def test_open_clip_hooks_match_encode_text_and_encode_image():
    import open_clip

    lm = _load("tiny-open-clip")
    m = lm.model
    ids = lm.tokenize(TEXTS)["input_ids"]
    ctx = lm.config["model_cfg"]["text_cfg"]["context_length"]
    ref_ids = open_clip.tokenize(TEXTS, context_length=ctx)
    torch.testing.assert_close(ids * lm.tokenize(TEXTS)["attention_mask"], ref_ids)
    hs = lm.hidden_states(TEXTS, stack="text")
    x = m.ln_final(hs.layers[-1])
    pooled = x[torch.arange(len(TEXTS)), ids.argmax(-1)] @ m.text_projection
    torch.testing.assert_close(pooled, m.encode_text(ref_ids).detach(), atol=1e-5, rtol=1e-5)
    # layer 0 is token + position embedding
    torch.testing.assert_close(hs.layers[0], m.token_embedding(ids) + m.positional_embedding)

    img = lm.preprocess(_images(lm))
    hv = lm.hidden_states(img)  # images -> vision by default
    assert len(hv.layers) == lm.config["model_cfg"]["vision_cfg"]["layers"] + 1
    v = m.visual
    feat = v.ln_post(hv.layers[-1])[:, 0] @ v.proj
    torch.testing.assert_close(feat, m.encode_image(img).detach(), atol=1e-5, rtol=1e-5)


def test_vision_accepts_uint8_and_resizes():
    lm = _load("tiny-dinov2")
    u8 = (torch.rand(2, 40, 48, 3) * 255).to(torch.uint8)
    hs = lm.hidden_states(u8)
    assert hs.layers[0].shape == (2, 1 + (lm.image_size // 8) ** 2, 32)


def test_dtype_override_keeps_float32_accessors():
    lm = models.load("tiny-bert", dtype="bfloat16")
    assert lm.dtype == torch.bfloat16
    E = lm.input_embeddings()
    assert E.dtype == torch.float32
    hs = lm.hidden_states(TEXTS[:2])
    assert hs.layers[-1].dtype == torch.float32
    with safe_open(str(next(lm.weights_dir.glob("*.safetensors"))), "pt") as f:
        assert f.get_tensor("embeddings.word_embeddings.weight").dtype == torch.bfloat16


def _mean_pool(lm, texts):
    hs = lm.hidden_states(texts)
    m = hs.mask.unsqueeze(-1).float()
    return F.normalize((hs.layers[-1] * m).sum(1) / m.sum(1), dim=-1)


def test_minilm_is_real_and_gives_a_real_embedding():
    lm = _load("all-minilm-l6-v2")
    assert lm.family == "bert" and lm.params.source == "package"
    assert lm.input_embeddings().shape == (30522, 384)
    assert len(lm.hidden_states(TEXTS).layers) == 7
    assert any(lm.weights_dir.glob("*.safetensors"))
    e = _mean_pool(lm, ["a dog is running in the park", "a puppy runs across the grass",
                        "the stock market fell sharply today", "interest rates and inflation rose"])
    sim = e @ e.T
    # paraphrases are closer than unrelated sentences: a trained sentence encoder
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[2, 3] > sim[1, 3] + 0.2
    # and the random-init baseline does not separate them
    r = _mean_pool(lm.random_init(), ["a dog is running in the park", "a puppy runs across the grass",
                                      "the stock market fell sharply today"])
    rs = r @ r.T
    assert abs(float(rs[0, 1] - rs[0, 2])) < float(sim[0, 1] - sim[0, 2])


def test_hub_style_saved_model_loads_via_source_local(tmp_path):
    src = _load("tiny-t5-v1_1")
    src.model.save_pretrained(tmp_path)
    src.tokenizer.save_pretrained(tmp_path)
    for source in ("local", "hub"):  # a hub entry with local_dir never touches the hub
        lm = models.load({"name": "saved", "family": "t5_v1_1", "source": source, "id": "google/none",
                          "local_dir": str(tmp_path)})
        assert lm.weights_dir == tmp_path
        assert torch.equal(lm.input_embeddings(), src.input_embeddings())
        assert torch.equal(lm.output_embeddings(), src.output_embeddings())
        a = lm.hidden_states(TEXTS, stack="decoder")
        b = src.hidden_states(TEXTS, stack="decoder")
        torch.testing.assert_close(a.layers[-1], b.layers[-1])


def test_open_clip_local_dir_loads(tmp_path):
    src = _load("tiny-open-clip")
    lm = models.load({"name": "oc", "family": "open_clip", "source": "open_clip", "local_dir": str(src.weights_dir)})
    assert torch.equal(lm.input_embeddings(), src.input_embeddings())
    assert lm.weights_dir == src.weights_dir


def test_qwen3_5_vlm_checkpoint_layout_loads_as_a_causal_lm(tmp_path):
    """Real Qwen3.5 checkpoints are Qwen3_5ForConditionalGeneration (model.language_model.*, model.visual.*)."""
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    q = _load("tiny-qwen")
    text = {k: v for k, v in q.config.to_dict().items() if k not in ("architectures", "model_type", "dtype")}
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32, patch_size=8,
                  spatial_merge_size=2, temporal_patch_size=2)
    torch.manual_seed(0)
    vlm = Qwen3_5ForConditionalGeneration(Qwen3_5Config(text_config=text, vision_config=vision))
    vlm.save_pretrained(tmp_path)
    q.tokenizer.save_pretrained(tmp_path)
    lm = models.load({"name": "q", "family": "decoder_lm", "source": "local", "local_dir": str(tmp_path)})
    assert type(lm.model).__name__ == "Qwen3_5ForCausalLM"
    assert torch.equal(lm.input_embeddings(), vlm.get_input_embeddings().weight.float())
    assert len(lm.hidden_states(TEXTS).layers) == q.config.num_hidden_layers + 1


def test_unigram_tokenizer_rebuild_is_identical(tmp_path, monkeypatch):
    from geolip_lib.models.tokenizers import tokenizer_dir

    ref = (tokenizer_dir("unigram-wordnet") / "tokenizer.json").read_text()
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path))
    d = tokenizer_dir("unigram-wordnet")
    assert str(d).startswith(str(tmp_path))
    assert (d / "tokenizer.json").read_text() == ref


def test_open_clip_in_bfloat16_runs_images_in_the_load_dtype():
    """open_clip at low precision keeps embeddings and norms in float32; the images must meet its
    conv weights in the load dtype (the first parameter's dtype would be float32)."""
    lm = models.load("tiny-open-clip", dtype="bfloat16")
    assert lm.dtype == torch.bfloat16 and lm.model.visual.conv1.weight.dtype == torch.bfloat16
    x = torch.rand(2, 3, lm.image_size, lm.image_size)
    hs = lm.hidden_states(x)
    ref = models.load("tiny-open-clip").hidden_states(x)
    assert len(hs.layers) == len(ref.layers) and all(bool(torch.isfinite(h).all()) for h in hs.layers)
    rel = float((hs.layers[-1] - ref.layers[-1]).norm() / ref.layers[-1].norm())
    assert rel < 0.1, rel
