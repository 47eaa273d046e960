"""Notebook 17's figures: mutual k-NN alignment between models (:mod:`geolip_lib.probes.alignment`)."""
from __future__ import annotations

from typing import Mapping

import matplotlib.pyplot as plt
import numpy as np

from ..metrics.alignment import PAIR_SEP


def layer_alignment(trained: Mapping[str, dict], *, title: str = ""):
    """One heat map per pair of models: mutual k-NN of every layer of one (rows) against every layer
    of the other (columns); the best layer pair boxed (magenta), the last layers circled (red)."""
    names = list(trained)
    n = max(len(names), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, 4.6), squeeze=False, layout="constrained")
    vmax = max([float(np.max(m["matrix"])) for m in trained.values()] + [1e-9])
    for ax, name in zip(axes[0], names):
        m = trained[name]
        im = ax.imshow(m["matrix"], origin="lower", cmap="viridis", vmin=0, vmax=vmax, aspect="auto")
        (bi, bj), (li, lj) = m["scopes"]["best layer pair"]["layers"], m["scopes"]["last layers"]["layers"]
        ax.plot(bj, bi, "s", mfc="none", mec="magenta", ms=12, mew=2, label="best pair")
        ax.plot(lj, li, "o", mfc="none", mec="red", ms=12, mew=2, label="last layers")
        a, b = name.split(PAIR_SEP)
        ax.set(xlabel=f"{b} layer", ylabel=f"{a} layer", title=f"{name}\n(chance {m['chance']:.3f})")
        ax.title.set_fontsize(9)
        ax.grid(False)
    if not names:
        axes[0][0].text(0.5, 0.5, "no pair of models measured", ha="center", va="center")
        axes[0][0].set_axis_off()
    else:
        fig.colorbar(im, ax=list(axes[0]), shrink=0.8, label="mutual k-NN")
        axes[0][0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7, frameon=False)
    fig.suptitle(title or "mutual k-NN alignment, every layer pair")
    return fig


def pair_alignment(trained: Mapping[str, dict], twins: Mapping[str, list], *, title: str = ""):
    """Mutual k-NN per pair at the best layer pair and the last layers, with its 95 % interval over
    inputs, beside the chance level, the shuffled pairing (its largest permutation) and the random-init
    twins."""
    names = list(trained)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.9 * len(names) + 3.5), 4.2), layout="constrained")
    x = np.arange(len(names))
    for off, scope, color in ((-0.18, "best layer pair", "C0"), (0.18, "last layers", "C1")):
        s = [trained[n]["scopes"][scope] for n in names]
        v = np.array([r["value"] for r in s])
        err = np.array([[r["value"] - r["interval"].lo for r in s], [r["interval"].hi - r["value"] for r in s]])
        ax.bar(x + off, v, 0.34, color=color, label=f"trained, {scope}", yerr=err, capsize=3)
        tw = [np.mean([t["scopes"][scope]["value"] for t in twins.get(n, [])]) if twins.get(n) else np.nan
              for n in names]
        ax.plot(x + off, tw, "kv", ms=7, label="random-init twins" if off < 0 else None)
        sh = [r["shuffled"].max() if r["shuffled"] is not None else np.nan for r in s]
        ax.plot(x + off, sh, "x", color="grey", ms=7, label="shuffled pairing (max)" if off < 0 else None)
    if names:
        ax.axhline(trained[names[0]]["chance"], color="red", ls="--", lw=1, label="chance k/(N-1)")
    ax.set_xticks(x, [n.replace(PAIR_SEP, "\n× ") for n in names], fontsize=8)
    k = trained[names[0]]["k"] if names else "?"
    ax.set(ylabel=f"mutual k-NN (k = {k})", title=title or "alignment per pair of models (95 % intervals over inputs)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # beside the bars, never on them
    return fig
