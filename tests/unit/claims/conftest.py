"""Shared builders of the claims tests: a synthetic report root of metrics.json files."""
from __future__ import annotations

import json

import pytest

from geolip_lib import results


def _write_job(root, notebook, model, recorded: dict | None = None, **metrics) -> None:
    d = root / notebook / model
    d.mkdir(parents=True, exist_ok=True)
    m = dict(metrics)
    if recorded is not None:
        m["claims"] = recorded
    (d / "metrics.json").write_text(json.dumps(results.to_jsonable(
        {"notebook": notebook, "model": model, "metrics": m, "headline": m.pop("headline", {})})))


def _h(value, lo=None, hi=None, nulls=None, exact=False, **extra):
    """A headline: exact (no interval) when ``exact`` or no bounds are given, else sampled [lo, hi]."""
    out = results.headline(value, interval="exact" if exact or lo is None else (lo, hi), nulls=nulls or {})
    out.update(extra)
    return out


@pytest.fixture
def write_job():
    return _write_job


@pytest.fixture
def h():
    return _h
