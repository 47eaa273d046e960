"""Power of the project's change-point test against a kink of a given size, by simulation.

A change-point test that finds nothing is not evidence of no change unless it could have
found one (issue 22 §2). :func:`kink_power` answers "how often would
:func:`geolip_lib.metrics.changepoint.locate` find a kink of this size, on this grid, with
this many seeds, at this noise?": it simulates curves equal to the recorded no-change fit
plus a hinge ``slope_change * (x - at)_+``, adds Gaussian noise at the seeds' measured
spread, and runs the same test (same model, same no-change model, fewer resamples) on each.
When the power falls short it also gives what would decide it: the smallest kink found
with the target power (slope change doubled until found), and the seeds that would find the
seed's kink.

Noise model (stated with the result): independent Gaussian errors along the grid with the
pooled seed-to-seed standard deviation (with 1-2 seeds: the change fit's residual standard
deviation). Smooth per-seed curves make the test less powerful (the module docstring of
``metrics.changepoint`` gives its measured calibration), so the power here is an upper bound
for such data.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Mapping, Optional

import numpy as np

from ..metrics.changepoint import locate

__all__ = ["kink_power", "noise_sd"]

#: doublings tried when looking for the smallest detectable kink / the seeds that decide
MAX_DOUBLINGS = 5
MAX_SEEDS = 24


def noise_sd(fit: Mapping, n_seeds: int) -> Optional[float]:
    """The per-point noise of one seed's curve: the pooled seed-to-seed sd at the grid points
    measured by >= 2 seeds, else the change fit's residual sd."""
    sem = np.asarray([np.nan if v is None else v for v in fit.get("sem") or []], dtype=float)
    n = np.asarray(fit.get("n") or [], dtype=float)
    ok = np.isfinite(sem) & (n > 1) if len(sem) == len(n) else np.zeros(0, bool)
    if n_seeds >= 2 and ok.any():
        return float(np.sqrt(np.mean(sem[ok] ** 2 * n[ok])))
    rss, m = fit.get("rss_change"), fit.get("n_grid_used") or len(fit.get("x") or [])
    k = 4 if fit.get("null") == "quadratic" else 3
    if rss is None or m - k <= 0:
        return None
    return float(math.sqrt(max(rss, 0.0) / (m - k)))


def _power(x: np.ndarray, base: np.ndarray, sd: float, at: float, c: float, n_seeds: int, reps: int, n_boot: int,
           method: str, null: str, seed: int) -> float:
    rng = np.random.default_rng(seed)
    mean = base + c * np.maximum(x - at, 0.0)
    found = 0
    for r in range(reps):
        Y = mean[None, :] + rng.normal(0.0, sd, size=(n_seeds, len(x)))
        found += bool(locate(x, Y, method=method, null=null, n_boot=n_boot, seed=seed + 1 + r)["found"])
    return found / reps


@lru_cache(maxsize=32)
def _cached(key: str) -> dict:
    a = json.loads(key)
    x, base = np.asarray(a["x"], float), np.asarray(a["base"], float)
    sd, at, c, n, reps, nb = a["sd"], a["at"], a["c"], a["n_seeds"], a["reps"], a["n_boot"]
    kw = dict(method=a["method"], null=a["null"], seed=a["seed"])
    power = _power(x, base, sd, at, c, n, reps, nb, **kw)
    out = {"power": power, "slope_change": c, "n_seeds": n, "reps": reps, "n_boot": nb, "noise_sd": sd,
           "grid": list(a["x"]), "target": a["target"], "smallest_detectable": None, "seeds_needed": None}
    if power >= a["target"] or not a["ladder"]:
        return out
    small = max(reps // 2, 10)  # the ladder's steps are coarse: half the simulations each
    for k in range(1, MAX_DOUBLINGS + 1):  # the smallest kink found with the target power (in doublings)
        if _power(x, base, sd, at, c * 2 ** k, n, small, nb, **kw) >= a["target"]:
            out["smallest_detectable"] = c * 2 ** k
            break
    m = n
    while m < MAX_SEEDS:  # the seeds that would find the seed's own kink
        m = min(2 * m, MAX_SEEDS)
        if _power(x, base, sd, at, c, m, small, nb, **kw) >= a["target"]:
            out["seeds_needed"] = m
            break
    return out


def kink_power(fit: Mapping, n_seeds: int, *, at: float, slope_change: float, reps: int = 60, n_boot: int = 49,
               target: float = 0.8, seed: int = 0, ladder: bool = True) -> Optional[dict]:
    """Power of :func:`~geolip_lib.metrics.changepoint.locate` against a kink of ``slope_change``
    at ``at``, on the grid and noise of a recorded fit (``locate(...)["fit"]``).

    Returns ``power`` (fraction of ``reps`` simulated curves where the change is found),
    ``slope_change``, ``n_seeds``, ``noise_sd``, ``reps``, ``n_boot``, ``grid``, ``target``
    and, when the power is below ``target``, ``smallest_detectable`` (the smallest doubling of
    ``slope_change`` found with the target power, or None up to 2**5 times) and
    ``seeds_needed`` (the smallest doubling of the seeds that finds the given kink, up to 24,
    or None); ``ladder=False`` skips those two searches. None when the fit lacks what the
    simulation needs (grid, no-change fit, noise).
    """
    x, base = fit.get("x"), fit.get("null_fit")
    if not x or not base or len(x) != len(base) or any(v is None for v in base):
        return None
    sd = noise_sd(fit, n_seeds)
    if sd is None or not math.isfinite(sd) or sd <= 0:
        return None
    key = json.dumps({"x": [float(v) for v in x], "base": [float(v) for v in base], "sd": sd, "at": float(at),
                      "c": float(slope_change), "n_seeds": int(max(n_seeds, 1)), "reps": int(reps),
                      "n_boot": int(n_boot), "method": fit.get("model") or "segmented",
                      "null": fit.get("null") or "line", "seed": int(seed), "target": float(target),
                      "ladder": bool(ladder)}, sort_keys=True)
    return dict(_cached(key))
