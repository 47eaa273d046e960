"""Claims are data: params/claims/*.yaml validated like the params files (one line naming the
file and the key), seed 001's transcription, and the worked example: another table, the same
verdict page, no code."""
from __future__ import annotations

import pytest
import yaml

from geolip_lib import claims
from geolip_lib.claims import HELD, HELD_NULL, NOT_HELD, UNDECIDED
from geolip_lib.claims.registry import CLAIMS_DIR
from geolip_lib.params import ParamsError

pytestmark = pytest.mark.unit

MINIMAL = {"name": "paper-x", "title": "Paper X, table 2", "source": "Paper X (2026), table 2",
           "claims": [{"id": "cv", "title": "CV", "seed_value": "0.21", "seed_models_text": "T5",
                       "forms": [{"reading": "both", "models": ["t5-small"], "notebook": "01_embedding_terrain",
                                  "record": "pentachoron_cv", "rule": {"equals": "0.21"}}]}]}


def write(tmp_path, data, name="paper-x"):
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data, allow_unicode=True))
    return p


def test_every_shipped_claims_file_loads():
    assert {"seed-001", "example-grounding"} <= set(claims.claim_files())
    for name in claims.claim_files():
        cs = claims.load(name)
        assert cs.claims and cs.file == f"params/claims/{name}.yaml"


def test_seed_001_transcribes_the_table_and_the_cells():
    cs = claims.load("seed-001")
    assert cs.claims == claims.CLAIMS
    cv = claims.claim("pentachoron_cv")
    assert [f.reading for f in cv.forms] == ["table", "seed", "project"] and "PCA-projected" in cv.forms[1].representation
    assert cv.forms[2].scopes == ("embedding_content",) and cv.forms[2].by == "project"  # no special tokens
    corr = claims.claim("cross_layer_corr")
    assert len(corr.forms[0].models) == 9 and len(corr.forms[1].models) == 7
    assert "Q, K, V, O" in corr.forms[0].name and "fused QKV, mlp_up" in corr.forms[1].name
    assert "project's own" in claims.claim("phase_boundary").forms[0].name
    assert claims.claim("phase_boundary").forms[0].power is not None
    lift = claims.claim("modulator_lift").forms[0]
    assert lift.rule.kind == "contains" and lift.requires == {"as_seed_measured": True}  # the seed's +152 % as printed
    assert lift.rule_for("t5-small", "pearson").target == pytest.approx(1.52)
    assert "project's rule" in claims.claim("modulator_lift").forms[1].note  # the half-of-seed rule, justified
    assert corr.forms[0].by == "project" and corr.forms[1].by == "seed"  # whose reading each is
    assert corr.forms[0].whose("qwen3.5-4b") == "extrapolation" and corr.forms[1].whose("t5-small") == "extrapolation"
    assert cv.forms[0].whose("t5-base") == "extrapolation" and cv.forms[0].whose("t5-small") == "seed"
    assert "lift AND coherence" in claims.claim("modulator_coherence").forms[0].rule.text
    assert {"modulator_cv_band", "modulator_coherence"} <= set(claims.CLAIM_IDS)  # the rest of the best result
    q = claims.claim("q_sparsity").forms[0]
    assert q.rule_for("t5-small").inside(0.9365) and not q.rule_for("t5-small").inside(0.9375)


@pytest.mark.parametrize("edit,key,words", [
    (lambda d: d.update(titel="x"), "titel", "unknown key"),
    (lambda d: d["claims"][0]["forms"][0]["rule"].update(band=["0.2", "0.3"]), "claims.0.forms.0.rule",
     "exactly one of"),
    (lambda d: d["claims"][0]["forms"][0].update(rule={"equals": "ninety"}), "claims.0.forms.0.rule",
     "not a printed number"),
    (lambda d: d["claims"][0]["forms"][0].update(notebook="99_nothing"), "claims.0.forms.0.notebook", "no notebook"),
    (lambda d: d["claims"][0]["forms"][0].update(reading="paper"), "claims.0.forms.0.reading", "table"),
    (lambda d: d["claims"][0].pop("forms"), "claims.0.forms", "required key is missing"),
    (lambda d: d["claims"].append(dict(d["claims"][0])), "<root>", "unique"),
    (lambda d: d.update(name="paper-y"), "name", "must equal the file name"),
    # a claims file is data
    (lambda d: d["claims"][0]["forms"][0].update(notebook="../../../../tmp/x/evil/nb"), "claims.0.forms.0.notebook",
     "not a safe name"),
    (lambda d: d["claims"][0]["forms"][0].update(notebook="01_EMBEDDING_TERRAIN"), "claims.0.forms.0.notebook",
     "no notebook"),
    (lambda d: d["claims"][0].update(null_sentence="{value:>100000000}"), "claims.0.null_sentence", "format spec"),
    (lambda d: d["claims"][0].update(null_sentence="{null.__class__.__mro__}"), "claims.0.null_sentence",
     "not allowed"),
    (lambda d: d["claims"][0].update(null_sentence="{nope}"), "claims.0.null_sentence", "not allowed"),
    (lambda d: d["claims"][0].update(null_sentence="{0}"), "claims.0.null_sentence", "not allowed"),
    (lambda d: d["claims"][0].update(null_sentence="{null!r}"), "claims.0.null_sentence", "conversion"),
    (lambda d: d["claims"][0].update(null_sentence="{null"), "claims.0.null_sentence", "not a template"),
    (lambda d: d["claims"][0].update(scale=float("nan")), "claims.0.scale", "finite"),
    (lambda d: d["claims"][0]["forms"][0].update(reference={"m": float("nan")}), "claims.0.forms.0.reference.m",
     "finite"),
    (lambda d: d["claims"][0]["forms"][0].update(rule={"at_least": float("inf")}), "claims.0.forms.0.rule.at_least",
     "finite"),
    (lambda d: d["claims"][0]["forms"][0].update(record="pentachoron_vc"), "claims.0.forms.0.record",
     "no notebook records metrics.claims.pentachoron_vc"),
    (lambda d: d["claims"][0]["forms"][0].update(extrapolated={"t5-xxl": "x"}), "claims.0.forms.0.extrapolated",
     "not among the reading's models"),
])
def test_a_bad_claims_file_is_one_line_naming_the_file_and_the_key(tmp_path, edit, key, words):
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    edit(data)
    with pytest.raises(ParamsError) as exc:
        claims.load(write(tmp_path, data))
    msg = str(exc.value)
    assert "\n" not in msg and "paper-x.yaml" in msg and f"key '{key}'" in msg and words in msg, msg


