"""The Whisper family (``geolip_lib/families/whisper.py``) on a tiny random ``WhisperForConditionalGeneration``.

Every stored tensor gets a catalog entry (nothing unclassified), q/k/v/o of encoder self, decoder self
and decoder cross attention per layer, and the attention is rebuilt from the catalog's W_Q, W_K (with
the q bias, scale, heads; the causal mask in decoder self-attention) to the module's own eager
attention weights within 1e-5 — the check of ``tests/integration/test_families.py`` (``_check``), here
on log-mel input (that test feeds token ids, which Whisper's encoder does not read).
"""
import warnings

import numpy as np
import pytest
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

from geolip_lib import families
from geolip_lib.checkpoints import UnclassifiedWeightsWarning
from geolip_lib.families import catalog
from geolip_lib.families.whisper import WHISPER, synthetic_log_mel, whisper_hidden
from geolip_lib.weights import TensorStore

D, H, L = 32, 4, 2
CFG = WhisperConfig(d_model=D, encoder_layers=L, decoder_layers=L, encoder_attention_heads=H,
                    decoder_attention_heads=H, encoder_ffn_dim=48, decoder_ffn_dim=48, num_mel_bins=8, vocab_size=100,
                    max_source_positions=16, max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                    decoder_start_token_id=3, suppress_tokens=[], begin_suppress_tokens=[])


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """The family in the registry for these tests only: registering it for good needs params/models/tiny-whisper.yaml
    (the registry test wants a tiny params file per family) and the integration family tests' digest, not yet made."""
    monkeypatch.setitem(families.REGISTRY, "whisper", WHISPER)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(CFG).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".bias"):
                p.normal_(0, 0.2)
    d = tmp_path_factory.mktemp("tiny-whisper")
    model.save_pretrained(d)
    model.set_attn_implementation("eager")
    return model, d


def _catalog(src):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnclassifiedWeightsWarning)
        return catalog(src, config=CFG)


def test_the_family_is_found_and_sized():
    assert families.family_of_model_type("whisper") == "whisper" and families.family_of_config(CFG) == "whisper"
    sz = families.spec("whisper").sizes_of(CFG)
    assert (sz.d_model, sz.n_layers, sz.n_heads, sz.head_dim, sz.n_kv_heads) == (D, L, H, D // H, H)
    assert "k_proj has no bias" in WHISPER.qk_statement


def test_every_tensor_is_classified(saved):
    model, d = saved
    state = model.state_dict()
    cat = _catalog(state)
    assert cat.family == "whisper"
    # every tensor has an entry; proj_out is tied to decoder.embed_tokens (one tensor, stored once)
    assert set(state) - {e.key for e in cat.entries} == {"proj_out.weight"}
    roles = {}
    for e in cat.entries:
        roles.setdefault(e.role, set()).add(e.key)
    assert roles["other"] == {f"model.encoder.conv{i}.{w}" for i in (1, 2) for w in ("weight", "bias")}
    assert roles.get("unembed", set()) <= {"proj_out.weight"}
    assert {"model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight",
            "model.decoder.embed_tokens.weight"} == roles["embed"]
    got = {(e.role, e.stack, e.attn, e.layer) for e in cat.matrices() if e.role in ("q", "k", "v", "o")}
    want = {(r, s, a, i) for r in ("q", "k", "v", "o") for i in range(L)
            for s, a in (("encoder", "self"), ("decoder", "self"), ("decoder", "cross"))}
    assert got == want
    blocks = _catalog(TensorStore(d)).attention_blocks()
    assert {(b.stack, b.attn) for b in blocks} == {("encoder", "self"), ("decoder", "self"), ("decoder", "cross")}
    for b in blocks:
        assert (b.n_heads, b.head_dim, b.d_model) == (H, D // H, D)
        assert "q" in b.biases and "k" not in b.biases  # Whisper's k_proj has no bias


def _rebuild(store, b, x, xk, causal):
    Q = x @ b.weight(store, "q").T + store.get(b.biases["q"])
    K = xk @ b.weight(store, "k").T
    B, S, _ = Q.shape
    q = Q.view(B, S, -1, b.head_dim).transpose(1, 2)
    k = K.view(B, K.shape[1], -1, b.head_dim).transpose(1, 2)
    scores = b.scale * q @ k.transpose(-1, -2)
    if causal:
        scores = scores.masked_fill(torch.ones(S, K.shape[1], dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, -1)


def test_attention_is_rebuilt_from_the_catalog_qk(saved):
    model, d = saved
    store = TensorStore(d)
    blocks = _catalog(store).attention_blocks()
    calls = {}
    handles = []
    for b in blocks:
        path = b.q.parent or b.q.name.rsplit(".", 2)[0]
        path = path.rsplit(".", 1)[0] if path.endswith("q_proj") else path
        mod = model.get_submodule(path)

        def hook(m, args, kwargs, out, b=b):
            calls[(b.stack, b.attn, b.layer)] = (args, kwargs, out, b)
        handles.append(mod.register_forward_hook(hook, with_kwargs=True))
    feats = torch.from_numpy(synthetic_log_mel(8, 32))[None].repeat(2, 1, 1)
    feats[1] += 0.1 * torch.randn(8, 32, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[3, 5, 7, 9, 11], [3, 6, 8, 10, 12]])
    try:
        with torch.no_grad():
            model(input_features=feats, decoder_input_ids=ids, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    assert set(calls) == {(s, a, i) for i in range(L) for s, a in
                          (("encoder", "self"), ("decoder", "self"), ("decoder", "cross"))}
    for key, (args, kwargs, out, b) in calls.items():
        x = args[0] if args else kwargs["hidden_states"]
        xk = kwargs.get("key_value_states")
        xk = x if xk is None else xk
        ref = [t for t in out if torch.is_tensor(t) and t.dim() == 4][-1]
        P = _rebuild(store, b, x, xk, causal=key[:2] == ("decoder", "self"))
        assert P.shape == ref.shape, key
        assert (P - ref).abs().max() <= 1e-5, key


def test_decoder_hidden_states_read_a_synthetic_chirp_and_the_encoder_stack_is_refused(saved):
    model, _ = saved
    ids = torch.tensor([[3, 5, 7], [3, 6, 8]])
    hs = whisper_hidden(model, "decoder", ids, torch.ones_like(ids), None)
    assert len(hs) == L + 1 and hs[-1].shape == (2, 3, D) and all(torch.isfinite(h).all() for h in hs)
    with pytest.raises(ValueError, match="log-mel"):
        whisper_hidden(model, "encoder", ids, torch.ones_like(ids), None)
    m = synthetic_log_mel(80, 3000)
    assert m.shape == (80, 3000) and m.dtype == np.float32 and np.isfinite(m).all()
    assert np.array_equal(m, synthetic_log_mel(80, 3000))  # deterministic
