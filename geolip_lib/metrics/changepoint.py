"""Locate one change point in a curve measured over several seeds, with a test and an interval.

Seed 001 states a "phase boundary" at alpha = 0.29154. :func:`locate` turns that constant
into a measurement: given a grid ``x`` (for example alpha) and one row of measurements per
seed, it fits a two-segment model to the seed-mean curve, tests it against one straight line
(no change), and gives the breakpoint a bootstrap interval.

Method
------
- **Models.** ``method="segmented"`` (default): a continuous two-segment ("hinge",
  "segmented", "broken-stick") regression ``y = a + b x + c (x - tau)_+``; the kink ``tau`` is
  a continuous parameter anywhere between the grid points. ``method="step"``: a line with a
  jump, ``y = a + b x + d [x > tau]``; the jump lies between two grid points and ``tau`` is
  reported as their midpoint (the data cannot place it more finely). The no-change model
  is the line ``y = a + b x`` in both cases.
- **Fit.** Weighted least squares of the seed-mean curve (weight of a grid point = number of
  seeds measured there, which equals least squares on all the (x, y) pairs pooled). The
  breakpoint is found by exhaustive search, which is exact for one breakpoint: for the hinge,
  every grid point as kink plus, for every gap between grid points, the kink where the two
  separately fitted lines meet when it falls inside that gap (Hudson 1966, JASA 61:1097).
  Each side keeps at least ``min_size`` grid points.
- **Test** ("found"). ``F = ((RSS_line - RSS_change) / 2) / (RSS_change / (m - 4))``, a sup-F
  statistic over all breakpoints (``m`` grid points with data). Because the breakpoint is
  searched, F has no F distribution under the line (Davies' problem); its null distribution is
  made by a bootstrap *under the fitted line*: with at least 3 seeds, the seeds' deviation
  curves from the seed mean are resampled with replacement (whole rows, so the correlation of
  one seed's errors along ``x`` is kept) and added to the line; with 1 or 2 seeds, the
  residuals of the change fit are resampled along the grid (residual bootstrap; it assumes
  errors independent along ``x``). ``p = (1 + #{F* >= F}) / (1 + n_boot)`` and
  ``found = p < 1 - level``. The test is a hinge (or step) against a line: a smoothly curved
  mean curve also rejects the line, so "found" means "one line does not describe the curve
  and a breakpoint does better", and the fit curve should be looked at.
- **Interval** of the breakpoint: percentile bootstrap. With at least 3 seeds, the rows of
  ``Y`` (seeds) are resampled with replacement and the model is refitted
  (:func:`geolip_lib.metrics.intervals.bootstrap_weighted`, resampling as multinomial counts);
  each resample's deviations from the seed mean are scaled by ``sqrt(n / (n - 1))`` so that
  the resampled mean has the variance ``s^2 / n`` of the sample mean (the plain bootstrap
  gives ``(n - 1) / n`` of it, which undercovers with 3-10 seeds). With 1 or 2 seeds, residuals
  of the change fit are resampled (as for the test). The interval is computed whether or not
  the change is significant; ``location`` and ``interval`` are reported only when it is.

Input
-----
``Y`` may hold NaN (a run that failed at one grid value): a grid point's mean is taken over
the seeds measured there and its weight is their number; a grid point with no seed is left
out of the fit; a seed row with no value at all is dropped. ``Inf`` is rejected. A 1-D ``Y``
is one seed.

Why not ``ruptures``: it is installable here (1.1.10) but it searches discontinuous
piecewise-constant or piecewise-linear costs at grid indices; it has no continuous hinge
between grid points, no test against the no-change model and no interval. One breakpoint
needs only the exact search below (a few vectorised least-squares sums per candidate,
batched over the bootstrap resamples), so no dependency is added.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..validation import as_tensor, check_choice, check_fraction, check_positive_int, fail
from ._util import rng_for
from .intervals import LEVEL, N_BOOT, Interval, bootstrap_weighted

METHODS = ("segmented", "step")
RESAMPLE = ("auto", "seeds", "residuals")
MIN_GRID = 4
_SEED_MIN = 3  # seed-level t needs >= 2 degrees of freedom
_EPS = 1e-12


# ------------------------------------------------------------------ input
def _validate(x: Any, Y: Any, method: str, n_boot: int, level: float, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    check_choice(method, "method", METHODS)
    check_positive_int(n_boot, "n_boot")
    check_fraction(level, "level", inclusive_high=False)
    check_positive_int(min_size, "min_size", minimum=2)
    xt = as_tensor(x, "x", ndim=1)
    xa = xt.detach().cpu().numpy().astype(np.float64)
    if len(xa) < MIN_GRID:
        fail("x", f"expected at least {MIN_GRID} grid points, got {len(xa)}")
    if not np.all(np.diff(xa) > 0):
        fail("x", "expected a strictly increasing grid")
    Yt = as_tensor(Y, "Y", ndim=(1, 2), finite=False)
    Ya = Yt.detach().cpu().numpy().astype(np.float64)
    if Ya.ndim == 1:
        Ya = Ya[None, :]
    if Ya.shape[1] != len(xa):
        fail("Y", f"expected shape (n_seeds, {len(xa)}) to match x, got {tuple(Yt.shape)}")
    if np.isinf(Ya).any():
        fail("Y", "contains Inf values (NaN marks a missing measurement; Inf is not allowed)")
    Ya = Ya[np.isfinite(Ya).any(axis=1)]
    if len(Ya) == 0:
        fail("Y", "has no finite value")
    m_eff = int(np.isfinite(Ya).any(axis=0).sum())
    if m_eff < MIN_GRID:
        fail("Y", f"expected values at >= {MIN_GRID} grid points, got {m_eff}")
    if m_eff < 2 * min_size:
        fail("min_size", f"{min_size} points per side needs >= {2 * min_size} grid points with data, got {m_eff}")
    return xa, Ya


# ------------------------------------------------------------------ the exact search, batched
def _cov(Sw, Su, Sv, Suv):
    """Weighted centred cross-product ``sum w (u - ubar)(v - vbar)`` from raw sums."""
    return Suv - Su * Sv / Sw


def _candidates(x: np.ndarray, method: str, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints on the grid and their extra basis vectors (K, m): hinges at grid points or steps in gaps."""
    m = len(x)
    if method == "segmented":
        tau_c = x[min_size - 1:m - min_size + 1]                       # kinks at grid points
        return tau_c, np.maximum(x[None, :] - tau_c[:, None], 0.0)
    ks = np.arange(min_size - 1, m - min_size)                         # jump after point k
    return (x[ks] + x[ks + 1]) / 2, (np.arange(m)[None, :] > ks[:, None]).astype(np.float64)


