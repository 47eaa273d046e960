"""CTranslate2 model.bin reader and Whisper converter (``geolip_lib/models/ct2.py``, ``ct2_file``, ``ct2_whisper``).

A tiny random ``WhisperForConditionalGeneration`` is written as a CTranslate2 v6 ``WhisperSpec`` file by a
writer in this file (the layout of ``ctranslate2/specs/model_spec.py`` ``_serialize``; q,k,v fused for
self-attention and k,v for cross-attention with a zero k bias, as the converter does; some tensors in
float16, one in bfloat16; the tied projection as an alias). Read back and converted, the
transformers folder gives the same logits as the original model whose weights were rounded the same
way. Hostile files get one-line errors, quickly.
"""
import json
import os
import struct
import time

import numpy as np
import pytest
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

from geolip_lib.models import ct2

CFG = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
           encoder_ffn_dim=48, decoder_ffn_dim=48, num_mel_bins=8, vocab_size=100, max_source_positions=16,
           max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=3,
           suppress_tokens=[], begin_suppress_tokens=[])
_IDS = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4, "bfloat16": 5}


def _s(x: str) -> bytes:
    b = x.encode()
    return struct.pack("<H", len(b) + 1) + b + b"\0"


def _var(name: str, arr: np.ndarray, kind: str) -> bytes:
    if kind == "bfloat16":
        raw = (np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()
    else:
        raw = np.ascontiguousarray(arr, dtype={"float32": "<f4", "float16": "<f2", "int16": "<i2",
                                               "int8": "i1", "int32": "<i4"}[kind]).tobytes()
    return (_s(name) + struct.pack("<B", arr.ndim) + struct.pack(f"<{arr.ndim}I", *arr.shape)
            + struct.pack("<B", _IDS[kind]) + struct.pack("<I", len(raw)) + raw)


def write_ct2(path, variables: list, aliases: list = (), spec="WhisperSpec", revision=3, version=6):
    """``variables``: (name, array, kind) in file order; ``aliases``: (alias, name)."""
    body = struct.pack("<I", version) + _s(spec) + struct.pack("<I", revision) + struct.pack("<I", len(variables))
    body += b"".join(_var(n, a, k) for n, a, k in variables)
    body += struct.pack("<I", len(aliases)) + b"".join(_s(a) + _s(t) for a, t in aliases)
    path.write_bytes(body)
    return path


def _kind(name: str) -> str:
    if name.endswith("ffn/linear_0/weight") and "decoder/layer_1" in name:
        return "bfloat16"
    return "float16" if name.endswith("weight") or name.endswith("encodings") else "float32"


def whisper_variables(model) -> list:
    """The WhisperSpec variables of ``model`` as the CT2 converter lays them out (sorted names)."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    c = model.config
    out = {"encoder/num_heads": (np.array(c.encoder_attention_heads, dtype=np.int16), "int16"),
           "decoder/num_heads": (np.array(c.decoder_attention_heads, dtype=np.int16), "int16"),
           "decoder/pre_norm": (np.array(1, dtype=np.int8), "int8"),
           "decoder/activation": (np.array(3, dtype=np.int8), "int8"),
           "decoder/scale_embeddings": (np.array(0, dtype=np.int8), "int8")}
    top = {v: k for k, v in ct2._TOP_MAP.items() if k != "decoder/projection/weight"}
    for hf, ct in top.items():
        out[ct] = (sd[hf], None)
    for stack, n in (("encoder", c.encoder_layers), ("decoder", c.decoder_layers)):
        for i in range(n):
            p, q = f"model.{stack}.layers.{i}.", f"{stack}/layer_{i}/"
            for rest, (tgt, split) in ct2._LAYER_MAP.items():
                if stack == "encoder" and rest.startswith("attention/"):
                    continue
                if split is None:
                    out[q + rest] = (sd[p + tgt], None)
                    continue
                roles = ("q", "k", "v") if split == "qkv" else ("k", "v")
                parts = []
                for r in roles:
                    key = p + tgt.replace("{q,k,v}" if split == "qkv" else "{k,v}", r)
                    parts.append(sd[key] if key in sd else np.zeros_like(sd[key.replace(".k_", ".v_")]))
                out[q + rest] = (np.concatenate(parts, 0), None)
    return [(k, a, kind or _kind(k)) for k, (a, kind) in sorted(out.items())]


def _rounded(model, variables):
    """``model`` with every weight rounded as stored (float16 / bfloat16)."""
    m = WhisperForConditionalGeneration(model.config).eval()
    m.load_state_dict(model.state_dict())
    stored = {}
    for name, arr, kind in variables:
        a32 = np.ascontiguousarray(arr, dtype=np.float32)
        if kind == "float16":
            stored[name] = torch.from_numpy(a32).half().float()
        elif kind == "bfloat16":  # the writer truncates (keeps the high 16 bits)
            stored[name] = torch.from_numpy((a32.view(np.uint32) & 0xFFFF0000).view(np.float32))
    sd = ct2.to_whisper_state_dict({n: (stored[n].numpy() if n in stored else a) for n, a, _ in variables},
                                   m.config)
    m.load_state_dict(sd, strict=False)
    m.tie_weights()
    return m


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(WhisperConfig(**CFG)).eval()
    with torch.no_grad():  # nonzero biases everywhere they exist (random init leaves them zero)
        for n, p in model.named_parameters():
            if n.endswith(".bias"):
                p.normal_(0, 0.1)
    return model


@pytest.fixture
def ct2_dir(tiny, tmp_path):
    d = tmp_path / "faster-whisper-tiny"
    d.mkdir()
    variables = whisper_variables(tiny)
    write_ct2(d / "model.bin", variables, [("decoder/projection/weight", "decoder/embeddings/weight")])
    (d / "config.json").write_text(json.dumps({"suppress_ids": [5, 6], "suppress_ids_begin": [7],
                                               "lang_ids": [], "alignment_heads": [[1, 0]]}))
    return d, variables


def test_read_returns_the_spec_the_variables_as_float32_and_the_alias(ct2_dir, tiny):
    d, variables = ct2_dir
    spec, rev, v, aliases = ct2.read(d / "model.bin")
    assert (spec, rev) == ("WhisperSpec", 3)
    assert aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    assert set(v) == {n for n, _, _ in variables}
    assert v["encoder/num_heads"].dtype == np.int16 and int(v["encoder/num_heads"]) == 4
    w = v["encoder/layer_0/self_attention/linear_0/weight"]
    assert w.dtype == np.float32 and w.shape == (96, 32)
    src = tiny.model.encoder.layers[0].self_attn.q_proj.weight.detach()
    assert torch.equal(torch.from_numpy(w[:32]), src.half().float())
    bf = v["decoder/layer_1/ffn/linear_0/weight"]  # bfloat16 storage: truncated, read back exactly
    assert torch.equal(torch.from_numpy(bf), torch.from_numpy(
        (tiny.model.decoder.layers[1].fc1.weight.detach().numpy().view(np.uint32) & 0xFFFF0000).view(np.float32)))


def test_state_dict_splits_the_fused_projections_and_drops_the_zero_k_bias(ct2_dir, tiny):
    d, _ = ct2_dir
    _, _, v, aliases = ct2.read(d / "model.bin")
    sd = ct2.to_whisper_state_dict(v, None, aliases)
    ref = tiny.state_dict()
    assert set(sd) == set(ref)  # proj_out.weight comes from the alias
    assert "model.encoder.layers.0.self_attn.k_proj.bias" not in sd
    for k in ("model.decoder.layers.1.encoder_attn.k_proj.weight", "model.decoder.layers.1.encoder_attn.v_proj.bias",
              "model.encoder.layers.1.self_attn.v_proj.weight", "model.decoder.layers.0.self_attn.q_proj.bias"):
        assert sd[k].shape == ref[k].shape
        torch.testing.assert_close(sd[k], ref[k], atol=2e-3, rtol=2e-3)
    cfg = ct2.whisper_config(v, aliases)
    assert (cfg.d_model, cfg.encoder_layers, cfg.decoder_layers, cfg.encoder_attention_heads, cfg.vocab_size,
            cfg.num_mel_bins, cfg.max_source_positions, cfg.max_target_positions, cfg.encoder_ffn_dim) == (
        32, 2, 2, 4, 100, 8, 16, 16, 48)


def test_converted_folder_gives_the_logits_of_the_rounded_original(ct2_dir, tiny, tmp_path):
    d, variables = ct2_dir
    rec = ct2.convert(d, tmp_path / "hf")
    out = tmp_path / "hf"
    assert rec["spec"] == "WhisperSpec" and rec["model_type"] == "whisper" and rec["dtypes"]["float16"] > 0
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == "whisper" and cfg["suppress_tokens"] == [5, 6] and cfg["begin_suppress_tokens"] == [7]
    rebuilt = WhisperForConditionalGeneration.from_pretrained(out).eval()
    ref = _rounded(tiny, variables)
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(2, 8, 32, generator=g)  # (batch, mel bins, 2 * max_source_positions frames)
    ids = torch.randint(0, 100, (2, 5), generator=g)
    with torch.no_grad():
        a = rebuilt(input_features=feats, decoder_input_ids=ids).logits
        b = ref(input_features=feats, decoder_input_ids=ids).logits
        c = tiny(input_features=feats, decoder_input_ids=ids).logits
    assert (a - b).abs().max() < 1e-5
    assert (a - c).abs().max() > 0  # the rounding is real: the comparison above is not vacuous


def _one_line(exc_info, *words):
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, msg


def _small(tmp_path, variables=None, **kw):
    variables = variables or [("encoder/num_heads", np.array(4, dtype=np.int16), "int16"),
                              ("encoder/conv1/weight", np.ones((4, 2, 3), np.float32), "float16")]
    return write_ct2(tmp_path / "model.bin", variables, **kw)


def test_hostile_files_get_one_line_errors_quickly(tmp_path, ct2_dir):
    t0 = time.perf_counter()
    good = (ct2_dir[0] / "model.bin").read_bytes()
    f = tmp_path / "model.bin"
    for cut in (2, 10, 40, len(good) // 2, len(good) - 1):  # truncated
        f.write_bytes(good[:cut])
        with pytest.raises(ValueError) as e:
            ct2.read(f)
        _one_line(e, str(f), "truncated")
    f.write_bytes(good + b"xx")
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "bytes after the aliases")
    f.write_bytes(struct.pack("<I", 5) + good[4:])
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "binary version 5")
    f.write_bytes(b"")
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "empty")
    # lying nbytes: the size field of the first variable says one byte more
    raw = bytearray(_small(tmp_path).read_bytes())
    head = 4 + 2 + len("WhisperSpec") + 1 + 4 + 4 + 2 + len("encoder/num_heads") + 1 + 1 + 1
    assert struct.unpack_from("<I", raw, head)[0] == 2
    struct.pack_into("<I", raw, head, 3)
    f.write_bytes(bytes(raw))
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "says 3 bytes", "need 2")
    # nbytes beyond the end of the file (consistent with huge dims)
    big = (_s("x") + struct.pack("<B", 2) + struct.pack("<2I", 1 << 15, 1 << 14) + struct.pack("<B", 0)
           + struct.pack("<I", (1 << 31)))
    f.write_bytes(struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + big)
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "truncated", "'x'")
    # dims overflow: 2**35 elements
    ov = _s("x") + struct.pack("<B", 3) + struct.pack("<3I", 1 << 12, 1 << 12, 1 << 11)
    f.write_bytes(struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + ov)
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "2**34")
    rk = _s("x") + struct.pack("<B", 9)
    f.write_bytes(struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + rk)
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "rank 9")
    # a name over 1 KiB
    f.write_bytes(struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + _s("n" * 2000))
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "length 2001")
    # duplicate name
    a = np.ones(3, np.float32)
    _small(tmp_path, [("a", a, "float32"), ("a", a, "float32")])
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "'a' appears twice")
    # unknown dtype id
    ud = _s("x") + struct.pack("<B", 1) + struct.pack("<I", 1) + struct.pack("<B", 9) + struct.pack("<I", 4)
    f.write_bytes(struct.pack("<I", 6) + _s("WhisperSpec") + struct.pack("<II", 3, 1) + ud + b"\0" * 4)
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "dtype id 9")
    # an alias to nothing
    _small(tmp_path, aliases=[("b", "nope")])
    with pytest.raises(ValueError) as e:
        ct2.read(f)
    _one_line(e, "'nope'")
    # over the size cap
    _small(tmp_path)
    with pytest.raises(ValueError) as e:
        ct2.read(f, max_bytes=10)
    _one_line(e, "over the cap")
    assert time.perf_counter() - t0 < 10


def test_an_unknown_variable_is_refused_by_name(tmp_path, ct2_dir):
    _, variables = ct2_dir
    v = {n: a for n, a, _ in variables}
    v["encoder/layer_0/self_attention/relative_position_keys"] = np.zeros((3, 8), np.float32)
    with pytest.raises(ValueError) as e:
        ct2.to_whisper_state_dict(v, None)
    _one_line(e, "'encoder/layer_0/self_attention/relative_position_keys'", "not in the Whisper name map")
    v = {n: a for n, a, _ in variables}
    v["encoder/layer_0/attention/linear_0/weight"] = np.zeros((32, 32), np.float32)
    with pytest.raises(ValueError) as e:
        ct2.to_whisper_state_dict(v, None)
    _one_line(e, "no cross-attention")
    v = {n: a.copy() for n, a, _ in variables}
    v["decoder/layer_0/attention/linear_1/bias"][:32] = 1.0
    with pytest.raises(ValueError) as e:
        ct2.to_whisper_state_dict(v, None)
    _one_line(e, "nonzero k bias")


def test_int8_weights_are_dequantized_with_their_scale():
    w = np.array([[1.0, -2.0], [0.5, 0.25]], np.float32)
    scale = 127.0 / np.abs(w).max(1)
    q = np.rint(w * scale[:, None]).astype(np.int8)
    out = ct2.dequantize({"x/weight": q, "x/weight_scale": scale.astype(np.float32)})
    assert out[ct2.DEQUANTIZED] == ["x/weight"] and "x/weight_scale" not in out
    np.testing.assert_allclose(out["x/weight"], w, atol=0.01)


def test_a_fifo_is_refused_and_a_link_to_a_file_is_read(tmp_path):
    """A pipe (or a link to one) is refused without blocking; a link to a regular file is followed wherever it
    points (a Hugging Face cache snapshot links ``model.bin`` to ``../../blobs/<sha>``), as for GGUF and ONNX."""
    fifo = tmp_path / "model.bin"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as e:
        ct2.read(fifo)
    _one_line(e, "not a regular file")
    assert time.perf_counter() - t0 < 5
    fifo.unlink()
    outside = tmp_path / "outside.bin"
    _small(tmp_path).rename(outside)
    inner = tmp_path / "m"
    inner.mkdir()
    (inner / "model.bin").symlink_to(outside)
    assert ct2.read(inner / "model.bin")[0] == "WhisperSpec"
    os.mkfifo(tmp_path / "pipe")
    (inner / "piped.bin").symlink_to(tmp_path / "pipe")
    with pytest.raises(ValueError) as e:
        ct2.read(inner / "piped.bin")
    _one_line(e, "not a regular file")
    (inner / "real.bin").write_bytes(outside.read_bytes())
    (inner / "link.bin").symlink_to(inner / "real.bin")
    assert ct2.read(inner / "link.bin")[0] == "WhisperSpec"


@pytest.mark.parametrize("quantization,tol", [("float32", 0.0), ("float16", 1e-3), ("bfloat16", 5e-3),
                                              ("int16", 5e-3), ("int8", 2e-2)])
def test_files_written_by_ctranslate2_itself(tiny, tmp_path, quantization, tol):
    """The ``ctranslate2`` package (pinned in the lock): its own WhisperLoader
    and ``_serialize`` write the file; converted back, the logits match the float32 original (float32:
    exactly; the others within their rounding). Checked with ctranslate2 4.8.5."""
    import copy

    from ctranslate2.converters.transformers import WhisperLoader
    from ctranslate2.specs import model_spec

    spec = WhisperLoader().get_model_spec(copy.deepcopy(tiny))  # its int8 quantization scales the arrays in place
    model_spec.LayerSpec.validate(spec)  # (ModelSpec.validate also wants a vocabulary: weights only here)
    spec.optimize(quantization=quantization)
    d = tmp_path / "ct2"
    d.mkdir()
    spec._serialize(str(d / "model.bin"))
    rec = ct2.convert(d, tmp_path / "hf")
    assert bool(rec["dequantized"]) == (quantization in ("int8", "int16"))
    rebuilt = WhisperForConditionalGeneration.from_pretrained(tmp_path / "hf").eval()
    g = torch.Generator().manual_seed(1)
    feats, ids = torch.randn(2, 8, 32, generator=g), torch.randint(0, 100, (2, 5), generator=g)
    with torch.no_grad():
        a = rebuilt(input_features=feats, decoder_input_ids=ids).logits
        b = tiny(input_features=feats, decoder_input_ids=ids).logits
    assert (a - b).abs().max() <= tol


# ------------------------------------------------------------------ source: ctranslate2 (geolip_lib.models.converted)
SPECIAL = ["<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]


def _ct2_folder(model, d):
    """A CTranslate2 Whisper folder as faster-whisper ships it, written by ctranslate2 itself (model.bin, config.json,
    vocabulary), with a Hugging Face tokenizer.json whose special tokens sit at the tiny config's ids."""
    import copy

    from ctranslate2.converters.transformers import WhisperLoader
    from tokenizers import Tokenizer, models as tmodels

    c = model.config
    vocab = {f"t{i}": i for i in range(c.vocab_size)}
    ids = {"<|endoftext|>": c.eos_token_id, "<|startoftranscript|>": c.decoder_start_token_id, "<|en|>": 90,
           "<|transcribe|>": 91, "<|notimestamps|>": 92}
    for name, i in ids.items():
        vocab.pop(f"t{i}")
        vocab[name] = i
    tok = Tokenizer(tmodels.WordLevel(vocab, unk_token="t5"))
    tok.add_special_tokens(SPECIAL)
    spec = WhisperLoader().get_model_spec(copy.deepcopy(model))
    spec.register_vocabulary([t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])])
    spec.config.suppress_ids, spec.config.suppress_ids_begin = [], []
    spec.config.lang_ids = [90]
    spec.config.alignment_heads = [[1, 0]]
    spec.validate()
    spec.optimize(quantization="float16")
    d.mkdir(parents=True, exist_ok=True)
    spec.save(str(d))
    tok.save(str(d / "tokenizer.json"))
    return d


