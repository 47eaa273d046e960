"""95 % intervals for headline numbers, and the precision an interval supports: the one
home of the project's interval statistics (each has a coverage test in
``tests/unit/metrics/test_interval_coverage.py``).

Every headline number in ``metrics.json`` says what kind of number it is
(:data:`geolip_lib.results.KINDS`): **exact** (computed on all of it: ``interval="exact"``,
no interval), **sampled** (an interval over the sampling) or **over seeds**. The ways to get
an interval, by what the notebook sampled:

- :func:`bootstrap` — a statistic of sampled items (volumes of random simplices, sampled
  pairs, sampled rows): resample the items with replacement. This is ``scipy.stats.bootstrap``
  (BCa by default, percentile on request); nothing here re-implements it.
- :func:`bootstrap_weighted` — a statistic that needs the whole sample at once (PR of a
  covariance, mean pairwise cosine of a row sample): resampling rows is the same as giving
  each row a multinomial count, so the statistic is written as a function of per-row
  weights and evaluated for ``n_boot`` weight vectors (scipy's bootstrap cannot do that
  without materialising every resample).
- :func:`over_seeds` — a notebook that repeats the whole measurement over several seeds:
  a Student-t interval of the mean over seeds; :func:`null_over_seeds` — a null model is a
  distribution: the 95 % prediction interval of one draw of the null over its own seeds
  (at least :data:`N_NULL_SEEDS`);
- :func:`pair_bootstrap` — paired items resampled together (scipy's paired bootstrap),
  with a grid-valued option; :func:`proportion_interval` — a Wilson score interval of
  ``k`` of ``n``; :func:`spread_interval` — the chi-square interval of a std over seeds;
- :func:`~geolip_lib.metrics.covariance_bootstrap.covariance_stat_estimate` — a biased statistic
  of a row sample (PR): the bias-corrected estimate with its basic interval and the plug-in beside
  it (its own module, with the weighted statistics :func:`bootstrap_weighted` takes);
- :func:`redraw_estimate` — a statistic of a random sample from a population that is known
  whole (random simplices of an embedding table): fresh samples drawn from the population
  itself give the sampling distribution, heavy tails included, where resampling the one sample
  cannot (the pentachoron CV's BCa interval covered 78 % on a table with 1 % outlier rows;
  the redrawn one 96 %).

:class:`Interval` is the one record for all three; :func:`format_value` prints
``value [lo, hi]`` to the decimal that the interval's half-width supports.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional

import numpy as np
from scipy import stats

from ..results import KINDS, LEVEL, Interval, _bounds, exact, kind_of, outside, separates  # noqa: F401 - the interval record lives at the bottom layer
from ..validation import fail

N_BOOT = 1000
#: fresh draws of the whole sample behind :func:`redraw_estimate`
N_REDRAWS = 400
#: the measured coverage of the pentachoron CV's redrawn interval (95 % nominal), by simulation: 200 repetitions
#: of 1000 subsets of 2000-row, 64-d tables (±1.5 %), the table's CV from 4 million subsets
REDRAW_COVERAGE = ("simulated coverage of the table's CV, 200 repetitions of 1000 subsets each: Gaussian table 0.970 "
                   "(BCa over the one sample 0.965); lognormal norms (sd 0.3) 0.960 (0.950); 1 % of rows at 3x "
                   "the norm 0.955 (0.780); 0.5 % at 4x 0.960 (0.870); Student-t(3) rows 0.950 (0.730)")
#: seeds of every Gaussian / random-init null (its interval is over them)
N_NULL_SEEDS = 5


def _nan(method: str) -> Interval:
    return Interval(float("nan"), float("nan"), method)


#: memory of one vectorised call of a bootstrap's statistic (resamples and BCa's jackknife, float64): scipy
#: evaluates ``batch`` resamples of ``n`` items at once, and without a batch its jackknife holds ``n x n`` items
#: (an enumerated table's 53 130 simplices, paired: 45 GB; AntiBERTy's notebook 01 was killed by the OOM killer)
BOOT_BYTES = 64 * 2**20


def bootstrap(data: Any, statistic: Callable[..., Any] = np.mean, *, n_boot: int = N_BOOT,
              level: float = LEVEL, seed: int = 0, method: str = "BCa", what: str = "items",
              batch_bytes: int = BOOT_BYTES) -> Interval:
    """Bootstrap interval of ``statistic`` over the items (axis 0) of ``data``.

    Parameters
    ----------
    data : array-like, shape (n,) or (n, ...)
        The sampled items; NaNs are dropped (1-D data only).
    statistic : callable
        ``statistic(x, axis=-1)`` vectorised as ``scipy.stats.bootstrap`` expects
        (``np.mean``, :func:`cv`, ``np.median`` ...).
    method : {"BCa", "percentile", "basic"}
        scipy's interval method.
    what : str
        Name of the items, for the method string ("simplices", "pairs", "rows").
    batch_bytes : int
        Memory bound of one vectorised evaluation (:data:`BOOT_BYTES`); the interval does not depend on it
        (scipy draws the same resamples whatever the batch).
    """
    x = np.asarray(data, dtype=np.float64)
    if x.ndim == 1:
        x = x[np.isfinite(x)]
    n = x.shape[0] if x.ndim else 0
    label = f"bootstrap {method}, {n_boot} resamples of {n} {what}"
    if n < 3 or np.ptp(x) == 0:
        if n >= 3 and np.ptp(x) == 0:  # a constant sample: the statistic cannot move
            v = float(statistic(x, axis=-1)) if x.ndim == 1 else float("nan")
            return Interval(v, v, label)
        return _nan(f"no interval: {n} {what} (a bootstrap needs at least 3)")
    # a degenerate BCa (a statistic that barely moves) divides by zero inside scipy: that is
    # handled below by falling back to the percentile interval, not shown to the reader
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", getattr(stats, "DegenerateDataWarning", RuntimeWarning))
        batch = max(1, int(batch_bytes // (8 * x.size)))  # rows of n items (x.size: n times the trailing dims)
        res = stats.bootstrap((x,), statistic, n_resamples=n_boot, confidence_level=level, method=method,
                              random_state=np.random.default_rng(seed), vectorized=True, axis=0, batch=batch)
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)) and method == "BCa":  # degenerate BCa -> percentile
        return bootstrap(data, statistic, n_boot=n_boot, level=level, seed=seed, method="percentile", what=what,
                         batch_bytes=batch_bytes)
    return Interval(lo, hi, label, level)


def bootstrap_weighted(n: int, weighted_statistic: Callable[[np.ndarray], Any], *, n_boot: int = 200,
                       level: float = LEVEL, seed: int = 0, what: str = "rows", batch: int = 50) -> Interval:
    """Percentile bootstrap of a statistic written as a function of per-item counts.

    Resampling ``n`` items with replacement gives item ``i`` a multinomial count ``w_i``
    (``sum w = n``). ``weighted_statistic(W)`` receives a ``(b, n)`` float64 array of such
    counts and returns ``b`` values; it evaluates the statistic on each resample without
    copying rows (for example ``PR`` from ``X.T @ (w * X)``).
    """
    if n < 3:
        return _nan(f"no interval: {n} {what} (a bootstrap needs at least 3)")
    rng = np.random.default_rng(seed)
    vals: list[np.ndarray] = []
    p = np.full(n, 1.0 / n)
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        W = rng.multinomial(n, p, size=b).astype(np.float64)
        vals.append(np.asarray(weighted_statistic(W), dtype=np.float64).reshape(b))
    v = np.concatenate(vals)
    v = v[np.isfinite(v)]
    a = (1 - level) / 2
    label = f"bootstrap percentile, {n_boot} resamples of {n} {what}"
    if len(v) < 2:
        return _nan(label)
    return Interval(float(np.quantile(v, a)), float(np.quantile(v, 1 - a)), label, level)


def over_seeds(values: Any, *, level: float = LEVEL, prediction: bool = False) -> Interval:
    """Student-t interval of the mean of per-seed values (each seed one full repetition).

    ``prediction=True``: the prediction interval of one further seed's value,
    ``mean ± t·s·sqrt(1 + 1/n)`` (:func:`null_over_seeds`).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    n = len(v)
    label = (f"95 % prediction interval of one seed's value, t over {n} seeds" if prediction
             else f"t interval of the mean over {n} seeds")
    if n < 2:
        return Interval(float("nan"), float("nan"), f"no interval: {n} seed(s) (at least 2 needed)", level,
                        "over_seeds")
    m, s = float(v.mean()), float(v.std(ddof=1))
    h = float(stats.t.ppf(0.5 + level / 2, n - 1)) * s * math.sqrt((1 + 1 / n) if prediction else 1 / n)
    return Interval(m - h, m + h, label, level, "over_seeds")


