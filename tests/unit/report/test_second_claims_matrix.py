"""A second claims file evaluated by a second notebook-15 job (CLAIMS: ethayarajh-2019)
is a second verdict matrix on the findings page, "Do Ethayarajh (2019)'s claims hold?", beside
seed 001's, each with its own figure; a root with seed 001's job alone is unchanged."""
from __future__ import annotations

import html

import pytest

from geolip_lib import claims
from geolip_lib.report import pages, sections
from geolip_lib.report.records import JobRecord
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit
NB16 = "16_contextual_geometry"


def _nulls(g, r):
    return {"gaussian": {"value": g, "interval": (g - 0.01, g + 0.01)},
            "random_init": {"value": r, "interval": (r - 0.01, r + 0.01)}}


@pytest.fixture
def root(tmp_path):
    scope = "block outputs"
    _write_job(tmp_path, NB16, "all-minilm-l6-v2", {
        "anisotropy": {scope: _h(0.40, 0.35, 0.45, nulls=_nulls(0.0, 0.9))},  # the random init gives it too
        "self_similarity_drop": {scope: _h(0.30, 0.25, 0.35, nulls=_nulls(0.0, 0.0))},  # held
        "mev": {scope: _h(0.30, 0.28, 0.32, nulls=_nulls(0.25, 0.6))},  # the project's unadjusted reading: not held
        "adjusted_mev": {scope: _h(0.04, 0.01, 0.07, nulls=_nulls(0.0, 0.1))}})  # the paper's: undecided, straddles 5 %
    groups = {sections.CLAIMS_NOTEBOOK: [
        JobRecord(sections.CLAIMS_NOTEBOOK, "ethayarajh-2019", tmp_path / sections.CLAIMS_NOTEBOOK / "ethayarajh-2019",
                  {"metrics": {"claims_file": "params/claims/ethayarajh-2019.yaml"}}),
        JobRecord(sections.CLAIMS_NOTEBOOK, "all", tmp_path / sections.CLAIMS_NOTEBOOK / "all", {})]}
    for r in groups[sections.CLAIMS_NOTEBOOK]:
        r.path.mkdir(parents=True)
    return tmp_path, groups


def test_each_claims_job_is_read_with_its_file_seed_first(root):
    _, groups = root
    assert [f for _, f in sections.claims_records(groups)] == ["seed-001", "ethayarajh-2019"]
    assert sections.claims_record(groups).job_id == "all"
    rec = JobRecord(sections.CLAIMS_NOTEBOOK, "x", root[0], {"parameters": {"CLAIMS": "example-grounding"}})
    assert sections.claims_file_of(rec) == "example-grounding"  # a job that stopped before recording its file


def test_the_second_matrix_gives_the_stand_in_its_verdicts(root):
    out_root, groups = root
    page = sections.seed_claims_section(out_root, groups, embed=True, claims_file="ethayarajh-2019")
    assert "<h2 class=''>Do Ethayarajh (2019)'s claims hold?</h2>" in page
    assert "id='claims-ethayarajh-2019'" in page and "verdict on the paper's models" in html.unescape(page)
    assert ">paper's value</th>" in html.unescape(page) and ">seed value</th>" not in page  # the paper's claims
    assert "trained stand-ins" in page and ">all-minilm-l6-v2</th>" in page
    rows = claims.evaluate(out_root, "ethayarajh-2019")
    got = {(r["claim"], r["form"]): r["verdict"] for r in rows if r["model"] == "all-minilm-l6-v2"}
    assert got == {("anisotropy", 0): claims.HELD_NULL, ("anisotropy", 1): claims.HELD_NULL,
                   ("self_similarity_drop", 0): claims.HELD, ("static_mev", 0): claims.UNDECIDED,
                   ("static_mev", 1): claims.NOT_HELD}
    paper = {r["model"] for r in rows if r["seed model"]}
    assert paper == {"bert-base-uncased", "gpt2", "elmo"}
    assert all(r["verdict"] == claims.NOT_TESTED for r in rows if r["seed model"])
    assert (out_root / "_static" / "claims_matrix-claims-ethayarajh-2019.png").stat().st_size > 1000


def test_the_findings_page_has_both_matrices(root):
    out_root, groups = root
    body = pages.findings_body("p", groups, out_root=out_root, embed=True)
    first, second = body.index("Do the seed's claims hold?"), body.index("Do Ethayarajh (2019)'s claims hold?")
    assert first < second
    assert (out_root / "_static" / "claims_matrix.png").is_file() is False  # seed 001 has no model column here
    details: list = []
    pages.findings_body("p", groups, out_root=out_root, embed=True, details=details)
    assert len(details) == 2 and "id='claims-ethayarajh-2019-details'" in details[1]


def test_one_claims_job_is_one_matrix(root):
    out_root, groups = root
    only = {sections.CLAIMS_NOTEBOOK: groups[sections.CLAIMS_NOTEBOOK][1:]}
    body = pages.findings_body("p", only, out_root=out_root, embed=True)
    assert body.count("<section class='claims'") == 1 and "Ethayarajh" not in body


def test_a_paper_model_without_a_params_file_says_so_under_its_verdict(root):
    """Ethayarajh's BERT-base, GPT-2 and ELMo have no params file: the "verdict on the paper's models" cell says
    they are not in the model set (it said nothing), and a seed's claim keeps its paper-profile hint."""
    out_root, groups = root
    page = html.unescape(sections.seed_claims_section(out_root, groups, embed=True, claims_file="ethayarajh-2019"))
    assert page.count("not in this project's model set: bert-base-uncased, gpt2, elmo</span>") == 3
    seed = html.unescape(sections.seed_claims_section(out_root, groups, embed=True))
    assert "not in this project's model set" not in seed and "tested by the paper profile" in seed
