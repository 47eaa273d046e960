"""claims.evaluate on synthetic report roots: readings of each claim, stand-ins, scopes, unreadable
jobs, the profile's coverage of the claims, and the figure."""
from __future__ import annotations

import json

import numpy as np

import pytest

from geolip_lib import claims
from geolip_lib.claims import HELD, HELD_NULL, NOT_HELD, NOT_TESTED, UNDECIDED
from geolip_lib.claims.plots import claims_forest
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit


def verdicts(root, claim_id, form=0):
    return {(r["model"], r["scope"]): r for r in claims.evaluate(root) if r["claim"] == claim_id and r["form"] == form}


def test_like_with_like_scopes_and_per_model_rules(tmp_path, write_job, h):
    write_job(tmp_path, "02_weight_topology", "t5-small", {
        "q_sparsity": {"encoder+decoder/self": h(0.80, 0.78, 0.82, nulls={"random_init": {"value": 0.99}}),
                       "encoder/self": h(0.99, 0.98, 1.0)},  # the seed's 93.7 % pooled both stacks: not compared
        "cross_layer_corr": {"attention|abs": h(0.12, 0.08, 0.15, nulls={"random_init": {"value": 0.0}})},
        "position_crystallization": {"decoder": h(4, nulls={"random_init": {"value": 5}})}})
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {
        "qk_cross_balance": {"decoder/cross": h(0.46, 0.45, 0.47, per_layer=[0.45, 0.47])},
        "q_sparsity": {s: h(1.0, exact=True, nulls={"random init": {"value": 1.0}})
                       for s in ("encoder/self", "decoder/self", "decoder/cross")}})
    qs = verdicts(tmp_path, "q_sparsity")
    q = qs[("t5-small", "encoder+decoder/self")]
    assert q["verdict"] == NOT_HELD and "93.7 %" in q["rule"]  # the seed's own t5-small value at its precision
    assert ("t5-small", "encoder/self") not in qs
    assert q["null explains"] == ""  # only said when the claim held and a null gives it too
    xxl = {qs[("t5-v1_1-xxl", s)]["verdict"] for s in ("encoder/self", "decoder/self", "decoder/cross")}
    assert xxl == {HELD_NULL}  # 100.0 % exactly, but the random-init copy is as sparse
    assert "initialiser" in qs[("t5-v1_1-xxl", "decoder/cross")]["null explains"]
    assert verdicts(tmp_path, "cross_layer_corr")[("t5-small", "attention|abs")]["verdict"] == NOT_HELD
    assert verdicts(tmp_path, "position_crystallization")[("t5-small", "decoder")]["verdict"] == NOT_HELD
    assert verdicts(tmp_path, "qk_cross_balance")[("t5-v1_1-xxl", "decoder/cross")]["verdict"] == NOT_HELD
    summary = {(s["claim"], s["form"]): s for s in claims.summarize(claims.evaluate(tmp_path))}
    for c in ("q_sparsity", "cross_layer_corr", "qk_cross_balance", "position_crystallization"):
        assert summary[(c, 0)]["verdict"] == NOT_HELD, c


