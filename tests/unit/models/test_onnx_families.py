"""ONNX files of every transformer family read back into the transformers state dict (``onnx_import``).

Each recipe of ``tests/formats/onnx_recipes.py`` (a tiny model, every parameter perturbed) is exported the ways
users do it -- ``torch.onnx.export(dynamo=True)`` here, as params/README.md documents it (``optimize=False``:
"dynamo") and with torch's default optimizer (Linear weights folded into transposed copies: "dynamo-opt"), and
``optimum-cli export onnx`` (its function, in the exporters' environment) -- then converted with
:func:`onnx_import.convert`; for each:

* every weight of the rebuilt model equals the original's bit for bit (float32); Gemma's norms, which optimized
  exports store folded as ``1 + weight``, to the rounding of that sum;
* W_Q, W_K of layer 0 read from the rebuilt folder reproduce the original model's eager attention weights (the
  reconstruction of ``tests/integration/test_families.py``);
* :func:`onnx_import.check` runs the graph and the rebuilt model on the same inputs (relative 1e-4).

What an exporter cannot export, or what the import cannot rebuild yet, is asserted as it is (the exporter's
error; one line from the import), so a change on either side shows here. Exports are cached in
``.cache/onnx_exports/`` under a key of the recipes file, torch, transformers and onnx versions (like the tiny
models; the root honours ``GEOLIP_CACHE``), so only the first run pays for them: this file with
test_onnx_import, test_rebuild and test_shapes took 4 min 55 s on a fresh cache on 2 shared cores, of which ~3 min
are the 42 dynamo exports with their conversions, ~15 s Optimum's 21 exports.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

onnx = pytest.importorskip("onnx")
import transformers  # noqa: E402

from geolip_lib.models import onnx_graph, onnx_import  # noqa: E402
from geolip_lib.models.onnx_graph import OnnxImportError  # noqa: E402
from geolip_lib.paths import ROOT, cache_root  # noqa: E402

#: the whole families x exporters matrix (63 exports, about 4 minutes on a fresh cache) is CI's families step
#: (``make test-families``), with the notebooks per family; ``make test`` keeps the recipes of params/README.md
#: (tests/formats: four families, every format) and this file's one-file tests through ``-m families`` only
pytestmark = [pytest.mark.unit, pytest.mark.families]


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


R = _module("onnx_recipes", ROOT / "tests" / "formats" / "onnx_recipes.py")
CACHE = cache_root() / "onnx_exports"
#: exporter -> how: "dynamo" is params/README.md's recipe (``optimize=False``), "dynamo-opt" torch's default
#: optimized graph (Linear weights folded into transposed anonymous copies), "optimum" Optimum's command
EXPORTERS = ("dynamo", "dynamo-opt", "optimum")

#: what does not work yet, asserted as it is: (exporter, recipe) -> words of the one-line error
NOT_YET = {
    ("dynamo", "t5"): "Cannot view a tensor",  # torch.export's decomposition of T5 with dynamic shapes
    ("dynamo-opt", "t5"): "Cannot view a tensor",
    ("dynamo-opt", "deberta-v2"): "relative_attention",  # rel_embeddings folded with pos_*_proj into constants
    ("optimum", "deberta-v2"): "relative_attention",  # rel_embeddings folded into the pos_*_proj input
    ("dynamo-opt", "clip"): "optimize=False",  # exp(logit_scale) and the vision position lookup folded
}
#: Optimum's feature-extraction graphs return the hidden states only: no pooler in the file, and the class is
#: rebuilt without one (``add_pooling_layer=False``), never with a made-up one
NO_POOLER = {("optimum", n) for n in ("bert", "roberta", "xlm-roberta", "mpnet", "albert", "vit")}
CASES = [(e, n) for e in EXPORTERS for n in R.RECIPES if (e, n) not in NOT_YET]


def _params(cases) -> list:
    return [pytest.param(e, n, id=f"{e}-{n}") for e, n in cases]


def _key(exporter: str) -> str:
    h = hashlib.sha256()
    for part in ((ROOT / "tests" / "formats" / "onnx_recipes.py").read_bytes(), torch.__version__.encode(),
                 transformers.__version__.encode(), onnx.__version__.encode(), exporter.encode()):
        h.update(part)
    return h.hexdigest()[:12]


def _cached(exporter: str, name: str) -> Path:
    return CACHE / f"{exporter}-{_key(exporter)}" / name


def _done(d: Path) -> dict | None:
    f = d / "export.json"
    return json.loads(f.read_text()) if f.is_file() else None


def dynamo_export(name: str, exporter: str = "dynamo") -> dict:
    """The recipe exported by dynamo (once; cached): ``{"dir", "file", "seconds"}`` or ``{"error"}``;
    ``exporter`` "dynamo" (``optimize=False``) or "dynamo-opt" (optimized)."""
    d = _cached(exporter, name)
    if _done(d) is None:
        tmp = d.with_name(d.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            secs = R.export_dynamo(R.build(name), name, tmp / "model.onnx", optimize=exporter == "dynamo-opt")
            info = {"file": "model.onnx", "seconds": round(secs, 1)}
        except Exception as e:  # the exporter's own failure is a result: asserted in NOT_YET
            info = {"error": f"{type(e).__name__}: {' '.join(str(e).split())}"}
        (tmp / "export.json").write_text(json.dumps(info))
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)
    return {**_done(d), "dir": d}


@pytest.fixture(scope="module")
def optimum_exports():
    """Every recipe exported by Optimum, in one exporters' process (once; cached)."""
    todo = [n for n in R.RECIPES if _done(_cached("optimum", n)) is None]
    if todo:
        jobs = []
        for n in todo:
            d = _cached("optimum", n)
            shutil.rmtree(d, ignore_errors=True)
            R.save(n, R.build(n), d / "hf")
            jobs.append((d / "hf", d / "onnx", R.RECIPES[n][5]))
        res = R.export_optimum(jobs)
        for n in todo:
            d = _cached("optimum", n)
            r = res[str(d / "hf")]
            kind = R.RECIPES[n][4]
            info = ({"file": "onnx/" + ("encoder_model.onnx" if kind == "seq2seq" else "model.onnx"),
                     "seconds": round(r["seconds"], 1)} if r["ok"] else {"error": r["error"]})
            (d / "export.json").write_text(json.dumps(info))
    return {n: {**_done(_cached("optimum", n)), "dir": _cached("optimum", n)} for n in R.RECIPES}


