"""Figures of notebook 04 (WordNet relational alignment) and notebook 05 (seed stability).

Every function takes data and returns a :class:`matplotlib.figure.Figure`; the notebook
shows and saves it with ``job.figure(fig, name)``. Nothing here calls ``plt.show``.
The inputs are what :mod:`geolip_lib.lexical.relational_battery` computes (pair arrays of
``relational_pairs``, volumes of ``pentachoron_pair``, rows of ``chain_decay``,
``lexname_table`` and ``band_table``, per-seed dicts of ``seed_battery``) and the long
interval frames of :func:`geolip_lib.lexical.tables.interval_rows`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

__all__ = ["wordnet_geometry", "interval_forest", "distance_bands", "seed_stability"]

STATIC, ENCODER = "steelblue", "crimson"


def wordnet_geometry(sims: np.ndarray, enc_cos: np.ndarray, static_cos: np.ndarray, *, r_enc: float, r_static: float,
                     cos_static_encoder: np.ndarray, vol_static: np.ndarray, vol_enc: np.ndarray, vol_corr: float,
                     decay: Sequence[Mapping], lexnames: Sequence[Mapping], title: str, max_points: int = 50000,
                     seed: int = 0) -> Figure:
    """The seed's 2 × 3 panel: static vs encoder geometry against WordNet.

    Parameters
    ----------
    sims, enc_cos, static_cos : array, shape (P,)
        Path similarity and the two spaces' cosines of the sampled pairs.
    r_enc, r_static : float
        Their Pearson correlations (shown in the titles).
    cos_static_encoder : array, shape (M,)
        Per-entry cosine between the static and encoder representation (NaN when the two
        widths differ: the panel then says so).
    vol_static, vol_enc : array, shape (S,)
        Pentachoron volumes of the same simplices in the two spaces (NaN where degenerate;
        only simplices finite in both are drawn).
    vol_corr : float
        Their per-simplex correlation.
    decay : list of dict
        ``chain_decay`` rows (``depth``, ``static_cos``, ``encoder_cos``).
    lexnames : list of dict
        ``lexname_table`` rows (the first 15 are drawn).
    title : str
        Suptitle.
    max_points : int
        At most this many pairs are scattered (a seeded random subset).

    Returns
    -------
    matplotlib.figure.Figure
        Six axes titled "Encoder vs WordNet (r=…)", "Static vs WordNet (r=…)",
        "cosine(static, encoder) …", "Pentachoron volumes (r=…)", "Hypernym chain cosine
        decay", "Intra-category cosine by WordNet lexname".
    """
    sims, enc_cos, static_cos = (np.asarray(a, np.float64) for a in (sims, enc_cos, static_cos))
    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    fig.suptitle(title, fontsize=14)
    n = len(sims)
    sub = np.random.default_rng(seed).choice(n, size=min(max_points, n), replace=False) if n else np.zeros(0, int)
    for ax, cos, color, space, r in ((axes[0, 0], enc_cos, "darkgreen", "encoder", r_enc),
                                     (axes[0, 1], static_cos, STATIC, "static", r_static)):
        ax.scatter(sims[sub], cos[sub], alpha=0.05, s=2, color=color, rasterized=True)
        ax.set(xlabel="WordNet path similarity", ylabel=f"{space} cosine",
               title=f"{space.capitalize() if space == 'static' else 'Encoder'} vs WordNet (r={r:.4f})")
    cse = np.asarray(cos_static_encoder, np.float64)
    ax = axes[0, 2]
    if np.isfinite(cse).any():
        sns.histplot(cse[np.isfinite(cse)], bins=100, ax=ax, color="darkorange")
        ax.set(xlabel="cosine(static, encoder) per entry", ylabel="entries",
               title=f"cosine(static, encoder), mean={np.nanmean(cse):.3f}")
    else:
        ax.text(0.5, 0.5, "static and encoder widths differ", ha="center", va="center", transform=ax.transAxes)
        ax.set(xticks=[], yticks=[], xlabel="cosine(static, encoder) per entry", ylabel="entries",
               title="cosine(static, encoder): not defined")
    vs, ve = np.asarray(vol_static, np.float64), np.asarray(vol_enc, np.float64)
    both = np.isfinite(vs) & np.isfinite(ve)
    ax = axes[1, 0]
    ax.scatter(vs[both], ve[both], alpha=0.3, s=5, color="purple")
    ax.set(xlabel="static volume", ylabel="encoder volume", title=f"Pentachoron volumes (r={vol_corr:.4f})")
    ax = axes[1, 1]
    if decay:
        d = [r["depth"] for r in decay]
        ax.plot(d, [r["static_cos"] for r in decay], "o-", label="static", color=STATIC)
        ax.plot(d, [r["encoder_cos"] for r in decay], "s-", label="encoder", color=ENCODER)
        ax.legend()
    ax.set(xlabel="hypernym chain depth", ylabel="mean cosine to start", title="Hypernym chain cosine decay")
    ax = axes[1, 2]
    top = list(lexnames)[:15]
    y = np.arange(len(top))
    ax.barh(y - 0.15, [r["static_intra"] for r in top], 0.3, label="static", color=STATIC, alpha=0.7)
    ax.barh(y + 0.15, [r["encoder_intra"] for r in top], 0.3, label="encoder", color=ENCODER, alpha=0.7)
    ax.set_yticks(y, [r["lexname"][:18] for r in top])
    ax.invert_yaxis()
    ax.set(xlabel="mean intra-category cosine", title="Intra-category cosine by WordNet lexname")
    if top:
        ax.legend()
    fig.tight_layout()
    return fig


def interval_forest(rows: pd.DataFrame, *, title: str, xlabel: str, zero_line: bool = True) -> Figure:
    """Each metric's value with its 95 % interval, one marker per battery (model and nulls).

    Parameters
    ----------
    rows : DataFrame
        Columns ``metric``, ``battery``, ``value``, ``lo``, ``hi`` (``tables.interval_rows``);
        metrics are drawn top to bottom in order of appearance, batteries side by side.
    title, xlabel : str
        Axis title and x label.
    zero_line : bool
        Draw x = 0.

    Returns
    -------
    matplotlib.figure.Figure
        One axis titled ``title``, x label ``xlabel``, y label "metric", a legend of batteries.
    """
    metrics = list(dict.fromkeys(rows["metric"]))
    batteries = list(dict.fromkeys(rows["battery"]))
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.2 * max(len(metrics), 1) * max(len(batteries), 1)))
    palette = sns.color_palette("deep", len(batteries))
    step = 0.7 / max(len(batteries), 1)
    for b, (name, color) in enumerate(zip(batteries, palette)):
        sel = rows[rows["battery"] == name]
        y = np.array([metrics.index(m) for m in sel["metric"]], dtype=np.float64) + (b - (len(batteries) - 1) / 2) * step
        v, lo, hi = (sel[c].to_numpy(np.float64) for c in ("value", "lo", "hi"))
        err = np.vstack([np.where(np.isfinite(lo), v - lo, 0), np.where(np.isfinite(hi), hi - v, 0)])
        ax.errorbar(v, y, xerr=np.clip(err, 0, None), fmt="o", color=color, label=name, capsize=3, ms=5)
    if zero_line:
        ax.axvline(0, color="k", lw=0.6)
    ax.set_yticks(range(len(metrics)), metrics)
    ax.set_ylim(len(metrics) - 0.5, -0.5)
    ax.set(xlabel=xlabel, ylabel="metric", title=title)
    if batteries:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", title="battery")
    fig.tight_layout()
    return fig


def distance_bands(bands: Sequence[Mapping], *, title: str) -> Figure:
    """Mean static and encoder cosine per WordNet path-similarity band (``band_table`` rows).

    Returns
    -------
    matplotlib.figure.Figure
        One axis titled ``title``, x label "WordNet path-similarity band", y label "mean
        pair cosine", bars for static and encoder, each band's pair count above it.
    """
    fig, ax = plt.subplots(figsize=(8, 4.5))
    rows = list(bands)[::-1]  # low similarity on the left
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["static_cos"] for r in rows], 0.4, label="static", color=STATIC, alpha=0.8)
    ax.bar(x + 0.2, [r["encoder_cos"] for r in rows], 0.4, label="encoder", color=ENCODER, alpha=0.8)
    for xi, r in zip(x, rows):
        ax.annotate(f"n={r['n']}", (xi, max(r["static_cos"], r["encoder_cos"], 0)), ha="center", va="bottom",
                    fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, [r["band"] for r in rows])
    ax.axhline(0, color="k", lw=0.6)
    ax.set(xlabel="WordNet path-similarity band", ylabel="mean pair cosine", title=title)
    if rows:
        ax.legend()
    fig.tight_layout()
    return fig


def seed_stability(per_seed: Sequence[Mapping], per_seed_null: Sequence[Mapping], keys: Sequence[str], *,
                   title: str) -> Figure:
    """Per-seed values of the battery's metrics, model beside the shuffled-synset null.

    Parameters
    ----------
    per_seed, per_seed_null : list of dict
        ``seed_battery`` results (the null's lacks the metrics it does not change).
    keys : list of str
        Metrics drawn, in order.

    Returns
    -------
    matplotlib.figure.Figure
        One axis titled ``title``, x label "metric", y label "value per seed".
    """
    long = pd.DataFrame([{"metric": k, "value": r[k], "battery": battery}
                         for battery, rows in (("model", per_seed), ("shuffled null", per_seed_null))
                         for r in rows for k in keys if k in r])
    fig, ax = plt.subplots(figsize=(12, 5))
    if len(long):
        sns.stripplot(data=long, x="metric", y="value", hue="battery", dodge=True, ax=ax, size=4, order=list(keys))
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="metric", ylabel="value per seed", title=title)
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    return fig
