"""GPU kinds on the plan (``--gpu-kind``): datasheet specs, rates measured on a kind where measured, the H200's scaled
by memory bandwidth and FP32 FLOPs elsewhere (said ASSUMED), the kind's memory implied, a bad kind one line; and
notebook 08's measured rate."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from geolip_lib.runner import estimate as E
from geolip_lib.runner import gpu_kinds as K
from geolip_lib.runner import gpu_rates as G
from geolip_lib.runner.jobs import notebook_defaults
from run_all import jobs_for_profile, main

pytestmark = pytest.mark.unit
NO_ROOT = Path(__file__).parent / "no-such-output-root"


@pytest.fixture(autouse=True)
def _no_local_gpu(monkeypatch):
    monkeypatch.setattr(G, "local_gpu", lambda: "")


def test_torch_names_map_to_kinds():
    names = {"NVIDIA H200": "H200", "NVIDIA H100 80GB HBM3": "H100", "NVIDIA H100 PCIe": "H100-PCIe",
             "NVIDIA A100-SXM4-80GB": "A100", "NVIDIA A100-SXM4-40GB": "A100-40GB", "NVIDIA L40S": "L40S",
             "NVIDIA L4": "L4", "NVIDIA A10": "A10"}
    for name, kind in names.items():
        assert K.kind_of(name).name == kind, name
    assert K.kind_of("Tesla V100-SXM2-32GB") is None and K.kind_named("h100").name == "H100"
    assert K.kind_named("B200") is None


def test_unmeasured_kinds_scale_the_h200_by_bandwidth_and_fp32():
    h200 = [r for r in G.load_step_rates() if r.device == "cuda"]
    h100 = {(r.model, r.step): r for r in G.gpu_rows(G.load_step_rates(), K.KINDS["H100"])}
    l40s = {(r.model, r.step): r for r in G.gpu_rows(G.load_step_rates(), K.KINDS["L40S"])}
    for r in h200:
        bw, fp = (r.seconds * 4.8 / 3.35, r.seconds) if r.step != "forward" else (r.seconds, r.seconds)
        assert math.isclose(h100[r.model, r.step].seconds, bw if r.step != "forward" else fp)
        want = r.seconds * (67 / 91.6 if r.step == "forward" else 4.8 / 0.864)
        assert math.isclose(l40s[r.model, r.step].seconds, want) and l40s[r.model, r.step].scaled_from == "H200"
    assert math.isclose(E.load_rates().for_kind(K.KINDS["H100"]).gpu_speedup, round(10 * 3.35 / 4.8, 2))


def test_a_kinds_measured_rows_replace_the_scaled_ones(tmp_path):
    """benchmarks/gpu_rates.py --out on an L40S writes rows the plan then takes as the L40S's, unscaled."""
    rows = [{"model": "shapes-t5-base", "step": s, "device": "cuda", "seconds": 1.5, "params": 222903552,
             "gpu": "NVIDIA L40S", "date": "2026-12-06"} for s in ("load", "forward", "battery")]
    f = tmp_path / "gpu-l40s-2026-12-06.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    rates = list(G.load_step_rates()) + G.parse_rows(f.read_text(), f.name)
    got = G.gpu_rows(rates, K.KINDS["L40S"])
    assert {r.gpu for r in got} == {"NVIDIA L40S"} and all(r.seconds == 1.5 and not r.scaled_from for r in got)
    assert G.rates_words(got[0]) == "L40S rates measured 2026-12-06"


def _plan(capsys, kind, *more):
    args = ["--profile", "paper", "--notebooks", "02_weight_topology", "--models", "t5-small", "--plan", "--gpus",
            "1", "--host-memory", "200", "--out", str(NO_ROOT), "--gpu-kind", kind, *more]
    assert main(args) == 0
    return capsys.readouterr().out


def test_the_plan_differs_by_kind_and_the_kind_implies_its_memory(capsys):
    text = {k: _plan(capsys, k) for k in ("H200", "H100", "L40S")}

    def job_s(t):
        line = next(ln for ln in t.splitlines() if ln.startswith("02_weight_topology / t5-small"))
        return float(line.split("cuda:0")[1].split()[0])

    assert job_s(text["H200"]) < job_s(text["H100"]) < job_s(text["L40S"])
    assert "1 GPU(s) of 141.00 GB" in text["H200"] and "1 GPU(s) of 80.00 GB" in text["H100"]
    assert "1 GPU(s) of 48.00 GB on the target box (--gpus, --gpu-kind L40S)" in text["L40S"]  # where it came from
    assert "H200 rates measured 2026-11-27" in text["H200"] and "ASSUMED" not in text["H200"].split("rates")[1][:30]
    assert "L40S rates ASSUMED: the H200's (measured 2026-11-27) scaled by the datasheets'" in text["L40S"]
    assert "1 GPU(s) of 40.00 GB on the target box (--gpus, --gpu-memory)" in _plan(capsys, "L40S", "--gpu-memory", "40")


@pytest.mark.parametrize("args, words", [
    (["--gpu-kind", "B200", "--gpus", "1", "--host-memory", "10", "--plan"], "known: H200, H100"),
    (["--gpu-kind", "", "--gpus", "1", "--host-memory", "10", "--plan"], "known: H200, H100"),
    (["--gpu-kind", "H100", "--plan"], "add --gpus N"),
    (["--gpu-kind", "H100", "--gpus", "0", "--host-memory", "10", "--plan"], "add --gpus N"),
    (["--gpu-kind", "H100", "--gpus", "1", "--host-memory", "10"], "add --plan"),
])
def test_a_bad_gpu_kind_is_one_line_exit_2(args, words, capsys):
    assert main(["--profile", "tiny", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], err


def test_notebook_08_has_a_measured_rate():
    job = next(j for j in jobs_for_profile("paper", ["t5-small"], ["08_modulator_pipeline"]))
    row = E.estimate_job(job, "cpu", out_root=NO_ROOT, defaults=notebook_defaults)
    assert row.seconds and "08's measured rate on smollm2-135m (rates.yaml), scaled by parameters" in row.time_basis
    gpu = E.estimate_job(job, "cuda:0", out_root=NO_ROOT, defaults=notebook_defaults,
                         rates=E.load_rates().for_kind(K.KINDS["L40S"]))
    assert "ASSUMED speed-up" in gpu.time_basis and "L40S's / H200's memory bandwidth" in gpu.time_basis
