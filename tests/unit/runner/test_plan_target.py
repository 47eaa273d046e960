"""``--plan`` for the box you will rent (items 12-14): a target box through the plan's what-if
(``--gpus``, ``--gpu-memory``, ``--host-memory``, ``--disk``), the estimated time per job and in total
from the rates kept as data (``geolip_lib/runner/rates.yaml``), the table's width and words, exit codes."""
from __future__ import annotations

import dataclasses
import functools
import json
import math
from types import SimpleNamespace

import pytest

from geolip_lib.runner import estimate as E
from geolip_lib.runner import plan as P
from geolip_lib.runner.local import plan_for
from run_all import jobs_for_profile, main

pytestmark = pytest.mark.unit
GB = 10**9
RENT = ["--gpus", "8", "--gpu-memory", "80", "--host-memory", "1000"]


@pytest.fixture(scope="module", autouse=True)
def _empty_hf_cache(tmp_path_factory):
    """An empty Hugging Face cache: hub models are offline here, whatever the machine's cache holds."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf_hub")))
        P.model_info.cache_clear()
        yield
    P.model_info.cache_clear()


@functools.lru_cache(maxsize=None)
def _jobs(profile):
    return tuple(jobs_for_profile(profile))


@functools.lru_cache(maxsize=None)
def _rented(tmp):
    return plan_for(_jobs("paper"), tmp, None, P.target_box(8, 80, 1000))


def test_the_paper_profile_on_an_8_gpu_box_fits_with_per_job_and_total_time(tmp_path_factory, capsys):
    out = tmp_path_factory.mktemp("out")
    pl = _rented(out)
    assert pl.parallel == 8 and pl.gpus == [80 * GB] * 8 and pl.free_mem == 1000 * GB
    # every model job gets one of the 8 GPUs (device: auto), handed out in profile order
    model_rows = [r for r in pl.rows if r.models]
    assert {r.device for r in model_rows} == {f"cuda:{i}" for i in range(8)}
    assert pl.shortfalls() == [] and pl.disk_unknown  # the target's disk was not given: not judged here
    # the command of the issue, end to end: exit 0, a time on every estimated row, the totals line
    assert main(["--profile", "paper", "--plan", *RENT, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= P.WIDTH
    assert lines[0].startswith("speed: CPU estimates at the development machine's quiet speed (a target box")
    head = next(ln for ln in lines if ln.startswith("job "))  # the table, under the speed line
    assert head.split() == ["job", "params", "disk", "GB", "host", "GB", "GPU", "GB", "device", "est.", "time", "notes"]
    for r in pl.rows:
        i = next(i for i, ln in enumerate(lines) if ln.startswith(r.label + " ") or ln == r.label)
        row = lines[i] if lines[i] != r.label else lines[i + 1]  # a long job name has a line of its own
        assert (P._span(r.seconds, r.span) if r.seconds is not None else "?") in row
        if r.seconds is not None:  # every estimate has its range, around it
            assert r.span[0] <= r.seconds <= r.span[1]
    assert any(ln.startswith("estimated time: ") for ln in lines)
    assert "not judged (give --disk GB" in text and text.rstrip().endswith("fits.")
    # no jargon: the notes say where numbers come from in words
    assert "rule 0" not in text and "meta device" not in text
    assert "parameters counted on the model's config (built without weights)" in text
    assert "an ASSUMED speed-up" in text and "(range " in text and "10% headroom" in text


def test_what_does_not_fit_on_the_target_box_exits_2_with_the_jobs(tmp_path, capsys):
    assert main(["--profile", "paper", "--plan", "--gpus", "8", "--gpu-memory", "80", "--host-memory", "20",
                 "--disk", "40", "--out", str(tmp_path)]) == 2
    text = capsys.readouterr().out
    section = " ".join(ln.strip() for ln in text.split("does not fit:")[1].splitlines())  # long lines wrap
    pl = plan_for(_jobs("paper"), tmp_path, None, P.target_box(8, 80, 20, 40))
    short = pl.shortfalls()
    assert f"does not fit: {len(short)} problem(s)" in text and all(s in section for s in short)
    assert any(s.startswith("02_weight_topology / t5-v1_1-xxl: host memory") for s in short)
    assert any("disk on" in s for s in short)  # --disk 40 is judged (the run needs ~76 GB)


@pytest.mark.parametrize("argv, line", [
    (["--gpus", "8"], "error: --gpus 8: give --gpu-memory GB too"),
    (["--gpu-memory", "80"], "error: --gpu-memory 80: give --gpus N too"),
    (["--gpus", "-1", "--gpu-memory", "80"], "error: --gpus -1: give a number >= 0"),
    (["--host-memory", "0"], "error: --host-memory 0: give a number > 0 (GB)"),
])
def test_a_bad_target_box_is_one_line_exit_2(argv, line, capsys):
    assert main(["--profile", "tiny", "--plan", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1


def test_a_cpu_box_puts_every_job_on_the_cpu_and_needs_no_gpu_memory(tmp_path):
    pl = plan_for(_jobs("tiny"), tmp_path, None, P.target_box(0, None, 64, 500))
    assert {r.device for r in pl.rows} == {"cpu"} and all(r.gpu == 0 for r in pl.rows)
    assert "no GPU on the target box (--gpus 0)" in pl.render()
    assert not any("assumed speed-up" in r.time_basis for r in pl.rows)  # CPU times: no assumption


def test_gpu_times_are_measured_steps_or_the_cpu_estimate_over_the_assumed_speed_up_and_totals_add_up(tmp_path):
    rates = E.load_rates()
    pl = _rented(tmp_path)
    rows = {r.label: r for r in pl.rows}
    cpu = {r.label: r for r in plan_for(_jobs("paper"), tmp_path, None, P.target_box(0, None, 1000)).rows}
    # 04 has no measured GPU step: its CPU estimate / the assumed speed-up
    bert = rows["04_wordnet_alignment / bert-large-uncased"]
    assert bert.device.startswith("cuda") and cpu[bert.label].device == "cpu"
    assert math.isclose(bert.seconds, cpu[bert.label].seconds / rates.gpu_speedup)
    assert "ASSUMED speed-up" in bert.time_basis and "ASSUMED" not in cpu[bert.label].time_basis
    # 02 runs measured GPU steps (test_gpu_rates.py): H200 rates, faster than the 2-core CPU's estimate
    qwen = rows["02_weight_topology / qwen3.5-4b"]
    assert "at H200 rates measured" in qwen.time_basis and qwen.seconds < cpu[qwen.label].seconds / 2
    # 03 repeats 02's battery on each model of MODELS (with one twin, not 02's five null seeds): 02's cost model
    small = rows["02_weight_topology / t5-small"]
    assert 0 < rows["03_cross_model / all"].seconds <= small.seconds
    # monotone in parameters within a notebook
    assert rows["02_weight_topology / qwen3.5-0.8b"].seconds < qwen.seconds
    # the totals: job time is the sum; 8 at once is no longer than that and no shorter than the longest job
    total, elapsed = pl.timeline()
    known = [r.seconds for r in pl.rows if r.seconds is not None]
    assert math.isclose(total, sum(known)) and max(known) <= elapsed <= total
    assert math.isclose(dataclasses.replace(pl, parallel=1).timeline()[1], total)


def test_jobs_reading_other_results_start_after_every_job_before_them():
    def row(label, sec):
        return SimpleNamespace(label=label, seconds=sec)

    rows = [row("a", 100.0), row("b", 10.0), row("c", 10.0), row("d", 5.0)]
    free = P.Plan(rows, {}, 0, [], parallel=2)
    barrier = dataclasses.replace(free, after_all=frozenset({"c"}))
    # a || b, then c as soon as b frees a slot, d with c: 100; with c after all: a and b, then c (100-110)
    assert free.timeline() == (125.0, 100.0)
    assert barrier.timeline() == (125.0, 110.0)


def test_a_gpu_run_replaces_the_assumption_with_its_own_job_timing(tmp_path):
    job = next(j for j in _jobs("paper") if j.label == "02_weight_topology / t5-small")
    d = tmp_path / job.notebook / job.job_id
    d.mkdir(parents=True)
    (d / "job_timing.json").write_text(json.dumps({"preflight_s": 1.5, "kernel_start_s": 2.0, "notebook_s": 30.5,
                                                   "warm": True, "device": "cuda:3", "threads": "2"}))
    pl = P.make_plan([job], devices={job.label: "cuda:0"}, free_disk=10**15, free_mem=10**15, gpus=[80 * GB],
                     out_root=tmp_path)
    assert pl.rows[0].seconds == 34.0 and "measured in this output root (cuda:3)" in pl.rows[0].time_basis
    # and a GPU rate in the data replaces the assumed speed-up for its notebook
    rates = E.load_rates()
    gpu = dataclasses.replace(rates, rates=rates.rates + (E.Rate(
        notebook="02_weight_topology", model="shapes-t5-small", params=60_506_624, seconds=6.0, basis="measured",
        sizes="paper", device="cuda", family="t5"),))
    pl = P.make_plan([job], devices={job.label: "cuda:0"}, free_disk=10**15, free_mem=10**15, gpus=[80 * GB],
                     out_root=tmp_path / "elsewhere", rates=gpu)
    r = pl.rows[0]
    assert math.isclose(r.seconds, 6.0 * r.params / 60_506_624) and "assumed" not in r.time_basis


@pytest.mark.parametrize("text, key", [
    ("gpu_speedup: 0\nrates: []\n", "key 'gpu_speedup': expected a number > 0, got 0"),
    ("gpu_speedup: 10\nrates:\n  - {notebook: a, model: m, params: 1, seconds: 2, basis: guessed, sizes: paper}\n",
     "rates[0] (a / m): seconds > 0, params >= 0 and basis measured|extrapolated expected"),
    ("gpu_speedup: 10\nrates:\n  - {notebook: a, model: m, params: 1, seconds: 2, basis: measured, sizez: paper}\n",
     "rates[0]: "),
    ("gpu_speedup: [\n", "cannot be read"),
])
def test_a_bad_rates_file_is_one_line_naming_the_key(tmp_path, text, key):
    f = tmp_path / "rates.yaml"
    f.write_text(text)
    with pytest.raises(P.PlanError) as err:
        E.load_rates(f)
    assert str(err.value).startswith(f"rates.yaml: {key}") and "\n" not in str(err.value)


def test_the_shipped_rates_are_the_benchmark_readmes_numbers():
    """Each measured rate is a row of benchmarks/README.md's shapes table (CPU time, else wall time), or of the
    timings/ file its note names (08's: measured by run_all into that file)."""
    from geolip_lib.paths import ROOT

    table = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    measured = [r for r in E.load_rates().rates if r.basis == "measured"]
    assert len(measured) >= 12
    for r in measured:
        if r.note.startswith("timings/"):
            rows = json.loads((E.TIMINGS_DIR / r.note.split()[0].removeprefix("timings/")).read_text())["rows"]
            got = [x["wall_s" if r.clock == "wall" else "seconds"] for x in rows
                   if x["notebook"] == r.notebook and x["models"] == [r.model]]
            assert any(round(x) == r.seconds for x in got), (r, got)
            continue
        row = next(ln for ln in table.splitlines() if ln.startswith(f"| {r.notebook} | {r.model}"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        wall, cpu = cells[3], cells[4]
        assert f"{r.seconds:g} s" == (wall if r.clock == "wall" else cpu), row
