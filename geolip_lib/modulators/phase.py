"""The seed's "phase boundary" at alpha = 0.29154 as a measurement (seed 001 §10).

The seed tested 0.29154 as one static alpha of the Procrustes-initialised modulator and
called it the binding/separation boundary, with reference points at 0.01 and 0.5 (relational
Pearson 0.099 -> 0.185, preservation 0.9998 -> 0.176). Nothing in the seed measured where
a transition lies. Here the relational correlation (and the per-token preservation) is
measured over a fine alpha grid for several seeds, and one change point of the seed-mean
curve is located with :func:`geolip_lib.metrics.changepoint.locate` (a stated method, a test
against one straight line, an interval over seeds).

What a seed changes: the anchors of the Procrustes initialisation (so the modulator) and
the relational sample — the seed's own draw, :func:`~geolip_lib.modulators.seed_relational_pairs`
(a subset of ``n_entries`` entries and ``n_pairs`` pairs within it; seed 42 is the sample the
seed itself scored). Only the subset's definitions are encoded at each alpha.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import progress as _progress
from ..lexical.representations import definition_representations
from ..metrics.changepoint import locate
from ..metrics.cosine import row_cosine
from ..metrics.intervals import format_value
from ..results import headline
from ..validation import fail
from .hooks import attach
from .pipeline import (SEED_N_REL, build_procrustes_modulator, pair_cosines, relational_pairs, seed_relational_pairs,
                       wordnet_pair_similarity)
from . import stats
from ..metrics import intervals, pentachoron_cv
from .pipeline_relational import per_token_cosines, relational_comparison
from .stats import pearson, spearman

#: the quantities measured at every (seed, alpha); "pearson" is the one located by default
PHASE_QUANTITIES = ("pearson", "spearman", "gradient", "preservation")


def phase_sweep(lm, matched, encoder_reps, static_reps, alphas: Sequence[float], seeds: Sequence[int], *,
                n_entries: int = SEED_N_REL, n_pairs: int = 50000, n_anchor: int = 3000, n_geo: int = 64,
                similarity: str = "path", max_length: int = 128, batch_size: int = 64,
                progress: bool = False) -> dict:
    """Relational correlation and preservation at each static alpha, for each seed.

    Parameters
    ----------
    lm : LoadedModel
    matched : Matched
        The M matched entries.
    encoder_reps, static_reps : (M, d_model) arrays
        Unmodulated encoder and static representations (for the Procrustes initialisation).
    alphas : sequence of float in [0, 1]
        The grid (sorted here; duplicates removed).
    seeds : sequence of int
        One modulator (anchor draw) and one relational sample per seed.
    n_entries, n_pairs : int
        The seed's relational sample: entries of the subset, pairs drawn within it.
    n_anchor, n_geo : int
        Procrustes initialisation (clipped as in notebook 10).
    similarity : {"path", "wup"}
        WordNet similarity of the pairs (the seed: path).

    Returns
    -------
    dict: ``alphas`` (G,), ``seeds`` (S,), for each of :data:`PHASE_QUANTITIES` an (S, G)
    array, ``n_pairs`` and ``n_entries`` per seed (scored pairs, subset size).
    """
    grid = np.array(sorted({float(a) for a in alphas}), dtype=np.float64)
    if grid.size < 2 or grid.min() < 0 or grid.max() > 1:
        fail("alphas", f"expected at least 2 values in [0, 1], got {list(alphas)!r}")
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        fail("seeds", f"expected distinct seeds, got {seeds!r}")
    M = len(matched)
    E = np.asarray(encoder_reps)
    n_geo = min(n_geo, n_anchor, E.shape[1], M)
    out: dict[str, Any] = {"alphas": grid, "seeds": np.array(seeds), "n_pairs": [], "n_entries": []}
    for q in PHASE_QUANTITIES:
        out[q] = np.full((len(seeds), grid.size), np.nan)
    encode = partial(definition_representations, lm, max_length=max_length, batch_size=batch_size, progress=False)
    for si, seed in enumerate(tqdm(seeds, desc="phase seeds", disable=_progress.disabled(progress), leave=False)):
        mod, _ = build_procrustes_modulator(lm, matched, E, static_reps, n_anchor=n_anchor, n_geo=n_geo, seed=seed)
        gi, gj, subset = seed_relational_pairs(M, n_entries, n_pairs, seed=seed)
        sim = wordnet_pair_similarity(matched, gi, gj, similarity)
        local = np.empty(M, dtype=np.int64)
        local[subset] = np.arange(subset.size)
        s, i, j = relational_pairs(sim, local[gi], local[gj])
        defs = [matched.definitions[k] for k in subset]
        base = encode(defs)
        hi_m, lo_m = s >= 0.25, s < 0.10
        for gk, a in enumerate(grid):
            mod.set_alpha(float(a))
            with attach(lm, mod):
                R = encode(defs)
            c = pair_cosines(R, i, j)
            if s.size > 2 and s.std() > 0 and c.std() > 0:  # else NaN: a missing measurement for locate()
                out["pearson"][si, gk], out["spearman"][si, gk] = pearson(s, c), spearman(s, c)
            if hi_m.any() and lo_m.any():
                out["gradient"][si, gk] = c[hi_m].mean() - c[lo_m].mean()
            out["preservation"][si, gk] = float(np.mean(_row_cos(base, R)))
        out["n_pairs"].append(int(s.size))
        out["n_entries"].append(int(subset.size))
    return out


def _row_cos(A, B) -> np.ndarray:
    """``a·b / (|a| |b| + 1e-12)`` per paired row (:func:`geolip_lib.metrics.cosine.row_cosine`)."""
    return row_cosine(A, B, 1e-12, eps_mode="add")


def locate_boundary(sweep: dict, quantity: str = "pearson", *, null: str = "quadratic", seed: int = 0,
                    n_boot: int = 1000, level: float = 0.95, method: str = "segmented") -> dict:
    """:func:`geolip_lib.metrics.changepoint.locate` on one quantity of :func:`phase_sweep`.

    ``null="quadratic"`` (default) asks whether there is a kink beyond smooth curvature — a
    boundary between two regimes; ``null="line"`` only whether one straight line is enough,
    which a smoothly curved response (preservation falls like ``1 - c alpha^2``) also rejects,
    at a breakpoint that moves with the grid's span.
    """
    if quantity not in PHASE_QUANTITIES:
        fail("quantity", f"expected one of {PHASE_QUANTITIES}, got {quantity!r}")
    return locate(sweep["alphas"], sweep[quantity], method=method, seed=seed, n_boot=n_boot, level=level, null=null)


def boundary_claim(result: dict, sweep: dict, quantity: str = "pearson", *, seed_value: float = 0.29154) -> dict:
    """``metrics["claims"]["phase_boundary"]["alpha"]``: the located breakpoint (None when no
    change is found) with its interval, plus ``found``, ``method``, ``grid``, ``seeds``,
    ``p_value``, ``quantity`` and the best-fitting breakpoint (reported whether or not the
    test finds a change, so a reader sees where the fit put it)."""
    fit = result.get("fit") or {}
    bp, bp_iv = fit.get("breakpoint"), fit.get("breakpoint_interval")
    grid = [float(a) for a in sweep["alphas"]]
    where = f"grid {grid[0]:g}–{grid[-1]:g} ({len(grid)} alphas), {len(sweep['seeds'])} seeds"
    null = (result.get("fit") or {}).get("null", "line")
    if result["found"]:
        iv = result["interval"]
        inside = "inside" if iv.lo <= seed_value <= iv.hi else "outside"
        note = (f"Change point of the seed-mean {quantity} curve at alpha = {result['location']:.4g} "
                f"(test vs a smooth {null}: p = {result['p_value']:.3g}); the seed's constant {seed_value} lies "
                f"{inside} its interval. {where}.")
    else:
        note = (f"No change point found in the seed-mean {quantity} curve (test vs a smooth {null}: p = "
                f"{result['p_value']:.3g}): the {null} describes it as well as one with a kink; the best "
                f"breakpoint would be alpha = {bp:.4g}. {where}. The seed's constant is {seed_value}.")
    h = headline(result["location"], interval=result["interval"], fmt=".4g", label="phase boundary alpha",
                 note=note)
    iv = bp_iv.as_dict() if hasattr(bp_iv, "as_dict") else bp_iv
    h.update(found=bool(result["found"]), method=result["method"], grid=grid,
             seeds=[int(s) for s in sweep["seeds"]], p_value=result["p_value"], quantity=quantity,
             seed_value=seed_value, best_breakpoint=bp, best_breakpoint_interval=iv, null=null)
    return h


def boundary_table(located: dict, seed_value: float = 0.29154):
    """One row per located (quantity, null): found, p, the change point with its interval (or
    "none found"), the best-fitting breakpoint with the interval of its refits (shown either
    way), whether the seed's constant lies in the interval, and the method. Keys of
    ``located`` are ``"quantity"`` or ``(quantity, null)``."""
    rows = []
    for key, r in located.items():
        q = key[0] if isinstance(key, tuple) else key
        fit = r.get("fit") or {}
        biv = fit.get("breakpoint_interval")
        iv = r["interval"]
        rows.append({"quantity": q, "no-change model": fit.get("null", "line"), "found": bool(r["found"]),
                     "p": f"{r['p_value']:.3g}",
                     "change point [95 %]": format_value(r["location"], iv) if r["found"] else "none found",
                     "best breakpoint [95 % of refits]": format_value(fit.get("breakpoint"), biv),
                     f"{seed_value} in interval": (bool(iv.lo <= seed_value <= iv.hi) if r["found"] else "–"),
                     "method": r["method"]})
    return pd.DataFrame(rows)


def static_sweep(lm, modulator, texts: Sequence[str], alphas: Sequence[float], encoder_reps, static_reps,
                 pairs: dict, *, n_simplices: int, seed: int = 0) -> dict:
    """Notebook 10's static-alpha sweep of one modulator (seed §10): the definitions encoded
    at each alpha through ``modulator``, scored on the pair samples ``pairs = {"project":
    (similarity, i, j), "seed": (similarity, i, j)}``.

    Returns
    -------
    dict: ``reps`` (Static, Original and one array per alpha), ``rel`` / ``rel_seed``
    (:func:`~geolip_lib.modulators.relational_comparison` on each sample), ``rel_iv``
    (paired-bootstrap intervals on the project's pairs), ``pres_iv`` (preservation interval
    per alpha, over the entries), ``best_iv`` (the arg-max alpha over pair resamples),
    ``rows`` (one record per alpha) and ``frame`` (the rows indexed by alpha).
    """
    reps_at = {}
    for a in alphas:
        modulator.set_alpha(a)
        with attach(lm, modulator):
            reps_at[a] = definition_representations(lm, texts, progress=False)
    all_reps = {"Static": static_reps, "Original": encoder_reps, **reps_at}
    (sim, pi, pj), (sim_s, si, sj) = pairs["project"], pairs["seed"]
    rel, rel_seed = relational_comparison(sim, all_reps, pi, pj), relational_comparison(sim_s, all_reps, si, sj)
    rel_iv = stats.relational_intervals(sim, all_reps, pi, pj, reference=None, seed=seed)
    pres = {a: per_token_cosines(encoder_reps, reps_at[a]) for a in alphas}
    pres_iv = {a: intervals.bootstrap(c, seed=seed, what="entries") for a, c in pres.items()}
    rows = [{"alpha": a, "pearson": rel[a]["pearson"], "pearson_lo": rel_iv[a]["pearson"].lo,
             "pearson_hi": rel_iv[a]["pearson"].hi, "spearman": rel[a]["spearman"], "gradient": rel[a]["gradient"],
             "pearson_seed_pairs": rel_seed[a]["pearson"], "spearman_seed_pairs": rel_seed[a]["spearman"],
             "delta_pearson": rel[a]["delta_pearson"], "delta_gradient": rel[a]["delta_gradient"],
             "preservation": float(pres[a].mean()), "preservation_lo": pres_iv[a].lo, "preservation_hi": pres_iv[a].hi,
             "pentachoron_cv": pentachoron_cv(reps_at[a], n_simplices, seed=seed).cv, "bands": rel[a]["bands"]}
            for a in alphas]
    return {"reps": all_reps, "rel": rel, "rel_iv": rel_iv, "rel_seed": rel_seed, "pres_iv": pres_iv, "rows": rows,
            "frame": pd.DataFrame(rows).set_index("alpha"),
            "best_iv": stats.argmax_interval(sim, reps_at, pi, pj, seed=seed)}


def section10_table(sweep: dict, names: Sequence, pairs: dict, *, seed: int = 0, label: str = ""):
    """The seed's §10 table (Static / Original / one alpha, ΔPearson against Original) from a
    :func:`static_sweep`, on both pair samples.

    Returns
    -------
    frame : DataFrame (rows ``(pair sample, name)``), and the record
    ``{"modulator", "project", "seed", "n_pairs"}`` for ``metrics.json``.
    """
    tab = {k: sweep["reps"][k] for k in names}
    parts = {}
    for key, title, rel in (("project", "project: pairs over all entries", sweep["rel"]),
                            ("seed", "seed: pairs within the 3000-entry subset", sweep["rel_seed"])):
        sim, i, j = pairs[key]
        parts[title] = stats.relational_frame(rel, stats.relational_intervals(sim, tab, i, j, seed=seed), names)
    record = {"modulator": label, "project": {str(k): sweep["rel"][k] for k in names},
              "seed": {str(k): sweep["rel_seed"][k] for k in names},
              "n_pairs": {"project": sweep["rel"]["n_pairs"], "seed": sweep["rel_seed"]["n_pairs"]}}
    return pd.concat(parts), record


__all__ = ["PHASE_QUANTITIES", "boundary_claim", "boundary_table", "locate_boundary", "phase_sweep", "section10_table",
           "static_sweep"]
