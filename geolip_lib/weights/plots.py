"""Figures of the weight battery (notebooks 02 and 03).

- :func:`battery_panel`: the seed's 3×3 panel of one stack, from a ``BatteryResult``;
- :func:`random_init_comparison`: trained weights beside the same architecture at random
  initialisation (sparsity per role, stable rank per matrix, adjacent-layer cosines);
- :func:`cross_model`: the cross-model bars of notebook 03, from its measured table.

Every function takes data and returns a :class:`matplotlib.figure.Figure`.
"""
from __future__ import annotations

from typing import Optional

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from .tables import adjacent_pairs

__all__ = ["battery_panel", "random_init_comparison", "cross_model"]

ROLE_ORDER = ["q", "k", "v", "o", "mlp_in", "mlp_gate", "mlp_out", "embed"]


def _empty(a, msg: str) -> None:
    a.text(0.5, 0.5, msg, ha="center", va="center", transform=a.transAxes, fontsize=9, color="gray")
    a.set_xticks([])
    a.set_yticks([])


def _first_stack(res) -> str | None:
    st = res.catalog.stacks()
    return st[0] if st else None


def battery_panel(res, title: str = "", stack: str | None = None):
    """The seed's 3×3 figure for one stack (default: the first stack of the model).

    Parameters
    ----------
    res : BatteryResult
        What :func:`geolip_lib.weights.run_battery` measured.
    title : str
        Prefix of the figure title (the model name).
    stack : str, optional
        "encoder", "decoder", "vision", ...; default the catalog's first stack.

    Returns
    -------
    matplotlib.figure.Figure
        Panels: normalised singular-value spectra; stable rank by layer; log10|w|
        histogram; QK symmetric-part eigenvalues by layer; MLP neuron importance;
        cross-layer Q cosine; norm scales; position bias (heads × buckets); log10
        condition number by layer. A panel whose data the model lacks says so.
    """
    stack = stack or _first_stack(res)
    fig, ax = plt.subplots(3, 3, figsize=(16, 13))
    fig.suptitle(f"{title} — inactive weight geometry ({stack})", fontsize=13)
    svd = res.svd[res.svd["stack"] == stack] if not res.svd.empty else res.svd

    empty = _empty
    # 1 spectra
    a = ax[0, 0]
    pal = dict(zip(["q", "k", "v", "o", "mlp_in", "mlp_gate", "mlp_out"], sns.color_palette("deep", 7)))
    shown = False
    for role in ("q", "mlp_in", "mlp_out"):
        for i, (_, r) in enumerate(svd[svd["role"] == role].iterrows()):
            s = res.spectra.get(r["name"])
            if s is not None and s[0] > 0:
                a.semilogy(s / s[0], color=pal[role], alpha=0.4, label=role if i == 0 else None)
                shown = True
    a.set_title("normalised singular values")
    a.set_xlabel("index")
    a.set_ylabel("σ_i / σ_1")
    if shown:
        a.legend(fontsize=8)
    # 2 stable rank by layer
    a = ax[0, 1]
    for role in ("q", "k", "mlp_in"):
        g = svd[(svd["role"] == role) & (svd["attn"].isin(["self"]) | (role == "mlp_in"))].sort_values("layer")
        if not g.empty:
            a.plot(g["layer"], g["stable_rank"], "o-", label=role, color=pal[role])
    a.xaxis.set_major_locator(MaxNLocator(integer=True))
    a.set_title("stable rank by layer")
    a.set_xlabel("layer")
    a.set_ylabel("‖W‖²_F / ‖W‖²₂")
    if a.lines:
        a.legend(fontsize=8)
    # 3 log|w| histogram
    a = ax[0, 2]
    h = res.sparsity["hist"]
    # bins are 1/8 octave (exact float32 edges), not equal in log10: plot density per decade
    width = h["right"] - h["left"]
    a.bar(h["left"], h["count"] / width / max(int(h["count"].sum()), 1), width=width, align="edge",
          color="steelblue", linewidth=0)
    a.set_ylabel("fraction per decade")
    a.axvline(-2, color="red", ls="--", alpha=0.6, label="0.01")
    a.set_title("log10 |w| (all tensors)")
    a.set_xlabel("log10 |w|")
    a.legend(fontsize=8)
    # 4 QK eigenvalues
    a = ax[1, 0]
    keys = sorted([k for k in res.qk["eigs"] if k[0] == stack and k[1] == "self"], key=lambda k: k[2])
    for k in keys:
        a.plot(res.qk["eigs"][k], alpha=0.6, label=f"L{k[2]}")
    a.axhline(0, color="black", alpha=0.3)
    a.set_title("eigenvalues of sym(W_Qᵀ W_K)")
    a.set_xlabel("index (descending)")
    a.set_ylabel("eigenvalue")
    if keys:
        a.legend(fontsize=7, ncol=2)
    else:
        empty(a, "no self-attention Q/K")
    # 5 MLP importance
    a = ax[1, 1]
    imp = [v for (s, _l), v in res.mlp["importance"].items() if s == stack]
    if imp:
        c = np.concatenate(imp)
        a.hist(c, bins=100, color="darkorange")
        a.axvline(0.1 * c.mean(), color="red", ls="--", label="10 % of mean")
        a.legend(fontsize=8)
        a.set_xlabel("‖up_i‖·‖down_i‖")
        a.set_ylabel("neurons")
    else:
        empty(a, "no MLP blocks")
    a.set_title("MLP neuron importance")
    # 6 cross-layer Q cosine
    a = ax[1, 2]
    cl = res.cross.get((stack, "self", "q"))
    if cl is not None:
        sns.heatmap(cl["cos"], ax=a, cmap="RdBu_r", vmin=-0.2, vmax=0.2, square=True,
                    xticklabels=[f"L{x}" for x in cl["layers"]], yticklabels=[f"L{x}" for x in cl["layers"]])
    else:
        empty(a, "fewer than 2 layers with Q")
    a.set_title("cross-layer Q cosine")
    # 7 norm scales
    a = ax[2, 0]
    nt = res.norms[(res.norms["stack"] == stack)] if not res.norms.empty else res.norms
    if not nt.empty:
        vals = [res.norm_values[n] for n in nt["name"]]
        a.boxplot(vals, showfliers=False)
        a.set_xticks(range(1, len(vals) + 1), [f"L{int(l)}" if l is not None and l == l else "-" for l in nt["layer"]],
                     rotation=90, fontsize=6)
        a.axhline(1.0, color="red", ls="--", alpha=0.5)
        a.set_ylabel("gain")
    else:
        empty(a, "no norm scales")
    a.set_title("norm scales")
    # 8 position bias
    a = ax[2, 1]
    pt = [(k, v) for k, v in res.pos_tables.items() if stack in k]
    if pt:
        sns.heatmap(pt[0][1].T, ax=a, cmap="RdBu_r", center=0)
        a.set_xlabel("bucket")
        a.set_ylabel("head")
    else:
        empty(a, "no relative position bias")
    a.set_title("position bias (heads × buckets)")
    # 9 condition
    a = ax[2, 2]
    for role in ("q", "k", "mlp_in", "mlp_out"):
        g = svd[(svd["role"] == role) & (svd["attn"].isin(["self"]) | role.startswith("mlp"))].sort_values("layer")
        g = g[np.isfinite(g["condition"].astype(float))]
        if not g.empty:
            a.plot(g["layer"], np.log10(g["condition"].astype(float)), "o-", label=role, color=pal[role])
    a.xaxis.set_major_locator(MaxNLocator(integer=True))
    a.set_title("log10 condition number")
    a.set_xlabel("layer")
    a.set_ylabel("log10 σ_1 / σ_min")
    if a.lines:
        a.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _role_sparsity(res, col: str) -> pd.Series:
    br = res.sparsity["by_role"]
    if br.empty:
        return pd.Series(dtype=float)
    s = br.set_index("role")[col]
    return s[[r for r in ROLE_ORDER if r in s.index]]


