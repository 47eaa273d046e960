"""Pair-scoped claims (geolip_lib/claims/pairs.py): one verdict per pair of models, the pair's name
"model A × model B" standing where a model's name stands (rows, summary, the matrix's columns); the
rules, nulls and readings are those of single-model claims; a pair a notebook could not measure reads
"not tested" with its reason."""
from __future__ import annotations

import pytest

from geolip_lib import claims
from geolip_lib.claims import pairs as P
from geolip_lib.claims.tables import matrix
from geolip_lib.params import ParamsError

pytestmark = pytest.mark.unit
NB = "17_representational_alignment"
A, B, C = "all-minilm-l6-v2", "smollm2-135m", "all-mpnet-base-v2"
CHANCE = {"value": 10 / 255, "interval": {"lo": 10 / 255, "hi": 10 / 255, "method": "exact", "kind": "exact"}}


def _yaml(tmp_path, about="pair", models=(A, B, C), extra=""):
    p = tmp_path / "pairs-x.yaml"
    p.write_text(f"""name: pairs-x
title: "Paper X: alignment"
source: "Paper X"
claims:
  - id: aligned
    title: aligned above chance
    seed_value: "above chance"
    seed_models_text: "X, Y"
    nulls: [chance, random init]
    forms:
      - reading: both
        about: {about}
        models: [{', '.join(models)}]
        notebook: {NB}
        record: mutual_knn_alignment
        scopes: [best layer pair]
        rule: {{at_least: 0.1}}
{extra}""")
    return p


def _job(tmp_path, write_job, h, per_pair):
    write_job(tmp_path, NB, "all", {"mutual_knn_alignment": per_pair})


def test_units_are_sorted_pairs_and_one_set():
    assert P.units([B, A, C], "pair") == (P.label([A, B]), P.label([B, C]), P.label([A, C]))
    assert P.label([B, A]) == f"{A} × {B}" and P.members(P.label([B, A])) == (A, B)
    assert P.units([B, A, C], "set") == (f"{A} × {C} × {B}",)
    assert P.units([A], "model") == (A,)
    with pytest.raises(ValueError, match="two distinct models"):
        P.label([A, A])


def test_one_verdict_per_pair_with_the_single_model_rules_and_nulls(tmp_path, write_job, h):
    ab, bc, ac = P.label([A, B]), P.label([B, C]), P.label([A, C])
    _job(tmp_path, write_job, h, {
        ab: {"best layer pair": h(0.30, 0.27, 0.33, nulls={"chance": CHANCE, "random_init": h(0.05, 0.04, 0.06)})},
        bc: {"best layer pair": h(0.30, 0.27, 0.33, nulls={"chance": CHANCE, "random_init": h(0.31, 0.28, 0.34)})},
        ac: {"not_run": "one model reads another language"},
    })
    cs = claims.load(_yaml(tmp_path))
    rows = claims.evaluate(tmp_path, cs)
    by = {r["model"]: r for r in rows}
    assert set(by) == {ab, bc, ac} and all(r["seed model"] for r in rows)
    assert by[ab]["verdict"] == claims.HELD
    assert by[bc]["verdict"] == claims.HELD_NULL and "random init" in by[bc]["reason"]
    assert by[ac]["verdict"] == claims.NOT_TESTED and "another language" in by[ac]["reason"]
    m = matrix(rows, claims=cs)
    assert m["seed"] == [ab, ac, bc]  # the matrix's columns are the pairs, in the claims file's order
    assert m["cells"][("aligned", ab)]["verdict"] == claims.HELD
    # the same value as a single-model claim gets the same verdict
    write_job(tmp_path, NB, A, {"mutual_knn_alignment": {
        "best layer pair": h(0.30, 0.27, 0.33, nulls={"chance": CHANCE, "random_init": h(0.05, 0.04, 0.06)})}})
    single = claims.evaluate(tmp_path, claims.load(_yaml(tmp_path, about="model", models=(A,))))
    assert [r["verdict"] for r in single if r["model"] == A] == [claims.HELD]


