"""CTranslate2 folders of each family, written by the real ``ct2-transformers-converter``, rebuilt as transformers.

Tiny models (``tests/formats/ct2_recipes.py``: Llama, Qwen2, Qwen3, Mistral, Gemma, GPT-2, OPT, GPT-NeoX, GPT-J,
BLOOM, Falcon, BERT, RoBERTa, XLM-RoBERTa, DistilBERT, Marian, T5, T5 v1.1) are converted once per module, in
float32 and int8 (and Llama in float16, BERT in int16, GPT-2 in bfloat16), by the exporters' converter
(transformers 4.57, one process for all). Each folder is
read back by :mod:`geolip_lib.models.ct2` and checked four ways: the header (no tensor data read) predicts every
key and shape of the rebuilt folder; every weight equals the original's (bit-equal in float32, within half an int8
step of its row in int8); CTranslate2 itself and the rebuilt model give the same outputs on the same ids (float32:
1e-4 of the scale; int8: 5e-2, CTranslate2 also rounds activations to int8); W_Q, W_K read by the project's catalog
from the rebuilt folder rebuild the original model's eager attention weights. Hostile variants give one line.
Not here, because the converter writes no file: BART (ctranslate2 4.8.5's BartLoader reads
``config.normalize_before``, which transformers 4.57's BartConfig does not have: ``AttributeError``) and Falcon
with ``new_decoder_architecture`` (``AttributeError: 'TransformerDecoderLayerSpec' object has no attribute
'input_layer_norm'``); the Falcon here is the multi-query, parallel-attention layout (Falcon-7B's).
"""
from __future__ import annotations

import os
import shutil
import struct
import time

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from geolip_lib.models import ct2, ct2_file
from tests.formats import ct2_recipes
from tests.unit.models.test_ct2 import write_ct2

#: every family in four stored types (39 conversions by the real converter): CI's families step
#: (``make test-families``); ``make test`` keeps the recipes of params/README.md (tests/formats) and test_ct2.py
pytestmark = [pytest.mark.unit, pytest.mark.families]

FAMILY = {"llama": "decoder_lm", "qwen2": "decoder_lm", "qwen3": "decoder_lm", "mistral": "decoder_lm",
          "gemma": "decoder_lm", "gpt2": "gpt2",
          "opt": "opt", "gpt_neox": "gpt_neox", "gptj": "gptj", "bloom": "bloom", "falcon": "falcon",
          "bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "distilbert": "distilbert",
          "marian": "bart", "t5": "t5", "t5_v1_1": "t5_v1_1"}
#: the model_type each recipe's file is read as (T5 v1.1 is T5's class with a gated FFN and an untied head)
MODEL_TYPE = {n: n for n in FAMILY} | {"t5_v1_1": "t5"}
#: the params file's config: for the files whose structure does not name the model (Llama and Mistral look alike,
#: so do RoBERTa and XLM-RoBERTa)
GIVEN = {n: {"model_type": n} for n in ("llama", "mistral", "roberta", "xlm-roberta")}
CASES = [(n, q) for n in FAMILY for q in ("float32", "int8")] + [("llama", "float16"), ("bert", "int16"),
                                                                 ("gpt2", "bfloat16")]
#: the stored types whose values are rounded (float16 / bfloat16 widen exactly but were rounded when written)
LOSSY = {"int8", "int16", "float16", "bfloat16"}
TIMES: dict = {}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("ct2")
    originals, jobs = {}, []
    for n in FAMILY:
        originals[n] = ct2_recipes.build(n, root / f"{n}-hf")
    jobs += [(f"{n}-{q}", root / f"{n}-hf", root / f"{n}-{q}", q) for n, q in CASES]
    res = ct2_recipes.convert_all(jobs)
    return root, originals, res


@pytest.fixture(scope="module")
def rebuilt(made):
    """(name, quantization) -> (ct2 folder, rebuilt folder, record), converted on first use."""
    root, _, _ = made
    cache: dict = {}

    def get(n, q):
        if (n, q) not in cache:
            t = time.perf_counter()
            rec = ct2.convert(root / f"{n}-{q}", root / f"{n}-{q}-hf", FAMILY[n], GIVEN.get(n))
            TIMES[(n, q, "convert")] = time.perf_counter() - t
            cache[(n, q)] = (root / f"{n}-{q}", root / f"{n}-{q}-hf", rec)
        return cache[(n, q)]
    return get