def logit_of_proportions(fin: np.ndarray) -> np.ndarray:
    """The logits of proportions in [0, 1] (finite values), for an interval on the logit scale.

    Values of exactly 0 or 1 (a fraction of weights below a threshold that every weight of a
    small sample passed) are moved in by half the smallest nonzero distance to a bound among
    the values, and by ``0.5e-6`` when every value is at a bound: a fixed ``5e-16`` made one seed
    at 1.0 beside four at 0.999999 a logit of 35 beside 14, and the null's interval [0, 1].
    """
    fin = np.asarray(fin, dtype=np.float64)
    dist = np.minimum(fin, 1 - fin)
    inner = dist[dist > 0]
    eps = float(inner.min()) / 2 if len(inner) else 0.5e-6
    c = np.clip(fin, eps, 1 - eps)
    return np.log(c) - np.log1p(-c)


def null_over_seeds(values: Any, *, level: float = LEVEL, what: str = "", proportion: bool = False,
                    lower: Optional[float] = None) -> dict:
    """A null model as a distribution: ``{"value": mean, "interval", "per_seed"}`` over its own seeds.

    The interval is the 95 % prediction interval of one draw of the null
    (:func:`over_seeds` with ``prediction=True``): where a network (or a Gaussian) of this
    shape lands, not how well its mean is known, so a value outside it is one the null
    rarely gives. ``what`` names the seeds ("random-init seeds") in the method string.

    ``proportion=True`` (a fraction in [0, 1], e.g. random-init Q sparsity): the prediction
    interval is taken on the logit scale and mapped back, so it stays inside [0, 1] (a t interval
    on the raw scale printed [0.9999977, 1.0000014]); values of exactly 0 or 1 are moved in
    before the logit (:func:`logit_of_proportions`). The value stays the plain mean.

    ``lower``: the least the quantity can be (0 for a magnitude, a mean |cosine|, an overlap): the
    prediction interval is cut there (a t interval of MPNet's cross-layer |cosine| null reached
    −0.00016), and its method says so.
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    fin = v[np.isfinite(v)]
    if proportion:
        if ((fin < 0) | (fin > 1)).any():
            fail("values", f"proportion=True needs values in [0, 1], got {fin.min():g}..{fin.max():g}")
        z = logit_of_proportions(fin)
        iz = over_seeds(z, level=level, prediction=True)
        lo, hi = (float(1 / (1 + np.exp(-t))) if math.isfinite(t) else float("nan") for t in (iz.lo, iz.hi))
        if len(fin) and math.isfinite(lo):  # the plain mean lies between the seeds' values, so inside; by round-off
            lo, hi = min(lo, float(fin.mean())), max(hi, float(fin.mean()))
        iv = Interval(lo, hi, iz.method.replace("t over", "t on the logit scale over"), iz.level, iz.kind)
    else:
        iv = over_seeds(fin, level=level, prediction=True)
    iv = cut_below(iv, lower, fin)
    if what:
        iv = Interval(iv.lo, iv.hi, f"{iv.method} ({what})", iv.level, iv.kind)
    return {"value": float(fin.mean()) if len(fin) else None, "interval": iv,
            "per_seed": [float(x) if math.isfinite(x) else None for x in v]}


def cut_below(iv: Interval, lower: Optional[float], values: Any = ()) -> Interval:
    """``iv`` cut at ``lower``, the least the quantity can be (0 for a magnitude), its method saying so; ``iv``
    itself when it does not reach below. A seed's value below ``lower`` is a caller's error (the floor is
    wrong), not something to hide."""
    if lower is None or not math.isfinite(iv.lo) or iv.lo >= lower:
        return iv
    v = np.asarray(values, dtype=np.float64).ravel()
    if len(v) and (v[np.isfinite(v)] < lower).any():
        fail("values", f"lower={lower:g}, but a seed's value is {np.nanmin(v):g}")
    return Interval(float(lower), max(iv.hi, float(lower)), f"{iv.method}, cut at {lower:g} (the quantity cannot "
                    "be lower)", iv.level, iv.kind)


def spread_interval(values: Any, *, relative: bool = False, level: float = LEVEL) -> Interval:
    """Interval of the standard deviation over seeds: the chi-square interval for a normal
    sample's sigma, ``s·sqrt((n−1)/χ²)`` with ``s`` the ddof=1 std.

    ``relative=True`` divides by ``|mean|`` and multiplies by 100 (the CV across seeds in %,
    the mean treated as fixed: it is known far better than the spread).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v)]
    n = len(v)
    label = f"chi-square interval of the std over {n} seeds" + (", / |mean| in %" if relative else "")
    if n < 2:
        return Interval(float("nan"), float("nan"), label, level, "over_seeds")
    s = float(v.std(ddof=1))
    a = (1 - level) / 2
    lo, hi = (s * np.sqrt((n - 1) / stats.chi2.ppf(q, n - 1)) for q in (1 - a, a))
    scale = 100.0 / abs(float(v.mean())) if relative and v.mean() != 0 else 1.0
    return Interval(float(lo * scale), float(hi * scale), label, level, "over_seeds")


