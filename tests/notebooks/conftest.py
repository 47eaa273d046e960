"""Notebook tests: execute a notebook with papermill on the tiny profile, read metrics back.

Use the ``run_notebook`` fixture::

    def test_01(run_notebook):
        m = run_notebook("01_embedding_terrain", "tiny-bert")      # -> metrics.json as dict
        assert m["metrics"]["embedding"]["pr"] > 1

Results are cached per (notebook, model, parameters) for the whole test session, so
several test functions can assert on one execution. Parameters default to the tiny
profile's entry for that notebook (``params/profiles/tiny.yaml``).
"""
from __future__ import annotations

import json

import pytest

from run_all import execute_job, jobs_for_profile

pytestmark = pytest.mark.notebooks

_CACHE: dict = {}


@pytest.fixture(scope="session")
def nb_out_root(tmp_path_factory):
    return tmp_path_factory.mktemp("nb_runs")


@pytest.fixture(scope="session")
def run_notebook(nb_out_root):
    def _run(notebook: str, model: str | None = None, job_id: str | None = None, **overrides):
        jobs = [j for j in jobs_for_profile("tiny", notebooks=[notebook])
                if (job_id is None or j.job_id == job_id) and (model is None or j.model == model)]
        if not jobs:
            raise LookupError(f"tiny profile has no job for {notebook} / {model or job_id}")
        job = jobs[0]
        # keyed by the resolved job, so run_notebook(nb, "tiny-t5") and run_notebook(nb, "tiny-t5",
        # job_id="tiny-t5") share one execution
        key = (notebook, job.job_id, json.dumps(overrides, sort_keys=True, default=str))
        if key in _CACHE:
            return _CACHE[key]
        job.parameters.update(overrides)
        out = nb_out_root / f"run{len(_CACHE)}"
        res = execute_job(job, out_root=out)
        if not res.ok:
            raise AssertionError(f"{notebook} on {job.job_id} failed: {res.error}")
        with open(res.job_dir / "metrics.json", encoding="utf-8") as fh:
            data = json.load(fh)
        data["_job_dir"] = str(res.job_dir)
        _CACHE[key] = data
        return data

    return _run
