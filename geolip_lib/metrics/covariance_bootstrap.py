"""Bootstrap intervals of statistics that need the whole row sample at once: the weighted forms
that :func:`geolip_lib.metrics.intervals.bootstrap_weighted` evaluates for many count vectors,
and the group bootstrap of a covariance statistic (PR) with its bias-corrected estimate. Their
coverage is tested in ``tests/unit/metrics/test_interval_coverage.py`` beside the rest of
:mod:`geolip_lib.metrics.intervals`, whose :class:`Interval` record they return."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from .intervals import LEVEL, N_BOOT, Interval, _nan


def weighted_mean_pairwise_cosine(U: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Weighted statistic for :func:`bootstrap_weighted`: mean cosine over distinct pairs.

    ``U`` holds unit rows. For counts ``w`` the resample's pairs of distinct draws have
    mean ``(wᵀ G w − Σ w_i² G_ii) / (n² − Σ w_i²)`` with ``G = U Uᵀ`` (draws of the same
    row are not a pair, as in the unresampled statistic).
    """
    G = np.asarray(U, dtype=np.float64) @ np.asarray(U, dtype=np.float64).T
    d = np.diag(G).copy()

    def stat(W: np.ndarray) -> np.ndarray:
        quad = np.einsum("bi,bi->b", W @ G, W)
        self_ = (W ** 2) @ d
        n = W.sum(axis=1)
        return (quad - self_) / (n ** 2 - (W ** 2).sum(axis=1))

    return stat


def weighted_participation_ratio(X: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Weighted statistic for :func:`bootstrap_weighted`: PR of the centred covariance.

    For counts ``w`` the resample's covariance is ``Σ w_i (x_i − μ_w)(x_i − μ_w)ᵀ / Σ w``;
    ``PR = tr(C)² / ‖C‖_F²`` needs no eigen-decomposition.
    """
    Xt = torch.as_tensor(np.asarray(X), dtype=torch.float64)

    def stat(W: np.ndarray) -> np.ndarray:
        out = np.empty(len(W))
        for i, w in enumerate(torch.as_tensor(W)):
            s = w.sum()
            mu = (w @ Xt) / s
            C = (Xt * w[:, None]).T @ Xt / s - torch.outer(mu, mu)
            out[i] = float(torch.trace(C) ** 2 / (C * C).sum())
        return out

    return stat


def covariance_stat_estimate(X: Any, statistic: Callable[[Any], Any] | None = None, *, n_groups: int = 50,
                              n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0,
                              max_bytes: float = 1.5e9) -> tuple[float, float, Interval]:
    """Bias-corrected estimate, plug-in and interval of a statistic of the centred covariance (PR by default) by a group bootstrap.

    Rows are split at random into ``n_groups`` groups; each group's row count, row sum and
    scatter ``Σ x xᵀ`` are accumulated once (one pass over ``X``). A resample draws groups
    with replacement and rebuilds ``C = Σ c_g S_g / N − μ μᵀ`` from those sums, so 1000
    resamples cost 1000 small contractions instead of 1000 passes over the table (a
    30522 × 384 table: one pass). With random groups of equal size this is the row
    bootstrap at the resolution of ``n_groups`` blocks. The interval is the *basic*
    bootstrap ``[2θ̂ − q_hi, 2θ̂ − q_lo]``, which corrects the downward resampling bias of
    spectral statistics (the percentile interval of an isotropic Gaussian's PR misses D). ``statistic(C)`` takes a batch of
    covariances ``(b, D, D)`` and returns ``b`` values; the default is
    ``PR = tr(C)² / ‖C‖_F²``. Fewer groups are used when the scatters would exceed
    ``max_bytes``.

    Returns ``(estimate, plug_in, interval)``: ``plug_in`` is the statistic of the rows'
    covariance; ``estimate`` the bootstrap bias-corrected ``2θ̂ − median(θ*)``, the centre of
    the basic interval (so it always lies inside it; the plug-in of a row sample's PR lies
    below it by the bias and can fall outside).
    """
    Xt = torch.as_tensor(np.asarray(X) if not isinstance(X, torch.Tensor) else X).detach().to("cpu", torch.float64)
    n, d = Xt.shape
    g = int(max(5, min(n_groups, n, max_bytes // max(1, 8 * d * d))))
    label = f"group bootstrap (basic), {n_boot} resamples of {g} random row groups ({n} rows)"
    if n < 10:
        est = float(_pr_of_rows(Xt)) if statistic is None and n >= 2 else float("nan")
        return est, est, _nan(label)
    rng = np.random.default_rng(seed)
    groups = torch.as_tensor(rng.permutation(n) % g)
    counts = torch.bincount(groups, minlength=g).double()
    sums = torch.zeros(g, d, dtype=torch.float64).index_add_(0, groups, Xt)
    scat = torch.stack([Xt[groups == j].T @ Xt[groups == j] for j in range(g)])
    if statistic is None:
        def statistic(C: Any) -> Any:
            tr = torch.diagonal(C, dim1=-2, dim2=-1).sum(-1)
            return tr ** 2 / (C * C).sum((-2, -1))
    vals = []
    for start in range(0, n_boot, 50):
        b = min(50, n_boot - start)
        c = torch.as_tensor(rng.multinomial(g, np.full(g, 1.0 / g), size=b), dtype=torch.float64)
        N = c @ counts
        mu = (c @ sums) / N[:, None]
        C = torch.einsum("bg,gij->bij", c, scat) / N[:, None, None] - mu[:, :, None] * mu[:, None, :]
        vals.append(torch.as_tensor(statistic(C), dtype=torch.float64).reshape(b))
    v = torch.cat(vals).numpy()
    v = v[np.isfinite(v)]
    a = (1 - level) / 2
    full = scat.sum(0) / counts.sum() - torch.outer(sums.sum(0), sums.sum(0)) / counts.sum() ** 2
    est = float(torch.as_tensor(statistic(full[None])).reshape(-1)[0])
    # basic (reverse-percentile) interval: a covariance statistic such as PR is biased low
    # under resampling (repeated rows lower the rank), and the basic interval reflects that bias
    return (2 * est - float(np.median(v)), est,
            Interval(2 * est - float(np.quantile(v, 1 - a)), 2 * est - float(np.quantile(v, a)), label, level))


def _pr_of_rows(Xt: torch.Tensor) -> float:
    """PR of the centred covariance of the rows of ``Xt`` (the default statistic above)."""
    Xc = Xt - Xt.mean(0)
    C = Xc.T @ Xc / Xt.shape[0]
    return float(torch.trace(C) ** 2 / (C * C).sum())


def bootstrap_covariance_stat(X: Any, statistic: Callable[[Any], Any] | None = None, *, n_groups: int = 50,
                              n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0,
                              max_bytes: float = 1.5e9) -> Interval:
    """The interval of :func:`covariance_stat_estimate` (group bootstrap, basic interval)."""
    return covariance_stat_estimate(X, statistic, n_groups=n_groups, n_boot=n_boot, level=level, seed=seed,
                                    max_bytes=max_bytes)[2]
