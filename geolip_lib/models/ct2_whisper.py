"""CTranslate2 ``WhisperSpec`` files (what faster-whisper ships) as transformers' ``WhisperForConditionalGeneration``.

Name map (``ctranslate2/specs/whisper_spec.py``, ``transformer_spec.py``, ``attention_spec.py``, ``common_spec.py``
and the ``WhisperLoader`` / ``BartLoader`` of ``converters/transformers.py``), see :func:`whisper_name_map`. The
self-attention ``linear_0`` is the fused ``[q; k; v]`` (rows ``3 d``), the cross-attention ``linear_1`` the fused
``[k; v]`` (rows ``2 d``); the converter fills the missing k bias with zeros, which are checked and dropped (a
nonzero k bias is refused: not a Whisper conversion). The sizes of the rebuilt config are inferred from the shapes
(d_model, layers, ffn, vocab, mel bins, positions) and the stored ``num_heads`` scalars; the CTranslate2 folder's
``config.json`` contributes only ``suppress_ids`` / ``suppress_ids_begin`` (-> ``suppress_tokens`` /
``begin_suppress_tokens``) when present. Special token ids: read from the folder's ``tokenizer.json``
(<|endoftext|>, <|startoftranscript|>) when it has one; else OpenAI's ids (multilingual 51865+: 50257 / 50258;
English-only 51864: 50256 / 50257), otherwise ``vocab_size - 1`` for all four (a placeholder: the ids are unknown;
the weights do not depend on them).
"""
from __future__ import annotations

import json
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import WhisperConfig, WhisperForConditionalGeneration, WhisperTokenizerFast

from ..families.whisper import synthetic_log_mel
from ..lazy import lazy
from .ct2_file import DEQUANTIZED, dequantize, read
from .ct2_file import resolve_aliases as _resolve

#: CTranslate2 itself, for the conversion check only (its import loads its native library)
ctranslate2 = lazy("ctranslate2")

__all__ = ["check_against_ctranslate2", "convert_whisper", "whisper_header", "save_tokenizer", "to_whisper_state_dict",
           "whisper_config", "whisper_name_map"]

#: scalar variables of WhisperSpec (settings, not weights): read for num_heads, otherwise accepted and dropped
_SCALARS = re.compile(r"^(?:encoder|decoder)/(?:num_heads|pre_norm|activation|alignment_layer|alignment_heads|"
                      r"scale_embeddings|scale_outputs|alibi|alibi_use_positive_positions|scale_alibi|"
                      r"start_from_zero_embedding|embeddings_merge|multi_query_attention|"
                      r"embeddings/multiply_by_sqrt_depth|layer_\d+/(?:self_attention|attention)/queries_scale)$")