def _export(exporter: str, name: str, optimum_exports) -> dict:
    return optimum_exports[name] if exporter == "optimum" else dynamo_export(name, exporter)


def _given(exporter: str, name: str, model) -> dict:
    """Optimum writes config.json beside the file; a dynamo export gets the recipe's config as ``config:``."""
    return {} if exporter == "optimum" else {**R.RECIPES[name][3], "model_type": model.config.model_type}


_CONVERTED: dict = {}


def converted(exporter: str, name: str, optimum_exports, tmp_root: Path) -> dict:
    key = (exporter, name)
    if key not in _CONVERTED:
        ex = _export(exporter, name, optimum_exports)
        assert "error" not in ex, f"{exporter} cannot export {name}: {ex['error']}"
        model = R.build(name)
        out = tmp_root / f"{exporter}-{name}"
        rec = onnx_import.convert(ex["dir"] / ex["file"], out, R.RECIPES[name][0], _given(exporter, name, model))
        _CONVERTED[key] = {"record": rec, "out": out, "model": model, "file": ex["dir"] / ex["file"]}
    return _CONVERTED[key]


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx_families")


@pytest.mark.parametrize("exporter, name", _params(CASES))
def test_weights_are_the_originals(exporter, name, optimum_exports, tmp_root):
    c = converted(exporter, name, optimum_exports, tmp_root)
    cfg = json.loads((c["out"] / "config.json").read_text())
    kw = c["record"]["written"]["init_kwargs"]
    rebuilt = getattr(transformers, cfg["architectures"][0]).from_pretrained(c["out"], **kw).eval()
    want, have = c["model"].state_dict(), rebuilt.state_dict()
    if (exporter, name) in NO_POOLER:  # the file holds no pooler: the folder neither
        assert kw == {"add_pooling_layer": False}
        assert any("no pooler in the file" in n for n in c["record"]["notes"])
        want = {k: v for k, v in want.items() if not k.startswith("pooler")}
        assert not any("pooler" in k for k in have)
    else:
        assert kw == {}
    if exporter != "optimum" and name in ("bart", "marian"):  # the shared table once, under a tied copy's name
        assert set(c["record"]["written"]["from_twin"]) == {"model.shared.weight"}
        assert any("model.shared.weight: not in the file" in n for n in c["record"]["notes"])
    assert type(rebuilt) is type(c["model"])
    assert set(want) <= set(have), sorted(set(want) - set(have))[:5]
    offsets = {p["key"] for p in c["record"]["placements"] if p.get("offset")}
    for k, v in want.items():
        if k in offsets:  # stored as fl(1 + w): exact to the rounding of that sum
            assert torch.allclose(have[k], v, rtol=0, atol=2.0 ** -23), k
        elif k.endswith("mask_token") and name == "dinov2":  # unused at inference, in no graph
            assert not have[k].any()
        else:
            assert torch.equal(have[k], v), k
    hows = {p["how"] for p in c["record"]["placements"]}
    assert hows <= {"name", "node", "metadata"} and "name" in hows
    assert all(p["shape"] == list(have[p["key"]].shape) for p in c["record"]["placements"] if p["key"] in have)
    if exporter == "dynamo":  # optimize=False keeps each weight as torch holds it, the Transpose a node
        assert not c["record"]["transposed"]
    elif name not in ("gpt2",):  # GPT-2's Conv1D weights are (in, out) in torch too: kept by name, not transposed
        assert c["record"]["transposed"], "no Linear weight was transposed back from (in, out)"
    folds = name == "gemma" and exporter != "dynamo"  # optimize=False keeps the gain; 1 + w is a node
    assert offsets == ({k for k in want if k.endswith("norm.weight")} if folds else set())


