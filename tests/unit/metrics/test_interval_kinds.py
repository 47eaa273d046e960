"""The interval record says what kind of number it qualifies, and a point lies inside its interval: ``results.headline`` and ``results.record`` refuse one outside."""
from __future__ import annotations

import json

import pytest

from geolip_lib import results
from geolip_lib.metrics import intervals as I

pytestmark = pytest.mark.unit


def test_exact_headline_has_no_interval_to_print_and_says_what_it_is_over():
    h = results.headline(204.9, interval="exact", over="30522 rows", label="PR", fmt=".1f")
    assert h["kind"] == "exact" and h["interval"]["method"] == "exact (all 30522 rows)"
    assert h["interval"]["lo"] == h["interval"]["hi"] == 204.9
    assert I.format_value(h["value"], h["interval"], h["fmt"]) == "204.9"  # no brackets


def test_kinds_are_read_from_the_interval_or_given():
    assert results.headline(0.3, interval=I.over_seeds([0.29, 0.3, 0.31]))["kind"] == "over_seeds"
    assert results.headline(0.3, interval=(0.2, 0.4))["kind"] == "sampled"
    assert results.headline(0.3, interval=(0.2, 0.4), kind="over_seeds")["kind"] == "over_seeds"
    assert results.kind_of({"lo": 1, "hi": 1, "method": "exact (no sampling)"}) == "exact"
    with pytest.raises(ValueError, match="^kind: "):
        results.headline(0.3, interval=(0.2, 0.4), kind="bootstrap")


def test_a_point_outside_its_interval_is_refused():
    """MiniLM's PR was printed as 204.9 [205.7, 207.3]: now one line naming the headline."""
    with pytest.raises(ValueError, match=r"headline PR: value 204\.9 lies outside its own interval"):
        results.headline(204.9, interval=(205.7, 207.3), label="PR")
    with pytest.raises(ValueError, match="null gaussian value"):
        results.headline(1.0, interval=(0.9, 1.1), nulls={"gaussian": {"value": 5.0, "interval": (1, 2)}})
    # float round-off between two routes to one number is not a miss
    results.headline(0.1 + 1e-9, interval=(0.0, 0.1))


def test_record_refuses_a_point_outside_its_interval_anywhere(tmp_path):
    ok = results.headline(1.0, interval=(0.5, 1.5))
    bad = dict(ok, value=2.0)  # built by hand past headline()'s check
    with pytest.raises(ValueError, match=r"metrics\.json: metrics\.claims\.x\.y: value 2\.0 lies outside"):
        results.record(tmp_path, {"claims": {"x": {"y": bad}}}, headline={"a": ok})
    assert not (tmp_path / "metrics.json").exists()
    results.record(tmp_path, {"claims": {"x": {"y": ok}}}, headline={"a": ok})
    assert json.loads((tmp_path / "metrics.json").read_text())["headline"]["a"]["kind"] == "sampled"


def test_null_over_seeds_and_exact_value_separation():
    null = I.null_over_seeds([0.50, 0.51, 0.49, 0.50, 0.505], what="random-init seeds")
    h = results.headline(0.62, interval="exact", over="6 layers", nulls={"random_init": null})
    n = h["nulls"]["random_init"]
    assert n["separated"] is True and len(n["per_seed"]) == 5 and n["interval"]["kind"] == "over_seeds"
    assert "random-init seeds" in n["interval"]["method"]
    assert results.headline(0.5, interval="exact", nulls={"random_init": null})["nulls"]["random_init"]["separated"] is False


def test_plug_in_and_forced_by_shape_are_recorded():
    h = results.headline(206.4, interval=(205.7, 207.3), plug_in=204.9, forced_by_shape="GQA: 2·n_kv·head_dim ≤ d")
    assert h["plug_in"] == 204.9 and h["forced_by_shape"].startswith("GQA")
    assert "forced_by_shape" not in results.headline(1.0, interval="exact")
