"""Known answers of the claims rules: printed numbers read at their precision, exact values
compared as they are, sampled values by their whole interval (straddling: undecided, with the
sample size that decides)."""
from __future__ import annotations

import pytest

from geolip_lib.claims import HELD, NOT_HELD, UNDECIDED, Printed, Rule

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text,value,half,approx", [
    ("93.7 %", 0.937, 0.0005, False), ("100.0 %", 1.0, 0.0005, False), ("0.500", 0.5, 0.0005, False),
    ("~0.000", 0.0, 0.0005, True), ("+152 %", 1.52, 0.005, False), ("0.29154", 0.29154, 0.000005, False),
    ("0.20", 0.2, 0.005, False), (0, 0.0, 0.0, False), (0.76, 0.76, 0.0, False)])
def test_printed_numbers_read_at_their_precision(text, value, half, approx):
    p = Printed.parse(text)
    assert p.value == pytest.approx(value, abs=1e-12) and p.half == pytest.approx(half, rel=1e-9)
    assert p.approx == approx


@pytest.mark.parametrize("bad", ["about ninety", "1e", "nan", True, None])
def test_printed_numbers_refuse_what_is_not_a_number(bad):
    with pytest.raises(ValueError):
        Printed.parse(bad)


@pytest.mark.parametrize("spec,inside,outside", [
    ("93.7 %", [0.9365, 0.937, 0.93749], [0.9375, 0.9364, 0.94]),           # [93.65, 93.75)
    ("~0.000", [0.0, 0.0004999, -0.0004999], [0.0005, -0.0005, 0.0006]),    # |x| < 0.0005
    ("0.500", [0.4995, 0.5, 0.50049], [0.5005, 0.4994]),                     # [0.4995, 0.5005)
])
def test_an_exact_value_is_compared_at_the_printed_precision(spec, inside, outside):
    rule = Rule.from_spec("equals", spec)
    for v in inside:
        verdict, reason = rule.judge(v, exact=True)
        assert verdict == HELD and "exact" in reason, (spec, v, reason)
    for v in outside:
        assert rule.judge(v, exact=True)[0] == NOT_HELD, (spec, v)
    assert spec.lstrip("~") in rule.text and "means" in rule.text  # the rule shows the reading


def test_an_exact_value_is_never_undecided_and_a_count_is_compared_exactly():
    rule = Rule.from_spec("equals", 0)
    assert rule.judge(0, exact=True)[0] == HELD and rule.judge(1, exact=True)[0] == NOT_HELD
    band = Rule.from_spec("band", ["0.20", "0.23"])
    for v in (0.1949, 0.195, 0.2349, 0.235, 0.3):
        assert band.judge(v, exact=True)[0] in (HELD, NOT_HELD)
    assert band.inside(0.195) and band.inside(0.2349) and not band.inside(0.235)


@pytest.mark.parametrize("lo,hi,expected", [(0.205, 0.22, HELD), (0.30, 0.34, NOT_HELD), (0.10, 0.15, NOT_HELD),
                                            (0.19, 0.21, UNDECIDED), (0.225, 0.24, UNDECIDED)])
def test_a_sampled_value_is_judged_by_its_whole_interval(lo, hi, expected):
    verdict, reason = Rule.from_spec("band", ["0.20", "0.23"]).judge((lo + hi) / 2, lo, hi)
    assert verdict == expected and reason


def test_a_straddling_interval_says_what_sample_would_decide():
    verdict, reason = Rule.from_spec("at_least", 0.937).judge(0.94, 0.93, 0.95)
    assert verdict == UNDECIDED
    assert "about 12× larger" in reason  # half-width 0.01 vs distance 0.003 to the edge: (0.01 / 0.003)^2 = 11.1
    assert "sits on the edge" in Rule.from_spec("at_least", 0.94).judge(0.94, 0.93, 0.95)[1]


def test_the_other_kinds_known_answers():
    at_most = Rule.from_spec("at_most", "0.10")  # < 0.105
    assert at_most.judge(0.05, 0.04, 0.06)[0] == HELD and at_most.judge(0.2, 0.15, 0.25)[0] == NOT_HELD
    assert at_most.judge(0.105, exact=True)[0] == NOT_HELD and at_most.judge(0.1049, exact=True)[0] == HELD
    contains = Rule.from_spec("contains", "0.29154")
    assert contains.judge(0.3, 0.25, 0.35)[0] == HELD and contains.judge(0.1, 0.05, 0.15)[0] == NOT_HELD
    within = Rule.from_spec("all_within", "0.500")
    assert within.judge(0.5, per_layer=[0.5, 0.50024, 0.4998])[0] == HELD
    verdict, reason = within.judge(0.49, per_layer=[0.5, 0.47, 0.5])
    assert verdict == NOT_HELD and "1 of 3 layers" in reason
    assert within.judge(0.5, per_layer=[])[0] == UNDECIDED
    assert Rule.from_spec("band", [0, 1]).judge(0.5, None, None)[0] == UNDECIDED  # sampled, no interval
    with pytest.raises(ValueError, match="kind"):
        Rule("between")
    with pytest.raises(ValueError, match="above hi"):
        Rule.from_spec("band", ["0.3", "0.2"])


def test_nulls_satisfy_a_rule_by_their_point_or_for_a_location_by_their_interval():
    band = Rule.from_spec("equals", "~0.000")
    assert band.satisfied_by(-0.0003) and not band.satisfied_by(-0.0006) and not band.satisfied_by(None)
    loc = Rule.from_spec("contains", 0.29)
    assert loc.satisfied_by(0.3, (0.25, 0.35)) and not loc.satisfied_by(0.5, (0.45, 0.55))
