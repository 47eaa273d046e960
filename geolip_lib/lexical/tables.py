"""Display tables of notebooks 04 and 05: values with their 95 % intervals beside the nulls.

A *battery* is one set of measurements (the model, the shuffled-synset null, the model at
random init), given as ``(values, intervals)``: ``{metric: value}`` and ``{metric:
Interval}``. :func:`interval_rows` flattens batteries into one long frame (what
``plots.interval_forest`` draws), :func:`interval_table` shows it as ``value [lo, hi]``
strings at the precision the interval supports.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..metrics.intervals import format_value

__all__ = ["interval_rows", "interval_table", "nulls", "seed_summary"]


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return f


def interval_rows(batteries: Mapping[str, tuple[Mapping, Mapping]], keys: Sequence[str],
                  labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Long frame ``metric, battery, value, lo, hi`` of ``keys`` in every battery that has them.

    Parameters
    ----------
    batteries : dict
        ``{battery: (values, intervals)}``; a metric missing from a battery's values is skipped,
        one missing from its intervals gets NaN bounds.
    keys : list of str
        Metrics, in display order.
    labels : dict, optional
        Display name of each metric (defaults to the key).
    """
    labels = labels or {}
    rows = []
    for k in keys:
        for name, (values, ivs) in batteries.items():
            if k not in values or values[k] is None:
                continue
            iv = (ivs or {}).get(k)
            rows.append({"metric": labels.get(k, k), "battery": name, "value": _num(values[k]),
                         "lo": _num(getattr(iv, "lo", np.nan)), "hi": _num(getattr(iv, "hi", np.nan))})
    return pd.DataFrame(rows, columns=["metric", "battery", "value", "lo", "hi"])


def interval_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Wide table of :func:`interval_rows`: one row per metric, one ``value [lo, hi]`` column per battery."""
    if rows.empty:
        return pd.DataFrame()
    cell = rows.assign(text=[format_value(v, (lo, hi)) for v, lo, hi in zip(rows["value"], rows["lo"], rows["hi"])])
    out = cell.pivot(index="metric", columns="battery", values="text")
    out = out.reindex(index=list(dict.fromkeys(rows["metric"])), columns=list(dict.fromkeys(rows["battery"])))
    out.columns.name = None
    return out.fillna("–")


def seed_summary(summary: Mapping[str, Mapping], intervals: Mapping, summary_null: Mapping[str, Mapping] | None = None,
                 intervals_null: Mapping | None = None) -> pd.DataFrame:
    """Per metric over seeds: mean [95 % t interval], std, min, max, and the shuffled null's mean [interval].

    ``summary`` is ``alignment.summarize_seeds`` output, ``intervals`` ``alignment.seed_intervals``.
    """
    rows = {}
    for k, s in summary.items():
        null = (summary_null or {}).get(k)
        rows[k] = {"mean [95 % interval]": format_value(s["mean"], intervals.get(k)),
                   "std": s["std"], "min": s["min"], "max": s["max"], "seeds": s["n"],
                   "shuffled null: mean [95 % interval]": (format_value(null["mean"], (intervals_null or {}).get(k))
                                                           if null else "–")}
    return pd.DataFrame.from_dict(rows, orient="index")


def nulls(key: str, batteries: Mapping[str, tuple[Mapping, Mapping]]) -> dict:
    """``{battery: {"value", "interval"}}`` of ``key`` in every null battery that measured it
    (the ``nulls=`` argument of ``results.headline``)."""
    out = {}
    for name, (values, ivs) in batteries.items():
        v = values.get(key)
        if v is not None and np.isfinite(_num(v)):
            out[name] = {"value": _num(v), "interval": (ivs or {}).get(key)}
    return out