@pytest.mark.parametrize("exporter, name", _params(CASES))
def test_running_both_agrees(exporter, name, optimum_exports, tmp_root):
    c = converted(exporter, name, optimum_exports, tmp_root)
    chk = onnx_import.check(c["file"], c["out"], R.RECIPES[name][0])
    assert chk["max_rel_diff"] <= 1e-4 and chk["parts"]
    if exporter == "optimum" and R.RECIPES[name][4] == "seq2seq":  # every part of the set was run
        assert {p["file"] for p in chk["parts"]} == {"encoder_model.onnx", "decoder_model.onnx",
                                                     "decoder_with_past_model.onnx", "decoder_model_merged.onnx"}


_TF = None
#: fused q|k|v projections with a bias: the reconstruction helper adds no q/k bias for a fused block (GPT-2's
#: ``c_attn.bias``, GPT-NeoX's ``query_key_value.bias``; the project's tiny models have zero biases, so it never
#: showed there): those biases are zeroed in both models before the reconstruction; the weights test above has
#: checked them bit for bit
FUSED_QKV_BIAS = {"gpt2": "attn.c_attn.bias", "gpt_neox": "attention.query_key_value.bias"}


def _zero_fused_bias(model, safetensors_file: Path, suffix: str) -> None:
    from safetensors.torch import load_file, save_file

    with torch.no_grad():
        for k, p in model.named_parameters():
            if k.endswith(suffix):
                p.zero_()
    sd = load_file(str(safetensors_file))
    save_file({k: torch.zeros_like(v) if k.endswith(suffix) else v for k, v in sd.items()}, str(safetensors_file),
              metadata={"format": "pt"})


