"""Tables and interval helpers of the attention notebooks (12, 13, 14).

Pure functions from recorded results to :class:`pandas.DataFrame` (shown with
``job.table``) or to the per-item / per-seed samples a headline interval needs.

* notebook 12 (constellation relay): :func:`depth_table`, :func:`interval_table`;
* notebook 13 (head_dim vs CV): :func:`profiles_long`, :func:`accuracy_frame`,
  :func:`head_means`, :func:`summary_table`, :func:`table_cells`,
  :func:`per_seed_means`, :func:`band_count`, :func:`band_counts`, :func:`band_count_summary`;
* notebook 14 (triple-product attention): :func:`copy_runs_frame`, :func:`loss_curves_frame`,
  :func:`example_sequences`;
* :func:`proportion_interval`: a Wilson score interval of ``k`` successes in ``n``.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..metrics.intervals import Interval, clipped, format_value, over_seeds, proportion_interval  # noqa: F401 - re-exported
from .mha_classifier import band_mark

__all__ = ["depth_table", "interval_table", "profiles_long", "accuracy_frame", "head_means", "summary_table",
           "table_cells", "per_seed_means", "band_count", "band_counts", "band_count_summary", "proportion_interval",
           "copy_runs_frame",
           "loss_curves_frame", "example_sequences", "clipped", "CFG"]

#: columns that identify a configuration of notebook 13
CFG = ["dim", "heads", "head_dim"]


# ------------------------------------------------------------------ shared
def interval_table(rows: Mapping[str, Mapping[str, tuple]]) -> pd.DataFrame:
    """``{row: {column: (value, Interval)}}`` -> a table of ``value [lo, hi]`` strings.

    Each cell is printed at the precision its interval supports
    (:func:`geolip_lib.metrics.intervals.format_value`).
    """
    return pd.DataFrame({r: {c: format_value(v, iv) for c, (v, iv) in cols.items()} for r, cols in rows.items()}).T


# ------------------------------------------------------------------ notebook 12
def depth_table(depth_rows: Sequence[Mapping], columns: Iterable[str] = ("cv_n", "cos_to_input", "eff_dim_sv_pr")):
    """Depth sweep rows (``arch``, ``depth``, geometry) -> rows = depth, columns = ``quantity · arch``."""
    df = pd.DataFrame(list(depth_rows))
    wide = df.pivot(index="depth", columns="arch", values=list(columns))
    wide.columns = [f"{q} · {a}" for q, a in wide.columns]
    return wide


# ------------------------------------------------------------------ notebook 13
def profiles_long(runs: Sequence[Mapping]) -> pd.DataFrame:
    """Every CV of every run of :func:`~geolip_lib.attention.head_dim_run`, one row each.

    Columns ``dim, heads, head_dim, seed, mode, phase, key, cv`` and ``group`` (the key
    with a trailing ``_h<i>`` replaced by ``_h*``, so per-head keys of one run can be
    averaged); ``mode`` is the run's data/init mode ("varied" or "fixed").
    """
    long = pd.DataFrame([
        {"dim": r["dim"], "heads": r["n_heads"], "head_dim": r["head_dim"], "seed": r["seed"],
         "mode": r.get("mode", "varied"), "phase": phase, "key": k, "cv": v}
        for r in runs for phase in ("pre", "mid", "post") for k, v in r[phase].items()
    ])
    long["cv"] = long.cv.astype(float)
    long["group"] = long.key.str.replace(r"_h\d+$", "_h*", regex=True)
    return long


def accuracy_frame(runs: Sequence[Mapping]) -> pd.DataFrame:
    """One row per run: configuration, seed, training accuracy, last loss."""
    return pd.DataFrame([{"dim": r["dim"], "heads": r["n_heads"], "head_dim": r["head_dim"], "seed": r["seed"],
                          "mode": r.get("mode", "varied"), "acc": r["acc"], "loss_last": r["loss"]["last"]}
                         for r in runs])


def head_means(long: pd.DataFrame) -> pd.DataFrame:
    """CV averaged over the heads of each run, per ``group`` (:func:`profiles_long`)."""
    by = ["dim", "heads", "head_dim", "seed", *(["mode"] if "mode" in long else []), "phase", "group"]
    return long.groupby(by, as_index=False).cv.mean()


def _band_mark(m: float, s: float, band: Sequence[float], seed_band: Sequence[float] | None = None) -> str:
    return band_mark(m, s, tuple(band), seed_band=None if seed_band is None else tuple(seed_band))


def summary_table(long: pd.DataFrame, keys: Sequence[str], *, band: Sequence[float], phase: str = "post",
                  delta: bool = False, acc: pd.DataFrame | None = None,
                  seed_band: Sequence[float] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows = configurations, cells = ``mean ± sd`` over seeds (``*``: mean inside ``band``,
    ``°``: inside ``seed_band``). ``long`` holds one data/init mode (filter ``mode`` first).

    Parameters
    ----------
    long : DataFrame
        :func:`profiles_long`.
    keys : sequence of str
        CV keys, one column each.
    phase : {"pre", "mid", "post"}
        Which profile (ignored with ``delta``).
    delta : bool
        Cells are the change ``post − pre`` (signed, no band mark).
    acc : DataFrame, optional
        :func:`accuracy_frame`; adds an ``acc`` column (``mean ± sd`` over seeds).

    Returns
    -------
    table : DataFrame
        The display table (strings).
    agg : DataFrame
        ``dim, heads, head_dim, key, mean, std`` (the numbers behind each cell).
    """
    src = long[long.key.isin(keys)]
    if delta:
        wide = src.pivot_table(index=CFG + ["seed", "key"], columns="phase", values="cv")
        vals = (wide["post"] - wide["pre"]).rename("cv").reset_index()
    else:
        vals = src[src.phase == phase]
    agg = vals.groupby(CFG + ["key"]).cv.agg(["mean", "std"]).reset_index()
    if delta:
        cells = ["N/A" if m != m else f"{m:+.4f} ± {s:.4f}" for m, s in zip(agg["mean"], agg["std"])]
    else:
        cells = [_band_mark(m, s, band, seed_band) for m, s in zip(agg["mean"], agg["std"])]
    agg["cell"] = cells
    table = agg.pivot(index=CFG, columns="key", values="cell")[list(keys)]
    if acc is not None:
        a = acc.groupby(CFG).acc.agg(["mean", "std"])
        table["acc"] = [f"{m:.1%} ± {s:.1%}" for m, s in zip(a["mean"], a["std"])]
    return table, agg.drop(columns="cell")