def random_init_comparison(res, null_res=None, title: str = ""):
    """Trained weights beside the same architecture at random initialisation.

    Parameters
    ----------
    res : BatteryResult
        The trained checkpoint's battery.
    null_res : BatteryResult, optional
        The battery of the same architecture at random init (omitted: trained only).
    title : str
        Prefix of the figure title (the model name).

    Returns
    -------
    matplotlib.figure.Figure
        Three panels: fraction of |w| below the largest threshold per role; stable rank
        of every matrix by role; adjacent-layer cosine of every attention layer pair.
    """
    runs = [("trained", res)] + ([("random init", null_res)] if null_res is not None else [])
    pal = dict(zip(["trained", "random init"], sns.color_palette("deep", 2)))
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.6))
    fig.suptitle(f"{title} — trained vs random init".lstrip(" —"), fontsize=13)
    col = res.sparsity["columns"][-1]
    # 1 sparsity per role
    a = ax[0]
    sp = pd.DataFrame({k: _role_sparsity(r, col) for k, r in runs})
    if not sp.empty:
        sp.plot.bar(ax=a, color=[pal[k] for k in sp.columns], rot=30)
        plt.setp(a.get_xticklabels(), ha="right", rotation_mode="anchor")
        a.legend(fontsize=8)
    else:
        _empty(a, "no weight matrices")
    a.set_title(f"fraction |w| {col} by role")
    a.set_xlabel("role")
    a.set_ylabel("fraction of weights")
    # 2 stable rank per matrix
    a = ax[1]
    sr = pd.concat([r.svd.assign(weights=k) for k, r in runs if not r.svd.empty], ignore_index=True) \
        if any(not r.svd.empty for _, r in runs) else pd.DataFrame()
    if not sr.empty:
        order = [x for x in ROLE_ORDER if x in set(sr["role"])]
        sns.stripplot(data=sr, x="role", y="stable_rank", hue="weights", order=order, dodge=True, ax=a,
                      palette=pal, size=4, alpha=0.8)
        a.legend(fontsize=8)
        plt.setp(a.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    else:
        _empty(a, "no SVD")
    a.set_title("stable rank of every matrix")
    a.set_xlabel("role")
    a.set_ylabel("‖W‖²_F / ‖W‖²₂")
    # 3 adjacent-layer cosine
    a = ax[2]
    shown = False
    for i, (k, r) in enumerate(runs):
        c, w = adjacent_pairs(r)
        if c.size:
            a.scatter(np.full(c.size, i) + np.linspace(-0.15, 0.15, c.size), c, color=pal[k], s=14, label=k)
            a.hlines(float(w @ c / w.sum()), i - 0.25, i + 0.25, color="black", lw=1.5,
                     label="mean of group means" if i == 0 else None)
            shown = True
    if shown:
        a.axhline(0, color="gray", ls="--", alpha=0.6)
        a.set_xticks(range(len(runs)), [k for k, _ in runs])
        a.legend(fontsize=8)
    else:
        _empty(a, "fewer than 2 layers per attention role")
    a.set_title("adjacent-layer cosine (q/k/v/o)")
    a.set_xlabel("weights")
    a.set_ylabel("cosine of flattened weights")
    fig.tight_layout()
    return fig


def cross_model(measured: pd.DataFrame, stacks: Optional[pd.DataFrame] = None):
    """The cross-model bars of notebook 03.

    Parameters
    ----------
    measured : DataFrame
        One row per (model, weights) as :func:`geolip_lib.weights.tables.cross_model_frame`
        returns: columns ``model``, ``weights`` ("trained" / "random init"), ``Q/K/V sparsity``,
        ``SR Q``, ``SR K``, ``SR V``, ``SR MLP in``, ``QK pos first``, ``QK pos last``.
    stacks : DataFrame, optional
        One row per (model, weights, stack/attn) as
        :func:`geolip_lib.weights.tables.cross_model_stack_frame` returns. Given, the
        sparsity and QK panels compare like with like, per stack and attention kind.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels: Q/K/V sparsity of the trained models (per stack/attn with ``stacks``);
        mean stable rank of the Q/K/V/MLP-in matrices, trained vs random init; the QK sign
        balance: without ``stacks`` the positive-eigenvalue fraction of the first and last
        layer, with ``stacks`` the mean over layers of the seed's n_pos / inner of
        sym(W_q W_kᵀ) and the project's balance of sym(W_Qᵀ W_K), trained and random init,
        per stack/attn.
    """
    fig, ax = plt.subplots(1, 3, figsize=(17, 4.8))
    fig.suptitle("Frozen-weight topology across models", fontsize=13)
    ylab = "fraction |w| < 0.1"
    xlab = ["model", "model", "model"]
    if stacks is not None:
        st = stacks.assign(model=stacks["model"] + " · " + stacks["stack/attn"])
        xlab = ["model · stack/attn", "model", "model · stack/attn"]
    else:
        st = measured
    long = st.melt(id_vars=["model", "weights"], value_vars=["Q sparsity", "K sparsity", "V sparsity"],
                   var_name="role", value_name=ylab).dropna()
    long = long[long["weights"] == "trained"]
    if not long.empty:
        sns.barplot(data=long, x="model", y=ylab, hue="role", ax=ax[0])
    else:
        _empty(ax[0], "no Q/K/V measured")
    ax[0].set_title("Q/K/V sparsity (trained)" if stacks is None else "Q/K/V sparsity per stack/attn (trained)")
    sr = measured.melt(id_vars=["model", "weights"], value_vars=["SR Q", "SR K", "SR V", "SR MLP in"],
                       var_name="role", value_name="stable rank").dropna()
    if not sr.empty:
        sns.barplot(data=sr, x="model", y="stable rank", hue="weights", ax=ax[1], errorbar=None)
    else:
        _empty(ax[1], "no stable ranks")
    ax[1].set_title("mean stable rank of Q/K/V/MLP-in (trained vs random)")
    if stacks is None:
        _qk_first_last(ax[2], measured)
    else:
        _qk_stacks(ax[2], st)
    legend = [dict(loc="upper center", ncol=3), dict(loc="upper right"),
              dict(loc="upper left", bbox_to_anchor=(1.01, 1.0))]
    if not long.empty:
        ax[0].set_ylim(0, 1.2)  # room for the legend above the bars
    for a, kw, xl in zip(ax, legend, xlab):
        a.set_xlabel(xl)
        if a.get_legend() is not None:
            a.legend(fontsize=8, **kw)
        plt.setp(a.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    ax[0].set_ylabel(ylab)
    ax[1].set_ylabel("stable rank")
    ax[2].set_ylabel("positive eigenvalue fraction" if stacks is None else "positive fraction (mean over layers)")
    fig.tight_layout()
    return fig


def _qk_first_last(a, measured: pd.DataFrame) -> None:
    """Positive-eigenvalue fraction of the first and last layer per model (pooled rows)."""
    qk = measured.dropna(subset=["QK pos first"])
    if not qk.empty:
        qkl = qk.melt(id_vars=["model", "weights"], value_vars=["QK pos first", "QK pos last"], var_name="layer",
                      value_name="positive eigenvalue fraction")
        qkl["layer"] = qkl["weights"] + ", " + qkl["layer"].str.replace("QK pos ", "")
        sns.pointplot(data=qkl, x="model", y="positive eigenvalue fraction", hue="layer", ax=a, errorbar=None,
                      dodge=0.5, linestyle="none", markers=["o", "o", "s", "s"], order=sorted(set(qkl["model"])),
                      hue_order=[h for h in ("trained, first", "random init, first", "trained, last",
                                             "random init, last") if h in set(qkl["layer"])])
        a.axhline(0.5, color="gray", ls="--", label="sign balance")
    else:
        _empty(a, "no self-attention QK")
    a.set_title("QK positive-eigenvalue fraction (first / last layer)")


def _qk_stacks(a, st: pd.DataFrame) -> None:
    """Seed-form and project-form QK balance (mean over layers) per model · stack/attn row."""
    qk = st.dropna(subset=["QK seed (mean)"])
    if not qk.empty:
        qkl = qk.melt(id_vars=["model", "weights"], value_vars=["QK seed (mean)", "QK project (mean)"],
                      var_name="form", value_name="positive fraction")
        qkl["form"] = qkl["form"].map({"QK seed (mean)": "seed n_pos/inner", "QK project (mean)": "project balance"})
        qkl["form"] = qkl["form"] + ", " + qkl["weights"]
        hues = [f"{f}, {w}" for f in ("seed n_pos/inner", "project balance") for w in ("trained", "random init")]
        hues = [h for h in hues if h in set(qkl["form"])]
        sns.pointplot(data=qkl, x="model", y="positive fraction", hue="form", ax=a, errorbar=None, dodge=0.5,
                      linestyle="none", markers=["o" if h.startswith("seed") else "s" for h in hues],
                      order=list(dict.fromkeys(qk["model"])), hue_order=hues)
        a.axhline(0.5, color="gray", ls="--", label="sign balance")
    else:
        _empty(a, "no QK groups")
    a.set_title("QK sign balance per stack/attn (mean over layers)")
