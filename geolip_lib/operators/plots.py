"""Figures of notebook 06 (per-head QK operators) and notebook 07 (cross-scale projection).

Every function takes data and returns a :class:`matplotlib.figure.Figure`; the notebook
shows and saves it with ``job.figure(fig, name)``. Nothing here calls ``plt.show``.

Notebook 06 functions take the :func:`~geolip_lib.operators.analyse` dicts of the trained
model (``analyses``: ``{group: analysis}``) and of the same architecture at random init
(``null``: ``{group: analysis}``, possibly empty). Notebook 07 functions
(:func:`heldout_cosine`, :func:`projection_summary`) take the arrays that
:mod:`geolip_lib.procrustes` computes.
"""
from __future__ import annotations

from typing import Any, Mapping

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = ["cosine_matrices", "spectral_vs_operator", "sign_agreement", "principal_angles", "heldout_cosine",
           "projection_summary"]



def _group_rows(n_groups: int, width: float, row_height: float):
    """One row of two axes per attention group; with no group, one empty axis saying so."""
    fig, axes = plt.subplots(max(n_groups, 1), 2, figsize=(width, row_height * max(n_groups, 1)), squeeze=False)
    if not n_groups:
        axes[0, 1].remove()
        axes[0, 0].set_axis_off()
        axes[0, 0].set_title("no attention group measured")
    return fig, axes

def _arr(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)


def _sign_k(a: dict, top_k: int) -> int | None:
    """The largest measured sign-agreement k not above ``top_k`` (the smallest one otherwise)."""
    ks = sorted(a["sign_agreement"])
    if not ks:
        return None
    below = [k for k in ks if k <= top_k]
    return below[-1] if below else ks[0]