def _one_line(exc_info, *words):
    msg = str(exc_info.value)
    assert "\n" not in msg, msg
    for w in words:
        assert w in msg, msg


def test_the_converter_wrote_every_folder(made):
    _, _, res = made
    failed = {k: v.get("error") for k, v in res.items() if isinstance(v, dict) and not v["ok"]}
    assert not failed, failed


@pytest.mark.parametrize("name,q", CASES)
def test_header_reads_no_weights_and_predicts_the_rebuilt_folder(rebuilt, name, q, monkeypatch):
    src, out, rec = rebuilt(name, q)
    seen = []
    real = ct2_file.os.pread

    def counting(fd, n, off):
        seen.append(n)
        return real(fd, n, off)
    monkeypatch.setattr(ct2_file.os, "pread", counting)
    h = ct2.header(src, FAMILY[name], GIVEN.get(name))
    monkeypatch.undo()
    size = (src / "model.bin").stat().st_size
    assert sum(seen) < 16_384 < size  # the variable table and the settings only
    # the module's key, saved under the checkpoint's older name by transformers (GPT-NeoX's output projection)
    renamed = {"embed_out.weight": "lm_head.weight"} if name == "gpt_neox" else {}
    saved = {renamed.get(k, k): tuple(v.shape) for k, v in load_file(str(out / "model.safetensors")).items()}
    assert {k: s for k, s in h.tensors.items() if k in saved} == saved
    assert set(rec["filled"]) <= {"final_logits_bias"} and set(rec["filled"]) <= set(h.tensors)
    # not written by save_pretrained: tables tied to model.shared, Marian's sinusoidal tables (recomputed)
    assert set(h.tensors) - set(saved) <= {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
                                           "model.encoder.embed_positions.weight",
                                           "model.decoder.embed_positions.weight"}
    assert h.config["model_type"] == MODEL_TYPE[name] and h.fmt == "CTranslate2" and h.facts["spec"] == rec["spec"]
    assert q in set(h.stored.values()) <= {q, "float32"}
    assert rec["stored"] == h.stored and bool(rec["dequantized"]) == (q in ("int8", "int16"))
    assert all(h.stored[k] == q for k in rec["dequantized"])


@pytest.mark.parametrize("name,q", CASES)
def test_every_weight_equals_the_original(made, rebuilt, name, q):
    root, originals, _ = made
    _, out, rec = rebuilt(name, q)
    want = load_file(str(root / f"{name}-hf" / "model.safetensors"))
    got = load_file(str(out / "model.safetensors"))
    top = max(float(w.abs().max()) for w in want.values())
    assert set(got) == set(want), (sorted(set(got) ^ set(want)))
    for k, w in want.items():
        g = got[k]
        assert g.shape == w.shape and g.dtype == torch.float32, k
        kind = rec["stored"].get({"embed_out.weight": "lm_head.weight"}.get(k, k), "float32")
        if kind == "float32":
            assert torch.equal(g, w), k
        elif kind == "float16":
            assert torch.equal(g, w.half().float()), k
        elif kind == "bfloat16":  # CTranslate2 rounds to nearest (torch's conversion)
            assert torch.equal(g, w.bfloat16().float()), k
        else:  # int8: one scale per output row (127 / max |row|); int16: one per stored tensor (2**10 / max,
            # CTranslate2 keeps 10 bits so that products fit 20; a fused [q; k; v] shares it: the model's largest
            # weight bounds it): at most half a step off
            conv1d = name == "gpt2" and (".attn." in k or ".mlp." in k)  # Conv1D: (in, out), rows are columns
            w2, g2 = (w.T, g.T) if conv1d else (w, g)
            step = w2.abs().amax(1, keepdim=True) / 127 if kind == "int8" else top / 2 ** 10
            assert ((g2 - w2).abs() <= step * 0.5 * (1 + 1e-4) + 1e-8).all(), k
        if kind in LOSSY and w.numel() > 8:
            assert not torch.equal(g, w), k  # the rounding is real: the comparisons above are not vacuous


@pytest.mark.parametrize("name,q", CASES)
def test_ctranslate2_itself_and_the_rebuilt_model_agree(rebuilt, name, q):
    src, out, _ = rebuilt(name, q)
    t = time.perf_counter()
    chk = ct2.check(src, out, FAMILY[name])
    TIMES[(name, q, "check")] = time.perf_counter() - t
    tol = 5e-2 if q == "int8" else 1e-4
    assert chk["max_rel_diff"] <= tol and chk["tolerance"] == tol and "ctranslate2" in chk["against"], chk
    if q != "int8":
        assert chk["max_rel_diff"] < 1e-5  # the same float32 values on both sides: only the summation order differs


