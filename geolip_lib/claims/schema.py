"""Schema of a claims file, ``params/claims/<name>.yaml`` (the format: params/README.md, "Claims").

Validated like the params files (:mod:`geolip_lib.params`): an unknown key, a wrong type or a
malformed rule is one :class:`~geolip_lib.params.ParamsError` line naming the file and the key::

    ParamsError: params/claims/seed-001.yaml: key 'claims.0.forms.0.rule': give exactly one of band, ...
"""
from __future__ import annotations

import math
import string
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BeforeValidator, ConfigDict, Field, field_validator, model_validator

from ..params_checks import Float, Int, _safe, not_bool
from ..params_yaml import _Strict
from .rules import RULE_KINDS, Rule

__all__ = ["RuleSpec", "PowerSpec", "FormSpec", "ClaimSpec", "ClaimFile", "READINGS", "SENTENCE_FIELDS",
           "sentence_problem", "render_sentence"]

#: the fields a ``null_sentence`` may name: the null's display name and its value as printed
SENTENCE_FIELDS = ("null", "value")
#: the fields a power spec's paths may name (filled from the change-point record)
PATH_FIELDS = ("quantity", "null")


def sentence_problem(text: str, fields: tuple = SENTENCE_FIELDS) -> Optional[str]:
    """Why ``text`` is not a null-sentence template (None: it is one).

    A template is plain text with ``{null}`` and ``{value}`` (``{{`` / ``}}`` for braces): no
    format spec (``{value:>100000000}`` would pad to 100 MB), no conversion, no attribute or
    index access (``{null.__class__.__mro__}``), no other field. Parsed with
    :meth:`string.Formatter.parse`, the grammar ``str.format`` itself uses."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        return (f"not a template ({exc}); write {' and '.join('{' + f + '}' for f in fields)}, and {{{{ }}}} for a "
                "literal brace")
    for _lit, name, spec, conv in parts:
        if name is None:
            continue
        if name not in fields:
            return (f"field {{{name}}} is not allowed: name only {', '.join('{' + f + '}' for f in fields)}"
                    " (no attribute or index access, no positional field)")
        if spec or conv:
            return (f"field {{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}} has a "
                    f"{'format spec' if spec else 'conversion'}: write {{{name}}} alone")
    return None


def render_sentence(text: str, **values: str) -> str:
    """A checked template (:func:`sentence_problem`) with its fields replaced by ``values``
    (``str`` of each); nothing is formatted, so nothing in the template can run or pad."""
    out = []
    for lit, name, _spec, _conv in string.Formatter().parse(text):
        out.append(lit)
        if name is not None:
            out.append(str(values.get(name, "")))
    return "".join(out)


class _Data(_Strict):
    """A claims file is data: every number finite (``.nan`` / ``.inf`` refused by name)."""

    model_config = ConfigDict(extra="forbid", strict=False, allow_inf_nan=False)

#: what a form of a claim reads: the seed's summary table, the seed's own cells, both (they
#: agree), or a reading the project adds (its own test where the seed defines none)
READINGS = {"table": "as the table says", "seed": "as the seed measured",
            "both": "as the table says = as the seed measured", "project": "the project's own reading"}

#: the largest display factor a claim may give (100 for percentages, 1000 for per-mille; a factor past this
#: prints every bound and interval as hundreds of digits, or as infinity)
MAX_SCALE = 1e6


def _finite(v: Any) -> Any:
    """A number in a claims file is finite and not a boolean: one message before the union's three branches."""
    not_bool(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"expected a finite number, got {v} (.nan and .inf are not numbers a rule can compare)")
    return v


Number = Annotated[Union[float, int, str], BeforeValidator(_finite)]


