"""Sizing a model without loading it, for the run plan (:mod:`.plan`, whose docstring says
where each number comes from): parameter count, largest tensor, width, layers, vocabulary
rows, download size, the stored dtype and format of its files and whether they are on disk —
from the config on the meta device when one is at hand, else from ``stored_checkpoints.yaml``
(the real checkpoint files of the paper models, as data with their source), else from the
params file's ``size_note``.

A tiny model's size is a function of its params, its tokenizer's files, the library's code and the
installed packages: it is remembered by those (:mod:`.remembered`), so that ``--plan`` of a profile of
tiny models builds no model on the meta device (nor imports torch) once it has been planned before."""
from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml
from huggingface_hub import constants as hf_constants
from huggingface_hub import try_to_load_from_cache

from .. import models  # preflight (torch, transformers): imported when a model is sized
from ..families import spec as family_spec
from ..params import load_model_params
from ..paths import resolve
from .model_checks import model_reads, self_contained, where_found
from .remembered import path_state, remembered, remembered_reading

GB = 1e9
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
TWIN_TENSORS = 2  # tensors of a generated twin held at once (the one read + the one being drawn)
LAYERED_TENSORS = 3  # a twin run one block at a time (models/layered.py): embedding, untied head, one block
LARGEST_SHARE, LARGEST_CAP = 0.3, 248_320 * 4096  # size_note bounds (plan's module docstring)
STORED_FILE = Path(__file__).with_name("stored_checkpoints.yaml")


class PlanError(RuntimeError):
    """A run that cannot fit (one line naming the job and the shortfall), or a model the plan cannot size."""


@dataclass(frozen=True)
class ModelInfo:
    """What the plan knows about one model (see the module docstring for the sources)."""

    name: str
    params: int
    largest: int  # elements of the largest tensor
    width: int
    dtype: str  # load dtype (params file)
    download: int  # bytes of the model's files (hub snapshot / open_clip checkpoint); 0: nothing to fetch
    present: bool  # those files are already on disk
    files_dir: Optional[Path]  # where they are / will be
    has_safetensors: bool  # lm.weights_dir needs no copy
    open_clip_checkpoint: bool  # loaded through a CPU state dict (transient 2 M)
    source: str  # "config on meta device" | "stored_checkpoints.yaml" | "params file size_note"
    download_source: str  # "measured" | "config x dtype" | "stored files" | "size_note" | "none"
    layers: int = 0  # transformer blocks (encoder + decoder; vision + text)
    vocab: int = 0  # rows of the token-embedding table (0: a vision model)
    stored_dtype: str = "float32"  # dtype of the files a load reads
    pickle: bool = False  # those files are a torch pickle (.bin): read whole into host memory to load
    checkpoints: int = 0  # checkpoints of a trajectory (revisions: / checkpoints:), each loaded in turn
    image_tokens: int = 0  # tokens of one probe image through its vision stack (patches + class token; 0: no vision)

    @property
    def bytes(self) -> int:
        return self.params * DTYPE_BYTES[self.dtype]

    @property
    def largest_bytes(self) -> int:
        return self.largest * DTYPE_BYTES[self.dtype]

    def twin_weights_bytes(self) -> int:
        """Memory of the twin's weights: the whole twin up to ``models.twin.TWIN_MAX_PARAMS``, else a few
        generated tensors."""
        return self.bytes if self.params <= twin_max_params() else TWIN_TENSORS * self.largest_bytes

    def twin_run_bytes(self, tables_only: bool = False) -> int:
        """Memory of a twin that runs (forward passes): the whole twin up to ``TWIN_MAX_PARAMS``; above,
        ``geolip_lib.models.layered`` keeps what is outside the blocks (embedding, an untied head: <= 2
        largest tensors) and one block (< 1 largest tensor), or nothing beyond the tables that the rule's
        ``host_l`` counts (``tables_only``: 01, whose null above the threshold is the tables alone)."""
        if self.params <= twin_max_params():
            return self.bytes
        return 0 if tables_only else LAYERED_TENSORS * self.largest_bytes


def twin_max_params() -> int:
    """The size above which a random-init twin is generated tensor by tensor (``models.twin.TWIN_MAX_PARAMS``;
    a constant of the library's code, remembered with it: ``models.twin`` imports torch)."""
    return remembered("twin-max-params", [], lambda: models.twin.TWIN_MAX_PARAMS,
                      check=lambda v: type(v) is int)


