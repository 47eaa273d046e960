"""Known-answer tests of the seed-claims verdicts (geolip_lib.claims): synthetic metrics.json
sets that must give held, not held and not testable, for every rule."""
from __future__ import annotations

import json

import pytest

from geolip_lib import claims, results
from geolip_lib.claims import HELD, NOT_HELD, NOT_TESTABLE
from geolip_lib.claims.plots import claims_forest
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit


def write_job(root, notebook, model, recorded: dict) -> None:
    d = root / notebook / model
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({"notebook": notebook, "model": model,
                                                "metrics": {"claims": recorded}, "headline": {}}))


def h(value, lo=None, hi=None, nulls=None, **extra):
    out = results.headline(value, interval="exact" if lo is None else (lo, hi), nulls=nulls or {})
    out.update(extra)
    return out


def verdicts(root, claim_id):
    return {(r["model"], r["scope"]): r for r in claims.evaluate(root) if r["claim"] == claim_id}


# ------------------------------------------------------------------------------ rules
@pytest.mark.parametrize("lo,hi,expected", [(0.205, 0.22, HELD), (0.30, 0.34, NOT_HELD), (0.10, 0.15, NOT_HELD),
                                            (0.19, 0.21, NOT_TESTABLE), (0.225, 0.24, NOT_TESTABLE)])
def test_band_rule(lo, hi, expected):
    verdict, reason = claims.Rule("band", 0.20, 0.23).judge((lo + hi) / 2, lo, hi)
    assert verdict == expected and reason


def test_rules_known_answers():
    at_least = claims.Rule("at_least", 0.937)
    assert at_least.judge(0.99, 0.98, 0.995)[0] == HELD
    assert at_least.judge(0.5, 0.4, 0.6)[0] == NOT_HELD
    assert at_least.judge(0.94, 0.93, 0.95)[0] == NOT_TESTABLE
    contains = claims.Rule("contains", target=0.29154)
    assert contains.judge(0.3, 0.25, 0.35)[0] == HELD
    assert contains.judge(0.1, 0.05, 0.15)[0] == NOT_HELD
    within = claims.Rule("all_within", 0.4995, 0.5005)
    assert within.judge(0.5, None, None, per_layer=[0.5, 0.50024, 0.4998])[0] == HELD
    verdict, reason = within.judge(0.49, None, None, per_layer=[0.5, 0.47, 0.5])
    assert verdict == NOT_HELD and "1 of 3 layers" in reason
    assert within.judge(0.5, None, None, per_layer=[])[0] == NOT_TESTABLE
    equals = claims.Rule("equals", target=0)
    assert equals.judge(0, 0, 0)[0] == HELD and equals.judge(3, 3, 3)[0] == NOT_HELD
    assert claims.Rule("band", 0, 1).judge(0.5, None, None)[0] == NOT_TESTABLE  # no interval, no verdict
    with pytest.raises(ValueError, match="kind"):
        claims.Rule("between")


