"""Notebook tests: execute a notebook with papermill on the tiny profile, read metrics back.

Use the ``run_notebook`` fixture::

    def test_01(run_notebook):
        m = run_notebook("01_embedding_terrain", "tiny-bert")      # -> metrics.json as dict
        assert m["metrics"]["embedding"]["pr"] > 1

Results are cached per (notebook, model, parameters) for the whole test session, so
several test functions can assert on one execution. Parameters default to the tiny
profile's entry for that notebook (``params/profiles/tiny.yaml``).

The jobs most tests read (:data:`PREFETCH`) are run together on the first call, the way
``run_all.py`` runs them: two at once (``geolip_lib.runner.local.run_jobs``). Re-executions
with other parameters (and nbval's re-execution) run one at a time, so the tests that
compare the two (01's independent executions, 12's timing-only rerun, every nbval
comparison) also check that parallel jobs give what sequential ones give.
"""
from __future__ import annotations

import json
import sys

import pytest

from geolip_lib.runner.local import run_jobs
from run_all import execute_job, jobs_for_profile, reads_other_jobs

pytestmark = pytest.mark.notebooks

_CACHE: dict = {}
#: (notebook, job id) of the tiny profile that the notebook tests read without overrides.
#: Readers of other jobs' results (03, 15) are not prefetched: they run in a root of their own.
PREFETCH = {
    "01_embedding_terrain": ["tiny-bert", "tiny-t5", "tiny-dinov2"],
    "02_weight_topology": ["tiny-t5", "tiny-qwen"],
    "04_wordnet_alignment": ["tiny-bert"],
    "05_seed_stability": ["tiny-bert", "tiny-t5"],
    "06_qk_operators": ["tiny-qwen", "tiny-t5"],
    "07_cross_scale_projection": ["tiny-qwen-wide__tiny-qwen"],
    "08_modulator_pipeline": ["tiny-t5"], "09_modulator_training": ["tiny-t5"], "10_alpha_sweep": ["tiny-t5"],
    "11_field_modulator": ["tiny-t5"], "12_constellation_relay": ["all"], "13_head_dim_cv": ["all"],
    "14_triple_product_attention": ["all"], "16_contextual_geometry": ["tiny-bert"],
    "17_representational_alignment": ["all"],
}
_WANTED: set = set()  # notebooks whose tests were collected (filled at collection)
_PREFETCHED: dict = {}


def pytest_collection_modifyitems(session, config, items):
    every = {_stem(i) for i in items}
    if every & {"test_outputs", "test_nbval", "test_15_seed_claims"}:
        _WANTED.update(PREFETCH)
    _WANTED.update(nb for nb in PREFETCH if f"test_{nb}" in every)


def _stem(item) -> str:
    return getattr(item, "path", None).stem if getattr(item, "path", None) else ""


def _prefetch(root) -> None:
    """Run the wanted :data:`PREFETCH` jobs at once (2 at a time, warm kernels), once."""
    if _PREFETCHED or len(_WANTED) < 2:  # one notebook's tests: on demand is as fast
        _PREFETCHED.setdefault("done", True)
        return
    _PREFETCHED["done"] = True
    jobs = [j for j in jobs_for_profile("tiny", notebooks=sorted(_WANTED))
            if j.job_id in PREFETCH.get(j.notebook, []) and not reads_other_jobs(j.notebook)]
    for res in run_jobs(jobs, root, jobs_at_once=2, warm=True, console=sys.stderr):
        _PREFETCHED[(res.job.notebook, res.job.job_id)] = res


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
        _prefetch(nb_out_root / "prefetch")
        res = None if overrides else _PREFETCHED.get((notebook, job.job_id))
        if res is None:
            job.parameters.update(overrides)
            res = execute_job(job, out_root=nb_out_root / f"run{len(_CACHE)}")
        if not res.ok:
            raise AssertionError(f"{notebook} on {job.job_id} failed: {res.error}")
        with open(res.job_dir / "metrics.json", encoding="utf-8") as fh:
            data = json.load(fh)
        data["_job_dir"] = str(res.job_dir)
        _CACHE[key] = data
        return data

    return _run
