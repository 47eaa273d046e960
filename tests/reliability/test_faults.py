"""Probes of an unlucky machine: output roots that cannot be written, two runs on one root,
a full disk, a run killed while replacing a result, corrupt result files, Ctrl-C, a second
checkout sharing the venv. Each asserts the one-line outcome, the exit code, and that
nothing was lost or left counting as done."""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import run_all
from geolip_lib import report, results

ROOT = Path(__file__).resolve().parents[2]


def lines_of(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


# ------------------------------------------------------------------------------ output root
def test_output_root_that_is_a_file(sandbox, capsys):
    sandbox.out.write_text("not a directory")
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and lines == [f"error: output root {sandbox.out} is a file, not a directory; pass --out <directory>"]


@pytest.mark.parametrize("where", ["/proc/geolip-probe", "/proc/1/geolip-probe/out"])
def test_output_root_that_cannot_be_created(sandbox, capsys, where):
    sandbox.out = Path(where)
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: output root {where} cannot be created or written (")
    assert lines[0].endswith("pass --out <a writable directory>")


def test_report_only_on_an_unwritable_root(sandbox, capsys):
    sandbox.out = Path("/proc/geolip-probe")
    code, lines = sandbox.main("--report-only", capsys=capsys)
    assert code == 2 and lines == ["error: output root /proc/geolip-probe does not exist: nothing to report; run "
                                   "without --report-only first, or pass the --out of an earlier run"]


# ------------------------------------------------------------------------------ lock
def test_second_run_on_the_same_root_exits_naming_the_running_pid(sandbox, capsys):
    sandbox.out.mkdir()
    lock = sandbox.out / run_all.LOCK
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": "2026-11-23 10:00:00"}))
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and lines == [f"error: another run_all (pid {os.getpid()}, started 2026-11-23 10:00:00) is "
                                   f"writing to {sandbox.out}; wait for it to finish or pass another --out"]
    assert lock.exists() and not (sandbox.out / "ok").exists()


def test_lock_held_on_another_host(sandbox, capsys):
    sandbox.out.mkdir()
    (sandbox.out / run_all.LOCK).write_text(json.dumps({"pid": 1, "host": "gpu-box-7", "started": "x"}))
    code, lines = sandbox.main(capsys=capsys)
    assert code == 2 and len(lines) == 1 and "run_all pid 1 on host gpu-box-7" in lines[0]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("content", ["dead", "garbage"])
def test_stale_lock_is_taken_over(sandbox, content):
    sandbox.out.mkdir()
    lock = sandbox.out / run_all.LOCK
    pid = _dead_pid()
    lock.write_text(json.dumps({"pid": pid, "host": socket.gethostname()}) if content == "dead" else "{half")
    msgs = []

    class Console:
        def write(self, s):
            msgs.append(s)

        def flush(self):
            pass

    with run_all.run_lock(sandbox.out, Console()):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    expected = f"(pid {pid} is no longer running)" if content == "dead" else "(unreadable lock file)"
    assert "".join(msgs).strip() == f"taking over a stale lock in {sandbox.out} {expected}"
    assert not lock.exists()  # released


def test_lock_is_released_after_a_run_and_after_an_error(sandbox):
    sandbox.out.mkdir()
    with pytest.raises(RuntimeError):
        with run_all.run_lock(sandbox.out):
            raise RuntimeError("boom")
    assert not (sandbox.out / run_all.LOCK).exists()


# ------------------------------------------------------------------------------ replacing results
def _job_dir(path: Path, value: float) -> Path:
    path.mkdir(parents=True)
    results.record(path, {"value": value})
    return path


def test_publish_replaces_the_old_result(tmp_path):
    final = _job_dir(tmp_path / "nb" / "a", 1.0)
    partial = _job_dir(tmp_path / "nb" / ".a.partial", 2.0)
    run_all.publish(partial, final, tmp_path)
    assert results.read(final)["metrics"]["value"] == 2.0
    assert sorted(p.name for p in (tmp_path / "nb").iterdir()) == ["a"]


def test_a_run_killed_between_the_two_renames_loses_nothing(tmp_path, capsys):
    # the state publish() leaves if killed after moving the old result aside
    _job_dir(tmp_path / "nb" / ".a.old", 1.0)
    _job_dir(tmp_path / "nb" / ".a.partial", 2.0)
    assert run_all.recover(tmp_path) == ["nb/a"]
    assert results.read(tmp_path / "nb" / "a")["metrics"]["value"] == 1.0  # the old result is back
    assert "restored the previous result of nb/a" in capsys.readouterr().err


def test_recover_drops_an_old_copy_when_the_result_is_in_place(tmp_path):
    _job_dir(tmp_path / "nb" / "a", 2.0)
    _job_dir(tmp_path / "nb" / ".a.old", 1.0)
    assert run_all.recover(tmp_path) == []
    assert results.read(tmp_path / "nb" / "a")["metrics"]["value"] == 2.0
    assert not (tmp_path / "nb" / ".a.old").exists()


def test_result_files_are_world_readable(tmp_path):
    p = results.record(tmp_path, {"x": 1})
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~results._UMASK
    assert stat.S_IMODE(p.stat().st_mode) & 0o044 == 0o044 or results._UMASK & 0o044


# ------------------------------------------------------------------------------ failures while failing
def test_error_file_that_cannot_be_written_does_not_raise(tmp_path):
    job = run_all.Job("p", "nb", "a", None)
    partial = tmp_path / "nb" / ".a.partial"  # never created: writing error.txt fails
    res = run_all._fail(job, partial, tmp_path / "nb" / "a.failed", "disk full: OSError: x", "tb", time.perf_counter())
    assert not res.ok and res.error == "disk full: OSError: x"
    assert not (tmp_path / "nb" / "a.failed").exists() and not partial.exists()


def test_disk_full_is_recognised_in_a_chain_and_in_kernel_text():
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as inner:
            raise RuntimeError("could not save") from inner
    except RuntimeError as exc:
        assert run_all._is_disk_full(exc)
    assert run_all._is_disk_full(RuntimeError("OSError: [Errno 28] No space left on device"))
    assert not run_all._is_disk_full(RuntimeError("planted failure"))


@pytest.mark.slow
def test_disk_full_mid_job_stops_the_batch_with_a_summary(sandbox, capsys):
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {FAIL: disk}}\n"
                  "      - {id: b, parameters: {VALUE: 3.0}}\n")
    code, lines = sandbox.main("--jobs", "1", capsys=capsys)
    assert code == 1
    assert any("FAIL" in ln and "ok / a" in ln and "disk full: OSError: [Errno 28] No space left on device" in ln
               for ln in lines), lines
    assert f"stopping: the disk holding {sandbox.out} is full; 1 job(s) not started. Free space, then rerun " \
           "with --resume." in lines
    assert not (sandbox.out / "ok" / "b").exists() and not (sandbox.out / "ok" / "a").exists()
    assert not list((sandbox.out / "ok").glob(".*.partial"))
    assert not (sandbox.out / run_all.LOCK).exists()


