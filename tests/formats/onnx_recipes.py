"""Tiny transformers models of every family, exported to ONNX the two ways users do it.

* ``torch.onnx.export(..., dynamo=True)`` in the main environment, with the exact keyword arguments of
  :func:`export_dynamo` (``dynamic_shapes`` for batch and sequence: a static export folds the position table to
  the rows used), both ``optimize=False`` (the documented recipe) and optimized (torch's default);
* ``optimum-cli export onnx`` of the exporters' environment (``scripts/export_env.sh``: transformers 4.57 +
  optimum-onnx), reading a ``save_pretrained`` folder written here (:func:`save`). All Optimum exports of one call run in **one**
  exporters' Python process (``optimum.exporters.onnx.main_export``, the function the command runs; its import
  costs seconds, paid once); ``do_validation=False``: the validation needs onnxruntime, and the import's own check
  runs the graph anyway.

Every parameter is perturbed so that no two tensors are equal (exporters deduplicate equal initializers, and a
zero bias or a unit norm proves nothing about where it was placed).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
VOCAB = 96
_ENC = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64)
_DEC = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False)
_S2S = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=VOCAB - 1,
            decoder_start_token_id=1, eos_token_id=1, bos_token_id=0, forced_eos_token_id=1)
_VIS = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, image_size=28,
            patch_size=14)

#: recipe -> (geolip family, config class, model class, config kwargs, inputs kind, Optimum task or None)
RECIPES: dict[str, tuple] = {
    "bert": ("bert", "BertConfig", "BertModel", dict(_ENC, type_vocab_size=2), "text", "feature-extraction"),
    "roberta": ("bert", "RobertaConfig", "RobertaModel", dict(_ENC, max_position_embeddings=66, pad_token_id=1),
                "text", "feature-extraction"),
    "xlm-roberta": ("bert", "XLMRobertaConfig", "XLMRobertaModel", dict(_ENC, max_position_embeddings=66,
                    pad_token_id=1), "text", "feature-extraction"),
    "electra": ("bert", "ElectraConfig", "ElectraModel", dict(_ENC, embedding_size=16), "text",
                "feature-extraction"),
    "distilbert": ("distilbert", "DistilBertConfig", "DistilBertModel",
                   dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64), "text",
                   "feature-extraction"),
    "mpnet": ("mpnet", "MPNetConfig", "MPNetModel", dict(_ENC, max_position_embeddings=66), "text",
              "feature-extraction"),
    "albert": ("albert", "AlbertConfig", "AlbertModel", dict(_ENC, embedding_size=16), "text",
               "feature-extraction"),
    "deberta-v2": ("deberta_v2", "DebertaV2Config", "DebertaV2Model",
                   dict(_ENC, relative_attention=True, position_buckets=16, pos_att_type=["p2c", "c2p"],
                        position_biased_input=False), "text", "feature-extraction"),
    "gpt2": ("gpt2", "GPT2Config", "GPT2LMHeadModel", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64),
             "decoder", "text-generation-with-past"),
    "gpt_neox": ("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                      max_position_embeddings=64, tie_word_embeddings=False), "decoder",
                 "text-generation-with-past"),
    "opt": ("opt", "OPTConfig", "OPTForCausalLM",
            dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64, word_embed_proj_dim=32,
                 max_position_embeddings=64, pad_token_id=VOCAB - 1), "decoder", "text-generation-with-past"),
    "llama": ("decoder_lm", "LlamaConfig", "LlamaForCausalLM", dict(_DEC), "decoder", "text-generation-with-past"),
    "qwen2": ("decoder_lm", "Qwen2Config", "Qwen2ForCausalLM", dict(_DEC), "decoder", "text-generation-with-past"),
    "mistral": ("decoder_lm", "MistralConfig", "MistralForCausalLM", dict(_DEC, sliding_window=None), "decoder",
                "text-generation-with-past"),
    "gemma": ("decoder_lm", "GemmaConfig", "GemmaForCausalLM", dict(_DEC, head_dim=8), "decoder",
              "text-generation-with-past"),
    "t5": ("t5", "T5Config", "T5ForConditionalGeneration",
           dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0), "seq2seq",
           "text2text-generation-with-past"),
    "bart": ("bart", "BartConfig", "BartForConditionalGeneration", dict(_S2S), "seq2seq",
             "text2text-generation-with-past"),
    "marian": ("bart", "MarianConfig", "MarianMTModel", dict(_S2S, decoder_start_token_id=VOCAB - 1,
               scale_embedding=True), "seq2seq", "text2text-generation-with-past"),
    "vit": ("dinov2", "ViTConfig", "ViTModel", dict(_VIS), "vision", "feature-extraction"),
    "dinov2": ("dinov2", "Dinov2Config", "Dinov2Model", dict(_VIS), "vision", "feature-extraction"),
    "clip": ("clip", "CLIPConfig", "CLIPModel",
             dict(text_config=dict(_ENC, vocab_size=VOCAB), vision_config=dict(_VIS), projection_dim=16), "clip",
             "feature-extraction"),
}


def tokenizer():
    """A 96-token word-level fast tokenizer, saved beside a rebuilt model so the library can load it."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["<s>", "</s>", "<unk>"] + [f"w{i}" for i in range(3, VOCAB - 1)] + ["<pad>"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")