@pytest.mark.parametrize("exporter, name", _params(CASES))
def test_attention_of_layer_0_is_rebuilt(exporter, name, optimum_exports, tmp_root, tmp_path):
    """W_Q, W_K of the rebuilt folder reproduce the original model's eager attention weights (layer 0)."""
    global _TF
    from geolip_lib import models

    if _TF is None:
        _TF = _module("onnx_families_reconstruct", ROOT / "tests" / "integration" / "test_families.py")
    c = converted(exporter, name, optimum_exports, tmp_root)
    folder = tmp_path / "rebuilt"
    shutil.copytree(c["out"], folder)
    R.tokenizer().save_pretrained(folder)
    original = R.build(name)
    if name in FUSED_QKV_BIAS:  # see FUSED_QKV_BIAS: the same zeros in the original and in the rebuilt folder
        _zero_fused_bias(original, folder / "model.safetensors", FUSED_QKV_BIAS[name])
    lm = models.load({"name": f"onnx-{exporter}-{name}", "family": R.RECIPES[name][0], "source": "local",
                      "local_dir": str(folder)})
    lm.model = original
    recs = _TF.reconstruct(lm, layer_limit=1)
    assert recs and max(r["max_abs"] for r in recs) <= 1e-5, recs


@pytest.mark.parametrize("exporter, name", _params(sorted(NOT_YET)))
def test_what_does_not_work_yet_says_so_in_one_line(exporter, name, optimum_exports, tmp_root):
    ex = _export(exporter, name, optimum_exports)
    if "error" in ex:  # the exporter itself fails
        assert NOT_YET[(exporter, name)] in ex["error"], ex["error"]
        return
    model = R.build(name)
    with pytest.raises(ValueError) as ei:
        onnx_import.convert(ex["dir"] / ex["file"], tmp_root / f"no-{exporter}-{name}", R.RECIPES[name][0],
                            _given(exporter, name, model))
    assert "\n" not in str(ei.value) and NOT_YET[(exporter, name)] in str(ei.value), str(ei.value)


# ------------------------------------------------------------------------------------------ header, hostile files
def _copy_export(ex: dict, dst: Path) -> Path:
    """The export's folder copied (the ONNX file and its external data), so a test may damage it."""
    src = (ex["dir"] / ex["file"]).parent
    shutil.copytree(src, dst)
    return dst / Path(ex["file"]).name


def _one_line(fn, *words):
    with pytest.raises(OnnxImportError) as ei:
        fn()
    msg = str(ei.value)
    assert "\n" not in msg and all(w in msg for w in words), msg
    return msg


def test_header_reads_no_tensor_data_and_asks_for_the_heads(tmp_path, monkeypatch):
    path = _copy_export(dynamo_export("bert", "dynamo-opt"), tmp_path / "bert")
    data = path.with_name(path.name + ".data")
    assert data.is_file()  # torch writes the weights as external data

    def no_data(*a, **k):
        raise AssertionError("the header read tensor data")

    monkeypatch.setattr(onnx_graph, "array", no_data)  # every tensor's bytes go through these two
    monkeypatch.setattr(onnx_graph, "_external", no_data)
    h = onnx_import.header(path, "bert", {"model_type": "bert", "num_attention_heads": 4})
    assert h.fmt == "ONNX" and h.config["hidden_size"] == 32 and h.config["num_hidden_layers"] == 2
    assert h.tensors["encoder.layer.0.attention.self.query.weight"] == (32, 32)
    assert h.stored["encoder.layer.0.attention.self.query.weight"] == "float32"
    assert h.facts["inputs"]["model.onnx"] == ["input_ids", "attention_mask"] and h.facts["opset"] >= 18
    assert any("transposed" in n for n in h.notes)
    assert not any(k.startswith("_") for k in h.config)  # a plain transformers config; what was read: facts
    assert h.facts["inferred"]["class"] == "BertModel" and "hidden_size" in h.facts["inferred"]["read"]
    monkeypatch.undo()
    data.write_bytes(b"")  # the data gone: its ranges are checked by stat, before any kernel and any conversion
    given = {"model_type": "bert", "num_attention_heads": 4}
    _one_line(lambda: onnx_import.header(path, "bert", given), "model.onnx.data")
    _one_line(lambda: onnx_import.convert(path, tmp_path / "out", "bert", given), "model.onnx.data")
    with pytest.raises(ValueError) as ei:  # heads cannot be read from shapes: asked for by name
        onnx_import.header(path, "bert", {"model_type": "bert"})
    assert "num_attention_heads" in str(ei.value) and "\n" not in str(ei.value)


