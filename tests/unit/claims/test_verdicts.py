"""One constructed case per verdict, through the whole path: metrics.json files
under a report root -> claims.evaluate with seed 001's claims file -> the verdict and its reason.

- an exact value equal to the seed's at its printed precision -> held (separated from its null);
- a null that satisfies the rule, or that the value is not separated from -> "held, but the
  null gives it too";
- a contradicting exact value or interval -> not held;
- no effect and low power -> undecided, never "not held"; with the power shown -> not held;
- a straddling interval, or a bearing null not recorded -> undecided, saying what decides;
- a value forced by shape -> kept out of the verdict.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from geolip_lib import claims, results
from geolip_lib.claims import FORCED, HELD, HELD_NULL, NOT_HELD, NOT_TESTED, UNDECIDED
from geolip_lib.metrics.changepoint import locate

pytestmark = pytest.mark.unit


def rows_of(root, claim_id, form=0):
    return {(r["model"], r["scope"]): r for r in claims.evaluate(root)
            if r["claim"] == claim_id and r["form"] == form}


def summary_of(root):
    return {(s["claim"], s["form"]): s for s in claims.summarize(claims.evaluate(root))}


def test_exact_value_equal_to_the_seeds_at_its_precision_is_held(tmp_path, write_job, h):
    rinit = {"random_init": {"value": 0.80, "interval": results.exact(0.80)}}
    write_job(tmp_path, "02_weight_topology", "t5-small", {"q_sparsity": {
        "encoder+decoder/self": h(0.93712, exact=True, nulls=rinit)}})          # prints as 93.7 %
    write_job(tmp_path, "02_weight_topology", "t5-base", {"q_sparsity": {
        "encoder+decoder/self": h(0.9955, exact=True, nulls=rinit)}})           # prints as 99.6 %, seed 99.4 %
    r = rows_of(tmp_path, "q_sparsity")
    small = r[("t5-small", "encoder+decoder/self")]
    assert small["verdict"] == HELD, small["reason"]
    assert small["kind"] == "exact" and "exact" in small["measured"] and "[" not in small["measured"]
    assert "'93.7 %' means [93.65, 93.75) %" in small["rule"]  # the rule shows the reading
    assert "separated from random init" in small["reason"]
    base = r[("t5-base", "encoder+decoder/self")]
    assert base["verdict"] == NOT_HELD and "outside" in base["reason"]  # exact: no "larger sample" to ask for


def test_a_null_that_satisfies_the_rule_gives_held_but_the_null_gives_it_too(tmp_path, write_job, h):
    # the cross-layer case: MiniLM-like 0.0002 exact; random init 0.0003 over its seeds, inside |x| < 0.0005
    # (the project's pooling of magnitudes, scope attention|abs: a null magnitude is never negative)
    write_job(tmp_path, "02_weight_topology", "t5-small", {"cross_layer_corr": {"attention|abs": h(
        0.0002, exact=True, nulls={"random init": {"value": 0.0003, "interval": (0.0002, 0.0004)}})}})
    # not separated: a null outside the rule whose interval reaches the value
    write_job(tmp_path, "02_weight_topology", "t5-base", {"cross_layer_corr": {"attention|abs": h(
        0.0002, exact=True, nulls={"random init": {"value": 0.0006, "interval": (0.0001, 0.0012)}})}})
    r = rows_of(tmp_path, "cross_layer_corr")
    small, base = r[("t5-small", "attention|abs")], r[("t5-base", "attention|abs")]
    assert small["verdict"] == HELD_NULL and "satisfies the rule too" in small["reason"]
    assert small["null explains"].startswith("The random init copy gives")
    assert base["verdict"] == HELD_NULL and "not separated" in base["reason"]
    s = summary_of(tmp_path)[("cross_layer_corr", 0)]
    assert s["verdict"] == UNDECIDED  # the other seed models were not tested: they decide
    assert "t5-v1_1-xxl" in s["reason"]


def test_a_contradicting_interval_is_not_held_and_a_straddling_one_undecided(tmp_path, write_job, h):
    write_job(tmp_path, "01_embedding_terrain", "t5-small", {"pentachoron_cv": {"embedding": h(
        0.30, 0.29, 0.31, nulls={"gaussian": {"value": 0.40}})}})
    write_job(tmp_path, "01_embedding_terrain", "t5-base", {"pentachoron_cv": {"embedding": h(
        0.232, 0.225, 0.24, nulls={"gaussian": {"value": 0.40}})}})
    r = rows_of(tmp_path, "pentachoron_cv")
    assert r[("t5-small", "embedding")]["verdict"] == NOT_HELD
    base = r[("t5-base", "embedding")]
    assert base["verdict"] == UNDECIDED and "× larger would decide it" in base["reason"]
    assert summary_of(tmp_path)[("pentachoron_cv", 0)]["verdict"] == NOT_HELD


def test_a_bearing_null_not_recorded_leaves_it_undecided(tmp_path, write_job, h):
    write_job(tmp_path, "01_embedding_terrain", "t5-small", {"pentachoron_cv": {"embedding": h(
        0.215, 0.21, 0.22, nulls={"gaussian": {"value": 0.40}, "sphere": {"value": 0.39}})}})  # no random init
    row = rows_of(tmp_path, "pentachoron_cv")[("t5-small", "embedding")]
    assert row["verdict"] == UNDECIDED and "random init null that bears on it was not recorded" in row["reason"]


def _phase_job(root, write_job, Y, x, h):
    """A notebook-10-like job: the change-point fit of the seed-mean curve and its claim record."""
    res = locate(x, Y, null="quadratic", n_boot=199, seed=42)
    fit = json.loads(json.dumps(results.to_jsonable(res["fit"])))
    rec = h(res["location"], *((res["interval"].lo, res["interval"].hi) if res["found"] else (None, None)))
    rec.update(found=res["found"], p_value=res["p_value"], best_breakpoint=fit["breakpoint"], quantity="pearson",
               null="quadratic", seeds=list(range(len(Y))), grid=list(x))
    if not res["found"]:
        rec["interval"] = None
    write_job(root, "10_alpha_sweep", "t5-small", {"phase_boundary": {"alpha": rec}},
              phase={"located": {"pearson|quadratic": {"fit": fit}},
                     "sweep": {"alphas": list(x), "seeds": list(range(len(Y))), "pearson": np.asarray(Y).tolist()}})
    return res


def test_no_effect_and_low_power_is_undecided_never_not_held(tmp_path, write_job, h):
    rng = np.random.default_rng(3)
    x = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    res = _phase_job(tmp_path, write_job, 0.03 + rng.normal(0, 0.02, (3, 6)), x, h)
    assert not res["found"]
    row = rows_of(tmp_path, "phase_boundary")[("t5-small", "alpha")]
    assert row["verdict"] == UNDECIDED, row["reason"]
    assert "no change point found (p = " in row["reason"] and "power against a kink of slope change" in row["reason"]
    assert "the project's construction" in row["reason"] and "absorbs" in row["reason"]
    assert row["power"]["power"] < 0.8 and "What would decide it" in row["reason"]
    assert "project's own change-point test" in row["reading"]


def test_no_effect_with_the_power_shown_is_not_held(tmp_path, write_job, h):
    rng = np.random.default_rng(5)
    x = np.linspace(0.0, 0.6, 13)
    Y = 0.1 + 0.02 * x + rng.normal(0, 0.002, (6, 13))  # flat: no kink, and noise far below the seed's kink
    res = _phase_job(tmp_path, write_job, Y, x, h)
    if res["found"]:  # a false positive of the test (5 %) would make this case another one; the seed is fixed
        pytest.fail(f"the constructed flat curve was found to change (p = {res['p_value']})")
    row = rows_of(tmp_path, "phase_boundary")[("t5-small", "alpha")]
    assert row["power"]["power"] >= 0.8
    assert row["verdict"] == NOT_HELD and "although the test finds a kink of slope change" in row["reason"]


def test_a_value_forced_by_shape_is_kept_out_of_the_verdict(tmp_path, write_job, h):
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {"qk_cross_balance": {"decoder/cross": h(
        0.5, exact=True, per_layer=[0.5, 0.5], forced_by_shape="2·n_kv·head_dim ≤ d (grouped-query attention)")}})
    row = rows_of(tmp_path, "qk_cross_balance")[("t5-v1_1-xxl", "decoder/cross")]
    assert row["verdict"] == FORCED and "grouped-query" in row["reason"]
    s = summary_of(tmp_path)[("qk_cross_balance", 0)]
    assert s["verdict"] == FORCED and s["verdict"] not in claims.VERDICTS


def test_the_four_verdicts_roll_up_per_reading(tmp_path, write_job, h):
    """Every seed model held and separated -> held; one held only through a null -> held, but the
    null gives it too; nothing recorded -> not tested on this profile."""
    write_job(tmp_path, "02_weight_topology", "t5-small", {"position_crystallization": {"decoder": h(
        0, exact=True, nulls={"random init": {"value": 3, "interval": (2.0, 4.0)}})}})
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {"position_crystallization": {"decoder": h(
        0, exact=True, nulls={"random init": {"value": 5, "interval": (4.0, 6.0)}})}})
    s = summary_of(tmp_path)
    assert s[("position_crystallization", 0)]["verdict"] == HELD
    assert s[("phase_boundary", 0)]["verdict"] == NOT_TESTED
    write_job(tmp_path, "02_weight_topology", "t5-base", {})
    (tmp_path / "02_weight_topology" / "t5-v1_1-xxl" / "metrics.json").unlink()
    write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {"position_crystallization": {"decoder": h(
        0, exact=True, nulls={"random init": {"value": 0, "interval": results.exact(0)}})}})
    s = summary_of(tmp_path)
    assert s[("position_crystallization", 0)]["verdict"] == HELD_NULL
    assert {v["verdict"] for v in s.values()} <= set(claims.STATUSES)


def test_power_comes_from_the_jobs_own_curves_not_from_their_level_spread(tmp_path, write_job, h):
    """The tiny-t5 case: seeds that differ mostly in level (sd 0.06) and little
    beyond the quadratic. The level spread is not noise to the test; the seed's kink (0.31 at
    0.29154) added to these curves is found. The reported power is not above what the
    test achieves on fresh 3-seed experiments of the same noise (it was 83 % against a true 37 %:
    three seeds' covariance along the grid, rank 2, made the simulation too quiet), and the
    verdict follows the power."""
    rng = np.random.default_rng(7)
    x = np.linspace(0.0, 0.5, 11)

    def curves(r, n, c=0.0):
        return 0.1 + 0.05 * x + r.normal(0, 0.06, (n, 1)) + r.normal(0, 0.002, (n, 11)) + c * np.maximum(x - 0.29154, 0)

    Y = curves(rng, 3)
    res = _phase_job(tmp_path, write_job, Y, x, h)
    if res["found"]:
        pytest.fail(f"the constructed curve without a kink was found to change (p = {res['p_value']})")
    row = rows_of(tmp_path, "phase_boundary")[("t5-small", "alpha")]
    pw = row["power"]
    true = np.mean([locate(x, curves(np.random.default_rng(900 + k), 3, 0.3055), null="quadratic", n_boot=49,
                           seed=k)["found"] for k in range(pw["reps"])])
    se = np.sqrt(max(true * (1 - true), 0.05) * 2 / pw["reps"])
    assert pw["power"] <= true + 3 * se, (pw["power"], true)
    assert (row["verdict"] == NOT_HELD) == (pw["power"] >= 0.8), row["reason"]
    assert pw["hinge_sd"] < 0.1  # the observed per-seed hinge coefficient, not the level spread
    assert {i["multiple"]: i["found"] for i in pw["injected"]}[1.0]


def _inside(rule):
    """A value inside a rule's region, and one outside it."""
    if rule.kind == "contains":
        return rule.target, rule.target + 10.0
    lo = rule.lo if rule.lo is not None else (rule.hi - 1.0)
    hi = rule.hi if rule.hi is not None else (rule.lo + 1.0)
    return (lo + hi) / 2, hi + 10.0


def test_no_held_row_lists_a_null_that_satisfies_its_rule_for_every_claim_of_seed_001(tmp_path, write_job, h):
    """Over every claim and reading of params/claims/seed-001.yaml: each reading's
    first model records a value inside its rule, the claim's bearing nulls far outside, and one
    more null listed beside the value that satisfies the rule (like 09's unmodulated identity
    beside coherence). No row may say "held" then."""
    jobs: dict = {}
    for c in claims.CLAIMS:
        for f in c.forms:
            m = f.models[0]
            scope = (f.scopes_for(m) or ("s",))[0] if not f.path else f.scope
            rule = f.rule_for(m, scope)
            good, bad = _inside(rule)
            nulls = {n: {"value": bad} for n in (f.nulls if f.nulls is not None else c.nulls)}
            nulls["listed identity"] = {"value": good, "interval": (good - 1e-9, good + 1e-9)}
            rec = h(good, good - 1e-9, good + 1e-9, nulls=nulls) if rule.kind == "contains" else \
                h(good, exact=True, nulls=nulls)
            rec.update(per_layer=[good] * 3, found=True, **f.requires)
            rec["project"] = dict(rec)
            payload = jobs.setdefault((f.notebook, m), {"claims": {}, "headline": {}})
            if f.path:
                payload[f.path[0]][f.path[-1]] = rec
            else:
                payload["claims"].setdefault(f.record, {})[scope] = rec
    for (nb, m), p in jobs.items():
        write_job(tmp_path, nb, m, p["claims"], headline=p["headline"])
    rows = [r for r in claims.evaluate(tmp_path) if r["verdict"] != NOT_TESTED]
    assert {r["claim"] for r in rows} == set(claims.CLAIM_IDS)
    for r in rows:
        c = claims.claim(r["claim"])
        rule = c.forms[r["form"]].rule_for(r["model"], r["scope"])
        listed = [n for n, v in r["null values"].items() if rule.satisfied_by(v)]
        assert not (r["verdict"] == HELD and listed), (r["claim"], r["form"], r["model"], r["reason"])
        assert listed and r["verdict"] in (HELD_NULL, FORCED, UNDECIDED), (r["claim"], r["verdict"], r["reason"])
