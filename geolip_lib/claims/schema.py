"""Schema of a claims file, ``params/claims/<name>.yaml`` (the format: params/README.md, "Claims").

Validated like the params files (:mod:`geolip_lib.params`): an unknown key, a wrong type or a
malformed rule is one :class:`~geolip_lib.params.ParamsError` line naming the file and the key::

    ParamsError: params/claims/seed-001.yaml: key 'claims.0.forms.0.rule': give exactly one of band, ...
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from ..params import _Strict
from .rules import RULE_KINDS, Rule

__all__ = ["RuleSpec", "PowerSpec", "FormSpec", "ClaimSpec", "ClaimFile", "READINGS"]

#: what a form of a claim reads: the seed's summary table, the seed's own cells, both (they
#: agree), or a reading the project adds (its own test where the seed defines none)
READINGS = {"table": "as the table says", "seed": "as the seed measured",
            "both": "as the table says = as the seed measured", "project": "the project's own reading"}

Number = Union[float, int, str]


class RuleSpec(_Strict):
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


class PowerSpec(_Strict):
    """How to compute the power of a change-point test that found nothing (the phase boundary)."""

    at: float = Field(description="where the simulated kink sits (the seed's location)")
    slope_change: float = Field(gt=0, description="the kink's slope change, in the quantity's units per unit x")
    basis: str = Field(description="where that size comes from (the seed's own numbers)")
    fit_path: str = Field(description="dotted path in the job's metrics to the change-point fit; {field} is "
                                      "filled from the claim record (e.g. phase.located.{quantity}|{null}.fit)")
    reps: int = Field(60, ge=10, le=2000, description="simulated curves per effect size")
    n_boot: int = Field(49, ge=19, le=2000, description="resamples of each simulated test")
    target: float = Field(0.8, gt=0, lt=1, description="power that counts as enough")


class FormSpec(_Strict):
    """One reading of a claim: which models, which record, which rule."""

    reading: Literal["table", "seed", "both", "project"]
    label: str = Field("", description="added to the reading's name, e.g. 'the project's own test'")
    models: list[str] = Field(description="the models this reading is about (the seed's own models)")
    notebook: str = Field(description="the notebook whose jobs record it")
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
    representation: str = ""
    pooling: str = ""
    sizes: str = ""
    note: str = ""
    rule: RuleSpec
    model_rules: dict[str, RuleSpec] = Field(default_factory=dict, description="per model: its own rule")
    scope_rules: dict[str, RuleSpec] = Field(default_factory=dict, description="per scope: its own rule")
    reference: dict[str, float] = Field(default_factory=dict, description="per scope or model: the seed's value, "
                                        "shown and said whether the interval contains it")
    requires: dict[str, Any] = Field(default_factory=dict, description="record fields that must have these values "
                                     "for the record to be this reading (e.g. as_seed_measured: true)")
    power: Optional[PowerSpec] = None

    @model_validator(mode="after")
    def _where(self) -> "FormSpec":
        if self.record and self.path:
            raise ValueError("give record or path, not both")
        return self


class ClaimSpec(_Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    title: str
    seed_value: str = Field(description="the claim's value as the table prints it")
    seed_models_text: str = Field(description="the table's models column, verbatim")
    definition: str = ""
    nulls: list[str] = Field(default_factory=list, description="the nulls that bear on the claim")
    null_sentence: str = Field("", description="said when a null gives it too ({null}, {value} filled in)")
    scale: float = Field(1.0, description="display: 100 for percentages")
    unit: str = ""
    forms: list[FormSpec] = Field(min_length=1)

    @field_validator("nulls")
    @classmethod
    def _nulls(cls, v: list[str]) -> list[str]:
        return [str(n) for n in v]


class ClaimFile(_Strict):
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
