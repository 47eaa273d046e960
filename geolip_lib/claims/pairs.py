"""Claims about a pair (or a set) of models: one verdict per pair, the pairs as the matrix's columns.

A reading with ``about: pair`` in a claims file lists its models as usual; its units are every
unordered pair of them, each named ``"model A × model B"`` (the two names in sorted order, so a
notebook and a claims file name a pair alike whatever order they list the models in).
``about: set`` makes the whole list one unit (a statistic over all the pairs, e.g. a rank
correlation). The unit's name stands where a model's name stands everywhere else: the rows of
:func:`geolip_lib.claims.evaluate`, the summary, and the verdict matrix's columns, so the rules,
nulls, power and readings are those of single-model claims.

A notebook records a pair-scoped quantity as ``metrics["claims"][<record>][<unit>][<scope>]`` (a
headline dict, as a model's scopes are), or ``metrics["claims"][<record>][<unit>] = {"not_run":
"<why>"}`` for a unit it could not measure (a model that reads another language): that unit reads
"not tested" with the reason, never silently absent.
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable, Mapping, Sequence

from ..metrics.alignment import PAIR_SEP as SEP
from ..metrics.alignment import pair_name

__all__ = ["SEP", "label", "members", "units", "is_label", "split_jobs", "NOT_RUN"]

#: the key of a unit a notebook could not measure, with its reason
NOT_RUN = "not_run"


def label(models: Iterable[str]) -> str:
    """The name of a pair or set of models (:func:`geolip_lib.metrics.alignment.pair_name`: the distinct
    names, sorted, joined by :data:`SEP`)."""
    return pair_name(models)


def members(unit: str) -> tuple:
    """The models of a unit's name (a model's own name: itself)."""
    return tuple(str(unit).split(SEP))


def is_label(unit: str) -> bool:
    return SEP in str(unit)


def units(models: Sequence[str], about: str) -> tuple:
    """The units a reading is about: the models themselves (``model``), every unordered pair of them
    in the listed order (``pair``), or the whole list as one (``set``)."""
    if about == "model":
        return tuple(models)
    if about == "pair":
        return tuple(dict.fromkeys(label(p) for p in combinations(models, 2)))
    if about == "set":
        return (label(models),)
    raise ValueError(f"about must be model, pair or set, got {about!r}")


def split_jobs(jobs: Mapping[str, Mapping], record: str) -> dict[str, tuple[str, dict]]:
    """unit -> (job name, a view of the job holding only that unit's record) for every unit that the
    finished jobs of a pair-scoped notebook recorded under ``metrics.claims.<record>``.

    The view carries the job's provenance (which models were loaded, dequantized or not) and
    ``metrics.claims.<record>`` = that unit's scopes, so a unit reads as a one-model job does; a unit
    recorded as not run carries ``not_run`` (its reason) instead. The first job to record a unit wins."""
    out: dict[str, tuple[str, dict]] = {}
    for job, data in jobs.items():
        metrics = data.get("metrics") if isinstance(data.get("metrics"), Mapping) else {}
        claims = metrics.get("claims") if isinstance(metrics.get("claims"), Mapping) else {}
        rec = claims.get(record) if isinstance(claims.get(record), Mapping) else {}
        for unit, scoped in rec.items():
            if unit in out or not isinstance(scoped, Mapping):
                continue
            view = {k: v for k, v in data.items() if k != "metrics"}
            view["model"] = unit
            if isinstance(scoped.get(NOT_RUN), str):
                view[NOT_RUN] = scoped[NOT_RUN]
                view["metrics"] = {"claims": {}}
            else:
                view["metrics"] = {"claims": {record: dict(scoped)}}
            out[str(unit)] = (job, view)
    return out