def _whisper_params(d, **kw):
    return {"name": "my-whisper", "family": "whisper", "source": "ctranslate2", "local_dir": str(d),
            "ct2_file": "model.bin", **kw}


def test_source_ctranslate2_converts_once_checked_against_ctranslate2_itself(tiny, tmp_path, monkeypatch):
    from geolip_lib import models, provenance
    from geolip_lib.models import converted

    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    d = _ct2_folder(tiny, tmp_path / "fw")
    lm = models.load(_whisper_params(d))
    chk = lm.conversion["check"]
    assert chk["same_tokens"] and chk["tokens_ctranslate2"] == chk["tokens_transformers"]
    assert chk["prompt"][0] == tiny.config.decoder_start_token_id and chk["encoder_max_rel_diff"] <= 1e-3
    assert lm.config.eos_token_id == tiny.config.eos_token_id  # read from tokenizer.json
    prov = provenance.model_provenance(lm)
    assert prov["converted"]["format"] == "CTranslate2" and prov["converted"]["dtypes"].get("float16")
    assert "CTranslate2 file" in prov["stored_dtype"] and list(prov["weights"]) == ["model.bin"]
    folder = converted.converted_dir(lm.params, d / "model.bin")
    stamp = (folder / converted.SOURCE_INFO).stat().st_mtime_ns
    models.load(_whisper_params(d))  # the second load reads the folder: no new conversion
    assert (folder / converted.SOURCE_INFO).stat().st_mtime_ns == stamp
    with torch.no_grad():  # the converted model is the file's: float16-rounded weights of the original
        g = torch.Generator().manual_seed(2)
        feats, ids = torch.randn(1, 8, 32, generator=g), torch.randint(0, 80, (1, 4), generator=g)
        a = lm.model(input_features=feats, decoder_input_ids=ids).logits
        b = tiny(input_features=feats, decoder_input_ids=ids).logits
    assert (a - b).abs().max() < 2e-2


