"""Align two paired point clouds: PCA reduction, orthogonal Procrustes, agreement measures.

Generic over any two matrices whose rows are paired (token embeddings of two models that
share a tokenizer, two layers' hidden states for the same inputs...). Seed 001 §13b uses it
for a cross-scale projection (Qwen3.5-4B → 0.8B):

    pca = procrustes.pca_fit(X_large[pca_rows], n_components=Y_small.shape[1])
    Xp = procrustes.pca_transform(pca, X_large)
    fit = procrustes.procrustes_fit(Xp[anchors], Y_small[anchors])
    Xa = procrustes.procrustes_apply(fit, Xp)
    cos = procrustes.row_cosine(Xa[test], Y_small[test])

Fixes relative to the seed: ``scipy.linalg.orthogonal_procrustes`` returns the *sum of the
singular values* of ``AᵀB`` as its second output, which the seed printed as a "scale
factor"; the least-squares isotropic scale is that sum divided by ``‖A‖_F²`` (centred),
returned here as ``scale``.

Seed-comparable mode: the seed fitted the rotation only (its map is ``(X − μ_x) R + μ_y``,
scale 1); the project fits the isotropic scale as well. :func:`compare_procrustes_modes`
takes the project's fit (the rotation does not depend on the scale, so the seed's map is
the same fit at scale 1) and reports the same held-out numbers for each, labelled
:data:`PROCRUSTES_MODES` (``"seed: rotation only"`` / ``"project: fitted scale"``), and
:func:`procrustes_modes_table` puts them side by side.

Intervals (for the headline numbers of a projection): :func:`paired_pearson` is the
statistic for a bootstrap over paired items (simplices), :func:`weighted_relational_r`
resamples the *tokens* behind a pairwise-cosine correlation, and
:func:`variance_retained_interval` is the covariance group bootstrap of the PCA's retained
variance share (:mod:`geolip_lib.metrics.intervals` does the resampling).
"""
from __future__ import annotations

from ..metrics.sampling import anchor_test_split
from .agreement import (VARIANCE_RETAINED_NOTE, paired_pearson, paired_volumes, pairwise_cosine, percentiles, relational_correlation,
                        residual_spectrum, row_cosine, threshold_fractions, variance_retained_interval,
                        weighted_relational_r)
from .fit import PCA, Procrustes, pca_fit, pca_transform, procrustes_apply, procrustes_fit, relative_residual
from .modes import PROCRUSTES_MODES, compare_procrustes_modes, procrustes_modes_table

#: the anchor / held-out split (:func:`geolip_lib.metrics.sampling.anchor_test_split`), by its old name
split_indices = anchor_test_split

__all__ = ["VARIANCE_RETAINED_NOTE", "PCA", "pca_fit", "pca_transform", "Procrustes", "procrustes_fit", "procrustes_apply",
           "row_cosine", "pairwise_cosine", "relational_correlation", "residual_spectrum",
           "threshold_fractions", "percentiles", "anchor_test_split", "split_indices", "paired_volumes",
           "paired_pearson", "weighted_relational_r", "variance_retained_interval", "relative_residual",
           "PROCRUSTES_MODES", "compare_procrustes_modes", "procrustes_modes_table"]
