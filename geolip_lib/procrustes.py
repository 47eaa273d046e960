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

from dataclasses import dataclass, replace

import numpy as np
import torch

from .validation import as_tensor, check_positive_int, fail

__all__ = ["PCA", "pca_fit", "pca_transform", "Procrustes", "procrustes_fit", "procrustes_apply",
           "row_cosine", "pairwise_cosine", "relational_correlation", "residual_spectrum",
           "threshold_fractions", "percentiles", "split_indices", "paired_volumes", "paired_pearson",
           "weighted_relational_r", "variance_retained_interval", "relative_residual",
           "PROCRUSTES_MODES",
           "compare_procrustes_modes", "procrustes_modes_table"]

#: the two Procrustes fits side by side: key -> (label, fit the isotropic scale)
PROCRUSTES_MODES = {"seed": ("seed: rotation only", False), "project": ("project: fitted scale", True)}


def _np64(x, name, ndim=2) -> np.ndarray:
    return as_tensor(x, name, ndim=ndim, dtype=torch.float64).numpy()


@dataclass
class PCA:
    """A fitted PCA: ``mean`` (D,), ``components`` (D, k) orthonormal columns,
    ``explained`` (k,) variances, ``variance_retained`` = their share of the total."""

    mean: np.ndarray
    components: np.ndarray
    explained: np.ndarray
    total_variance: float

    @property
    def variance_retained(self) -> float:
        return float(self.explained.sum() / self.total_variance) if self.total_variance > 0 else float("nan")


def pca_fit(X, n_components: int) -> PCA:
    """Principal components of ``X`` (float64, covariance eigendecomposition).

    Parameters
    ----------
    X : array, shape (n, D)
    n_components : int, 1 <= n_components <= D

    Returns
    -------
    PCA
    """
    X = _np64(X, "X")
    n, D = X.shape
    k = check_positive_int(n_components, "n_components")
    if k > D:
        fail("n_components", f"expected at most D = {D} components, got {k}")
    if n < 2:
        fail("X", f"expected at least 2 rows, got {n}")
    mean = X.mean(0)
    Xc = X - mean
    cov = (Xc.T @ Xc) / (n - 1)
    lam, V = np.linalg.eigh(cov)
    order = np.argsort(lam)[::-1]
    lam, V = np.clip(lam[order], 0, None), V[:, order]
    # fix signs for determinism (largest |component| positive)
    sgn = np.sign(V[np.abs(V).argmax(0), np.arange(D)])
    V = V * np.where(sgn == 0, 1, sgn)
    return PCA(mean=mean, components=V[:, :k], explained=lam[:k], total_variance=float(lam.sum()))


def pca_transform(pca: PCA, X) -> np.ndarray:
    """Project rows of ``X`` (n, D) onto the fitted components -> (n, k)."""
    X = _np64(X, "X")
    if X.shape[1] != pca.mean.shape[0]:
        fail("X", f"expected {pca.mean.shape[0]} columns (the PCA's width), got {X.shape[1]}")
    return (X - pca.mean) @ pca.components


@dataclass
class Procrustes:
    """``Y ≈ scale · (X − mean_x) R + mean_y``; ``R`` (d, d) orthogonal."""

    R: np.ndarray
    scale: float
    mean_x: np.ndarray
    mean_y: np.ndarray
    singular_sum: float


