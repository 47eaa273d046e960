"""Notebook 12 (constellation relay, seed 000) on the tiny profile."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F

from geolip_lib import metrics as gm

pytestmark = pytest.mark.notebooks
NB = "12_constellation_relay"


@pytest.fixture(scope="module")
def m12(run_notebook):
    return run_notebook(NB)


def test_causal_intervention_recorded(m12):
    c = m12["metrics"]["causal"]
    assert c["pure_relay_exact"] is True and c["hybrid_routes"] is True
    rows = {(r["arch"], r["layers"]): r for r in c["rows"]}
    stack = m12["parameters"].get("CAUSAL_STACK", 4)
    for depth in (1, stack):
        assert rows[("pure_relay", depth)]["other_delta_max"] == 0.0
        assert rows[("hybrid", depth)]["other_delta_norm"] > 1e-4
        assert rows[("vanilla_attn", depth)]["other_delta_norm"] > 1e-6
        for arch in ("pure_relay", "hybrid", "vanilla_attn"):
            assert rows[(arch, depth)]["token_delta_norm"] > 0.1  # the replaced token moves
    h = m12["headline"]["causal_hybrid"]
    assert h["value"] > 0 and h["baseline"] == 0.0
    assert list(h["nulls"]) == ["pure_relay", "vanilla_attn"]
    assert h["nulls"]["pure_relay"]["interval"]["lo"] == h["nulls"]["pure_relay"]["interval"]["hi"] == 0.0
    assert h["interval"]["lo"] > 0 and "other tokens" in h["interval"]["method"]
    assert h["nulls"]["pure_relay"]["separated"] is True


def test_input_cv_recomputed_independently(m12):
    cfg = m12["metrics"]["config"]
    torch.manual_seed(0)  # the notebook's SEED; x is the first draw after seeding
    x = torch.randn(cfg["B"], 16, cfg["D"])
    rows = F.normalize(x.reshape(-1, cfg["D"]), dim=-1)
    cv = gm.pentachoron_cv(rows, n_simplices=cfg["n_cv"], seed=0).cv
    assert m12["metrics"]["single_pass"]["cv_input"] == pytest.approx(cv, rel=1e-9)
    h = m12["headline"]["cv_hybrid_deep"]
    assert h["baseline"] == pytest.approx(cv, rel=1e-9) and h["baseline_kind"] == "gaussian"
    assert set(h["nulls"]) == {"gaussian", "vanilla_attn", "pure_relay"}
    g = h["nulls"]["gaussian"]["interval"]
    assert g["lo"] < cv < g["hi"] and "simplices" in g["method"]


def test_depth_sweep_and_interleaved_rows(m12):
    d = m12["metrics"]["depth_sweep"]
    D = m12["metrics"]["config"]["D"]
    depths = sorted({r["depth"] for r in d["rows"]})
    assert depths == [1, 2, 4]
    assert {r["arch"] for r in d["rows"]} == {"vanilla_attn", "pure_relay", "hybrid"}
    for r in d["rows"]:
        assert 0 < r["cv_n"] < 2
        assert -1 <= r["cos_to_input"] <= 1
        assert 1 <= r["eff_dim_sv_pr"] <= D and 1 <= r["eff_dim_entropy"] <= D
    assert d["input"]["cos_to_input"] == pytest.approx(1.0, abs=1e-6)
    # residual mixers at random init stay close to their input, and drift with depth
    for arch in ("vanilla_attn", "pure_relay", "hybrid"):
        cos = [r["cos_to_input"] for r in sorted((r for r in d["rows"] if r["arch"] == arch), key=lambda r: r["depth"])]
        assert cos[0] > 0.5 and cos[-1] <= cos[0] + 1e-6
    steps = [r["step"] for r in m12["metrics"]["interleaved"]["rows"]]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) == 4
    assert [r["type"] for r in m12["metrics"]["interleaved"]["rows"]] == ["attn", "hybrid"] * 2


def test_artifacts_and_timing(m12):
    job = Path(m12["_job_dir"])
    for name in ("depth_sweep", "interleaved", "causal_intervention", "throughput", "seq_scaling"):
        assert (job / f"{name}.png").stat().st_size > 1000
    timing = json.loads((job / "timing.json").read_text())
    assert set(timing["throughput_ms"]) == {"vanilla_attn", "pure_relay", "hybrid"}
    assert [r["S"] for r in timing["seq_scaling"]] == [16, 32]
    assert all(r["hybrid_ms"] > 0 and r["attn_ms"] > 0 for r in timing["seq_scaling"])
    assert m12["metrics"]["params"]["hybrid"] > m12["metrics"]["params"]["pure_relay"] > 0


def test_headline_intervals_and_executed_outputs(m12):
    for key, h in m12["headline"].items():
        if h["value"] is not None:
            iv = h["interval"]
            assert iv is not None and iv["lo"] <= h["value"] <= iv["hi"], key
    cos = m12["headline"]["cos_hybrid_deep"]
    assert "tokens" in cos["interval"]["method"] and set(cos["nulls"]) == {"vanilla_attn", "pure_relay"}
    job = Path(m12["_job_dir"])
    figs = m12["figures"]
    assert {f["file"] for f in figs if f["key"]} == {"depth_sweep.png", "causal_intervention.png"}
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outs) >= len(figs) == 5
    assert ".partial" not in json.dumps(outs)
    assert "timing" not in json.dumps(m12["metrics"]) and "ms" not in m12["metrics"].get("params", {})


def test_deterministic(m12, run_notebook):
    again = run_notebook(NB, N_TIMING=1)  # timing only: metrics.json must be identical
    assert again["metrics"] == m12["metrics"] and again["headline"] == m12["headline"]