def test_a_missing_bearing_null_or_an_unrecorded_pair_is_never_silent(tmp_path, write_job, h):
    ab = P.label([A, B])
    _job(tmp_path, write_job, h, {ab: {"best layer pair": h(0.30, 0.27, 0.33, nulls={"chance": CHANCE})}})
    rows = claims.evaluate(tmp_path, claims.load(_yaml(tmp_path)))
    by = {r["model"]: r for r in rows}
    assert by[ab]["verdict"] == claims.UNDECIDED and "random init" in by[ab]["reason"]
    assert by[P.label([A, C])]["verdict"] == claims.NOT_TESTED
    assert "recorded" in by[P.label([A, C])]["reason"]
    summary = claims.summarize(rows, claims.load(_yaml(tmp_path)))
    assert summary[0]["verdict"] == claims.UNDECIDED


def test_a_pair_reading_names_pairs_in_its_per_unit_keys(tmp_path):
    bad = _yaml(tmp_path, extra=f"        model_rules: {{{A}: {{at_least: 0.2}}}}\n")
    with pytest.raises(ParamsError, match="model_rules"):
        claims.load(bad)
    with pytest.raises(ParamsError, match="at least two distinct models"):
        claims.load(_yaml(tmp_path, models=(A,)))


def test_the_huh_file_loads_with_its_pair_and_set_readings():
    cs = claims.load("huh-2024")
    forms = {c.id: c.forms for c in cs.claims}
    assert {f.about for fs in forms.values() for f in fs} == {"pair", "set"}
    assert all(" × " in m for fs in forms.values() for f in fs for m in f.models)
    assert claims.required_jobs("huh-2024") == {NB: []}


def test_tiny_members_of_pairs_are_pipeline_checks(tmp_path, write_job, h):
    tb, tq = "tiny-bert", "tiny-qwen"
    root = tmp_path / "root"
    write_job(root, NB, "all", {"mutual_knn_alignment": {
        P.label([tb, tq]): {"best layer pair": h(0.3, 0.2, 0.4, nulls={"chance": CHANCE})}}})
    cf = _yaml(tmp_path)
    assert claims.evaluation.pipeline_checks(root, cf) == [tb, tq]  # read from the pair's members
    assert not [r for r in claims.evaluate(root, cf) if r["model"] == P.label([tb, tq])]  # never given a verdict


def test_long_titles_and_pair_labels_stay_inside_their_panels(tmp_path, write_job, h):
    from geolip_lib.claims.plots import claims_forest
    from tests.figure_checks import check_figure

    long = "a very long claim title that a paper might print for one of its findings, longer than a panel"
    ab, bc = P.label([A, B]), P.label([B, C])
    _job(tmp_path, write_job, h, {u: {"best layer pair": h(0.30, 0.27, 0.33, nulls={"chance": CHANCE})} for u in (ab, bc)})
    cf = _yaml(tmp_path, extra=f"""  - id: second
    title: "{long}"
    seed_value: "rises"
    seed_models_text: "X"
    forms:
      - reading: project
        about: set
        models: [{A}, {B}, {C}]
        notebook: {NB}
        record: alignment_competence
        scopes: [best layer pair]
        rule: {{at_least: 0}}
""")
    fig = claims_forest(claims.evaluate(tmp_path, cf), claims=cf)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    left, right = [ax for ax in fig.axes if ax.get_visible()][:2]
    t1, t2 = left._left_title.get_window_extent(r), right._left_title.get_window_extent(r)  # the loc="left" titles
    assert t1.x1 <= right.get_tightbbox(r).x0 and t2.x1 <= fig.bbox.x1  # no title runs over a neighbour or the edge
    assert "\n" in right.get_title(loc="left")
    assert all(len(line) <= 44 for t in left.get_yticklabels() for line in t.get_text().splitlines())
    check_figure(fig)
