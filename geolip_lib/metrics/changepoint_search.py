"""The machinery of :func:`geolip_lib.metrics.changepoint.locate`: its constants, the exact
breakpoint search (batched over resamples) and the two resampling schemes (seeds, residuals).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .intervals import bootstrap_weighted


METHODS = ("segmented", "step")


RESAMPLE = ("auto", "seeds", "residuals")


NULLS = ("line", "quadratic")


MIN_GRID = 4


_SEED_MIN = 3  # seed-level t needs >= 2 degrees of freedom


_EPS = 1e-12


# ------------------------------------------------------------------ the exact search, batched
class _Search:
    """Least-squares breakpoint search on one grid with fixed weights, batched over curves.

    The no-change basis ``X0`` (line or quadratic) and every candidate's extra basis vector
    (hinge or step, made orthogonal to ``X0`` in the weighted inner product) are fixed, so the
    change model's gain over the null at candidate ``k`` is ``<y, u_k>^2`` with ``u_k`` the unit
    orthogonalised vector: one matrix product per batch of curves. For the hinge over a line,
    the kink inside each gap is added exactly by Hudson's rule (the two separately fitted lines
    meet inside the gap); over a quadratic, kinks are searched at ``refine`` points per gap.
    """

    def __init__(self, x: np.ndarray, w: np.ndarray, method: str, null: str, min_size: int, refine: int = 10):
        m = len(x)
        self.x, self.w, self.method, self.null, self.min_size, self.refine = x, w, method, null, min_size, refine
        self.sw = np.sqrt(w)
        self.k0 = 2 if null == "line" else 3
        self.Q0 = np.linalg.qr(self.sw[:, None] * _null_basis(x, null))[0]
        ks = np.arange(min_size - 1, m - min_size)                       # gaps (x_k, x_k+1) the change may use
        if method == "step":
            tau_c = (x[ks] + x[ks + 1]) / 2
            B = (np.arange(m)[None, :] > ks[:, None]).astype(np.float64)
        else:
            sub = 1 if null == "line" else refine                         # line: in-gap kinks by Hudson below
            frac = np.arange(sub) / sub
            tau_c = np.append((x[ks][:, None] + (x[ks + 1] - x[ks])[:, None] * frac[None]).ravel(), x[m - min_size])
            B = np.maximum(x[None, :] - tau_c[:, None], 0.0)
        Bw = B * self.sw[None]
        Bp = Bw - (Bw @ self.Q0) @ self.Q0.T
        nb = (Bp * Bp).sum(1)
        ok = nb > _EPS * np.maximum((Bw * Bw).sum(1), _EPS)
        self.tau_c, self.U = tau_c[ok], Bp[ok] / np.sqrt(nb[ok])[:, None]
        self.hudson = method == "segmented" and null == "line"
        if self.hudson:
            self.ks = ks
            self.cw, self.cx, self.cxx = np.cumsum(w), np.cumsum(w * x), np.cumsum(w * x * x)

    def scan(self, Y: np.ndarray) -> dict:
        """Best breakpoint of each row of ``Y`` (b, m): ``tau``, ``rss0`` (null), ``rss1`` (change)."""
        Yw = Y * self.sw[None]
        r0 = Yw - (Yw @ self.Q0) @ self.Q0.T
        rss0 = (r0 * r0).sum(1)
        gain = (Yw @ self.U.T) ** 2
        j = np.argmax(gain, axis=1)
        rows = np.arange(len(Y))
        best, tau = gain[rows, j], self.tau_c[j]
        if self.hudson:
            t, g2 = self._hudson(Y, rss0)
            j2 = np.argmax(g2, axis=1)
            better = g2[rows, j2] > best
            best = np.where(better, g2[rows, j2], best)
            tau = np.where(better, t[rows, j2], tau)
        return {"tau": tau, "rss0": rss0, "rss1": np.maximum(rss0 - best, 0.0)}

    def _hudson(self, Y: np.ndarray, rss0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per gap: where the separately fitted left and right lines meet, and the gain when inside the gap."""
        x, w, ks = self.x, self.w, self.ks
        wy = w[None] * Y
        cy, cxy, cyy = np.cumsum(wy, 1), np.cumsum(wy * x, 1), np.cumsum(wy * Y, 1)
        tot = [self.cw[-1], self.cx[-1], self.cxx[-1], cy[:, -1:], cxy[:, -1:], cyy[:, -1:]]
        L = [self.cw[ks], self.cx[ks], self.cxx[ks], cy[:, ks], cxy[:, ks], cyy[:, ks]]
        R = [t_ - l_ for t_, l_ in zip(tot, L)]
        fits = []
        with np.errstate(invalid="ignore", divide="ignore"):
            for sw, sx, sxx, sy, sxy, syy in (L, R):
                cxx, cxy_, cyy_ = sxx - sx * sx / sw, sxy - sx * sy / sw, syy - sy * sy / sw
                slope = cxy_ / cxx
                fits.append((slope, (sy - slope * sx) / sw, np.maximum(cyy_ - cxy_ * slope, 0.0), cxx > _EPS))
            (bl, al, rl, okl), (br, ar, rr, okr) = fits
            t = (ar - al) / (bl - br)
            valid = okl & okr & np.isfinite(t) & (t > x[ks]) & (t < x[ks + 1])
            return t, np.where(valid, rss0[:, None] - (rl + rr), -np.inf)

    def design(self, x: np.ndarray, tau: float, side: str | None = None) -> np.ndarray:
        """Null basis plus the change basis at ``tau`` (``side`` forces the step's indicator at x == tau)."""
        if self.method == "segmented":
            extra = np.maximum(x - tau, 0.0)
        else:
            extra = (x > tau).astype(np.float64)
            if side is not None:
                extra = np.where(x == tau, 1.0 if side == "right" else 0.0, extra)
        return np.column_stack([_null_basis(x, self.null), extra])

    def fit(self, y: np.ndarray, X: np.ndarray) -> np.ndarray:
        return np.linalg.lstsq(X * self.sw[:, None], y * self.sw, rcond=None)[0]


