"""GGUF files as a model source (``source: gguf``, ``gguf_file:`` in ``local_dir:`` or ``package:``).

transformers reads GGUF itself (``from_pretrained(folder, gguf_file=name)``, with the ``gguf``
package): it maps llama.cpp's tensor names to its own, undoes llama.cpp's rotary permutation of
W_Q / W_K and **dequantizes** every tensor to float. Dequantizing a 135 M-parameter Q4_1 file
takes ~47 s on two busy cores, so the dequantized model is written once, with its tokenizer, as
an ordinary ``save_pretrained`` folder in ``<cache>/gguf/<file stem>-<key>/`` (the key: the GGUF
file's sha256, transformers' version and the params file's ``config:``); every later load reads
that folder, and the weight battery streams its safetensors.

K-quants (``Q4_K``, ``Q6_K`` ...: Qwen2.5-Coder's Q4_K_M) need nothing more for the architectures
transformers' classic GGUF loader reads (llama, qwen2, ...): it dequantizes every tensor with the
``gguf`` package's own ``gguf.quants.dequantize``, and ``GgufConfig(dequantize=True)`` below keeps the
newer loader (qwen35, lfm2), which could leave the blocks packed for its kernels, unpacking them too.
tests/unit/models/test_gguf_kquants.py holds the saved folder to ``gguf.quants.dequantize`` of every
tensor of a Q4_K_M-like qwen2 file (llama.cpp does not permute Qwen2's W_Q / W_K, and nothing is undone).

What the values are measured on is recorded: :func:`quantization` reads each tensor's stored type
(``Q4_1``, ``Q8_0``, ``F32`` ...) with the ``gguf`` package's own reader (header only), and the
provenance of such a model says ``dequantized: true`` with those types and the file's sha256
(:func:`geolip_lib.provenance.model_provenance`).

The header is read once per file content (reading a multi-GB file's header, with its
tokenizer arrays, took 1-4 minutes in every plan and every job): :func:`header` keeps what the plan and
the preflight need (each tensor's stored type and shape, the scalar metadata keys, the transformers
config of each ``config:``) in ``<cache>/gguf-headers/<sha256>.json``, written atomically. The key is
the file's sha256 (``provenance.file_sha256``, itself cached by path, size, mtime, ctime and inode), so a
file changed in place is read afresh, never served a stale entry; an entry that does not parse or does not
describe its file (another sha256 or size, another layout) is ignored and rewritten. The record serves the plan and
the preflight only: the dequantized folder is made from what the file itself says (its config, its stored
types), whatever a record holds.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

import transformers
from gguf import GGUFReader, GGUFValueType
from transformers import AutoConfig, AutoTokenizer, GgufConfig

from ..cache_auth import read_or_none, write_record
from ..params import model_file_label, ModelParams, family_problem
from ..paths import cache_root, resolve
from ..provenance import file_sha256, folder_record
from ..results import atomic_write_text
from . import packaged
from .common import (ModelFileError, ModelLoadError, intact_derived, model_class, quiet_transformers,
                     short_error, source_file, weights_hash)
from .tokenizers import _atomic_dir

__all__ = ["SOURCE_INFO", "check_tensors", "config_dict", "dequantized_dir", "folder", "gguf_path", "quantization",
           "tensor_problems"]

#: the file in a dequantized folder that names the GGUF it was made from (read back by the loader)
SOURCE_INFO = "gguf_source.json"
#: part of the cache key: bump when the way the dequantized folder is written changes
LAYOUT = "gguf-dequantized-1"
#: what a cached header record holds (:func:`header`): bump when that changes, and every entry is read afresh
HEADER_LAYOUT = "gguf-header-1"


def folder(p: ModelParams, fetch: bool = True) -> Path:
    """The folder holding ``gguf_file``: ``local_dir:`` or the package's assembled folder."""
    if p.package is not None:
        return packaged.ensure(p, fetch=fetch)
    d = resolve(p.local_dir)
    if not d.is_dir():
        raise ModelLoadError(f"model '{p.name}': local directory {d} does not exist "
                             f"(fix local_dir: in {model_file_label(p.name)})")
    return d


def gguf_path(p: ModelParams, fetch: bool = True) -> Path:
    """The GGUF file of ``p`` (one line when it is missing, a folder, a pipe: :func:`.common.source_file`)."""
    return source_file(p, folder(p, fetch), "gguf_file", "GGUF")


