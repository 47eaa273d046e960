"""geolip_lib.roots with a relative output root (`--out reports/x`): the job folders come back
absolute, so read_json (which reads a relative path inside the root) finds each metrics.json once,
not under reports/x/reports/x/ (every job of such a report was listed as failed)."""
from __future__ import annotations

import json

import pytest

from geolip_lib import roots

pytestmark = pytest.mark.unit


def test_a_relative_root_gives_absolute_job_folders_that_read_json_reads(tmp_path, monkeypatch):
    job = tmp_path / "reports" / "x" / "01_embedding_terrain" / "m"
    job.mkdir(parents=True)
    (job / "metrics.json").write_text(json.dumps({"model": "m"}))
    monkeypatch.chdir(tmp_path)
    rel = "reports/x"
    found = roots.job_dirs(rel)
    assert found == [job] and all(p.is_absolute() for p in found)
    assert roots.job_dirs(rel, "01_embedding_terrain") == [job]
    assert roots.notebook_dirs(rel) == [job.parent]
    assert roots.read_json(rel, found[0] / "metrics.json") == {"model": "m"}
    assert roots.read_json(rel, "01_embedding_terrain/m/metrics.json") == {"model": "m"}


def test_finished_metrics_reads_only_finished_real_jobs_inside_the_root(tmp_path):
    """The claims lead, the quantization table and notebook 03 read a notebook's results through
    roots.finished_metrics: a linked job folder, a .failed or .partial job, a too-deep or non-object
    metrics.json and a job without one are all left out; the good job is read once."""
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    nb = root / "02_weight_topology"

    def job(name, payload):
        (nb / name).mkdir(parents=True)
        if payload is not None:
            (nb / name / "metrics.json").write_text(payload)

    job("good", json.dumps({"model": "good", "metrics": {}}))
    job("broken.failed", json.dumps({"model": "x"}))
    job(".half.partial", json.dumps({"model": "y"}))
    job("deep", "[" * 200 + "]" * 200)
    job("a-list", "[1, 2]")
    job("empty", None)
    (outside / "t5-small").mkdir(parents=True)
    (outside / "t5-small" / "metrics.json").write_text(json.dumps({"model": "t5-small"}))
    (nb / "t5-small").symlink_to(outside / "t5-small", target_is_directory=True)
    got = roots.finished_metrics(root, "02_weight_topology")
    assert [(d.name, m["model"]) for d, m in got] == [("good", "good")]
    assert roots.finished_metrics(root, "no_such_notebook") == []
