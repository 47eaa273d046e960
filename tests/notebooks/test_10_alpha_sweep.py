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
    assert len(gen["side_by_side"]) == 4  # seed §10's prompts, then §11's
    assert [r["seed_section"] for r in gen["side_by_side"]] == ["§10"] * 3 + ["§11"]
    assert any(r["prompt"].startswith("translate English to German") for r in gen["side_by_side"])
    sens = {r["alpha"]: r for r in gen["sensitivity"]}
    assert sens[0.0]["identical"] and sens[0.0]["token_diffs"] == 0
    assert m["headline"]["pearson_at_0.29154"]["value"] == pytest.approx(rows[0.29154]["pearson"])


def test_10_trained_modulator_in_the_seeds_cell_order(run_notebook):
    """§10 after §9: the same sweep on a copy of the Procrustes modulator trained as §9 wrote
    it (T5: seed mode), labelled beside the Procrustes-initialised one; alpha = 0 is the
    unmodulated encoder for both."""
    m = run_notebook("10_alpha_sweep", "tiny-t5")
    mt = m["metrics"]
    tr = mt["trained"]
    assert tr["ran"] and tr["requested"] == tr["mode"] == "seed" and len(tr["epochs"]) == 2
    assert "unshifted target" in tr["objective"] and (tr["n_train"], tr["n_val"]) == (72, 8)  # int(80 * 0.9)
    rows, rows_t = ({r["alpha"]: r for r in mt[k]} for k in ("sweep", "sweep_trained"))
    assert set(rows_t) == set(rows)
    assert rows_t[0.0]["preservation"] == pytest.approx(1.0, abs=1e-6)
    assert rows_t[0.0]["pearson"] == pytest.approx(rows[0.0]["pearson"], abs=1e-9)
    assert rows_t[0.29154]["pearson"] != rows[0.29154]["pearson"]  # training changed the modulator
    st = mt["seed_table_trained"]
    assert st["modulator"].startswith("trained") and mt["seed_table"]["modulator"].startswith("Procrustes")
    assert st["project"]["0.29154"]["pearson"] == pytest.approx(rows_t[0.29154]["pearson"])
    assert mt["generation_trained"]["modulator"].startswith("trained")
    assert len(mt["generation_trained"]["side_by_side"]) == len(mt["generation"]["side_by_side"])
    assert m["headline"]["pearson_at_0.29154_trained"]["value"] == pytest.approx(rows_t[0.29154]["pearson"])



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
    check_executed(m, 3)  # alpha_sweep, alpha_sweep_trained, phase_boundary


def test_10_seed_table_seed_pairs_and_phase_boundary(run_notebook):
    """Seed §10's Static / Original / 0.29154 rows on both pair samples; the phase boundary
    recorded in the claims contract with its grid, seeds and method."""
    m = run_notebook("10_alpha_sweep", "tiny-t5")
    mt = m["metrics"]
    st = mt["seed_table"]
    for d in ("project", "seed"):
        assert set(st[d]) == {"Static", "Original", "0.29154"}
        assert -1 <= st[d]["Static"]["pearson"] <= 1
    rows = {r["alpha"]: r for r in mt["sweep"]}
    assert st["project"]["0.29154"]["pearson"] == pytest.approx(rows[0.29154]["pearson"])
    assert st["seed"]["0.29154"]["pearson"] == pytest.approx(rows[0.29154]["pearson_seed_pairs"])
    assert st["n_pairs"]["seed"] > 100  # 80 entries < 3000: the seed's subset is all of them
    ph = mt["phase"]["sweep"]
    assert ph["alphas"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5] and ph["seeds"] == [42, 1, 2]
    assert len(ph["pearson"]) == 3 and all(len(r) == 6 for r in ph["pearson"])
    assert all(p[0] == pytest.approx(1.0, abs=1e-6) for p in ph["preservation"])  # alpha = 0: unmodulated
    c = mt["claims"]["phase_boundary"]["alpha"]
    assert c["grid"] == ph["alphas"] and c["seeds"] == ph["seeds"] and c["quantity"] == "pearson"
    assert c["null"] == "quadratic" and "hinge" in c["method"]
    assert isinstance(c["found"], bool) and c["seed_value"] == 0.29154
    if c["found"]:
        assert c["interval"]["lo"] <= c["value"] <= c["interval"]["hi"]
    else:
        assert c["value"] is None and "No change point found" in c["note"]
    assert 0.0 <= c["best_breakpoint"] <= 0.5
    assert set(mt["phase"]["located"]) == {"pearson|quadratic", "pearson|line", "preservation|quadratic",
                                           "preservation|line"}
    assert m["headline"]["phase_boundary_alpha"]["found"] == c["found"]
    assert c["test"] == "project" and c["modulator"].startswith("Procrustes")  # the seed defined no test
    assert "phase_boundary.png" in {f["file"] for f in m["figures"]}
