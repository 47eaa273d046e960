#!/usr/bin/env python
"""Notebook 02's time with its random-init null ÷ without, before and after the null was sampled (a sample of each seed's layers, and closed forms).

Before: the null as notebook 02 computed it before it was sampled, the whole battery on 5 whole
random-init twins (``weights.nulls.battery_null_full``, kept as the reference). After: the
battery on a sample of each twin's layers (``weights.nulls.battery_null``: layer 0 and
``m − 1`` more per seed, ``m = max(2, ceil(L / 5))``, generated tensor by tensor). "Without"
is notebook 02's own computation on the trained weights: the catalog and the battery, which
is what the null repeats (the tables, figures and bootstraps of 02 cost the same either way
and are left out of both sides). The null cache is switched off (``GEOLIP_NULL_CACHE=off``):
this times the computation itself.

Beside the ratios, the check that the sampled null is the full one within its sampling error:
for every headline of notebook 02, the random-init null (mean [95 % prediction interval of
one whole model]) by both methods, and whether they agree: means within the two half-widths,
and the seeds' spreads equal once the sampled fraction is accounted for (an F test, Bonferroni
over the headlines: :func:`spread_p`).

    .venv/bin/python benchmarks/nulls.py                         # shapes-t5-small (6+6 layers, 60 M parameters)
    .venv/bin/python benchmarks/nulls.py --model shapes-bert-large-uncased
    .venv/bin/python benchmarks/nulls.py --quick                 # tiny-t5: a small real run (make bench)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["GEOLIP_NULL_CACHE"] = "off"  # time the computation, not the cache


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="shapes-t5-small", help="a params/models name (default shapes-t5-small)")
    ap.add_argument("--quick", action="store_true", help="tiny-t5 instead: a small real run (make bench)")
    ap.add_argument("--seed", type=int, default=0, help="notebook 02's SEED (default 0)")
    ap.add_argument("--device", default="cpu", help="where SVDs and QK problems run (default cpu)")
    args = ap.parse_args(argv)
    name = "tiny-t5" if args.quick else args.model

    from geolip_lib import models
    from geolip_lib.families import catalog
    from geolip_lib.metrics.intervals import N_NULL_SEEDS, format_value
    from geolip_lib.weights import TensorStore, run_battery
    from geolip_lib.weights import tables as T
    from geolip_lib.weights.nulls import battery_null, battery_null_full

    lm = models.load(name)
    print(f"{name}: {sum(p.numel() for p in lm.model.parameters()):,} parameters; null over {N_NULL_SEEDS} seeds; "
          f"device {args.device}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

    def trained():
        store = TensorStore(lm.weights_dir)
        cat = catalog(store, config=lm.config, family=lm.family)
        return run_battery(store, cat=cat, device=args.device)

    res, t0 = _timed(trained)
    full, t_full = _timed(lambda: battery_null_full(lm, N_NULL_SEEDS, seed=args.seed, device=args.device))
    samp, t_samp = _timed(lambda: battery_null(lm, N_NULL_SEEDS, seed=args.seed, device=args.device, cache=False))
    d = samp.drivers
    print(f"without null: {t0:.1f} s")
    print(f"before (5 whole twins):  null {t_full:.1f} s; 02 with null / without = {(t0 + t_full) / t0:.2f}")
    print(f"after ({d['seeds']} seeds x {d['layers_per_seed']} of {d['layers_in_model']} layers, "
          f"{d['model_equivalents']} model-equivalents): null {t_samp:.1f} s; "
          f"02 with null / without = {(t0 + t_samp) / t0:.2f}")

    summary = res.summary()
    items = T.headline_items(res)
    hf = T.battery_headline(summary, items, full.seeds)
    hs = T.battery_headline(summary, items, samp.seeds)
    stack = T.stack_items(res)
    cf = T.battery_claims(summary, items, stack, full.seeds, None, full.stack_seeds)
    cs = T.battery_claims(summary, items, stack, samp.seeds, None, samp.stack_seeds)
    pairs = [(h, hs[k], "random_init") for k, h in hf.items()]
    pairs += [(h, cs[kind][scope], "random init") for kind, scopes in cf.items() for scope, h in scopes.items()
              if scope in cs.get(kind, {})]
    compared = [(h, a, b) for h, hb, nk in pairs
                for a, b in [((h.get("nulls") or {}).get(nk), (hb.get("nulls") or {}).get(nk))]
                if a is not None and b is not None and a.get("value") is not None]
    alpha = 0.05 / max(len(compared), 1)  # Bonferroni over the headlines compared
    bad = 0
    print("\nrandom-init null per headline and seed claim: full (5 whole twins) | sampled layers | agree")
    print(f"  (agree: means within the two half-widths, and the seeds' spreads equal as the sampled fraction f "
          f"predicts, F = f·s²_sampled / s²_full, two-sided p > {alpha:.4f} = 0.05 / {len(compared)})")
    for h, a, b in compared:
        wa, wb = a["interval"]["hi"] - a["interval"]["lo"], b["interval"]["hi"] - b["interval"]["lo"]  # records
        p = spread_p(a, b)
        ok = abs(a["value"] - b["value"]) <= (wa + wb) / 2 and (p is None or p > alpha)
        bad += not ok
        print(f"  {h.get('label')}: {format_value(a['value'], a['interval'])} | "
              f"{format_value(b['value'], b['interval'])} | {'yes' if ok else 'NO'}"
              + (f" (width ratio {wb / wa:.2f}" if wa > 0 else " (") + (f", spread p = {p:.3f})" if p is not None
                                                                         else ")"))
    print("same null within its sampling error" if not bad else f"{bad} headline(s) disagree")
    return 0 if not bad else 1


def spread_p(full: dict, sampled: dict):
    """Two-sided p of the F test that the sampled null's seeds spread as the full one's do once
    the sampled fraction ``f`` is accounted for (a mean over ``f`` of the items has ``1/f`` times
    the variance): ``F = f·s²_sampled / s²_full ~ F(n−1, m−1)``. On the logit scale where the
    interval is taken there (proportions). None when either spread is 0 or undefined. The width
    of a 5-seed interval is itself uncertain by a factor of ~3 (s over 4 degrees of freedom), so a
    fixed bound on the width ratio flagged chance."""
    import numpy as np
    from scipy import stats

    from geolip_lib.metrics.intervals import logit_of_proportions

    def spread(d):
        v = np.asarray([x for x in (d.get("per_seed") or []) if x is not None], dtype=np.float64)
        if "logit" in str(d["interval"].get("method", "")):
            v = logit_of_proportions(v)
        return (float(v.var(ddof=1)), len(v)) if len(v) > 1 else (0.0, len(v))

    (va, na), (vb, nb) = spread(full), spread(sampled)
    if va <= 0 or vb <= 0:
        return None
    f = float(sampled.get("sampled_fraction") or 1.0)
    F = f * vb / va
    c = float(stats.f.cdf(F, nb - 1, na - 1))
    return 2 * min(c, 1 - c)


if __name__ == "__main__":
    raise SystemExit(main())
