"""Power of the project's change-point test against a kink of a given size, from the observed curves.

A change-point test that finds nothing is not evidence of no change unless it could have
found one. :func:`kink_power` answers "how often would
:func:`geolip_lib.metrics.changepoint.locate` find a kink of this size in curves like the
ones measured?" from the measured per-seed curves themselves:

- **injected**: the kink ``slope_change * (x - at)_+`` added to every observed seed curve and
  the same test run on them: would the test have found a kink of that size in *these* data
  (``injected``: found, p, and the same at ½×, 2×, 4× the size);
- **power**: the fraction of ``reps`` simulated experiments where the test finds it. Each
  experiment draws ``n_seeds`` seed curves as the observed no-change fit plus the kink plus
  Gaussian seed deviations with the covariance of the *observed* seeds' deviations left once
  each seed's own no-change part (offset, tilt, curvature: what the test removes from every
  seed) is taken out, shrunk to its diagonal as the test's own null is (Schäfer–Strimmer,
  ``changepoint_search._shrunk_root``). The level spread that the no-change model absorbs
  never counts as noise; what is left has the observed spread along the grid, each grid point's
  variance floored at the pooled spread (:func:`noise_root`: with two seeds one grid point can
  look near-noiseless and make the test look powerful).
  (The earlier simulation drew independent noise at the seeds' level spread at every grid
  point, which overstated the hinge coefficient's spread ~120× on tiny-t5.)
- **hinge_sd**: the observed seed-to-seed standard deviation of each seed's coefficient of the
  hinge at ``at`` orthogonal to the no-change basis, in the units of ``slope_change`` (what
  the test's t at the seed's breakpoint divides by); ``absorbed``: the fraction of a hinge's
  energy (sum of squares on the grid) that the no-change basis explains — on the demo's 8-point
  grid the quadratic absorbs 98 % of it and a line 77 %: the test sees only the rest.

When the power falls short it also gives what would decide it: the smallest kink found
with the target power (slope change doubled until found), and the seeds that would find the
seed's kink.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Mapping, Optional

import numpy as np

from ..metrics.changepoint import locate
from ..metrics.changepoint_search import _null_basis, _shrunk_root

__all__ = ["kink_power", "hinge_absorbed", "hinge_coefficients", "observed_curves", "noise_root"]

#: doublings tried when looking for the smallest detectable kink / the seeds that decide
MAX_DOUBLINGS = 5
MAX_SEEDS = 24
#: multiples of the seed's kink injected into the observed curves
INJECTED = (0.5, 1.0, 2.0, 4.0)


def _hinge(x: np.ndarray, at: float) -> np.ndarray:
    return np.maximum(x - at, 0.0)


def _basis(x: np.ndarray, null: str) -> np.ndarray:
    """The no-change basis on ``x`` (standardised like ``locate`` does)."""
    xz = (x - x.mean()) / x.std()
    return _null_basis(xz, null)


def hinge_absorbed(x: Any, at: float, null: str = "quadratic") -> float:
    """Fraction of the hinge ``(x - at)_+``'s energy on the grid ``x`` that the no-change model
    ``null`` ("line" or "quadratic") explains: ``|P h|² / |h|²`` with ``P`` the least-squares
    projection onto the null basis. What is left is all the test can see of a kink at ``at``."""
    x = np.asarray(x, dtype=float)
    h = _hinge(x, at)
    hh = float(h @ h)
    if hh == 0:
        return float("nan")
    B = _basis(x, null)
    coef, *_ = np.linalg.lstsq(B, h, rcond=None)
    ph = B @ coef
    return float(ph @ ph / hh)


def hinge_coefficients(x: Any, Y: Any, at: float, null: str = "quadratic") -> np.ndarray:
    """Each seed curve's (rows of ``Y``, no NaN) coefficient of the hinge at ``at`` made
    orthogonal to the no-change basis: adding ``c (x - at)_+`` to a curve adds exactly ``c``."""
    x, Y = np.asarray(x, dtype=float), np.atleast_2d(np.asarray(Y, dtype=float))
    h = _hinge(x, at)
    B = _basis(x, null)
    r = h - B @ np.linalg.lstsq(B, h, rcond=None)[0]
    rr = float(r @ r)
    if rr <= 1e-300:
        return np.full(len(Y), np.nan)
    return Y @ r / rr


def _filled(Y: np.ndarray) -> np.ndarray:
    """Missing values (NaN) filled as ``locate`` fills them: the other seeds' mean there plus
    this seed's mean deviation elsewhere."""
    mean = np.nanmean(Y, axis=0)
    fin = np.isfinite(Y)
    off = np.array([np.mean(Y[i, fin[i]] - mean[fin[i]]) if fin[i].any() else 0.0 for i in range(len(Y))])
    return np.where(fin, Y, mean[None, :] + off[:, None])


