"""GGUF K-quants as a source: a tiny qwen2 file written here with the ``gguf`` package's own
writer, laid out like Qwen2.5-Coder-1.5B-Instruct's Q4_K_M (Q4_K / Q6_K matrices, F32 norms and q/k/v
biases, an untied ``output.weight`` in Q6_K, a byte-level BPE vocabulary with qwen2's pre-tokenizer). The
``gguf`` package (0.19) cannot quantize to K-quants, so the blocks are built here: random quants with
sane fp16 scales, the reference being ``gguf.quants.dequantize`` of the very bytes in the file.

What is checked: the dequantized folder (what the weight battery streams) holds, for every tensor, exactly
the reference dequantization under transformers' name (qwen2 is not un-permuted: llama.cpp writes
Qwen2's W_Q / W_K as they are), the stored types are recorded per tensor and counted, the model runs a
forward pass equal to one built from the reference values, and hostile files give one line naming the
file, in bounded time.
"""
from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import dequantize
from safetensors.numpy import load_file
from transformers import Qwen2Config, Qwen2ForCausalLM

from geolip_lib import models, provenance
from geolip_lib.checkpoints import TensorStore
from geolip_lib.models import gguf as gguf_source
from tests.unit.models.test_gguf_source import MERGES, vocabulary

pytestmark = pytest.mark.unit