def test_hostile_files(tmp_path):
    ex = dynamo_export("bert")
    given = {"model_type": "bert", "num_attention_heads": 4}
    # a FIFO named like the model: refused before anything opens it
    os.mkfifo(tmp_path / "fifo.onnx")
    _one_line(lambda: onnx_import.header(tmp_path / "fifo.onnx", "bert", given), "not a regular file")
    # a truncated file
    path = _copy_export(ex, tmp_path / "cut")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    _one_line(lambda: onnx_import.header(path, "bert", given), "model.onnx")
    # lying shapes: dims that the stored bytes do not hold
    path = _copy_export(ex, tmp_path / "lie")
    proto = onnx.load(str(path), load_external_data=False)
    t = next(t for t in proto.graph.initializer if t.name == "embeddings.word_embeddings.weight")
    t.dims[0] += 1
    onnx.save(proto, str(path))
    _one_line(lambda: onnx_import.convert(path, tmp_path / "o1", "bert", {**given, "vocab_size": R.VOCAB + 1}),
              "embeddings.word_embeddings.weight", "need")
    # external data outside the folder, and a truncated data file
    path = _copy_export(ex, tmp_path / "out_of_folder")
    proto = onnx.load(str(path), load_external_data=False)
    t = next(t for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    for e in t.external_data:
        if e.key == "location":
            e.value = "../model.onnx.data"
    onnx.save(proto, str(path))
    shutil.copy(path.with_name("model.onnx.data"), tmp_path / "model.onnx.data")
    _one_line(lambda: onnx_import.convert(path, tmp_path / "o2", "bert", given), "../model.onnx.data", "refused")
    path = _copy_export(ex, tmp_path / "short_data")
    data = path.with_name("model.onnx.data")
    data.write_bytes(data.read_bytes()[:-100])
    _one_line(lambda: onnx_import.convert(path, tmp_path / "o3", "bert", given), "lies outside")


def test_parts_that_disagree_are_refused(optimum_exports, tmp_path):
    """Optimum's decoder parts hold the same tensors: one that differs between two parts is one line."""
    ex = optimum_exports["t5"]
    path = _copy_export(ex, tmp_path / "t5")
    past = path.with_name("decoder_with_past_model.onnx")
    proto = onnx.load(str(past))
    t = next(t for t in proto.graph.initializer if t.name == "decoder.final_layer_norm.weight")
    a = onnx.numpy_helper.to_array(t).copy()
    a[0] += 1.0
    t.CopyFrom(onnx.numpy_helper.from_array(a, t.name))
    onnx.save(proto, str(past))
    _one_line(lambda: onnx_import.convert(path, tmp_path / "out", "t5", {}), "decoder.final_layer_norm.weight",
              "different values")


def test_a_fixed_shape_export_is_named_with_how_to_export_again(tmp_path):
    """A dynamo export without dynamic shapes folds the position table to the rows used: one line saying so."""
    d = _cached("dynamo", "bert-static")
    if _done(d) is None:
        d.mkdir(parents=True, exist_ok=True)
        torch.onnx.export(R.build("bert"), (), str(d / "model.onnx"), kwargs=R.inputs("bert"), dynamo=True)
        (d / "export.json").write_text(json.dumps({"file": "model.onnx"}))
    msg = _one_line(lambda: onnx_import.convert(d / "model.onnx", tmp_path / "out", "bert",
                                                {"model_type": "bert", "num_attention_heads": 4}),
                    "fixed shapes", "dynamic")
    assert "position_embeddings" in msg


def test_optimum_parts_with_external_data_are_read(optimum_exports, tmp_path):
    """Optimum writes large models' weights beside each part (``*.onnx_data``): the same tensors come back."""
    ex = optimum_exports["bart"]
    src = (ex["dir"] / ex["file"]).parent
    (tmp_path / "ext").mkdir()
    for f in src.glob("*.onnx"):
        onnx.save_model(onnx.load(str(f)), str(tmp_path / "ext" / f.name), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=f.name + "_data", size_threshold=0)
    shutil.copy(src / "config.json", tmp_path / "ext" / "config.json")
    assert (tmp_path / "ext" / "encoder_model.onnx_data").is_file()
    rec = onnx_import.convert(tmp_path / "ext" / "decoder_model.onnx", tmp_path / "out", "bart", {})
    assert {f["name"] for f in rec["files"]} == {"encoder_model.onnx", "decoder_model.onnx",
                                                 "decoder_with_past_model.onnx", "decoder_model_merged.onnx"}
    want = R.build("bart").state_dict()
    have = transformers.BartForConditionalGeneration.from_pretrained(tmp_path / "out").state_dict()
    assert all(torch.equal(have[k], v) for k, v in want.items())
    assert onnx_import.check(tmp_path / "ext" / "encoder_model.onnx", tmp_path / "out", "bart")["max_rel_diff"] <= 1e-4


class _Wrapped(torch.nn.Module):
    """A model inside a larger one (a backbone under a head), as applications export them."""

    def __init__(self, inner):
        super().__init__()
        self.backbone = inner
        self.head = torch.nn.Linear(inner.config.hidden_size, 3)

    def forward(self, input_ids, attention_mask):
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask)
        return self.head(out.last_hidden_state), out.pooler_output  # the pooler used: its weights in the graph