@pytest.mark.parametrize("name", list(FAMILY))
def test_the_rebuilt_qk_rebuild_the_original_attention(made, rebuilt, name):
    """The project's catalog reads W_Q, W_K from the rebuilt folder; with them the eager attention weights of the
    *original* model (its modules, hooked) are rebuilt as well as from the original folder's own W_Q, W_K."""
    from geolip_lib import models
    from tests.integration.test_families import reconstruct

    root, originals, _ = made
    _, out, _ = rebuilt(name, "float32")
    for f in (root / f"{name}-hf").glob("tok*"):
        shutil.copy(f, out / f.name)  # a CTranslate2 folder keeps a vocabulary, not the tokenizer: the recipe's
    worst = {}
    for label, folder in (("rebuilt", out), ("original", root / f"{name}-hf")):
        lm = models.load({"name": f"ct2-{name}-{label}", "family": FAMILY[name], "source": "local",
                          "local_dir": str(folder)})
        lm.model = originals[name]
        recs = reconstruct(lm)
        assert recs
        worst[label] = max(r["max_abs"] for r in recs)
    assert worst["rebuilt"] <= max(1e-5, worst["original"] + 1e-6), worst


# ------------------------------------------------------------------------------------------------ hostile files
def _variables(src):
    kinds: dict = {}
    spec, rev, v, aliases = ct2.read(src / "model.bin", kinds=kinds)
    return spec, rev, [(n, a, kinds[n]) for n, a in v.items()], aliases


def _hostile(made, tmp_path, edit, name="llama"):
    root, _, _ = made
    spec, rev, variables, aliases = _variables(root / f"{name}-float32")
    variables = edit(variables)
    d = tmp_path / "bad"
    d.mkdir(exist_ok=True)
    for f in (root / f"{name}-float32").iterdir():
        if f.name != "model.bin":
            shutil.copy(f, d / f.name)
    write_ct2(d / "model.bin", variables, list(aliases.items()), spec=spec, revision=rev)
    return d


def _set(name, value):
    return lambda vs: [(n, (np.array(value, dtype=a.dtype) if n == name else a), k) for n, a, k in vs]


@pytest.mark.parametrize("heads,words", [(0, "is 0"), (3, "is 3"), (-4, "does not divide")])
def test_a_zero_or_lying_head_count_is_one_line(made, tmp_path, heads, words):
    d = _hostile(made, tmp_path, _set("decoder/num_heads", heads))
    for call in (lambda: ct2.header(d, "decoder_lm", GIVEN["llama"]),
                 lambda: ct2.convert(d, tmp_path / "out", "decoder_lm", GIVEN["llama"])):
        with pytest.raises(ValueError) as e:
            call()
        _one_line(e, str(d / "model.bin"), "num_heads", words)


def test_lying_shapes_a_variable_with_no_place_and_a_wrong_family_are_one_line(made, tmp_path):
    cut = lambda vs: [(n, a[:-1] if n == "decoder/layer_1/ffn/linear_0/weight" else a, k) for n, a, k in vs]  # noqa
    d = _hostile(made, tmp_path, cut)
    ct2.header(d, "decoder_lm", GIVEN["llama"])  # the table alone is consistent: layer 0 gives the sizes
    with pytest.raises(ValueError) as e:
        ct2.convert(d, tmp_path / "o1", "decoder_lm", GIVEN["llama"])
    _one_line(e, "model.layers.1.mlp.gate_proj.weight", "[63, 32]", "[64, 32]")
    qkv = lambda vs: [(n, a[:-8] if n.endswith("layer_0/self_attention/linear_0/weight") else a, k)  # noqa
                      for n, a, k in vs]
    with pytest.raises(ValueError) as e:
        ct2.header(_hostile(made, tmp_path, qkv), "decoder_lm", GIVEN["llama"])
    _one_line(e, "self_attention/linear_0", "rows")
    extra = lambda vs: vs + [("decoder/layer_0/self_attention/relative_position_keys",  # noqa
                              np.ones((3, 8), np.float32), "float32")]
    with pytest.raises(ValueError) as e:
        ct2.header(_hostile(made, tmp_path, extra), "decoder_lm", GIVEN["llama"])
    _one_line(e, "'decoder/layer_0/self_attention/relative_position_keys'", "has no place")
    root = made[0]
    with pytest.raises(ValueError) as e:
        ct2.header(root / "llama-float32", "decoder_lm", {})
    _one_line(e, "config: {model_type: llama}")
    with pytest.raises(ValueError) as e:
        ct2.header(root / "bert-float32", "decoder_lm", {})
    _one_line(e, "family bert builds", "family decoder_lm")
    with pytest.raises(ValueError) as e:
        ct2.header(root / "llama-float32", "decoder_lm", {"model_type": "llama", "num_attention_heads": 8})
    _one_line(e, "num_attention_heads is given as 8", "the file says 4")