def _reader(path: Path) -> GGUFReader:
    """``path``'s header and tensor table, checked by the ``gguf`` package's reader (tensor data memory-mapped,
    never read): a truncated file, a lying tensor or key count, a tensor running past the end of the file, a
    shape larger than the file or a stored type the reader does not know is one line naming the file."""
    try:
        reader = GGUFReader(str(path))
        why = _overlap(reader)
    except Exception as exc:  # noqa: BLE001 - a truncated, lying or foreign file: one line
        why = f"{type(exc).__name__}: {short_error(exc)}"
    if why:
        raise ModelFileError(f"GGUF file {path} cannot be read ({why}); re-download it") from None
    return reader


def _overlap(reader: GGUFReader) -> str:
    """Why the tensors' data do not lie apart (a lying offset pointing into another tensor, which the
    reader accepts: its values would be another tensor's bytes), or ``""``: as llama.cpp asks, each starts
    on the file's alignment and none runs into the next."""
    end, prev = 0, None
    for t in sorted(reader.tensors, key=lambda t: t.data_offset):
        if t.data_offset % reader.alignment:
            return f"tensor {t.name} starts at byte {t.data_offset}, off the file's {reader.alignment}-byte alignment"
        if t.data_offset < end:
            return f"tensor {t.name} (from byte {t.data_offset}) overlaps {prev} (to byte {end})"
        end, prev = t.data_offset + int(t.n_bytes), t.name
    return ""


def _plain(value):
    """A metadata value as JSON (numpy scalars and arrays from the reader as Python numbers and lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _metadata(reader: GGUFReader) -> dict:
    """The header's key-value pairs: scalars and strings as they are, an array (the tokenizer's tokens,
    merges) as ``{"array": its length}``."""
    out = {}
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):  # the reader's own header fields (version, counts)
            continue
        if field.types and field.types[0] == GGUFValueType.ARRAY:
            out[name] = {"array": len(field.data)}
        else:
            out[name] = _plain(field.contents())
    return out


def _header_file(sha: str) -> Path:
    return cache_root() / "gguf-headers" / f"{sha}.json"


def _cached_header(path: Path, sha: str) -> Optional[dict]:
    """The cached record of ``path`` (content ``sha``), or None when there is none or it does not describe the
    file: not JSON, another layout, sha256 or size, or tensors / configs of the wrong shape (rewritten then)."""
    rec = read_or_none(_header_file(sha), "GGUF header record", "reading the header again")  # as data, signed
    if rec is None:
        return None
    ok = (isinstance(rec, dict) and rec.get("layout") == HEADER_LAYOUT and rec.get("sha256") == sha
          and rec.get("bytes") == path.stat().st_size and isinstance(rec.get("metadata"), dict)
          and isinstance(rec.get("configs"), dict) and isinstance(rec.get("tensors"), dict)
          and all(isinstance(t, dict) and isinstance(t.get("type"), str) and isinstance(t.get("shape"), list)
                  and all(isinstance(n, int) and n >= 0 for n in t["shape"]) for t in rec["tensors"].values()))
    return rec if ok else None


def _store_header(rec: dict) -> None:
    try:  # atomically (another job may read it meanwhile); a read-only cache only costs the next read
        write_record(_header_file(rec["sha256"]), rec)  # signed under this user's key (cache_auth)
    except (OSError, ValueError):
        pass


def header(path: Path) -> dict:
    """What the plan and the preflight need of ``path``'s header, read once per file content (module
    docstring): ``{"layout", "sha256", "bytes", "tensors": {GGUF name: {"type": "Q4_K", "shape": [...]}},
    "metadata": {key: value}, "configs": {key: transformers config dict}}``. A first read checks the file
    (:func:`_reader`: a broken file is one line naming it, and nothing is cached)."""
    path = Path(path)
    sha = file_sha256(path)
    rec = _cached_header(path, sha)
    if rec is not None:
        return rec
    reader = _reader(path)
    rec = {"layout": HEADER_LAYOUT, "sha256": sha, "bytes": path.stat().st_size,
           "tensors": {t.name: {"type": t.tensor_type.name, "shape": [int(n) for n in t.shape]}
                       for t in reader.tensors},
           "metadata": _metadata(reader), "configs": {}}
    _store_header(rec)
    return rec


def quantization(path: Path) -> dict[str, str]:
    """``GGUF tensor name -> stored type`` (``Q4_1``, ``Q4_K``, ``Q6_K``, ``F32`` ...) of every tensor in
    ``path``, from the file's header (:func:`header`: read once per file content, the tensor data never)."""
    return {name: t["type"] for name, t in header(path)["tensors"].items()}


