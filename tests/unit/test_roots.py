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
