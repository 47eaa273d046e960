"""Claims as data: a claims file (``params/claims/<name>.yaml``) loaded into :class:`Claim` s.

Seed 001's summary table lives in ``params/claims/seed-001.yaml``; another paper's table is
another file in the same format (params/README.md, "Claims"), evaluated by the same code.
Each claim has one or more :class:`Form` s: what the table says, and what the seed's cells
actually measured (models, representation, pooling, sizes) where the two differ.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional, Union

from ..params import ParamsError, _load_yaml, _rel, _validate, name_problem
from ..paths import PARAMS, ROOT
from . import pairs
from .recorded import recorded_quantities
from .rules import Rule
from .schema import READINGS, ClaimFile, FormSpec, PowerSpec

__all__ = ["Claim", "Form", "ClaimSet", "load", "claim_files", "check_name", "CLAIMS_DIR", "DEFAULT", "CLAIMS",
           "CLAIM_IDS", "claim"]

CLAIMS_DIR = PARAMS / "claims"
NOTEBOOKS = ROOT / "notebooks"
DEFAULT = "seed-001"


@dataclass(frozen=True)
class Form:
    """One reading of a claim (see :class:`~geolip_lib.claims.schema.FormSpec` for the fields)."""

    reading: str
    label: str
    by: str
    extrapolated: Mapping[str, str]
    models: tuple
    notebook: str
    record: Optional[str]
    path: Optional[tuple]
    scope: Optional[str]
    scopes: Optional[tuple]
    model_scopes: Mapping[str, tuple]
    definition: str
    standin_record: Optional[str]
    nulls: Optional[tuple]
    representation: str
    pooling: str
    sizes: str
    note: str
    rule: Rule
    model_rules: Mapping[str, Rule]
    scope_rules: Mapping[str, Rule]
    reference: Mapping[str, float]
    requires: Mapping[str, object]
    power: Optional[PowerSpec]
    #: what one verdict is about: "model", "pair" or "set" (:mod:`geolip_lib.claims.pairs`); for a pair or set,
    #: :attr:`models` are the units' names ("model A × model B") and :attr:`members` the models listed
    about: str = "model"
    members: tuple = ()
    #: "gives it too" or "against" (:class:`~geolip_lib.claims.schema.FormSpec`)
    null_beyond: str = "gives it too"

    @property
    def name(self) -> str:
        """The reading's display name, e.g. "as the seed measured (Q, K, fused QKV, mlp_up)"."""
        return READINGS[self.reading] + (f" ({self.label})" if self.label else "")

    def whose(self, model: str) -> str:
        """Whose reading this is for ``model``: "seed", "project" or "extrapolation" (the seed
        never measured that model so; :attr:`extrapolated` says why)."""
        return "extrapolation" if model in self.extrapolated else self.by

    @property
    def measured_as(self) -> str:
        """Models, representation, pooling and sizes in one line."""
        return "; ".join(p for p in (", ".join(self.models), self.representation, self.pooling, self.sizes) if p)

    def scopes_for(self, model: str) -> Optional[tuple]:
        """The scopes that test the claim on ``model`` (None: every recorded scope)."""
        return self.model_scopes.get(model, self.scopes)

    def rule_for(self, model: str, scope: str = "") -> Rule:
        """The rule for one model and scope: the scope's own, else the model's own, else the form's."""
        return self.scope_rules.get(scope) or self.model_rules.get(model) or self.rule

    def reference_for(self, model: str, scope: str = "") -> Optional[float]:
        """The seed's own value for this scope or model, where the file gives one."""
        return self.reference.get(scope, self.reference.get(model))


@dataclass(frozen=True)
class Claim:
    """One row of a paper's table, with its readings."""

    id: str
    title: str
    seed_value: str
    seed_models_text: str
    definition: str
    nulls: tuple
    null_sentence: str
    quantization: str
    scale: float
    unit: str
    forms: tuple

    @property
    def seed_models(self) -> tuple:
        """Every model any reading is about."""
        out: list = []
        for f in self.forms:
            out += [m for m in f.models if m not in out]
        return tuple(out)

    @property
    def rule(self) -> Rule:
        """The first reading's rule (what the table says)."""
        return self.forms[0].rule

    @property
    def notebook(self) -> str:
        return self.forms[0].notebook


@dataclass(frozen=True)
class ClaimSet:
    name: str
    title: str
    source: str
    file: str
    claims: tuple = field(default_factory=tuple)

    @property
    def ids(self) -> tuple:
        return tuple(c.id for c in self.claims)

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(f"unknown claim {claim_id!r} in {self.file} (known: {', '.join(self.ids)})")


def _form(spec: FormSpec, claim_id: str, scale: float, unit: str) -> Form:
    path = None if spec.path is None else tuple(spec.path.split(".") if isinstance(spec.path, str) else spec.path)
    return Form(reading=spec.reading, label=spec.label,
                by=spec.by or ("project" if spec.reading == "project" else "seed"),
                extrapolated=dict(spec.extrapolated), models=pairs.units(spec.models, spec.about), notebook=spec.notebook,
                record=None if path else (spec.record or claim_id), path=path,
                scope=spec.scope or (path[-1] if path else None),
                scopes=None if spec.scopes is None else tuple(spec.scopes),
                model_scopes={m: tuple(s) for m, s in spec.model_scopes.items()}, definition=spec.definition,
                standin_record=spec.standin_record, nulls=None if spec.nulls is None else tuple(spec.nulls),
                representation=spec.representation, pooling=spec.pooling,
                sizes=spec.sizes, note=spec.note, rule=spec.rule.rule(scale, unit),
                model_rules={m: r.rule(scale, unit) for m, r in spec.model_rules.items()},
                scope_rules={k: r.rule(scale, unit) for k, r in spec.scope_rules.items()},
                reference=dict(spec.reference), requires=dict(spec.requires), power=spec.power, about=spec.about,
                members=tuple(dict.fromkeys(spec.models)), null_beyond=spec.null_beyond)


