"""The plan's GPU column from measured per-step GPU rates (``geolip_lib/runner/gpu_rates.py``):
the measured files parse, crashed steps are no rates, a GPU row of a measured notebook is the hand sum of
the jsonl's steps, an unmeasured notebook stays ASSUMED, a bad row is one line naming it."""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest

from geolip_lib.runner import estimate as E
from geolip_lib.runner import gpu_rates as G
from geolip_lib.runner import plan as P
from geolip_lib.runner.jobs import notebook_defaults
from run_all import jobs_for_profile

pytestmark = pytest.mark.unit
GB = 10**9
H200 = G.DATA_DIR / "gpu-h200-2026-11-27.jsonl"
NO_ROOT = Path(__file__).parent / "no-such-output-root"  # no job_timing.json of a past run takes over


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip() and '"step"' in ln]


@functools.lru_cache(maxsize=None)
def _job(label):
    return next(j for j in jobs_for_profile("shapes") if j.label == label)


def _gpu_row(label):
    job = _job(label)
    return P.make_plan([job], devices={job.label: "cuda:0"}, free_disk=10**15, free_mem=10**15, gpus=[141 * GB],
                       defaults=notebook_defaults, out_root=NO_ROOT).rows[0]


def test_the_measured_files_parse_and_crashed_steps_are_no_rates():
    raw = _jsonl(H200)
    rates = G.load_step_rates()
    cuda = [r for r in rates if r.device == "cuda"]
    assert len(raw) == 25 and sum(r["step"].endswith("error") for r in raw) == 4
    assert len(cuda) == 21 and all(r.step in G.STEPS for r in rates)
    assert {r.gpu for r in cuda} == {"NVIDIA H200"} and {r.date for r in cuda} == {"2026-11-27"}
    nulls = {r.model for r in cuda if r.step == G.NULL}
    assert nulls == {"shapes-qwen3-4b"}  # the four crashed nulls are not rates
    # params come from each model's load row; family from its params file (shapes-qwen3-4b: qwen3-4b's)
    got = {(r.model, r.step): r for r in cuda}
    assert got["shapes-t5-base", "battery"].params == 222_903_552
    assert got["shapes-qwen3-4b", "load"].family == "decoder_lm"
    assert {r.model for r in rates if r.device == "cpu"} == {"shapes-t5-base", "shapes-bert-large-uncased"}


def test_a_gpu_row_of_a_measured_notebook_is_the_hand_sum_of_the_measured_steps():
    raw = {(r["model"], r["step"]): r["seconds"] for r in _jsonl(H200)}
    fits = E.fitted_costs()
    # 02 on shapes-t5-base: measured build + battery; its null (not measured for t5) = battery x the qwen3-4b ratio
    label = "02_weight_topology / shapes-t5-base"
    row = _gpu_row(label)
    d = E.job_drivers(_job(label), [E.model_info("shapes-t5-base")], notebook_defaults)
    ratio = raw["shapes-qwen3-4b", "null_battery_one_seed"] / raw["shapes-qwen3-4b", "battery"]
    b = raw["shapes-t5-base", "battery"]
    nulls = d["null_seeds"] * d["null_share"]
    want = fits["02_weight_topology"].fixed + raw["shapes-t5-base", "load"] + b + nulls * b * ratio
    assert d["null_seeds"] == 5 and math.isclose(row.seconds, want, rel_tol=1e-9)
    assert "build, battery at H200 rates measured 2026-11-27" in row.time_basis
    assert f"null seed: ASSUMED, the battery's rate x {ratio:.2f}" in row.time_basis
    assert row.span[0] < row.seconds < row.span[1] and "speed-up" not in row.time_basis
    # 06 on shapes-bert-large-uncased: build + operators measured; the null (a twin build + operators) assumed
    label = "06_qk_operators / shapes-bert-large-uncased"
    row = _gpu_row(label)
    d = E.job_drivers(_job(label), [E.model_info("shapes-bert-large-uncased")], notebook_defaults)
    ld, op = raw["shapes-bert-large-uncased", "load"], raw["shapes-bert-large-uncased", "operators"]
    want = fits["06_qk_operators"].fixed + ld + op + ld + d["null_seeds"] * d["null_share"] * op
    assert math.isclose(row.seconds, want, rel_tol=1e-9)
    assert "build, operators at H200 rates" in row.time_basis and "null seeds: ASSUMED" in row.time_basis
    # the null is measured for the decoder family (shapes-qwen3-4b): a Qwen row says so and assumes nothing
    row = _gpu_row("02_weight_topology / shapes-qwen3.5-0.8b")
    assert "build, battery, null seed at H200 rates" in row.time_basis and "ASSUMED" not in row.time_basis


def test_log_log_interpolation_between_measured_sizes_and_scaling_beyond():
    rows = G.gpu_rows(G.load_step_rates())
    a = next(r for r in rows if r.model == "shapes-qwen3.5-0.8b" and r.step == "load")
    b = next(r for r in rows if r.model == "shapes-qwen3-4b" and r.step == "load")
    mid = int(math.sqrt(a.params * b.params))  # the geometric middle: the geometric mean of the times
    sec, fam = G.step_seconds(rows, "load", mid, "decoder_lm")
    assert fam and math.isclose(sec, math.sqrt(a.seconds * b.seconds), rel_tol=1e-6)
    assert G.step_seconds(rows, "load", a.params, "decoder_lm")[0] == pytest.approx(a.seconds)
    big, fam = G.step_seconds(rows, "load", 4 * b.params, "no-such-family")
    assert not fam and b.seconds < big < 4 * b.seconds * 2  # beyond: the nearest, scaled by (P / P0) ** k, k <= 2


