"""Jobs that finish or say why. A job's time limit is the whole
notebook's (not one cell's: 01 on Gemma failed 'after 600 seconds' at 975 s), settable per run
(--timeout) and per params file; the plan compares each estimate with its limit; a run prints a
start line for every job (also with --jobs 1) and a heartbeat for long jobs; 15's claims run with
--models; flags of another mode or out of range are one line, exit 2, before anything runs."""
from __future__ import annotations

import io
import time

import pytest

import run_all
from geolip_lib.runner.estimate import JobEstimate
from geolip_lib.runner.execute import cell_progress
from geolip_lib.runner.jobs import jobs_for_profile, with_timeout
from geolip_lib.runner.plan import Plan
from geolip_lib.runner.schedule import Progress, Running
from geolip_lib.runner.jobspec import Job

pytestmark = pytest.mark.unit


def test_a_job_is_stopped_at_its_time_limit_with_the_cell_it_was_in(sandbox, capsys):
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {SLEEP: 60.0}}\n")
    t0 = time.perf_counter()
    code, err = sandbox.main("--timeout", "8", "--jobs", "1", "--cold", capsys=capsys)
    took = time.perf_counter() - t0
    assert code == 1 and took < 50
    fail = [ln for ln in err if "FAIL" in ln]
    assert len(fail) == 1 and "time limit reached: the job ran 8 s in cell 3 of 3" in fail[0] and "--timeout" in fail[0]
    assert any("start ok / a" in ln and "(limit 8 s)" in ln for ln in err)  # a start line with --jobs 1
    assert (sandbox.out / "ok" / "a.failed" / "error.txt").is_file() and not (sandbox.out / "ok" / "a").exists()


