"""Notebook 04 on the tiny profile: metrics read back from metrics.json."""
from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebooks


@pytest.fixture(scope="module")
def m04(run_notebook):
    return run_notebook("04_wordnet_alignment", "tiny-bert")


def test_matching_and_representations(m04):
    met = m04["metrics"]
    assert met["matched"]["n_used"] == m04["parameters"]["MAX_ENTRIES"] == 600
    assert met["matched"]["n_matched"] > 1000 and sum(met["matched"]["pos_counts"].values()) == 600
    rep = met["representations"]
    assert rep["dim_static"] == rep["dim_encoder"] == 32
    assert -1 <= rep["cos_static_encoder_mean"] <= 1 and rep["encoder_norm_mean"] > 0


def test_relational_bands_pentachoron(m04):
    met = m04["metrics"]
    rel = met["relational"]
    assert 0 < rel["n_pairs_valid"] <= rel["n_pairs_drawn"] <= 20000
    for k in ("static_pearson", "static_spearman", "encoder_pearson", "encoder_spearman"):
        assert -1 <= rel[k] <= 1
    assert rel["lift_pearson"] == pytest.approx(rel["encoder_pearson"] - rel["static_pearson"])
    assert sum(b["n"] for b in met["bands"]) <= rel["n_pairs_valid"]
    pen = met["pentachoron"]
    assert pen["static_cv"] > 0 and pen["encoder_cv"] > 0 and pen["n_valid_both"] > 100
    assert -1 <= pen["volume_corr"] <= 1


def test_chains_lexnames_baselines_headline_figure(m04):
    met = m04["metrics"]
    assert all(r["n"] >= 1 for r in met["hypernym_chains"]["by_depth"])
    cats = met["lexname"]["categories"]
    assert cats and all(r["n"] >= 10 for r in cats)
    assert all(r["lift"] == pytest.approx(r["encoder_intra"] - r["static_intra"]) for r in cats)
    shuf = met["baselines"]["shuffled"]
    assert abs(shuf["encoder_pearson"]) < 0.25 and abs(shuf["static_pearson"]) < 0.25
    ri = met["baselines"]["random_init"]
    assert ri["model"].startswith("tiny-bert@random") and ri["encoder_cv"] > 0
    h = m04["headline"]
    assert h["wn_encoder_pearson"]["value"] == met["relational"]["encoder_pearson"]
    assert h["wn_encoder_pearson"]["baseline_kind"] == "shuffled" and not math.isnan(h["wn_encoder_cv"]["baseline"])
    assert (Path(m04["_job_dir"]) / "wordnet_geometry.png").stat().st_size > 10_000


def test_headline_intervals_and_nulls(m04):
    h, met = m04["headline"], m04["metrics"]
    for key in ("wn_encoder_pearson", "wn_encoder_spearman", "wn_static_pearson", "wn_encoder_cv"):
        iv = h[key]["interval"]
        assert iv["lo"] <= h[key]["value"] <= iv["hi"] and iv["hi"] - iv["lo"] > 0, key
    assert "entries with their pairs" in h["wn_encoder_pearson"]["interval"]["method"]
    assert "simplices" in h["wn_encoder_cv"]["interval"]["method"]
    for key in ("wn_encoder_pearson", "wn_encoder_spearman", "wn_static_pearson"):
        assert set(h[key]["nulls"]) == {"shuffled", "random_init"}
        for null in h[key]["nulls"].values():
            assert null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"]
    assert h["wn_encoder_pearson"]["nulls"]["shuffled"]["value"] == met["baselines"]["shuffled"]["encoder_pearson"]
    assert h["wn_encoder_cv"]["nulls"]["random_init"]["value"] == met["baselines"]["random_init"]["encoder_cv"]
    assert met["intervals"]["model"]["volume_corr"]["lo"] <= met["pentachoron"]["volume_corr"]


def test_executed_notebook_shows_figures_and_no_partial_paths(m04):
    job_dir = Path(m04["_job_dir"])
    nb = nbformat.read(str(job_dir / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    n_png = sum("image/png" in o.get("data", {}) for o in outputs)
    assert len(m04["figures"]) == 3 and n_png >= len(m04["figures"])
    assert sum(f["key"] for f in m04["figures"]) == 2
    assert all((job_dir / f["file"]).exists() for f in m04["figures"])
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert ".partial" not in text
    assert all(h["interval"] is not None for h in m04["headline"].values() if h["value"] is not None)