def procrustes_fit(X, Y, *, scaling: bool = True, center: bool = True) -> Procrustes:
    """Orthogonal Procrustes (``scipy.linalg.orthogonal_procrustes``) with optional scale.

    Parameters
    ----------
    X, Y : array, shape (n, d)
        Paired rows (the "anchor" set).
    scaling : bool
        Fit the least-squares isotropic scale ``s = Σσ / ‖X_c‖_F²``; else ``s = 1``.
    center : bool
        Remove the column means first (and add ``mean_y`` back when applying).

    Returns
    -------
    Procrustes
    """
    from scipy.linalg import orthogonal_procrustes

    X, Y = _np64(X, "X"), _np64(Y, "Y")
    if X.shape != Y.shape:
        fail("Y", f"shape {Y.shape} differs from X's {X.shape}; rows must be paired and widths equal "
                  f"(reduce the wider one with pca_fit first)")
    mx = X.mean(0) if center else np.zeros(X.shape[1])
    my = Y.mean(0) if center else np.zeros(Y.shape[1])
    Xc, Yc = X - mx, Y - my
    R, ssum = orthogonal_procrustes(Xc, Yc)
    nx = float((Xc ** 2).sum())
    s = float(ssum / nx) if (scaling and nx > 0) else 1.0
    return Procrustes(R=R, scale=s, mean_x=mx, mean_y=my, singular_sum=float(ssum))


def procrustes_apply(fit: Procrustes, X) -> np.ndarray:
    """Map rows of ``X`` (n, d) with a fitted :class:`Procrustes` -> (n, d)."""
    X = _np64(X, "X")
    if X.shape[1] != fit.R.shape[0]:
        fail("X", f"expected {fit.R.shape[0]} columns, got {X.shape[1]}")
    return fit.scale * (X - fit.mean_x) @ fit.R + fit.mean_y


def relative_residual(fit: Procrustes, X, Y) -> np.ndarray:
    """Per-row pieces of the relative residual of a fitted map on paired rows.

    Returns
    -------
    ndarray, shape (n, 2): column 0 ``‖y_i − ŷ_i‖²``, column 1 ``‖y_i − μ_y‖²`` (``μ_y`` the
    fit's target mean). The relative residual is the ratio of the column sums (``0`` a
    perfect map, ``1`` no better than the mean); on the fitting rows of a scaled fit it is
    ``scipy.spatial.procrustes``' disparity ``1 − (Σσ)² / (‖X_c‖² ‖Y_c‖²)``. Resample the
    rows with ``probes.uncertainty.ratio_of_means`` as the statistic for its interval.
    """
    Y = _np64(Y, "Y")
    Yhat = procrustes_apply(fit, X)
    if Yhat.shape != Y.shape:
        fail("Y", f"shape {Y.shape} differs from the mapped X's {Yhat.shape}")
    return np.column_stack([((Y - Yhat) ** 2).sum(1), ((Y - fit.mean_y) ** 2).sum(1)])


def row_cosine(A, B, eps: float = 1e-12) -> np.ndarray:
    """Cosine between paired rows: (n, d), (n, d) -> (n,)."""
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape != B.shape:
        fail("B", f"shape {B.shape} differs from A's {A.shape}")
    na, nb = np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1)
    return (A * B).sum(1) / np.maximum(na * nb, eps)


def pairwise_cosine(X, eps: float = 1e-12) -> np.ndarray:
    """Cosine matrix of the rows of ``X`` (n, d) -> (n, n)."""
    X = _np64(X, "X")
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), eps)
    return Xn @ Xn.T


def relational_correlation(A, B) -> dict:
    """Agreement of the pairwise-cosine structure of two paired sets (any widths).

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)

    Returns
    -------
    dict with ``r`` (Pearson of the upper-triangular pairwise cosines), ``mean_abs_diff``,
    and the two flattened vectors ``a``, ``b`` (n(n−1)/2,).
    """
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    if A.shape[0] < 3:
        fail("A", f"expected at least 3 paired rows, got {A.shape[0]}")
    iu = np.triu_indices(A.shape[0], k=1)
    a, b = pairwise_cosine(A)[iu], pairwise_cosine(B)[iu]
    r = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return {"r": r, "mean_abs_diff": float(np.abs(a - b).mean()), "a": a, "b": b}