@pytest.mark.parametrize("args,words", [
    (["--jobs", "0"], "--jobs 0: give a number of jobs from 1 to 4096"),
    (["--jobs", "1000000000"], "--jobs 1000000000: give a number of jobs from 1 to 4096"),
    (["--timeout", "0"], "--timeout 0: give seconds from 1 to 2592000"),
    (["--host-memory", "64"], "--host-memory describe a box for --plan; add --plan"),
    (["--plan", "--resume"], "--plan runs nothing; --resume has no effect with it"),
    (["--ray-address", "10.0.0.1:6379"], "--ray-address / --ray-results are for --executor ray"),
])
def test_flags_out_of_range_or_of_another_mode_are_one_line(sandbox, capsys, args, words):
    code, err = sandbox.main(*args, capsys=capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and words in err[0]
    assert not sandbox.out.exists()


def test_a_params_file_raises_the_limit_and_timeout_replaces_it(tmp_path):
    jobs = jobs_for_profile("demo", models=["tiny-t5"], notebooks=["02_weight_topology"])
    assert [j.timeout_s for j in jobs] == [1800]
    own = tmp_path / "slow-t5.yaml"
    own.write_text("name: slow-t5\nfamily: t5\nsource: tiny\nconfig: {d_model: 32, d_ff: 64, num_layers: 2, "
                   "num_heads: 2, d_kv: 16, vocab_size: 128}\ntokenizer: unigram-wordnet\ntimeout_s: 7200\n")
    mine = jobs_for_profile("demo", models=[str(own)], notebooks=["02_weight_topology"])
    assert [j.timeout_s for j in mine] == [7200]  # the larger of the profile's and the params file's
    assert [j.timeout_s for j in with_timeout(mine, 90)] == [90]


def test_models_keeps_the_claims_notebook_that_its_jobs_feed():
    labels = [j.label for j in jobs_for_profile("demo", models=["tiny-t5"])]
    assert labels[-1] == "15_seed_claims / all" and "02_weight_topology / tiny-t5" in labels
    assert not any(lb.startswith("03_cross_model") for lb in labels)  # 03 would compute its own MODELS
    only = [j.label for j in jobs_for_profile("demo", models=["tiny-t5"], notebooks=["02_weight_topology"])]
    assert only == ["02_weight_topology / tiny-t5"]


def _row(seconds, span, limit, device="cpu"):
    return JobEstimate(label="09_modulator_training / mine", notebook="09_modulator_training", models=("mine",),
                       params=4_000_000_000, download=0, disk={}, items=[], host=1, gpu=0, device=device, source="",
                       seconds=seconds, span=span, timeout_s=limit)


def test_the_plan_says_which_jobs_will_not_finish_and_what_would_make_them():
    plan = Plan(rows=[_row(52_560, (30_000, 90_000), 14_400)], free_disk={}, free_mem=10**12, gpus=[])
    over = plan.time_lines()
    assert len(over) == 1 and "time: will not finish: estimated 14.6 (8.3-25.0) h against its limit of 4.0 h" in over[0]
    assert "--timeout 108000" in over[0] and "a smaller sample, or a GPU" in over[0]
    text = plan.render()
    assert "\nfits.\n" not in text + "\n" and "fits in memory and disk; 1 job(s) estimated past their time limit" in text
    # said, never enforced: an estimate is not a measurement (a run is not refused for time)
    assert plan.shortfalls() == [] and plan.unfit() == {}
    maybe = Plan(rows=[_row(20_000, (10_000, 40_000), 14_400, "cuda:0")], free_disk={}, free_mem=10**12, gpus=[10**11])
    assert "may not finish" in maybe.render() and "or a GPU" not in maybe.render()
    guess = _row(52_560, (30_000, 90_000), 14_400)
    guess.time_basis = "09's extrapolated rate on shapes-t5-small (rates.yaml), scaled by parameters"
    g = Plan(rows=[guess], free_disk={}, free_mem=10**12, gpus=[])
    assert "(an extrapolated estimate)" in g.time_lines()[0] and g.time_lines(measured_only=True) == []
    fine = Plan(rows=[_row(100, (50, 200), 14_400)], free_disk={}, free_mem=10**12, gpus=[])
    assert fine.time_lines() == [] and "time limits" not in fine.render() and fine.render().endswith("fits.")


def test_the_heartbeat_names_the_cell_of_a_single_running_job(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1", metadata={"papermill": {"status": "completed"}}),
                nbformat.v4.new_code_cell("2", metadata={"papermill": {"status": "running"}}),
                nbformat.v4.new_code_cell("3", metadata={"papermill": {"status": "pending"}})]
    partial = tmp_path / "01_x" / ".m.partial"
    partial.mkdir(parents=True)
    nbformat.write(nb, str(partial / "executed.ipynb"))
    assert cell_progress(partial / "executed.ipynb") == (1, 3)
    assert cell_progress(tmp_path / "missing.ipynb") is None
    out = io.StringIO()
    p = Progress(out, 1, parallel=False, every=0.0)
    p.out_root = tmp_path
    p.footer({1: Running(Job("p", "01_x", "m", "m"), 1, time.perf_counter() - 125)})
    assert out.getvalue().startswith("running 1: 01_x / m 125s, cell 2 of 3")


# ------------------------------------------------------------------ an output root that is ours
def test_out_a_folder_of_ones_own_files_is_refused_before_anything(sandbox, capsys):
    mine = sandbox.out
    (mine / "ok" / "a").mkdir(parents=True)
    (mine / "index.html").write_text("my page")
    (mine / "ok" / "a" / "notes.txt").write_text("my notes")
    code, err = sandbox.main("--jobs", "1", capsys=capsys, ours=False)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: output root {mine} already holds files")
    assert "index.html, ok" in err[0] and "not a geolip output root" in err[0]
    assert (mine / "index.html").read_text() == "my page" and (mine / "ok" / "a" / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in mine.iterdir()) == ["index.html", "ok"]  # no lock, no .profile.json left


def test_a_job_folder_holding_no_result_is_never_replaced(sandbox, capsys):
    code, _ = sandbox.main("--jobs", "1", "--cold", capsys=capsys)  # a geolip root of profile p
    assert code == 0
    job = sandbox.out / "ok" / "a"
    for f in job.iterdir():
        f.unlink() if f.is_file() else None
    (job / "notes.txt").write_text("my notes")  # no metrics.json: not a result
    code, err = sandbox.main("--jobs", "1", "--cold", capsys=capsys)
    assert code == 1 and any("holds no geolip result (no metrics.json): it was not replaced" in ln for ln in err)
    assert (job / "notes.txt").read_text() == "my notes"


def test_an_empty_existing_folder_is_ours(sandbox, capsys):
    sandbox.out.mkdir()
    code, _ = sandbox.main("--jobs", "1", "--cold", capsys=capsys)
    assert code == 0 and (sandbox.out / "ok" / "a" / "metrics.json").is_file()


def test_job_ids_that_differ_only_in_case_are_one_line(sandbox, capsys):
    sandbox.write("  ok:\n    per_model: false\n    jobs:\n      - {id: Job-A}\n      - {id: job-a}\n")
    code, err = sandbox.main(capsys=capsys)
    assert code == 2 and len(err) == 1 and "job ids 'Job-A' and 'job-a' differ only in case" in err[0]
    assert not sandbox.out.exists()


# ------------------------------------------------------------------ timings data that lie
def test_timings_rows_with_nan_or_negative_seconds_are_left_out_with_one_line(tmp_path, capsys):
    from geolip_lib.runner import estimate

    good = {"notebook": "02_weight_topology", "drivers": {"params": 1000}, "seconds": 12.5}
    (tmp_path / "a.json").write_text('{"rows": [' + ", ".join([
        '{"notebook": "02_weight_topology", "drivers": {"params": 1000}, "seconds": 12.5}',
        '{"notebook": "02_weight_topology", "drivers": {"params": 1000}, "seconds": NaN}',
        '{"notebook": "02_weight_topology", "drivers": {"params": 1000}, "seconds": -1000000000}',
        '{"notebook": "02_weight_topology", "drivers": {"params": 1000}, "seconds": 1e400}',
        '{"drivers": {}, "seconds": 3}']) + "]}")
    (tmp_path / "b.json").write_text("[1, 2")  # not JSON
    rows = estimate.load_timings(tmp_path)
    assert [{k: r[k] for k in good} for r in rows] == [good]
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(err) == 5 and all(ln.startswith("warning: timings/") for ln in err)
    assert "row 1 left out: seconds nan" in err[0] and "row 2 left out: seconds -1000000000" in err[1]
    assert "b.json left out" in err[4]
