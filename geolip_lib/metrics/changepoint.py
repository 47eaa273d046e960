"""Locate one change point in a curve measured over several seeds, with a test and an interval.

Seed 001 states a "phase boundary" at alpha = 0.29154. :func:`locate` turns that constant
into a measurement: given a grid ``x`` (for example alpha) and one row of measurements per
seed, it fits a change model to the seed-mean curve, tests it against no change, and gives
the breakpoint an interval over seeds.

Method
------
- **Models.** ``method="segmented"`` (default): a continuous two-segment ("hinge",
  "broken-stick") regression ``y = a + b x + c (x - tau)_+``, the kink ``tau`` anywhere between
  the grid points. ``method="step"``: a line with a jump, ``y = a + b x + d [x > tau]``; the jump
  lies in a gap between two grid points, ``tau`` is the gap's midpoint and its interval spans
  whole gaps (the data cannot place a jump more finely). The no-change model (``null``) is the
  line ``a + b x`` (default). ``null="quadratic"`` adds ``e x^2`` to both models: it asks
  whether there is a kink or jump *beyond smooth curvature* (over a line, a smoothly bent
  curve is also "found", with a breakpoint where it bends most).
- **Fit.** Weighted least squares of the seed-mean curve (weight of a grid point = number of
  seeds measured there; without NaN this is ordinary least squares of the mean curve, and in
  general it equals least squares on all (x, y) pairs pooled). One breakpoint is found by
  exhaustive search: every grid point as kink and, over a line, the exact kink inside each gap
  (where the two separately fitted lines meet, if inside the gap: Hudson 1966, JASA 61:1097);
  over a quadratic, ``refine`` kinks per gap. Each side keeps ``min_size`` grid points.
- **Test** ("found", with >= 3 seeds). For each seed and each candidate breakpoint, the
  seed's coefficient of the change basis (hinge or step made orthogonal to the null basis);
  across seeds, ``t = mean / (sd / sqrt(n))`` is exactly Student ``t(n-1)`` at each breakpoint
  under the null for Gaussian seed errors with *any* covariance along x (a seed's curve may be
  smooth, offset or wiggly as a whole). The statistic is ``max |t|`` over breakpoints; its null
  distribution is simulated from ``n`` Gaussian seeds with the seeds' sample covariance of the
  curves shrunk towards its diagonal (Schäfer & Strimmer 2005, data-driven intensity: with few
  seeds the raw covariance has rank n - 1, too few directions for many breakpoints).
  ``p = (1 + #{T* >= T}) / (1 + n_boot)``, ``found = p < 1 - level``. With 1 or 2 seeds
  (or ``resample="residuals"``): the sup-F statistic ``((RSS_null - RSS_change) / 2) /
  (RSS_change / (m - k0 - 2))`` with its null from a residual bootstrap under the fitted null
  (the change fit's residuals resampled along the grid: errors assumed independent along x).
- **Interval** of the breakpoint (with >= 3 seeds): seeds (rows of ``Y``) resampled with
  replacement and the model refitted (multinomial counts drawn by
  :func:`geolip_lib.metrics.intervals.bootstrap_weighted`), each resample's deviations from the
  seed mean scaled by ``sqrt(n / (n - 1))`` (so the resampled mean has the variance ``s^2 / n``
  of the sample mean); the percentile interval's spread about the estimate is then scaled by
  ``t(n-1) / z`` for the covariance being estimated from ``n`` seeds (3 seeds: x 2.19, 5: x 1.42,
  10: x 1.15). Kept inside the searched range. With 1-2 seeds: percentile interval of
  residual-bootstrap refits. Computed whether or not the change is significant (``fit``);
  ``location`` and ``interval`` are reported only when it is.

Calibration measured (``benchmarks/changepoint.py --parts 3 --reps 100``: 31-point grid on
[0, 0.6]; a line, or a hinge at 0.29 with slope change 2; noise sd 0.05 independent along x, or
smooth per-seed curves (Gaussian process, length 0.1, sd 0.03) plus 0.02 white; n_boot 200):
false positives on a line 2-5 % at 3, 5 and 8 seeds with either noise; hinge found in 73-87 %
at 3 seeds and 100 % at >= 5; the interval covers 0.29 in 92-95 %. ``null="quadratic"`` (a
parabola, or the parabola plus a kink of 1.5 at 0.29): false positives 0-9 %, coverage
96-98 %, but the kink beyond curvature is found in only 8-40 % at 3-5 seeds (88-96 % at 8).
One seed (residual bootstrap): 4 % false positives and 94 % coverage with independent
errors; with smooth errors it is invalid (58 % false positives), which is why >= 3 seeds use
the seed-level test.

Input
-----
``Y`` may hold NaN (a run that failed at one grid value): a grid point's mean is taken over
the seeds measured there and its weight is their number; a grid point no seed measured is left
out (the same as a grid without it); a seed row with no value is dropped. For the seed-level
coefficients a seed's missing value is filled with the other seeds' mean there plus that
seed's mean deviation elsewhere. ``Inf`` is refused. A 1-D ``Y`` is one seed.

Why not ``ruptures`` (installable here, 1.1.10): it searches discontinuous piecewise-constant
or piecewise-linear costs at grid indices; it has no continuous hinge between grid points, no
quadratic null, no test against no change and no interval. One breakpoint needs only the
exhaustive least-squares search below (one matrix product per batch of resampled curves), so
no dependency is added.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import as_tensor, check_choice, check_fraction, check_positive_int, fail
from ._util import rng_for
from .intervals import LEVEL, N_BOOT, Interval
from .changepoint_search import (METHODS, MIN_GRID, NULLS, RESAMPLE, _SEED_MIN, _f_stat, _null_basis, _residual_scheme,
                                 _Search, _seed_scheme)


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
           level: float = LEVEL, min_size: int = 2, null: str = "line", resample: str = "auto",
           refine: int = 10, batch: int = 250) -> dict:
    """Locate one change point of the seed-mean curve, test it against no change, give it an interval.

    The method is stated in the module docstring (least squares by exact search; a seed-level
    max-|t| test, or a residual-bootstrap sup-F test with 1-2 seeds; a seed-bootstrap interval).

    Parameters
    ----------
    x : array-like, shape (m,)
        Strictly increasing grid (for example the alphas), ``m >= 4`` (``>= 10`` to be useful).
    Y : array-like, shape (n_seeds, m) or (m,)
        One row of measurements per seed. NaN marks a missing measurement; Inf is refused.
    method : {"segmented", "step"}
        Continuous hinge (kink anywhere between grid points) or a jump between two grid points.
    seed : int
        Seed of the resampling (the result is a deterministic function of the data and it).
    n_boot : int
        Draws for the test's null and, separately, resamples for the interval.
    level : float
        Interval coverage; the change is "found" when ``p < 1 - level``.
    min_size : int
        Grid points each side of the breakpoint keeps (>= 2).
    null : {"line", "quadratic"}
        The no-change model. ``"line"`` (default) asks "is one straight line enough?";
        ``"quadratic"`` asks "is there a kink (or jump) beyond smooth curvature?" (the change
        model is then the quadratic plus the hinge or step).
    resample : {"auto", "seeds", "residuals"}
        ``"seeds"`` (the default with >= 3 seeds): seed-level test and seed bootstrap, valid for
        any correlation of a seed's errors along x. ``"residuals"`` (the default with 1-2
        seeds): residual bootstrap, which assumes errors independent along x.
    refine : int
        Kinks tried per gap between grid points when ``null="quadratic"`` (resolution
        gap / refine); over a line the in-gap kink is exact.
    batch : int
        Curves fitted at once (memory ~ batch * m * candidates floats).

    Returns
    -------
    dict
        ``found`` (bool); ``location`` (float, the breakpoint, or None when not found);
        ``interval`` (:class:`~geolip_lib.metrics.intervals.Interval`, or None when not found);
        ``method`` (one line: model, test, resampling); ``statistic`` (max |t| with seeds,
        sup-F with residuals); ``p_value``; ``n_seeds``; ``grid`` (list); ``fit``: what a plot
        needs — ``x``, ``mean``, ``sem``, ``n`` (seeds per grid point), ``fitted`` and ``null_fit``
        (also ``line`` for the null line) at ``x``; ``curve_x``/``curve_y`` (the fitted change
        curve, dense, with the breakpoint); ``breakpoint`` and ``breakpoint_interval`` (given
        whether or not the change is significant) and ``breakpoint_interval_percentile`` (the
        refits' plain percentile interval); ``params``; ``slopes`` (just left and right of the
        breakpoint); ``rss_null``, ``rss_change``, ``sup_F``; ``boot_breakpoints``.
    """
    xa, Ya = _validate(x, Y, method, n_boot, level, min_size)
    check_choice(null, "null", NULLS)
    check_choice(resample, "resample", RESAMPLE)
    check_positive_int(refine, "refine")
    check_positive_int(batch, "batch")
    rng = rng_for(seed)
    n_seeds = len(Ya)
    fin_all = np.isfinite(Ya)
    cnt_all = fin_all.sum(0).astype(np.float64)                         # seeds measured per grid point
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar_all = np.where(cnt_all > 0, np.where(fin_all, Ya, 0.0).sum(0) / np.maximum(cnt_all, 1), np.nan)
        ss = np.where(fin_all, (Ya - ybar_all) ** 2, 0.0).sum(0)
        sem = np.where(cnt_all > 1, np.sqrt(ss / np.maximum(cnt_all - 1, 1) / np.maximum(cnt_all, 1)), np.nan)
    has = cnt_all > 0                                                    # grid points no seed measured drop out
    xk, fin, cnt, ybar = xa[has], fin_all[:, has], cnt_all[has], ybar_all[has]
    m = len(xk)
    if null == "quadratic" and m < 6:
        fail("null", f"'quadratic' needs >= 6 grid points with data, got {m}")
    # standardise x and y: the fit is affine-equivariant, and this keeps its sums well conditioned
    xm, xs = float(xk.mean()), float(xk.std())
    xz = (xk - xm) / xs
    ym, ys = float(np.average(ybar, weights=cnt)), float(np.std(ybar))
    ys = ys if ys > 0 else 1.0
    yz = (ybar - ym) / ys

    search = _Search(xz, cnt, method, null, min_size, refine)
    obs = search.scan(yz[None])
    tau_z, rss0, rss1 = float(obs["tau"][0]), float(obs["rss0"][0]), float(obs["rss1"][0])
    F = float(_f_stat(obs["rss0"], obs["rss1"], m, search.k0)[0])
    beta1 = search.fit(yz, search.design(xz, tau_z))
    fitted1 = search.design(xz, tau_z) @ beta1
    beta0 = search.fit(yz, _null_basis(xz, null))
    fitted0 = _null_basis(xz, null) @ beta0

    Z = (Ya[:, has] - ym) / ys
    if resample == "auto":
        # seeds that agree everywhere carry no seed-to-seed variation to test against
        same = n_seeds > 1 and bool(np.nanmax(np.abs(Z - yz[None])) <= 1e-12 * max(1.0, float(np.abs(yz).max())))
        resample = "seeds" if n_seeds >= _SEED_MIN and not same else "residuals"
    if resample == "seeds" and n_seeds < _SEED_MIN:
        fail("resample", f"'seeds' needs >= {_SEED_MIN} seeds, got {n_seeds}")
    ctx = dict(n_boot=n_boot, level=level, batch=batch, rng=rng)
    if resample == "seeds":
        # a seed's missing value: the other seeds' mean there plus this seed's mean deviation elsewhere
        off = np.array([np.mean(Z[i, fin[i]] - yz[fin[i]]) for i in range(n_seeds)])
        res = _seed_scheme(np.where(fin, Z, yz[None] + off[:, None]), yz, search, **ctx)
    else:
        res = _residual_scheme(cnt, yz, fitted0, fitted1, F, search, **ctx)
    p = res["p"]
    found = bool(p < 1 - level)

    # back to the units of x and Y
    tau = tau_z * xs + xm
    taus_x = res["taus"] * xs + xm
    bp_iv = _breakpoint_interval(xk, tau, taus_x, res["scale"], level, res["iv_label"], method, min_size)
    raw = _raw_params(beta1, xm, xs, ym, ys, null)
    extra = float(beta1[-1] * ys / xs) if method == "segmented" else float(beta1[-1] * ys)
    params = {**raw, ("slope_change" if method == "segmented" else "jump"): extra, "breakpoint": float(tau)}
    left_slope = raw["slope"] + 2 * raw.get("curvature", 0.0) * tau
    slopes = [float(left_slope), float(left_slope + (extra if method == "segmented" else 0.0))]
    dense = np.unique(np.concatenate([np.linspace(xa[0], xa[-1], 201), xa]))
    if method == "segmented":
        cx = np.unique(np.append(dense, tau))
        cy = ym + ys * (search.design((cx - xm) / xs, tau_z) @ beta1)
    else:
        lx, rx = dense[dense < tau], dense[dense > tau]
        cx = np.concatenate([lx, [tau], [tau], rx])
        cz = (cx - xm) / xs
        cy = ym + ys * np.concatenate([search.design(cz[:len(lx) + 1], tau_z, "left") @ beta1,
                                       search.design(cz[len(lx) + 1:], tau_z, "right") @ beta1])
    xza = (xa - xm) / xs
    fitted_all = ym + ys * (search.design(xza, tau_z) @ beta1)
    null_all = ym + ys * (_null_basis(xza, null) @ beta0)
    model = {("segmented", "line"): "continuous two-segment (hinge) least squares, exact breakpoint search",
             ("step", "line"): "line plus one step least squares, exact search over gaps",
             ("segmented", "quadratic"): f"quadratic plus one hinge least squares, kinks searched at 1/{refine} "
                                         "of each gap",
             ("step", "quadratic"): "quadratic plus one step least squares, exact search over gaps"}[method, null]
    desc = (f"{model}, {n_seeds}-seed mean curve; test vs one {null} (no change): {res['label']}, found if p < "
            f"{1 - level:.3g}; breakpoint interval: {bp_iv.method}")
    fit = {
        "x": xa.tolist(), "mean": ybar_all.tolist(), "sem": sem.tolist(), "n": cnt_all.astype(int).tolist(),
        "fitted": fitted_all.tolist(), "null_fit": null_all.tolist(),
        "curve_x": cx.tolist(), "curve_y": np.asarray(cy).tolist(),
        "breakpoint": float(tau), "breakpoint_interval": bp_iv,
        "breakpoint_interval_percentile": _breakpoint_interval(xk, tau, taus_x, 1.0, level,
                                                               "plain percentile of the refits", method, min_size),
        "params": params, "slopes": slopes, "model": method, "null": null, "resample": resample,
        "rss_null": rss0 * ys ** 2, "rss_change": rss1 * ys ** 2, "sup_F": F, "n_grid_used": m,
        "statistic_name": res["statistic_name"], "boot_breakpoints": taus_x.tolist(),
    }
    if null == "line":
        fit["line"] = fit["null_fit"]
    return {
        "found": found, "location": float(tau) if found else None, "interval": bp_iv if found else None,
        "method": desc, "statistic": float(res["stat"]), "p_value": p, "n_seeds": int(n_seeds),
        "grid": xa.tolist(), "fit": fit,
    }


def _raw_params(beta: np.ndarray, xm: float, xs: float, ym: float, ys: float, null: str) -> dict:
    """The null part of the fit (in standardised units) as intercept, slope (and curvature) in x, Y units."""
    a, b = beta[0], beta[1]
    c = beta[2] if null == "quadratic" else 0.0
    out = {"intercept": float(ym + ys * (a - b * xm / xs + c * xm * xm / xs ** 2)),
           "slope": float(ys * (b / xs - 2 * c * xm / xs ** 2))}
    if null == "quadratic":
        out["curvature"] = float(ys * c / xs ** 2)
    return out


__all__ = ["locate", "METHODS", "NULLS", "RESAMPLE"]
