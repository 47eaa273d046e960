"""``run_all.py --executor ray`` on a local Ray (started once for the module, 2 CPUs here).

The tiny profile's fastest jobs give the same ``metrics.json`` as the local executor; a job
whose Ray worker is killed is reported as failed and the batch goes on; ``--resume`` skips
finished jobs and re-runs the killed one; an unreachable ``--ray-address`` is one line.
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import run_all
from geolip_lib.runner import plan
from geolip_lib.runner.ray_executor import DIED, connect
from scripts.compare_metrics import flatten
from tests.reliability.conftest import write_notebook

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: the tiny profile's quickest jobs without a model (~13 s each on this 2-core box, measured)
TINY = ["12_constellation_relay", "14_triple_product_attention"]

KILLER = '''
import os, signal
from pathlib import Path
import psutil
from geolip_lib import results
if KILL and not Path(MARKER).exists():
    parent = psutil.Process(os.getppid())  # the kernel's parent: the process that runs the job
    if "ray::" not in parent.name() + " ".join(parent.cmdline()):
        raise RuntimeError(f"the kernel's parent is not a Ray worker: {parent.cmdline()}")
    Path(MARKER).write_text(str(parent.pid))
    os.kill(parent.pid, signal.SIGKILL)  # the Ray worker running this job dies mid-job
    os._exit(0)
out = results.job_dir(OUT_DIR, "killer", None)
results.record(out, {"value": VALUE}, notebook="killer", model=None,
               headline={"value": results.headline(VALUE, interval="exact", label="Value")})
'''


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    """One local Ray for the module (its start-up is the slow part: ~12 s here)."""
    import ray

    started = connect(None, log_file=tmp_path_factory.mktemp("ray") / "driver.log")
    yield
    if started:
        ray.shutdown()


def test_tiny_subset_gives_the_local_executors_metrics(local_ray, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    local, ray_out = tmp_path / "local", tmp_path / "ray"
    res_local = run_all.run("tiny", notebooks=TINY, out_root=local)
    res_ray = run_all.run("tiny", notebooks=TINY, out_root=ray_out, executor="ray", results="return")
    assert [r.ok for r in res_local] == [True] * len(TINY), [r.error for r in res_local]
    assert [r.ok for r in res_ray] == [True] * len(TINY), [r.error for r in res_ray]
    assert all(r.device.startswith("ray:") and r.device.endswith(":cpu") for r in res_ray)
    for nb in TINY:
        a = json.loads((local / nb / "all" / "metrics.json").read_text(encoding="utf-8"))
        b = json.loads((ray_out / nb / "all" / "metrics.json").read_text(encoding="utf-8"))
        fa = dict(flatten({k: v for k, v in a.items() if k != "provenance"}))
        fb = dict(flatten({k: v for k, v in b.items() if k != "provenance"}))
        assert len(fa) > 50 and fa == fb, sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))[:10]
        # returned results land like local ones: fingerprint, executed notebook pointing at the output root
        executed = (ray_out / nb / "all" / "executed.ipynb").read_text(encoding="utf-8")
        assert str(ray_out / nb / "all") in executed and "geolip-ray-" not in executed
        assert (ray_out / nb / "all" / "fingerprint.json").exists()
        assert not list((ray_out / nb).glob(".*"))  # no staging directory left


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Throw-away notebooks: ``killer`` (kills its Ray worker once) and ``ok``, in profile p."""
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    write_notebook(nbdir / "ok.ipynb")
    write_notebook(nbdir / "killer.ipynb", KILLER, "OUT_DIR = None\nVALUE = 1.0\nKILL = False\nMARKER = ''")
    prof = tmp_path / "p.yaml"
    prof.write_text(f"""name: p
description: Ray executor probe
notebooks:
  killer:
    per_model: false
    parameters: {{KILL: true, MARKER: "{tmp_path / 'killed'}"}}
  ok:
    per_model: false
    jobs:
      - {{id: a, parameters: {{VALUE: 2.0}}}}
      - {{id: b, parameters: {{VALUE: 3.0}}}}
""", encoding="utf-8")
    monkeypatch.setattr(run_all, "NOTEBOOKS", nbdir)
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(nbdir))
    for nb in ("ok", "killer"):  # the fit check before a run wants a rule for each notebook: no model, no memory
        monkeypatch.setitem(plan.RULES, nb, plan.RULES["12_constellation_relay"])
    return tmp_path, prof


