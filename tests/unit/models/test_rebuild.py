"""A checked ``save_pretrained`` folder from named tensors (``geolip_lib.models.rebuild.write_folder``).

For the tiny config of every (family, model_type) of the registry, a seeded random model's checkpoint tensors
(the names transformers 4.x and a 5.x ``save_pretrained`` write) go through ``write_folder``: the folder's
tensors are bit-equal to the given ones and ``from_pretrained`` loads it strictly; for one model of each kind
the reloaded model's outputs equal the original's. Also: a head's prefix, the running model's 5.x names
(DINOv2's ``q_proj``, fused experts) and onnx_import's 4.x DINOv2 spelling, tied / untied output tables, float16
staying float16, and hostile input (stray, missing, misshapen tensors) as one-line errors. The 4.57 names are
compared with 5.23's checkpoint names in the exporters' environment (marked external).
"""
from __future__ import annotations

import inspect
import json
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers.core_model_loading import revert_weight_conversion

from geolip_lib.families import REGISTRY, tiny_type_models
from geolip_lib.models.common import quiet_transformers
from geolip_lib.models.rebuild import NOTES, Header, infer_config, write_folder
from geolip_lib.models.rebuild_classes import layouts, make_config

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
#: the DINOv2 renames an ONNX reader of transformers-4.x exports applies (4.x -> 5.x running names)
LEGACY = [(".attention.attention.query.", ".attention.q_proj."), (".attention.attention.key.", ".attention.k_proj."),
          (".attention.attention.value.", ".attention.v_proj."), (".attention.output.dense.", ".attention.o_proj.")]
CASES = sorted({(p["family"], p["config"]["model_type"]) for p in tiny_type_models().values() if p["config"]})
_CACHE: dict = {}


def _tiny(fam: str, mt: str, cls_name: str | None = None):
    """(config dict, a seeded random model of the largest candidate class (or ``cls_name``), its checkpoint dict)."""
    key = (fam, mt, cls_name)
    if key not in _CACHE:
        cfg = REGISTRY[fam].tiny_configs()[mt]
        lays = layouts(make_config(cfg))
        lay = (max(lays, key=lambda lay: len(lay.ckpt)) if cls_name is None
               else next(lay for lay in lays if lay.cls.__name__ == cls_name))
        torch.manual_seed(0)
        with quiet_transformers():
            model = lay.cls(_fresh(lay, cfg)).eval()
        sd = {k: v.detach().clone() for k, v in revert_weight_conversion(model, model.state_dict()).items()}
        _CACHE[key] = cfg, model, sd
    return _CACHE[key]


def _fresh(lay, cfg: dict):
    """A config of its own for the model (building the meta layout may have changed the layout's copy)."""
    config = make_config(cfg)
    if isinstance(config, lay.cls.config_class):
        return config
    return next(v for v in vars(config).values() if isinstance(v, lay.cls.config_class))


def _saved(folder: Path) -> dict:
    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="pt") as h:
            out.update({k: h.get_tensor(k) for k in h.keys()})
    return out


def _reload(cls, folder: Path):
    with quiet_transformers():
        model, info = cls.from_pretrained(folder, output_loading_info=True)
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    return model.eval()


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.reshape(-1).view(torch.uint8),
                                                                      b.reshape(-1).view(torch.uint8))


@pytest.mark.parametrize("fam,mt", CASES, ids=[f"{f}-{m}" for f, m in CASES])
def test_every_tiny_model_type_round_trips_bit_equal(fam, mt, tmp_path):
    cfg, model, sd = _tiny(fam, mt)
    rec = write_folder(cfg, sd, tmp_path / "out")
    assert rec["class"] == type(model).__name__ and rec["model_type"] == mt
    assert rec["n_params"] == sum(p.numel() for p in model.parameters())
    saved = _saved(tmp_path / "out")
    assert saved and set(saved) <= set(sd)
    assert all(_bits_equal(saved[k], sd[k]) for k in saved)
    back = _reload(type(model), tmp_path / "out")
    sd2 = revert_weight_conversion(back, back.state_dict())
    assert all(_bits_equal(sd2[k], sd[k]) for k in sd), [k for k in sd if not _bits_equal(sd2[k], sd[k])][:3]