def _scan(x: np.ndarray, y: np.ndarray, w: np.ndarray, method: str, min_size: int) -> dict:
    """Best breakpoint for each row of ``y`` (B, m) with weights ``w`` (B, m) (0 = no data).

    Returns ``tau`` (B,), ``rss0`` (line) and ``rss1`` (change model) (B,), ``m`` (B,) grid
    points with data. Every candidate model contains the line, so ``rss1 <= rss0``.
    """
    y = np.where(w > 0, y, 0.0)
    m_eff = (w > 0).sum(axis=1)
    Sw, Sx, Sxx = w.sum(1), w @ x, w @ (x * x)
    wy = w * y
    Sy, Sxy, Syy = wy.sum(1), wy @ x, (wy * y).sum(1)
    Cxx, Cxy, Cyy = _cov(Sw, Sx, Sx, Sxx), _cov(Sw, Sx, Sy, Sxy), _cov(Sw, Sy, Sy, Syy)
    with np.errstate(invalid="ignore", divide="ignore"):
        rss0 = np.maximum(Cyy - Cxy ** 2 / Cxx, 0.0)
    m = len(x)
    n = np.arange(m)
    tau_c, B = _candidates(x, method, min_size)
    # add the extra basis vector to the line: RSS1 = RSS0 - <r0, b~>^2 / |b~|^2 (b~ = b orthogonal to 1, x)
    Sb, Sxb, Sbb, Syb = w @ B.T, (w * x) @ B.T, w @ (B * B).T, wy @ B.T
    Cxb = _cov(Sw[:, None], Sx[:, None], Sb, Sxb)
    Cbb = _cov(Sw[:, None], Sb, Sb, Sbb)
    Cyb = _cov(Sw[:, None], Sy[:, None], Sb, Syb)
    with np.errstate(invalid="ignore", divide="ignore"):
        bb = Cbb - Cxb ** 2 / Cxx[:, None]
        yb = Cyb - Cxb * Cxy[:, None] / Cxx[:, None]
        gain = np.where(bb > _EPS * np.maximum(Cbb, _EPS), yb ** 2 / bb, 0.0)
    gain = np.nan_to_num(gain, nan=0.0)
    j = np.argmax(gain, axis=1)
    rows = np.arange(len(y))
    best_gain, tau = gain[rows, j], tau_c[j]
    if method == "segmented":
        # Hudson: inside a gap (x_k, x_k+1) the optimum is where the two separate lines meet, if they meet there
        cw, cx, cxx = np.cumsum(w, 1), np.cumsum(w * x, 1), np.cumsum(w * x * x, 1)
        cy, cxy, cyy = np.cumsum(wy, 1), np.cumsum(wy * x, 1), np.cumsum(wy * y, 1)
        ks = n[min_size - 1:m - min_size]
        L = [c[:, ks] for c in (cw, cx, cxx, cy, cxy, cyy)]
        R = [tot[:, None] - l for tot, l in zip((Sw, Sx, Sxx, Sy, Sxy, Syy), L)]
        with np.errstate(invalid="ignore", divide="ignore"):
            fits = []
            for sw, sx, sxx, sy, sxy, syy in (L, R):
                cxx_, cxy_, cyy_ = _cov(sw, sx, sx, sxx), _cov(sw, sx, sy, sxy), _cov(sw, sy, sy, syy)
                slope = cxy_ / cxx_
                icpt = (sy - slope * sx) / sw
                ok = cxx_ > _EPS * np.maximum(Cxx[:, None], _EPS)
                fits.append((slope, icpt, np.maximum(cyy_ - cxy_ * slope, 0.0), ok))
            (bl, al, rl, okl), (br, ar, rr, okr) = fits
            t = (ar - al) / (bl - br)
            valid = okl & okr & (t > x[ks]) & (t < x[ks + 1]) & np.isfinite(t)
            g2 = np.where(valid, rss0[:, None] - (rl + rr), -np.inf)
        j2 = np.argmax(g2, axis=1)
        g2b = g2[rows, j2]
        better = g2b > best_gain
        best_gain = np.where(better, g2b, best_gain)
        tau = np.where(better, t[rows, j2], tau)
    rss1 = np.maximum(rss0 - best_gain, 0.0)
    return {"tau": tau, "rss0": rss0, "rss1": rss1, "m": m_eff}