def seed_intervals(per_seed: list[dict], keys=None) -> dict:
    """``{metric: t interval of the mean over seeds}`` for the numeric metrics of ``per_seed``."""
    if not per_seed:
        return {}
    keys = keys or [k for k, v in per_seed[0].items() if isinstance(v, (int, float, np.floating))]
    return {k: over_seeds([r.get(k, np.nan) for r in per_seed]) for k in keys}


def proportion_interval(k: int, n: int, *, level: float = LEVEL, what: str = "items") -> Interval:
    """Wilson score interval of a proportion ``k / n`` (``scipy.stats.binomtest``).

    The right interval for a share of ``n`` items treated as independent draws (it stays
    inside ``[0, 1]`` and is sensible at ``k = 0`` or ``k = n``, where a bootstrap collapses).
    """
    if n < 1:
        return Interval(float("nan"), float("nan"), f"Wilson score interval, {k} of {n} {what}", level)
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return Interval(float(ci.low), float(ci.high), f"Wilson score interval, {k} of {n} {what}", level)


def clipped(iv: Interval, lo: float = 0.0, hi: float = 1.0) -> Interval:
    """``iv`` clipped to the range a statistic can take (a t interval of a mean of
    accuracies over few seeds can pass 1); the method string says so when it bites."""
    new_lo, new_hi = max(iv.lo, lo), min(iv.hi, hi)
    if (new_lo, new_hi) == (iv.lo, iv.hi):
        return iv
    return Interval(new_lo, new_hi, f"{iv.method}, clipped to [{lo:g}, {hi:g}]", iv.level, iv.kind)


