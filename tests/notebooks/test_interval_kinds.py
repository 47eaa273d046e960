"""Every metrics.json of the tiny profile (the first job of each notebook, shared with
test_outputs through the session cache): each recorded value lies inside its interval or is
exact and has none, and every headline says what kind of number it is."""
from __future__ import annotations

from pathlib import Path

import pytest

from geolip_lib import results
from run_all import jobs_for_profile

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]
FIRST_JOBS = {}
for _job in jobs_for_profile("tiny"):
    FIRST_JOBS.setdefault(_job.notebook, _job)


@pytest.mark.parametrize("notebook", sorted(FIRST_JOBS))
def test_every_value_lies_inside_its_interval_or_is_exact(notebook, run_notebook):
    job = FIRST_JOBS[notebook]
    data = results.read(Path(run_notebook(notebook, job.model, job_id=job.job_id)["_job_dir"]))
    assert results.containment_problems(data) == []
    for key, h in data["headline"].items():
        if h["value"] is None:
            continue
        assert h["kind"] in results.KINDS, (notebook, key, h["kind"])
        iv = h["interval"]
        if h["kind"] == "exact":
            assert iv["lo"] == iv["hi"] == h["value"] and iv["method"].startswith("exact"), (notebook, key)
        for name, n in h["nulls"].items():
            if isinstance(n.get("interval"), dict):
                assert results.kind_of(n["interval"]) in results.KINDS, (notebook, key, name)
