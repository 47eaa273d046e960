"""CTranslate2 model folders (``model.bin`` binary version 6) read without CTranslate2 and rebuilt as transformers.

The façade of: :mod:`.ct2_file` (the bounded reader, with a header-only mode), :mod:`.ct2_specs` with
:mod:`.ct2_decoders` and :mod:`.ct2_encoders` (the converter's variable names mapped back to transformers
state-dict keys: Llama, Mistral, Qwen2, Qwen3, Gemma, GPT-2, OPT, GPT-NeoX, GPT-J, BLOOM, Falcon, BERT, RoBERTa,
XLM-RoBERTa, DistilBERT, Marian, T5), :mod:`.ct2_whisper` (faster-whisper's ``WhisperSpec``) and
:mod:`.ct2_check` (CTranslate2 itself run against the rebuilt model). The folder is written by
:func:`.rebuild.write_folder`. The API the loaders call:

* :func:`header` -- what the folder holds without reading any weight's bytes (the variable table, the rank-0
  settings such as ``num_heads``, CTranslate2's ``config.json`` and vocabulary), as a :class:`.rebuild.Header`;
* :func:`convert` -- the rebuilt ``save_pretrained`` folder and its record (spec, revision, stored dtypes,
  which tensors were dequantized, notes);
* :func:`check` -- CTranslate2's own run and the rebuilt model's on the same inputs, within a tolerance relative
  to the output's scale (:mod:`.ct2_check` says which and why).

int8 / int16 weights are dequantized (``q / weight_scale``); float16 / bfloat16 widen exactly. Every problem is one
``ValueError`` line naming the file.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import torch
import transformers

from . import ct2_plan, ct2_specs
from .ct2_check import run_both
from .ct2_file import (DEQUANTIZED, MAX_BYTES, dequantize, folder_and_bin, read, read_header,  # noqa: F401
                       read_json, resolve_aliases)
from .ct2_whisper import (TOKENIZER_FILE, _LAYER_MAP, _TOP_MAP, check_against_ctranslate2,  # noqa: F401
                          convert_whisper, save_tokenizer, to_whisper_state_dict, whisper_config, whisper_header,
                          whisper_name_map)
from . import rebuild
from .rebuild import Header

__all__ = ["MAX_BYTES", "DEQUANTIZED", "check", "check_against_ctranslate2", "convert", "dequantize", "header",
           "read", "read_header", "save_tokenizer", "to_whisper_state_dict", "whisper_config", "whisper_name_map"]

#: the vocabulary files ``ModelSpec.save`` writes (decoders / encoders, seq2seq shared, seq2seq split)
VOCABULARIES = ("vocabulary.json", "shared_vocabulary.json", "target_vocabulary.json")


def _vocab(folder: Path) -> Optional[list]:
    for name in VOCABULARIES:
        v = read_json(folder / name)
        if v is not None:
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                raise ValueError(f"CTranslate2 file {folder / name}: not a list of tokens")
            return v
    return None


def _table(folder_or_model_bin, model_bin: str):
    folder, path = folder_and_bin(folder_or_model_bin, model_bin)
    spec, revision, shapes, kinds, settings, aliases = read_header(path)
    cc = read_json(folder / "config.json") or {}
    if not isinstance(cc, dict):
        raise ValueError(f"CTranslate2 file {folder / 'config.json'}: not a JSON object")
    return folder, path, spec, revision, shapes, kinds, settings, aliases, cc


def _plan(path, spec, shapes, aliases, settings, cc, folder, given, family):
    vocab = _vocab(folder)
    p = ct2_plan.plan(str(path), spec, shapes, aliases, settings, cc, vocab, dict(given or {}), family)
    if vocab is not None and len(vocab) != p.config.get("vocab_size") and p.config["model_type"] != "marian":
        p.notes.append(f"the vocabulary file lists {len(vocab)} tokens, the embeddings {p.config.get('vocab_size')}")
    for k, v in (given or {}).items():  # the params file's config: wins where the file is silent, is checked where not
        if k in p.config and k not in ("model_type", "architectures") and p.config[k] != v and not (
                isinstance(v, (int, float)) and not isinstance(v, bool) and float(p.config[k]) == float(v)):
            raise ValueError(f"CTranslate2 file {path}: config: {k} is given as {v!r} but the file says "
                             f"{p.config[k]!r}")
        p.config.setdefault(k, v)
    return p, vocab


def header(folder_or_model_bin, family: Optional[str] = None, given: Optional[Mapping[str, Any]] = None, *,
           model_bin: str = "model.bin") -> Header:
    """What a CTranslate2 folder holds, no tensor data read: the transformers keys and shapes it will fill, the
    config inferred (``model_type`` included), the stored dtype of each tensor, facts and notes."""
    folder, path, spec, revision, shapes, kinds, settings, aliases, cc = _table(folder_or_model_bin, model_bin)
    facts = {"spec": spec, "revision": revision, "file": str(path), "bytes": path.stat().st_size,
             "variables": len(shapes), "family": family}
    if spec == "WhisperSpec":
        if family not in (None, "whisper"):
            raise ValueError(f"CTranslate2 file {path}: a WhisperSpec, but the params file says family {family}")
        tensors, stored, config = whisper_header(str(path), shapes, kinds, settings, aliases)
        return Header("CTranslate2", tensors, config, stored, facts, [])
    p, _ = _plan(path, spec, shapes, aliases, settings, cc, folder, given, family)
    tensors = {e.key: ct2_specs.shape_of(e, shapes) for e in p.entries}
    stored = {e.key: kinds[e.name] for e in p.entries if e.zeros is None}
    return Header("CTranslate2", tensors, p.config, stored, facts, p.notes + [f"dropped: {d}" for d in p.dropped])


def _write(config: Mapping, tensors: Mapping[str, np.ndarray], out_dir: Path, where: str) -> dict:
    """The rebuilt folder: :func:`.rebuild.write_folder` (the class the tensors fill, loaded strictly by
    transformers' own ``from_pretrained``, saved, read back bit for bit); its one-line errors name the file."""
    try:  # an encoder without a pooler (XLM-RoBERTa's classification model) is rebuilt without one there too
        return rebuild.write_folder(config, tensors, out_dir)
    except ValueError as exc:
        raise ValueError(f"CTranslate2 file {where}: {str(exc).splitlines()[0]}") from None


def convert(folder_or_model_bin, out_dir, family: Optional[str] = None, given: Optional[Mapping[str, Any]] = None,
            *, model_bin: str = "model.bin") -> dict:
    """Rebuild the CTranslate2 model as a transformers ``save_pretrained`` folder ``out_dir``; returns its record:
    spec, revision, model_type, architecture, ``dtypes`` (stored dtype -> variable count), ``stored`` (state-dict
    key -> stored dtype), ``dequantized`` (state-dict keys whose values were int8/int16), ``filled`` (keys the
    class filled itself: a sinusoidal table, a zero bias the converter did not store), notes, dropped."""
    folder, path = folder_and_bin(folder_or_model_bin, model_bin)
    out_dir = Path(out_dir)
    kinds: dict = {}
    spec, revision, variables, aliases = read(path, kinds=kinds)
    counts: dict = {}
    for n, k in kinds.items():  # weights only: the rank-0 settings (head counts, flags) are int8/int16/int32 too
        if variables[n].ndim:
            counts[k] = counts.get(k, 0) + 1
    rec = {"spec": spec, "revision": revision, "file": str(path), "dtypes": counts, "out_dir": str(out_dir),
           "settings": sum(1 for a in variables.values() if a.ndim == 0)}
    if spec == "WhisperSpec":
        if family not in (None, "whisper"):
            raise ValueError(f"CTranslate2 file {path}: a WhisperSpec, but the params file says family {family}")
        convert_whisper(folder, out_dir, model_bin=path.name)
        deq = dequantize(variables).get(DEQUANTIZED, [])
        stored = {n: k for n, k in kinds.items() if variables[n].ndim and not n.endswith("/weight_scale")}
        return {**rec, "model_type": "whisper", "architecture": "WhisperForConditionalGeneration", "stored": stored,
                "dequantized": deq, "notes": ["stored and dequantized name CTranslate2 variables (fused q/k/v)"],
                "dropped": []}
    shapes = {n: tuple(a.shape) for n, a in variables.items()}
    settings = {n: a for n, a in variables.items() if a.ndim == 0}
    cc = read_json(folder / "config.json") or {}
    p, vocab = _plan(path, spec, shapes, aliases, settings, cc, folder, given, family)
    values = dequantize(variables)
    deq_vars = set(values.pop(DEQUANTIZED, []))
    tensors = ct2_specs.apply(p, values)
    written = _write(p.config, tensors, out_dir, str(path))
    notes = list(p.notes)
    if p.config["model_type"] == "marian":  # the table the class recomputes vs the file's
        m = transformers.MarianMTModel.from_pretrained(str(out_dir))  # the table it recomputes (not saved)
        mine = m.model.decoder.embed_positions.weight.detach().numpy()
        theirs = values.get(aliases.get("decoder/position_encodings/encodings", "decoder/position_encodings/encodings"))
        if theirs is not None:
            diff = float(np.abs(mine - np.asarray(theirs, np.float32)).max()) if mine.shape == theirs.shape else None
            if diff is None or diff > 1e-3:
                raise ValueError(f"CTranslate2 file {path}: its position table differs from Marian's sinusoidal one "
                                 f"({'shapes' if diff is None else f'{diff:.2e}'}): not a Marian conversion")
            notes.append(f"position table: the class's sinusoidal one equals the file's within {diff:.1e}")
    stored = {e.key: kinds[e.name] for e in p.entries if e.zeros is None}
    deq = sorted(e.key for e in p.entries if e.name in deq_vars and e.zeros is None)
    rec.update(model_type=p.config["model_type"], architecture=p.config["architectures"][0], stored=stored,
               dequantized=deq, filled=p.filled, notes=notes, dropped=p.dropped,
               written={k: written.get(k) for k in ("class", "tied", "renamed", "saved_dtype", "init_kwargs")
                        if k in written})
    (out_dir / "ct2_source.json").write_text(json.dumps(rec, indent=1), encoding="utf-8")
    return rec


def check(folder_or_model_bin, out_dir, family: Optional[str] = None, *, model_bin: str = "model.bin") -> dict:
    """CTranslate2 itself and the rebuilt folder ``out_dir`` on the same inputs (:mod:`.ct2_check`); one line
    naming the file when they differ beyond the tolerance."""
    folder, path = folder_and_bin(folder_or_model_bin, model_bin)
    spec, _, shapes, kinds, _, _ = read_header(path)
    if spec == "WhisperSpec":
        return check_against_ctranslate2(folder, out_dir, model_bin=path.name)
    rec = json.loads((Path(out_dir) / "ct2_source.json").read_text(encoding="utf-8"))
    int8 = any(k == "int8" and shapes[n] for n, k in kinds.items())
    if path.name == "model.bin":
        return run_both(folder, Path(out_dir), str(path), rec["model_type"], _vocab(folder) or [], int8)
    with tempfile.TemporaryDirectory() as tmp:  # CTranslate2 loads a folder's model.bin only: link it so named
        for f in folder.iterdir():
            if f.is_file() and f.name != "model.bin":
                (Path(tmp) / ("model.bin" if f == path else f.name)).symlink_to(f.resolve())
        return run_both(Path(tmp), Path(out_dir), str(path), rec["model_type"], _vocab(folder) or [], int8)