# ------------------------------------------------------------------------------ evaluate
def test_held_set(tmp_path):
    write_job(tmp_path, "01_embedding_terrain", "t5-small",
              {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls={"gaussian": {"value": 0.40}})}})
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {
        "q_sparsity": {s: h(1.0, 1.0, 1.0, nulls={"random_init": {"value": 1.0}})
                       for s in ("encoder/self", "decoder/self", "decoder/cross")},
        "qk_cross_balance": {"decoder/cross": h(0.5001, 0.50005, 0.50015, per_layer=[0.5, 0.50024, 0.49976],
                                                nulls={"random init": {"value": 0.5}})},
        "cross_layer_corr": {"attention": h(0.0004, -0.001, 0.002)},
        "position_crystallization": {"decoder": h(0, n_heads=64), "encoder": h(3, n_heads=64)}})
    rows = verdicts(tmp_path, "pentachoron_cv")
    assert rows[("t5-small", "embedding")]["verdict"] == HELD
    assert rows[("t5-small", "embedding")]["null explains"] == ""  # the Gaussian (0.40) is outside the band
    assert rows[("t5-base", "")]["verdict"] == NOT_TESTABLE  # no job
    assert "no finished 01_embedding_terrain job for t5-base" in rows[("t5-base", "")]["reason"]
    q = verdicts(tmp_path, "q_sparsity")
    assert {q[("t5-v1_1-xxl", s)]["verdict"] for s in ("encoder/self", "decoder/self", "decoder/cross")} == {HELD}
    assert "initialiser" in q[("t5-v1_1-xxl", "decoder/cross")]["null explains"]  # random init is as sparse
    qk = verdicts(tmp_path, "qk_cross_balance")[("t5-v1_1-xxl", "decoder/cross")]
    assert qk["verdict"] == HELD and "shapes" in qk["null explains"]
    pc = verdicts(tmp_path, "position_crystallization")
    assert pc[("t5-v1_1-xxl", "decoder")]["verdict"] == HELD and ("t5-v1_1-xxl", "encoder") not in pc
    summary = {s["claim"]: s for s in claims.summarize(claims.evaluate(tmp_path))}
    assert summary["qk_cross_balance"]["verdict"] == HELD  # its only seed model was tested
    assert summary["pentachoron_cv"]["verdict"] == NOT_TESTABLE  # t5-base, ... missing
    assert "t5-base" in summary["pentachoron_cv"]["reason"]


def test_not_held_set(tmp_path):
    write_job(tmp_path, "02_weight_topology", "t5-small", {
        "q_sparsity": {"encoder+decoder/self": h(0.80, 0.78, 0.82, nulls={"random_init": {"value": 0.99}}),
                       "encoder/self": h(0.99, 0.98, 1.0)},  # the seed's 93.7 % pooled both stacks: not compared
        "cross_layer_corr": {"attention": h(0.12, 0.08, 0.15, nulls={"random_init": {"value": 0.0}})},
        "position_crystallization": {"decoder": h(4, nulls={"random_init": {"value": 5}})}})
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {
        "qk_cross_balance": {"decoder/cross": h(0.46, 0.45, 0.47, per_layer=[0.45, 0.47])}})
    write_job(tmp_path, "10_alpha_sweep", "t5-small", {
        "phase_boundary": {"alpha": h(None, found=False, note="p = 0.6")}})
    write_job(tmp_path, "09_modulator_training", "t5-small", {
        "modulator_lift": {"pearson": h(0.10, 0.02, 0.2), "spearman": h(1.9, 1.5, 2.3)}})
    qs = verdicts(tmp_path, "q_sparsity")
    q = qs[("t5-small", "encoder+decoder/self")]
    assert q["verdict"] == NOT_HELD and "0.937" in q["rule"]  # the seed's own t5-small value ± 0.005
    assert ("t5-small", "encoder/self") not in qs  # like with like: only the seed's pooling is compared
    assert q["null explains"] == ""  # only said when the claim held and a null gives it too
    assert verdicts(tmp_path, "cross_layer_corr")[("t5-small", "attention")]["verdict"] == NOT_HELD
    assert verdicts(tmp_path, "position_crystallization")[("t5-small", "decoder")]["verdict"] == NOT_HELD
    assert verdicts(tmp_path, "qk_cross_balance")[("t5-v1_1-xxl", "decoder/cross")]["verdict"] == NOT_HELD
    pb = verdicts(tmp_path, "phase_boundary")[("t5-small", "alpha")]
    assert pb["verdict"] == NOT_HELD and "no transition" in pb["reason"]
    lift = verdicts(tmp_path, "modulator_lift")
    assert lift[("t5-small", "pearson")]["verdict"] == NOT_HELD  # [2 %, 20 %] excludes +152 %
    assert lift[("t5-small", "spearman")]["verdict"] == HELD  # [150 %, 230 %] contains +189 %
    summary = {s["claim"]: s for s in claims.summarize(claims.evaluate(tmp_path))}
    for c in ("cross_layer_corr", "qk_cross_balance", "phase_boundary", "modulator_lift"):
        assert summary[c]["verdict"] == NOT_HELD, c