class RuleSpec(_Data):
    """Exactly one of the kinds, with its argument; ``text`` replaces the rule's wording."""

    band: Optional[list[Number]] = Field(None, description="[lo, hi]; printed strings widen by half a digit")
    equals: Optional[Number] = Field(None, description="a printed number ('93.7 %') or an exact number (a count)")
    at_least: Optional[Number] = None
    at_most: Optional[Number] = None
    all_within: Optional[Union[Number, list[Number]]] = Field(None, description="every per-layer value prints as "
                                                              "this ('0.500'), or lies in [lo, hi]")
    contains: Optional[Number] = Field(None, description="the interval contains this location")
    text: str = ""

    @model_validator(mode="after")
    def _one(self) -> "RuleSpec":
        given = [k for k in RULE_KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(RULE_KINDS)} (got {', '.join(given) or 'none'})")
        try:
            self.rule()
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return self

    def rule(self, scale: float = 1.0, unit: str = "") -> Rule:
        kind = next(k for k in RULE_KINDS if getattr(self, k) is not None)
        return Rule.from_spec(kind, getattr(self, kind), text=self.text, scale=scale, unit=unit)


class PowerSpec(_Data):
    """How to compute the power of a change-point test that found nothing (the phase boundary)."""

    at: Float = Field(description="where the simulated kink sits (the seed's location)")
    slope_change: Float = Field(gt=0, description="the kink's slope change, in the quantity's units per unit x")
    basis: str = Field(description="where that size comes from (the seed's own numbers)")
    fit_path: str = Field(description="dotted path in the job's metrics to the change-point fit; {quantity} and "
                                      "{null} are filled from the claim record (e.g. phase.located.{quantity}|{null}.fit)")
    sweep_path: str = Field("phase.sweep", description="dotted path in the job's metrics to the measured sweep: "
                            "'alphas' (the grid) and one row per seed of each quantity; the power is computed from "
                            "these observed curves")
    reps: Int = Field(60, ge=10, le=2000, description="simulated curves per effect size")
    n_boot: Int = Field(49, ge=19, le=2000, description="resamples of each simulated test")
    target: Float = Field(0.8, gt=0, lt=1, description="power that counts as enough")

    @field_validator("fit_path", "sweep_path")
    @classmethod
    def _paths(cls, v: str) -> str:
        why = sentence_problem(v, PATH_FIELDS)
        if why:
            raise ValueError(why)
        return v


class FormSpec(_Data):
    """One reading of a claim: which models, which record, which rule."""

    reading: Literal["table", "seed", "both", "project"]
    label: str = Field("", description="added to the reading's name, e.g. 'the project's own test'")
    by: Optional[Literal["seed", "project"]] = Field(None, description="whose reading this is: the seed's (its "
                                                     "table or its cells) or the project's (a pooling, threshold or "
                                                     "test the seed did not use); default: project for reading "
                                                     "'project', else seed")
    extrapolated: dict[str, str] = Field(default_factory=dict, description="per model: why this reading of that "
                                         "model is an extrapolation (the seed never measured it so)")
    models: list[str] = Field(description="the models this reading is about (the seed's own models)")
    about: Literal["model", "pair", "set"] = Field("model", description="what one verdict is about: each model, "
                                                   "each unordered pair of the models ('model A × model B', the "
                                                   "matrix's columns), or the whole set of them as one unit "
                                                   "(geolip_lib/claims/pairs.py)")
    notebook: str = Field(description="the notebook whose jobs record it (a safe name: notebooks/<name>.ipynb)")
    record: Optional[str] = Field(None, description="key under metrics.claims (default: the claim id)")
    path: Optional[Union[str, list[str]]] = Field(None, description="instead of record: a headline dict at this "
                                                  "path of metrics.json (dotted string, or a list of keys)")
    scope: Optional[str] = Field(None, description="with path: the scope name shown (default: the last key)")
    scopes: Optional[list[str]] = Field(None, description="the recorded scopes that test it (default: all)")
    model_scopes: dict[str, list[str]] = Field(default_factory=dict, description="per model: its scopes")
    definition: Literal["seed", "project"] = Field("seed", description="the record's seed definition (the "
                                                   "headline) or its 'project' definition")
    standin_record: Optional[str] = Field(None, description="a related record shown for stand-ins that lack this one")
    nulls: Optional[list[str]] = Field(None, description="the nulls that bear on this reading (default: the claim's)")
    null_beyond: Literal["gives it too", "against"] = Field(
        "gives it too", description="a bearing null separated from the value and further into the rule's region: "
        "'gives it too' (default: held, but the null gives it too) or 'against' (a claim of convergence: untrained "
        "networks more alike than the trained ones count against it, not held)")
    representation: str = ""
    pooling: str = ""
    sizes: str = ""
    note: str = ""
    rule: RuleSpec
    model_rules: dict[str, RuleSpec] = Field(default_factory=dict, description="per model: its own rule")
    scope_rules: dict[str, RuleSpec] = Field(default_factory=dict, description="per scope: its own rule")
    reference: dict[str, Float] = Field(default_factory=dict, description="per scope or model: the seed's value, "
                                        "shown and said whether the interval contains it")
    requires: dict[str, Any] = Field(default_factory=dict, description="record fields that must have these values "
                                     "for the record to be this reading (e.g. as_seed_measured: true)")
    power: Optional[PowerSpec] = None

    @field_validator("notebook")
    @classmethod
    def _notebook(cls, v: str) -> str:
        return _safe(v)  # it becomes a folder under the output root: one safe path component

    @model_validator(mode="after")
    def _where(self) -> "FormSpec":
        if self.record and self.path:
            raise ValueError("give record or path, not both")
        if self.about != "model":
            if self.path:
                raise ValueError(f"about: {self.about} reads a record (metrics.claims.<record>.<pair>.<scope>); "
                                 "give record:, not path:")
            if len(set(self.models)) < 2:
                raise ValueError(f"about: {self.about} needs at least two distinct models (got {self.models})")
        return self


