"""Tiny random models built from a config (tests, demo), saved as real safetensors files.

A tiny model is fully described by its params file: family, ``config:`` (merged over the
family defaults below), ``tokenizer:`` and ``seed``. It is built once with
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
from typing import Any

import torch

from .tokenizers import _atomic_dir, cache_root, load_tokenizer, tokenizer_dir

FORMAT = 2  # bump to invalidate cached tiny models

DEFAULT_TOKENIZER = {
    "t5": "unigram-wordnet", "t5_v1_1": "unigram-wordnet", "bert": "minilm",
    "decoder_lm": "minilm", "open_clip": "clip-bpe", "dinov2": None,
}

_T5 = dict(model_type="t5", d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
           relative_attention_num_buckets=32, relative_attention_max_distance=128, dropout_rate=0.0,
           feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
           decoder_start_token_id=0)

TINY_DEFAULTS: dict[str, dict[str, Any]] = {
    "t5": _T5,
    "t5_v1_1": {**_T5, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
    "bert": dict(model_type="bert", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=128, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0),
    "dinov2": dict(model_type="dinov2", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
                   image_size=32, patch_size=8, num_channels=3),
    "decoder_lm": dict(model_type="qwen3_5_text", hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=8, linear_num_key_heads=2,
                       linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                       layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                       max_position_embeddings=256, tie_word_embeddings=True),
    "open_clip": dict(embed_dim=32,
                      vision_cfg=dict(image_size=32, patch_size=8, width=32, layers=2, head_width=8, mlp_ratio=2.0),
                      text_cfg=dict(context_length=16, vocab_size=49408, width=32, heads=4, layers=2)),
}


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def resolve_config(family: str, config: dict, tokenizer_len: int | None) -> dict:
    """Family defaults overlaid by ``config``; the vocabulary follows the tokenizer unless given."""
    cfg = _merge(TINY_DEFAULTS[family], config)
    if tokenizer_len is not None and family != "open_clip":
        cfg.setdefault("vocab_size", tokenizer_len)
    return cfg


def _save_open_clip(cfg: dict, seed: int, out: Path) -> None:
    import open_clip
    from safetensors.torch import save_model

    torch.manual_seed(seed)
    model = open_clip.CLIP(**cfg)
    save_model(model, str(out / "open_clip_model.safetensors"))
    (out / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}, indent=1), encoding="utf-8")


def _save_hf(family: str, cfg: dict, seed: int, out: Path) -> None:
    from transformers import AutoConfig

    from .loading import model_class, quiet_transformers, untie_output

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
        One of ``geolip_lib.params.FAMILIES``.
    config : dict
        Overrides of :data:`TINY_DEFAULTS` ``[family]``.
    tokenizer : str or None
        Tokenizer kind (see :mod:`geolip_lib.models.tokenizers`); ``None`` uses the family default.

    Returns
    -------
    pathlib.Path
        ``.cache/tiny_models/<name>-<hash>/`` with ``config.json`` + ``model.safetensors``
        (HF) or ``open_clip_config.json`` + ``open_clip_model.safetensors`` (open_clip),
        plus the tokenizer files for text models.
    """
    kind = tokenizer or DEFAULT_TOKENIZER[family]
    tok = load_tokenizer(kind) if kind else None
    tok_id = tokenizer_dir(kind).name if kind else None  # e.g. unigram-wordnet-<hash of its corpus source>
    cfg = resolve_config(family, config, len(tok) if tok is not None else None)
    key = hashlib.sha1(json.dumps([family, cfg, tok_id, seed, FORMAT, torch.__version__.split("+")[0]],
                                  sort_keys=True).encode()).hexdigest()[:12]

    def build(out: Path) -> None:
        (_save_open_clip(cfg, seed, out) if family == "open_clip" else _save_hf(family, cfg, seed, out))
        if tok is not None:
            tok.save_pretrained(out)
        (out / "geolip_tiny.json").write_text(
            json.dumps({"name": name, "family": family, "config": cfg, "tokenizer": kind, "seed": seed}, indent=1),
            encoding="utf-8")

    target = cache_root() / "tiny_models" / f"{name}-{key}"
    if target.is_dir():
        from .preflight import safetensors_problems

        bad = safetensors_problems(target)
        if bad or not any(target.glob("*.safetensors")):
            why = f"{bad[0][0].name}: {bad[0][1]}" if bad else "no weight file"
            print(f"rebuilding the corrupt tiny-model cache entry {target} ({why})", file=sys.stderr, flush=True)
            shutil.rmtree(target, ignore_errors=True)
    return _atomic_dir(target, build)