def test_stand_ins_do_not_decide_the_claim(tmp_path):
    write_job(tmp_path, "01_embedding_terrain", "all-minilm-l6-v2",
              {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls={"sphere": {"value": 0.214}})}})
    write_job(tmp_path, "02_weight_topology", "all-minilm-l6-v2",
              {"q_sparsity": {"encoder/self": h(0.5, 0.45, 0.55)}})  # no cross attention: no qk_cross_balance
    write_job(tmp_path, "02_weight_topology", "tiny-bert", {"qk_self_balance": {"encoder/self": h(
        0.468, 0.449, 0.485, per_layer=[0.4245, 0.4531, 0.4818, 0.4688, 0.4870, 0.4922])}})
    rows = verdicts(tmp_path, "pentachoron_cv")
    mini = rows[("all-minilm-l6-v2", "embedding")]
    assert mini["verdict"] == HELD and not mini["seed model"]
    assert mini["null explains"].startswith("The unit sphere at the same dimension gives 0.214")
    qk = verdicts(tmp_path, "qk_cross_balance")[("all-minilm-l6-v2", "")]
    assert qk["verdict"] == NOT_TESTABLE and "recorded no 'qk_cross_balance'" in qk["reason"]
    selfqk = verdicts(tmp_path, "qk_cross_balance")[("tiny-bert", "encoder/self (self-attention)")]
    assert selfqk["verdict"] == NOT_HELD and "6 of 6 layers outside" in selfqk["reason"]  # MiniLM-like: not 0.5
    summary = {s["claim"]: s for s in claims.summarize(claims.evaluate(tmp_path))}
    assert summary["pentachoron_cv"]["verdict"] == NOT_TESTABLE
    assert "all-minilm-l6-v2: held" in summary["pentachoron_cv"]["stand-ins"]


def test_unreadable_and_unfinished_jobs_are_skipped(tmp_path):
    write_job(tmp_path, "01_embedding_terrain", "t5-small", {"pentachoron_cv": {"embedding": h(0.3, 0.29, 0.31)}})
    (tmp_path / "01_embedding_terrain" / ".partial-t5-base").mkdir()
    bad = tmp_path / "01_embedding_terrain" / "t5-base"
    bad.mkdir()
    (bad / "metrics.json").write_text("{not json")
    rows = verdicts(tmp_path, "pentachoron_cv")
    assert rows[("t5-small", "embedding")]["verdict"] == NOT_HELD
    assert rows[("t5-base", "")]["verdict"] == NOT_TESTABLE


def test_paper_profile_has_every_job_the_claims_need():
    from run_all import jobs_for_profile

    paper = [(j.notebook, j.model) for j in jobs_for_profile("paper")]
    assert claims.missing_jobs(paper) == []
    demo = [(j.notebook, j.model) for j in jobs_for_profile("demo")]
    assert "02_weight_topology/t5-v1_1-xxl" in claims.missing_jobs(demo)
    assert ("15_seed_claims", None) in demo and demo[-1][0] == "15_seed_claims"  # runs last


def test_forest_figure(tmp_path):
    write_job(tmp_path, "01_embedding_terrain", "t5-small",
              {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls={"gaussian": {"value": 0.40}})}})
    write_job(tmp_path, "02_weight_topology", "tiny-t5",
              {"qk_cross_balance": {"decoder/cross": h(0.5, 0.49, 0.51, per_layer=[0.5, 0.5])}})
    fig = claims_forest(claims.evaluate(tmp_path))
    assert sum(ax.get_visible() for ax in fig.axes) == len(claims.CLAIMS)
    check_figure(fig)
