"""Notebook 14 (triple-product vs standard attention, seed 003) on the tiny profile."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebooks
NB = "14_triple_product_attention"


@pytest.fixture(scope="module")
def m14(run_notebook):
    return run_notebook(NB)


def test_both_attention_types_learn_the_copy_task(m14):
    cfg = m14["metrics"]["config"]
    chance = 1.0 / cfg["vocab"]
    for a in ("standard", "triple"):
        r = m14["metrics"][a]
        assert len(r["acc_copied_per_seed"]) == len(cfg["seeds"])
        curve = r["loss_curve_mean"]
        assert len(curve) == len(r["loss_steps"]) and r["loss_steps"][-1] == cfg["steps"]
        assert curve[-1] < curve[0] and curve[-1] > r["loss_floor"] - 0.05  # cannot beat the floor
        assert r["acc_copied_mean"] > max(chance, r["acc_copied_init_mean"])
        assert r["memory_kind"] == "autograd_saved" and r["memory_bytes_per_step"] > 0
    assert m14["metrics"]["triple"]["n_params"] > m14["metrics"]["standard"]["n_params"]  # + W_r
    hl = m14["headline"]
    assert hl["acc_copied_triple"]["baseline"] == pytest.approx(chance)
    assert hl["memory_ratio"]["value"] == pytest.approx(
        m14["metrics"]["triple"]["memory_bytes_per_step"] / m14["metrics"]["standard"]["memory_bytes_per_step"])


def test_resilience_table_closed_forms(m14):
    res = m14["metrics"]["resilience"]
    assert res["match"]["gram"] == pytest.approx(0.0, abs=1e-12)
    assert res["match"]["dot"] == pytest.approx(2 ** -0.5)
    for row in res["rows"]:
        m = row["magnitude"]
        assert row["gram_fixed"] == pytest.approx(-m * m) and row["gram_scaled"] == pytest.approx(-m * m)
        assert row["dot_fixed"] == pytest.approx(0.1) and row["dot_scaled"] == pytest.approx(0.1 * m)


def test_timing_and_figures(m14):
    job = Path(m14["_job_dir"])
    timing = json.loads((job / "timing.json").read_text())
    assert set(timing["ms_per_step"]) == {"standard", "triple"}
    assert timing["time_ratio_triple_over_standard"] > 0
    for name in ("resilience", "loss_curves", "accuracy", "cost_per_step"):
        assert (job / f"{name}.png").stat().st_size > 1000
    assert "ms_per_step" not in json.dumps(m14["metrics"])  # wall-clock stays out of metrics.json
    figs = m14["figures"]
    assert {f["file"] for f in figs if f["key"]} == {"resilience.png", "loss_curves.png", "accuracy.png"}
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outs) >= len(figs) == 4
    assert ".partial" not in json.dumps(outs)


def test_headline_intervals_over_seeds(m14):
    n_seeds = len(m14["metrics"]["config"]["seeds"])
    for a in ("standard", "triple"):
        h = m14["headline"][f"acc_copied_{a}"]
        assert h["interval"]["method"].startswith(f"t interval of the mean over {n_seeds} seeds")
        assert 0 <= h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"] <= 1
        assert list(h["nulls"]) == ["chance", "random_init"]
        assert h["nulls"]["random_init"]["value"] == pytest.approx(m14["metrics"][a]["acc_copied_init_mean"])
        assert h["nulls"]["random_init"]["interval"]["method"].startswith("t interval of the mean over")
    d = m14["headline"]["acc_copied_diff"]
    diffs = m14["metrics"]["acc_copied_diff_per_seed"]
    assert len(diffs) == n_seeds and d["value"] == pytest.approx(sum(diffs) / n_seeds)
    assert d["interval"]["lo"] <= d["value"] <= d["interval"]["hi"]
    mem = m14["headline"]["memory_ratio"]
    assert mem["interval"]["lo"] == mem["interval"]["hi"] == mem["value"]  # exact: no sampling
    for h in m14["headline"].values():
        assert h["value"] is None or h["interval"] is not None
