"""Notebook 05 on the tiny profile: per-seed battery, summary statistics and invariants."""
from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest
from scipy import stats

pytestmark = pytest.mark.notebooks


@pytest.fixture(scope="module")
def m05(run_notebook):
    return run_notebook("05_seed_stability", "tiny-t5")


def test_summary_is_mean_std_min_max_of_per_seed(m05):
    met = m05["metrics"]
    n = m05["parameters"]["N_SEEDS"]
    assert len(met["per_seed"]) == n == 4
    for key in ("enc_pearson", "static_spearman", "enc_cv", "static_cv", "gradient_enc"):
        v = np.array([r[key] for r in met["per_seed"]], dtype=float)
        s = met["summary"][key]
        assert s["n"] == n
        assert s["mean"] == pytest.approx(v.mean()) and s["std"] == pytest.approx(v.std())
        assert s["min"] == pytest.approx(v.min()) and s["max"] == pytest.approx(v.max())
    # seeds differ (the draws are reseeded), spaces stay the same
    assert len({r["enc_pearson"] for r in met["per_seed"]}) == n


def test_invariants_and_null(m05):
    met = m05["metrics"]
    inv = met["invariants"]
    for k in ("frac_seeds_enc_pearson_gt_static", "frac_seeds_enc_gradient_positive", "frac_seeds_enc_pearson_gt_null"):
        assert 0 <= inv[k] <= 1
    cvs = np.array([r["enc_cv"] for r in met["per_seed"]])
    assert inv["enc_cv_cv_percent"] == pytest.approx(100 * cvs.std() / cvs.mean())
    assert met["summary_null"]["enc_pearson"]["n"] == 4
    assert m05["headline"]["seeds_enc_pearson"]["baseline_kind"] == "shuffled"
    assert (Path(m05["_job_dir"]) / "seed_stability.png").exists()


def test_headline_intervals_over_seeds(m05):
    h, met = m05["headline"], m05["metrics"]
    v = np.array([r["enc_pearson"] for r in met["per_seed"]])
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    iv = h["seeds_enc_pearson"]["interval"]
    assert iv["lo"] == pytest.approx(v.mean() - half) and iv["hi"] == pytest.approx(v.mean() + half)
    assert "over 4 seeds" in iv["method"] and "stability spread, not the value's uncertainty" in iv["method"]
    assert "stability spread" in h["seeds_enc_pearson"]["label"]  # overlapping draws of one entry set
    null = h["seeds_enc_pearson"]["nulls"]["shuffled"]
    assert null["value"] == pytest.approx(met["summary_null"]["enc_pearson"]["mean"])
    assert null["interval"]["lo"] < null["value"] < null["interval"]["hi"]
    s = v.std(ddof=1)
    sd = h["seeds_enc_pearson_std"]["interval"]
    assert sd["lo"] == pytest.approx(s * np.sqrt(3 / stats.chi2.ppf(0.975, 3)))
    assert sd["hi"] == pytest.approx(s * np.sqrt(3 / stats.chi2.ppf(0.025, 3)))
    for key in ("seeds_enc_cv", "seeds_enc_cv_cv_percent"):
        assert h[key]["interval"]["lo"] <= h[key]["value"] <= h[key]["interval"]["hi"]


def test_executed_notebook_shows_figures_and_no_partial_paths(m05):
    job_dir = Path(m05["_job_dir"])
    nb = nbformat.read(str(job_dir / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    n_png = sum("image/png" in o.get("data", {}) for o in outputs)
    assert len(m05["figures"]) == 2 and n_png >= len(m05["figures"])
    assert all(f["key"] for f in m05["figures"])
    text = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert ".partial" not in text
    assert all(h["interval"] is not None for h in m05["headline"].values() if h["value"] is not None)