def mapped_load(mi: ModelInfo) -> bool:
    """``mi`` is read on the CPU from safetensors in its load dtype above :func:`twin_max_params` (one file set, no
    trajectory): memory-mapped, its pages resident only as a job reads them (``memory_rules.MAPPED_PEAK``)."""
    return (mi.params > twin_max_params() and mi.has_safetensors and not mi.pickle and not mi.open_clip_checkpoint
            and mi.stored_dtype == mi.dtype and not mi.checkpoints)


_NUM = {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}


def parse_size_note(note: str) -> tuple[Optional[int], Optional[int]]:
    """``"11B parameters, 22 GB in float16"`` -> ``(11e9, 22e9)``; either is None when absent.

    Decimal units (1 GB = 1e9 bytes), as model cards write them.
    """
    n = re.search(r"([\d.]+)\s*([KMBT]?)\s*param", note, re.I)
    s = re.search(r"([\d.]+)\s*([KMGT])B\b", note)
    params = int(float(n.group(1)) * _NUM[n.group(2).upper()]) if n else None
    size = int(float(s.group(1)) * _NUM[s.group(2).upper()]) if s else None
    return params, size


def _weight_files(d: Path) -> list[Path]:
    files = sorted(d.glob("*.safetensors"))
    return files or sorted(d.glob("pytorch_model*.bin")) + sorted(d.glob("open_clip_*model*.bin"))


def hf_cache_dir() -> Path:
    return Path(os.environ.get("HF_HUB_CACHE") or hf_constants.HF_HUB_CACHE)


def _open_clip_checkpoint(p) -> tuple[Optional[Path], bool]:
    """(checkpoint file when present, True when it is a hub download) of an open_clip ``pretrained``."""
    if not p.pretrained:
        return None, False
    if "/" in p.pretrained or p.pretrained.endswith((".bin", ".pt", ".safetensors")):
        f = resolve(p.pretrained)
        return (f if f.is_file() else None), False
    import open_clip  # heavy optional dependency: only for open_clip pretrained tags

    repo = (open_clip.get_pretrained_cfg(p.id, p.pretrained) or {}).get("hf_hub", "").strip("/")
    for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
        hit = try_to_load_from_cache(repo, fname, cache_dir=str(hf_cache_dir())) if repo else None
        if isinstance(hit, str):
            return Path(hit), True
    return None, True


