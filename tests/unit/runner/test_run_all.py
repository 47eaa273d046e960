"""The batch executor and the report, on throw-away notebooks (no model needed)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

import run_all
from geolip_lib import report, results
from geolip_lib.params import ParamsError

ROOT = Path(__file__).resolve().parents[3]

OK_NB = '''
from geolip_lib import results
import time, pathlib
out = results.job_dir(OUT_DIR, "ok", None)
time.sleep(SLEEP)
results.record(out, {"value": VALUE, "square": VALUE ** 2}, notebook="ok", model=None,
               headline={"value": results.headline(VALUE, baseline=0.5, baseline_kind="gaussian",
                                                   label="Value")})
'''


def _notebook(path: Path, body: str, params: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Test notebook\n\nMath: $\\sum_i \\lambda_i^2$"),
                nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, str(path))


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    _notebook(nbdir / "ok.ipynb", OK_NB, "OUT_DIR = None\nVALUE = 1.0\nSLEEP = 0.0")
    _notebook(nbdir / "boom.ipynb", "raise RuntimeError('planted failure')", "OUT_DIR = None")
    prof = tmp_path / "p.yaml"
    prof.write_text(
        "name: p\ndescription: test profile\nnotebooks:\n"
        "  ok:\n    per_model: false\n    jobs:\n"
        "      - {id: a, parameters: {VALUE: 2.0}}\n"
        "      - {id: b, parameters: {VALUE: 3.0}}\n"
        "  boom:\n    per_model: false\n", encoding="utf-8")
    monkeypatch.setattr(run_all, "NOTEBOOKS", nbdir)
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(nbdir))
    return tmp_path, prof


def test_failing_job_does_not_stop_the_batch(sandbox):
    tmp, prof = sandbox
    out = tmp / "out"
    res = run_all.run(str(prof), out_root=out)
    by_id = {(r.job.notebook, r.job.job_id): r for r in res}
    assert by_id[("ok", "a")].ok and by_id[("ok", "b")].ok
    assert not by_id[("boom", "all")].ok
    assert "planted failure" in by_id[("boom", "all")].error
    assert results.read(out / "ok" / "b")["metrics"]["square"] == 9.0
    assert (out / "boom" / "all.failed" / "error.txt").exists()
    assert not (out / "boom" / "all").exists()


def test_cli_exit_code_lists_failures_and_builds_report(sandbox):
    tmp, prof = sandbox
    out = tmp / "out"
    r = subprocess.run([sys.executable, "run_all.py", "--profile", str(prof), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    assert "1 job(s) failed" in r.stderr and "boom / all: RuntimeError: planted failure" in r.stderr
    index = (out / "index.html").read_text()
    assert "Value" in index and "gaussian: 0.5" in index and "FAILED all" in index
    assert (out / "ok" / "a" / "executed.html").exists()
    assert "_static/mathjax/MathJax.js" in (out / "ok" / "a" / "executed.html").read_text()
    assert (out / "_static" / "mathjax" / "MathJax.js").exists()
    pdf = out / "report.pdf"
    assert str(pdf) in r.stdout and str(out / "index.html") in r.stdout
    text = report.pdf_text(pdf)
    assert "geolip findings report" in text and "ok — a" in text


def test_resume_skips_done_jobs(sandbox):
    tmp, prof = sandbox
    out = tmp / "out"
    run_all.run(str(prof), notebooks=["ok"], out_root=out)
    before = (out / "ok" / "a" / "metrics.json").stat().st_mtime_ns
    res = run_all.run(str(prof), notebooks=["ok"], resume=True, out_root=out)
    assert all(r.skipped for r in res)
    assert (out / "ok" / "a" / "metrics.json").stat().st_mtime_ns == before


def test_killed_run_leaves_nothing_counted_and_resume_completes(sandbox):
    tmp, prof = sandbox
    slow = tmp / "slow.yaml"
    slow.write_text("name: slow\nnotebooks:\n  ok:\n    per_model: false\n    jobs:\n"
                    "      - {id: fast, parameters: {VALUE: 1.0}}\n"
                    "      - {id: slow, parameters: {VALUE: 4.0, SLEEP: 60}}\n", encoding="utf-8")
    out = tmp / "out"
    cmd = [sys.executable, "run_all.py", "--profile", str(slow), "--out", str(out), "--no-pdf", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 300
    while not (out / "ok" / ".slow.partial" / "executed.ipynb").exists():
        assert time.time() < deadline and proc.poll() is None, "the slow job never started"
        time.sleep(0.5)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (out / "ok" / "fast" / "metrics.json").exists()
    assert not (out / "ok" / "slow").exists()  # the killed job is not counted as done
    fast_mtime = (out / "ok" / "fast" / "metrics.json").stat().st_mtime_ns
    slow.write_text(slow.read_text().replace("SLEEP: 60", "SLEEP: 0"), encoding="utf-8")
    r = subprocess.run(cmd + ["--resume"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "skip  ok / fast" in r.stderr
    assert (out / "ok" / "fast" / "metrics.json").stat().st_mtime_ns == fast_mtime
    assert results.read(out / "ok" / "slow")["metrics"]["value"] == 4.0
    assert not (out / "ok" / ".slow.partial").exists()


def test_unknown_names_are_one_line_errors(sandbox):
    tmp, prof = sandbox
    with pytest.raises(ParamsError, match="--notebooks: profile 'p' has no notebook 'nope'"):
        run_all.jobs_for_profile(str(prof), notebooks=["nope"])
    r = subprocess.run([sys.executable, "run_all.py", "--profile", str(prof), "--models", "no-such-model"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown model 'no-such-model'" in lines[0]


def test_profile_schema_errors_name_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nnotebookz: {}\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=r"bad.yaml: key 'notebookz': unknown key"):
        run_all.jobs_for_profile(str(bad))
    bad.write_text("name: bad\ntimeout_s: soon\nnotebooks: {}\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=r"bad.yaml: key 'timeout_s'"):
        run_all.jobs_for_profile(str(bad))


def test_record_is_atomic_and_json_clean(tmp_path):
    import numpy as np

    p = results.record(tmp_path, {"a": np.float32(1.5), "nan": float("nan"), "arr": np.arange(3)},
                       notebook="n", model="m")
    data = json.loads(p.read_text())
    assert data["metrics"] == {"a": 1.5, "nan": None, "arr": [0, 1, 2]}
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    with pytest.raises(ValueError, match="metrics: expected a dict"):
        results.record(tmp_path, [1, 2])


def test_misspelt_notebook_parameter_is_an_error(sandbox):
    tmp, _ = sandbox
    prof = tmp / "typo.yaml"
    prof.write_text("name: typo\nnotebooks:\n  ok:\n    per_model: false\n    parameters: {VALU: 1.0}\n",
                    encoding="utf-8")
    with pytest.raises(ParamsError, match=r"notebook ok \(job all\) has no parameter VALU \(declared: OUT_DIR"):
        run_all.jobs_for_profile(str(prof))


def test_offline_hub_model_fails_its_job_with_one_line(tmp_path, monkeypatch):
    """A hub id while offline: the job fails with the loader's one line, the batch goes on."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-home"))
    job = run_all.Job(profile="t", notebook="01_embedding_terrain", job_id="t5-small", model="t5-small")
    res = run_all.execute_job(job, out_root=tmp_path / "out")
    assert not res.ok
    assert "t5-small" in res.error and "local_dir" in res.error and "\n" not in res.error
    assert not (tmp_path / "out" / "01_embedding_terrain" / "t5-small").exists()


