"""Figures of the modulator notebooks (08 pipeline, 09 training, 10 alpha sweep, 11 field).

Every function takes data and returns a :class:`matplotlib.figure.Figure`; the notebook
shows and saves it with ``job.figure(fig, name)``. Nothing here calls ``plt.show``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

__all__ = ["pipeline_summary", "distance_bands", "correlation_intervals", "training_summary", "lift_intervals",
           "alpha_sweep", "phase_boundary", "field_summary"]

GOLDEN_ALPHA = 0.29154  # the seed's constant (mirrors modulators.GOLDEN_ALPHA; no import cycle)


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)


# ------------------------------------------------------------------ notebook 08
def pipeline_summary(eigenvalues: Any, n_geo: int, similarity: Any, anchor_geo: Any, recon_corr: float,
                     alignment_cos: Any) -> Figure:
    """The Procrustes pipeline in three panels: the anchors' WordNet spectrum, how well the
    eigen-embedding reproduces the matrix, and the Procrustes alignment of the anchors.

    Parameters
    ----------
    eigenvalues : (A,) array
        Eigenvalues of the anchors' similarity matrix, descending.
    n_geo : int
        Eigenpairs kept (marked).
    similarity : (A, A) array
        The anchors' WordNet similarity matrix.
    anchor_geo : (A, n_geo) array
        Unit eigen-embedding of the anchors (its cosines approximate ``similarity``).
    recon_corr : float
        Upper-triangle Pearson r of ``similarity`` and the embedding's cosines.
    alignment_cos : (A,) array
        Per-anchor cosine after the Procrustes rotation.

    Returns
    -------
    Figure with three axes.
    """
    ev, S, G = _arr(eigenvalues), _arr(similarity), _arr(anchor_geo)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    k = min(len(ev), 4 * n_geo)
    axes[0].plot(np.arange(1, k + 1), ev[:k], marker=".")
    axes[0].axvline(n_geo, color="red", ls="--", label=f"N_GEO={n_geo}")
    axes[0].set(title="Wu–Palmer eigenvalues (anchors)", xlabel="rank", ylabel="eigenvalue")
    axes[0].legend()
    iu = np.triu_indices(len(S), 1)
    axes[1].hexbin(S[iu], (G @ G.T)[iu], gridsize=40, cmap="viridis", mincnt=1)
    axes[1].set(title=f"reconstruction r = {recon_corr:.3f}", xlabel="Wu–Palmer similarity",
                ylabel="cosine of eigen-embedding")
    sns.histplot(_arr(alignment_cos), ax=axes[2], bins=30)
    axes[2].set(title="Procrustes alignment cosine (anchors)", xlabel="cosine", ylabel="anchors")
    fig.suptitle("Procrustes pipeline: WordNet spectrum, reconstruction, alignment")
    fig.tight_layout()
    return fig


def distance_bands(relational: Mapping[str, Any], names: Sequence[str], similarity_kind: str = "path") -> Figure:
    """Mean cosine of each representation per WordNet-similarity band (bars).

    Parameters
    ----------
    relational : dict
        :func:`~geolip_lib.modulators.relational_comparison` output (``n_pairs`` and per
        name a ``bands`` list of ``{lo, hi, n, mean_cos}``).
    names : sequence of str
        Representations to draw (keys of ``relational``).
    similarity_kind : str
        WordNet similarity of the comparison (axis label).

    Returns
    -------
    Figure with one axis.
    """
    rows = [{"representation": k, "band": f"[{b['lo']:.2f}, {b['hi']:.2f}]", "mean_cos": b["mean_cos"]}
            for k in names for b in relational[k]["bands"]]
    df = pd.DataFrame(rows).dropna()
    fig, ax = plt.subplots(figsize=(9, 4))
    if len(df):
        sns.barplot(data=df, x="band", y="mean_cos", hue="representation", ax=ax)
    ax.set(title=f"Mean cosine per WordNet {similarity_kind}-similarity band ({relational['n_pairs']} pairs)",
           xlabel=f"{similarity_kind} similarity band", ylabel="mean cosine")
    fig.tight_layout()
    return fig


def correlation_intervals(table: pd.DataFrame, reference: str | None = "Original",
                          similarity_kind: str = "path") -> Figure:
    """Pearson r of each representation with WordNet, with its 95 % interval (points and bars).

    Parameters
    ----------
    table : DataFrame
        Indexed by representation, with columns ``pearson``, ``lo``, ``hi``.
    reference : str, optional
        Row drawn as a vertical reference line (the unmodulated model).
    similarity_kind : str

    Returns
    -------
    Figure with one axis.
    """
    t = table.iloc[::-1]
    y = np.arange(len(t))
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(t) + 1.6))
    err = np.vstack([t["pearson"] - t["lo"], t["hi"] - t["pearson"]]).clip(min=0)
    ax.errorbar(t["pearson"], y, xerr=err, fmt="o", capsize=4, color="C0")
    if reference is not None and reference in t.index:
        ax.axvline(float(t.loc[reference, "pearson"]), color="grey", ls="--", lw=1, label=f"{reference}")
        ax.legend(loc="best")
    ax.set_yticks(y, list(t.index))
    ax.set(title=f"Pearson r with WordNet {similarity_kind} similarity (95 % intervals)", xlabel="Pearson r",
           ylabel="representation")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ notebook 09
def training_summary(alpha_history: Any, loss_history: Sequence[float], val_history: Sequence[Mapping],
                     final_alpha: Any) -> Figure:
    """Alpha per layer over the steps, the training/validation loss, the final alphas.

    Parameters
    ----------
    alpha_history : (steps + 1, n_layers) array
        Alpha of every layer before the first step and after each step.
    loss_history : sequence of float
        Training loss per step.
    val_history : sequence of dict
        ``{"step", "loss"}`` per validation pass.
    final_alpha : (n_layers,) array

    Returns
    -------
    Figure with three axes.
    """
    A, fa = _arr(alpha_history), _arr(final_alpha)
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    for layer in range(A.shape[1]):
        axes[0].plot(A[:, layer], label=f"L{layer}")
    axes[0].axhline(GOLDEN_ALPHA, color="red", ls="--", label=f"{GOLDEN_ALPHA}")
    axes[0].set(title="alpha per layer", xlabel="step", ylabel="alpha")
    axes[0].legend(fontsize=7)
    axes[1].plot(list(loss_history), label="train (per step)")
    axes[1].plot([v["step"] for v in val_history], [v["loss"] for v in val_history], "o-", label="val")
    axes[1].set(title="loss", xlabel="step", ylabel="loss")
    axes[1].legend()
    axes[2].bar(range(len(fa)), fa, color="teal")
    axes[2].set_xticks(range(len(fa)))
    axes[2].axhline(GOLDEN_ALPHA, color="red", ls="--")
    axes[2].set(title="final alpha per layer", xlabel="layer", ylabel="alpha")
    fig.suptitle("Modulator training: alpha and loss")
    fig.tight_layout()
    return fig


def lift_intervals(frame: pd.DataFrame, seed_values: Mapping[str, float] | None = None) -> Figure:
    """Relative lift of the modulated over the unmodulated correlation, with 95 % intervals,
    one panel per correlation kind, one row per (training run, pair definition), beside the
    seed's reported lift and zero.

    Parameters
    ----------
    frame : DataFrame
        :func:`geolip_lib.modulators.stats.lift_frame` output (columns ``training``, ``pairs``,
        ``<kind>_lift``, ``<kind>_lo``, ``<kind>_hi``).
    seed_values : dict kind -> float, optional
        The seed's lift (fractions; drawn as a red dashed line).

    Returns
    -------
    Figure with one axis per kind present.
    """
    kinds = [k for k in ("pearson", "spearman") if f"{k}_lift" in frame]
    labels = [f"{t}\n{p}" for t, p in zip(frame["training"], frame["pairs"])]
    y = np.arange(len(frame))[::-1]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.5 * len(kinds), 0.7 * len(frame) + 1.8), sharey=True,
                             squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        v = 100 * frame[f"{kind}_lift"].to_numpy(dtype=float)
        lo, hi = 100 * frame[f"{kind}_lo"].to_numpy(dtype=float), 100 * frame[f"{kind}_hi"].to_numpy(dtype=float)
        ax.errorbar(v, y, xerr=np.vstack([v - lo, hi - v]).clip(min=0), fmt="o", capsize=4, color="C0",
                    label="measured [95 %]")
        ax.axvline(0, color="grey", lw=1, label="no lift")
        if seed_values and kind in seed_values:
            ax.axvline(100 * seed_values[kind], color="red", ls="--", label=f"seed {100 * seed_values[kind]:+.0f} %")
        ax.set(title=f"{kind.capitalize()} lift (mod − orig) / |orig|", xlabel="lift (%)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3, fontsize=8, frameon=False)
    axes[0][0].set_yticks(y, labels, fontsize=8)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ notebook 10
def alpha_sweep(sweep: pd.DataFrame) -> Figure:
    """Pearson with WordNet, gradient and per-token preservation against static alpha.

    Parameters
    ----------
    sweep : DataFrame
        Indexed by alpha, with columns ``pearson``, ``gradient``, ``preservation`` and the
        interval columns ``pearson_lo/_hi``, ``preservation_lo/_hi`` (drawn as bands when
        present).

    Returns
    -------
    Figure with three axes.
    """
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    x = np.asarray(sweep.index, dtype=np.float64)
    for ax, col in zip(axes, ("pearson", "gradient", "preservation")):
        ax.plot(x, sweep[col], marker="o")
        if f"{col}_lo" in sweep:
            ax.fill_between(x, sweep[f"{col}_lo"], sweep[f"{col}_hi"], alpha=0.25, label="95 % interval")
        ax.axvline(GOLDEN_ALPHA, color="red", ls="--", label=f"{GOLDEN_ALPHA}")
        ax.set(title=col, xlabel="alpha", ylabel=col)
        ax.legend()
    fig.suptitle("Static alpha sweep")
    fig.tight_layout()
    return fig


def phase_boundary(sweep: Mapping[str, Any], result: Mapping[str, Any], quantity: str = "pearson",
                   seed_value: float = GOLDEN_ALPHA, second: str | None = "preservation") -> Figure:
    """The phase-boundary measurement: each seed's curve, the seed mean with its standard
    error, the fitted two-segment curve, the located breakpoint with its interval (or, when
    the test finds no change, the best breakpoint drawn dotted and labelled so), the
    no-change model's fit, and the seed's constant as a labelled reference line.

    Parameters
    ----------
    sweep : dict
        :func:`geolip_lib.modulators.phase.phase_sweep` output (``alphas``, ``seeds`` and an
        (S, G) array per quantity).
    result : dict
        :func:`geolip_lib.metrics.changepoint.locate` output for ``quantity`` (``found``,
        ``location``, ``interval``, ``p_value`` and ``fit`` with ``x``, ``mean``, ``sem``,
        ``curve_x``, ``curve_y``, ``breakpoint`` and, when present, ``null_fit``/``null``).
    quantity : str
        The located quantity (left panel).
    seed_value : float
        The seed's constant (red dashed line).
    second : str, optional
        Another quantity of ``sweep`` drawn per seed in a right panel (no change point fitted).

    Returns
    -------
    Figure with one or two axes.
    """
    x = _arr(sweep["alphas"])
    fit = result.get("fit") or {}
    n = 1 + (second is not None and second in sweep)
    fig, axes = plt.subplots(1, n, figsize=(7.5 * n, 4.6), squeeze=False)
    ax = axes[0][0]
    Y = _arr(sweep[quantity])
    for k, s in enumerate(sweep["seeds"]):
        ax.plot(x, Y[k], color="grey", lw=0.8, alpha=0.6, label="one seed" if k == 0 else None)
    mean, sem = _arr(fit.get("mean", np.nanmean(Y, 0))), _arr(fit.get("sem", np.full(len(x), np.nan)))
    ax.errorbar(x, mean, yerr=np.nan_to_num(sem), fmt="o", ms=4, color="C0", capsize=2, label="seed mean ± s.e.")
    if "curve_x" in fit:
        ax.plot(fit["curve_x"], fit["curve_y"], color="C1", lw=1.5, label="fit with a kink")
    if "null_fit" in fit:
        ax.plot(x, fit["null_fit"], color="C2", lw=1, ls="--", label=f"no-change fit ({fit.get('null', 'line')})")
    if result.get("found"):
        iv = result["interval"]
        lo, hi = (iv.lo, iv.hi) if hasattr(iv, "lo") else (iv["lo"], iv["hi"])
        ax.axvspan(lo, hi, color="C1", alpha=0.15, label="breakpoint 95 % interval")
        ax.axvline(result["location"], color="C1", ls="-", lw=1.2,
                   label=f"change point {result['location']:.3f} (p = {result['p_value']:.2g})")
    elif fit.get("breakpoint") is not None:
        ax.axvline(fit["breakpoint"], color="C1", ls=":", lw=1.2,
                   label=f"best breakpoint {fit['breakpoint']:.3f}, not significant (p = {result['p_value']:.2g})")
    ax.axvline(seed_value, color="red", ls="--", lw=1, label=f"seed's constant {seed_value} (reference)")
    ax.set(title=f"{quantity} vs static alpha: change point over {len(sweep['seeds'])} seeds", xlabel="alpha",
           ylabel=quantity)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    if n == 2:
        ax2 = axes[0][1]
        Y2 = _arr(sweep[second])
        for k in range(Y2.shape[0]):
            ax2.plot(x, Y2[k], color="grey", lw=0.8, alpha=0.6)
        ax2.plot(x, np.nanmean(Y2, 0), "o-", ms=4, color="C0", label="seed mean")
        ax2.axvline(seed_value, color="red", ls="--", lw=1, label=f"seed's constant {seed_value}")
        ax2.set(title=f"{second} vs static alpha (each seed)", xlabel="alpha", ylabel=second)
        ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ notebook 11
def field_summary(cv_history: Sequence[Mapping], cv_target: float, cv_tolerance: float, alphas: Any,
                  expert_ks: Sequence[int], loss_history: Sequence[float]) -> Figure:
    """Field modulator training: CV checks against the band, final alphas, training loss.

    Parameters
    ----------
    cv_history : sequence of dict
        ``{"step", "cv"}`` per CV check.
    cv_target, cv_tolerance : float
        The band ``cv_target ± cv_tolerance`` (shaded).
    alphas : (n_layers, n_experts) array
        Final alpha of each (layer, expert).
    expert_ks : sequence of int
        Simplex order of each expert (column labels).
    loss_history : sequence of float

    Returns
    -------
    Figure with three axes.
    """
    cvh = pd.DataFrame(list(cv_history))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    if len(cvh):
        axes[0].plot(cvh["step"], cvh["cv"], "o-")
    axes[0].axhspan(cv_target - cv_tolerance, cv_target + cv_tolerance, color="green", alpha=0.15, label="band")
    axes[0].set(title="pentachoron CV (active dims)", xlabel="step", ylabel="CV")
    axes[0].legend()
    sns.heatmap(_arr(alphas), annot=True, fmt=".3f", ax=axes[1], xticklabels=[f"k{k}" for k in expert_ks],
                cbar=False)
    axes[1].set(title="final alpha (layer × expert)", xlabel="expert", ylabel="layer")
    axes[2].plot(list(loss_history))
    axes[2].set(title="training loss", xlabel="step", ylabel="loss")
    fig.suptitle("Geometric field modulator: CV band, alphas, loss")
    fig.tight_layout()
    return fig