# ------------------------------------------------------------------ notebook 06
def cosine_matrices(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> Figure:
    """Layer × layer operator cosine (mean over heads), one row per group: trained | random init.

    Parameters
    ----------
    analyses, null : dict
        ``{group: analysis}`` of the trained model and of the random-init null (a group
        missing from ``null`` leaves its right panel empty).

    Returns
    -------
    matplotlib.figure.Figure
        ``2 × n_groups`` axes (one when there is no group), titled ``"<group> · trained"`` and
        ``"<group> · random init"``, axes labelled "layer", suptitle "Operator cosine between
        layers (mean over heads): trained vs random init".
    """
    fig, axes = _group_rows(len(analyses), 10, 4.2)
    if not analyses:
        return fig
    for i, (g, a) in enumerate(analyses.items()):
        for j, (an, tag) in enumerate([(a, "trained"), (null.get(g), "random init")]):
            ax = axes[i, j]
            if an is None:
                ax.set_axis_off()
                ax.set_title(f"{g} · {tag}: not measured")
                continue
            sns.heatmap(_arr(an["cos_matrix"]), ax=ax, cmap="RdBu_r", vmin=-1, vmax=1, square=True,
                        xticklabels=an["layers"], yticklabels=an["layers"], cbar_kws={"shrink": 0.7})
            ax.set_title(f"{g} · {tag}")
            ax.set_xlabel("layer")
            ax.set_ylabel("layer")
    fig.suptitle("Operator cosine between layers (mean over heads): trained vs random init")
    fig.tight_layout()
    return fig


def spectral_vs_operator(analyses: Mapping[str, dict], null: Mapping[str, dict]) -> Figure:
    """Seed 004's question: operator cosine vs spectral cosine across layers, one row per group.

    Left: cosine of each layer to the anchor (means over heads), operator (circles) and
    spectral (squares), trained (solid) vs random init (dashed). Right: every distinct layer
    pair, operator cosine (x) against spectral cosine (y), trained vs random init, with the
    diagonal; points above it are pairs whose sorted spectra agree more than their operators.

    Parameters
    ----------
    analyses, null : dict
        ``{group: analysis}`` (trained, random init); each analysis has ``"spectral"``.

    Returns
    -------
    matplotlib.figure.Figure
        ``n_groups × 2`` axes titled "<group> · cosine to the anchor" and "<group> · all
        layer pairs"; suptitle "Operator cosine vs spectral cosine (sorted eigenvalues of the
        symmetric part) between layers".
    """
    fig, axes = _group_rows(len(analyses), 11, 3.8)
    if not analyses:
        return fig
    c_op, c_sp = sns.color_palette("deep", 2)
    for i, (g, a) in enumerate(analyses.items()):
        ax, bx = axes[i]
        for an, tag, ls, alpha in ((a, "trained", "-", 1.0), (null.get(g), "random init", "--", 0.6)):
            if an is None:
                continue
            ax.plot(a["layers"], _arr(an["cos_to_anchor"]), "o" + ls, color=c_op, alpha=alpha, label=f"operator, {tag}")
            ax.plot(a["layers"], _arr(an["spectral"]["cos_to_anchor"]), "s" + ls, color=c_sp, alpha=alpha,
                    label=f"spectral, {tag}")
            iu = np.triu_indices(len(a["layers"]), k=1)
            bx.scatter(_arr(an["cos_matrix"])[iu], _arr(an["spectral"]["cos_matrix"])[iu], s=14, alpha=0.7 * alpha,
                       marker="o" if tag == "trained" else "x", color="k" if tag == "trained" else "grey", label=tag)
        ax.axvline(a["anchor_layer"], color="grey", ls=":", lw=1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(title=f"{g} · cosine to the anchor (layer {a['anchor_layer']})", xlabel="layer",
               ylabel="cosine (mean over heads)")
        lo = min(-0.05, *(float(np.nanmin(_arr(x["cos_matrix"]))) for x in (a, null.get(g)) if x is not None))
        bx.plot([lo, 1], [lo, 1], color="grey", lw=0.8, ls=":", label="spectral = operator")
        bx.set(title=f"{g} · all layer pairs", xlabel="operator cosine", ylabel="spectral cosine")
        for axis in (ax, bx):
            if axis.get_legend_handles_labels()[0]:
                axis.legend(fontsize=7, loc="best")
    fig.suptitle("Operator cosine vs spectral cosine (sorted eigenvalues of the symmetric part) between layers")
    fig.tight_layout()
    return fig


def sign_agreement(analyses: Mapping[str, dict], null: Mapping[str, dict], top_k: int) -> Figure:
    """Top-k curvature-sign agreement with the anchor by depth (left) and the fraction of
    positive eigenvalues per layer (right), trained (solid) vs random init (dashed).

    Parameters
    ----------
    analyses, null : dict
        ``{group: analysis}`` (trained, random init).
    top_k : int
        The sign agreement shown is the largest measured k not above ``top_k``.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes titled "sign agreement with anchor, by depth" and "fraction of positive
        eigenvalues (dotted: all 2·head_dim, 0.5 per head by shape)"; x label "layer". The
        dotted 0.5 is forced per head (part 1 of
        :data:`geolip_lib.weights.spectral.QK_BALANCE_STATEMENT`); it says nothing about the
        seed's layer-level balance.
    """
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    palette = dict(zip(analyses, sns.color_palette("deep", max(len(analyses), 1))))
    for g, a in analyses.items():
        c = palette[g]
        k = _sign_k(a, top_k)
        if k is not None:
            axes[0].plot(a["layers"], _arr(a["sign_agreement"][k]["per_layer"]), "o-", color=c, label=f"{g} (top-{k})")
            if g in null and k in null[g]["sign_agreement"]:
                axes[0].plot(a["layers"], _arr(null[g]["sign_agreement"][k]["per_layer"]), "x--", color=c, alpha=0.6,
                             label=f"{g} random init")
        axes[1].plot(a["layers"], _arr(a["frac_positive_topk"]), "o-", color=c, label=f"{g} top-{a['frac_positive_k']}")
        axes[1].plot(a["layers"], _arr(a["frac_positive"]), "k:", alpha=0.5)
    axes[0].axhline(0.5, color="grey", lw=0.8)
    axes[0].set(title="sign agreement with anchor, by depth", xlabel="layer", ylabel="fraction agreeing")
    axes[1].set(title="fraction of positive eigenvalues (dotted: all 2·head_dim, 0.5 per head by shape)",
                xlabel="layer", ylabel="fraction > 0")
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def principal_angles(analyses: Mapping[str, dict], null: Mapping[str, dict], top_k: int) -> Figure:
    """Mean principal angle between each layer's top-k eigen-subspace and the anchor's, by
    layer, trained (solid) vs random init (dashed); 90° = orthogonal subspaces, 0° at the
    anchor itself (dotted line).

    Parameters
    ----------
    analyses, null : dict
        ``{group: analysis}`` (trained, random init).
    top_k : int
        The subspace size (for the title).

    Returns
    -------
    matplotlib.figure.Figure
        One axis titled "top-<k> eigen-subspace principal angles to the anchor", x label
        "layer", y label "mean angle (deg)".
    """
    fig, ax = plt.subplots(figsize=(7, 4))
    palette = dict(zip(analyses, sns.color_palette("deep", max(len(analyses), 1))))
    for g, a in analyses.items():
        ax.plot(a["layers"], _arr(a["principal_angles"]["mean_deg"]), "o-", color=palette[g], label=g)
        if g in null:
            ax.plot(a["layers"], _arr(null[g]["principal_angles"]["mean_deg"]), "x--", color=palette[g], alpha=0.6,
                    label=f"{g} random init")
    ax.axhline(90, color="grey", lw=0.8)
    for L in sorted({a["anchor_layer"] for a in analyses.values()}):
        ax.axvline(L, color="grey", ls=":", lw=1, label=f"anchor (layer {L})")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if analyses:
        ax.legend(fontsize=8)
    ax.set(title=f"top-{top_k} eigen-subspace principal angles to the anchor", xlabel="layer",
           ylabel="mean angle (deg)")
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ notebook 07
def _cosine_hist(ax: Any, cos: np.ndarray, cos_null: np.ndarray | None, interval: Any = None) -> None:
    sns.histplot(cos, bins=60, ax=ax, color="steelblue", stat="density", label="held-out")
    if cos_null is not None:
        sns.histplot(cos_null, bins=60, ax=ax, color="grey", stat="density", alpha=0.4, label="shuffled pairing")
    m = float(np.mean(cos))
    ax.axvline(m, color="red", ls="--", label=f"mean={m:.3f}")
    if interval is not None and np.isfinite(getattr(interval, "lo", np.nan)):
        ax.axvspan(interval.lo, interval.hi, color="red", alpha=0.15, label="95 % interval of the mean")
    ax.set(title="per-token cosine(native, projected)", xlabel="cosine", ylabel="density")
    ax.legend(fontsize=8)


def heldout_cosine(cos: Any, cos_null: Any = None, interval: Any = None) -> Figure:
    """Distribution of the per-token cosine between native and aligned embeddings (held-out
    tokens), beside the shuffled-pairing null.

    Parameters
    ----------
    cos : array, shape (n,)
        Held-out per-token cosines.
    cos_null : array, shape (m,), optional
        The same under the shuffled pairing.
    interval : Interval, optional
        95 % interval of the mean, drawn as a band.

    Returns
    -------
    matplotlib.figure.Figure
        One axis titled "per-token cosine(native, projected), held-out tokens", x label
        "cosine", y label "density".
    """
    fig, ax = plt.subplots(figsize=(7, 4))
    _cosine_hist(ax, np.asarray(cos, float), None if cos_null is None else np.asarray(cos_null, float), interval)
    ax.set_title("per-token cosine(native, projected), held-out tokens")
    fig.tight_layout()
    return fig


def projection_summary(*, name_large: str, name_small: str, cos: Any, cos_null: Any, rel_a: Any, rel_b: Any,
                       rel_r: float, digit_diff: Any, digit_r: float | None, vol_a: Any, vol_b: Any,
                       vol_corr: float, vol_ratio: float, all_cos: Any, residual_eigs: Any,
                       max_points: int = 5000) -> Figure:
    """The seed's 2 × 3 figure of a PCA + Procrustes projection (seed 001 §13b).

    Parameters
    ----------
    name_large, name_small : str
        The projected (wider) and the target (narrower) model.
    cos, cos_null : array
        Held-out per-token cosines, and under the shuffled pairing.
    rel_a, rel_b : array
        Pairwise cosines of held-out tokens in the native small space and the projection.
    rel_r : float
        Their Pearson correlation.
    digit_diff : array (10, 10) or None
        Digit pairwise cosines, native − projected (None: digits are not single tokens).
    digit_r : float or None
    vol_a, vol_b : array
        Pentachoron volumes, native and projected (the same vertex sets).
    vol_corr, vol_ratio : float
    all_cos : array, shape (V,)
        Per-token cosine over the whole vocabulary (anchors included).
    residual_eigs : array
        Eigenvalues (descending) of the held-out residual ``native − projected``.
    max_points : int
        At most this many tokens in the cosine-vs-token-id scatter (every k-th token).

    Returns
    -------
    matplotlib.figure.Figure
        Six axes with a suptitle "<large> → <small>: PCA + Procrustes projection".
    """
    fig, axes = plt.subplots(2, 3, figsize=(18, 10))
    fig.suptitle(f"{name_large} → {name_small}: PCA + Procrustes projection", fontsize=14)
    _cosine_hist(axes[0, 0], np.asarray(cos, float), np.asarray(cos_null, float))
    ax = axes[0, 1]
    rel_a, rel_b = np.asarray(rel_a, float), np.asarray(rel_b, float)
    ax.scatter(rel_a, rel_b, s=1, alpha=0.05, color="darkgreen", rasterized=True)
    if rel_a.size:
        lo, hi = float(rel_a.min()), float(rel_a.max())
        ax.plot([lo, hi], [lo, hi], "r--", alpha=0.5)
    ax.set(xlabel=f"native {name_small} pairwise cosine", ylabel=f"projected {name_large} pairwise cosine",
           title=f"relational structure (r={rel_r:.4f})")
    ax = axes[0, 2]
    if digit_diff is not None:
        sns.heatmap(np.asarray(digit_diff, float), ax=ax, cmap="RdBu_r", center=0, square=True,
                    cbar_kws={"shrink": 0.7})
        ax.set(title=f"digit cosine diff, native − projected (r={digit_r:.3f})", xlabel="digit", ylabel="digit")
    else:
        ax.set_axis_off()
        ax.set_title("digits: not single tokens")
    ax = axes[1, 0]
    vol_a, vol_b = np.asarray(vol_a, float), np.asarray(vol_b, float)
    ax.scatter(vol_a, vol_b, s=5, alpha=0.3, color="purple", rasterized=True)
    if vol_a.size:
        lo_, hi_ = float(min(vol_a.min(), vol_b.min())), float(max(vol_a.max(), vol_b.max()))
        ax.plot([lo_, hi_], [lo_, hi_], "r--", alpha=0.5)
        ax.set(xscale="log", yscale="log")  # volumes scale as s^4: log axes keep both visible
    ax.set(xlabel=f"native {name_small} volume", ylabel=f"projected {name_large} volume",
           title=f"pentachoron volumes (r={vol_corr:.4f}, ratio={vol_ratio:.3g})")
    ax = axes[1, 1]
    all_cos = np.asarray(all_cos, float)
    step = max(1, len(all_cos) // max_points)
    ax.scatter(np.arange(0, len(all_cos), step), all_cos[::step], s=1, alpha=0.3, color="darkorange", rasterized=True)
    ax.axhline(float(all_cos.mean()), color="red", ls="--", alpha=0.5)
    ax.set(xlabel="token id", ylabel="cosine alignment", title="alignment vs token id (anchors included)")
    ax = axes[1, 2]
    ev = np.asarray(residual_eigs, float)[:200]
    ax.semilogy(np.arange(len(ev)), np.maximum(ev, 1e-300), color="crimson")
    ax.set(xlabel="component", ylabel="variance", title="eigenspectrum of residual (native − projected)")
    fig.tight_layout()
    return fig
