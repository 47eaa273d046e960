"""PCA reduction and orthogonal Procrustes between paired point clouds (the fits).

``scipy.linalg.orthogonal_procrustes`` returns the *sum of the singular values* of ``AᵀB``
as its second output, which the seed printed as a "scale factor"; the least-squares
isotropic scale is that sum divided by ``‖A‖_F²`` (centred), returned here as ``scale``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.linalg import orthogonal_procrustes

from ..validation import as_tensor, check_choice, check_positive_int, fail

__all__ = ["PCA", "pca_fit", "pca_transform", "Procrustes", "procrustes_fit", "procrustes_apply",
           "relative_residual"]


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


def pca_fit(X, n_components: int, *, method: str = "eigh") -> PCA:
    """Principal components of ``X`` (float64, covariance eigendecomposition).

    Parameters
    ----------
    X : array, shape (n, D)
    n_components : int, 1 <= n_components <= D (``method="svd"``: <= min(n, D))
    method : {"eigh", "svd"}
        ``"eigh"``: eigendecomposition of the covariance, component signs fixed (largest
        ``|entry|`` positive). ``"svd"``: ``numpy.linalg.svd`` of the centred rows, numpy's
        signs kept (the modulator pipeline's projection was computed that way); the
        explained variances are ``σ² / (n − 1)``.

    Returns
    -------
    PCA
    """
    X = _np64(X, "X")
    n, D = X.shape
    k = check_positive_int(n_components, "n_components")
    check_choice(method, "method", ("eigh", "svd"))
    if k > D:
        fail("n_components", f"expected at most D = {D} components, got {k}")
    if n < 2:
        fail("X", f"expected at least 2 rows, got {n}")
    mean = X.mean(0)
    Xc = X - mean
    if method == "svd":
        if k > min(n, D):
            fail("n_components", f"expected at most min(n, D) = {min(n, D)} components, got {k}")
        _, sv, Vt = np.linalg.svd(Xc, full_matrices=False)
        lam = sv ** 2 / (n - 1)
        return PCA(mean=mean, components=Vt[:k].T, explained=lam[:k], total_variance=float(lam.sum()))
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