class ClaimSpec(_Data):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    title: str
    seed_value: str = Field(description="the claim's value as the table prints it")
    seed_models_text: str = Field(description="the table's models column, verbatim")
    definition: str = ""
    nulls: list[str] = Field(default_factory=list, description="the nulls that bear on the claim")
    null_sentence: str = Field("", description="said when a null gives it too ({null}, {value} filled in)")
    scale: Float = Field(1.0, description="display: 100 for percentages (a finite number above 0, at most 1e6)")
    quantization: str = Field("", description="why a quantization step could decide the rule (a threshold on "
                              "weights within its reach, signs of small eigenvalues, ...): values from dequantized "
                              "weights (GGUF) are then kept out of the verdict; empty: it cannot")
    unit: str = ""
    forms: list[FormSpec] = Field(min_length=1)

    @field_validator("nulls")
    @classmethod
    def _nulls(cls, v: list[str]) -> list[str]:
        return [str(n) for n in v]

    @field_validator("null_sentence")
    @classmethod
    def _sentence(cls, v: str) -> str:
        why = sentence_problem(v)
        if why:
            raise ValueError(why)
        return v

    @field_validator("scale")
    @classmethod
    def _scale(cls, v: float) -> float:
        if not 0 < v <= MAX_SCALE:
            raise ValueError(f"scale is {v:g}: a display factor is above 0 and at most {MAX_SCALE:g} (100 for "
                             "percentages, 1 for the quantity as recorded)")
        return v

    @model_validator(mode="after")
    def _scaled(self) -> "ClaimSpec":
        """Every rule bound and reference, shown times ``scale``, is a finite number (a bound of 1e305 at scale 1000
        would read "≥ inf")."""
        for i, form in enumerate(self.forms):
            specs = [("rule", form.rule)] + [(f"model_rules.{m}", r) for m, r in form.model_rules.items()] + \
                [(f"scope_rules.{k}", r) for k, r in form.scope_rules.items()]
            values = [(f"reference.{k}:", v) for k, v in form.reference.items()]
            for key, spec in specs:
                rule = spec.rule(self.scale)
                values += [(f"{key}: bound", b) for b in (rule.lo, rule.hi, rule.target)]
            for what, b in values:
                if b is not None and not math.isfinite(b * self.scale):
                    raise ValueError(f"forms.{i}.{what} {b:g} times scale {self.scale:g} is not a finite number; "
                                     "give the numbers in the quantity's own units, or a smaller scale")
        return self


class ClaimFile(_Data):
    """Schema of ``params/claims/<name>.yaml``."""

    name: str = Field(description="must equal the file name without .yaml")
    title: str
    source: str = Field(description="where the claims come from (paper, table, seed cell)")
    claims: list[ClaimSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "ClaimFile":
        ids = [c.id for c in self.claims]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"claim ids must be unique (repeated: {', '.join(dup)})")
        return self
