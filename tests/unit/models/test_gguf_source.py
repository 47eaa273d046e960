"""GGUF as a model source (``source: gguf``): a tiny Llama written here with the ``gguf`` package's own
writer (as llama.cpp's converter writes one: W_Q / W_K permuted for its rotary layout, a byte-level BPE
vocabulary in the metadata) loads through a params file and gives back its source's weights —
exactly for F32 tensors, and exactly the ``gguf`` package's own quantize → dequantize round trip for
Q8_0 / Q4_1 ones (within half a quantization step of the source). Its provenance says dequantized,
with each tensor's stored type and the file's sha256.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType, GGUFWriter, TokenType
from gguf.quants import dequantize, quantize
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.convert_slow_tokenizer import bytes_to_unicode

from geolip_lib import models, provenance
from geolip_lib.models import gguf as gguf_source
from geolip_lib.params import load_model_params

pytestmark = pytest.mark.unit

N_HEAD, N_KV, HIDDEN, FFN, LAYERS = 4, 2, 64, 128, 2
MERGES = ["Ġ t", "t h", "Ġt h"]
#: stored type of each GGUF tensor (the rest F32): attention's W_Q in Q8_0, the MLP in Q4_1 (SmolLM2's type)
QUANT = {"attn_q": GGMLQuantizationType.Q8_0, "ffn_gate": GGMLQuantizationType.Q4_1,
         "ffn_up": GGMLQuantizationType.Q4_1, "ffn_down": GGMLQuantizationType.Q4_1}
#: GGUF tensor -> transformers parameter, for one block
BLOCK = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
         "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
         "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf permutation of W_Q / W_K rows (transformers undoes it on load)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def vocabulary() -> tuple[list[str], list[int]]:
    tokens = list(bytes_to_unicode().values()) + [a + b for a, b in (m.split(" ") for m in MERGES)] + ["<|endoftext|>"]
    types = [TokenType.NORMAL] * (len(tokens) - 1) + [TokenType.CONTROL]
    return tokens, types


def source_model(seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(vocabulary()[0]), hidden_size=HIDDEN, intermediate_size=FFN,
                      num_hidden_layers=LAYERS, num_attention_heads=N_HEAD, num_key_value_heads=N_KV,
                      max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False)
    m = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # norms away from 1 so that a dropped or misplaced norm would show
        for n, p in m.named_parameters():
            if "norm" in n:
                p.copy_(1 + 0.1 * torch.randn_like(p))
    return m


def write_gguf(path: Path, model: LlamaForCausalLM) -> dict[str, np.ndarray]:
    """``model`` as a GGUF file; returns ``transformers parameter -> the values the file holds``
    (what a dequantizing loader must give back)."""
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    w = GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama-test")
    w.add_context_length(128)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    w.add_rope_dimension_count(HIDDEN // N_HEAD)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(vocabulary()[0]))
    tokens, types = vocabulary()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_bos_token_id(len(tokens) - 1)
    w.add_eos_token_id(len(tokens) - 1)
    expected: dict[str, np.ndarray] = {}

    def add(gguf_name: str, hf_name: str, arr: np.ndarray, stored: np.ndarray, qtype=None) -> None:
        if qtype is None:
            w.add_tensor(gguf_name, stored)
            expected[hf_name] = arr
        else:
            packed = quantize(stored, qtype)
            w.add_tensor(gguf_name, packed, raw_dtype=qtype)
            back = dequantize(packed, qtype).reshape(stored.shape)
            if gguf_name.endswith(("attn_q.weight", "attn_k.weight")):  # the loader undoes the permutation
                n = N_HEAD if "attn_q" in gguf_name else N_KV
                back = back.reshape(n, HIDDEN // N_HEAD // 2, 2, -1).swapaxes(1, 2).reshape(stored.shape)
            expected[hf_name] = back

    add("token_embd.weight", "model.embed_tokens.weight", sd["model.embed_tokens.weight"],
        sd["model.embed_tokens.weight"])
    add("output_norm.weight", "model.norm.weight", sd["model.norm.weight"], sd["model.norm.weight"])
    add("output.weight", "lm_head.weight", sd["lm_head.weight"], sd["lm_head.weight"])
    for i in range(LAYERS):
        for g, h in BLOCK.items():
            name = f"model.layers.{i}.{h}.weight"
            arr = sd[name]
            stored = permute(arr, N_HEAD) if g == "attn_q" else permute(arr, N_KV) if g == "attn_k" else arr
            add(f"blk.{i}.{g}.weight", name, arr, stored, QUANT.get(g))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    d = tmp_path_factory.mktemp("gguf")
    src = source_model()
    expected = write_gguf(d / "tiny-llama.Q.gguf", src)
    return d, src, expected


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def params(folder: Path) -> dict:
    return {"name": "tiny-gguf", "family": "decoder_lm", "source": "gguf", "local_dir": str(folder),
            "gguf_file": "tiny-llama.Q.gguf", "description": "test"}


def test_gguf_loads_with_the_weights_it_holds(tiny_gguf, cache):
    d, src, expected = tiny_gguf
    lm = models.load(params(d))
    got = {k: v.detach().numpy() for k, v in lm.model.state_dict().items()}
    assert set(expected) <= set(got)
    for name, want in expected.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)  # exact: F32 as stored, quantized as dequantized
    srcd = {k: v.detach().numpy() for k, v in src.state_dict().items()}
    for name in expected:
        g = next((k for k in QUANT if BLOCK.get(k, "\0") in name), None)
        if g is None:
            np.testing.assert_array_equal(got[name], srcd[name], err_msg=name)  # F32: the source itself
        else:  # within half a step of the block's scale (Q8_0: amax / 127; Q4_1: (max - min) / 15), fp16 scales
            blocks = srcd[name].reshape(-1, 32)
            step = (np.abs(blocks).max(1) / 127 if QUANT[g] == GGMLQuantizationType.Q8_0
                    else (blocks.max(1) - blocks.min(1)) / 15)
            err = np.abs(got[name].reshape(-1, 32) - blocks).max(1)
            assert np.all(err <= 0.5 * step * 1.01 + 1e-3 * np.abs(blocks).max(1)), name
            assert np.any(err > 0), name  # quantized for real
    # the same forward as the source model would compute with those weights, and a working tokenizer
    ids = lm.tokenizer("the theme", return_tensors="pt")["input_ids"]
    assert ids.shape[1] >= 2 and lm.tokenizer.decode(ids[0]).endswith("the theme")
    ref = source_model()
    ref.load_state_dict({k: torch.from_numpy(v) for k, v in expected.items()}, strict=False)
    with torch.no_grad():
        torch.testing.assert_close(lm.model(ids).logits, ref(ids).logits, rtol=1e-5, atol=1e-5)


def test_provenance_says_dequantized_with_each_tensors_type(tiny_gguf, cache):
    d, _, _ = tiny_gguf
    lm = models.load(params(d))
    prov = provenance.model_provenance(lm)
    f = d / "tiny-llama.Q.gguf"
    assert prov["dequantized"] is True and prov["source"] == "gguf"
    w = prov["weights"]
    assert w["dequantized"] is True
    assert w["gguf_file"] == {"name": f.name, "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
                              "bytes": f.stat().st_size}
    assert w["quantization"]["blk.0.attn_q.weight"] == "Q8_0"
    assert w["quantization"]["blk.1.ffn_down.weight"] == "Q4_1"
    assert w["quantization"]["blk.0.attn_k.weight"] == "F32"
    assert w["quantization_summary"] == {"F32": 3 + LAYERS * 5, "Q4_1": LAYERS * 3, "Q8_0": LAYERS}
    assert prov["stored_dtype"].startswith("dequantized from GGUF")
    # the battery reads the dequantized safetensors copy, written once; a second load reads it (no dequantizing)
    wd = lm.weights_dir
    assert wd.parent == cache / "gguf" and any(wd.glob("*.safetensors"))
    assert prov["weights_copy"] == str(wd)
    before = {p: p.stat().st_mtime_ns for p in wd.iterdir()}
    lm2 = models.load(params(d))
    assert lm2.weights_dir == wd and {p: p.stat().st_mtime_ns for p in wd.iterdir()} == before
    assert gguf_source.quantization(f) == w["quantization"]


def test_gguf_schema_and_missing_file_are_one_line(tiny_gguf, cache, tmp_path):
    d, _, _ = tiny_gguf
    with pytest.raises(models.ParamsError, match="source gguf needs gguf_file"):
        models.load({**params(d), "gguf_file": None})
    with pytest.raises(models.ParamsError, match="local_dir: or the wheels shipping it as package:"):
        models.load({k: v for k, v in params(d).items() if k != "local_dir"})
    with pytest.raises(models.ParamsError, match="gguf_file: is read by source gguf only"):
        models.load({**params(d), "source": "local"})
    with pytest.raises(models.ModelLoadError, match=r"GGUF file .*nope\.gguf does not exist"):
        models.load({**params(d), "gguf_file": "nope.gguf"})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tiny-llama.Q.gguf").write_bytes(b"GGUF" + b"\0" * 20)
    with pytest.raises(models.ModelLoadError) as ei:
        models.check({**params(bad)})
    assert "\n" not in str(ei.value) and "cannot be read" in str(ei.value)
    with pytest.raises(models.ModelLoadError, match="cannot describe this model"):
        models.load({**params(d), "family": "bert"})


@pytest.mark.parametrize("config, words", [({"num_hidden_layers": 1}, "num_hidden_layers 1, the file stores 2 layers"),
                                           ({"hidden_size": 48}, "hidden_size 48")])
def test_a_config_the_tensor_infos_contradict_is_refused_before_a_kernel(tiny_gguf, cache, config, words):
    """A config: that drops layers, or a width the stored tensors do not have, is one line from the
    header alone (models.check and the runner's stored-weights check), naming the tensor or the layer count."""
    from geolip_lib.models import preflight
    from geolip_lib.models.common import ModelLoadError

    d, _, _ = tiny_gguf
    p = load_model_params({**params(d), "config": config})
    for call in (lambda: models.check(p), lambda: preflight.check_stored_model(p)):
        with pytest.raises(ModelLoadError) as ei:
            call()
        assert words in str(ei.value) and "\n" not in str(ei.value) and "tiny-gguf" in str(ei.value)
    assert not (cache / "gguf").exists() or not [x for x in (cache / "gguf").iterdir() if x.is_dir()]
    preflight.check_stored_model(load_model_params(params(d)))  # the file's own config passes


def test_prepare_builds_the_dequantized_folder_once_before_any_job(tiny_gguf, cache):
    """Set-up builds the dequantized folder (models.prepare) so that the first job does not pay for it
    inside its time limit (Qwen2.5-Coder: 13-16 min); a second prepare, and the load, read the same folder."""
    d, _, expected = tiny_gguf
    out = models.prepare(params(d))
    assert out is not None and (out / gguf_source.SOURCE_INFO).is_file()
    stamp = (out / gguf_source.SOURCE_INFO).stat().st_mtime_ns
    assert models.prepare(params(d)) == out and (out / gguf_source.SOURCE_INFO).stat().st_mtime_ns == stamp
    lm = models.load(params(d))
    got = dict(lm.model.named_parameters())
    assert torch.equal(got["model.layers.0.self_attn.q_proj.weight"].detach(),
                       torch.from_numpy(expected["model.layers.0.self_attn.q_proj.weight"]))
    assert [p.name for p in (cache / "gguf").iterdir()] == [out.name]  # nothing built twice
    assert models.prepare("tiny-bert") is None  # a model loaded as it is stored needs no derived folder


def test_set_up_prepares_each_profile_model_once_and_then_skips_it(tiny_gguf, cache, tmp_path, monkeypatch, capsys):
    """scripts/fetch_packaged.py: after the fetch, a gguf model is prepared and stamped (the params file's sha256
    and the folder); the next set-up reads the stamp (YAML only) and does nothing; an edited params file or a
    removed folder prepares again."""
    import importlib.util

    import yaml

    spec = importlib.util.spec_from_file_location("fetch_packaged", Path(__file__).resolve().parents[3]
                                                  / "scripts" / "fetch_packaged.py")
    fp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fp)
    pdir = tmp_path / "params"
    (pdir / "models").mkdir(parents=True)
    (pdir / "models" / "tiny-gguf.yaml").write_text(yaml.safe_dump(params(tiny_gguf[0])), encoding="utf-8")
    monkeypatch.setattr(fp, "PARAMS", pdir)
    from geolip_lib.models import packaged, sources

    monkeypatch.setattr(packaged, "packaged_models", lambda names: [])  # nothing packaged: the fetch itself is idle
    built = []
    monkeypatch.setattr(models, "prepare", lambda name: built.append(name) or sources.prepare(
        load_model_params(pdir / "models" / f"{name}.yaml")))  # the params file of this test's folder
    assert not fp._prepared_by_yaml("tiny-gguf")
    assert fp.main(["tiny-gguf"]) == 0
    assert "prepared" in capsys.readouterr().out and fp._prepared_by_yaml("tiny-gguf")
    assert fp.main(["tiny-gguf"]) == 0 and "nothing to fetch" in capsys.readouterr().out
    with open(pdir / "models" / "tiny-gguf.yaml", "a", encoding="utf-8") as fh:
        fh.write("# edited\n")
    assert not fp._prepared_by_yaml("tiny-gguf")
    assert fp.main(["tiny-gguf", "--no-prepare"]) == 0 and "nothing to fetch" in capsys.readouterr().out
    assert fp.main(["tiny-gguf"]) == 0 and built == ["tiny-gguf", "tiny-gguf"]  # the edit: prepared (found) again
    assert len(list((cache / "gguf").iterdir())) == 1