_LAYER = re.compile(r"^(encoder|decoder)/layer_(\d+)/(.+)$")
_LN = {"gamma": "weight", "beta": "bias"}
#: per-layer CT2 suffix -> (transformers suffix under model.{stack}.layers.{i}., split) ; split: None, "qkv", "kv"
_LAYER_MAP = {
    "self_attention/layer_norm/gamma": ("self_attn_layer_norm.weight", None),
    "self_attention/layer_norm/beta": ("self_attn_layer_norm.bias", None),
    "self_attention/linear_0/weight": ("self_attn.{q,k,v}_proj.weight", "qkv"),
    "self_attention/linear_0/bias": ("self_attn.{q,k,v}_proj.bias", "qkv"),
    "self_attention/linear_1/weight": ("self_attn.out_proj.weight", None),
    "self_attention/linear_1/bias": ("self_attn.out_proj.bias", None),
    "attention/layer_norm/gamma": ("encoder_attn_layer_norm.weight", None),
    "attention/layer_norm/beta": ("encoder_attn_layer_norm.bias", None),
    "attention/linear_0/weight": ("encoder_attn.q_proj.weight", None),
    "attention/linear_0/bias": ("encoder_attn.q_proj.bias", None),
    "attention/linear_1/weight": ("encoder_attn.{k,v}_proj.weight", "kv"),
    "attention/linear_1/bias": ("encoder_attn.{k,v}_proj.bias", "kv"),
    "attention/linear_2/weight": ("encoder_attn.out_proj.weight", None),
    "attention/linear_2/bias": ("encoder_attn.out_proj.bias", None),
    "ffn/layer_norm/gamma": ("final_layer_norm.weight", None),
    "ffn/layer_norm/beta": ("final_layer_norm.bias", None),
    "ffn/linear_0/weight": ("fc1.weight", None),
    "ffn/linear_0/bias": ("fc1.bias", None),
    "ffn/linear_1/weight": ("fc2.weight", None),
    "ffn/linear_1/bias": ("fc2.bias", None),
}
_TOP_MAP = {
    "encoder/conv1/weight": "model.encoder.conv1.weight",
    "encoder/conv1/bias": "model.encoder.conv1.bias",
    "encoder/conv2/weight": "model.encoder.conv2.weight",
    "encoder/conv2/bias": "model.encoder.conv2.bias",
    "encoder/position_encodings/encodings": "model.encoder.embed_positions.weight",
    "encoder/layer_norm/gamma": "model.encoder.layer_norm.weight",
    "encoder/layer_norm/beta": "model.encoder.layer_norm.bias",
    "decoder/embeddings/weight": "model.decoder.embed_tokens.weight",
    "decoder/position_encodings/encodings": "model.decoder.embed_positions.weight",
    "decoder/layer_norm/gamma": "model.decoder.layer_norm.weight",
    "decoder/layer_norm/beta": "model.decoder.layer_norm.bias",
    "decoder/projection/weight": "proj_out.weight",
}


def whisper_name_map() -> dict:
    """The map used: top-level CT2 name -> transformers name, and per-layer suffix -> (suffix, split)."""
    return {"top": dict(_TOP_MAP), "layer": dict(_LAYER_MAP), "scalars": _SCALARS.pattern}




def _scalar(v: dict, name: str) -> int:
    if name not in v:
        raise ValueError(f"CTranslate2 Whisper model: no {name!r} scalar")
    return int(np.asarray(v[name]).reshape(-1)[0])


def _special_ids(tokenizer_file, vocab_size: int) -> Optional[dict]:
    """``pad / bos / eos / decoder_start`` token ids read from a Whisper ``tokenizer.json`` (<|endoftext|> and
    <|startoftranscript|>), None when the file lacks them."""
    tok = Tokenizer.from_file(str(tokenizer_file))
    eot, sot = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|startoftranscript|>")
    if eot is None or sot is None:
        return None
    # as openai's conversions: bos = <|endoftext|> on multilingual models, <|startoftranscript|> on English-only ones
    bos = sot if vocab_size < 51865 else eot
    return {"pad_token_id": eot, "bos_token_id": bos, "eos_token_id": eot, "decoder_start_token_id": sot}