def _f_stat(rss0: np.ndarray, rss1: np.ndarray, m: np.ndarray) -> np.ndarray:
    """sup-F of the change model (2 extra parameters: the breakpoint and the slope change/jump)."""
    df = np.maximum(m - 4, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = ((rss0 - rss1) / 2) / (rss1 / df)
    scale = np.maximum(rss0, _EPS)
    f = np.where(rss1 <= 1e-13 * scale, np.where(rss0 - rss1 > 1e-13 * scale, np.inf, 0.0), f)
    return f


def _design(x: np.ndarray, tau: float, method: str) -> np.ndarray:
    extra = np.maximum(x - tau, 0.0) if method == "segmented" else (x > tau).astype(np.float64)
    return np.column_stack([np.ones_like(x), x, extra])


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    keep = w > 0
    sw = np.sqrt(w[keep])
    return np.linalg.lstsq(X[keep] * sw[:, None], y[keep] * sw, rcond=None)[0]


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


def _seed_scheme(Yf, cnt, yz, *, x, method, min_size, n_boot, level, batch, rng) -> dict:
    """Seed-level test (max |t| over breakpoints) and the breakpoint interval from the seeds' covariance.

    ``Yf`` (n, m) holds the standardised rows with missing values filled (see ``locate``), on the
    grid points that have data. Test: each seed's coefficient of the change basis (hinge or
    step, orthogonal to the line) at every candidate breakpoint; ``t`` across seeds is exactly
    Student ``t(n-1)`` at each breakpoint for Gaussian seed errors of any covariance along x;
    the null distribution of the maximum over breakpoints is simulated from Gaussian seeds with
    the seeds' sample covariance (which sets the dependence between breakpoints).
    """
    from scipy import stats

    n = len(Yf)
    _, B = _candidates(x, method, min_size)
    X0 = np.column_stack([np.ones_like(x), x])
    Bt = B - (B @ X0) @ np.linalg.pinv(X0)                              # change bases orthogonal to the line
    nb = (Bt * Bt).sum(1)
    A = np.where(nb[:, None] > 1e-12, Bt / np.maximum(nb, 1e-300)[:, None], 0.0)
    Z = Yf @ A.T                                                        # (n, K) per-seed coefficients
    T = float(_max_t(Z))
    Dz = Z - Z.mean(0)
    tstar = []
    for b in _batches(n_boot, batch):
        xi = rng.standard_normal((b, n, n))
        tstar.append(_max_t(xi @ Dz / math.sqrt(n - 1)))               # n Gaussian seeds, covariance S
    tstar = np.concatenate(tstar)
    p = float((1 + np.sum(tstar >= T)) / (1 + n_boot))
    # interval: resample the seeds (multinomial counts), refit; deviations from the mean are scaled by
    # sqrt(n/(n-1)) so that a resampled mean has the variance s^2/n of the sample mean
    D = Yf - Yf.mean(0)
    w = cnt[None]
    taus: list[np.ndarray] = []

    def refit(W: np.ndarray) -> np.ndarray:
        yb = yz[None] + math.sqrt(n / (n - 1)) * (W @ D) / n
        t = _scan(x, yb, np.repeat(w, len(W), 0), method, min_size)["tau"]
        taus.append(t)
        return t

    bootstrap_weighted(n, refit, n_boot=n_boot, level=level, seed=int(rng.integers(2 ** 31)),
                               what="seeds", batch=batch)
    a = (1 - level) / 2
    k = float(stats.t.ppf(1 - a, n - 1) / stats.norm.ppf(1 - a))
    return {"p": p, "stat": T, "statistic_name": "max |t|", "taus": np.concatenate(taus), "scale": k,
            "label": (f"max over breakpoints of |t| of the {n} seeds' change coefficients, null simulated "
                      f"({n_boot} draws) from Gaussian seeds with their sample covariance"),
            "iv_label": (f"seed bootstrap percentile ({n_boot} resamples of {n} seeds, deviations x sqrt(n/(n-1))), "
                         f"spread about the estimate x t({n - 1})/z = {k:.3g}")}


def _residual_scheme(cnt, yz, fitted0, fitted1, F, *, x, method, min_size, n_boot, level, batch, rng) -> dict:
    """sup-F and breakpoint refits from the change fit's residuals resampled along the grid.

    Errors are assumed independent along x (the only choice with 1 or 2 seeds).
    """
    m = len(x)
    e = (yz - fitted1) * np.sqrt(cnt)                                   # residuals on the scale of one seed
    e = (e - e.mean()) * math.sqrt(m / max(m - 4, 1))
    sc = 1.0 / np.sqrt(cnt)
    w = cnt[None]

    def draws(b: int, centre: np.ndarray) -> np.ndarray:
        return centre[None] + e[rng.integers(m, size=(b, m))] * sc[None]

    fstar, taus = [], []
    for b in _batches(n_boot, batch):
        r = _scan(x, draws(b, fitted0), np.repeat(w, b, 0), method, min_size)
        fstar.append(_f_stat(r["rss0"], r["rss1"], r["m"]))
    for b in _batches(n_boot, batch):
        taus.append(_scan(x, draws(b, fitted1), np.repeat(w, b, 0), method, min_size)["tau"])
    fstar = np.concatenate(fstar)
    return {"p": float((1 + np.sum(fstar >= F)) / (1 + n_boot)), "stat": F, "statistic_name": "sup-F",
            "taus": np.concatenate(taus), "scale": 1.0,
            "label": f"sup-F, null from {n_boot} residual bootstrap resamples under the fitted line "
                     "(errors assumed independent along x)",
            "iv_label": f"residual bootstrap percentile ({n_boot} refits)"}


def _breakpoint_interval(x: np.ndarray, tau: float, taus: np.ndarray, scale: float, level: float, label: str,
                         method: str, min_size: int) -> Interval:
    """Percentile interval of the refitted breakpoints, its spread about ``tau`` times ``scale``,
    kept inside the searched range; for a step, widened to whole gaps between grid points."""
    v = taus[np.isfinite(taus)]
    if len(v) < 2:
        return Interval(float("nan"), float("nan"), label, level)
    a = (1 - level) / 2
    q_lo, q_hi = (float(np.quantile(v, a, method="lower")), float(np.quantile(v, 1 - a, method="higher"))) \
        if method == "step" else (float(np.quantile(v, a)), float(np.quantile(v, 1 - a)))
    lo, hi = tau - scale * max(tau - q_lo, 0.0), tau + scale * max(q_hi - tau, 0.0)
    m = len(x)
    if method == "step":
        lo, hi = max(lo, x[min_size - 1]), min(hi, x[m - min_size])
        k_lo = int(np.clip(np.searchsorted(x, lo, side="right") - 1, 0, m - 2))
        k_hi = int(np.clip(np.searchsorted(x, hi, side="left"), 1, m - 1))
        return Interval(float(x[k_lo]), float(x[k_hi]), label + ", widened to whole gaps", level)
    return Interval(float(max(lo, x[min_size - 1])), float(min(hi, x[m - min_size])), label, level)


# ------------------------------------------------------------------ public
def locate(x: Any, Y: Any, *, method: str = "segmented", seed: int = 0, n_boot: int = N_BOOT,
           level: float = LEVEL, min_size: int = 2, resample: str = "auto", batch: int = 250) -> dict:
    """Locate one change point of the seed-mean curve, test it against a line, give it an interval.

    See the module docstring for the method (hinge or step least squares by exact search;
    sup-F test by a bootstrap under the fitted line; percentile interval by resampling seeds,
    or residuals with 1-2 seeds).

    Parameters
    ----------
    x : array-like, shape (m,)
        Strictly increasing grid (for example the alphas), ``m >= 4`` (``>= 10`` to be useful).
    Y : array-like, shape (n_seeds, m) or (m,)
        One row of measurements per seed. NaN marks a missing measurement; Inf is refused.
    method : {"segmented", "step"}
        Continuous hinge (kink anywhere between grid points) or line with a jump between two
        grid points.
    seed : int
        Seed of the bootstrap resampling (the result is a deterministic function of it).
    n_boot : int
        Resamples for the test and, separately, for the interval.
    level : float
        Interval coverage; the change is "found" when ``p < 1 - level``.
    min_size : int
        Grid points each side of the breakpoint keeps (>= 2).
    batch : int
        Resamples fitted at once (memory ~ batch * m * m floats).

    Returns
    -------
    dict
        ``found`` (bool), ``location`` (float or None: the breakpoint when found),
        ``interval`` (:class:`~geolip_lib.metrics.intervals.Interval` or None, when found),
        ``method`` (one line: model, test and resampling), ``statistic`` (sup-F),
        ``p_value``, ``n_seeds``, ``grid`` (list), ``fit`` (dict for a plot: ``x``, ``mean``,
        ``sem``, ``n`` per grid point, ``fitted`` and ``line`` at ``x``, ``curve_x``/
        ``curve_y`` (the fitted piecewise curve with its breakpoint), ``breakpoint`` and
        ``breakpoint_interval`` (always given, significant or not), ``params``, ``slopes``,
        ``rss_line``, ``rss_change``, ``boot_breakpoints``).
    """
    xa, Ya = _validate(x, Y, method, n_boot, level, min_size)
    check_positive_int(batch, "batch")
    check_choice(resample, "resample", RESAMPLE)
    rng = rng_for(seed)
    n_seeds, m_all = Ya.shape
    fin_all = np.isfinite(Ya)
    cnt_all = fin_all.sum(0).astype(np.float64)                         # seeds measured per grid point
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar_all = np.where(cnt_all > 0, np.where(fin_all, Ya, 0.0).sum(0) / np.maximum(cnt_all, 1), np.nan)
        ss = np.where(fin_all, (Ya - ybar_all) ** 2, 0.0).sum(0)
        sem = np.where(cnt_all > 1, np.sqrt(ss / np.maximum(cnt_all - 1, 1) / np.maximum(cnt_all, 1)), np.nan)
    has = cnt_all > 0                                                    # grid points no seed measured drop out
    xk, Yk, fin, cnt, ybar = xa[has], Ya[:, has], fin_all[:, has], cnt_all[has], ybar_all[has]
    # standardise x and y: the search is affine-equivariant, and this keeps its sums well conditioned
    xm, xs = float(xk.mean()), float(xk.std())
    xz = (xk - xm) / xs
    ym, ys = float(np.average(ybar, weights=cnt)), float(np.std(ybar))
    ys = ys if ys > 0 else 1.0
    yz = (ybar - ym) / ys

    obs = _scan(xz, yz[None], cnt[None], method, min_size)
    tau_z, rss0, rss1 = float(obs["tau"][0]), float(obs["rss0"][0]), float(obs["rss1"][0])
    F = float(_f_stat(obs["rss0"], obs["rss1"], obs["m"])[0])
    beta1 = _wls(_design(xz, tau_z, method), yz, cnt)
    fitted1 = _design(xz, tau_z, method) @ beta1
    beta0 = _wls(np.column_stack([np.ones_like(xz), xz]), yz, cnt)
    fitted0 = beta0[0] + beta0[1] * xz

    if resample == "auto":
        resample = "seeds" if n_seeds >= _SEED_MIN else "residuals"
    if resample == "seeds" and n_seeds < _SEED_MIN:
        fail("resample", f"'seeds' needs >= {_SEED_MIN} seeds, got {n_seeds}")
    ctx = dict(x=xz, method=method, min_size=min_size, n_boot=n_boot, level=level, batch=batch, rng=rng)
    if resample == "seeds":
        # a seed's missing value: the other seeds' mean there plus this seed's mean deviation elsewhere
        Z = (Yk - ym) / ys
        off = np.nanmean(np.where(fin, Z - yz[None], np.nan), axis=1)
        Yf = np.where(fin, Z, yz[None] + off[:, None])
        res = _seed_scheme(Yf, cnt, yz, **ctx)
    else:
        res = _residual_scheme(cnt, yz, fitted0, fitted1, F, **ctx)
    p = res["p"]
    found = bool(p < 1 - level)
    # back to the units of x
    tau = tau_z * xs + xm
    taus_x = res["taus"] * xs + xm
    bp_iv = _breakpoint_interval(xk, tau, taus_x, res["scale"], level, res["iv_label"], method, min_size)
    a_z, b_z, c_z = beta1
    slope_l = b_z * ys / xs
    icpt = float(ym + ys * (a_z - b_z * xm / xs))
    if method == "segmented":
        params = {"intercept": icpt, "slope": float(slope_l), "slope_change": float(c_z * ys / xs),
                  "breakpoint": float(tau)}
        slopes = [float(slope_l), float(slope_l + c_z * ys / xs)]
        cx = np.sort(np.append(xa, tau))
        cy = ym + ys * (_design((cx - xm) / xs, tau_z, method) @ beta1)
    else:
        params = {"intercept": icpt, "slope": float(slope_l), "jump": float(c_z * ys), "breakpoint": float(tau)}
        slopes = [float(slope_l), float(slope_l)]
        left, right = xa[xa < tau], xa[xa > tau]
        cx = np.concatenate([left, [tau, tau], right])
        cy = icpt + slope_l * cx + np.concatenate([np.zeros(len(left) + 1), np.full(len(right) + 1, c_z * ys)])
    model = ("continuous two-segment (hinge) least squares, exact breakpoint search" if method == "segmented"
             else "line plus one step least squares, exact search over gaps")
    desc = (f"{model}, {n_seeds}-seed mean curve; test vs one line: {res['label']}, found if p < "
            f"{1 - level:.3g}; breakpoint interval: {bp_iv.method}")
    design_all = _design((xa - xm) / xs, tau_z, method)
    fit = {
        "x": xa.tolist(), "mean": ybar_all.tolist(), "sem": sem.tolist(), "n": cnt_all.astype(int).tolist(),
        "fitted": (ym + ys * design_all @ beta1).tolist(),
        "line": (ym + ys * (beta0[0] + beta0[1] * (xa - xm) / xs)).tolist(),
        "curve_x": cx.tolist(), "curve_y": np.asarray(cy).tolist(),
        "breakpoint": float(tau), "breakpoint_interval": bp_iv, "params": params, "slopes": slopes,
        "rss_line": rss0 * ys ** 2, "rss_change": rss1 * ys ** 2, "sup_F": F, "n_grid_used": int(has.sum()),
        "statistic_name": res["statistic_name"], "resample": resample,
        "breakpoint_interval_percentile": _breakpoint_interval(xk, tau, taus_x, 1.0, level, "plain percentile of "
                                                               "the refits", method, min_size),
        "boot_breakpoints": taus_x.tolist(), "model": method,
    }
    return {
        "found": found, "location": float(tau) if found else None, "interval": bp_iv if found else None,
        "method": desc, "statistic": float(res["stat"]), "p_value": p, "n_seeds": int(n_seeds),
        "grid": xa.tolist(), "fit": fit,
    }


__all__ = ["locate", "METHODS", "RESAMPLE"]
