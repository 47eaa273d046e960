"""A job that did not finish gives no verdict: its folder (``<job>.failed``, or one without metrics.json) is
never read as a result, so no stale or partial record is drawn or counted as if it had run."""
from __future__ import annotations

import json

import pytest

from geolip_lib import claims
from geolip_lib.claims import NOT_TESTED
from geolip_lib.claims.plots import claims_forest

pytestmark = pytest.mark.unit


def test_a_failed_or_unfinished_job_reads_not_tested_and_is_not_drawn(tmp_path, write_job, h):
    rec = {"q_sparsity": {"encoder/self": h(0.95, 0.94, 0.96, nulls={"random_init": h(0.2, 0.1, 0.3)})}}
    write_job(tmp_path, "02_weight_topology", "t5-small", rec)
    job = tmp_path / "02_weight_topology" / "t5-small"
    job.rename(job.with_name("t5-small.failed"))  # the runner's name for a job that stopped, its old result inside
    (tmp_path / "02_weight_topology" / "bert-large-uncased").mkdir()  # started, never wrote metrics.json
    rows = [r for r in claims.evaluate(tmp_path) if r["claim"] == "q_sparsity"]
    mine = [r for r in rows if r["model"] in ("t5-small", "bert-large-uncased")]
    assert mine and all(r["verdict"] == NOT_TESTED and r["value"] is None for r in mine)
    fig = claims_forest(rows)
    xs = [float(x) for ax in fig.axes for line in ax.lines for x in line.get_xdata()]
    assert not any(abs(x - 0.95) < 1e-9 or abs(x - 95) < 1e-6 for x in xs)  # the stale value is drawn nowhere
    json.dumps([{k: v for k, v in r.items() if k != "power"} for r in mine], default=str)  # rows stay serialisable
