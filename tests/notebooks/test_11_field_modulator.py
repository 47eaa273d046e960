"""Notebook 11 on the tiny profile: self-test, CV-band monitoring, early stop, health report,
CV intervals over simplices with the unmodulated and Gaussian nulls."""
import pytest

from tests.notebooks.test_08_modulator_pipeline import check_executed

pytestmark = pytest.mark.notebooks


def test_11_field_modulator_metrics(run_notebook):
    m = run_notebook("11_field_modulator", "tiny-t5")
    mt = m["metrics"]
    st = mt["self_test"]
    assert st["seed_config_params"] == 38552
    assert st["null_space_untouched"] and st["alphas_within_clamp"]
    for k in (1, 2, 4):
        assert st[f"template_k{k}_edge_spread"] < 1e-12 and st[f"template_k{k}_centroid_norm"] < 1e-12
        assert st[f"template_k{k}_volume_rel_error"] < 1e-10
    assert st["n_null"] == 8 and st["n_active"] == 24  # tiny-t5: d_model 32, 25 % null
    lrs = mt["lr_groups"]
    assert lrs["geometric"] == pytest.approx(0.1 * lrs["gates"]) and lrs["alpha"] == pytest.approx(0.5 * lrs["gates"])
    tr = mt["training"]
    assert tr["base_unchanged"] and tr["steps"] > 0
    cvh = tr["cv_history"]
    assert len(cvh) >= 2 and all(c["in_band"] == (abs(c["cv"] - 0.21) < 0.05) for c in cvh)
    # early stop fires exactly when the last PATIENCE (2) checks are out of band
    if tr["stopped_early"]:
        assert not any(c["in_band"] for c in cvh[-2:])
    h = mt["health"]
    assert 0.001 - 1e-9 <= h["alpha_min"] <= h["alpha_max"] <= 0.35 + 1e-9
    assert 0 <= h["validity_mean"] <= 1
    assert h["template_vol2_k4"] == pytest.approx(h["template_vol2_k4_closed_form"], rel=1e-5)
    assert m["headline"]["final_cv"]["baseline"] == pytest.approx(mt["cv"]["original"]["cv"])


def test_11_headline_intervals_and_nulls(run_notebook):
    m = run_notebook("11_field_modulator", "tiny-t5")
    h, mt = m["headline"], m["metrics"]
    cv = h["final_cv"]
    assert "simplices" in cv["interval"]["method"] and cv["interval"]["lo"] <= cv["value"] <= cv["interval"]["hi"]
    assert cv["value"] == pytest.approx(mt["cv"]["final"]["cv"])  # the interval's draw is cv_check's draw
    assert cv["nulls"]["gaussian"]["value"] == pytest.approx(mt["cv"]["gaussian_of_original"])
    for null in cv["nulls"].values():
        assert null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"]
    band = h["cv_in_band"]
    assert band["value"] == float(mt["cv"]["final"]["in_band"])
    assert {band["interval"]["lo"], band["interval"]["hi"]} <= {0.0, 1.0}
    assert band["nulls"]["unmodulated"]["value"] == float(mt["cv"]["original"]["in_band"])
    assert h["validity_mean"]["interval"]["method"].startswith("exact")
    assert "entries" in h["per_token_preservation"]["interval"]["method"]
    check_executed(m, 1)
