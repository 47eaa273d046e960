"""Tiny random models built from a config (tests, demo), saved as real safetensors files.

A tiny model is fully described by its params file: family, ``config:`` (merged over the
family spec's ``tiny_defaults``), ``tokenizer:`` and ``seed``. It is built once with
``torch.manual_seed(seed)``, written with ``save_pretrained`` (safetensors) together with
its tokenizer to ``.cache/tiny_models/<name>-<hash of the resolved config>/`` and then
loaded back from there like any local model, so later code (the streamed weight battery)
reads real files. Hidden sizes 32-64 and 2-4 layers keep each build well under a second
(the first build of the ``unigram-wordnet`` tokenizer takes a few seconds, once).

Decoder LMs: the installed transformers ships Qwen3.5 (``model_type: qwen3_5_text``,
``Qwen3_5ForCausalLM``: hybrid Gated-DeltaNet ``linear_attention`` + gated GQA
``full_attention`` layers), so ``tiny-qwen`` uses that class, with
``num_key_value_heads < num_attention_heads``.
"""
from __future__ import annotations

import copy
import hashlib
import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_model
from transformers import AutoConfig

from ..families import REGISTRY, spec
from ..paths import cache_root
from ..provenance import folder_record, recorded_problem
from .common import OPEN_CLIP_CONFIG, OPEN_CLIP_WEIGHTS, model_class, quiet_transformers, safetensors_problems, untie_output
from .tokenizers import _atomic_dir, load_tokenizer, tokenizer_dir

FORMAT = 3  # bump to invalidate cached tiny models (3: the entry records its files)
#: a tiny-model cache entry's own record (name, config, seed, and the files it was built with), written last
TINY_RECORD = "geolip_tiny.json"

#: family -> tokenizer kind of its tiny models (the spec's ``tiny_tokenizer``)
DEFAULT_TOKENIZER = {name: s.tiny_tokenizer for name, s in REGISTRY.items()}
#: family -> config of its tiny models before ``config:`` (the spec's ``tiny_defaults``)
TINY_DEFAULTS = {name: s.tiny_defaults for name, s in REGISTRY.items()}


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def resolve_config(family: str, config: dict, tokenizer_len: int | None) -> dict:
    """Family defaults overlaid by ``config``; the vocabulary follows the tokenizer unless given."""
    fs = spec(family)
    cfg = _merge(fs.tiny_base(config.get("model_type")), config)  # a model_type of the family: its own tiny base
    if tokenizer_len is not None and fs.vocab_from_tokenizer:
        cfg.setdefault("vocab_size", tokenizer_len)
    return cfg


def _save_open_clip(cfg: dict, seed: int, out: Path) -> None:
    import open_clip  # heavy optional dependency

    torch.manual_seed(seed)
    model = open_clip.CLIP(**cfg)
    save_model(model, str(out / OPEN_CLIP_WEIGHTS))
    (out / OPEN_CLIP_CONFIG).write_text(json.dumps({"model_cfg": cfg}, indent=1), encoding="utf-8")


def _save_hf(family: str, cfg: dict, seed: int, out: Path) -> None:
    cfg = dict(cfg)
    config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    torch.manual_seed(seed)
    model = model_class(family).from_config(config)
    if cfg.get("tie_word_embeddings") is False:
        untie_output(model)  # T5Config forces tying in transformers >= 5
    with quiet_transformers():
        model.save_pretrained(out)


def build_tiny(name: str, family: str, config: dict, tokenizer: str | None, seed: int) -> Path:
    """Build (once) and return the cache directory of a tiny model.

    Parameters
    ----------
    name : str
        Model name (prefix of the cache directory).
    family : str
        One of ``geolip_lib.families.FAMILIES``.
    config : dict
        Overrides of the family spec's ``tiny_defaults``.
    tokenizer : str or None
        Tokenizer kind (see :mod:`geolip_lib.models.tokenizers`); ``None`` uses the spec's ``tiny_tokenizer``.

    Returns
    -------
    pathlib.Path
        ``.cache/tiny_models/<name>-<hash>/`` with ``config.json`` + ``model.safetensors``
        (HF) or ``open_clip_config.json`` + ``open_clip_model.safetensors`` (open_clip),
        plus the tokenizer files for text models.
    """
    fs = spec(family)
    kind = tokenizer or fs.tiny_tokenizer
    tok = load_tokenizer(kind) if kind else None
    tok_id = tokenizer_dir(kind).name if kind else None  # e.g. unigram-wordnet-<hash of its corpus source>
    cfg = resolve_config(family, config, len(tok) if tok is not None else None)
    key = hashlib.sha1(json.dumps([family, cfg, tok_id, seed, FORMAT, torch.__version__.split("+")[0]],
                                  sort_keys=True).encode()).hexdigest()[:12]

    def build(out: Path) -> None:
        (_save_hf(family, cfg, seed, out) if fs.hf else _save_open_clip(cfg, seed, out))
        if tok is not None:
            tok.save_pretrained(out)
        (out / TINY_RECORD).write_text(  # last: what the entry holds, checked on every use (_entry_problem)
            json.dumps({"name": name, "family": family, "config": cfg, "tokenizer": kind, "seed": seed,
                        "files": folder_record(out, skip=[TINY_RECORD])}, indent=1), encoding="utf-8")

    target = cache_root() / "tiny_models" / f"{name}-{key}"
    if target.is_dir():
        why = _entry_problem(target)
        if why:
            print(f"rebuilding the corrupt tiny-model cache entry {target} ({why})", file=sys.stderr, flush=True)
            shutil.rmtree(target, ignore_errors=True)
    return _atomic_dir(target, build)


def _entry_problem(target: Path) -> str:
    """Why a tiny-model cache entry cannot be loaded as built, or ``""``: an unreadable or missing weight file, or a
    file replaced, added or removed since it was built (its :data:`TINY_RECORD` lists each file's size, sha256 and
    state: :func:`geolip_lib.provenance.folder_problem`), so that valid weights of other values put in its place
    are not measured as the seeded model."""
    bad = safetensors_problems(target)
    if bad or not any(target.glob("*.safetensors")):
        return f"{bad[0][0].name}: {bad[0][1]}" if bad else "no weight file"
    why = recorded_problem(target, TINY_RECORD)
    return f"{TINY_RECORD}: {why}" if why else ""
