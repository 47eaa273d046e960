"""Notebook 10 on the tiny profile: static alphas, exact identity at 0, generation counts,
headline intervals (pairs, entries, arg-max over pair resamples) and the alpha = 0 null."""
import pytest

from tests.notebooks.test_08_modulator_pipeline import check_executed

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
    for r in rows.values():
        assert r["pearson_lo"] <= r["pearson"] <= r["pearson_hi"]
        assert r["preservation_lo"] - 1e-12 <= r["preservation"] <= r["preservation_hi"] + 1e-12
    gen = mt["generation"]
    assert len(gen["side_by_side"]) == 3
    sens = {r["alpha"]: r for r in gen["sensitivity"]}
    assert sens[0.0]["identical"] and sens[0.0]["token_diffs"] == 0
    assert m["headline"]["pearson_at_0.29154"]["value"] == pytest.approx(rows[0.29154]["pearson"])


def test_10_headline_intervals_and_nulls(run_notebook):
    m = run_notebook("10_alpha_sweep", "tiny-t5")
    h, rows = m["headline"], {r["alpha"]: r for r in m["metrics"]["sweep"]}
    p = h["pearson_at_0.29154"]
    assert p["interval"]["lo"] == pytest.approx(rows[0.29154]["pearson_lo"]) and "pairs" in p["interval"]["method"]
    null = p["nulls"]["original (alpha=0)"]
    assert null["value"] == pytest.approx(rows[0.0]["pearson"], abs=1e-6)  # alpha = 0 is the unmodulated encoder
    assert null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"]
    assert "entries" in h["preservation_at_0.29154"]["interval"]["method"]
    b = h["best_alpha_pearson"]
    assert b["value"] == max(rows, key=lambda a: rows[a]["pearson"])
    assert {b["interval"]["lo"], b["interval"]["hi"]} <= set(rows)  # the bounds are grid alphas
    assert b["interval"]["lo"] <= b["value"] <= b["interval"]["hi"]
    check_executed(m, 1)