def test_a_notebook_that_reads_other_jobs_is_stale_when_they_are_newer(sandbox):
    tmp, prof = sandbox
    nbdir = tmp / "notebooks"
    _notebook(nbdir / "agg.ipynb", OK_NB.replace('"ok"', '"agg"') + "\nprint(REPORT_ROOT)\n",
              "OUT_DIR = None\nREPORT_ROOT = None\nVALUE = 1.0\nSLEEP = 0.0")
    prof.write_text(prof.read_text().replace("  boom:", "  agg:\n    per_model: false\n  boom:"), encoding="utf-8")
    assert run_all.reads_other_jobs("agg") and not run_all.reads_other_jobs("ok")
    out = tmp / "out"
    run_all.run(str(prof), notebooks=["ok", "agg"], out_root=out)
    agg = next(j for j in run_all.jobs_for_profile(str(prof), notebooks=["agg"]))
    assert not [w for w in run_all.stale_reasons(agg, out) if "other jobs" in w]
    m = out / "ok" / "a" / "metrics.json"
    os.utime(m, (time.time() + 5, time.time() + 5))  # job ok/a finished after agg
    why = [w for w in run_all.stale_reasons(agg, out) if "other jobs" in w]
    assert why == ["it reads other jobs' results, and 1 are newer: ok/a"]