# ------------------------------------------------------------------------------ corrupt results
@pytest.mark.parametrize("content", ["{\"notebook\": \"ok\", \"metr", "", "[1, 2]"])
def test_corrupt_metrics_json_is_a_failed_job_and_the_report_builds(tmp_path, content):
    good = _job_dir(tmp_path / "ok" / "a", 1.0)
    bad = tmp_path / "ok" / "b"
    bad.mkdir()
    (bad / "metrics.json").write_text(content)
    groups = report.collect(tmp_path)
    by = {r.job_id: r for r in groups["ok"]}
    assert by["a"].ok and not by["b"].ok
    assert str(bad / "metrics.json") in by["b"].error and "rerun with --resume" in by["b"].error
    html = report.index_html("p", groups)
    assert "FAILED b" in html and good.name


def test_corrupt_metrics_json_is_not_counted_as_done_by_resume(sandbox):
    sandbox.out.mkdir()
    job = run_all.jobs_for_profile(str(sandbox.profile))[0]
    d = run_all.job_dir(job, sandbox.out)
    d.mkdir(parents=True)
    (d / "metrics.json").write_text("{truncated")
    (d / "executed.ipynb").write_text("{}")
    (d / run_all.FINGERPRINT).write_text(json.dumps(run_all.fingerprint(job)))
    assert run_all.stale_reasons(job, sandbox.out) == ["metrics.json or fingerprint.json is unreadable"]
    (d / "metrics.json").write_text("{}")
    (d / run_all.FINGERPRINT).write_text("{")
    assert run_all.stale_reasons(job, sandbox.out) == ["metrics.json or fingerprint.json is unreadable"]


