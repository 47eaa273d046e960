"""Spectral metrics: covariance eigenspectra (PR, effective dimension, variance dims) and
singular-value ranks of weight matrices (stable rank, energy rank, condition number).

All computations run in float64.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .. import validation as V
from ._util import contig, is_torch, to_output


def covariance_eigenvalues(X: Any, centered: bool = True) -> np.ndarray:
    """Eigenvalues of the (second-moment) covariance of the rows of ``X``, descending.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
        Samples in rows.
    centered : bool
        Subtract the column mean first (covariance); ``False`` gives the uncentred
        second-moment matrix ``X^T X / n``.

    Returns
    -------
    ndarray, shape (min(n, D),)
        Eigenvalues of ``Xc^T Xc / n`` (``ddof=0``; PR and variance fractions do not
        depend on the normalisation), clipped at 0, in descending order. Computed from
        the smaller of the ``D x D`` covariance and the ``n x n`` Gram.
    """
    ev, s = _unit_covariance_eigenvalues(X, centered)
    return ev * s ** 2


def _unit_covariance_eigenvalues(X: Any, centered: bool = True) -> tuple[np.ndarray, float]:
    """Eigenvalues of the covariance of ``X / s`` and ``s = max|X|``: extreme scales (1e200,
    1e-200) neither overflow nor underflow the float64 product, and scale-free statistics
    (PR, effective dimension) use the unit-scale spectrum directly."""
    t = V.as_tensor(contig(X), "X", ndim=2, min_shape={0: 1, 1: 1}, dtype=torch.float64)
    # the same values as t.abs().max(), t / s and t - mean, with one float64 table (not four)
    s = float(torch.stack([t.max(), -t.min()]).max()) if t.numel() else 0.0
    mine = not (isinstance(X, torch.Tensor) and X.dtype == torch.float64) and \
        getattr(X, "dtype", None) != np.float64  # as_tensor converted: the float64 table is ours
    if s > 0:
        t, mine = (t.div_(s) if mine else t / s), True
    else:
        s = 1.0
    if centered:
        t = t.sub_(t.mean(dim=0, keepdim=True)) if mine else t - t.mean(dim=0, keepdim=True)
    n, d = t.shape
    m = t.T @ t if d <= n else t @ t.T
    ev = torch.linalg.eigvalsh(m / n).flip(0).clamp_min(0)
    return ev.numpy(), s


def _check_eigenvalues(ev: Any, name: str = "eigenvalues") -> np.ndarray:
    e = V.as_tensor(contig(ev), name, ndim=1, min_shape={0: 1}, dtype=torch.float64).numpy()
    if (e < -1e-12 * max(1.0, float(np.abs(e).max()))).any():
        V.fail(name, "expected non-negative eigenvalues (a covariance spectrum)")
    return np.clip(e, 0, None)


def participation_ratio_from_eigenvalues(eigenvalues: Any) -> float:
    """Participation ratio ``(sum l)^2 / sum l^2`` of a non-negative spectrum.

    Parameters
    ----------
    eigenvalues : array-like, shape (m,)

    Returns
    -------
    float
        In ``[1, m]``; NaN when every eigenvalue is zero.
    """
    e = _check_eigenvalues(eigenvalues)
    s2 = float((e ** 2).sum())
    return float(e.sum()) ** 2 / s2 if s2 > 0 else float("nan")


def participation_ratio(X: Any, centered: bool = True) -> float:
    """Participation ratio of the covariance spectrum of the rows of ``X``.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
    centered : bool
        Centre the columns first (the seed's choice); ``False`` uses the raw second moment.

    Returns
    -------
    float
        ``(sum l)^2 / sum l^2`` in ``[1, min(n - centered, D)]``; about ``D`` for an
        isotropic Gaussian with ``n >> D``.
    """
    return participation_ratio_from_eigenvalues(_unit_covariance_eigenvalues(X, centered)[0])


def effective_dimension(X: Any, centered: bool = True) -> float:
    """Entropy effective rank (Roy & Vetterli 2007) of the covariance spectrum.

    ``exp(H(p))`` with ``p = l / sum l`` and ``H`` the Shannon entropy (nats).

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
    centered : bool

    Returns
    -------
    float
        In ``[1, rank]``; ``D`` for a perfectly isotropic spectrum.
    """
    return effective_dimension_from_eigenvalues(_unit_covariance_eigenvalues(X, centered)[0])


def effective_dimension_from_eigenvalues(eigenvalues: Any) -> float:
    """Entropy effective rank ``exp(H(l / sum l))`` of a non-negative spectrum."""
    e = _check_eigenvalues(eigenvalues)
    tot = e.sum()
    if tot <= 0:
        return float("nan")
    p = e[e > 0] / tot
    return float(np.exp(-(p * np.log(p)).sum()))


def dims_for_variance_from_eigenvalues(eigenvalues: Any, fraction: float | Sequence[float]) -> Any:
    """Smallest number of leading components whose cumulative variance reaches ``fraction``.

    Parameters
    ----------
    eigenvalues : array-like, shape (m,)
        Spectrum (any order; sorted descending here).
    fraction : float or sequence of float in (0, 1]

    Returns
    -------
    int or list of int
    """
    e = np.sort(_check_eigenvalues(eigenvalues))[::-1]
    tot = e.sum()
    if tot <= 0:
        V.fail("eigenvalues", "all eigenvalues are zero; no variance to explain")
    cum = np.cumsum(e) / tot
    fracs = [fraction] if np.isscalar(fraction) else list(fraction)
    out = []
    for f in fracs:
        V.check_fraction(f, "fraction")
        # tolerance so that fraction=1.0 is reached despite round-off in the cumsum
        out.append(int(min(np.searchsorted(cum, f - 1e-12) + 1, e.size)))
    return out[0] if np.isscalar(fraction) else out


def dims_for_variance(X: Any, fraction: float | Sequence[float], centered: bool = True) -> Any:
    """Number of principal components needed for ``fraction`` of the variance of ``X``.

    Parameters
    ----------
    X : array-like or torch.Tensor, shape (n, D)
    fraction : float or sequence of float in (0, 1]
        E.g. ``0.95`` or ``(0.8, 0.9, 0.95, 0.99)``.
    centered : bool

    Returns
    -------
    int or list of int
    """
    return dims_for_variance_from_eigenvalues(covariance_eigenvalues(X, centered), fraction)


def singular_values(W: Any) -> Any:
    """Singular values of ``W`` (..., m, n), descending, float64 (tensor in -> tensor out)."""
    t = V.as_tensor(contig(W), "W", min_ndim=2, min_shape={-1: 1, -2: 1}, dtype=torch.float64)
    return to_output(torch.linalg.svdvals(t), is_torch(W))


def _svals(W: Any) -> torch.Tensor:
    return torch.linalg.svdvals(
        V.as_tensor(contig(W), "W", min_ndim=2, min_shape={-1: 1, -2: 1}, dtype=torch.float64))


def stable_rank(W: Any) -> Any:
    """Stable rank ``||W||_F^2 / ||W||_2^2``.

    Parameters
    ----------
    W : array-like or torch.Tensor, shape (..., m, n)

    Returns
    -------
    float (or array / tensor of shape (...) for batched input)
        In ``[1, min(m, n)]``; NaN for an all-zero matrix.
    """
    s = _svals(W)
    top = s[..., 0]
    sr = torch.where(top > 0, (s ** 2).sum(-1) / torch.where(top > 0, top, 1.0) ** 2,
                     torch.full_like(top, float("nan")))
    return to_output(sr, is_torch(W))


def energy_rank(W: Any, fraction: float = 0.9, *, power: int = 2) -> Any:
    """Number of leading singular values holding ``fraction`` of the spectral energy.

    Parameters
    ----------
    W : array-like or torch.Tensor, shape (..., m, n)
    fraction : float in (0, 1]
    power : int
        Energy is ``sum s^power``. ``2`` (default) is the usual energy (squared singular
        values = Frobenius norm); ``1`` reproduces the seed's ``rank_90`` (cumulative sum
        of the singular values themselves).

    Returns
    -------
    int (or int array / tensor of shape (...) for batched input)
    """
    V.check_fraction(fraction, "fraction")
    V.check_choice(power, "power", (1, 2))
    s = _svals(W) ** power
    tot = s.sum(-1, keepdim=True)
    cum = s.cumsum(-1) / torch.where(tot > 0, tot, 1.0)
    r = (cum < fraction - 1e-12).sum(-1) + 1
    r = torch.minimum(r, torch.tensor(s.shape[-1]))
    return to_output(r, is_torch(W))


def condition_number(W: Any) -> Any:
    """Spectral condition number ``s_max / s_min`` over the ``min(m, n)`` singular values.

    Parameters
    ----------
    W : array-like or torch.Tensor, shape (..., m, n)

    Returns
    -------
    float (or array / tensor of shape (...))
        ``inf`` when ``W`` is rank deficient (``s_min == 0``); NaN for an all-zero matrix.
    """
    s = _svals(W)
    top, low = s[..., 0], s[..., -1]
    c = torch.where(low > 0, top / torch.where(low > 0, low, 1.0), torch.full_like(top, float("inf")))
    c = torch.where(top > 0, c, torch.full_like(top, float("nan")))
    return to_output(c, is_torch(W))