def _main(prof: Path, out: Path, capsys, *args: str) -> tuple[int, list[str]]:
    code = run_all.main(["--profile", str(prof), "--out", str(out), "--no-pdf", "--executor", "ray", *args])
    err = capsys.readouterr().err
    return code, [ln for ln in err.splitlines() if ln.strip()]


@pytest.mark.parametrize("mode", ["shared", "return"])
def test_killed_worker_is_reported_and_resume_skips_done_jobs(local_ray, sandbox, capsys, mode):
    from geolip_lib.provenance import library_hash

    tmp, prof = sandbox
    out = tmp / "out"
    code, lines = _main(prof, out, capsys, "--ray-results", mode)
    assert code == 1, lines
    jobs = [ln for ln in lines if ln.startswith("[")]
    assert len(jobs) == 3, lines  # one line per job
    killed = next(ln for ln in jobs if "killer / all" in ln)
    assert killed.startswith("[1/3] FAIL") and f"{DIED}: WorkerCrashedError" in killed
    assert any(ln.startswith("[2/3] ok    ok / a") for ln in jobs) and any(ln.startswith("[3/3] ok    ok / b")
                                                                          for ln in jobs)
    assert "1 job(s) failed" in "\n".join(lines) and "killer / all: " + DIED in "\n".join(lines)
    assert (tmp / "killed").exists()  # the notebook did kill its worker
    failed = out / "killer" / "all.failed"
    assert DIED in (failed / "error.txt").read_text(encoding="utf-8")
    assert not (out / "killer" / "all").exists() and not list((out / "killer").glob(".*partial"))
    if mode == "shared":  # what the dead worker had written is kept for the post-mortem
        assert (failed / "kernel.log").exists()
    assert json.loads((out / "ok" / "b" / "metrics.json").read_text(encoding="utf-8"))["metrics"]["value"] == 3.0
    stored = json.loads((out / "ok" / "a" / "fingerprint.json").read_text(encoding="utf-8"))["library"]
    before = {j: (out / "ok" / j / "metrics.json").stat().st_mtime_ns for j in ("a", "b")}

    code, lines = _main(prof, out, capsys, "--ray-results", mode, "--resume")
    assert code == 0, lines
    text = "\n".join(lines)
    assert "[1/3] ok    killer / all" in text  # the killed job runs again (it kills nobody the second time)
    if library_hash() == stored:
        assert "[2/3] skip  ok / a (done, unchanged)" in text and "[3/3] skip  ok / b (done, unchanged)" in text
        assert before == {j: (out / "ok" / j / "metrics.json").stat().st_mtime_ns for j in ("a", "b")}
    else:  # another engineer edited geolip_lib meanwhile: then --resume must say so and re-run them
        assert "rerun ok / a: geolip_lib code changed" in text
    assert (out / "killer" / "all" / "metrics.json").exists()


def test_unreachable_ray_address_is_one_line(sandbox, capsys):
    tmp, prof = sandbox
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, lines = _main(prof, tmp / "out", capsys, "--ray-address", f"127.0.0.1:{port}")
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith(f"error: --ray-address 127.0.0.1:{port}: nothing answers there")
    code, lines = _main(prof, tmp / "out", capsys, "--ray-address", "head-without-port")
    assert code == 2 and len(lines) == 1 and "expected <head-ip>:<port>" in lines[0]
