"""Notebook 08 on the tiny profile: the Procrustes pipeline's numbers read back from metrics.json."""
import math

import pytest

pytestmark = pytest.mark.notebooks


def test_08_pipeline_metrics(run_notebook):
    m = run_notebook("08_modulator_pipeline", "tiny-t5")
    mt = m["metrics"]
    p = mt["pipeline"]
    assert p["n_geo"] == 8 and p["n_anchor"] == 60
    assert 0.3 < p["recon_corr"] <= 1.0  # eigen-embedding reproduces the Wu-Palmer matrix
    assert -1 <= p["alignment_cos_mean"] <= 1
    assert p["health"]["alpha"] == pytest.approx([0.01, 0.01], abs=1e-6)
    pres = mt["preservation"]["procrustes"]
    assert 0.99 < pres["mean"] <= 1.0 + 1e-9  # alpha = 0.01 barely perturbs
    rel = mt["relational"]
    assert rel["n_pairs"] > 100
    for name in ("Static", "Original", "Procrustes", "Shuffled"):
        assert -1 <= rel[name]["pearson"] <= 1 and -1 <= rel[name]["spearman"] <= 1
    assert rel["Original"]["delta_pearson"] == 0.0
    assert rel["Procrustes"]["delta_pearson"] == pytest.approx(
        rel["Procrustes"]["pearson"] - rel["Original"]["pearson"], abs=1e-12)
    assert mt["pentachoron"]["Original"]["cv"] > 0
    h = m["headline"]
    assert h["procrustes_pearson"]["baseline"] == pytest.approx(rel["Original"]["pearson"])
    assert not math.isnan(h["recon_corr"]["value"])
