"""Notebook 10 on the tiny profile: static alphas, exact identity at 0, generation counts."""
import pytest

pytestmark = pytest.mark.notebooks


def test_10_alpha_sweep_metrics(run_notebook):
    m = run_notebook("10_alpha_sweep", "tiny-t5")
    mt = m["metrics"]
    rows = {r["alpha"]: r for r in mt["sweep"]}
    assert set(rows) == {0.0, 0.01, 0.29154, 0.5}
    assert mt["alpha_zero_is_identity"] is True
    assert rows[0.0]["preservation"] == pytest.approx(1.0, abs=1e-6)
    assert rows[0.0]["delta_pearson"] == pytest.approx(0.0, abs=1e-6)
    # preservation falls as alpha grows (LERP toward a foreign target)
    pres = [rows[a]["preservation"] for a in sorted(rows)]
    assert all(b <= a + 1e-9 for a, b in zip(pres, pres[1:]))
    gen = mt["generation"]
    assert len(gen["side_by_side"]) == 3
    sens = {r["alpha"]: r for r in gen["sensitivity"]}
    assert sens[0.0]["identical"] and sens[0.0]["token_diffs"] == 0
    assert m["headline"]["pearson_at_0.29154"]["value"] == pytest.approx(rows[0.29154]["pearson"])
