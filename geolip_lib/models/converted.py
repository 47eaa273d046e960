"""Model files in formats transformers does not read, converted once: ``source: onnx`` and ``source: ctranslate2``.

A researcher keeps a model as an ONNX export (``torch.onnx.export``, Optimum's part sets) or a CTranslate2 folder
(``ct2-transformers-converter``), of any family the format can hold. Each file is read by its own bounded reader
(:mod:`.onnx_import`, :mod:`.ct2`): its **header** first (:class:`.rebuild.Header`: tensors placed at the family's
state-dict keys, the config their shapes give; no tensor data), which is all the preflight and the planner read,
so a file is planned before anything is converted and needs no ``size_note:``. The first load converts it
**once** into an ordinary ``save_pretrained`` folder in ``<cache>/converted/<source>-<file stem>-<key>/`` with the
tokenizer's files copied beside; every later load reads that folder. The key is the sha256 of the file and of every
other file in its folder (external data, Optimum's other parts, config.json, the tokenizer: their content, not
their names or dates), transformers' version, the family, the params file's ``config:`` and prefix, and
:data:`LAYOUT`: another file, an edited one, or another conversion never hits a stale folder.

Each conversion is **checked by running both** before the folder is kept (the check's numbers are in the
folder's :data:`SOURCE_INFO` and in every job's provenance): the ONNX graph itself, run by
``onnx.reference.ReferenceEvaluator`` (numpy; no onnxruntime), or CTranslate2 itself (the ``ctranslate2``
package, pinned in the lock), against the rebuilt transformers model on the same inputs. A check that fails, and
any other failure of a conversion, refuses the model with one line naming the file and keeps nothing. Where the
file lives: ``package:`` (pinned wheels, :mod:`.packaged`) or ``local_dir:``, as for GGUF files.
"""
from __future__ import annotations

import json
import os
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
from ..provenance import file_sha256, folder_record
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
    """None (not ''): the ONNX reader then also recognises a DINOv2 backbone inside a TorchScript export."""
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


def _tokenizer_files(p: ModelParams, folder: Path) -> list[Path]:
    """The tokenizer's files found in ``folder``; a pipe, a device or a file over 64 MiB among them is one
    :class:`ModelFileError` line naming it (found before any kernel: the preflight reads the header through here)."""
    found = []
    for name in TOKENIZER_FILES:
        f = folder / name
        try:
            st = f.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > TOKENIZER_MAX_BYTES:
            raise ModelFileError(f"model '{p.name}': tokenizer file {f} is not a regular file of at most 64 MiB "
                                 f"(a pipe, a device or {st.st_size:,} B); not read")
        found.append(f)
    if not found and spec(p.family).is_text and p.family != "whisper":  # Whisper's is written from CTranslate2's
        raise ModelFileError(
            f"model '{p.name}': no tokenizer beside {folder} (a text model needs one: save it into that folder with "
            f"tokenizer.save_pretrained(folder), or convert with --copy_files and the tokenizer's files; "
            f"params/README.md 'Your model, in the format you keep')")
    return found


def copy_tokenizer(p: ModelParams, folder: Path, out: Path) -> list[str]:
    """Copy the tokenizer's files of ``folder`` into the converted folder ``out`` (those it does not have yet)."""
    copied = []
    for f in _tokenizer_files(p, folder):
        if not (out / f.name).exists():
            shutil.copyfile(f, out / f.name)
            copied.append(f.name)
    return copied


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
    _tokenizer_files(p, path.parent)
    try:
        header = conv.header(p, path)
    except Exception as exc:  # noqa: BLE001 - whatever a hostile header makes a reader raise: one line naming it
        raise ModelFileError(f"model '{p.name}': {conv.fmt} file {path} cannot be read ({short_error(exc, 300)})") \
            from None
    # a plain transformers config for the preflight and the planner: what the inference noted stays in the notes
    header.config = {k: v for k, v in header.config.items() if not str(k).startswith("_")}
    return header


def _beside(path: Path) -> list[list]:
    """What the files beside ``path`` in its folder are: what a conversion may read besides the file itself (an ONNX
    file's external data and Optimum's other parts, CTranslate2's config.json, a config.json, the tokenizer's
    files). A graph that keeps its weights in ``model.onnx.data`` is byte-equal for any weights of the same shapes:
    keyed by the file alone, a re-export would hit the old conversion. A regular file is keyed by its sha256; a
    link by where it points and that file's size and date, never by reading it (a link out of the folder is the
    readers' to judge: a cache hit must not skip their refusal, nor hash a file outside the folder)."""
    out = []
    for f in sorted(path.parent.iterdir()):
        if f == path:
            continue
        try:
            st = f.lstat()
            if stat.S_ISLNK(st.st_mode):
                t = f.stat()
                out.append([f.name, "link", os.readlink(f), t.st_size, t.st_mtime_ns])
            elif stat.S_ISREG(st.st_mode):
                out.append([f.name, file_sha256(f)])
        except OSError:  # a dangling link: nothing to read
            continue
    return out


def _target(p: ModelParams, path: Path) -> tuple[Path, str]:
    """Where ``path``'s conversion lives (keyed by its content and its folder's other files) and its sha256."""
    sha = file_sha256(path)
    beside = _beside(path)
    key = weights_hash([sha, beside, transformers.__version__, p.source, p.family, p.config, p.onnx_prefix, LAYOUT])
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
        except Exception as exc:  # noqa: BLE001 - any failure of a reader, a converter or a check on a user's file
            # (a TypeError of the graph's evaluator, a ZeroDivisionError of a head count 0 ...) is one line naming it
            raise ModelLoadError(f"model '{p.name}': cannot convert {conv.fmt} file {path} "
                                 f"({short_error(exc) or type(exc).__name__}); nothing was kept") from None
        record = {**record, "format": conv.fmt, "source": p.source, "file": path.name, "sha256": sha,
                  "bytes": path.stat().st_size, "transformers": transformers.__version__,
                  "files": folder_record(out)}  # what the copy holds, checked on every use (.common.derived_problem)
        (out / SOURCE_INFO).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")  # last: complete

    return _atomic_dir(target, write)


def source_info(directory: Path) -> dict:
    """What :func:`converted_dir` recorded about the file a folder was made from, and its check."""
    return json.loads((Path(directory) / SOURCE_INFO).read_text(encoding="utf-8"))
