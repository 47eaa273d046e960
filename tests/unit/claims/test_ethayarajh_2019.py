"""Ethayarajh (2019)'s claims as the paper means them (params/claims/ethayarajh-2019.yaml, read from notebook 16's
``metrics.claims``): the paper's "< 5 %" is the anisotropy-adjusted MEV, the unadjusted one a labelled project
reading whose 1/n floor, beyond the 5 % line with few contexts per word, makes it "undecided" with the floor and
the contexts that would decide it in the reason; the paper's "well above 0" is above 0 and apart from the
isotropic-Gaussian null, the 0.1 line the project's."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib import claims
from geolip_lib.probes import contextual as C
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit
NB = "16_contextual_geometry"
MODEL = "all-minilm-l6-v2"  # a trained stand-in (the paper's own models read "not tested")


def _rows(root) -> dict:
    """(claim, form index) -> row of the stand-in."""
    return {(r["claim"], r["form"]): r for r in claims.evaluate(root, "ethayarajh-2019") if r["model"] == MODEL}


def _floor(value, why="reading each word in 5–8 contexts", decide="at least 21 contexts per word"):
    return {"value": value, "why": why, "decide": decide}


def _gauss(v, half):
    return {"value": v, "interval": (v - half, v + half)}


def test_the_papers_reading_of_the_mev_is_the_adjusted_one_and_the_unadjusted_a_project_reading():
    cs = claims.load("ethayarajh-2019")
    (c,) = [c for c in cs.claims if c.id == "static_mev"]
    paper, project = c.forms
    assert (paper.reading, paper.record, paper.by) == ("both", "adjusted_mev", "seed")
    assert (project.reading, project.record, project.by) == ("project", "mev", "project")
    assert "project's reading" in project.label and "anisotropy-adjusted" in paper.label
    (a,) = [c for c in cs.claims if c.id == "anisotropy"]
    assert [(f.reading, f.rule_for(MODEL, "block outputs").lo) for f in a.forms] == [("both", 0), ("project", 0.1)]
    assert list(a.forms[0].nulls) == ["gaussian"] and "project's line" in a.forms[1].label


def test_a_floor_beyond_the_rule_is_undecided_with_the_floor_and_what_would_decide_it(tmp_path):
    recs = {"mev": {"block outputs": _h(0.93, 0.92, 0.94, nulls={"gaussian": _gauss(0.18, 0.002),
                                                                   "random_init": _gauss(0.8, 0.08)},
                                        floor=_floor(0.156))},
            "adjusted_mev": {"block outputs": _h(0.63, 0.62, 0.64, nulls={"gaussian": _gauss(0.0007, 0.002),
                                                                            "random_init": _gauss(0.3, 0.04)},
                                                 floor=_floor(-0.17, why="the anisotropy adjustment",
                                                              decide="already inside the rule"))}}
    _write_job(tmp_path, NB, MODEL, recs)
    rows = _rows(tmp_path)
    unadjusted, adjusted = rows[("static_mev", 1)], rows[("static_mev", 0)]
    assert unadjusted["verdict"] == claims.UNDECIDED
    assert ("reading each word in 5–8 contexts sets a floor of 15.6 %, beyond the rule's edge 5 %"
            in unadjusted["reason"])
    assert "what would decide it: at least 21 contexts per word" in unadjusted["reason"]
    assert "the rule alone would say 'not held'" in unadjusted["reason"]
    assert adjusted["verdict"] == claims.NOT_HELD  # its floor lies inside the rule: stated, deciding nothing
    assert "the floor its design sets: -17 % (the anisotropy adjustment)" in adjusted["reason"]


def test_a_floor_inside_the_rule_is_stated_and_the_rule_decides(tmp_path):
    recs = {"mev": {"block outputs": _h(0.92, 0.91, 0.93, floor=_floor(0.039, why="reading each word in 21–32 "
                                                                       "contexts"))}}
    _write_job(tmp_path, NB, MODEL, recs)
    row = _rows(tmp_path)[("static_mev", 1)]
    assert row["verdict"] == claims.NOT_HELD
    assert "the floor its design sets: 3.9 % (reading each word in 21–32 contexts)" in row["reason"]


def test_notebook_16s_own_records_with_few_contexts_read_undecided(tmp_path):
    """The records as notebook 16 writes them (contextual_claims, with both nulls over seeds), words read in 5–8
    contexts of width 48: the unadjusted MEV's floor (mean 1/n) lies beyond 5 %, whatever the value."""
    rng = np.random.default_rng(0)
    counts = np.array([5, 6, 7, 8] * 4)
    w = np.repeat(np.arange(len(counts)), counts)
    layers = [rng.standard_normal((len(w), 48)) + 0.4 * rng.standard_normal(48) for _ in range(4)]
    g = C.analyse(layers, w, n_pairs=500, n_boot=100)
    vals = [C.claim_values(C.analyse(C.gaussian_layers(layers, seed=s), w, n_pairs=500, n_boot=20))
            for s in range(3)]
    rec = C.contextual_claims(g, nulls={"gaussian": vals, "random_init": vals})
    floor = float(np.mean(1 / counts))
    assert rec["mev"]["block outputs"]["floor"]["value"] == pytest.approx(floor)
    _write_job(tmp_path, NB, MODEL, rec)
    row = _rows(tmp_path)[("static_mev", 1)]
    assert row["verdict"] == claims.UNDECIDED
    assert f"sets a floor of {floor * 100:.4g} %, beyond the rule's edge 5 %" in row["reason"]
    assert "what would decide it: at least 21 contexts per word (1/21 = 4.8 %, below the 5 % line)" in row["reason"]
    assert "the floor its design sets:" in _rows(tmp_path)[("static_mev", 0)]["reason"]


def test_anisotropy_far_from_the_isotropic_null_holds_for_the_paper_and_fails_the_projects_line(tmp_path):
    """MiniLM's least anisotropic block: 0.039, ~55 null standard deviations from the isotropic Gaussian; below
    the project's 0.1 line."""
    a = _h(0.039, 0.033, 0.047, nulls={"gaussian": {"value": -0.0008, "interval": (-0.0014, -0.00015)}})
    _write_job(tmp_path, NB, MODEL, {"anisotropy": {"block outputs": a}})
    rows = _rows(tmp_path)
    paper, project = rows[("anisotropy", 0)], rows[("anisotropy", 1)]
    assert paper["verdict"] == claims.HELD and "separated from gaussian" in paper["reason"]
    assert project["verdict"] == claims.NOT_HELD and "outside ≥ 0.1" in project["reason"]
    # an isotropic value, its interval straddling 0 (and within the null's spread): not the paper's anisotropy
    iso = _h(0.0003, -0.0005, 0.0011, nulls={"gaussian": {"value": 0.0001, "interval": (-0.0006, 0.0008)}})
    _write_job(tmp_path, NB, MODEL, {"anisotropy": {"block outputs": iso}})
    assert _rows(tmp_path)[("anisotropy", 0)]["verdict"] == claims.UNDECIDED