def observed_curves(sweep: Mapping, quantity: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """(grid, seed curves) of a recorded sweep (``metrics.phase.sweep``: ``alphas`` and one row
    per seed of ``quantity``, ``None`` for a missing value); None when absent or malformed."""
    if not isinstance(sweep, Mapping):
        return None
    x, Y = sweep.get("alphas"), sweep.get(quantity)
    try:
        x = np.asarray(x, dtype=float)
        Y = np.asarray([[np.nan if v is None else v for v in row] for row in Y], dtype=float)
    except (TypeError, ValueError):
        return None
    if x.ndim != 1 or Y.ndim != 2 or Y.shape[1] != len(x) or len(x) < 4 or not np.isfinite(x).all() \
            or np.isinf(Y).any():
        return None
    keep = np.isfinite(Y).any(axis=1)
    cols = np.isfinite(Y[keep]).any(axis=0)
    if keep.sum() < 1 or cols.sum() < 4:
        return None
    return x[cols], Y[keep][:, cols]


def noise_root(R: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A square root (``rootᵀ root = S``) of the simulation's noise covariance from the seeds'
    residual deviations ``R`` (n seeds, m grid points; their no-change part, basis ``B``, removed).

    The covariance is the observed one shrunk to its diagonal (``_shrunk_root``), and then each
    grid point's variance is floored at the pooled spread: white noise of the pooled variance
    ``σ² = Σ_j var_j / tr(P)`` leaves ``σ² P_jj`` at point ``j`` once the no-change part is
    removed (``P`` the projection off ``B``), so ``var_j ← max(var_j, σ² P_jj)``, the correlations
    kept. With two seeds the shrinkage has nothing to estimate its intensity from (the two seeds'
    deviations are ±the same vector, so the observed covariance has rank 1 and every direction
    orthogonal to it would be simulated noiseless): the covariance is then its diagonal. With two
    seeds a point's variance also rests on one degree of freedom and can come out
    near zero (sd 0.0005 at alpha 0.4 of SmolLM2's sweep, whose simulated experiments
    then found every kink at 4 seeds while the real test found a 32x kink half the time); the
    floor keeps one quiet grid point from making the test look powerful. For noise that is white
    along the grid the floor changes nothing (in expectation)."""
    if len(R) == 2:  # both seeds' products are the same: Schäfer–Strimmer reads lam 0, a rank-1 covariance
        S = np.diag(np.diag(R.T @ R))
    else:
        root = _shrunk_root(R)[0]
        S = root.T @ root
    v = np.clip(np.diag(S).copy(), 0.0, None)
    m = len(v)
    P = np.eye(m) - B @ np.linalg.pinv(B)
    pjj = np.clip(np.diag(P), 0.0, None)
    sigma2 = float(v.sum() / pjj.sum()) if pjj.sum() > 0 else 0.0
    t = np.maximum(v, sigma2 * pjj)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(v > 0, np.sqrt(t / np.where(v > 0, v, 1.0)), 0.0)
    S2 = S * g[:, None] * g[None, :]
    S2[np.diag_indices(m)] = t
    ev, V = np.linalg.eigh((S2 + S2.T) / 2)
    return (V * np.sqrt(np.clip(ev, 0.0, None))).T


def _no_change_fit(x: np.ndarray, mean: np.ndarray, null: str) -> np.ndarray:
    B = _basis(x, null)
    return B @ np.linalg.lstsq(B, mean, rcond=None)[0]


def _detects(x, Y, method, null, n_boot, seed) -> tuple[bool, float]:
    r = locate(x, Y, method=method, null=null, n_boot=n_boot, seed=seed)
    return bool(r["found"]), float(r["p_value"])


def _power(x, base, root, at, c, n_seeds, reps, n_boot, method, null, seed) -> float:
    rng = np.random.default_rng(seed)
    mean = base + c * _hinge(x, at)
    found = 0
    for r in range(reps):
        Y = mean[None, :] + rng.standard_normal((n_seeds, root.shape[0])) @ root
        found += _detects(x, Y, method, null, n_boot, seed + 1 + r)[0]
    return found / reps


@lru_cache(maxsize=32)
def _cached(key: str) -> dict:
    a = json.loads(key)
    x = np.asarray(a["x"], float)
    Y = _filled(np.asarray([[np.nan if v is None else v for v in r] for r in a["Y"]], float))
    at, c, reps, nb, target = a["at"], a["c"], a["reps"], a["n_boot"], a["target"]
    method, null, seed = a["method"], a["null"], a["seed"]
    n = len(Y)
    base = _no_change_fit(x, Y.mean(0), null)
    D = Y - Y.mean(0)
    # the seeds' deviations less their no-change part (offset, tilt, curvature: the test removes it from
    # every seed), their covariance shrunk to its diagonal as the test's own null is: the level spread
    # never becomes independent noise per point
    B = _basis(x, null)
    R = D - (B @ np.linalg.lstsq(B, D.T, rcond=None)[0]).T
    root = noise_root(R, B) if n >= 2 else None
    coef = hinge_coefficients(x, Y, at, null)
    out = {"slope_change": c, "n_seeds": n, "reps": reps, "n_boot": nb, "grid": x.tolist(), "target": target,
           "null": null, "at": at, "absorbed": hinge_absorbed(x, at, null),
           "absorbed_line": hinge_absorbed(x, at, "line"),
           "hinge_sd": float(np.std(coef, ddof=1)) if n >= 2 else None,
           "noise": ("Gaussian seed deviations with the covariance of the observed seeds' deviations beyond their own "
                     "no-change part, shrunk to its diagonal, each grid point's variance floored at the pooled "
                     "spread (so that no grid point is quieter than the seeds' spread over the whole grid)"),
           "injected": [{"multiple": k, **dict(zip(("found", "p_value"), _detects(
               x, Y + k * c * _hinge(x, at)[None, :], method, null, a["n_boot_injected"], seed)))} for k in INJECTED],
           "power": None, "smallest_detectable": None, "seeds_needed": None}
    if root is None or not np.isfinite(root).all():
        return out
    kw = dict(method=method, null=null, seed=seed)
    out["power"] = power = _power(x, base, root, at, c, n, reps, nb, **kw)
    if power >= target or not a["ladder"]:
        return out
    small = max(reps // 2, 10)  # the ladder's steps are coarse: half the simulations each
    for k in range(1, MAX_DOUBLINGS + 1):  # the smallest kink found with the target power (in doublings)
        if _power(x, base, root, at, c * 2 ** k, n, small, nb, **kw) >= target:
            out["smallest_detectable"] = c * 2 ** k
            break
    m = n
    while m < MAX_SEEDS:  # the seeds that would find the seed's own kink
        m = min(2 * m, MAX_SEEDS)
        if _power(x, base, root, at, c, m, small, nb, **kw) >= target:
            out["seeds_needed"] = m
            break
    return out


def kink_power(x: Any, Y: Any, *, at: float, slope_change: float, method: str = "segmented",
               null: str = "quadratic", reps: int = 60, n_boot: int = 49, n_boot_injected: int = 199,
               target: float = 0.8, seed: int = 0, ladder: bool = True) -> Optional[dict]:
    """Power of :func:`~geolip_lib.metrics.changepoint.locate` (``method``, ``null``) against a
    kink of ``slope_change`` at ``at``, from the observed seed curves ``Y`` (n_seeds, len(x);
    NaN: missing) — see the module docstring.

    Returns ``power`` (fraction of ``reps`` simulated experiments that find the kink; None with
    one seed: no seed-to-seed covariance to draw from), ``injected`` (the test on the observed
    curves plus ``k`` times the kink, k in ½, 1, 2, 4: ``found``, ``p_value``), ``hinge_sd``,
    ``absorbed`` / ``absorbed_line`` (the hinge's energy the quadratic / a line explains on this
    grid), ``slope_change``, ``n_seeds``, ``reps``, ``n_boot``, ``grid``, ``target``, ``noise``
    and, when the power is below ``target``, ``smallest_detectable`` (the smallest doubling of
    ``slope_change`` found with the target power, or None up to 2**5 times) and
    ``seeds_needed`` (the smallest doubling of the seeds that finds the given kink, up to 24, or
    None); ``ladder=False`` skips those two searches. None when the curves are unusable.
    """
    got = observed_curves({"alphas": x, "q": Y}, "q")
    if got is None:
        return None
    xs, Ys = got
    key = json.dumps({"x": xs.tolist(), "Y": [[None if not math.isfinite(v) else v for v in r] for r in Ys.tolist()],
                      "at": float(at), "c": float(slope_change), "reps": int(reps), "n_boot": int(n_boot),
                      "n_boot_injected": int(n_boot_injected), "method": method, "null": null, "seed": int(seed),
                      "target": float(target), "ladder": bool(ladder)}, sort_keys=True)
    return json.loads(json.dumps(_cached(key)))  # a copy: the cache's dict stays as computed