def test_source_ctranslate2_a_changed_file_is_converted_anew_and_a_broken_one_refused(tiny, tmp_path, monkeypatch):
    from geolip_lib import models
    from geolip_lib.models import converted
    from geolip_lib.models.common import ModelLoadError
    from geolip_lib.params import load_model_params

    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    d = _ct2_folder(tiny, tmp_path / "fw")
    p = load_model_params(_whisper_params(d))
    first = converted.converted_dir(p, d / "model.bin")
    with torch.no_grad():
        tiny2 = WhisperForConditionalGeneration(tiny.config).eval()
    _ct2_folder(tiny2, d)  # same name, same size, other weights: keyed by content, a new folder
    second = converted.converted_dir(p, d / "model.bin")
    assert second != first and (second / converted.SOURCE_INFO).is_file()
    raw = (d / "model.bin").read_bytes()
    (d / "model.bin").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelLoadError) as ei:
        models.check(p)
    assert "\n" not in str(ei.value) and "model.bin" in str(ei.value) and "my-whisper" in str(ei.value)


@pytest.mark.parametrize("over, words", [({"family": "dinov2"}, "cannot hold a 'dinov2' model"),
                                         ({"ct2_file": "../model.bin"}, "relative path"),
                                         ({"ct2_file": None}, "needs ct2_file"),
                                         ({"gguf_file": "x.gguf"}, "source gguf only")])
def test_source_ctranslate2_params_are_checked(tmp_path, over, words):
    from geolip_lib.params import ParamsError, load_model_params

    with pytest.raises(ParamsError) as ei:
        load_model_params({k: v for k, v in {**_whisper_params(tmp_path), **over}.items() if v is not None})
    assert words in str(ei.value)

