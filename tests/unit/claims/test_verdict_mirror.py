"""The verdicts beside the plain rule: "not held, nor by the null" (the mirror of "held, but the null gives it
too"), a null beyond the value that counts against a claim of convergence, and a floor the measurement's own
design sets (geolip_lib.claims.verdict_cases)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import claims, models
from geolip_lib.claims import HELD, HELD_NULL, NOT_HELD, NOT_HELD_NULL, UNDECIDED
from geolip_lib.claims.tables import VERDICT_COLORS, VERDICT_GLYPHS, VERDICT_MEANING, fold_verdicts

pytestmark = pytest.mark.unit
NB = "02_weight_topology"


def _claims(tmp_path, rule: str, extra: str = "", models_=("m-small",)):
    p = tmp_path / "mirror-x.yaml"
    p.write_text(f"""name: mirror-x
title: "Paper X"
source: "Paper X"
claims:
  - id: q
    title: the quantity
    seed_value: "0"
    seed_models_text: "X"
    nulls: [random init]
    forms:
      - reading: both
        models: [{', '.join(models_)}]
        notebook: {NB}
        record: cross_layer_corr
{extra}        rule: {rule}
""")
    return p


def _verdict(tmp_path, write_job, rec, rule, extra="", model="m-small"):
    write_job(tmp_path, NB, model, {"cross_layer_corr": {"all": rec}})
    rows = claims.evaluate(tmp_path, _claims(tmp_path, rule, extra, (model,)))
    return next(r for r in rows if r["model"] == model)


def test_a_failure_the_null_shares_is_not_held_nor_by_the_null(tmp_path, write_job, h):
    rule = "{at_most: 0.0005}"
    inside = _verdict(tmp_path, write_job, h(0.0030, 0.0020, 0.0040, nulls={"random_init": h(0.0031, 0.0019, 0.0045)}), rule)
    assert inside["verdict"] == NOT_HELD_NULL and "fails the rule too" in inside["reason"]
    cf = _claims(tmp_path, rule)
    assert claims.summarize(claims.evaluate(tmp_path, cf), cf)[0]["verdict"] == NOT_HELD_NULL  # counted apart
    apart = _verdict(tmp_path, write_job, h(0.0300, 0.0250, 0.0350, nulls={"random_init": h(0.0031, 0.0019, 0.0045)}), rule)
    assert apart["verdict"] == NOT_HELD  # a deviation beyond the null's spread is the model's own
    passes = _verdict(tmp_path, write_job, h(0.0030, 0.0020, 0.0040, nulls={"random_init": h(0.0001, 0.0, 0.0003)}), rule)
    assert passes["verdict"] == NOT_HELD  # the null reaches the rule: the failure is the training's
    assert fold_verdicts([NOT_HELD_NULL, HELD]) == NOT_HELD_NULL and fold_verdicts([NOT_HELD, NOT_HELD_NULL]) == NOT_HELD
    assert {NOT_HELD_NULL} <= set(VERDICT_GLYPHS) & set(VERDICT_COLORS) & set(VERDICT_MEANING)


def _adjacent_abs_cos(lm) -> float:
    qs = [p.detach().double().flatten() for n, p in lm.model.named_parameters() if n.endswith("query.weight")]
    return float(np.mean([abs(torch.nn.functional.cosine_similarity(a, b, dim=0).item()) for a, b in zip(qs, qs[1:])]))


def test_a_tiny_model_cannot_reach_a_near_zero_cross_layer_rule(tmp_path, write_job, h):
    """tiny-bert's Q matrices hold 32 x 32 weights: independent layers have cosines of spread 1/32, far beyond
    |x| < 0.0005, so its random-init twins fail the rule as the model does, and the verdict says so."""
    lm = models.load("tiny-bert")
    value = _adjacent_abs_cos(lm)
    twins = [_adjacent_abs_cos(lm.random_init(seed=s)) for s in range(1, 6)]
    null = {"value": float(np.mean(twins)), "interval": {"lo": min(twins), "hi": max(twins), "kind": "over_seeds"}}
    assert min(twins) > 0.0005 and value > 0.0005
    rec = h(value, value * 0.5, value * 1.5, nulls={"random_init": null})
    row = _verdict(tmp_path, write_job, rec, "{at_most: 0.0005}", model="tiny-bert")
    assert row["verdict"] == NOT_HELD_NULL, row["reason"]


def test_a_closer_null_counts_against_convergence_when_the_reading_says_so(tmp_path, write_job, h):
    rec = h(0.90, 0.88, 0.92, nulls={"random_init": h(0.9995, 0.9990, 0.9999)})
    plain = _verdict(tmp_path, write_job, rec, "{at_least: 0.8}")
    assert plain["verdict"] == HELD_NULL
    against = _verdict(tmp_path, write_job, rec, "{at_least: 0.8}", extra="        null_beyond: against\n")
    assert against["verdict"] == NOT_HELD and "counts against convergence" in against["reason"]
    below = _verdict(tmp_path, write_job, h(0.90, 0.88, 0.92, nulls={"random_init": h(0.5, 0.45, 0.55)}),
                     "{at_least: 0.8}", extra="        null_beyond: against\n")
    assert below["verdict"] not in (NOT_HELD, NOT_HELD_NULL)  # a null short of the value is the usual case


def test_a_floor_beyond_the_rule_is_undecided_and_every_verdict_states_it(tmp_path, write_job, h):
    floor = {"value": 0.125, "why": "8 contexts per word (the first component explains at least 1/8)",
             "decide": "at least 21 contexts per word"}
    row = _verdict(tmp_path, write_job, h(0.93, 0.91, 0.95, floor=floor), "{at_most: 0.05}")
    assert row["verdict"] == UNDECIDED and "floor of 0.125" in row["reason"] and "21 contexts" in row["reason"]
    low = dict(floor, value=0.02)
    row = _verdict(tmp_path, write_job, h(0.93, 0.91, 0.95, floor=low), "{at_most: 0.05}")
    assert row["verdict"] == NOT_HELD and "the floor its design sets: 0.02" in row["reason"]


def test_a_papers_page_says_the_paper_where_a_seeds_says_the_seed():
    from geolip_lib.claims.tables import for_owner
    name = "as the table says = as the seed measured (best layer pair)"
    assert for_owner(name, "the seed's") == name
    assert for_owner(name, "the paper's") == "as the table says = as the paper measured (best layer pair)"
    assert for_owner("held ([seed's] 0.1)", "the paper's") == "held ([paper's] 0.1)"
