"""What a reader of the tiny profile sees: every notebook's executed output shows its figures,
carries no warning blocks or temporary paths, and records intervals and true provenance; the
report built from those jobs embeds images and loads without console errors."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from geolip_lib import report
from run_all import jobs_for_profile

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
FIRST_JOBS = {}
for _job in jobs_for_profile("tiny"):
    FIRST_JOBS.setdefault(_job.notebook, _job)


def _private_keys(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k).startswith("_"):
                yield f"{path}/{k}"
            yield from _private_keys(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _private_keys(v, f"{path}/{i}")


@pytest.mark.parametrize("notebook", sorted(FIRST_JOBS))
def test_executed_notebook_is_what_a_reader_expects(notebook, run_notebook):
    job = FIRST_JOBS[notebook]
    data = run_notebook(notebook, job.model, job_id=job.job_id)
    job_dir = Path(data["_job_dir"])
    nb = nbformat.read(str(job_dir / "executed.ipynb"), as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    pngs = sorted(p.name for p in job_dir.glob("*.png"))
    n_img = sum("image/png" in o.get("data", {}) for o in outs)
    assert pngs, f"{notebook}: no figure saved"
    assert n_img >= len(data["figures"]) >= 1 and n_img >= 1, (n_img, data["figures"])
    assert sorted(f["file"] for f in data["figures"]) == pngs
    assert 1 <= sum(f["key"] for f in data["figures"]) <= 3, data["figures"]
    warnings = [o.get("text", "")[:200] for o in outs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert not warnings, f"{notebook}: stderr blocks in the executed notebook: {warnings}"
    text = json.dumps(outs)
    assert ".partial" not in text and "PosixPath(" not in text
    assert not list(_private_keys(data["metrics"])), list(_private_keys(data["metrics"]))[:5]
    for key, h in data["headline"].items():
        if h["value"] is not None:
            assert h["interval"] and h["interval"]["lo"] is not None, f"{notebook}: headline {key} has no interval"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert data["provenance"]["git"]["commit"] == head
    if job.model:
        assert data["provenance"]["models"][0]["name"] == job.model


def test_tiny_report_embeds_figures_and_loads_cleanly(run_notebook, tmp_path):
    root = tmp_path / "tiny"
    for notebook, job in sorted(FIRST_JOBS.items()):
        src = Path(run_notebook(notebook, job.model, job_id=job.job_id)["_job_dir"])
        shutil.copytree(src, root / notebook / job.job_id)
    paths = report.build("tiny", out_root=root)
    index, pdf = paths
    assert report.pdf_image_count(pdf) >= len(FIRST_JOBS)
    page = index.read_text(encoding="utf-8")
    assert page.count("<figure class='thumb'>") >= len(FIRST_JOBS)
    assert report.console_messages(index) == []
    first = root / "01_embedding_terrain" / FIRST_JOBS["01_embedding_terrain"].job_id / "executed.html"
    assert report.console_messages(first) == []
