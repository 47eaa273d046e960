"""Notebook 11 on the tiny profile: self-test, CV-band monitoring, early stop, health report."""
import pytest

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