def build(name: str, seed: int = 0):
    """The recipe's model (float32, eval), every parameter perturbed (see the module docstring)."""
    import transformers

    _, cfg_cls, model_cls, kw, _, _ = RECIPES[name]
    extra = {} if name == "clip" else {"vocab_size": VOCAB}
    config = getattr(transformers, cfg_cls)(**extra, **kw)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config).float().eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.requires_grad:  # not Marian's sinusoidal table: transformers computes it again on load
                p.add_(torch.randn_like(p) * 0.05)
    return model


def save(name: str, model, folder: Path) -> None:
    """The model as a ``save_pretrained`` folder for Optimum: with the tokenizer, and for DINOv2 an image
    processor (Optimum's DINOv2 dummy inputs read the preprocessor; without one its export fails with IndexError)."""
    from transformers import BitImageProcessor

    model.save_pretrained(folder)
    tokenizer().save_pretrained(folder)
    if name == "dinov2":
        BitImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}).save_pretrained(folder)


def inputs(name: str, batch: int = 2, seq: int = 7, seed: int = 0) -> dict:
    """The keyword inputs the recipe's model is exported (and compared) with."""
    kind = RECIPES[name][4]
    g = torch.Generator().manual_seed(seed)
    out: dict = {}
    if kind in ("text", "decoder", "seq2seq", "clip"):
        out["input_ids"] = torch.randint(3, VOCAB - 2, (batch, seq), generator=g)
        out["attention_mask"] = torch.ones(batch, seq, dtype=torch.long)
    if kind == "seq2seq":
        out["decoder_input_ids"] = torch.randint(3, VOCAB - 2, (batch, 5), generator=g)
    if kind in ("vision", "clip"):
        out["pixel_values"] = torch.randn(batch, 3, 28, 28, generator=g)
    return out


def export_dynamo(model, name: str, path: Path, optimize: bool = False) -> float:
    """``torch.onnx.export`` with dynamo, dynamic batch and sequence; returns the seconds it took.

    ``optimize=False`` is params/README.md's documented recipe: the default optimizer folds each Linear weight's
    transpose into an anonymous copy and drops constant tensors (an all-zero bias), so the import must find the
    weights in folded copies; ``optimize=True`` (torch's default) is what users get without the flag -- both
    are tested."""
    kw = inputs(name)
    cfg = getattr(model.config, "text_config", None) or model.config  # CLIP: the text tower's positions
    top = getattr(cfg, "max_position_embeddings", None)  # the documented bound (T5 has none: unbounded)
    bound = {"min": 2, "max": top} if top else {"min": 2}
    batch, seq, dec = torch.export.Dim("batch"), torch.export.Dim("seq", **bound), torch.export.Dim("dec_seq", **bound)
    dims = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq},
            "decoder_input_ids": {0: batch, 1: dec}, "pixel_values": {0: batch}}
    if RECIPES[name][4] in ("decoder", "seq2seq"):
        kw["use_cache"] = False
    dynamic = {k: dims.get(k) for k in kw}
    t0 = time.perf_counter()
    torch.onnx.export(model, (), str(path), kwargs=kw, dynamo=True, optimize=optimize, dynamic_shapes=dynamic,
                      verbose=False)
    return time.perf_counter() - t0


_OPTIMUM = r"""
import json, sys, time, traceback
from optimum.exporters.onnx import main_export
res = {}
for folder, out, task in json.loads(sys.argv[1]):
    t0 = time.perf_counter()
    try:
        main_export(folder, out, task=task, do_validation=False)
        res[folder] = {"ok": True, "seconds": time.perf_counter() - t0}
    except Exception as e:
        res[folder] = {"ok": False, "seconds": time.perf_counter() - t0,
                       "error": (type(e).__name__ + ": " + str(e)).splitlines()[0][:400]}
print("RESULT " + json.dumps(res))
"""


def exporters_python() -> Path:
    return Path(subprocess.run(["bash", str(ROOT / "scripts" / "export_env.sh")], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip().splitlines()[-1])


def export_optimum(jobs: list, timeout: int = 900) -> dict:
    """``[(hf folder, out folder, task), ...]`` exported in one exporters' process: ``{folder: {ok, seconds,
    error}}``."""
    py = exporters_python()
    py = py if py.is_absolute() else ROOT / py
    r = subprocess.run([str(py), "-c", _OPTIMUM, json.dumps([[str(a), str(b), c] for a, b, c in jobs])],
                       capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    if not line:
        raise RuntimeError(f"the exporters' process failed (rc {r.returncode}): {r.stderr.strip()[-800:]}")
    return json.loads(line[-1][len("RESULT "):])


if __name__ == "__main__":  # python tests/formats/onnx_recipes.py OUT [name ...]: build, export both ways, print
    out = Path(sys.argv[1])
    for n in sys.argv[2:] or list(RECIPES):
        m = build(n)
        (out / n).mkdir(parents=True, exist_ok=True)
        print(n, "dynamo", round(export_dynamo(m, n, out / n / "model.onnx"), 1), "s")
        (out / n / "opt").mkdir(exist_ok=True)
        print(n, "dynamo optimized", round(export_dynamo(m, n, out / n / "opt" / "model.onnx", optimize=True), 1), "s")
