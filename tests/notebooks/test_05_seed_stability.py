"""Notebook 05 on the tiny profile: per-seed battery, summary statistics and invariants."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

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
