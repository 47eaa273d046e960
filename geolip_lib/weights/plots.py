"""Figures of the weight battery: the seed's 3×3 panel, drawn from a BatteryResult."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


def _first_stack(res) -> str | None:
    st = res.catalog.stacks()
    return st[0] if st else None


def battery_panel(res, title: str = "", stack: str | None = None):
    """The seed's 3×3 figure for one stack (default: the first stack of the model).

    Panels: normalised singular-value spectra; stable rank by layer; log10|w|
    histogram; QK symmetric-part eigenvalues by layer; MLP neuron importance;
    cross-layer Q cosine; norm scales; position bias (heads × buckets); log10
    condition number by layer. A panel whose data the model lacks says so.
    """
    stack = stack or _first_stack(res)
    fig, ax = plt.subplots(3, 3, figsize=(16, 13))
    fig.suptitle(f"{title} — inactive weight geometry ({stack})", fontsize=13)
    svd = res.svd[res.svd["stack"] == stack] if not res.svd.empty else res.svd

    def empty(a, msg):
        a.text(0.5, 0.5, msg, ha="center", va="center", transform=a.transAxes, fontsize=9, color="gray")
        a.set_xticks([])
        a.set_yticks([])

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
    if shown:
        a.legend(fontsize=8)
    # 2 stable rank by layer
    a = ax[0, 1]
    for role in ("q", "k", "mlp_in"):
        g = svd[(svd["role"] == role) & (svd["attn"].isin(["self"]) | (role == "mlp_in"))].sort_values("layer")
        if not g.empty:
            a.plot(g["layer"], g["stable_rank"], "o-", label=role, color=pal[role])
    a.set_title("stable rank by layer")
    a.set_xlabel("layer")
    if a.lines:
        a.legend(fontsize=8)
    # 3 log|w| histogram
    a = ax[0, 2]
    h = res.sparsity["hist"]
    # bins are 1/8 octave (exact float32 edges), not equal in log10: plot density per decade
    width = h["right"] - h["left"]
    a.bar(h["left"], h["count"] / width / max(int(h["count"].sum()), 1), width=width, align="edge",
          color="steelblue")
    a.set_ylabel("fraction per decade")
    a.axvline(-2, color="red", ls="--", alpha=0.6, label="0.01")
    a.set_title("log10 |w| (all tensors)")
    a.legend(fontsize=8)
    # 4 QK eigenvalues
    a = ax[1, 0]
    keys = sorted([k for k in res.qk["eigs"] if k[0] == stack and k[1] == "self"], key=lambda k: k[2])
    for k in keys:
        a.plot(res.qk["eigs"][k], alpha=0.6, label=f"L{k[2]}")
    a.axhline(0, color="black", alpha=0.3)
    a.set_title("eigenvalues of sym(W_Qᵀ W_K)")
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
        a.set_xticks(range(1, len(vals) + 1), [f"L{l}" if l == l and l is not None else "-" for l in nt["layer"]],
                     rotation=90, fontsize=6)
        a.axhline(1.0, color="red", ls="--", alpha=0.5)
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
    a.set_title("log10 condition number")
    a.set_xlabel("layer")
    if a.lines:
        a.legend(fontsize=8)
    fig.tight_layout()
    return fig