def test_both_readings_are_tested_and_labelled(tmp_path, write_job, h):
    """The cross-layer correlation in the project's pooling and in the seed's; the lift as the
    seed measured it and the project's; the modulator's CV band and coherence from 09's records."""
    rinit = {"random init": {"value": 0.01, "interval": (0.008, 0.012)}}
    write_job(tmp_path, "02_weight_topology", "bert-large-uncased", {"cross_layer_corr": {
        "attention|abs": h(0.0001, exact=True, nulls=rinit), "seed:q,k,qkv,mlp_up": h(0.02, exact=True, nulls=rinit)}})
    lift = {**h(1.2, 1.0, 1.4, nulls={"no lift": 0.0}), "as_seed_measured": True,  # excludes the seed's +152 %
            "project": h(0.1, 0.02, 0.2, nulls={"no lift": 0.0})}
    write_job(tmp_path, "09_modulator_training", "t5-small", {
        "modulator_lift": {"pearson": lift, "spearman": {**lift, "as_seed_measured": False, "note": "seed mode off"}},
        "modulator_lift_cv": {"seed": h(0.215, 0.21, 0.22, nulls={"unmodulated": {"value": 0.214,
                                                                                  "interval": (0.21, 0.22)}}),
                              "project": h(0.30, 0.28, 0.32, nulls={"unmodulated": {"value": 0.214}})},
        "modulator_lift_coherence": {"seed_preservation": h(0.97, 0.96, 0.98)}})
    table, seed = verdicts(tmp_path, "cross_layer_corr", 0), verdicts(tmp_path, "cross_layer_corr", 1)
    assert table[("bert-large-uncased", "attention|abs")]["verdict"] == HELD
    assert seed[("bert-large-uncased", "seed:q,k,qkv,mlp_up")]["verdict"] == NOT_HELD
    assert table[("bert-large-uncased", "attention|abs")]["reading"].startswith("the project's own reading (the "
                                                                               "project's pooling")
    assert table[("bert-large-uncased", "attention|abs")]["by"] == "project"
    assert seed[("bert-large-uncased", "seed:q,k,qkv,mlp_up")]["reading"].startswith("as the seed measured")
    assert len(claims.claim("cross_layer_corr").forms[1].models) == 7  # the seed's cells: 7 weight batteries
    lifts = verdicts(tmp_path, "modulator_lift", 0)
    p = lifts[("t5-small", "pearson")]
    assert p["verdict"] == NOT_HELD and "excludes 152 %" in p["reason"]  # the seed's number as printed
    s = lifts[("t5-small", "spearman")]
    assert s["verdict"] == NOT_TESTED and "as_seed_measured" in s["reason"] and "seed mode off" in s["reason"]
    assert verdicts(tmp_path, "modulator_lift", 1)[("t5-small", "pearson")]["verdict"] == NOT_HELD  # the project's
    cv = verdicts(tmp_path, "modulator_cv_band", 0)[("t5-small", "seed")]
    assert cv["verdict"] == HELD_NULL and "unmodulated" in cv["null explains"]  # it was in the band before
    assert verdicts(tmp_path, "modulator_cv_band", 1)[("t5-small", "project")]["verdict"] == NOT_HELD
    coh = verdicts(tmp_path, "modulator_coherence", 0)[("t5-small", "seed_preservation")]
    assert coh["verdict"] == UNDECIDED and "unmodulated (identity) null" in coh["reason"]  # the null not recorded
    side = {r["title"]: r for r in claims.readings(claims.summarize(claims.evaluate(tmp_path)))}
    row = side["attention cross-layer correlation"]
    assert row["the project's own reading"].startswith(UNDECIDED) and row["as the seed measured"].startswith(NOT_HELD)
    # the two poolings disagree on BERT-large (held vs not held): a reading of the seed's words decides it
    write_job(tmp_path, "02_weight_topology", "all-minilm-l6-v2", {"cross_layer_corr": {
        "attention|abs": h(0.0002, exact=True, nulls=rinit), "seed:q,k,qkv,mlp_up": h(0.007, exact=True, nulls=rinit)}})
    both = {r["title"]: r for r in claims.readings(claims.summarize(claims.evaluate(tmp_path)))}
    over = both["attention cross-layer correlation"]["over the readings"]
    assert over.startswith(claims.READING_DISAGREES)
    assert f"stand-ins: all-minilm-l6-v2: {claims.READING_DISAGREES}" in over  # MiniLM flips with the pooling
    assert "[project's]" not in row["the project's own reading"] and "extrapolation" not in row["as the seed measured"]


def _cancelling_battery(signs=(1, -1, 1, -1), m=0.0006):
    """A battery summary whose four attention roles each lie beyond |x| = 0.0005 with alternating
    signs, so that their signed mean is 0 (MiniLM's case: four roles pooled to 0.00018)."""
    cl = {f"encoder/self/{r}": {"adj_mean": s * m, "layers": list(range(6))} for r, s in zip("qkvo", signs)}
    cl["encoder/-/mlp_in"] = {"adj_mean": -m, "layers": list(range(6))}
    return {"cross_layer": cl, "cross_layer_attn_adj_mean": sum(d["adj_mean"] for k, d in cl.items() if "mlp" not in k) / 4}