def summary(types: dict[str, str]) -> dict[str, int]:
    """How many tensors of each stored type (``{"Q4_1": 211, "F32": 61}``), most first."""
    return dict(Counter(types.values()).most_common())


def hf_config(p: ModelParams, path: Path):
    """The transformers config that ``path``'s metadata gives (no tensor is read), with ``config:`` applied.
    The header is checked first (:func:`header`), so that a broken file says so rather than what
    transformers makes of it (a lying key count reads as 'not a valid JSON file' there). Read by
    transformers once per file content, transformers version and ``config:`` (kept in the header record)."""
    rec = header(path)
    key = weights_hash([transformers.__version__, p.config])
    known = rec["configs"].get(key)
    if isinstance(known, dict) and isinstance(known.get("model_type"), str):
        try:
            with quiet_transformers():
                return AutoConfig.for_model(**known)
        except (KeyError, ValueError, TypeError):  # an entry this transformers cannot build: read afresh
            pass
    cfg = _read_hf_config(p, path)
    rec["configs"][key] = cfg.to_dict()
    _store_header(rec)
    return cfg


def _read_hf_config(p: ModelParams, path: Path):
    """:func:`hf_config` read by transformers from the file itself."""
    try:
        with quiet_transformers():
            cfg = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name, **p.config)
    except Exception as exc:  # noqa: BLE001 - an architecture transformers cannot read from GGUF: one line
        raise ModelFileError(f"model '{p.name}': transformers cannot read {path} as a model "
                             f"({type(exc).__name__}: {short_error(exc)})") from None
    return cfg


def config_dict(p: ModelParams) -> Optional[dict]:
    """The model's config as a ``config.json`` dict, for sizing and checks without loading weights
    (``None`` when the file is not at hand: a package not fetched yet). A ``local_dir`` file that is missing,
    a folder, a pipe or unreadable is its own line (:class:`.common.ModelFileError`), never "no config at hand"."""
    try:
        d = folder(p, fetch=False)
    except ModelLoadError:
        if p.package is not None:
            return None
        raise
    return hf_config(p, source_file(p, d, "gguf_file", "GGUF")).to_dict()


def _check_family(p: ModelParams, path: Path, cfg) -> None:
    why = family_problem(p.family, getattr(cfg, "model_type", None), str(path))
    if why:
        raise ModelLoadError(f"model '{p.name}': {model_file_label(p.name)}: {why}")


