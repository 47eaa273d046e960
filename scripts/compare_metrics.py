#!/usr/bin/env python
"""Compare every ``metrics.json`` of two run roots key by key (floats to a relative/absolute tolerance).

    .venv/bin/python scripts/compare_metrics.py reports/tiny /tmp/tiny_before            # tol 1e-12
    .venv/bin/python scripts/compare_metrics.py A B --tol 0 --show 5

Leaves out ``provenance`` (commit, times, library hash) and paths that name the run root.
Exit status 0 when every job's metrics agree, 1 otherwise; prints one line per job.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def flatten(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from flatten(v, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def close(a, b, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def compare(a_root: Path, b_root: Path, tol: float = 1e-12) -> dict:
    """``{job: (n_keys, [(key, a, b), ...])}`` over the jobs of either root."""
    out = {}
    jobs = sorted({p.relative_to(a_root).parent for p in a_root.glob("*/*/metrics.json")}
                  | {p.relative_to(b_root).parent for p in b_root.glob("*/*/metrics.json")})
    for job in jobs:
        fa, fb = a_root / job / "metrics.json", b_root / job / "metrics.json"
        if not (fa.exists() and fb.exists()):
            out[str(job)] = (0, [("metrics.json", fa.exists(), fb.exists())])
            continue
        da, db = (json.loads(f.read_text()) for f in (fa, fb))
        for d, root in ((da, a_root), (db, b_root)):
            d.pop("provenance", None)
        ka, kb = dict(flatten(da)), dict(flatten(db))
        for d, root in ((ka, a_root), (kb, b_root)):
            for k, v in list(d.items()):
                if isinstance(v, str) and str(root) in v:
                    d[k] = v.replace(str(root), "<root>")
        diff = [(k, ka.get(k), kb.get(k)) for k in sorted(set(ka) | set(kb))
                if k not in ka or k not in kb or not close(ka[k], kb[k], tol)]
        out[str(job)] = (len(ka), diff)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--tol", type=float, default=1e-12, help="relative tolerance for floats (default 1e-12)")
    ap.add_argument("--show", type=int, default=3, help="differing keys shown per job")
    args = ap.parse_args()
    res = compare(args.a, args.b, args.tol)
    bad = 0
    for job, (n, diff) in res.items():
        print(f"{'same ' if not diff else 'DIFF '} {job}: {len(diff)} of {n} keys differ")
        for k, x, y in diff[: args.show]:
            print(f"        {k}: {x!r} vs {y!r}")
        bad += bool(diff)
    print(f"{len(res) - bad}/{len(res)} jobs identical (tol {args.tol:g})")
    return 1 if bad or not res else 0


if __name__ == "__main__":
    sys.exit(main())