def test_cancelling_roles_are_not_held_under_the_magnitude_pooling(tmp_path, write_job):
    """Roles of ±0.0006 that cancel in a signed mean are 'not held' in the project's pooling
    of magnitudes and in the seed's attention types tested each; the seed's signed pooling (with
    mlp_up, and its label says so) is kept computable beside them, so the claim over its readings is
    'undecided (reading)' and MiniLM's cell is not 'held'."""
    from geolip_lib.claims import tables
    from geolip_lib.weights.tables.claims import battery_claims

    null = [_cancelling_battery((1, 1, 1, 1), 0.002)] * 5  # random init: |cos| ~ 1/sqrt(n) on a small model
    rec = battery_claims(_cancelling_battery(), {}, {}, null)
    assert abs(rec["cross_layer_corr"]["attention"]["value"]) < 1e-12  # the signed pooling cancels
    for model in ("all-minilm-l6-v2", "bert-large-uncased"):
        write_job(tmp_path, "02_weight_topology", model, rec)
    rows = claims.evaluate(tmp_path)
    by = {(r["model"], r["form"], r["scope"]): r for r in rows if r["claim"] == "cross_layer_corr"}
    for model in ("all-minilm-l6-v2", "bert-large-uncased"):
        assert by[(model, 0, "attention|abs")]["verdict"] == NOT_HELD
        assert by[(model, 0, "attention|abs")]["value"] == pytest.approx(0.0006)
        assert by[(model, 2, "seed:q,k,qkv|each")]["verdict"] == NOT_HELD
        seed = by[(model, 1, "seed:q,k,qkv,mlp_up")]
        assert seed["verdict"] == HELD and "mlp_up is no attention weight" in seed["reading"]
        assert (model, 0, "attention") not in by  # the signed mean is recorded, not read
    m = tables.matrix(rows)
    cell = m["cells"][("cross_layer_corr", "all-minilm-l6-v2")]  # its readings disagree: the cell says so
    assert cell["verdict"] == UNDECIDED and cell["reason"].startswith(claims.READING_DISAGREES)
    assert "not held" in cell["reason"] and "held" in cell["reason"].replace("not held", "")
    over = {r["claim"]: r for r in claims.readings(claims.summarize(rows))}["cross_layer_corr"]["over the readings"]
    assert over.startswith(claims.READING_DISAGREES) and f"all-minilm-l6-v2: {claims.READING_DISAGREES}" in over


def test_coherence_is_not_held_when_the_generations_are_empty_or_loop(tmp_path, write_job):
    """SmolLM2's coherence was 'held' from a pooled cosine of 0.991 while its generations were
    empty or looping; the text is a scope of the same reading, so the cell is 'not held' (seed model
    and stand-in alike); unchanged generations leave it 'held, but the null gives it too'."""
    from geolip_lib.claims import tables
    from geolip_lib.modulators import stats

    rows = [{"prompt": "a", "original": "The cat sat on the mat.", "modulated": "", "identical": False,
             "token_diffs": 5, "n_tokens": 5},
            {"prompt": "b", "original": "A cat is a small mammal.", "modulated": "The cat is a cat. The cat is a cat.",
             "identical": False, "token_diffs": 9, "n_tokens": 10}]
    cos = np.full(40, 0.991)
    for model in ("t5-small", "smollm2-135m"):
        write_job(tmp_path, "09_modulator_training", model,
                  {"modulator_lift_coherence": stats.coherence_claims({"project": cos, "seed": cos},
                                                                      {"project": rows, "seed": rows})})
    ev = claims.evaluate(tmp_path)
    got = {(r["model"], r["form"], r["scope"]): r for r in ev if r["claim"] == "modulator_coherence"}
    for model in ("t5-small", "smollm2-135m"):
        assert got[(model, 1, "project_preservation")]["verdict"] == HELD_NULL  # the cosine alone: held
        text = got[(model, 1, "project_generation_coherent")]
        assert text["verdict"] == NOT_HELD and text["value"] == 0.0
    m = tables.matrix(ev)
    assert m["cells"][("modulator_coherence", "t5-small")]["verdict"] == NOT_HELD
    assert m["cells"][("modulator_coherence", "smollm2-135m")]["verdict"] == NOT_HELD
    same = [{**r, "modulated": r["original"], "identical": True} for r in rows]
    write_job(tmp_path, "09_modulator_training", "t5-small",
              {"modulator_lift_coherence": stats.coherence_claims({"seed": cos}, {"seed": same})})
    ok = {r["scope"]: r for r in claims.evaluate(tmp_path) if r["claim"] == "modulator_coherence"
          and r["model"] == "t5-small" and r["form"] == 0}
    assert ok["seed_generation_coherent"]["verdict"] == HELD_NULL  # the identity gives it too