def dequantized_dir(p: ModelParams, path: Path) -> Path:
    """The ``save_pretrained`` folder of ``path`` dequantized to float32, with its tokenizer and
    :data:`SOURCE_INFO`; written once (atomically) into ``<cache>/gguf/``, read on every later load."""
    sha = file_sha256(path)
    key = weights_hash([sha, transformers.__version__, p.config, LAYOUT])
    target = cache_root() / "gguf" / f"{path.stem}-{key}"
    if intact_derived(target, sha, SOURCE_INFO, "gguf"):
        return target
    # what the model is made of is read from the file itself, never from its cached header record (which the plan
    # and the preflight read): the stored types (a broken file is one line before transformers reads it) and the config
    types = {t.name: t.tensor_type.name for t in _reader(path).tensors}
    cfg = _read_hf_config(p, path)
    _check_family(p, path, cfg)

    def write(out: Path) -> None:
        # dequantize=True: every tensor unpacked to float32 (transformers may otherwise keep the blocks packed
        # for its GGUF matmul kernels, and a packed model cannot be saved); its tqdm bar goes nowhere (one line here)
        kw = {"config": cfg} if p.config else {}
        print(f"[gguf] dequantizing {path.name} once into {target} (SmolLM2-135M: about a minute on 2 cores; "
              "Qwen2.5-Coder-1.5B: 13-16 min)", file=sys.stderr)
        try:
            with quiet_transformers(), contextlib.redirect_stderr(io.StringIO()):
                model = model_class(p.family).from_pretrained(
                    str(path.parent), gguf_file=path.name, dtype="float32",
                    quantization_config=GgufConfig(gguf_file=path.name, dequantize=True), **kw)
                tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, **p.tokenizer_kwargs)
        except Exception as exc:  # noqa: BLE001 - one line: what failed
            raise ModelLoadError(f"model '{p.name}': cannot dequantize {path} with transformers "
                                 f"({type(exc).__name__}: {short_error(exc)})") from None
        with quiet_transformers(), contextlib.redirect_stderr(io.StringIO()):
            model.save_pretrained(out)
            tok.save_pretrained(out)
        info = {"gguf_file": path.name, "sha256": sha, "bytes": path.stat().st_size,
                "transformers": transformers.__version__, "quantization": types,
                "files": folder_record(out)}  # what the copy holds, checked on every use (.common.derived_problem)
        (out / SOURCE_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")  # last: marks it complete

    return _atomic_dir(target, write)


def source_info(directory: Path) -> dict:
    """What :func:`dequantized_dir` recorded about the GGUF file a folder was made from."""
    return json.loads((Path(directory) / SOURCE_INFO).read_text(encoding="utf-8"))


_BLOCK = re.compile(r"^blk\.(\d+)\.")


def tensor_problems(path: Path, cfg) -> list[str]:
    """Where ``path``'s tensor infos (its header, :func:`header`) disagree with the config the model would be built
    from (the file's metadata with the params file's ``config:`` applied): the number of ``blk.N`` layers, the
    embedding width of ``token_embd`` and each ``attn_q`` / ``attn_k`` input width (ggml lists dims innermost
    first: ``token_embd`` is (n_embd, n_vocab)). Read before any kernel starts (a ``config:`` that
    drops layers or a lying width failed inside the kernel naming no tensor). Empty when they agree."""
    tensors = header(path)["tensors"]
    c = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    out = []
    layers = sorted({int(m.group(1)) for m in map(_BLOCK.match, tensors) if m})
    n_layers = getattr(c, "num_hidden_layers", None)
    if layers and isinstance(n_layers, int) and n_layers != len(layers):
        out.append(f"the config has num_hidden_layers {n_layers}, the file stores {len(layers)} layers "
                   f"(blk.0 ... blk.{layers[-1]}): remove num_hidden_layers from config: (a model of fewer layers "
                   f"would leave stored tensors unread)")
    d = getattr(c, "hidden_size", None)
    if isinstance(d, int):
        for name in ["token_embd.weight"] + [n for n in tensors if n.startswith("blk.0.attn_") and
                                              n.endswith(("_q.weight", "_k.weight"))]:
            shape = (tensors.get(name) or {}).get("shape") or []
            if shape and int(shape[0]) != d:
                out.append(f"tensor {name} is {list(shape)} (ggml order, innermost first): width {shape[0]}, the "
                           f"config says hidden_size {d}")
    return out


def block_problems(path: Path) -> list[str]:
    """Where ``path``'s blocks disagree with one another, from its header (:func:`header`) alone: every block
    ``blk.N`` holds the tensors of ``blk.0`` with the same shapes, and the blocks are numbered 0 ... n-1 (the
    transformers classes GGUF files are read into build every layer alike). :func:`tensor_problems` checks block 0
    against the config; this carries that to every block (a lying ``blk.1`` passed ``--plan`` and failed inside the
    kernel). Empty when they agree."""
    blocks: dict[int, dict[str, list]] = {}
    for name, t in header(path)["tensors"].items():
        m = _BLOCK.match(name)
        if m:
            blocks.setdefault(int(m.group(1)), {})[name[m.end():]] = list(t.get("shape") or [])
    if not blocks:
        return []
    out = [f"block blk.{i} is missing (the file has blocks up to blk.{max(blocks)})"
           for i in range(max(blocks)) if i not in blocks]
    first = blocks.get(0, {})
    for i in sorted(blocks):
        for part in sorted(set(first) | set(blocks[i])):
            want, got = first.get(part), blocks[i].get(part)
            if got is None:
                out.append(f"tensor blk.{i}.{part} is missing (blk.0 has it)")
            elif want is None:
                out.append(f"tensor blk.{i}.{part} has no counterpart in blk.0")
            elif got != want:
                out.append(f"tensor blk.{i}.{part} is {got} (ggml order, innermost first), blk.0.{part} is {want}: "
                           "every block of the model has the same shapes")
    return out


def check_tensors(p: ModelParams, path: Path) -> None:
    """One line (:class:`ModelLoadError`) naming the first disagreement, with their count: between the file's own
    blocks (:func:`block_problems`: the file is damaged or edited), else between its tensors and the config
    (:func:`tensor_problems`)."""
    why = block_problems(path)
    if why:
        more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
        raise ModelLoadError(f"model '{p.name}': GGUF file {path}: {why[0]}{more}; the file is damaged or was edited: "
                             f"download or convert it again (gguf_file: in {model_file_label(p.name)})")
    why = tensor_problems(path, hf_config(p, path))
    if why:
        more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
        raise ModelLoadError(f"model '{p.name}': GGUF file {path.name}: {why[0]}{more}; fix config: in "
                             f"{model_file_label(p.name)}")
