"""Adapters on tiny models of every family: roles, shapes, and W_Q·W_Kᵀ vs the model's own attention."""
import warnings

import pytest
import torch

from geolip_lib.checkpoints import UnclassifiedWeightsWarning
from geolip_lib.families import catalog
from geolip_lib.weights import TensorStore

pytestmark = pytest.mark.integration


def _rescale(model, std=0.3, seed=0):
    """Random weights large enough that attention is far from uniform."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 2 and "embed" not in n and "relative_attention_bias" not in n:
                p.copy_(torch.randn(p.shape, generator=g) * std / p.shape[1] ** 0.5 * 4)
    return model


def _save(model, tmp_path):
    model.save_pretrained(tmp_path)
    return tmp_path


def _check_probs(scores, probs, mask=None):
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    ours = torch.softmax(scores, -1)
    assert probs.std() > 1e-3  # attention is not uniform: the comparison has teeth
    torch.testing.assert_close(ours, probs.double(), atol=2e-5, rtol=1e-4)


def _capture_input(module):
    box = {}

    def pre(_m, args, kwargs):
        box["x"] = (args[0] if args else kwargs["hidden_states"]).detach().double()
    h = module.register_forward_pre_hook(pre, with_kwargs=True)
    return box, h


def test_bert_catalog_and_scores(tmp_path):
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=2,
                     vocab_size=60, attn_implementation="eager")
    model = _rescale(BertModel(cfg)).eval()
    d = _save(model, tmp_path)
    cat = catalog(d)
    assert cat.family == "bert"
    roles = {(e.role, e.layer) for e in cat.matrices()}
    assert roles == {(r, i) for r in ("q", "k", "v", "o", "mlp_in", "mlp_out") for i in (0, 1)}
    assert {e.shape for e in cat.select(role="mlp_in")} == {(48, 32)}
    blk = cat.attention_blocks()[0]
    assert (blk.stack, blk.attn, blk.layer, blk.n_heads, blk.head_dim, blk.n_kv_heads) == ("encoder", "self", 0, 4, 8, 4)
    store = TensorStore(d)
    box, h = _capture_input(model.encoder.layer[0].attention.self)
    ids = torch.randint(0, 60, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    h.remove()
    x = box["x"][0]
    Wq, Wk = blk.weight(store, "q", torch.float64), blk.weight(store, "k", torch.float64)
    bq, bk = store.get(blk.biases["q"], torch.float64), store.get(blk.biases["k"], torch.float64)
    for hd in range(4):
        q = x @ Wq[blk.q_rows(hd)].T + bq[blk.q_rows(hd)]
        k = x @ Wk[blk.k_rows(hd)].T + bk[blk.k_rows(hd)]
        _check_probs(blk.scale * q @ k.T, out.attentions[0][0, hd])
    # without biases the bilinear form W_Qᵀ W_K gives the scores: same check through it
    M = Wq[blk.q_rows(1)].T @ Wk[blk.k_rows(1)]
    assert torch.allclose(x @ M @ x.T, (x @ Wq[blk.q_rows(1)].T) @ (x @ Wk[blk.k_rows(1)].T).T)


def test_t5_and_t5_v1_1_catalog_and_scores(tmp_path):
    from transformers import T5Config, T5ForConditionalGeneration

    for ff, fam in (("relu", "t5"), ("gated-gelu", "t5_v1_1")):
        cfg = T5Config(d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2, num_decoder_layers=2, vocab_size=60,
                       feed_forward_proj=ff, attn_implementation="eager")
        model = _rescale(T5ForConditionalGeneration(cfg)).eval()
        d = _save(model, tmp_path / fam)
        cat = catalog(d)
        assert cat.family == fam
        keys = {(b.stack, b.attn) for b in cat.attention_blocks()}
        assert keys == {("encoder", "self"), ("decoder", "self"), ("decoder", "cross")}
        assert len(cat.select(role="pos_bias")) == 2
        assert len(cat.select(role="mlp_gate")) == (4 if fam == "t5_v1_1" else 0)
        assert len(cat.select(role="mlp_in")) == 4 and len(cat.select(role="mlp_out")) == 4
        blk = cat.attention_blocks()[0]
        assert blk.scale == 1.0 and (blk.stack, blk.layer) == ("encoder", 0)
        store = TensorStore(d)
        sa = model.encoder.block[0].layer[0].SelfAttention
        box, h = _capture_input(sa)
        ids = torch.randint(0, 60, (1, 7), generator=torch.Generator().manual_seed(2))
        with torch.no_grad():
            out = model(input_ids=ids, decoder_input_ids=ids[:, :3], output_attentions=True)
            bias = sa.compute_bias(7, 7)[0].double()  # (heads, S, S) from the same table
        h.remove()
        x = box["x"][0]
        Wq, Wk = blk.weight(store, "q", torch.float64), blk.weight(store, "k", torch.float64)
        for hd in range(4):
            M = Wq[blk.q_rows(hd)].T @ Wk[blk.k_rows(hd)]
            _check_probs(x @ M @ x.T + bias[hd], out.encoder_attentions[0][0, hd])


def test_decoder_lm_gqa_mapping_and_scores(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, intermediate_size=48,
                      num_hidden_layers=2, vocab_size=60, attn_implementation="eager")
    model = _rescale(LlamaForCausalLM(cfg)).eval()
    d = _save(model, tmp_path)
    cat = catalog(d)
    blk = cat.attention_blocks()[0]
    assert (blk.n_heads, blk.n_kv_heads, blk.group) == (4, 2, 2)
    assert [blk.kv_head(h) for h in range(4)] == [0, 0, 1, 1]
    assert cat.select(role="k")[0].shape == (16, 32)
    assert len(cat.select(role="mlp_gate")) == 2
    store = TensorStore(d)
    box, h = _capture_input(model.model.layers[0].self_attn)
    ids = torch.randint(0, 60, (1, 8), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():  # position_ids = 0: RoPE is the identity, the bilinear form is the score
        out = model(ids, position_ids=torch.zeros_like(ids), output_attentions=True)
    h.remove()
    x = box["x"][0]
    Wq, Wk = blk.weight(store, "q", torch.float64), blk.weight(store, "k", torch.float64)
    causal = torch.triu(torch.ones(8, 8, dtype=torch.bool), 1)
    for hd in range(4):
        M = Wq[blk.q_rows(hd)].T @ Wk[blk.k_rows(hd)]
        _check_probs(blk.scale * x @ M @ x.T, out.attentions[0][0, hd], causal)
    # the wrong mapping (h % n_kv) would not reproduce head 1
    M_wrong = Wq[blk.q_rows(1)].T @ Wk[8:16]
    assert not torch.allclose(torch.softmax(blk.scale * (x @ M_wrong @ x.T).masked_fill(causal, float("-inf")), -1),
                              out.attentions[0][0, 1].double(), atol=1e-3)


def test_qwen3_5_gated_query_and_linear_layers(tmp_path):
    from geolip_lib import models

    lm = models.load("tiny-qwen")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnclassifiedWeightsWarning)  # every 2-D tensor is accounted for
        cat = catalog(lm)
    blocks = cat.attention_blocks()
    assert [b.layer for b in blocks] == [1, 3]  # full-attention layers only
    b = blocks[0]
    store = TensorStore(lm)
    raw = store.get(b.q)
    assert raw.shape[0] == 2 * b.n_heads * b.head_dim and b.q.head_stride == 2 * b.head_dim
    W = b.weight(store, "q")
    assert W.shape == (b.n_heads * b.head_dim, 32)
    assert torch.equal(W[b.q_rows(1)], raw[2 * b.head_dim: 3 * b.head_dim])
    assert b.qk_norm.keys() == {"q", "k"}


def test_open_clip_fused_split_matches_multihead_attention(tmp_path):
    from open_clip.model import CLIP
    from safetensors.torch import save_model

    cfg = dict(embed_dim=16, vision_cfg=dict(image_size=32, patch_size=16, width=32, layers=2, head_width=8),
               text_cfg=dict(context_length=8, vocab_size=50, width=24, heads=3, layers=2))
    model = _rescale(CLIP(**cfg)).eval()
    save_model(model, str(tmp_path / "open_clip_model.safetensors"))
    cat = catalog(tmp_path, config={"model_cfg": cfg})
    assert cat.family == "open_clip"
    blocks = cat.attention_blocks()
    assert {(b.stack, b.n_heads, b.head_dim) for b in blocks} == {("vision", 4, 8), ("text", 3, 8)}
    assert len(blocks) == 4 and len(cat.select(role="qkv")) == 4
    store = TensorStore(tmp_path)
    vb = next(b for b in blocks if b.stack == "vision" and b.layer == 1)
    mha = model.visual.transformer.resblocks[1].attn
    assert torch.equal(vb.weight(store, "k"), mha.in_proj_weight[32:64].detach())
    x = torch.randn(2, 5, 32, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    with torch.no_grad():
        xf = x.float() if mha.batch_first else x.float().transpose(0, 1)
        _, probs = mha(xf, xf, xf, need_weights=True, average_attn_weights=False)
    Wq, Wk = vb.weight(store, "q", torch.float64), vb.weight(store, "k", torch.float64)
    bq, bk = store.get(vb.biases["q"], torch.float64), store.get(vb.biases["k"], torch.float64)
    for hd in range(4):
        q = x[0] @ Wq[vb.q_rows(hd)].T + bq[vb.q_rows(hd)]
        k = x[0] @ Wk[vb.k_rows(hd)].T + bk[vb.k_rows(hd)]
        _check_probs(vb.scale * q @ k.T, probs[0, hd])


def test_dinov2_roles():
    from geolip_lib import models

    lm = models.load("tiny-dinov2")
    cat = catalog(lm)
    assert cat.family == "dinov2" and cat.stacks() == ["vision"]
    n_layers = lm.config.num_hidden_layers
    for r in ("q", "k", "v", "o", "mlp_in", "mlp_out"):
        assert len(cat.select(role=r)) == n_layers
    assert all(b.n_heads == lm.config.num_attention_heads for b in cat.attention_blocks())


def test_unknown_family_warns_listing_every_unclassified_tensor(tmp_path):
    from transformers import OpenAIGPTConfig, OpenAIGPTModel  # GPT-1: Conv1D like GPT-2, no family of its own

    OpenAIGPTModel(OpenAIGPTConfig(n_embd=32, n_head=4, n_layer=2, vocab_size=60, n_positions=16)).save_pretrained(tmp_path)
    with pytest.warns(UnclassifiedWeightsWarning) as rec:
        cat = catalog(tmp_path)
    msg = " ".join(str(w.message) for w in rec)
    assert cat.family == "generic" and "generic" in msg
    # Conv1D c_attn is (D, 3D): not splittable by rows, so it must be named, never skipped
    unclassified = [e.name for e in cat.unclassified()]
    assert "h.0.attn.c_attn.weight" in unclassified
    for name in unclassified:
        assert name in msg


def test_bf16_checkpoint_is_upcast(tmp_path):
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=48, num_hidden_layers=1,
                                 vocab_size=60)).to(torch.bfloat16)
    model.save_pretrained(tmp_path)
    cat = catalog(tmp_path)
    e = cat.select(role="q")[0]
    assert e.dtype == "bfloat16"
    W = TensorStore(tmp_path).get(e)
    assert W.dtype == torch.float32
    assert torch.equal(W, model.encoder.layer[0].attention.self.query.weight.float())