@functools.lru_cache(maxsize=1)
def stored_checkpoints(path: Path = STORED_FILE) -> dict:
    """``stored_checkpoints.yaml``: id (open_clip: ``id:pretrained``) -> its stored files and shapes."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}


def _stored_key(p) -> str:
    return f"{p.id}:{p.pretrained}" if p.pretrained else str(p.id)


def _layers_vocab(cfg: dict) -> tuple[int, int]:
    """(blocks, vocabulary rows) of a config.json dict or an open_clip model_cfg."""
    if "vision_cfg" in cfg or "text_cfg" in cfg:  # open_clip
        v, t = cfg.get("vision_cfg") or {}, cfg.get("text_cfg") or {}
        return int(v.get("layers") or 0) + int(t.get("layers") or 0), int(t.get("vocab_size") or 0)
    text = cfg.get("text_config") or {}
    enc = (cfg.get("num_hidden_layers") or cfg.get("num_layers") or cfg.get("n_layer") or cfg.get("n_layers")
           or cfg.get("encoder_layers") or text.get("num_hidden_layers") or 0)
    layers = int(enc) + int(cfg.get("num_decoder_layers") or cfg.get("decoder_layers") or 0)
    vocab = cfg.get("vocab_size") or text.get("vocab_size") or 0
    return int(layers or 0), int(vocab or 0)


def _image_tokens(cfg: dict) -> int:
    """Patches + 1 of one image through the vision stack (open_clip vision_cfg, HF vision_config or a ViT config)."""
    v = cfg.get("vision_cfg") or cfg.get("vision_config") or (cfg if "patch_size" in cfg else {})
    size, patch = v.get("image_size"), v.get("patch_size")
    if not size or not patch:
        return 0
    size = size[0] if isinstance(size, (list, tuple)) else size
    return (int(size) // int(patch)) ** 2 + 1


def _layers_vocab_or_zero(cfg: dict) -> tuple[int, int, int]:
    try:  # a hand-written config: what is not a count is 0 (the cost model then leaves it out)
        return (*_layers_vocab(cfg), _image_tokens(cfg))
    except (TypeError, ValueError, AttributeError, ZeroDivisionError):
        return 0, 0, 0


@functools.lru_cache(maxsize=None)
def model_info(name: str) -> ModelInfo:
    """Size a model without loading its weights (see the module docstring for the sources)."""
    p = load_model_params(name)
    if self_contained(p):  # a tiny model: remembered by its params and its tokenizer's files
        d = remembered("model-info", [p.model_dump(), _tokenizer_files(p)], lambda: _plain(_model_info(p)),
                       check=_info_ok)
    elif p.source != "hub" and family_spec(p.family).hf:  # files of its own: remembered while they are as they were
        d = remembered_reading("model-info", [p.model_dump(), where_found()], lambda: _plain(_model_info(p)),
                               lambda: model_reads(p), check=_info_ok)
    else:
        return _model_info(p)
    return ModelInfo(**{**d, "files_dir": None if d["files_dir"] is None else Path(d["files_dir"])})


def _plain(info: ModelInfo) -> dict:
    """A :class:`ModelInfo` as plain data (its folder as a string)."""
    d = dataclasses.asdict(info)
    return {**d, "files_dir": None if d["files_dir"] is None else str(d["files_dir"])}


def _tokenizer_files(p) -> list:
    """``[folder, its state]`` (:func:`.remembered.path_state`) of the tokenizer whose length is a tiny model's
    vocabulary (:func:`..models.preflight.model_config`); [] when its vocabulary is its config's. Built
    here when missing, as sizing the model would."""
    fs = family_spec(p.family)
    kind = p.tokenizer or fs.tiny_tokenizer
    if not (kind and fs.vocab_from_tokenizer):
        return []
    d = models.tokenizers.tokenizer_dir(kind)
    return [str(d), path_state(str(d))]


def _info_ok(value) -> bool:
    """A record read back is the fields of a :class:`ModelInfo` with their types."""
    if not isinstance(value, dict) or set(value) != {f.name for f in dataclasses.fields(ModelInfo)}:
        return False
    return all(isinstance(value[f.name], int) and not isinstance(value[f.name], bool) if f.type == "int"
               else isinstance(value[f.name], bool) if f.type == "bool"
               else isinstance(value[f.name], str) if f.type == "str"
               else value[f.name] is None or isinstance(value[f.name], str) for f in dataclasses.fields(ModelInfo))


def _model_info(p) -> ModelInfo:
    found = models.preflight.model_config(p)
    files_dir = found[2] if found else None
    if found is not None:
        cfg, kind, _ = found
        try:
            model = models.preflight.meta_model(p, cfg, kind)
        except Exception as exc:  # noqa: BLE001 - any config transformers cannot build is one line, not a traceback
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise PlanError(f"model '{p.name}': its config cannot be built without weights ({first}); fix its "
                            f"config (params/models/{p.name}.yaml or its config.json)") from None
        params = sum(t.numel() for t in model.parameters())  # a shared Parameter is listed once
        largest = max(t.numel() for t in model.parameters())
        width = int(cfg.get("hidden_size") or cfg.get("d_model") or cfg.get("embed_dim")
                    or (cfg.get("text_config") or {}).get("hidden_size") or math.isqrt(largest))
        stored = str(cfg.get("dtype") or cfg.get("torch_dtype") or "float32").replace("torch.", "")
        stored = stored if stored in DTYPE_BYTES else "float32"
        source = "config on meta device"
        download, dl_source = params * DTYPE_BYTES.get(stored, 4), "config x dtype"
        layers, vocab, image_tokens = _layers_vocab_or_zero(cfg)
        del model
        if files_dir is None and p.source in ("onnx", "ctranslate2"):  # not converted yet: read from its header
            source, download, dl_source = "file header", params * DTYPE_BYTES["float32"], "converted copy"
    elif _stored_key(p) in stored_checkpoints():
        d = stored_checkpoints()[_stored_key(p)]
        params, (rows, cols) = int(d["params"]), d["largest"]
        largest, width, layers, vocab = int(rows) * int(cols), int(d["width"]), int(d["layers"]), int(d["vocab"])
        image_tokens = int(d.get("image_tokens") or 0)
        stored, source = str(d["stored_dtype"]), "stored_checkpoints.yaml"
        download, dl_source = int(sum(float(v) for v in d["files"].values())), "stored files"
    else:
        n, size = parse_size_note(p.size_note)
        if n is None and size is None:
            raise PlanError(f"model '{p.name}': no config at hand ('{p.id}' is not in the Hugging Face cache and "
                            f"no local_dir) and no size_note; add size_note: \"<N>B parameters, <S> GB\" to "
                            f"params/models/{p.name}.yaml or set local_dir:")
        params = n if n is not None else size // DTYPE_BYTES[p.dtype]
        largest = int(min(LARGEST_SHARE * params, LARGEST_CAP))
        width = math.isqrt(params // 100)
        layers, vocab, image_tokens, stored = 0, 0, 0, p.dtype
        source = "params file size_note"
        download, dl_source = (size, "size_note") if size is not None else (params * DTYPE_BYTES[p.dtype],
                                                                          "size_note x dtype")
    fam = family_spec(p.family)
    # not a transformers model (open_clip): its own checkpoint format, read through a state dict
    present, is_oc = False, not fam.hf
    oc_checkpoint = is_oc and p.source in fam.sources and not p.local_dir
    if p.source == "tiny":
        download, dl_source, present = 0, "none", True  # built locally (its cache counts as a cache)
    elif oc_checkpoint:
        ckpt, from_hub = _open_clip_checkpoint(p)
        if ckpt is not None:
            download, dl_source, present, files_dir = ckpt.stat().st_size, "measured", True, ckpt.parent
        elif from_hub:
            entry = stored_checkpoints().get(_stored_key(p))
            if entry:  # the real checkpoint's files (stored_checkpoints.yaml)
                download, dl_source, stored = int(sum(float(v) for v in entry["files"].values())), "stored files", \
                    str(entry["stored_dtype"])
            elif dl_source == "config x dtype":
                download = params * 4  # open_clip checkpoints: float32
            files_dir = hf_cache_dir()
    elif files_dir is not None and _weight_files(files_dir):
        download = sum(f.stat().st_size for f in _weight_files(files_dir))  # follows the cache's symlinks
        dl_source, present = "measured", True
    elif p.source == "hub" and not p.local_dir:
        files_dir = hf_cache_dir()
        entry = stored_checkpoints().get(_stored_key(p))
        if entry and dl_source != "stored files":  # a config at hand but no weights: the real files' size
            download, dl_source = int(sum(float(v) for v in entry["files"].values())), "stored files"
            stored = str(entry["stored_dtype"])
    entry = stored_checkpoints().get(_stored_key(p)) if p.source != "tiny" else None
    if present and files_dir is not None:
        pickle = not any(files_dir.glob("*.safetensors")) and any(files_dir.glob("*.bin"))
    else:
        pickle = bool(entry and entry.get("format") == "pickle")
    has_st = (not is_oc and p.source != "tiny" and not pickle and (files_dir is None or not present
                                                                   or any(files_dir.glob("*.safetensors"))))
    if p.source == "tiny":
        has_st = p.dtype == "float32"  # tiny files are float32; another dtype is written lazily
    elif is_oc and not oc_checkpoint:
        has_st = p.dtype == "float32" and files_dir is not None and any(files_dir.glob("*.safetensors"))
    return ModelInfo(name=p.name, params=int(params), largest=int(largest), width=int(width), dtype=p.dtype,
                     download=int(download), present=present, files_dir=files_dir, has_safetensors=has_st,
                     open_clip_checkpoint=oc_checkpoint, source=source, download_source=dl_source,
                     layers=int(layers), vocab=int(vocab), stored_dtype=stored, pickle=pickle,
                     checkpoints=len(p.revisions or p.checkpoints or ()), image_tokens=int(image_tokens))


__all__ = ["DTYPE_BYTES", "GB", "ModelInfo", "PlanError", "STORED_FILE", "hf_cache_dir", "model_info",
           "parse_size_note", "stored_checkpoints", "twin_max_params"]