def whisper_config(variables: dict, aliases: Optional[dict] = None, ct2_config: Optional[dict] = None,
                   tokenizer_file=None):
    """A ``transformers.WhisperConfig`` with the sizes inferred from the shapes and the ``num_heads`` scalars; the
    special token ids from ``tokenizer_file`` when given (else OpenAI's ids for the vocabulary size)."""

    v = _resolve(variables, aliases)
    for k in ("encoder/conv1/weight", "encoder/position_encodings/encodings", "decoder/embeddings/weight",
              "decoder/position_encodings/encodings"):
        if k not in v:
            raise ValueError(f"CTranslate2 Whisper model: no {k!r} variable")
    d, mels = v["encoder/conv1/weight"].shape[:2]
    layers = {s: sorted({int(m.group(2)) for m in map(_LAYER.match, v) if m and m.group(1) == s})
              for s in ("encoder", "decoder")}
    for s, ids in layers.items():
        if ids != list(range(len(ids))) or not ids:
            raise ValueError(f"CTranslate2 Whisper model: {s} layers {ids[:5]}... are not 0..n-1")
    ffn = v.get("encoder/layer_0/ffn/linear_0/weight")
    dffn = v.get("decoder/layer_0/ffn/linear_0/weight")
    kw: dict[str, Any] = dict(
        d_model=int(d), num_mel_bins=int(mels), vocab_size=int(v["decoder/embeddings/weight"].shape[0]),
        encoder_layers=len(layers["encoder"]), decoder_layers=len(layers["decoder"]),
        encoder_attention_heads=_scalar(v, "encoder/num_heads"),
        decoder_attention_heads=_scalar(v, "decoder/num_heads"),
        encoder_ffn_dim=int(ffn.shape[0]) if ffn is not None else 4 * int(d),
        decoder_ffn_dim=int(dffn.shape[0]) if dffn is not None else 4 * int(d),
        max_source_positions=int(v["encoder/position_encodings/encodings"].shape[0]),
        max_target_positions=int(v["decoder/position_encodings/encodings"].shape[0]),
    )
    for k in ("encoder_attention_heads", "decoder_attention_heads"):
        if kw[k] <= 0 or kw["d_model"] % kw[k]:
            raise ValueError(f"CTranslate2 Whisper model: {k.split('_')[0]}/num_heads is {kw[k]}, which does not "
                             f"divide d_model {kw['d_model']} (a broken or edited file)")
    vocab = kw["vocab_size"]
    special = _special_ids(tokenizer_file, vocab) if tokenizer_file is not None else None
    if special is not None:  # the folder's own tokenizer names them (faster-whisper ships tokenizer.json)
        kw.update(special)
    elif vocab == 51864:  # English-only Whisper (openai/whisper-*.en)
        kw.update(pad_token_id=50256, bos_token_id=50257, eos_token_id=50256, decoder_start_token_id=50257)
    elif vocab >= 51865:  # multilingual OpenAI vocabulary (openai/whisper-base ...: <|endoftext|> 50257, sot 50258)
        kw.update(pad_token_id=50257, bos_token_id=50257, eos_token_id=50257, decoder_start_token_id=50258)
    else:  # not an OpenAI vocabulary: the special ids are unknown; a placeholder (weights only)
        kw.update(pad_token_id=vocab - 1, bos_token_id=vocab - 1, eos_token_id=vocab - 1,
                  decoder_start_token_id=vocab - 1)
    proj = v.get("decoder/projection/weight")
    kw["tie_word_embeddings"] = proj is None or bool(np.array_equal(proj, v["decoder/embeddings/weight"]))
    cc = ct2_config or {}
    if cc.get("suppress_ids") is not None:
        kw["suppress_tokens"] = list(cc["suppress_ids"])
    if cc.get("suppress_ids_begin") is not None:
        kw["begin_suppress_tokens"] = list(cc["suppress_ids_begin"])
    return WhisperConfig(**kw)


def _split(name: str, arr: np.ndarray, parts: int, d: int, ct2_name: str) -> list:
    if arr.shape[0] != parts * d:
        raise ValueError(f"CTranslate2 variable {ct2_name!r}: {arr.shape[0]} rows, a fused {parts}-way "
                         f"projection of d_model {d} has {parts * d}")
    return [arr[j * d:(j + 1) * d] for j in range(parts)]


def to_whisper_state_dict(variables: dict, config=None, aliases: Optional[dict] = None) -> dict:
    """transformers ``WhisperForConditionalGeneration`` state dict (float32 torch tensors) of a WhisperSpec.

    ``config``: a WhisperConfig (or dict) giving d_model; None infers it (:func:`whisper_config`).
    A variable the map does not know is refused by name (one line).
    """

    v = dequantize(variables)  # before the aliases: an aliased weight (the tied projection) uses its target's scale
    v.pop(DEQUANTIZED, None)
    v = _resolve(v, {a: t for a, t in (aliases or {}).items() if not a.endswith("/weight_scale")})
    if config is None:
        config = whisper_config(v)
    d = int(config["d_model"] if isinstance(config, dict) else config.d_model)
    out: dict[str, np.ndarray] = {}
    for name, arr in v.items():
        if _SCALARS.match(name):
            continue
        if name in _TOP_MAP:
            out[_TOP_MAP[name]] = arr
            continue
        m = _LAYER.match(name)
        if m is None or m.group(3) not in _LAYER_MAP:
            raise ValueError(f"CTranslate2 Whisper model: variable {name!r} is not in the Whisper name map")
        stack, i, rest = m.groups()
        if stack == "encoder" and rest.startswith("attention/"):
            raise ValueError(f"CTranslate2 Whisper model: variable {name!r}: the encoder has no cross-attention")
        target, split = _LAYER_MAP[rest]
        pre = f"model.{stack}.layers.{i}."
        if split is None:
            out[pre + target] = arr
            continue
        roles = ("q", "k", "v") if split == "qkv" else ("k", "v")
        for role, part in zip(roles, _split(target, arr, len(roles), d, name)):
            t = re.sub(r"\{[^}]*\}", role, target)
            if role == "k" and t.endswith(".bias"):
                if np.any(part != 0):
                    raise ValueError(f"CTranslate2 Whisper model: {name!r} has a nonzero k bias (Whisper's k_proj "
                                     f"has none: not a Whisper conversion)")
                continue
            out[pre + t] = part
    return {k: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)) for k, a in out.items()}