def test_results_read_names_the_file(tmp_path):
    (tmp_path / "metrics.json").write_text("{oops")
    with pytest.raises(results.MetricsFileError) as exc:
        results.read(tmp_path)
    assert str(tmp_path / "metrics.json") in str(exc.value) and "\n" not in str(exc.value)


# ------------------------------------------------------------------------------ Ctrl-C
@pytest.mark.slow
def test_ctrl_c_stops_with_one_line_and_leaves_nothing_half_written(sandbox):
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {SLEEP: 60.0}}\n")
    cmd = [sys.executable, "run_all.py", "--profile", str(sandbox.profile), "--out", str(sandbox.out), "--no-pdf"]
    env = dict(os.environ, GEOLIP_NOTEBOOKS=str(sandbox.nbdir))
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    deadline = time.time() + 240
    while not (sandbox.out / "ok" / ".a.partial" / "running").exists():
        assert time.time() < deadline and proc.poll() is None, "the job never started"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to the foreground group
    _, err = proc.communicate(timeout=120)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert proc.returncode == 130, err
    assert lines[-1] == ("interrupted during ok / a (its partial result was removed): 0 job(s) finished and kept; "
                         "rerun with --resume to go on"), err
    assert "Traceback" not in err
    assert not (sandbox.out / "ok" / ".a.partial").exists() and not (sandbox.out / "ok" / "a").exists()
    assert not (sandbox.out / run_all.LOCK).exists()


# ------------------------------------------------------------------------------ a second checkout
@pytest.mark.slow
def test_a_second_checkout_runs_its_own_library_in_the_kernel(sandbox, tmp_path):
    """A clone sharing this venv (whose editable install points elsewhere) runs its own code."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--local", str(ROOT), str(clone)], check=True)
    marker = "SECOND_CHECKOUT = True\n"
    with open(clone / "geolip_lib" / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write(marker)
    body = ("import geolip_lib, json, pathlib\nfrom geolip_lib import results\n"
            "out = results.job_dir(OUT_DIR, 'ok', None)\n"
            "results.record(out, {'file': geolip_lib.__file__, 'second': getattr(geolip_lib, 'SECOND_CHECKOUT', False),"
            " 'params': str(__import__('geolip_lib.params', fromlist=['x']).PARAMS)}, notebook='ok')\n")
    from tests.reliability.conftest import write_notebook

    write_notebook(sandbox.nbdir / "ok.ipynb", body=body)
    env = dict(os.environ, GEOLIP_NOTEBOOKS=str(sandbox.nbdir))
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, str(clone / "run_all.py"), "--profile", str(sandbox.profile), "--out",
                        str(sandbox.out), "--no-pdf"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = results.read(sandbox.out / "ok" / "a")["metrics"]
    assert m["second"] is True and m["file"].startswith(str(clone)), m
    assert m["params"].startswith(str(clone)), m


def test_a_failed_rerun_does_not_leave_the_old_success_counted(sandbox, capsys):
    """First run ok; the rerun (new parameters) fails: the report shows the failure, not the old
    success, and --resume reruns the job."""
    assert sandbox.main(capsys=capsys)[0] == 0
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {VALUE: 5.0, FAIL: boom}}\n")
    code, lines = sandbox.main(capsys=capsys)
    assert code == 1 and any("RuntimeError: planted failure" in ln for ln in lines)
    recs = report.collect(sandbox.out)["ok"]
    assert [(r.job_id, r.ok) for r in recs] == [("a", False)]
    job = run_all.jobs_for_profile(str(sandbox.profile))[0]
    assert run_all.stale_reasons(job, sandbox.out)[0].startswith("parameters changed")
