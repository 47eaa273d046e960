"""Generated random-init twins (geolip_lib.models.twin): same catalogue as the in-memory twin,
the model's own initialisation per tensor, deterministic, one tensor at a time, and the
battery / QK operators read it exactly as they read the same tensors from a file."""
from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import save_file

from geolip_lib import models, operators
from geolip_lib.models import twin
from geolip_lib.models.twin import RandomInitStore
from geolip_lib.weights import TensorStore, run_battery
from geolip_lib.weights.battery import cross_layer

TINY = ("tiny-t5-v1_1", "tiny-qwen", "tiny-bert", "tiny-open-clip")


@pytest.fixture(scope="module")
def lms():
    return {n: models.load(n) for n in TINY + ("tiny-t5",)}


def _gen(lm, **kw) -> RandomInitStore:
    st = lm.random_init_weights(max_params=0, **kw)  # threshold lowered: a tiny model gets the generated twin
    assert isinstance(st, RandomInitStore)
    return st


def _save(st, path):
    save_file({k: st.generate(k).contiguous() for k in st.names()}, str(path / "model.safetensors"))
    return TensorStore(path)


@pytest.mark.parametrize("name", TINY)
def test_catalogue_equals_the_in_memory_twin(lms, name):
    lm = lms[name]
    st, ref = _gen(lm), TensorStore(lm.random_init().model.state_dict())
    assert st.names() == ref.names()
    for k in ref.names():
        assert (st.shape(k), st.dtype(k), st.nbytes(k)) == (ref.shape(k), ref.dtype(k), ref.nbytes(k)), k
        t = st.get(k)
        assert tuple(t.shape) == ref.shape(k) and t.dtype == torch.float32 and bool(torch.isfinite(t).all()), k
    assert st.n_params == sum(p.numel() for p in lm.model.parameters())


@pytest.mark.parametrize("name", TINY)
def test_each_tensor_follows_the_models_own_init(lms, name):
    """Per tensor: constants exactly as the in-memory twin; random tensors with the same
    mean and std within sampling error (6 standard errors, normal approximation)."""
    lm = lms[name]
    st, ref = _gen(lm, seed=7), TensorStore(lm.random_init(seed=7).model.state_dict())
    checked = 0
    for k in ref.names():
        a, b = st.get(k, torch.float64).flatten(), ref.get(k, torch.float64).flatten()
        if b.numel() < 2 or float(b.std()) == 0.0:
            assert torch.equal(a, b), k  # norms, zero biases, logit_scale
            checked += 1
            continue
        if b.numel() < 256:
            continue  # too few values for a distribution test
        sa, sb = float(a.std()), float(b.std())
        n = b.numel()
        assert abs(sa - sb) <= 6 * sb * math.sqrt(1 / n) + 1e-12, (k, sa, sb)
        assert abs(float(a.mean()) - float(b.mean())) <= 6 * sb * math.sqrt(2 / n), k
        checked += 1
    assert checked >= len(ref.names()) // 2


def test_t5_v1_1_factor_based_stds():
    """T5's _init_weights formulas, on a T5 v1.1 config big enough for tight bounds (meta, no hub)."""
    from transformers import T5Config

    cfg = T5Config(d_model=128, d_ff=320, d_kv=16, num_heads=4, num_layers=2, num_decoder_layers=2, vocab_size=512,
                   feed_forward_proj="gated-gelu", tie_word_embeddings=False, initializer_factor=0.5)
    st = RandomInitStore(cfg, "t5_v1_1", seed=3, untie_output=True)
    f, d, dkv, h, dff = 0.5, 128, 16, 4, 320
    want = {"SelfAttention.q.weight": f * (d * dkv) ** -0.5, "SelfAttention.k.weight": f * d ** -0.5,
            "SelfAttention.v.weight": f * d ** -0.5, "SelfAttention.o.weight": f * (h * dkv) ** -0.5,
            "EncDecAttention.q.weight": f * (d * dkv) ** -0.5, "relative_attention_bias.weight": f * d ** -0.5,
            "wi_0.weight": f * d ** -0.5, "wi_1.weight": f * d ** -0.5, "wo.weight": f * dff ** -0.5}
    seen = set()
    for k in st.names():
        t = st.get(k, torch.float64)
        if k in ("shared.weight", "lm_head.weight"):
            std = f
        elif "layer_norm" in k:
            assert torch.equal(t, torch.full_like(t, f)), k  # T5LayerNorm: constant factor
            seen.add("layer_norm")
            continue
        else:
            suffix = next((s for s in want if k.endswith(s)), None)
            if suffix is None:
                continue
            std = want[suffix]
            seen.add(suffix)
        assert abs(float(t.std()) / std - 1) < 6 / math.sqrt(2 * t.numel()), (k, float(t.std()), std)
    assert seen == set(want) | {"layer_norm"}
    assert "lm_head.weight" in st.names()  # untied head: its own tensor
    assert not torch.equal(st.get("lm_head.weight"), st.get("shared.weight"))