def convert_whisper(model_dir, out_dir, model_bin: str = "model.bin") -> Path:
    """Write ``out_dir`` as a transformers ``save_pretrained`` folder of the Whisper model in ``model_dir``.

    ``model_dir/model.bin`` (a ``WhisperSpec``); ``model_dir/config.json`` (CTranslate2's, optional,
    bounded to 1 MiB) gives the suppress tokens only; sizes come from the shapes (module docstring).
    Returns ``out_dir``.
    """

    model_dir, out_dir = Path(model_dir), Path(out_dir)
    spec, revision, variables, aliases = read(model_dir / model_bin)
    if spec != "WhisperSpec":
        raise ValueError(f"CTranslate2 file {model_dir / model_bin}: spec {spec!r}, not a WhisperSpec")
    cc = None
    cfg_file = model_dir / "config.json"
    if cfg_file.is_file():
        if cfg_file.stat().st_size > 1024 ** 2:
            raise ValueError(f"CTranslate2 config {cfg_file}: over 1 MiB")
        cc = json.loads(cfg_file.read_text(encoding="utf-8"))
    tok_file = model_dir / TOKENIZER_FILE
    config = whisper_config(variables, aliases, cc, tok_file if tok_file.is_file() else None)
    state = to_whisper_state_dict(variables, config, aliases)
    if config.tie_word_embeddings:
        state.pop("proj_out.weight", None)
    model = WhisperForConditionalGeneration(config)
    expected = set(model.state_dict())
    missing = sorted(expected - set(state) - ({"proj_out.weight"} if config.tie_word_embeddings else set()))
    extra = sorted(set(state) - expected)
    if missing or extra:
        raise ValueError(f"CTranslate2 Whisper model {model_dir}: missing {missing[:4]}, unexpected {extra[:4]}")
    with torch.no_grad():
        model.load_state_dict(state, strict=False)
    if config.tie_word_embeddings:
        model.tie_weights()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    (out_dir / "ct2_source.json").write_text(json.dumps({"spec": spec, "revision": revision,
                                                       "model_bin": str(model_dir / model_bin)}, indent=2))
    return out_dir


#: the tokenizer file a CTranslate2 Whisper folder ships (faster-whisper's ``tokenizer.json``, Hugging Face format)
TOKENIZER_FILE = "tokenizer.json"
#: the largest relative difference of the encoder output allowed against CTranslate2 (both float32 from float16)
CHECK_TOLERANCE = 1e-3


def save_tokenizer(model_dir, out_dir) -> bool:
    """Write ``model_dir/tokenizer.json`` into ``out_dir`` as a transformers ``WhisperTokenizerFast`` (False when the
    folder has none: the decoder's token probes then have no tokenizer, and say so). Bounded to 64 MiB."""
    f = Path(model_dir) / TOKENIZER_FILE
    if not f.is_file():
        return False
    if not stat.S_ISREG(f.lstat().st_mode) or f.stat().st_size > 64 * 1024 ** 2:
        raise ValueError(f"tokenizer file {f}: not a regular file of at most 64 MiB")
    tok = WhisperTokenizerFast(tokenizer_file=str(f))
    tok.save_pretrained(str(out_dir))
    return True


