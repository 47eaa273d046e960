"""Tiny transformers models of the families the CTranslate2 converter supports, converted by the real converter.

Files made the way users make them: ``ct2-transformers-converter`` of the exporters' environment
(``scripts/export_env.sh``: transformers 4.57 + ctranslate2) reads a ``save_pretrained`` folder written here by
the main environment's transformers. The converter needs the tokenizer in the model folder and a vocabulary whose
size matches the embeddings, so every model gets the same 96-token word-level tokenizer (``<pad>`` last: the Marian
loader drops a trailing ``<pad>`` with its embedding row, as Marian's own vocabularies have none).

All conversions of one call run in **one** exporters' Python process (``TransformersConverter.convert``, the code the
command-line tool runs): the converter's import costs ~10 s, paid once instead of once per model.
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
SPECIAL = ["<s>", "</s>", "<unk>"]

#: recipe name -> (transformers config class name, model class name, config kwargs)
RECIPES: dict[str, tuple[str, str, dict]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False, rms_norm_eps=1e-5)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM",
              dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False, rms_norm_eps=1e-6)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM",
              dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=8, max_position_embeddings=64, tie_word_embeddings=False)),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
                     sliding_window=None)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM",
              dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=8, max_position_embeddings=64)),
    "opt": ("OPTConfig", "OPTForCausalLM",
            dict(hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=64,
                 word_embed_proj_dim=32, pad_token_id=VOCAB - 1, bos_token_id=0, eos_token_id=1)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      max_position_embeddings=64, rotary_pct=0.5, tie_word_embeddings=False)),
    "gptj": ("GPTJConfig", "GPTJForCausalLM",
             dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64, bos_token_id=0, eos_token_id=1)),
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(hidden_size=32, n_layer=2, n_head=4)),
    "falcon": ("FalconConfig", "FalconForCausalLM",
               dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, new_decoder_architecture=False,
                    multi_query=True, parallel_attn=True, bias=False, max_position_embeddings=64, bos_token_id=0,
                    eos_token_id=1)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    "bert": ("BertConfig", "BertModel",
             dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=64, type_vocab_size=2)),
    "roberta": ("RobertaConfig", "RobertaModel",
                dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                     max_position_embeddings=VOCAB + 32, type_vocab_size=1, pad_token_id=VOCAB - 1)),
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaModel",
                    dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                         max_position_embeddings=VOCAB + 32, type_vocab_size=1, pad_token_id=VOCAB - 1)),
    "distilbert": ("DistilBertConfig", "DistilBertModel",
                   dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64)),
    "marian": ("MarianConfig", "MarianMTModel",
               dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                    pad_token_id=VOCAB - 1, decoder_start_token_id=VOCAB - 1, eos_token_id=1, bos_token_id=0,
                    forced_eos_token_id=1, scale_embedding=True, share_encoder_decoder_embeddings=True)),
    "t5": ("T5Config", "T5ForConditionalGeneration",
           dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                relative_attention_num_buckets=8, relative_attention_max_distance=16, pad_token_id=VOCAB - 1,
                eos_token_id=1, decoder_start_token_id=VOCAB - 1)),
    "t5_v1_1": ("T5Config", "T5ForConditionalGeneration",
                dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                     relative_attention_num_buckets=8, relative_attention_max_distance=16, pad_token_id=VOCAB - 1,
                     eos_token_id=1, decoder_start_token_id=VOCAB - 1, feed_forward_proj="gated-gelu",
                     tie_word_embeddings=False)),
    "bart": ("BartConfig", "BartForConditionalGeneration",
             dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                  decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                  pad_token_id=VOCAB - 1, bos_token_id=0, eos_token_id=1, decoder_start_token_id=1,
                  forced_eos_token_id=1)),
}


def tokenizer():
    """A 96-token word-level fast tokenizer (``<s> </s> <unk> w3 ... w94 <pad>``)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL + [f"w{i}" for i in range(len(SPECIAL), VOCAB - 1)] + ["<pad>"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")


def build(name: str, out: Path, seed: int = 0):
    """The recipe's model (random, every norm and bias perturbed so none is 0 or 1: CTranslate2 aliases equal
    tensors, and a zero bias proves nothing) saved with the tokenizer into ``out``; returns the model."""
    import transformers

    cfg_cls, model_cls, kw = RECIPES[name]
    config = getattr(transformers, cfg_cls)(vocab_size=VOCAB, **kw)
    torch.manual_seed(seed)
    # XLM-RoBERTa: the converter reads a sequence-classification model, which is built without a pooler
    init = {"add_pooling_layer": False} if name == "xlm-roberta" else {}
    model = getattr(transformers, model_cls)(config, **init).eval()
    with torch.no_grad():
        for n, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(torch.randn_like(p) * 0.1)
        if name == "marian":  # the converter drops the <pad> row: it must be the zero row Marian starts from
            model.get_input_embeddings().weight[VOCAB - 1].zero_()
        # rows of the position table before the first position read (OPT: 2; RoBERTa: padding_idx + 1): the
        # converter drops them, the reader gives zeros back; zero here so that the originals compare bit for bit
        if name == "opt":
            model.model.decoder.embed_positions.weight[:2].zero_()
        if name in ("roberta", "xlm-roberta"):
            model.embeddings.position_embeddings.weight[:VOCAB].zero_()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer().save_pretrained(out)
    # transformers 5 names the class "TokenizersBackend", which the converter's transformers 4.57 does not know
    if name == "gpt_neox":  # transformers 4.57 reads the rotary fraction from rotary_pct, 5.x from rope_parameters
        cf = out / "config.json"
        cf.write_text(json.dumps({**json.loads(cf.read_text()), "rotary_pct": kw["rotary_pct"]}))
    tc = out / "tokenizer_config.json"
    tc.write_text(json.dumps({**json.loads(tc.read_text()), "tokenizer_class": "PreTrainedTokenizerFast"}))
    return model


_CONVERT = r"""
import json, sys, time, traceback
from ctranslate2.converters import TransformersConverter
jobs = json.loads(sys.argv[1])
res = {}
for key, src, dst, q in jobs:
    t = time.perf_counter()
    try:
        TransformersConverter(src).convert(dst, quantization=q, force=True)
        res[key] = {"ok": True, "seconds": time.perf_counter() - t}
    except Exception as exc:
        res[key] = {"ok": False, "seconds": time.perf_counter() - t,
                    "error": (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:300]}
print(json.dumps(res))
"""


def exporters_python() -> Path:
    out = subprocess.run(["bash", str(ROOT / "scripts/export_env.sh")], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout.strip().splitlines()[-1]
    return ROOT / out  # not resolved: the link is the venv (its target is the base interpreter)


def convert_all(jobs: list[tuple[str, Path, Path, str]], timeout: int = 600) -> dict:
    """``jobs``: (key, hf folder, ct2 output folder, quantization); one converter process for all of them.
    Returns key -> {ok, seconds, error?}."""
    t = time.perf_counter()
    payload = json.dumps([[k, str(s), str(d), q] for k, s, d, q in jobs])
    r = subprocess.run([str(exporters_python()), "-c", _CONVERT, payload], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"the converter process failed: {r.stderr.strip().splitlines()[-1:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["__total_seconds__"] = time.perf_counter() - t
    return res


if __name__ == "__main__":  # python tests/formats/ct2_recipes.py OUT [name ...]: build and convert, print results
    root = Path(sys.argv[1])
    names = sys.argv[2:] or list(RECIPES)
    jobs = []
    for n in names:
        build(n, root / f"{n}-hf")
        jobs += [(f"{n}-{q}", root / f"{n}-hf", root / f"{n}-{q}", q) for q in ("float32", "int8")]
    print(json.dumps(convert_all(jobs), indent=1))