def test_stand_ins_do_not_decide_the_claim(tmp_path, write_job, h):
    nulls = {"sphere": {"value": 0.214}, "gaussian": {"value": 0.213}, "random_init": {"value": 0.30}}
    write_job(tmp_path, "01_embedding_terrain", "all-minilm-l6-v2",
              {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls=nulls)}})
    write_job(tmp_path, "02_weight_topology", "all-minilm-l6-v2",
              {"q_sparsity": {"encoder/self": h(0.5, 0.45, 0.55)}})  # no cross attention: no qk_cross_balance
    write_job(tmp_path, "02_weight_topology", "bert-large-uncased", {"qk_self_balance": {"encoder/self": h(
        0.468, 0.449, 0.485, per_layer=[0.4245, 0.4531, 0.4818, 0.4688, 0.4870, 0.4922])}})
    rows = verdicts(tmp_path, "pentachoron_cv")
    mini = rows[("all-minilm-l6-v2", "embedding")]
    assert mini["verdict"] == HELD_NULL and not mini["seed model"]
    assert mini["null explains"].startswith("The gaussian at the same dimension gives 0.213")
    assert ("all-minilm-l6-v2", "") not in verdicts(tmp_path, "qk_cross_balance")  # a stand-in without it: no row
    selfqk = verdicts(tmp_path, "qk_cross_balance")[("bert-large-uncased", "encoder/self (self-attention)")]
    assert selfqk["verdict"] == NOT_HELD and "6 of 6 layers outside" in selfqk["reason"]  # MiniLM-like: not 0.5
    summary = {(s["claim"], s["form"]): s for s in claims.summarize(claims.evaluate(tmp_path))}
    assert summary[("pentachoron_cv", 0)]["verdict"] == NOT_TESTED
    assert "all-minilm-l6-v2: held, but the null gives it too" in summary[("pentachoron_cv", 0)]["stand-ins"]


def test_unreadable_and_unfinished_jobs_are_skipped(tmp_path, write_job, h):
    write_job(tmp_path, "01_embedding_terrain", "t5-small", {"pentachoron_cv": {"embedding": h(0.3, 0.29, 0.31)}})
    (tmp_path / "01_embedding_terrain" / ".partial-t5-base").mkdir()
    bad = tmp_path / "01_embedding_terrain" / "t5-base"
    bad.mkdir()
    (bad / "metrics.json").write_text("{not json")
    rows = verdicts(tmp_path, "pentachoron_cv")
    assert rows[("t5-small", "embedding")]["verdict"] == NOT_HELD
    assert rows[("t5-base", "")]["verdict"] == NOT_TESTED
    assert "no finished 01_embedding_terrain job for t5-base" in rows[("t5-base", "")]["reason"]


def test_paper_profile_has_every_job_the_claims_need():
    from run_all import jobs_for_profile

    paper = [(j.notebook, j.model) for j in jobs_for_profile("paper")]
    assert claims.missing_jobs(paper) == []
    demo = [(j.notebook, j.model) for j in jobs_for_profile("demo")]
    assert "02_weight_topology/t5-v1_1-xxl" in claims.missing_jobs(demo)
    assert ("15_seed_claims", None) in demo and demo[-1][0] == "15_seed_claims"  # runs last


def test_forest_figure(tmp_path, write_job, h):
    write_job(tmp_path, "01_embedding_terrain", "t5-small",
              {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls={"gaussian": {"value": 0.40}})}})
    write_job(tmp_path, "02_weight_topology", "tiny-t5",
              {"qk_cross_balance": {"decoder/cross": h(0.5, 0.49, 0.51, per_layer=[0.5, 0.5])},
               "position_crystallization": {"decoder": h(0, exact=True)}})
    fig = claims_forest(claims.evaluate(tmp_path))
    assert sum(ax.get_visible() for ax in fig.axes) == len(claims.CLAIMS)
    check_figure(fig)


def test_tiny_random_models_are_pipeline_checks_never_stand_ins(tmp_path, write_job, h):
    """A tiny random model gets no verdict and no row beside the claims; the page
    may say the pipeline also ran on it (claims.pipeline_checks)."""
    rec = {"pentachoron_cv": {"embedding": h(0.215, 0.21, 0.22, nulls={"gaussian": {"value": 0.4}})}}
    write_job(tmp_path, "01_embedding_terrain", "tiny-bert", rec)
    write_job(tmp_path, "01_embedding_terrain", "all-minilm-l6-v2", rec)
    models = {r["model"] for r in claims.evaluate(tmp_path)}
    assert "tiny-bert" not in models and "all-minilm-l6-v2" in models
    assert claims.pipeline_checks(tmp_path) == ["tiny-bert"]
    assert claims.trained("my-own", {"provenance": {"models": [{"name": "my-own", "source": "tiny"}]}}) is False
    assert claims.trained("my-own", {"provenance": {"models": [{"name": "my-own", "source": "local"}]}}) is True