def test_deterministic_order_independent_and_ties(lms):
    lm = lms["tiny-t5"]
    a, b = _gen(lm, seed=11), _gen(lm, seed=11)
    names = a.names()
    first = {k: a.get(k) for k in names}
    again = {k: b.get(k) for k in reversed(names)}
    assert all(torch.equal(first[k], again[k]) for k in names)
    assert all(torch.equal(first[k], a.get(k)) for k in names[:5])  # asked twice: same values
    other = _gen(lm, seed=12)
    assert not torch.equal(first["shared.weight"], other.get("shared.weight"))
    # tied: encoder/decoder embed_tokens and (tied T5) lm_head are shared.weight
    assert "encoder.embed_tokens.weight" not in names and "encoder.embed_tokens.weight" in a
    assert torch.equal(a.get("encoder.embed_tokens.weight"), first["shared.weight"])
    q = _gen(lms["tiny-qwen"])
    assert "lm_head.weight" not in q.names() and torch.equal(q.get("lm_head.weight"),
                                                           q.get("model.embed_tokens.weight"))
    assert torch.equal(a.get("shared.weight", row_slice=(3, 9)), first["shared.weight"][3:9])
    assert twin.tensor_seed(11, "x") == twin.tensor_seed(11, "x") != twin.tensor_seed(11, "y")


@pytest.mark.parametrize("name", ("tiny-t5-v1_1", "tiny-qwen", "tiny-open-clip"))
def test_one_tensor_materialised_at_a_time(lms, name):
    st = _gen(lms[name])
    model = st._model
    peak = []

    def live() -> int:
        return sum(not t.is_meta for t in list(model.parameters()) + list(model.buffers()))

    if name == "tiny-open-clip":  # the open_clip path calls torch / open_clip inits; watch the RNG draws
        orig = torch.nn.init.normal_

        def spy(t, *a, **kw):
            peak.append(live())
            return orig(t, *a, **kw)

        torch.nn.init.normal_ = spy
        try:
            for k in st.names():
                st.get(k)
        finally:
            torch.nn.init.normal_ = orig
    else:
        for path, fn in list(st._init_fn.items()):
            if fn is not None:
                st._init_fn[path] = (lambda f: lambda m: (peak.append(live()), f(m)))(fn)
        for k in st.names():
            st.get(k)
    assert peak and max(peak) == 1
    assert live() == 0  # back to meta after each tensor


def test_battery_and_operators_equal_on_the_saved_twin(lms, tmp_path):
    lm = lms["tiny-t5-v1_1"]
    st = _gen(lm)
    saved = _save(st, tmp_path)
    a = run_battery(st, config=lm.config, family=lm.family, device="cpu").summary()
    b = run_battery(saved, config=lm.config, family=lm.family, device="cpu").summary()
    a.pop("seconds", None), b.pop("seconds", None)
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
    oa = operators.measure_model(st, top_k=2)  # config and family from the store
    ob = operators.measure_model(saved, top_k=2, config=lm.config, family=lm.family)
    assert sorted(oa) == sorted(ob) == ["decoder.cross", "decoder.self", "encoder.self"]
    for g in oa:
        assert torch.equal(oa[g].gram, ob[g].gram) and torch.equal(oa[g].sym_eigs, ob[g].sym_eigs)
    assert isinstance(TensorStore(st), RandomInitStore)  # a copy of the store reads the same way


def test_row_chunks_generate_each_tensor_once_within_the_cache(lms):
    lm = lms["tiny-t5-v1_1"]
    from geolip_lib.families import catalog

    res = {}
    for cache in (None, 0):
        st = _gen(lm) if cache is None else lm.random_init_weights(max_params=0)
        st.cache_bytes = st.cache_bytes if cache is None else 0
        calls = []
        gen = st.generate
        st.generate = lambda n, _g=gen: (calls.append(n), _g(n))[1]
        cat = catalog(st, config=lm.config, family=lm.family)
        res[cache] = (cross_layer(st, cat, chunk_bytes=8 * 2 * 32 * 16), calls)  # 16 rows a chunk: 2-4 chunks
    (kept, calls_kept), (none, calls_none) = res[None], res[0]
    assert len(calls_kept) == len(set(calls_kept)) and len(calls_none) >= 2 * len(calls_kept) > 0
    for k in kept:
        assert (kept[k]["cos"] == none[k]["cos"]).all()


def test_threshold_picks_the_store(lms, monkeypatch):
    lm = lms["tiny-bert"]
    small = lm.random_init_weights(seed=5)
    assert type(small) is TensorStore and small._mem is not None  # at or below 1e9: the in-memory twin
    ref = lm.random_init(seed=5).model.state_dict()
    assert all(torch.equal(small.get(k), ref[k]) for k in small.names())
    monkeypatch.setattr(twin, "TWIN_MAX_PARAMS", 1000)
    assert isinstance(lm.random_init_weights(seed=5), RandomInitStore)


def test_unsupported_tensor_and_bad_input_are_one_line_errors():
    cfg = {"model_cfg": dict(embed_dim=16, vision_cfg=dict(image_size=16, patch_size=8, width=16, layers=1,
                                                          head_width=8, ls_init_value=1e-5),
                             text_cfg=dict(context_length=8, vocab_size=64, width=16, heads=2, layers=1))}
    st = RandomInitStore(cfg, "open_clip", seed=0)
    with pytest.raises(RuntimeError, match=r"left 'visual.transformer.resblocks.0.ls_1.gamma' unset"):
        st.get("visual.transformer.resblocks.0.ls_1.gamma")
    assert st.get("visual.proj").shape == (16, 16)
    with pytest.raises(ValueError, match="family: unknown family 'gpt'"):
        RandomInitStore(cfg, "gpt", seed=0)
    with pytest.raises(ValueError, match="no tensor 'nope'"):
        st.get("nope")