def scale_interval(interval: Interval, factor: float, what: str = "") -> Interval:
    """``interval`` times a positive exact ``factor`` (PR -> PR / D); ``what`` is appended to the method."""
    if not factor > 0:
        raise ValueError(f"factor: expected a positive number, got {factor!r}")
    method = f"{interval.method}{', ' + what if what else ''}"
    return Interval(interval.lo * factor, interval.hi * factor, method, interval.level, interval.kind)


def pair_bootstrap(statistic: Callable[..., Any], *arrays: np.ndarray, n_boot: int = N_BOOT,
                   seed: int = 0, what: str = "pairs", batch: int = 100, discrete: bool = False) -> Interval:
    """Percentile bootstrap of ``statistic(*arrays, axis=-1)`` over paired items.

    Parameters
    ----------
    statistic : callable
        Vectorised: receives each array resampled with the same indices, shape
        ``(batch, n)``, and returns ``batch`` values.
    *arrays : (n,) arrays
        Paired per-item values (a pair's similarity and its cosine in each representation).
    n_boot, seed : int
    what : str
        Name of the items in the method string.
    batch : int
        Resamples evaluated at once (memory ``batch × n`` per array).
    discrete : bool
        The statistic takes values on a grid: the bounds are the resampled values at the
        2.5 % / 97.5 % ranks (no interpolation between grid points).

    Returns
    -------
    Interval (NaN bounds when fewer than 3 items or a degenerate statistic).
    """
    data = tuple(np.asarray(a, dtype=np.float64) for a in arrays)
    n = data[0].shape[0]
    label = f"{'paired ' if len(data) > 1 else ''}bootstrap percentile, {n_boot} resamples of {n} {what}"
    if n < 3 or any(a.shape != (n,) for a in data):
        return Interval(float("nan"), float("nan"), label)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = stats.bootstrap(data, statistic, paired=True, vectorized=True, n_resamples=n_boot,
                              batch=batch, method="percentile", random_state=np.random.default_rng(seed))
    if discrete:
        v = np.asarray(res.bootstrap_distribution, dtype=np.float64)
        a = (1 - LEVEL) / 2
        return Interval(float(np.quantile(v, a, method="lower")), float(np.quantile(v, 1 - a, method="higher")), label)
    return Interval(float(res.confidence_interval.low), float(res.confidence_interval.high), label)