def table_cells(agg: pd.DataFrame) -> dict:
    """``{"D<dim>_H<heads>": {key: {"mean", "std"}}}`` of a :func:`summary_table` ``agg``."""
    return {f"D{d}_H{h}": {k: {"mean": m, "std": s} for k, m, s in zip(sub.key, sub["mean"], sub["std"])}
            for (d, h), sub in agg.groupby(["dim", "heads"])}


def per_seed_means(head_mean: pd.DataFrame, phase: str, group: str) -> pd.Series:
    """Per seed: the CV of ``group`` in ``phase`` averaged over configurations (and heads).

    The items of :func:`geolip_lib.metrics.intervals.over_seeds`: each seed is one full
    repetition (data, init, training). With every configuration present for every seed
    their mean equals the mean over all (configuration, seed) rows.
    """
    sub = head_mean[(head_mean.phase == phase) & (head_mean.group == group)]
    return sub.groupby("seed").cv.mean()


def band_count(aggs: Iterable[pd.DataFrame], band: Sequence[float]) -> tuple[int, int]:
    """``(k, n)``: table cells whose seed mean lies inside ``band``, of all defined cells."""
    means = pd.concat(list(aggs))["mean"].astype(float)
    means = means[np.isfinite(means)]
    return int(means.between(*band).sum()), int(len(means))


def band_counts(long: pd.DataFrame, keys: Sequence[str], bands: Mapping[str, Sequence[float]], *,
                phase: str = "post") -> pd.DataFrame:
    """Per mode, key and seed: how many configurations have their CV inside each band.

    Parameters
    ----------
    long : DataFrame
        :func:`profiles_long` (every mode).
    keys : sequence of str
        CV keys (``emb``, ``act_Q_h0`` ...).
    bands : {name: (lo, hi)}
        Bands, edges included (the project's 0.20–0.23 and seed 002's 0.13–0.30).
    phase : {"pre", "mid", "post"}

    Returns
    -------
    DataFrame
        ``mode, key, seed, n`` (configurations with a defined CV), ``cv_mean`` (their mean
        CV) and one count column per band name.
    """
    src = long[(long["phase"] == phase) & long["key"].isin(keys)].dropna(subset=["cv"])
    rows = []
    for (mode, key, seed), sub in src.groupby(["mode", "key", "seed"], sort=False):
        rows.append({"mode": mode, "key": key, "seed": seed, "n": len(sub), "cv_mean": float(sub["cv"].mean()),
                     **{name: int(sub["cv"].between(*b).sum()) for name, b in bands.items()}})
    return pd.DataFrame(rows)


