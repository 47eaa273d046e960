#!/usr/bin/env python
"""NLTK vs geolip's WordNet similarity engine: throughput, ratio and exact agreement.

Same data for both: 3,000 random synsets of every part of speech (seeded), 200,000 random
pairs among them; path and Wu–Palmer similarity; then the full 3000×3000 Wu–Palmer
matrix (the engine; NLTK's time is extrapolated from its measured pairs/s).

    .venv/bin/python benchmarks/wordnet.py           # NLTK on all 200k pairs (~1 min per measure)
    .venv/bin/python benchmarks/wordnet.py --quick   # NLTK on 20k pairs, pairs/s extrapolated;
                                                     # agreement is checked on those 20k pairs

NLTK's per-synset caches (min/max depth, hypernym sets) are warmed on the 3,000 synsets
before timing, so its rate is its best steady-state rate.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("NLTK_DATA", str(Path(__file__).resolve().parent.parent / ".cache" / "nltk_data"))

from geolip_lib import lexical  # noqa: E402


def nltk_pairs(syn, i, j, kind):
    f = "path_similarity" if kind == "path" else "wup_similarity"
    out = np.empty(len(i))
    for k, (a, b) in enumerate(zip(i.tolist(), j.tolist())):
        v = getattr(syn[a], f)(syn[b])
        out[k] = np.nan if v is None else v
    return out


def best_of(fn, repeat=3):
    best, res = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        res = fn()
        best = min(best, time.perf_counter() - t)
    return best, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synsets", type=int, default=3000)
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--quick", action="store_true", help="time NLTK on 20k pairs and extrapolate")
    ap.add_argument("--nltk-pairs", type=int, default=None, help="pairs NLTK computes (default: all, --quick: 20k)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    lx = lexical.load_lexicon()
    eng = lexical.SimilarityEngine(lx)
    print(f"engine ready in {time.perf_counter() - t0:.2f} s ({len(lx)} synsets, cached lexicon)")
    wn = lexical.get_wordnet()
    rng = np.random.default_rng(args.seed)
    ids = rng.choice(len(lx), args.synsets, replace=False)
    pos_counts = {c: int((lx.pos[ids] == k).sum()) for k, c in enumerate("nvasr")}
    print(f"{args.synsets} random synsets, POS counts {pos_counts}; {args.pairs} random pairs")
    i = ids[rng.integers(0, len(ids), args.pairs)]
    j = ids[rng.integers(0, len(ids), args.pairs)]
    n_nltk = args.nltk_pairs or (20_000 if args.quick else args.pairs)
    n_nltk = min(n_nltk, args.pairs)

    syn = {int(k): wn.synset(lx.names[int(k)]) for k in ids}
    for s in syn.values():  # warm NLTK's per-synset caches
        s.min_depth(), s.max_depth(), s.common_hypernyms(s)

    print(f"\n{'measure':8s} {'NLTK pairs/s':>13s} {'engine pairs/s':>15s} {'ratio':>8s} {'mismatches':>11s}")
    rates = {}
    for kind in ("path", "wup"):
        fn = eng.path_ids if kind == "path" else eng.wup_ids
        t = time.perf_counter()
        ref = nltk_pairs(syn, i[:n_nltk], j[:n_nltk], kind)
        t_nltk = time.perf_counter() - t
        t_eng, got = best_of(lambda: fn(i, j))
        same = (got[:n_nltk] == ref) | (np.isnan(got[:n_nltk]) & np.isnan(ref))
        r_nltk, r_eng = n_nltk / t_nltk, args.pairs / t_eng
        rates[kind] = r_nltk
        print(f"{kind:8s} {r_nltk:13,.0f} {r_eng:15,.0f} {r_eng / r_nltk:7.0f}x {int((~same).sum()):6d} / {n_nltk}")
        for k in np.flatnonzero(~same)[:5]:
            print(f"   mismatch {lx.names[i[k]]} {lx.names[j[k]]}: nltk={ref[k]!r} engine={got[k]!r}")
    note = " (NLTK extrapolated from its pairs/s)" if n_nltk < args.pairs else ""
    print(f"NLTK timed on {n_nltk} pairs{note}.")

    t_mat, M = best_of(lambda: lexical.similarity_matrix(ids, "wup"), repeat=2)
    n2 = len(ids) ** 2
    t_nltk_mat = n2 / rates["wup"]
    print(f"\nWu–Palmer matrix {len(ids)}x{len(ids)}: engine {t_mat:.2f} s; NLTK ≈ {t_nltk_mat:,.0f} s "
          f"(extrapolated from {rates['wup']:,.0f} pairs/s) -> {t_nltk_mat / t_mat:,.0f}x")
    sample = rng.integers(0, len(ids), (2000, 2))
    ref = nltk_pairs(syn, ids[sample[:, 0]], ids[sample[:, 1]], "wup")
    got = M[sample[:, 0], sample[:, 1]]
    bad = int((~((got == ref) | (np.isnan(got) & np.isnan(ref)))).sum())
    print(f"matrix agreement with NLTK on 2000 random cells: {bad} mismatches")
    print(f"\nmachine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared machine)")


if __name__ == "__main__":
    main()