Q4_K, Q6_K, F32 = GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q6_K, GGMLQuantizationType.F32
N_HEAD, N_KV, HIDDEN, FFN, LAYERS = 4, 2, 256, 512, 2   # K-quant blocks: 256 along each row
HEAD_DIM = HIDDEN // N_HEAD
FILE = "tiny-qwen2.Q4_K_M.gguf"
#: GGUF tensor (in a block) -> transformers parameter
BLOCK = {"attn_norm.weight": "input_layernorm.weight", "attn_q.weight": "self_attn.q_proj.weight",
         "attn_q.bias": "self_attn.q_proj.bias", "attn_k.weight": "self_attn.k_proj.weight",
         "attn_k.bias": "self_attn.k_proj.bias", "attn_v.weight": "self_attn.v_proj.weight",
         "attn_v.bias": "self_attn.v_proj.bias", "attn_output.weight": "self_attn.o_proj.weight",
         "ffn_norm.weight": "post_attention_layernorm.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
         "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}
SHAPES = {"attn_q.weight": (HIDDEN, HIDDEN), "attn_k.weight": (N_KV * HEAD_DIM, HIDDEN),
          "attn_v.weight": (N_KV * HEAD_DIM, HIDDEN), "attn_output.weight": (HIDDEN, HIDDEN),
          "ffn_gate.weight": (FFN, HIDDEN), "ffn_up.weight": (FFN, HIDDEN), "ffn_down.weight": (HIDDEN, FFN)}


def q4_k_m_type(name: str, layer: int) -> GGMLQuantizationType:
    """Q4_K_M's choice, roughly: Q6_K for attn_v / ffn_down in some layers (here layer 0), Q4_K elsewhere."""
    return Q6_K if layer == 0 and name in ("attn_v.weight", "ffn_down.weight") else Q4_K


def kquant_blocks(shape: tuple[int, int], qtype: GGMLQuantizationType, rng: np.random.Generator) -> np.ndarray:
    """Valid K-quant bytes for a ``shape`` (rows, row length) tensor: random quants and sub-block scales,
    fp16 super-block scales chosen so that the values are of a trained matrix's size (|w| <~ 0.05)."""
    rows, cols = shape
    block, nbytes = GGML_QUANT_SIZES[qtype]
    assert cols % block == 0
    n = rows * cols // block
    raw = rng.integers(0, 256, size=(n, nbytes), dtype=np.uint8)
    if qtype == Q4_K:   # d, dmin (fp16), 12 bytes of 6-bit scales / mins, 128 bytes of nibbles
        raw[:, 0:2] = rng.uniform(2e-5, 6e-5, n).astype(np.float16).view(np.uint8).reshape(n, 2)
        raw[:, 2:4] = rng.uniform(2e-5, 6e-5, n).astype(np.float16).view(np.uint8).reshape(n, 2)
    else:               # Q6_K: 128 bytes low nibbles, 64 high bits, 16 int8 scales, d (fp16)
        raw[:, 208:210] = rng.uniform(5e-6, 1e-5, n).astype(np.float16).view(np.uint8).reshape(n, 2)
    return raw.reshape(rows, cols // block * nbytes)


def write_kquant_gguf(path: Path, seed: int = 0, tensors: bool = True) -> dict[str, tuple[str, np.ndarray]]:
    """The tiny qwen2 Q4_K_M file; returns ``GGUF name -> (transformers name, reference float values)``."""
    rng = np.random.default_rng(seed)
    tokens, types = vocabulary()
    w = GGUFWriter(str(path), "qwen2")
    w.add_name("tiny-qwen2-kquant-test")
    w.add_context_length(128)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(15)  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(len(tokens) - 1)
    w.add_eos_token_id(len(tokens) - 1)
    ref: dict[str, tuple[str, np.ndarray]] = {}

    def add(gguf_name: str, hf_name: str, shape: tuple[int, ...], qtype: GGMLQuantizationType) -> None:
        if qtype == F32:
            arr = (1 + 0.1 * rng.standard_normal(shape) if "norm" in gguf_name
                   else 0.02 * rng.standard_normal(shape)).astype(np.float32)
            w.add_tensor(gguf_name, arr)
            ref[gguf_name] = (hf_name, arr)
        else:
            raw = kquant_blocks(shape, qtype, rng)
            w.add_tensor(gguf_name, raw, raw_dtype=qtype)
            ref[gguf_name] = (hf_name, dequantize(raw, qtype).reshape(shape))

    vocab = len(tokens)
    add("token_embd.weight", "model.embed_tokens.weight", (vocab, HIDDEN), Q4_K)
    for i in range(LAYERS):
        for g, h in BLOCK.items():
            if g in SHAPES:
                shape, qtype = SHAPES[g], q4_k_m_type(g, i)
            else:  # norms and biases: F32, one value per output row
                shape = (N_KV * HEAD_DIM,) if g in ("attn_k.bias", "attn_v.bias") else (HIDDEN,)
                qtype = F32
            add(f"blk.{i}.{g}", f"model.layers.{i}.{h}", shape, qtype)
    add("output_norm.weight", "model.norm.weight", (HIDDEN,), F32)
    add("output.weight", "lm_head.weight", (vocab, HIDDEN), Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    if tensors:
        w.write_tensors_to_file()
    w.close()
    return ref


@pytest.fixture(scope="module")
def kquant_gguf(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf-k")
    ref = write_kquant_gguf(d / FILE)
    return d, ref


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def params(folder: Path, file: str = FILE) -> dict:
    return {"name": "tiny-gguf-k", "family": "decoder_lm", "source": "gguf", "local_dir": str(folder),
            "gguf_file": file, "description": "test"}


def test_the_fixture_is_a_q4_k_m_layout(kquant_gguf):
    d, ref = kquant_gguf
    types = gguf_source.quantization(d / FILE)
    assert gguf_source.summary(types) == {"F32": 5 * LAYERS + 1, "Q4_K": 1 + 7 * LAYERS - 2, "Q6_K": 3}
    # the reference is the gguf package's dequantization of the bytes as the reader sees them
    reader = GGUFReader(str(d / FILE))
    for t in reader.tensors:
        np.testing.assert_array_equal(dequantize(t.data, t.tensor_type).reshape(ref[t.name][1].shape),
                                      ref[t.name][1], err_msg=t.name)
    assert 0.005 < ref["token_embd.weight"][1].std() < 0.05


def test_kquant_dequantized_folder_holds_the_reference_values(kquant_gguf, cache):
    d, ref = kquant_gguf
    lm = models.load(params(d))
    # what the weight battery streams: the safetensors of the dequantized folder
    wd = lm.weights_dir
    assert wd.parent == cache / "gguf"
    saved: dict[str, np.ndarray] = {}
    for f in sorted(wd.glob("*.safetensors")):
        saved.update(load_file(str(f)))
    got = {k: v.detach().numpy() for k, v in lm.model.state_dict().items()}
    for gname, (hname, want) in ref.items():
        assert saved[hname].dtype == np.float32, hname
        np.testing.assert_array_equal(saved[hname], want, err_msg=f"{gname} -> {hname} (saved)")
        np.testing.assert_array_equal(got[hname], want, err_msg=f"{gname} -> {hname} (model)")
    assert lm.model.config.tie_word_embeddings is False
    store = TensorStore(lm)  # how the weight battery reads them
    assert store.names() and set(store.names()) >= {h for h, _ in ref.values()}
    for gname, (hname, want) in ref.items():
        np.testing.assert_array_equal(store.get(hname).numpy(), want, err_msg=f"{gname} -> {hname} (store)")
    # the model runs, and computes what a qwen2 built from the reference values computes
    ids = lm.tokenizer("the theme", return_tensors="pt")["input_ids"]
    assert ids.shape[1] >= 2 and lm.tokenizer.decode(ids[0]).endswith("the theme")
    cfg = Qwen2Config(vocab_size=len(vocabulary()[0]), hidden_size=HIDDEN, intermediate_size=FFN,
                      num_hidden_layers=LAYERS, num_attention_heads=N_HEAD, num_key_value_heads=N_KV,
                      max_position_embeddings=128, rms_norm_eps=1e-6, rope_theta=1000000.0,
                      tie_word_embeddings=False)
    torch.manual_seed(0)
    twin = Qwen2ForCausalLM(cfg).eval()
    twin.load_state_dict({h: torch.from_numpy(v) for h, v in ref.values()}, strict=True)
    with torch.no_grad():
        out = lm.model(ids).logits
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out, twin(ids).logits, rtol=1e-5, atol=1e-5)


def test_kquant_stored_types_in_provenance(kquant_gguf, cache):
    d, ref = kquant_gguf
    lm = models.load(params(d))
    prov = provenance.model_provenance(lm)
    w = prov["weights"]
    assert prov["dequantized"] is True and w["dequantized"] is True
    q = w["quantization"]
    assert set(q) == set(ref)
    assert q["token_embd.weight"] == "Q4_K" and q["output.weight"] == "Q6_K"
    assert q["blk.0.attn_v.weight"] == "Q6_K" and q["blk.1.attn_v.weight"] == "Q4_K"
    assert q["blk.0.ffn_down.weight"] == "Q6_K" and q["blk.1.attn_q.weight"] == "Q4_K"
    assert q["blk.0.attn_q.bias"] == "F32" and q["output_norm.weight"] == "F32"
    assert w["quantization_summary"] == {"Q4_K": 13, "F32": 11, "Q6_K": 3}
    assert "Q4_K (13)" in prov["stored_dtype"] and "Q6_K (3)" in prov["stored_dtype"]
    info = json.loads((lm.weights_dir / gguf_source.SOURCE_INFO).read_text())
    assert info["quantization"] == q == gguf_source.quantization(d / FILE)


def tensor_info(buf: bytes, name: str) -> tuple[int, int, int]:
    """Where ``name``'s shape, type and offset lie in the tensor table (after its name: n_dims u32,
    dims u64 each, type u32, offset u64)."""
    key = struct.pack("<Q", len(name)) + name.encode()  # the name as the table stores it: length first
    assert buf.count(key) == 1, name
    i = buf.index(key) + len(key)
    n_dims = struct.unpack_from("<I", buf, i)[0]
    dims_at = i + 4
    return dims_at, dims_at + 8 * n_dims, dims_at + 8 * n_dims + 4


def hostile(data: bytes, case: str) -> bytes:
    b = bytearray(data)
    if case == "truncated in the tensor data":
        return data[: len(data) * 2 // 3]
    if case == "truncated in the header":
        return data[:300]
    if case in ("a tensor running past the end", "a tensor starting past the end"):  # the last tensor, moved on
        _, _, off = tensor_info(data, "output.weight")  # by 64 bytes (aligned) or by a megabyte
        shift = 64 if case == "a tensor running past the end" else 2 ** 20
        struct.pack_into("<Q", b, off, struct.unpack_from("<Q", b, off)[0] + shift)
    elif case == "a tensor overlapping another":  # the offset of the tensor before it: within the file
        _, _, off = tensor_info(data, "output.weight")
        _, _, before = tensor_info(data, "output_norm.weight")
        struct.pack_into("<Q", b, off, struct.unpack_from("<Q", b, before)[0])
    elif case == "a tensor off the alignment":
        _, _, off = tensor_info(data, "output.weight")
        struct.pack_into("<Q", b, off, struct.unpack_from("<Q", b, off)[0] - 4)
    elif case == "tensor count + 1":
        struct.pack_into("<Q", b, 8, struct.unpack_from("<Q", b, 8)[0] + 1)
    elif case == "tensor count 2**40":
        struct.pack_into("<Q", b, 8, 2 ** 40)
    elif case == "key count + 1":
        struct.pack_into("<Q", b, 16, struct.unpack_from("<Q", b, 16)[0] + 1)
    elif case == "key count 2**40":
        struct.pack_into("<Q", b, 16, 2 ** 40)
    elif case == "a 2**40-element F32 tensor":
        dims, _, _ = tensor_info(data, "blk.1.attn_norm.weight")
        struct.pack_into("<Q", b, dims, 2 ** 40)
    elif case == "a 2**40-element Q6_K tensor":
        dims, _, _ = tensor_info(data, "output.weight")
        struct.pack_into("<QQ", b, dims, 2 ** 20, 2 ** 20)
    elif case == "a Q4_K row not a multiple of 256":
        dims, _, _ = tensor_info(data, "blk.0.attn_q.weight")
        struct.pack_into("<QQ", b, dims, 320, 204)
    elif case == "an unknown tensor type":
        _, typ, _ = tensor_info(data, "blk.0.attn_q.weight")
        struct.pack_into("<I", b, typ, 999)
    elif case == "a retired tensor type (Q4_2)":
        _, typ, _ = tensor_info(data, "blk.0.attn_q.weight")
        struct.pack_into("<I", b, typ, 4)
    else:
        raise AssertionError(case)
    return bytes(b)


HOSTILE = ["truncated in the tensor data", "truncated in the header", "a tensor running past the end",
           "a tensor starting past the end", "a tensor overlapping another", "a tensor off the alignment",
           "tensor count + 1", "tensor count 2**40", "key count + 1", "key count 2**40",
           "a 2**40-element F32 tensor", "a 2**40-element Q6_K tensor", "a Q4_K row not a multiple of 256",
           "an unknown tensor type", "a retired tensor type (Q4_2)"]


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_gguf_is_one_line_naming_the_file(kquant_gguf, cache, tmp_path, case):
    d, _ = kquant_gguf
    bad = tmp_path / "bad"
    bad.mkdir()
    f = bad / FILE
    f.write_bytes(hostile((d / FILE).read_bytes(), case))
    p = params(bad)
    calls = {"quantization": lambda: gguf_source.quantization(f),
             "hf_config": lambda: gguf_source.hf_config(models.check(params(d)), f),
             "check": lambda: models.check(p), "load": lambda: models.load(p)}
    for what, call in calls.items():
        t0 = time.monotonic()
        with pytest.raises(models.ModelLoadError) as ei:
            call()
        msg = str(ei.value)
        assert "\n" not in msg and str(f) in msg and "cannot be read" in msg, (what, msg)
        assert time.monotonic() - t0 < 10, what
    assert not (cache / "gguf").exists() or not any((cache / "gguf").iterdir())  # nothing half-written