def cv(x: Any, axis: int = -1) -> Any:
    """Coefficient of variation ``std / mean`` (population std), vectorised over ``axis``."""
    x = np.asarray(x, dtype=np.float64)
    return x.std(axis=axis) / x.mean(axis=axis)


def redraw_estimate(value: float, draws: Any, statistic: Callable[..., Any] = cv, *, sample: Any = None,
                    level: float = LEVEL, what: str = "simplices", population: str = "the table"
                    ) -> tuple[float, Interval]:
    """Interval of a statistic of a random sample from a population that is known whole, by fresh draws.

    An embedding table is the whole population of its 5-row subsets: the pentachoron CV of
    ``m`` random subsets estimates the CV over all of them, and the sampling distribution of
    that estimate can be drawn directly — ``B`` fresh samples of ``m`` subsets from the table —
    instead of resampled from the one sample. Resampling the sample (BCa) cannot see the rare
    subsets it missed: on a heavy-tailed table (a few rows of large norm, whose subsets have
    large volumes) the CV of ``m`` subsets is usually below the table's, and the BCa interval
    covered the table's CV 73–87 % of the time, this interval 94–96 % (:data:`REDRAW_COVERAGE`;
    tests/unit/metrics/test_interval_coverage.py).
    Here the pivot ``estimate − truth`` is read off the fresh draws around the pooled
    statistic of all of them (``B·m`` items, far closer to the truth than any one draw): the
    basic interval ``[v − (q_hi − p), v − (q_lo − p)]``, with ``v`` the value and ``p`` the
    pooled statistic; it is widened to hold ``v`` where the quantiles of ``B`` draws leave it out.

    Parameters
    ----------
    value : float
        The statistic of the sample that was measured (the headline).
    draws : array-like, shape (B, m)
        The items of ``B`` fresh samples of the same size, drawn as the measured one was but
        with other seeds; NaN marks a dropped item (a degenerate simplex).
    statistic : callable
        ``statistic(x, axis=-1)`` of a 1-D array of items (:func:`cv`).
    sample : array-like, optional
        The measured sample's items, pooled with the draws.
    what, population : str
        Names in the method string.

    Returns
    -------
    (pooled, Interval)
        ``pooled``: the statistic of every item of the draws (and ``sample``).
    """
    d = np.asarray(draws, dtype=np.float64)
    if d.ndim != 2:
        fail("draws", f"expected a (B, m) array of fresh samples, got shape {d.shape}")
    B, m = d.shape
    label = f"redrawn basic interval, {B} fresh draws of {m} {what} from {population}"
    with np.errstate(invalid="ignore", divide="ignore"):
        per = np.array([float(statistic(r[np.isfinite(r)], axis=-1)) if np.isfinite(r).sum() >= 3 else np.nan
                        for r in d])
        pool = d[np.isfinite(d)]
        if sample is not None:
            x = np.asarray(sample, dtype=np.float64).ravel()
            pool = np.concatenate([pool, x[np.isfinite(x)]])
        pooled = float(statistic(pool, axis=-1)) if pool.size >= 3 else float("nan")
    per = per[np.isfinite(per)]
    if len(per) < 20 or not math.isfinite(pooled) or value is None or not math.isfinite(value):
        return pooled, _nan(f"no interval: {len(per)} usable draws ({label})")
    a = (1 - level) / 2
    q_lo, q_hi = (float(q) for q in np.quantile(per, [a, 1 - a]))
    lo, hi = value - (q_hi - pooled), value - (q_lo - pooled)
    name = "CV" if statistic is cv else getattr(statistic, "__name__", "statistic")
    return pooled, Interval(min(lo, value), max(hi, value), f"{label} (pooled {name} of "
                            f"{pool.size} {what}: {pooled:.4g})", level)