def band_count_summary(counts: pd.DataFrame, bands: Mapping[str, Sequence[float]],
                       keys: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict]:
    """Mean over seeds (t interval, :func:`~geolip_lib.metrics.intervals.over_seeds`) of the
    mean CV and of each band's configuration count (its interval clipped to ``[0, n]``), per
    mode and key (:func:`band_counts`).

    Returns
    -------
    table : DataFrame
        Rows = keys; columns ``(mode, quantity)``: "mean CV [95 % interval]" and, per band,
        "configs in <name>" as ``k [lo, hi] of n`` (mean over seeds, t interval).
    record : dict
        ``{mode: {key: {"n_configs", "cv_mean": {value, interval, per_seed},
        "in_band": {name: {value, interval, per_seed}}}}}``.
    """
    keys = list(keys) if keys is not None else list(dict.fromkeys(counts["key"]))
    record: dict = {}
    cells: dict = {k: {} for k in keys}
    for mode, by_mode in counts.groupby("mode", sort=False):
        record[mode] = {}
        for key in keys:
            sub = by_mode[by_mode["key"] == key].sort_values("seed")
            if sub.empty:
                continue
            n = int(sub["n"].max())
            iv = over_seeds(sub["cv_mean"])
            rec = {"n_configs": n, "cv_mean": {"value": float(sub["cv_mean"].mean()), "interval": iv,
                                               "per_seed": sub["cv_mean"].tolist()}, "in_band": {}}
            cells[key][(mode, "mean CV [95 % interval]")] = format_value(rec["cv_mean"]["value"], iv)
            for name in bands:
                k_iv = clipped(over_seeds(sub[name]), 0, n)  # a count lies in [0, n]
                rec["in_band"][name] = {"value": float(sub[name].mean()), "interval": k_iv,
                                        "per_seed": [int(v) for v in sub[name]]}
                cells[key][(mode, f"configs in {name}")] = (
                    f"{format_value(rec['in_band'][name]['value'], k_iv, '.2f')} of {n}")
            record[mode][key] = rec
    table = pd.DataFrame.from_dict({k: c for k, c in cells.items() if c}, orient="index")
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["mode", ""])
    return table, record


# ------------------------------------------------------------------ notebook 14
def copy_runs_frame(runs: Mapping[str, Sequence[Mapping]], attn_types: Sequence[str] = ("standard", "triple")):
    """One row per (attention type, seed) of :func:`~geolip_lib.attention.train_comparison`."""
    return pd.DataFrame([
        {"attention": a, "seed": r["seed"], "acc_copied": r["acc_copied"], "acc_first_half": r["acc_first_half"],
         "acc_copied_init": r["acc_copied_init"], "final_loss": r["loss"][-1], "n_params": r["n_params"],
         "memory_bytes": r["memory_bytes"], "memory_kind": r["memory_kind"], "ms_per_step": r["ms_per_step"]}
        for a in attn_types for r in runs[a]
    ])


def loss_curves_frame(runs: Mapping[str, Sequence[Mapping]], attn_types: Sequence[str] = ("standard", "triple")):
    """Long table of the logged training losses: ``attention, seed, step, loss``."""
    return pd.DataFrame([
        {"attention": a, "seed": r["seed"], "step": s, "loss": l}
        for a in attn_types for r in runs[a] for s, l in zip(r["loss_steps"], r["loss"])
    ])


def example_sequences(x, y, mask) -> pd.DataFrame:
    """The first copy-task sequence as a table: rows inputs / targets / copied, one column per position."""
    return pd.DataFrame({"inputs": list(x[0].tolist()), "targets": list(y[0].tolist()),
                         "copied (scored)": [int(v) for v in mask.tolist()]}).T.rename_axis(columns="position")