def _inputs(mt: str, model) -> dict:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 90, (2, 7), generator=g)
    if mt == "dinov2":
        return {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
    if mt == "clip":
        return {"input_ids": ids, "pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
    if mt == "whisper":
        return {"input_features": torch.randn(2, 8, 32, generator=g), "decoder_input_ids": ids[:, :4]}
    if "decoder_input_ids" in inspect.signature(model.forward).parameters:
        return {"input_ids": ids, "decoder_input_ids": ids[:, :4]}
    return {"input_ids": ids}


@pytest.mark.parametrize("fam,mt", [("bert", "bert"), ("decoder_lm", "llama"), ("decoder_lm", "mixtral"),
                                    ("gpt2", "gpt2"), ("t5_v1_1", "t5"), ("bart", "bart"), ("dinov2", "dinov2"),
                                    ("whisper", "whisper"), ("clip", "clip"), ("decoder_lm", "qwen3_next")])
def test_the_folder_gives_the_same_outputs(fam, mt, tmp_path):
    cfg, model, sd = _tiny(fam, mt)
    write_folder(cfg, sd, tmp_path / "out")
    back = _reload(type(model), tmp_path / "out")
    x = _inputs(mt, model)
    with torch.no_grad():
        a, b = model(**x), back(**x)
    ka = [k for k, v in a.items() if isinstance(v, torch.Tensor)]
    assert ka and all(torch.equal(a[k], b[k]) for k in ka)


def test_head_prefixes_choose_the_class(tmp_path):
    # BertForMaskedLM's own keys (bert. prefix, cls.* head, tied decoder absent): that class
    cfg, model, sd = _tiny("bert", "bert", "BertForMaskedLM")
    rec = write_folder(cfg, sd, tmp_path / "mlm")
    assert rec["class"] == "BertForMaskedLM" and rec["tied"]
    # BertLMHeadModel has the same tensors: a config.json's architectures tell them apart
    rec = write_folder({**cfg, "architectures": ["BertLMHeadModel"]}, sd, tmp_path / "lm")
    assert rec["class"] == "BertLMHeadModel"
    # the base model's keys with a head's prefix added: the base model, the prefix stripped
    cfg, model, sd = _tiny("bert", "bert", "BertModel")
    rec = write_folder(cfg, {f"bert.{k}": v for k, v in sd.items()}, tmp_path / "base")
    assert rec["class"] == "BertModel" and rec["renamed"]["count"] == len(sd)
    assert all(_bits_equal(v, sd[k]) for k, v in _saved(tmp_path / "base").items())
    # a non-persistent buffer a reader placed (BERT's position ids) is left out, not an error
    rec = write_folder(cfg, {**sd, "embeddings.position_ids": torch.arange(128)[None]}, tmp_path / "buf")
    assert rec["class"] == "BertModel" and rec["buffers_left_out"] == ["embeddings.position_ids"]
    # a 4.x per-layer rotary buffer (computed by the 5.x model) is left out too
    cfg, model, sd = _tiny("decoder_lm", "llama")
    rec = write_folder(cfg, {**sd, "model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(4)}, tmp_path / "inv")
    assert rec["buffers_left_out"] == ["model.layers.0.self_attn.rotary_emb.inv_freq"]
    # a decoder's body without its "model." prefix and no head: the bare model
    cfg, model, sd = _tiny("decoder_lm", "llama")
    body = {k[len("model."):]: v for k, v in sd.items() if k.startswith("model.")}
    assert write_folder(cfg, body, tmp_path / "body")["class"] == "LlamaModel"


def test_dinov2_in_4x_and_5x_spellings(tmp_path):
    cfg, model, sd = _tiny("dinov2", "dinov2")
    assert any(".attention.attention.query." in k for k in sd)  # the checkpoint (4.x) spelling
    runtime = {k: v.clone() for k, v in model.state_dict().items()}  # the 5.x running names
    assert any(".attention.q_proj." in k for k in runtime)
    legacy = {}
    for k, v in sd.items():  # onnx_import's LEGACY pairs applied to the 4.x names give the 5.x ones
        for old, new in LEGACY:
            k = k.replace(old, new)
        legacy[k] = v
    assert set(legacy) == set(runtime)
    recs = [write_folder(cfg, d, tmp_path / n) for n, d in (("ckpt", sd), ("runtime", runtime))]
    assert recs[0]["renamed"]["count"] == 0 and recs[1]["renamed"]["count"] > 0
    assert _saved(tmp_path / "ckpt").keys() == _saved(tmp_path / "runtime").keys()
    assert all(_bits_equal(v, sd[k]) for k, v in _saved(tmp_path / "runtime").items())


def test_fused_experts_are_split_by_transformers(tmp_path):
    cfg, model, sd = _tiny("decoder_lm", "qwen2_moe")
    runtime = {k: v.clone() for k, v in model.state_dict().items()}
    assert any(k.endswith("experts.gate_up_proj") for k in runtime)
    rec = write_folder(cfg, runtime, tmp_path / "out")
    assert rec["renamed"]["count"] > 0
    saved = _saved(tmp_path / "out")
    assert set(saved) <= set(sd) and all(_bits_equal(v, sd[k]) for k, v in saved.items())


def test_tied_and_untied_output_tables(tmp_path):
    cfg, model, sd = _tiny("decoder_lm", "llama")
    emb = sd["model.embed_tokens.weight"]
    absent = {k: v for k, v in sd.items() if k != "lm_head.weight"}
    rec = write_folder(cfg, absent, tmp_path / "absent")
    back = _reload(type(model), tmp_path / "absent")
    assert rec["tied"] and back.config.tie_word_embeddings and torch.equal(back.lm_head.weight, emb)
    rec = write_folder(cfg, {**absent, "lm_head.weight": emb.clone()}, tmp_path / "equal")
    assert rec["tied"] and rec["dropped_tied"] == ["lm_head.weight"]
    other = torch.randn_like(emb)
    with pytest.raises(ValueError) as e:  # a given field is checked against the values
        write_folder({**cfg, "tie_word_embeddings": True}, {**absent, "lm_head.weight": other}, tmp_path / "bad")
    assert "tie_word_embeddings is given as true but tensor lm_head.weight differs" in _one_line(e)
    rec = write_folder(cfg, {**absent, "lm_head.weight": other}, tmp_path / "own")
    back = _reload(type(model), tmp_path / "own")
    assert not rec["tied"] and not back.config.tie_word_embeddings
    assert torch.equal(back.lm_head.weight, other) and torch.equal(back.model.embed_tokens.weight, emb)


def test_float16_stays_float16_and_numpy_is_accepted(tmp_path):
    cfg, model, sd = _tiny("gpt2", "gpt2")
    half = {k: v.to(torch.float16).numpy() for k, v in sd.items()}
    rec = write_folder(cfg, half, tmp_path / "out", filled=["transformer.ln_f.bias"])
    assert rec["dtypes"] == {"float16": len(sd) - 1} and rec["filled"] == ["transformer.ln_f.bias"]
    saved = _saved(tmp_path / "out")
    assert rec["saved_dtype"] == "float16"
    assert all(_bits_equal(v, torch.from_numpy(half[k])) for k, v in saved.items())
    # mixed (float16 weights, float32 norms, as some exports keep them): float32, every value exact
    mixed = {k: (torch.from_numpy(v).float() if "ln_" in k else torch.from_numpy(v)) for k, v in half.items()}
    rec = write_folder(cfg, mixed, tmp_path / "mixed")
    assert rec["saved_dtype"] == "float32" and rec["dtypes"]["float32"] > 0
    saved = _saved(tmp_path / "mixed")
    assert all(v.dtype == torch.float32 and torch.equal(v, mixed[k].float()) for k, v in saved.items())
    assert all(_bits_equal(v, mixed[k]) for k, v in saved.items() if "ln_" in k)


def _one_line(e) -> str:
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < 400
    return msg


def test_hostile_tensors_give_one_line(tmp_path):
    cfg, model, sd = _tiny("decoder_lm", "llama")
    out = tmp_path / "out"
    with pytest.raises(ValueError) as e:
        write_folder(cfg, {**sd, "model.layers.0.stray.weight": torch.zeros(2)}, out)
    assert _one_line(e) == "tensor model.layers.0.stray.weight has no place in LlamaForCausalLM (model_type llama)"
    missing = {k: v for k, v in sd.items() if k != "model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(ValueError) as e:
        write_folder(cfg, missing, out)
    assert "1 tensors of LlamaForCausalLM (model_type llama) are missing: model.layers.1.mlp.up_proj.weight" \
        == _one_line(e)
    with pytest.raises(ValueError) as e:
        write_folder(cfg, {**sd, "model.norm.weight": torch.zeros(31)}, out)
    assert "tensor model.norm.weight is [31] but LlamaForCausalLM of this config has [32]" in _one_line(e)
    with pytest.raises(ValueError) as e:
        write_folder(cfg, {**sd, "model.norm.weight": [1.0] * 32}, out)
    assert "tensor model.norm.weight: a list, not an array" in _one_line(e)
    with pytest.raises(ValueError, match="filled tensor x is not among the tensors"):
        write_folder(cfg, sd, out, filled=["x"])
    with pytest.raises(ValueError, match="no model_type"):
        write_folder({k: v for k, v in cfg.items() if k != "model_type"}, sd, out)
    with pytest.raises(ValueError, match="no tensors to write"):
        write_folder(cfg, {}, out)
    assert not out.exists() or not any(out.iterdir())


def test_infer_then_write_from_shapes_alone(tmp_path):
    """The whole path a reader takes: shapes -> config (heads given) -> folder; the model is the same."""
    cfg, model, sd = _tiny("bert", "roberta", "RobertaForMaskedLM")
    config = infer_config("bert", {k: tuple(v.shape) for k, v in sd.items()},
                          {"model_type": "roberta", "num_attention_heads": 4, "pad_token_id": 0})
    rec = write_folder(config, {k: v.numpy() for k, v in sd.items()}, tmp_path / "out")
    assert rec["class"] == "RobertaForMaskedLM"
    back = _reload(type(model), tmp_path / "out")
    x = {"input_ids": torch.tensor([[0, 5, 9, 2]])}
    with torch.no_grad():
        assert torch.equal(model(**x).logits, back(**x).logits)


_DUMP = """
import json, sys, torch, transformers
from transformers import AutoConfig
transformers.logging.set_verbosity_error()
out = {}
for name, (cfg, cls) in json.load(sys.stdin).items():
    cfg = dict(cfg); mt = cfg.pop("model_type")
    with torch.device("meta"):
        m = getattr(transformers, cls)(AutoConfig.for_model(mt, **cfg))
    out[name] = sorted(m.state_dict())
print(json.dumps(out))
"""


@pytest.mark.external
def test_transformers_4_57_names_are_5_23_s_checkpoint_names():
    """The exporters' transformers 4.57 names every tensor as 5.23's ``save_pretrained`` does (4.57 has no qwen3_5)."""
    py = subprocess.run(["bash", str(ROOT / "scripts" / "export_env.sh")], cwd=ROOT, capture_output=True,
                        text=True, check=True).stdout.strip().splitlines()[-1]
    job, want = {}, {}
    for fam, mt in CASES:
        if mt.startswith("qwen3_5"):
            continue
        cfg, model, sd = _tiny(fam, mt)
        job[f"{fam}:{mt}"] = (cfg, type(model).__name__)
        want[f"{fam}:{mt}"] = sorted(sd)
    got = subprocess.run([str(ROOT / py) if not Path(py).is_absolute() else py, "-c", _DUMP], input=json.dumps(job),
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert json.loads(got) == want


def test_a_file_without_a_pooler_is_rebuilt_without_one(tmp_path):
    """Optimum's feature-extraction graphs hold no pooler: the class is built without one (its constructor's
    ``add_pooling_layer=False``), so the folder holds exactly the given tensors; none is made up."""
    cfg, model, sd = _tiny("bert", "bert", "BertModel")
    bare = {k: v for k, v in sd.items() if not k.startswith("pooler.")}
    assert len(bare) == len(sd) - 2
    inferred = infer_config("bert", {k: tuple(v.shape) for k, v in bare.items()}, cfg)
    assert inferred[NOTES]["class"] == "BertModel"
    rec = write_folder(inferred, bare, tmp_path / "bare")
    assert rec["class"] == "BertModel" and rec["init_kwargs"] == {"add_pooling_layer": False}
    assert any("no pooler in the file" in n for n in rec["notes"])
    saved = _saved(tmp_path / "bare")
    assert set(saved) == set(bare) and all(_bits_equal(saved[k], bare[k]) for k in bare)
    with quiet_transformers():
        back, info = type(model).from_pretrained(tmp_path / "bare", output_loading_info=True, add_pooling_layer=False)
    assert back.pooler is None and not any(info[k] for k in ("missing_keys", "unexpected_keys"))
    x = torch.randint(0, model.config.vocab_size, (2, 5))
    with torch.no_grad():
        assert torch.equal(back.eval()(x).last_hidden_state, model(x).last_hidden_state)
    rec = write_folder(cfg, sd, tmp_path / "whole")  # a pooler in the file: the class keeps it
    assert rec["init_kwargs"] == {} and not rec["notes"] and set(_saved(tmp_path / "whole")) == set(sd)
    with pytest.raises(ValueError) as e:  # half a pooler is a missing tensor, not a pooler-less model
        write_folder(cfg, {**bare, "pooler.dense.weight": sd["pooler.dense.weight"]}, tmp_path / "half")
    assert "pooler.dense.bias" in _one_line(e)


def test_a_tied_table_held_under_one_name_fills_its_twins(tmp_path):
    """Dynamo's BART graphs hold the shared table only as ``model.encoder.embed_tokens.weight``: in the class that
    is the same Parameter as ``model.shared.weight`` (and the decoder's table, and the tied head), so the absent
    source is filled from it and recorded; a head tied only by ``tie_word_embeddings`` fills nothing when the
    config unties it: the input table is then missing."""
    cfg, model, sd = _tiny("bart", "bart", "BartForConditionalGeneration")
    enc = sd["model.encoder.embed_tokens.weight"]
    only = {k: v for k, v in sd.items()
            if k not in ("model.shared.weight", "model.decoder.embed_tokens.weight", "lm_head.weight")}
    inferred = infer_config("bart", {k: tuple(v.shape) for k, v in only.items()}, cfg)
    rec = write_folder(inferred, only, tmp_path / "bart")
    assert rec["class"] == "BartForConditionalGeneration" and rec["tied"]
    assert rec["from_twin"] == {"model.shared.weight": "model.encoder.embed_tokens.weight"}
    assert any("model.shared.weight: not in the file" in n for n in rec["notes"])
    back = _reload(type(model), tmp_path / "bart")
    for k in ("model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
              "lm_head.weight"):
        assert torch.equal(back.state_dict()[k], enc), k
    lcfg, _, lsd = _tiny("decoder_lm", "llama")
    head_only = {k: v for k, v in lsd.items() if k != "model.embed_tokens.weight"}
    with pytest.raises(ValueError) as e:
        write_folder({**lcfg, "tie_word_embeddings": False}, head_only, tmp_path / "untied")
    assert "are missing: model.embed_tokens.weight" in _one_line(e)


def test_the_header_config_is_a_plain_transformers_config():
    """What infer_config says about the config moves out of ``Header.config`` into facts and a note."""
    cfg, _, sd = _tiny("bert", "bert", "BertModel")
    inferred = infer_config("bert", {k: tuple(v.shape) for k, v in sd.items()}, cfg)
    h = Header("ONNX", {k: tuple(v.shape) for k, v in sd.items()}, inferred)
    assert NOTES in inferred and not any(k.startswith("_") for k in h.config)
    assert h.facts["inferred"]["class"] == "BertModel" and h.config["model_type"] == "bert"
    assert any(n.startswith("config of BertModel:") for n in h.notes)
    make_config(h.config)  # transformers takes it as it is