def claim_files() -> list[str]:
    """Names of the claims files under params/claims/."""
    return sorted(p.stem for p in CLAIMS_DIR.glob("*.yaml"))


def check_name(name: Union[str, Path], what: str = "CLAIMS") -> Path:
    """The claims file a notebook parameter names (notebook 15's ``CLAIMS``), or a one-line
    :class:`~geolip_lib.params.ParamsError` (``CLAIMS: unknown claims file 'seed-0001' (known:
    example-grounding, seed-001)``). A name is a safe name of a file under params/claims/; a path
    ends in .yaml and exists. For the runner's pre-kernel check of parameters: the file itself is
    then validated by :func:`load`."""
    if isinstance(name, Path) or str(name).endswith((".yaml", ".yml")):
        path = Path(name)
        if not path.is_file():  # a pipe or a folder exists: say what it is, not that it is missing
            why = "is not a regular file (a pipe, a device or a folder); not read" if path.exists() else "does not exist"
            raise ParamsError(f"{what}: claims file {str(name)!r} {why} (give a name under params/claims/ "
                              f"or the path of a .yaml file; known: {', '.join(claim_files())})")
        return path
    why = name_problem(name)
    if why:
        raise ParamsError(f"{what}: {why}")
    path = CLAIMS_DIR / f"{name}.yaml"
    if name not in claim_files():
        raise ParamsError(f"{what}: unknown claims file {name!r}: no {_rel(path)} (known: {', '.join(claim_files())})")
    return path


def load(name_or_path: Union[str, Path, ClaimSet, None] = None) -> ClaimSet:
    """Load and validate a claims file: a name under params/claims/ (default ``seed-001``), a
    path to a ``.yaml``, or a :class:`ClaimSet` (returned as it is). A bad file is one
    :class:`~geolip_lib.params.ParamsError` line naming the file and the key."""
    if isinstance(name_or_path, ClaimSet):
        return name_or_path
    path = Path(name_or_path or DEFAULT)
    if path.suffix not in (".yaml", ".yml"):
        why = name_problem(str(name_or_path or DEFAULT))
        path = CLAIMS_DIR / f"{path}.yaml"
        if why or not path.exists():
            raise ParamsError(f"unknown claims file '{name_or_path}': "
                              f"{why or 'no ' + _rel(path)} (known: {', '.join(claim_files())})")
    return _load_cached(str(path.resolve()), path.stat().st_mtime_ns if path.exists() else 0)


@lru_cache(maxsize=16)
def _load_cached(path_s: str, _mtime: int) -> ClaimSet:
    path = Path(path_s)
    spec = _validate(ClaimFile, _load_yaml(path), path)
    if spec.name != path.stem:
        raise ParamsError(f"{_rel(path)}: key 'name': '{spec.name}' must equal the file name '{path.stem}'")
    notebooks = {p.name[:-len(".ipynb")] for p in NOTEBOOKS.iterdir() if p.name.endswith(".ipynb")}
    problems = []
    for i, c in enumerate(spec.claims):
        for j, f in enumerate(c.forms):
            if f.notebook not in notebooks:  # by exact name (a case-insensitive file system would match others)
                problems.append(f"{_rel(path)}: key 'claims.{i}.forms.{j}.notebook': no notebook '{f.notebook}' "
                                f"(known: {', '.join(sorted(notebooks))})")
            names = pairs.units(f.models, f.about)  # a pair-scoped reading's per-unit keys name pairs
            for key in ("extrapolated", "model_rules", "model_scopes"):
                stray = sorted(set(getattr(f, key)) - set(names))
                if stray and (key == "extrapolated" or f.about != "model"):
                    problems.append(f"{_rel(path)}: key 'claims.{i}.forms.{j}.{key}': {', '.join(stray)} not among "
                                    f"the reading's {'models' if f.about == 'model' else 'units'} ({', '.join(names)})")
            for key, rec in (("record", f.record or (None if f.path else c.id)), ("standin_record", f.standin_record)):
                if rec is not None and rec not in recorded_quantities():
                    problems.append(f"{_rel(path)}: key 'claims.{i}.forms.{j}.{key}': no notebook records "
                                    f"metrics.claims.{rec} (recorded: {', '.join(sorted(recorded_quantities()))}); "
                                    "fix the name, or point at a headline with path:")
    if problems:
        raise ParamsError.of(problems)
    claims = tuple(Claim(id=c.id, title=c.title, seed_value=c.seed_value, seed_models_text=c.seed_models_text,
                         definition=c.definition, nulls=tuple(c.nulls), null_sentence=c.null_sentence,
                         quantization=c.quantization,
                         scale=c.scale, unit=c.unit,
                         forms=tuple(_form(f, c.id, c.scale, c.unit) for f in c.forms)) for c in spec.claims)
    return ClaimSet(spec.name, spec.title, spec.source, _rel(path), claims)


#: seed 001's claims (``params/claims/seed-001.yaml``), loaded at import
SEED_001 = load(DEFAULT)
CLAIMS = SEED_001.claims
CLAIM_IDS = SEED_001.ids


def claim(claim_id: str) -> Claim:
    """A claim of seed 001 by id."""
    return SEED_001.claim(claim_id)