def test_dequantized_values_are_kept_out_of_verdicts_the_quantization_step_could_decide(tmp_path, write_job, h):
    """Q sparsity at |w| < 0.1 from dequantized Q4_1 weights gives no verdict; a CV
    (no quantization note in the claims file) keeps its verdict."""
    prov = {"model": {"name": "all-minilm-l6-v2", "dequantized": True,
                      "weights": {"dequantized": True, "quantization": {"q.weight": "Q4_1"}}}}
    d = tmp_path / "02_weight_topology" / "t5-small"
    write_job(tmp_path, "02_weight_topology", "t5-small", {"q_sparsity": {"encoder+decoder/self": h(
        0.937, exact=True, nulls={"random init": {"value": 0.5}})}})
    data = json.loads((d / "metrics.json").read_text())
    (d / "metrics.json").write_text(json.dumps({**data, "provenance": prov}))
    row = verdicts(tmp_path, "q_sparsity")[("t5-small", "encoder+decoder/self")]
    assert row["verdict"] == UNDECIDED and "dequantized Q4_1" in row["reason"] and "'held'" in row["reason"]
    assert claims.dequantized({"provenance": prov}) == "dequantized Q4_1"
    assert claims.dequantized({"provenance": {"models": [{"weights": {}}]}}) is None


@pytest.mark.parametrize("value, bound, want", [
    # T5-small's rule: the value prints as 93.7 %, i.e. lies in [93.65, 93.75) %
    (0.80, (0.70, 0.90), NOT_HELD),     # SmolLM2-like: 80 % ± 10 points cannot reach 93.65 %: not held, kept
    (0.937, (0.9366, 0.9374), HELD),    # the whole bound prints as 93.7 %: held, kept
    (0.90, (0.85, 0.95), UNDECIDED),    # the bound crosses 93.65 %: undecided (quantization)
    (0.937, (0.93, 0.94), UNDECIDED),   # held as measured, but the bound leaves the band
])
def test_a_quantization_bound_keeps_the_verdict_it_cannot_flip(tmp_path, write_job, h, value, bound, want):
    """Q4_1 moves each weight at most half a step, so the Q-sparsity fraction moves at most by
    the fraction of weights within half a step of 0.1; the verdict stands when that bound cannot flip it."""
    prov = {"model": {"name": "t5-small", "dequantized": True,
                      "weights": {"dequantized": True, "quantization": {"q.weight": "Q4_1"}}}}
    d = tmp_path / "02_weight_topology" / "t5-small"
    write_job(tmp_path, "02_weight_topology", "t5-small", {"q_sparsity": {"encoder+decoder/self": h(
        value, exact=True, nulls={"random init": {"value": 0.5}}, quantization_bound={"lo": bound[0], "hi": bound[1]})}})
    data = json.loads((d / "metrics.json").read_text())
    (d / "metrics.json").write_text(json.dumps({**data, "provenance": prov}))
    row = verdicts(tmp_path, "q_sparsity")[("t5-small", "encoder+decoder/self")]
    rule = next(f for c in claims.CLAIMS if c.id == "q_sparsity" for f in c.forms).rule_for("t5-small", "")
    assert row["verdict"] == want, row["reason"]
    if want == UNDECIDED:
        assert row["reason"].startswith("undecided (quantization)")
        assert any(bound[0] < e < bound[1] for e in (rule.lo, rule.hi) if e is not None)  # the bound crosses an edge
    else:
        assert "cannot flip it" in row["reason"]


def test_the_forest_says_how_many_rows_a_panel_leaves_out(tmp_path, write_job, h):
    """Seed_claims.png cut each panel at 10 rows silently."""
    import matplotlib
    matplotlib.use("Agg")
    from geolip_lib.claims.plots import claims_forest
    for i in range(12):
        write_job(tmp_path, "01_embedding_terrain", f"model-{i:02d}", {"pentachoron_cv": {"embedding": h(
            0.21, 0.2, 0.22, nulls={"gaussian": {"value": 0.4}})}})
    rows = claims.evaluate(tmp_path)
    fig = claims_forest(rows, max_rows=10)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    n = sum(1 for r in rows if r["claim"] == "pentachoron_cv" and isinstance(r["value"], float))
    assert n == 12 and f"{n - 10} more of {n} rows not shown (the details table has all)" in texts, texts