def residual_spectrum(A, B) -> np.ndarray:
    """Eigenvalues (descending) of the residual second-moment ``(A−B)ᵀ(A−B)/n``; (n, d) -> (d,)."""
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape != B.shape:
        fail("B", f"shape {B.shape} differs from A's {A.shape}")
    R = A - B
    return np.clip(np.linalg.eigvalsh(R.T @ R / R.shape[0])[::-1], 0, None)


def threshold_fractions(values, thresholds=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)) -> dict:
    """``{threshold: fraction of values > threshold}``."""
    v = _np64(values, "values", ndim=1)
    return {float(t): float((v > t).mean()) for t in thresholds}


def percentiles(values, ps=(1, 5, 10, 25, 50, 75, 90, 95, 99)) -> dict:
    """Summary of a 1-D sample: mean, std, min, max and the given percentiles."""
    v = _np64(values, "values", ndim=1)
    out = {"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()), "max": float(v.max())}
    out.update({f"p{p}": float(np.percentile(v, p)) for p in ps})
    return out


def split_indices(n: int, n_anchor: int, n_test: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint random anchor (fit) and held-out (test) row indices out of ``n``.

    Sizes are capped so that both are non-empty: anchors take at most ``n − 1`` rows.
    """
    n = check_positive_int(n, "n", minimum=2)
    n_anchor = min(check_positive_int(n_anchor, "n_anchor"), n - 1)
    n_test = min(check_positive_int(n_test, "n_test"), n - n_anchor)
    perm = np.random.default_rng(seed).permutation(n)
    return perm[:n_anchor], perm[n_anchor:n_anchor + n_test]


def paired_volumes(A, B, sets) -> dict:
    """Simplex volumes of the same vertex sets in two paired spaces (e.g. native vs projected).

    The seed filtered degenerate simplices in each space separately and then truncated both
    lists to the shorter length, which mis-pairs volumes; here a set counts only when its
    simplex is non-degenerate in *both* spaces, so the correlation compares like with like.

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)
    sets : int array, shape (n_sets, k+1)
        Row indices of each simplex (e.g. ``metrics.sample_distinct_rows(n, 1000, 5)``).

    Returns
    -------
    dict with ``vol_a``, ``vol_b`` (valid sets only), ``n_valid``, ``mean_a``, ``mean_b``,
    ``cv_a``, ``cv_b`` (population std / mean), ``ratio`` (mean_b / mean_a), ``corr``
    (Pearson over the valid sets).
    """
    from .metrics import cayley_menger_volume_sq

    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    sets = np.asarray(sets)
    if sets.ndim != 2 or not np.issubdtype(sets.dtype, np.integer):
        fail("sets", f"expected an integer array (n_sets, k+1), got {sets.dtype} shape {sets.shape}")
    va, vb = cayley_menger_volume_sq(A[sets]), cayley_menger_volume_sq(B[sets])
    ok = (va > 0) & (vb > 0)
    va, vb = np.sqrt(va[ok]), np.sqrt(vb[ok])
    out = {"vol_a": va, "vol_b": vb, "n_valid": int(ok.sum()), "n_sets": int(len(sets))}
    if ok.sum() >= 2:
        out.update(mean_a=float(va.mean()), mean_b=float(vb.mean()), cv_a=float(va.std() / va.mean()),
                   cv_b=float(vb.std() / vb.mean()), ratio=float(vb.mean() / va.mean()),
                   corr=float(np.corrcoef(va, vb)[0, 1]) if va.std() > 0 and vb.std() > 0 else float("nan"))
    return out


# ---------------------------------------------------------------- intervals of the headline numbers
def paired_pearson(x, axis: int = -1):
    """Pearson r of paired samples, the statistic for a bootstrap over paired items.

    ``x`` holds the two paired variables on its first axis and the items on ``axis``:
    ``metrics.intervals.bootstrap(np.column_stack([a, b]), paired_pearson)`` resamples the
    rows ``(a_i, b_i)`` together (scipy moves the item axis last, so the statistic sees
    ``(2, ..., n)``).
    """
    x = np.asarray(x, dtype=np.float64)
    a, b = np.moveaxis(x[0], axis, -1), np.moveaxis(x[1], axis, -1)
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    return (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))


def weighted_relational_r(A, B):
    """Weighted statistic for ``metrics.intervals.bootstrap_weighted``: the relational
    correlation of :func:`relational_correlation` on a resample of the *rows*.

    The correlated items are pairs of rows, which share rows, so the rows (tokens) are what
    was sampled and what is resampled. A resample gives row ``i`` a count ``w_i``; the pair
    of distinct draws of rows ``i ≠ j`` gets weight ``w_i w_j`` (two draws of the same row
    are not a pair, as in the unresampled statistic), and the weighted Pearson r of the two
    spaces' pairwise cosines follows from quadratic forms ``wᵀ M w`` of five n × n matrices.
    At ``w = 1`` it equals :func:`relational_correlation`'s ``r``.

    Parameters
    ----------
    A : array, shape (n, d1)
    B : array, shape (n, d2)
        Paired rows.

    Returns
    -------
    callable ``stat(W)``: ``(b, n)`` counts -> ``(b,)`` values.
    """
    A, B = _np64(A, "A"), _np64(B, "B")
    if A.shape[0] != B.shape[0]:
        fail("B", f"{B.shape[0]} rows differ from A's {A.shape[0]} (rows must be paired)")
    Ca, Cb = pairwise_cosine(A), pairwise_cosine(B)
    mats = [Ca, Cb, Ca * Ca, Cb * Cb, Ca * Cb]
    diags = [np.diag(m).copy() for m in mats]

    def stat(W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        W2 = W * W
        n0 = W.sum(1) ** 2 - W2.sum(1)
        sa, sb, saa, sbb, sab = [(np.einsum("bi,bi->b", W @ m, W) - W2 @ d) / n0 for m, d in zip(mats, diags)]
        return (sab - sa * sb) / np.sqrt((saa - sa * sa) * (sbb - sb * sb))

    return stat


def variance_retained_interval(X, n_components: int, *, seed: int = 0, n_boot: int | None = None):
    """95 % interval of the share of variance the top ``n_components`` principal components
    of ``X`` retain (:attr:`PCA.variance_retained`), by the covariance group bootstrap.

    ``"exact"`` when ``n_components`` equals the width (the share is 1 by construction).
    Each resample needs one ``eigvalsh`` of a D × D covariance, so ``n_boot`` defaults to
    1000 up to D = 512 and 200 beyond (2560-d tables).

    Returns
    -------
    :class:`~geolip_lib.metrics.intervals.Interval` or ``"exact"``.
    """
    from .metrics.intervals import bootstrap_covariance_stat

    X = _np64(X, "X")
    k = check_positive_int(n_components, "n_components")
    D = X.shape[1]
    if k >= D:
        return "exact"

    def share(C):
        lam = torch.linalg.eigvalsh(C)                      # ascending
        return lam[..., -k:].sum(-1) / lam.sum(-1)

    return bootstrap_covariance_stat(X, share, seed=seed, n_boot=n_boot or (1000 if D <= 512 else 200))


# ---------------------------------------------------------------- seed-comparable mode
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
        Held-out rows (:func:`split_indices`).
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
    from .metrics import intervals as I
    from .probes.uncertainty import ratio_of_means, volume_ratio_interval
    from .results import headline

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
    import pandas as pd

    from .metrics.intervals import format_value

    rows = {"isotropic scale s": {m["label"]: format_value(m["scale"], fmt=".6g") for m in modes.values()}}
    first = next(iter(modes.values()), {"headlines": {}})
    for key, e in first["headlines"].items():
        rows[e["label"]] = {m["label"]: format_value(m["headlines"][key]["value"], m["headlines"][key]["interval"],
                                                     m["headlines"][key]["fmt"]) for m in modes.values()}
    return pd.DataFrame(rows).T.rename_axis("quantity (held-out tokens)")