# ---------------------------------------------------------------- printing at supported precision
def decimals_for(half_width: float, value: float | None = None, max_decimals: int = 8) -> int:
    """Decimals that an interval of this half-width supports.

    The half-width is kept to one significant digit (two when that digit is 1, so that
    0.14 does not become 0.1), and the value is printed to the same decimal place.
    """
    if half_width is None or not math.isfinite(half_width) or half_width <= 0:
        if value is None or not math.isfinite(value) or value == 0:
            return 4
        return max(0, min(max_decimals, 4 - int(math.floor(math.log10(abs(value))))))
    e = int(math.floor(math.log10(half_width)))
    lead = int(half_width / 10 ** e)
    sig = 2 if lead == 1 else 1
    return max(0, min(max_decimals, -(e - sig + 1)))


def format_value(value: Any, interval: Any = None, fmt: str | None = None) -> str:
    """``value [lo, hi]`` at the precision the interval supports; ``fmt`` when there is none
    or the number is exact (``lo == hi == value``).

    ``interval`` is an :class:`Interval`, a ``{"lo", "hi"}`` dict or a ``(lo, hi)`` pair.
    """
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    lo, hi = _bounds(interval)
    if lo is None or lo == hi == value:  # no interval, or an exact number (no sampling)
        if fmt:
            try:
                return format(value, fmt)
            except (TypeError, ValueError):
                pass
        return f"{value:.4g}" if isinstance(value, float) else str(value)
    d = decimals_for((hi - lo) / 2, float(value))
    return f"{_fixed(value, d)} [{_fixed(lo, d)}, {_fixed(hi, d)}]"


def _fixed(x: float, d: int) -> str:
    """``x`` to ``d`` decimals, without the sign of a number that rounds to zero ("-0.0")."""
    s = f"{x:.{d}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


__all__ = ["Interval", "KINDS", "bootstrap", "bootstrap_weighted",
           "over_seeds", "null_over_seeds", "cut_below", "spread_interval", "seed_intervals", "proportion_interval", "clipped",
           "scale_interval", "pair_bootstrap", "cv", "redraw_estimate", "N_REDRAWS", "REDRAW_COVERAGE",
           "decimals_for", "format_value", "separates", "exact", "kind_of", "outside", "LEVEL", "N_BOOT", "N_NULL_SEEDS",
           "BOOT_BYTES"]


def holding(value: float, iv: Interval, note: str = "; widened to hold the estimate") -> Interval:
    """``iv`` widened to hold ``value`` where a percentile bootstrap of a statistic that is not a mean (a rank
    correlation on a few items, CKA with repeated inputs, a ratio of weighted means) put its point estimate
    outside, with ``note`` added to the method; a non-finite interval or one that holds it is returned as it is."""
    if not iv.finite or iv.lo <= value <= iv.hi:
        return iv
    return Interval(min(iv.lo, value), max(iv.hi, value), iv.method + note, iv.level)