def test_the_pentachoron_cv_is_read_on_every_row_and_without_special_tokens(tmp_path, write_job, h):
    """AntiBERTy's 25-row table is 'not held' on every row (its [PAD] row far out) and in the
    band without its special tokens: each reading names its rows, and the stand-in's verdict turns on
    the reading ('undecided (reading)')."""
    nulls = {"gaussian": {"value": 0.40, "interval": {"lo": 0.38, "hi": 0.42}},
             "sphere": {"value": 0.39, "interval": {"lo": 0.37, "hi": 0.41}},
             "random_init": {"value": 0.41, "interval": {"lo": 0.39, "hi": 0.43}}}
    write_job(tmp_path, "01_embedding_terrain", "antiberty", {"pentachoron_cv": {
        "embedding": h(0.2613, exact=True, nulls=nulls, rows={"n": 25, "of": 25, "text": "all 25 rows"}),
        "embedding_content": h(0.2105, exact=True, nulls=nulls, rows={
            "n": 20, "of": 25, "text": "20 of 25 rows: 5 special tokens left out"})}})
    every = verdicts(tmp_path, "pentachoron_cv", form=0)[("antiberty", "embedding")]
    assert every["verdict"] == NOT_HELD and every["reason"].endswith("on all 25 rows")
    assert ("antiberty", "embedding_content") not in verdicts(tmp_path, "pentachoron_cv", form=0)
    content = verdicts(tmp_path, "pentachoron_cv", form=2)[("antiberty", "embedding_content")]
    assert content["verdict"] == HELD and "on 20 of 25 rows: 5 special tokens left out" in content["reason"]
    assert content["reading"] == "the project's own reading (without the tokenizer's special tokens)"
    over = {r["claim"]: r for r in claims.readings(claims.summarize(claims.evaluate(tmp_path)))}["pentachoron_cv"]
    assert "antiberty: undecided (reading)" in over["over the readings"]


def test_a_pca_to_the_tables_own_width_is_a_rotation_not_a_second_verdict(tmp_path, write_job, h):
    """SmolLM2's 'PCA-projected' CV went 576 -> 576 d, a rotation, and repeated the native CV
    as a second verdict; a record marked ``repeats`` is shown, not tested."""
    rec = h(0.2150, 0.2100, 0.2200, nulls={"gaussian": {"value": 0.40}, "unit sphere": {"value": 0.40}},
            rotation=True, d_from=576, d_to=576,
            repeats="PCA to 576 of 576 d is a rotation (after centring): the native CV again")
    write_job(tmp_path, "07_cross_scale_projection", "smollm2-135m", {"pentachoron_cv": {"pca_projected": rec}})
    write_job(tmp_path, "07_cross_scale_projection", "qwen3.5-4b", {"pentachoron_cv": {"pca_projected": rec}})
    rows = verdicts(tmp_path, "pentachoron_cv", form=1)
    for model in ("smollm2-135m", "qwen3.5-4b"):
        r = rows[(model, "pca_projected")]
        assert r["verdict"] == NOT_TESTED and r["reason"].startswith("not tested: PCA to 576 of 576 d is a rotation")
        assert r["value"] == pytest.approx(0.215) and r["measured"] != "–"  # shown beside its reason
    summary = {(s["claim"], s["form"]): s for s in claims.summarize(claims.evaluate(tmp_path))}
    assert summary[("pentachoron_cv", 1)]["verdict"] == NOT_TESTED
    assert summary[("pentachoron_cv", 1)]["stand-ins"] == "–"  # no second verdict from the repeat
    assert "rotation" in summary[("pentachoron_cv", 1)]["reason"]
    rec.pop("repeats")  # the same record without the mark: a verdict, as before
    write_job(tmp_path, "07_cross_scale_projection", "smollm2-135m", {"pentachoron_cv": {"pca_projected": rec}})
    assert verdicts(tmp_path, "pentachoron_cv", form=1)[("smollm2-135m", "pca_projected")]["verdict"] != NOT_TESTED
