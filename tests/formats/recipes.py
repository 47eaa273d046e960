"""The recipes of params/README.md "Your model, in the format you keep", read from the page: the user's model folders
they name, and each fenced block after a ``<!-- recipe: NAME -->`` marker (run by tests/formats/conftest.py)."""
from __future__ import annotations

import re
from pathlib import Path

import torch

from geolip_lib.paths import ROOT

README = ROOT / "params" / "README.md"
#: the user's folders of the recipes -> the tiny model each stands for (family, config)
ORIGINALS = {"my-bert": ("tiny-type-bert", "bert", {"model_type": "bert"}),
             "my-gpt2": ("tiny-type-gpt2", "gpt2", {"model_type": "gpt2"}),
             "my-llama": ("tiny-type-llama", "decoder_lm", {"model_type": "llama"}),
             "my-marian": ("tiny-type-marian", "bart", {"model_type": "marian"})}
#: what each model of the params recipe was made from, and whether its weights are stored exactly
MADE_FROM = {"my-bert-onnx": ("my-bert", True), "my-gpt2-onnx": ("my-gpt2", True), "my-llama-ct2": ("my-llama", True),
             "my-marian-ct2": ("my-marian", False), "my-llama-gguf": ("my-llama", True)}
_NAMES = re.compile(r"(?<![\w/.-])(my-(?:bert|gpt2|llama|marian)(?:-onnx|-ct2|-gguf)?)(?![\w-])")


def recipes() -> dict[str, tuple[str, str]]:
    """``<!-- recipe: NAME -->`` -> (the fenced block's language, its text), in the page's order."""
    text = README.read_text(encoding="utf-8")
    found = re.findall(r"<!-- recipe: ([\w-]+) -->\s*```(\w+)\n(.*?)```", text, flags=re.S)
    return {name: (lang, body) for name, lang, body in found}


def in_workdir(text: str, work: Path) -> str:
    """The recipe's text with the user's folder names as paths in ``work`` (outputs under ``reports/`` too)."""
    text = text.replace(" reports/", f" {work}/reports/")
    return _NAMES.sub(lambda m: str(work / m.group(1)), text)


def as_llama(folder: Path) -> None:
    """A Llama model as Meta's first ones are: a SentencePiece BPE ``tokenizer.model`` with ``<s>`` / ``</s>`` (llama.cpp's
    converter reads a SentencePiece file or a tokenizer it knows by hash, and CTranslate2's writes the bos / eos
    tokens into its config), trained here on WordNet glosses (1000 pieces), in a ``tokenizer_config.json`` that
    transformers 4.57 (the exporters) and 5.23 (the project) both read."""
    import io
    import json

    import sentencepiece as spm
    from transformers import AutoConfig, LlamaForCausalLM

    from geolip_lib.models.tokenizers import wordnet_glosses

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(wordnet_glosses(4000)), model_writer=buf, vocab_size=1000,
                                   model_type="bpe", unk_id=0, bos_id=1, eos_id=2, pad_id=-1, byte_fallback=True,
                                   character_coverage=1.0, minloglevel=2)
    cfg = AutoConfig.from_pretrained(folder)
    cfg.vocab_size, cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = 1000, 1, 2, None
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    for f in folder.iterdir():
        f.unlink()
    model.save_pretrained(folder)
    (folder / "tokenizer.model").write_bytes(buf.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
         "add_bos_token": True, "add_eos_token": False, "legacy": False, "model_max_length": 512}), encoding="utf-8")


def as_marian(folder: Path) -> None:
    """A Marian model as Helsinki-NLP's are: ``<pad>`` is the last token and the decoder's start (CTranslate2's
    converter drops that row, and the importer must give it back), ``</s>`` its end of sentence."""
    from transformers import AutoConfig, AutoTokenizer, MarianMTModel

    tok = AutoTokenizer.from_pretrained(folder)
    tok.add_special_tokens({"eos_token": "</s>"})
    tok.add_special_tokens({"pad_token": "<pad>"})  # after </s>: the last id
    cfg = AutoConfig.from_pretrained(folder)
    cfg.vocab_size = cfg.decoder_vocab_size = len(tok)
    cfg.pad_token_id = cfg.decoder_start_token_id = tok.pad_token_id
    cfg.eos_token_id = cfg.forced_eos_token_id = tok.eos_token_id
    torch.manual_seed(0)
    model = MarianMTModel(cfg).eval()
    assert tok.convert_ids_to_tokens(len(tok) - 1) == "<pad>"
    for f in folder.iterdir():
        f.unlink()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)


