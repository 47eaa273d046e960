"""03_cross_model on the tiny profile: measured rows and seed-reported rows stay separate."""
import pytest

pytestmark = pytest.mark.notebooks


def test_03_cross_model(run_notebook):
    m = run_notebook("03_cross_model")
    meas = m["metrics"]["measured"]
    assert {r["model"] for r in meas} == {"tiny-t5", "tiny-bert"}
    assert {r["weights"] for r in meas} == {"trained", "random init"}
    rep = m["metrics"]["reported_by_seed"]
    assert all(r["source"] == "reported by the seed" for r in rep)
    assert any(r["model"] == "t5-small" and r["Q sparsity"] == 0.937 for r in rep)
    assert m["metrics"]["n_models"] == 2