def _prompt(tokenizer_file: Path, multilingual: bool) -> list[int]:
    """The transcription prompt's ids: <|startoftranscript|> (<|en|> <|transcribe|> on multilingual models)
    <|notimestamps|>, read from the tokenizer file (English-only models take no language or task token)."""
    tok = Tokenizer.from_file(str(tokenizer_file))
    names = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>"]
    if not multilingual:
        names[1:3] = ["", ""]
    ids = [tok.token_to_id(n) if n else None for n in names]
    if ids[0] is None or ids[3] is None:
        raise ValueError(f"{tokenizer_file}: no <|startoftranscript|> / <|notimestamps|> token")
    return [i for i in ids if i is not None]


def check_against_ctranslate2(model_dir, out_dir, model_bin: str = "model.bin", n_tokens: int = 16) -> dict:
    """Run CTranslate2 itself (the ``ctranslate2`` package, CPU, float32) and the rebuilt transformers model of
    ``out_dir`` on the same input: the log-mel features of :func:`geolip_lib.families.whisper.synthetic_log_mel`
    (a deterministic chirp, 30 s of frames). Compared: the encoder output (largest difference relative to its
    scale, at most :data:`CHECK_TOLERANCE`) and ``n_tokens`` greedy tokens from the transcription prompt (no
    token suppression on either side): they must be the same. Returns the numbers; a mismatch raises ValueError.
    CTranslate2 reads ``model.bin`` under that name, so another ``model_bin`` is linked in a temporary folder."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    model = WhisperForConditionalGeneration.from_pretrained(str(out_dir)).eval()
    cfg = model.config
    feats = synthetic_log_mel(cfg.num_mel_bins, 2 * cfg.max_source_positions)[None]
    prompt = _prompt(model_dir / TOKENIZER_FILE, cfg.vocab_size >= 51865)
    n_tokens = max(0, min(n_tokens, cfg.max_target_positions - len(prompt)))  # the decoder's positions bound it
    with tempfile.TemporaryDirectory() as tmp:
        src = model_dir
        if model_bin != "model.bin":
            src = Path(tmp)
            for f in model_dir.iterdir():
                if f.is_file():
                    (src / ("model.bin" if f.name == model_bin else f.name)).symlink_to(f.resolve())
        ct = ctranslate2.models.Whisper(str(src), device="cpu", compute_type="float32", inter_threads=1)
        sv = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats, dtype=np.float32))
        enc_ct = np.array(ct.encode(sv, to_cpu=True))
        res = ct.generate(sv, [prompt], beam_size=1, max_length=n_tokens, suppress_blank=False, suppress_tokens=[],
                          return_scores=False, return_logits_vocab=True, return_no_speech_prob=False)
    toks_ct = [int(t) for t in res[0].sequences_ids[0]]
    steps = res[0].logits[0] if res[0].logits else []
    # log-softmax on both sides: CTranslate2's "logits_vocab" may be raw logits or log-probs (identity then)
    lp_ct = [torch.log_softmax(torch.from_numpy(np.asarray(x, dtype=np.float64).reshape(-1)), -1).numpy()
             for x in steps]
    with torch.no_grad():
        enc = model.get_encoder()(input_features=torch.from_numpy(feats)).last_hidden_state
        ids = list(prompt)
        out, lp_hf = [], []
        for _ in range(n_tokens):
            logits = model(encoder_outputs=(enc,), decoder_input_ids=torch.tensor([ids], device=enc.device),
                           use_cache=False).logits
            lp_hf.append(torch.log_softmax(logits[0, -1].double(), -1).numpy())
            nxt = int(logits[0, -1].argmax())
            if nxt == cfg.eos_token_id:
                break
            ids.append(nxt)
            out.append(nxt)
    enc_hf = enc.numpy()
    diff = float(np.abs(enc_hf - enc_ct).max())
    scale = float(np.abs(enc_ct).max()) or 1.0
    check = {"against": f"ctranslate2 {ctranslate2.__version__} (CPU, float32)", "input": "synthetic_log_mel chirp, "
             f"{feats.shape[1]} mel x {feats.shape[2]} frames", "encoder_max_abs_diff": diff,
             "encoder_max_rel_diff": diff / scale, "tolerance": CHECK_TOLERANCE, "prompt": prompt,
             "tokens_ctranslate2": toks_ct, "tokens_transformers": out[:len(toks_ct)] if len(out) > len(toks_ct)
             else out, "same_tokens": out[:len(toks_ct)] == toks_ct}
    # CTranslate2 may stop before n_tokens (its own length rule): the tokens it gave are compared, and the log-probs
    # of every step it returned (the whole vocabulary) against ours at the same step
    n = min(len(lp_ct), len(lp_hf))
    lp_diff = max((float(np.abs(lp_ct[i] - lp_hf[i]).max()) for i in range(n)
                   if lp_ct[i].shape == lp_hf[i].shape), default=None)
    check["steps_compared"], check["logprob_max_abs_diff"] = n, lp_diff
    if diff / scale > CHECK_TOLERANCE:
        raise ValueError(f"the rebuilt Whisper's encoder differs from CTranslate2's by {diff / scale:.2e} of its scale "
                         f"(tolerance {CHECK_TOLERANCE:g}): the conversion is wrong")
    if out[:len(toks_ct)] != toks_ct or (len(toks_ct) < len(out) and len(toks_ct) == 0):
        raise ValueError(f"the rebuilt Whisper decodes {out} where CTranslate2 decodes {toks_ct} from the same "
                         f"features: the conversion is wrong")
    if lp_diff is not None and lp_diff > 1e-2:
        raise ValueError(f"the rebuilt Whisper's log-probs differ from CTranslate2's by {lp_diff:.2e} (tolerance "
                         f"1e-2): the conversion is wrong")
    return check


def whisper_header(where: str, shapes: dict, kinds: dict, settings: dict, aliases: dict) -> tuple[dict, dict, dict]:
    """``(tensors, stored, config)`` of a WhisperSpec from its variable table alone (no tensor data): the
    transformers keys and shapes :func:`to_whisper_state_dict` will give (fused projections split, the converter's
    zero k biases dropped, the tied projection left to the tie), each one's stored dtype, and the sizes."""
    names = {n: s for n, s in shapes.items() if s and not n.endswith("/weight_scale")}
    for a, t in aliases.items():
        if a in _TOP_MAP and t in names:
            names[a] = names[t]
    tensors, stored = {}, {}
    for name, shp in names.items():
        kind = kinds.get(aliases.get(name, name), kinds.get(name))
        if name in _TOP_MAP:
            if name == "decoder/projection/weight" and aliases.get(name) == "decoder/embeddings/weight":
                continue  # the tie
            tensors[_TOP_MAP[name]], stored[_TOP_MAP[name]] = tuple(shp), kind
            continue
        m = _LAYER.match(name)
        if m is None or m.group(3) not in _LAYER_MAP:
            raise ValueError(f"CTranslate2 file {where}: variable {name!r} is not in the Whisper name map")
        stack, i, rest = m.groups()
        target, split = _LAYER_MAP[rest]
        pre = f"model.{stack}.layers.{i}."
        roles = [None] if split is None else (("q", "k", "v") if split == "qkv" else ("k", "v"))
        for role in roles:
            t = target if role is None else re.sub(r"\{[^}]*\}", role, target)
            if role == "k" and t.endswith(".bias"):
                continue
            tensors[pre + t] = (shp[0] // len(roles),) + tuple(shp[1:])
            stored[pre + t] = kind
    d, mels = names["encoder/conv1/weight"][:2] if "encoder/conv1/weight" in names else (None, None)
    config = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"], "d_model": d,
              "num_mel_bins": mels, "encoder_attention_heads": _scalar(settings, "encoder/num_heads"),
              "decoder_attention_heads": _scalar(settings, "decoder/num_heads")}
    for k in ("encoder_attention_heads", "decoder_attention_heads"):
        if d is not None and (config[k] <= 0 or d % config[k]):
            raise ValueError(f"CTranslate2 file {where}: {k.split('_')[0]}/num_heads is {config[k]}, which does "
                             f"not divide d_model {d} (a broken or edited file)")
    return tensors, stored, config