def _null_basis(x: np.ndarray, null: str) -> np.ndarray:
    return np.column_stack([np.ones_like(x), x] + ([x * x] if null == "quadratic" else []))


def _f_stat(rss0: np.ndarray, rss1: np.ndarray, m: int, k0: int) -> np.ndarray:
    """sup-F of the change model over the null (2 extra parameters: the breakpoint and the slope change/jump)."""
    df = max(m - k0 - 2, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = ((rss0 - rss1) / 2) / (rss1 / df)
    scale = np.maximum(rss0, _EPS)
    return np.where(rss1 <= 1e-13 * scale, np.where(rss0 - rss1 > 1e-13 * scale, np.inf, 0.0), f)


def _batches(total: int, batch: int):
    for s in range(0, total, batch):
        yield min(batch, total - s)


def _max_t(Z: np.ndarray) -> np.ndarray:
    """max over breakpoints of |t| of the per-seed coefficients ``Z`` (..., n, K) across seeds."""
    n = Z.shape[-2]
    mu, sd = Z.mean(-2), Z.std(-2, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(mu) / (sd / math.sqrt(n))
    t = np.where(sd > 1e-12 * np.maximum(np.abs(mu), 1e-300), t, np.where(np.abs(mu) > 0, np.inf, 0.0))
    return t.max(-1)


def _shrunk_root(D: np.ndarray) -> tuple[np.ndarray, float]:
    """A square root ``R`` (``Rᵀ R = S*``) of the seeds' covariance shrunk towards its diagonal.

    ``D`` (n, m) holds the seeds' deviations from the mean. With n seeds the sample covariance
    ``S`` has rank n - 1, too few directions for the dependence of many breakpoints' t values;
    ``S* = lam diag(S) + (1 - lam) S`` with the data-driven ``lam`` of Schäfer & Strimmer (2005,
    target "D"): ``lam = sum_{i != j} Var(s_ij) / sum_{i != j} s_ij^2``, clipped to [0, 1].
    """
    n, m = D.shape
    S = D.T @ D / (n - 1)
    W = D[:, :, None] * D[:, None, :]                                    # (n, m, m) per-seed products
    var_s = n / (n - 1) ** 3 * ((W - W.mean(0)) ** 2).sum(0)
    off = ~np.eye(m, dtype=bool)
    den = float((S[off] ** 2).sum())
    lam = float(np.clip(var_s[off].sum() / den, 0.0, 1.0)) if den > 0 else 1.0
    Ss = (1 - lam) * S
    Ss[np.diag_indices(m)] = np.diag(S)
    ev, V = np.linalg.eigh(Ss)
    return (V * np.sqrt(np.clip(ev, 0.0, None))).T, lam


def _seed_scheme(Yf, yz, search: _Search, *, n_boot, level, batch, rng) -> dict:
    """Seed-level test (max |t| over breakpoints) and the seed-bootstrap breakpoint interval.

    ``Yf`` (n, m): the standardised seed rows, missing values filled (see ``locate``). Test:
    each seed's coefficient of the change basis (orthogonal to the null basis) at every
    candidate breakpoint; across seeds its ``t`` is exactly Student ``t(n-1)`` at each breakpoint
    for Gaussian seed errors of any covariance along x; the null distribution of the maximum
    over breakpoints is simulated from ``n`` Gaussian seeds with the seeds' covariance shrunk to
    its diagonal (:func:`_shrunk_root`; it sets how the breakpoints' t values depend on each
    other). The candidates are those of the search without Hudson's in-gap kinks (over a line:
    the grid points).
    """
    n = len(Yf)
    unweighted = _Search(search.x, np.ones_like(search.x), search.method, search.null, search.min_size, search.refine)
    Z = Yf @ unweighted.U.T                                              # (n, K) per-seed change coefficients
    T = float(_max_t(Z))
    root, lam = _shrunk_root(Yf - Yf.mean(0))
    UR = root @ unweighted.U.T                                           # (m, K): Gaussian seed -> coefficients
    tstar = []
    for b in _batches(n_boot, batch):
        tstar.append(_max_t(rng.standard_normal((b, n, len(root))) @ UR))
    p = float((1 + np.sum(np.concatenate(tstar) >= T)) / (1 + n_boot))
    # interval: resample the seeds (multinomial counts) and refit; deviations from the mean are
    # scaled by sqrt(n/(n-1)) so that a resampled mean has the variance s^2/n of the sample mean
    D = Yf - Yf.mean(0)
    taus: list[np.ndarray] = []

    def refit(W: np.ndarray) -> np.ndarray:
        t = search.scan(yz[None] + math.sqrt(n / (n - 1)) * (W @ D) / n)["tau"]
        taus.append(t)
        return t

    bootstrap_weighted(n, refit, n_boot=n_boot, level=level, seed=int(rng.integers(2 ** 31)), what="seeds", batch=batch)
    a = (1 - level) / 2
    k = float(stats.t.ppf(1 - a, n - 1) / stats.norm.ppf(1 - a))
    return {"p": p, "stat": T, "statistic_name": "max |t|", "taus": np.concatenate(taus), "scale": k,
            "label": (f"max over breakpoints of |t| of the {n} seeds' change coefficients, null simulated "
                      f"({n_boot} draws) from Gaussian seeds with their covariance shrunk to its diagonal "
                      f"(weight {lam:.2f})"),
            "iv_label": (f"seed bootstrap percentile ({n_boot} resamples of {n} seeds, deviations x sqrt(n/(n-1))), "
                         f"spread about the estimate x t({n - 1})/z = {k:.3g}")}


def _residual_scheme(cnt, yz, fitted0, fitted1, F, search: _Search, *, n_boot, level, batch, rng) -> dict:
    """sup-F and breakpoint refits from the change fit's residuals resampled along the grid.

    Errors are assumed independent along x (the only choice with 1 or 2 seeds).
    """
    m = len(yz)
    if m <= search.k0 + 2:                     # the change model fits every point: no residual to resample
        return {"p": 1.0, "stat": F, "statistic_name": "sup-F", "taus": np.full(n_boot, np.nan), "scale": 1.0,
                "label": f"not testable by residuals: {m} grid points leave no residual degree of freedom",
                "iv_label": "no interval (no residual degree of freedom)"}
    e = (yz - fitted1) * np.sqrt(cnt)                                   # residuals on the scale of one seed
    e = (e - e.mean()) * math.sqrt(m / max(m - search.k0 - 2, 1))
    sc = 1.0 / np.sqrt(cnt)

    def draws(b: int, centre: np.ndarray) -> np.ndarray:
        return centre[None] + e[rng.integers(m, size=(b, m))] * sc[None]

    fstar, taus = [], []
    for b in _batches(n_boot, batch):
        r = search.scan(draws(b, fitted0))
        fstar.append(_f_stat(r["rss0"], r["rss1"], m, search.k0))
    for b in _batches(n_boot, batch):
        taus.append(search.scan(draws(b, fitted1))["tau"])
    fstar = np.concatenate(fstar)
    return {"p": float((1 + np.sum(fstar >= F)) / (1 + n_boot)), "stat": F, "statistic_name": "sup-F",
            "taus": np.concatenate(taus), "scale": 1.0,
            "label": f"sup-F, null from {n_boot} residual bootstrap resamples under the fitted null "
                     "(errors assumed independent along x)",
            "iv_label": f"residual bootstrap percentile ({n_boot} refits)"}