def test_a_truncated_file_a_fifo_and_a_missing_folder_are_one_line(made, tmp_path):
    root = made[0]
    good = (root / "qwen2-int8" / "model.bin").read_bytes()
    d = tmp_path / "t"
    shutil.copytree(root / "qwen2-int8", d)
    for cut in (3, 200, len(good) // 2, len(good) - 3):
        (d / "model.bin").write_bytes(good[:cut])
        for call in (lambda: ct2.header(d, "decoder_lm"), lambda: ct2.convert(d, tmp_path / "o", "decoder_lm")):
            with pytest.raises(ValueError) as e:
                call()
            _one_line(e, str(d / "model.bin"), "truncated")
    (d / "model.bin").unlink()
    os.mkfifo(d / "model.bin")
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as e:
        ct2.header(d, "decoder_lm")
    _one_line(e, "not a regular file")
    assert time.perf_counter() - t0 < 5
    with pytest.raises(ValueError) as e:
        ct2.header(tmp_path / "nowhere", "decoder_lm")
    _one_line(e, "no such file or folder")
    (d / "model.bin").unlink()
    (d / "model.bin").write_bytes(struct.pack("<I", 6) + good[4:])
    (d / "config.json").write_text("{not json")
    with pytest.raises(ValueError) as e:
        ct2.header(d, "decoder_lm")
    _one_line(e, "config.json", "not JSON")


# ------------------------------------------------------------------------------- Whisper (the test_ct2.py writer)
@pytest.fixture
def whisper_dir(tmp_path):
    """A tiny WhisperSpec folder (fused projections, float16 / bfloat16 weights, the tied projection an alias)."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    from tests.unit.models.test_ct2 import CFG, whisper_variables

    torch.manual_seed(0)
    variables = whisper_variables(WhisperForConditionalGeneration(WhisperConfig(**CFG)).eval())
    d = tmp_path / "faster-whisper-tiny"
    d.mkdir()
    write_ct2(d / "model.bin", variables, [("decoder/projection/weight", "decoder/embeddings/weight")])
    return d, variables


@pytest.mark.parametrize("heads", [0, 3])
def test_a_zero_or_lying_whisper_head_count_is_one_line(whisper_dir, tmp_path, heads):
    """A ``num_heads`` of 0 (once a ZeroDivisionError deep in the conversion) or one that does not divide d_model."""
    _, variables = whisper_dir
    bad = [(n, np.array(heads, dtype=np.int16) if n == "decoder/num_heads" else a, k) for n, a, k in variables]
    d = tmp_path / "bad"
    d.mkdir()
    write_ct2(d / "model.bin", bad, [("decoder/projection/weight", "decoder/embeddings/weight")])
    with pytest.raises(ValueError) as e:
        ct2.convert(d, tmp_path / "out")
    _one_line(e, "decoder/num_heads is", str(heads), "does not divide d_model 32")
    assert not (tmp_path / "out").exists()


def test_the_whisper_header_reads_no_weights_and_predicts_the_converted_folder(whisper_dir, tmp_path):
    d, _ = whisper_dir
    h = ct2.header(d, "whisper")
    ct2.convert(d, tmp_path / "hf", "whisper")
    saved = {k: tuple(v.shape) for k, v in load_file(str(tmp_path / "hf" / "model.safetensors")).items()}
    assert h.tensors == saved and h.fmt == "CTranslate2" and h.facts["spec"] == "WhisperSpec"
    assert (h.config["model_type"], h.config["d_model"], h.config["encoder_attention_heads"]) == ("whisper", 32, 4)
    assert h.stored["model.encoder.layers.0.self_attn.q_proj.weight"] == "float16"
    assert h.stored["model.decoder.layers.1.fc1.weight"] == "bfloat16"
    with pytest.raises(ValueError) as e:
        ct2.header(d, "bert")
    _one_line(e, "WhisperSpec", "family bert")
