"""Seed-comparable mode: the seed fitted the rotation only (its map is ``(X − μ_x) R + μ_y``,
scale 1); the project fits the isotropic scale as well. :func:`compare_procrustes_modes`
takes the project's fit (the rotation does not depend on the scale, so the seed's map is
the same fit at scale 1) and reports the same held-out numbers for each, labelled
:data:`PROCRUSTES_MODES` (``"seed: rotation only"`` / ``"project: fitted scale"``), and
:func:`procrustes_modes_table` puts them side by side.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..metrics import intervals as I
from ..metrics.intervals import format_value
from ..probes.uncertainty import ratio_of_means, volume_ratio_interval
from ..results import headline
from .agreement import paired_pearson, paired_volumes, relational_correlation, row_cosine, weighted_relational_r
from .fit import Procrustes, _np64, procrustes_apply, relative_residual

__all__ = ["PROCRUSTES_MODES", "compare_procrustes_modes", "procrustes_modes_table"]

#: the two Procrustes fits side by side: key -> (label, fit the isotropic scale)
PROCRUSTES_MODES = {"seed": ("seed: rotation only", False), "project": ("project: fitted scale", True)}


def compare_procrustes_modes(fit: Procrustes, X, Y, test, *, rel_rows, sets, seed: int = 0) -> dict:
    """Rotation only (the seed's map) and rotation + isotropic scale (the project's), side by side.

    The rotation that minimises ``‖Y_c − s X_c R‖`` does not depend on ``s``, so both maps
    share the fitted ``R`` and anchor means of ``fit``: the project's map is ``fit``, the
    seed's is ``fit`` with scale 1 — exactly what the seed computed on the same centred
    anchors. Both are evaluated on the same held-out rows; only the rows the numbers need
    are mapped.

    Parameters
    ----------
    fit : Procrustes
        The project's fit on the anchors (:func:`procrustes_fit`, centred). A fit without
        scale (``scaling=False``) makes both columns rotation only, and the project's is
        labelled so.
    X : array, shape (n, d)
        The source rows (e.g. the PCA-reduced larger table).
    Y : array, shape (n, d)
        The paired target rows (the smaller table).
    test : int array
        Held-out rows (:func:`~geolip_lib.metrics.sampling.anchor_test_split`).
    rel_rows : int array
        Held-out rows of the relational correlation.
    sets : int array, shape (n_sets, k+1)
        Simplex vertex sets for the volumes.
    seed : int
        Seed of the bootstraps.

    Returns
    -------
    dict ``{"seed": ..., "project": ...}``, each ``{"label", "scaling", "scale",
    "singular_sum", "headlines"}`` with ``headlines`` :func:`geolip_lib.results.headline`
    records (value, 95 % interval) of ``cos_heldout`` (mean per-token cosine; BCa over the
    held-out tokens, the interval notebook 07 gives its headline), ``resid_frac``
    (:func:`relative_residual` on held-out tokens) and ``l2_mean`` (mean per-token L2
    distance), both by a percentile bootstrap over the held-out tokens, ``relational_r`` (weighted bootstrap over ``rel_rows``),
    ``volume_ratio`` (mean projected / native pentachoron volume, paired BCa over simplices)
    and ``volume_corr`` (paired Pearson, BCa over simplices).
    """
    X, Y = _np64(X, "X"), _np64(Y, "Y")
    test, rel_rows, sets = np.asarray(test), np.asarray(rel_rows), np.asarray(sets)
    rows, inv = np.unique(np.concatenate([test, rel_rows, sets.ravel()]), return_inverse=True)
    t_, r_ = inv[:len(test)], inv[len(test):len(test) + len(rel_rows)]
    s_ = inv[len(test) + len(rel_rows):].reshape(sets.shape)
    Yr = Y[rows]
    out = {}
    for key, (label, scaling) in PROCRUSTES_MODES.items():
        m_fit = fit if scaling else replace(fit, scale=1.0)
        scaling = m_fit.scale != 1.0
        label = label if key == "seed" or scaling else "project: rotation only"
        Yh = procrustes_apply(m_fit, X[rows])
        cos = row_cosine(Yr[t_], Yh[t_])
        res = relative_residual(m_fit, X[test], Y[test])
        l2 = np.sqrt(res[:, 0])
        rel = relational_correlation(Yr[r_], Yh[r_])
        vol = paired_volumes(Yr, Yh, s_)
        vols = np.column_stack([vol["vol_a"], vol["vol_b"]])
        tok = {"seed": seed, "method": "percentile", "what": "held-out tokens"}
        h = {"cos_heldout": headline(float(cos.mean()), interval=I.bootstrap(cos, seed=seed, what="held-out tokens"),
                                     label="held-out cosine", fmt=".4f"),
             "resid_frac": headline(float(res[:, 0].sum() / res[:, 1].sum()), label="relative residual", fmt=".4f",
                                    interval=I.bootstrap(res, ratio_of_means, **tok)),
             "l2_mean": headline(float(l2.mean()), interval=I.bootstrap(l2, **tok), label="mean L2 distance", fmt=".4g"),
             "relational_r": headline(rel["r"], label="relational r", fmt=".4f", interval=I.bootstrap_weighted(
                 len(r_), weighted_relational_r(Yr[r_], Yh[r_]), n_boot=1000, seed=seed,
                 what="held-out tokens (with all their pairs)")),
             "volume_ratio": headline(vol.get("ratio"), label="volume ratio (projected / native)", fmt=".4g",
                                      interval=volume_ratio_interval(vol["vol_b"], vol["vol_a"], seed=seed)),
             "volume_corr": headline(vol.get("corr"), label="pentachoron vol corr", fmt=".4f",
                                     interval=I.bootstrap(vols, paired_pearson, seed=seed,
                                                          what="simplices (paired volumes)"))}
        out[key] = {"label": label, "scaling": scaling, "scale": m_fit.scale, "singular_sum": fit.singular_sum,
                    "headlines": h}
    return out


def procrustes_modes_table(modes: dict):
    """The :func:`compare_procrustes_modes` numbers as a table: one row per quantity, one
    column per mode (its label), each ``value [95 % interval]``; the scale row has no
    interval (rotation only: 1 by definition)."""
    rows = {"isotropic scale s": {m["label"]: format_value(m["scale"], fmt=".6g") for m in modes.values()}}
    first = next(iter(modes.values()), {"headlines": {}})
    for key, e in first["headlines"].items():
        rows[e["label"]] = {m["label"]: format_value(m["headlines"][key]["value"], m["headlines"][key]["interval"],
                                                     m["headlines"][key]["fmt"]) for m in modes.values()}
    return pd.DataFrame(rows).T.rename_axis("quantity (held-out tokens)")
