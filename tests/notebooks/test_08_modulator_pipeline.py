"""Notebook 08 on the tiny profile: the Procrustes pipeline's numbers read back from metrics.json,
headline intervals of the right kind with their nulls, and every figure shown in the executed notebook."""
import json
import math
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebooks


@pytest.fixture(scope="module")
def run(run_notebook):
    return run_notebook("08_modulator_pipeline", "tiny-t5")


def test_08_pipeline_metrics(run):
    m = run
    mt = m["metrics"]
    p = mt["pipeline"]
    assert p["n_geo"] == 8 and p["n_anchor"] == 60
    assert 0.3 < p["recon_corr"] <= 1.0  # eigen-embedding reproduces the Wu-Palmer matrix
    assert abs(p["recon_corr_shuffled_anchors"]) < p["recon_corr"]
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


def test_08_headline_intervals_and_nulls(run):
    h, mt = run["headline"], run["metrics"]
    rel = mt["relational"]
    method = {k: e["interval"]["method"] for k, e in h.items()}
    assert f"of {rel['n_pairs']} pairs" in method["procrustes_pearson"]
    assert "paired bootstrap" in method["procrustes_delta_pearson"]
    assert "entries" in method["per_token_preservation"]
    assert "60 anchors" in method["recon_corr"]
    for key, e in h.items():
        assert e["interval"]["lo"] <= e["value"] <= e["interval"]["hi"], key
    nulls = h["procrustes_pearson"]["nulls"]
    assert set(nulls) == {"original", "shuffled", "static"}
    for name in ("original", "shuffled", "static"):
        n = nulls[name]
        assert n["value"] == pytest.approx(rel[name.capitalize()]["pearson"])
        assert n["interval"]["lo"] <= n["value"] <= n["interval"]["hi"]
    assert h["procrustes_delta_pearson"]["nulls"]["shuffled"]["value"] == pytest.approx(rel["Shuffled"]["delta_pearson"])
    assert h["per_token_preservation"]["nulls"]["original (identity)"]["value"] == 1.0
    assert h["per_token_preservation"]["value"] == pytest.approx(mt["preservation"]["procrustes"]["mean"], abs=1e-12)
    assert h["recon_corr"]["nulls"]["shuffled anchors"]["separated"] is True


def check_executed(run, n_figures):
    """>= 1 image/png output per saved figure, no '.partial' path printed, every headline has an interval."""
    nb = nbformat.read(str(Path(run["_job_dir"]) / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert len(run["figures"]) == n_figures and 1 <= sum(f["key"] for f in run["figures"]) <= 3
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= len(run["figures"])
    text = json.dumps([{k: v for k, v in o.get("data", {}).items() if not k.startswith("image/")} for o in outputs]
                      + [o.get("text", "") for o in outputs])
    assert ".partial" not in text
    assert all(e["interval"] is not None for e in run["headline"].values() if e["value"] is not None)
    assert "provenance" in run and all(not k.startswith("_") for k in run["metrics"])


def test_08_executed_notebook_shows_every_figure(run):
    check_executed(run, 3)
    assert {f["file"] for f in run["figures"]} == {"pipeline.png", "relational_correlations.png", "distance_bands.png"}


def test_08_seed_quick_test_of_a_random_init_modulator(run):
    """Seed §7's quick test restored: five sentences, token-level cosine / norm ratio / pairwise
    shift of a random-init modulator at alpha = 0.01 (barely perturbs)."""
    q = run["metrics"]["quick_test"]
    assert len(q["per_sentence"]) == 5 and q["alpha"] == 0.01
    assert q["n_tokens"] == sum(p["n_tokens"] for p in q["per_sentence"])
    assert q["n_pairs"] == sum(p["n_tokens"] * (p["n_tokens"] - 1) // 2 for p in q["per_sentence"])
    assert 0.99 < q["cos_mean"] <= 1.0 + 1e-9 and q["cos_std"] >= 0
    assert q["cos_mean_interval"]["lo"] <= q["cos_mean"] <= q["cos_mean_interval"]["hi"]
    assert "tokens" in q["cos_mean_interval"]["method"]
    assert 0.9 < q["norm_ratio_mean"] < 1.1 and abs(q["pairwise_shift_mean"]) < 0.1
    assert q["health"]["alpha"] == pytest.approx([0.01, 0.01], abs=1e-6)