def test_a_wrapped_model_is_read_under_its_prefix(tmp_path):
    """``prefix="backbone"``: the backbone's tensors without the prefix the wrapper added; the head's left out."""
    d = _cached("dynamo", "bert-wrapped")
    model = R.build("bert")
    if _done(d) is None:
        d.mkdir(parents=True, exist_ok=True)
        torch.manual_seed(1)
        wrapped = _Wrapped(model).eval()
        b, s = torch.export.Dim("batch"), torch.export.Dim("seq")
        torch.onnx.export(wrapped, (), str(d / "model.onnx"), kwargs=R.inputs("bert"), dynamo=True,
                          dynamic_shapes={"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s}})
        (d / "export.json").write_text(json.dumps({"file": "model.onnx"}))
    given = {**R.RECIPES["bert"][3], "model_type": "bert"}
    rec = onnx_import.convert(d / "model.onnx", tmp_path / "out", "bert", given, prefix="backbone")
    have = transformers.BertModel.from_pretrained(tmp_path / "out").state_dict()
    assert all(torch.equal(have[k], v) for k, v in model.state_dict().items())
    assert {x["name"] for x in rec["left_out"] if x["why"] == "outside the prefix"} == {"head.bias"}
    assert any(x["consumers"] and x["why"] == "not placed" and list(x["shape"]) == [32, 3]
               for x in rec["left_out"])  # the head's weight, folded transposed: named in a note too
    assert any("is not placed" in n for n in rec["notes"])


def test_a_decoder_only_part_set_is_read_and_run(optimum_exports, tmp_path):
    """Older Optimum wrote a decoder LM as ``decoder_model.onnx`` + ``decoder_with_past_model.onnx``: both parts
    are read (their tensors compared), and each runs against the rebuilt model without an encoder."""
    ex = optimum_exports["llama"]
    src = ex["dir"] / ex["file"]
    (tmp_path / "set").mkdir()
    for name in ("decoder_model.onnx", "decoder_with_past_model.onnx"):
        shutil.copy(src, tmp_path / "set" / name)
    shutil.copy(src.with_name("config.json"), tmp_path / "set" / "config.json")
    rec = onnx_import.convert(tmp_path / "set" / "decoder_model.onnx", tmp_path / "out", "decoder_lm", {})
    assert len(rec["files"]) == 2 and {p["file"] for p in rec["placements"]} == {"decoder_model.onnx",
                                                                                   "decoder_with_past_model.onnx"}
    chk = onnx_import.check(tmp_path / "set" / "decoder_with_past_model.onnx", tmp_path / "out", "decoder_lm")
    assert len(chk["parts"]) == 2 and chk["max_rel_diff"] <= 1e-4