def test_an_unmeasured_notebook_on_a_gpu_stays_assumed():
    rates = E.load_rates()
    job = _job("04_wordnet_alignment / shapes-t5-base")
    gpu = _gpu_row(job.label)
    cpu = P.make_plan([job], devices={job.label: "cpu"}, free_disk=10**15, free_mem=10**15, gpus=[],
                      defaults=notebook_defaults, out_root=NO_ROOT).rows[0]
    assert math.isclose(gpu.seconds, cpu.seconds / rates.gpu_speedup)
    assert "an ASSUMED speed-up (no GPU time measured for this notebook)" in gpu.time_basis
    assert "H200" not in gpu.time_basis


def test_another_gpu_says_the_rates_are_the_h200s(monkeypatch):
    """A GPU of no known kind takes the H200's rates as they are and says so; a known kind (A100) takes them
    scaled by the datasheets, said ASSUMED."""
    monkeypatch.setattr(G, "local_gpu", lambda: "NVIDIA Tesla V100-SXM2-32GB")
    row = _gpu_row("02_weight_topology / shapes-t5-small")
    assert "at H200 rates measured 2026-11-27 (this machine's Tesla V100-SXM2-32GB was not measured)" in row.time_basis
    monkeypatch.setattr(G, "local_gpu", lambda: "NVIDIA A100-SXM4-80GB")
    scaled = _gpu_row("02_weight_topology / shapes-t5-small")
    assert "at A100 rates ASSUMED: the H200's (measured 2026-11-27) scaled by the datasheets'" in scaled.time_basis
    assert scaled.seconds > row.seconds  # the A100 has less memory bandwidth and FP32 than the H200


def test_the_plan_prints_the_measured_rates_in_lines_of_at_most_120():
    job = _job("02_weight_topology / shapes-t5-base")
    pl = P.make_plan([job], devices={job.label: "cuda:0"}, free_disk=10**15, free_mem=10**15, gpus=[141 * GB],
                     defaults=notebook_defaults, out_root=NO_ROOT)
    text = pl.render()
    assert max(len(ln) for ln in text.splitlines()) <= P.WIDTH
    assert "GPU steps of 01, 02, 03, 06: H200 rates measured 2026-11-27" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("shapes-qwen3-4b"))
    assert line.split()[1:] == ["4.0B", "52.67", "1.75", "42.05", "26.89", "70.75"]
    cpu = P.make_plan([job], devices={job.label: "cpu"}, free_disk=10**15, free_mem=10**15, gpus=[],
                      defaults=notebook_defaults, out_root=NO_ROOT).render()
    assert "GPU steps" not in cpu


GOOD = '{"model": "m", "step": "load", "device": "cuda", "seconds": 2.0, "params": 1000, "gpu": "NVIDIA X"}'


@pytest.mark.parametrize("line, says", [
    ('{"model": "m", "step": "battery", "device": "cuda", "seconds": NaN}', "line 2: 'seconds' nan is not a time > 0"),
    ('{"model": "m", "step": "battery", "device": "cuda", "seconds": -1}', "line 2: 'seconds' -1 is not a time > 0"),
    ('{"model": "m", "step": "battery", "device": "cuda"}', "line 2: key 'seconds' missing"),
    ('{"model": "m", "step": "batery", "device": "cuda", "seconds": 1}', "line 2: step 'batery' is none of load"),
    ('{"model": "m", "step": "load", "device": "cuda", "seconds": 1, "params": -5}', "line 2: 'params' -5 is not"),
    ('{"model": "n", "step": "load", "device": "cuda", "seconds": 1}', "line 2: no 'params' for n on any of its rows"),
    ('{"model": "m", "step": ', "line 2: not JSON"),
])
def test_a_bad_rates_row_is_one_line_naming_it(line, says):
    with pytest.raises(P.PlanError) as err:
        G.parse_rows(GOOD + "\n" + line + "\n", "gpu-x-2026-12-01.jsonl")
    msg = str(err.value)
    assert msg.startswith(f"gpu-x-2026-12-01.jsonl {says}") and "\n" not in msg and "fix or delete that line" in msg


def test_the_benchmarks_rows_and_notes_parse():
    bench = ('{"model": "tiny-t5", "device": "cpu", "dtype": "float32", "date": "2026-11-28", "commit": "86af2d6", '
             '"threads": 2, "params": 297600, "family": "t5", "step": "forward", "seconds": 0.327, "n_inputs": 32}')
    crashed = '{"model": "tiny-t5", "step": "battery_error", "device": "cuda", "seconds": 0.0, "error": "boom"}'
    rows = G.parse_rows('{"note": "where from"}\n' + bench + "\n" + crashed + "\n", "cpu2-2026-11-27.jsonl")
    assert [(r.model, r.step, r.device, r.params, r.date, r.n_inputs) for r in rows] == [
        ("tiny-t5", "forward", "cpu", 297600, "2026-11-28", 32)]
