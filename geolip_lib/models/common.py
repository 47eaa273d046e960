"""What every model source and :class:`~geolip_lib.models.loaded.LoadedModel` share: the load
error, dtypes, transformers' quiet mode, untying an output embedding, the weight-file check
and the writer of a model's safetensors.

Nothing here imports another ``geolip_lib.models`` module (the bottom of the package).
"""
from __future__ import annotations

import contextlib
import ctypes
import mmap
import hashlib
import json
import shutil
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file, save_model
from transformers.core_model_loading import revert_weight_conversion
from transformers.utils import logging as tlog

from ..families import spec
from ..params import model_file_label
from ..paths import cache_root
from ..provenance import file_sha256, folder_problem, folder_record, recorded_problem
from ..roots import RootReadError
from ..validation import FINITE_CHUNK, all_finite as _all_finite  # noqa: F401 - FINITE_CHUNK: check_finite's step

try:
    _libc = ctypes.CDLL(None, use_errno=True)  # madvise (Linux, macOS)
except OSError:
    _libc = None

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class ModelLoadError(RuntimeError):
    """A model cannot be obtained (not cached and unreachable, missing directory or package)."""


class ModelFileError(ModelLoadError, RootReadError):
    """A file a params file names (``gguf_file:``, ``onnx_file:``, ``ct2_file:``) that is not there or cannot be
    read: a typo, a folder, a pipe, a truncated or lying file. One line naming it; a :class:`RootReadError` too, so
    that the runner's model checks refuse it before any kernel, in a run and in ``--plan`` (a typo'd
    ``gguf_file`` said "no config at hand ... set local_dir:" while local_dir was set; a truncated GGUF was a
    traceback from ``--plan``)."""