def test_every_record_a_shipped_claims_file_names_is_recorded_by_some_notebook():
    """The known records are derived from the producers' code (claims/recorded.py), so a name
    the notebooks stop writing fails here and at load, before any kernel."""
    from geolip_lib.claims.recorded import recorded_quantities
    known = recorded_quantities()
    assert {"pentachoron_cv", "q_sparsity", "qk_cross_balance", "qk_self_balance", "cross_layer_corr",
            "position_crystallization", "phase_boundary", "modulator_lift", "modulator_lift_cv",
            "modulator_lift_coherence"} <= known
    for name in claims.claim_files():
        for c in claims.load(name).claims:
            for f in c.forms:
                assert f.record is None or f.record in known, (name, c.id, f.record)


def test_the_null_sentence_is_rendered_without_formatting():
    from geolip_lib.claims.schema import render_sentence, sentence_problem
    assert render_sentence("The {null} gives {value} {{too}}.", null="{value}", value="0.2") == \
        "The {value} gives 0.2 {too}."
    assert sentence_problem("The {null} gives {value}.") is None


@pytest.mark.parametrize("name,words", [("seed-0001", "unknown claims file 'seed-0001'"),
                                        ("../seed-001", "not a safe name"), ("nope.yaml", "does not exist")])
def test_notebook_15s_claims_parameter_is_checked_by_name_before_a_kernel(name, words):
    with pytest.raises(ParamsError) as exc:
        claims.check_name(name)
    assert "\n" not in str(exc.value) and words in str(exc.value) and str(exc.value).startswith("CLAIMS: ")
    assert claims.check_name("seed-001").name == "seed-001.yaml"


def test_an_unknown_name_and_broken_yaml_are_one_line(tmp_path):
    with pytest.raises(ParamsError, match="unknown claims file 'nope'.*known: .*seed-001"):
        claims.load("nope")
    p = tmp_path / "paper-x.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        claims.load(p)


def test_the_worked_example_gives_the_same_verdict_page_without_code(tmp_path, write_job, h):
    """params/claims/example-grounding.yaml: a headline reached by its path (PR / dim of 01) and a
    claims record (02's Q sparsity) -> verdicts, the summary, the side-by-side table, the figure."""
    write_job(tmp_path, "01_embedding_terrain", "t5-small", headline={"pr_over_dim": h(
        0.545, 0.54, 0.55, nulls={"gaussian": {"value": 0.98, "interval": (0.97, 0.99)}})})
    write_job(tmp_path, "01_embedding_terrain", "all-minilm-l6-v2", headline={"pr_over_dim": h(
        0.535, 0.53, 0.54, nulls={"gaussian": {"value": 0.534, "interval": (0.53, 0.54)}})})
    write_job(tmp_path, "02_weight_topology", "t5-small", {"q_sparsity": {"encoder+decoder/self": h(
        0.937, exact=True, nulls={"random init": {"value": 0.80, "interval": (0.79, 0.81)}})}})
    write_job(tmp_path, "02_weight_topology", "t5-base", {"q_sparsity": {"encoder+decoder/self": h(
        0.996, exact=True, nulls={"random init": {"value": 0.99}})}})
    rows = claims.evaluate(tmp_path, "example-grounding")
    by = {(r["claim"], r["model"]): r for r in rows}
    assert by[("pr_over_dim", "t5-small")]["verdict"] == HELD
    assert by[("pr_over_dim", "all-minilm-l6-v2")]["verdict"] == HELD_NULL  # a stand-in, its null gives it too
    assert by[("q_sparsity_range", "t5-small")]["verdict"] == HELD
    assert by[("q_sparsity_range", "t5-base")]["verdict"] == NOT_HELD  # 99.6 % is outside [92.5, 99.5) %
    summary = claims.summarize(rows, "example-grounding")
    assert [s["verdict"] for s in summary] == [HELD, NOT_HELD]
    assert list(claims.summary_frame(summary).columns) == claims.SUMMARY_COLUMNS
    side = claims.readings_frame(summary)
    assert side["as the table says"].tolist() == side["as the seed measured"].tolist() == [HELD, NOT_HELD]
    from geolip_lib.claims.plots import claims_forest
    from tests.figure_checks import check_figure

    check_figure(claims_forest(rows, claims="example-grounding"))
    assert UNDECIDED not in {s["verdict"] for s in summary}
    assert CLAIMS_DIR.joinpath("example-grounding.yaml").is_file()