def source_file(p, folder: Path, field: str, fmt: str) -> Path:
    """``folder / <p's field>``: a regular file (a link to one is followed: a Hugging Face cache snapshot links
    its blobs; each reader then applies its own rule on links), else one :class:`ModelFileError` line saying
    what it is: missing, a folder, a pipe or a device (never opened: a pipe would block the reader)."""
    f = Path(folder) / getattr(p, field)
    fix = f"(fix {field}: in {model_file_label(p.name)})"
    try:
        st = f.stat()
    except OSError:
        raise ModelFileError(f"model '{p.name}': {fmt} file {f} does not exist {fix}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ModelFileError(f"model '{p.name}': {fmt} file {f} is a folder, not a file {fix}")
    if not stat.S_ISREG(st.st_mode):
        raise ModelFileError(f"model '{p.name}': {fmt} file {f} is not a regular file (a pipe or a device); not "
                             f"read {fix}")
    return f


def model_class(family: str):
    """The transformers auto class used to build / load a Hugging Face model of ``family``."""
    return spec(family).model_class()


def weights_hash(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]


def source_key(key: str, files) -> str:
    """A derived copy's cache key (``key``: what the copy is: params, layout, rounding) joined with
    the sha256 of the ``files`` it is derived from (``provenance.file_sha256``, cached by path,
    size, mtime, ctime and inode): a checkpoint re-saved in place (fine-tuned, retrained) gets a new copy, never
    the old one under the new file's provenance. ``key`` itself when there are no files."""
    found = sorted((Path(f).name, file_sha256(f)) for f in files if Path(f).is_file())
    return weights_hash([key, found]) if found else key


def short_error(exc: BaseException, n: int = 160) -> str:
    msg = (str(exc).splitlines() or [""])[0]
    return msg if len(msg) <= n else msg[: n - 3] + "..."


def has_safetensors(d: Optional[Path]) -> bool:
    return d is not None and d.is_dir() and any(d.glob("*.safetensors"))


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' progress bars and warnings (e.g. T5 v1.1's expected untied-head note) for a block."""
    bar, verbosity = tlog.is_progress_bar_enabled(), tlog.get_verbosity()
    tlog.disable_progress_bar()
    tlog.set_verbosity_error()
    try:
        yield
    finally:
        if bar:
            tlog.enable_progress_bar()
        tlog.set_verbosity(verbosity)


def untie_output(model: torch.nn.Module, weight: Optional[torch.Tensor] = None) -> None:
    """Give a HF model an independent output embedding (random normal, std = the input table's std).

    transformers >= 5 builds T5 always tied (``T5Config`` forces ``tie_word_embeddings=True``;
    real T5 v1.1 checkpoints are untied only because both tensors are present on load), so
    an untied tiny T5 v1.1 / random baseline has to be untied by hand. ``weight``: the new
    output table instead (a meta skeleton's, see :mod:`geolip_lib.models.twin`).
    """
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if out is None:
        return
    if out.weight.is_meta:  # meta tensors share data_ptr 0: tied means the same Parameter
        if out.weight is not inp.weight:
            return
    elif out.weight.data_ptr() != inp.weight.data_ptr():
        return
    if weight is None:
        weight = torch.randn_like(inp.weight) * float(inp.weight.detach().float().std())
    out.weight = torch.nn.Parameter(weight)
    tied = getattr(model, "all_tied_weights_keys", None)
    if isinstance(tied, dict):
        for k in [k for k in tied if k.endswith("lm_head.weight") or k == "lm_head.weight"]:
            tied.pop(k)


#: file name of an open_clip model's weights in its directory (next to ``open_clip_config.json``)
OPEN_CLIP_WEIGHTS = "open_clip_model.safetensors"
OPEN_CLIP_CONFIG = "open_clip_config.json"


def checkpoint_state(model, family: str) -> dict:
    """A HF model's tensors named as its checkpoint files name them, in the layout the family's adapter reads.

    ``revert_weight_conversion`` (what ``save_pretrained`` applies) gives the file names
    (transformers >= 5 fuses a mixture's experts into 3-D tensors in memory and writes them one
    expert at a time); the family's ``canonical_tensor`` (GPT-2's transposed ``Conv1D``, fused QKV
    interleaved per head) rewrites the layout. The random-init twin and the canonical weight copy
    are both made by this function, so they match what the adapter expects.
    """
    sd = revert_weight_conversion(model, model.state_dict())
    tied = getattr(model, "all_tied_weights_keys", None) or {}
    for target, source in tied.items():  # a tied copy (lm_head = wte) is stored once, under its source's name
        if target in sd and source in sd:
            del sd[target]
        elif target in sd:
            sd[source] = sd.pop(target)
    for k in getattr(model, "_keys_to_ignore_on_save", None) or []:  # e.g. Marian's sinusoidal positions
        sd.pop(k, None)
    canon = spec(family).canonical_tensor
    if canon is not None:
        cfg = model.config.to_dict()
        sd = {k: canon(k, v, cfg) for k, v in sd.items()}
    return sd


#: the record a weights copy written by :func:`saver` carries (each file's size, sha256 and state), written last
COPY_RECORD = "geolip_copy.json"


def copies_root() -> Path:
    """``<cache>/safetensors``: the weight battery's copies of a model's weights (the rounded weights of
    ``quantize:``, the canonical layout, a ``.bin`` checkpoint's), each written by :func:`saver`."""
    return cache_root() / "safetensors"


def copy_problem(directory: Path) -> str:
    """Why a copy written by :func:`saver` no longer holds what it wrote (its :data:`COPY_RECORD` missing or
    unreadable, a file replaced, added or removed: :func:`geolip_lib.provenance.folder_problem`), or ``""``."""
    return recorded_problem(Path(directory), COPY_RECORD)


def saver(model, family: str) -> Callable[[Path], None]:
    """A function writing ``model``'s weights to a directory (HF: ``save_pretrained``, or the canonical layout
    of :func:`checkpoint_state` with ``config.json`` when the family has one; open_clip: one safetensors), and
    last its :data:`COPY_RECORD` (what :func:`safetensors_problems` checks before the copy is read again)."""
    def save(out: Path) -> None:
        _save(out)
        (out / COPY_RECORD).write_text(json.dumps({"files": folder_record(out, skip=[COPY_RECORD])}, indent=1),
                                       encoding="utf-8")

    def _save(out: Path) -> None:
        if not spec(family).hf:
            save_model(model, str(out / OPEN_CLIP_WEIGHTS))
        elif spec(family).canonical_tensor is not None:
            seen, sd = set(), {}
            for k, v in checkpoint_state(model, family).items():
                if v.data_ptr() in seen:  # a tied copy (lm_head = wte): absent, as save_pretrained writes it
                    continue
                seen.add(v.data_ptr())
                sd[k] = v.detach().to("cpu").contiguous()
            save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt", "geolip_layout": "canonical"})
            model.config.to_json_file(str(out / "config.json"))
        else:
            with quiet_transformers():
                model.save_pretrained(out)
    return save


def safetensors_problems(directory: Path) -> list[tuple[Path, str]]:
    """``(file, reason)`` for every unreadable ``*.safetensors`` file in ``directory``; for a copy of
    :func:`copies_root`, first whether it still holds what :func:`saver` wrote (:func:`copy_problem`: a copy
    replaced by valid weights of other values was read as the model's)."""
    if Path(directory).parent == copies_root():
        why = copy_problem(Path(directory))
        if why:
            return [(Path(directory) / COPY_RECORD, why)]
    bad = []
    for f in sorted(Path(directory).glob("*.safetensors")):
        try:
            if f.stat().st_size == 0:
                raise SafetensorError("the file is empty")
            with safe_open(str(f), framework="pt") as fh:
                fh.keys()
        except (SafetensorError, OSError) as exc:
            bad.append((f, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    return bad


def derived_problem(directory: Path, sha: str, info: str) -> str:
    """Why a derived folder (a dequantized GGUF, a converted ONNX / CTranslate2 file) cannot be used as it is, or
    ``""``: its record ``info`` unreadable or naming another source file, a file of it replaced, added or removed
    since it was made (the record's ``files``: :func:`geolip_lib.provenance.folder_problem`; weights replaced by
    valid ones of other values were loaded under the source's sha256), no ``config.json``, a weight file missing
    or unreadable (truncated, emptied). A damaged ``.cache/gguf/<dir>`` was once never rebuilt."""
    try:
        rec = json.loads((directory / info).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{info}: {short_error(exc) or type(exc).__name__}"
    if not isinstance(rec, dict) or rec.get("sha256") != sha:
        return f"{info} does not name this source file's sha256"
    if not (directory / "config.json").is_file():
        return "no config.json"
    bad = safetensors_problems(directory)
    if bad:
        return f"{bad[0][0].name}: {bad[0][1]}"
    if not any(directory.glob("*.safetensors")):
        return "no weight file"
    return folder_problem(directory, rec.get("files"), skip=[info])


def intact_derived(directory: Path, sha: str, info: str, label: str) -> bool:
    """True when the derived folder ``directory`` can be used as it is (:func:`derived_problem`); otherwise it is
    removed and False is returned, so that the caller builds it again: a damaged copy is said in one line
    (``[label] rebuilding the damaged copy ...``), a folder without its record (someone else's, or a killed run's
    that got past the rename) is removed silently. One home for the GGUF and the ONNX / CTranslate2 copies."""
    if (directory / info).is_file():
        why = derived_problem(directory, sha, info)
        if not why:
            return True
        print(f"[{label}] rebuilding the damaged copy {directory} ({why})", file=sys.stderr, flush=True)
        shutil.rmtree(directory, ignore_errors=True)
    elif directory.exists():
        shutil.rmtree(directory, ignore_errors=True)
    return False


def check_finite(model: torch.nn.Module, name: str) -> None:
    """One-line ModelLoadError naming the first parameter with NaN / Inf values and their counts
    (one pass over the parameters, on their own device), instead of a solver failing later
    without saying why ("linalg.eigh failed to converge").

    A tensor is checked :data:`FINITE_CHUNK` elements at a time (``isfinite`` of a whole
    151,936 x 1,536 table made 1.6 GB of temporaries), and the pages the check read from a
    memory-mapped checkpoint leave the resident set again (:func:`release_file_pages`): the check
    alone no longer holds the whole model resident (Qwen2.5-Coder-1.5B: 7.1 GB), only what a job
    then reads is."""
    bad = []
    with torch.no_grad():
        for pname, t in model.named_parameters():  # not buffers: attention masks hold -inf by design
            if t.is_floating_point() and not _all_finite(t):
                bad.append((pname, int(torch.isnan(t).sum()), int(torch.isinf(t).sum()), t.numel()))
            release_file_pages([t])
    if bad:
        pname, nan, inf, n = bad[0]
        more = f"; {len(bad) - 1} more tensor(s) are non-finite too" if len(bad) > 1 else ""
        raise ModelLoadError(f"model '{name}': tensor {pname} has {nan} NaN and {inf} Inf values (of {n}){more}; "
                             "the checkpoint is corrupt: re-download or re-save it")


_PAGE = mmap.PAGESIZE
_PRESENT, _SWAPPED, _FILE = 1 << 63, 1 << 62, 1 << 61  # /proc/<pid>/pagemap bits
_MADV_DONTNEED = 4


def _file_maps() -> list:
    """``(start, end)`` of this process's mappings of files (``/proc/self/maps``); [] off Linux."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            lo, hi = parts[0].split("-")
            out.append((int(lo, 16), int(hi, 16)))
    return out


def release_file_pages(tensors, maps: Optional[list] = None) -> int:
    """Drop from this process's resident set the pages of CPU ``tensors`` that are unmodified
    pages of a mapped file (a checkpoint read through safetensors' mmap): the values stay, the
    next read maps them again from the page cache. A tensor any of whose pages was written since
    (a private copy) or swapped is left as it is, as is everything off Linux. Returns the bytes
    released (whole pages inside each tensor's storage)."""
    maps = _file_maps() if maps is None else maps
    if not maps or _libc is None:
        return 0
    done, freed = set(), 0
    for t in tensors:
        if t.device.type != "cpu" or t.is_meta:
            continue
        st = t.untyped_storage()
        lo, n = st.data_ptr(), st.nbytes()
        if lo in done or n < _PAGE or not any(a <= lo and lo + n <= b for a, b in maps):
            continue
        done.add(lo)
        a, b = -(-lo // _PAGE) * _PAGE, (lo + n) // _PAGE * _PAGE
        if b <= a:
            continue
        try:
            with open("/proc/self/pagemap", "rb") as fh:
                fh.seek(a // _PAGE * 8)
                raw = fh.read((b - a) // _PAGE * 8)
        except OSError:
            return freed
        flags = np.frombuffer(raw, dtype=np.uint64)
        if ((flags & np.uint64(_PRESENT | _SWAPPED)).astype(bool) & ~(flags & np.uint64(_FILE)).astype(bool)).any():
            continue  # a page written (or swapped) since it was mapped: dropping it would lose the change
        if _libc.madvise(ctypes.c_void_p(a), ctypes.c_size_t(b - a), _MADV_DONTNEED) == 0:
            freed += b - a
    return freed
