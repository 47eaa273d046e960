"""The first screen of ``index.html`` (a 1280 x 800 window) shows the verdicts — the
matrix started at y ~ 930 when the run's account, the long note and "What this report tests" stood
above it — and a claim no model of the seed's tested says what would test it (the paper profile)."""
from __future__ import annotations

import dataclasses
import json

import pytest

from geolip_lib import claims, report
from geolip_lib.claims import tables as claims_tables
from geolip_lib.report import checks, sections
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit

STAND_INS = ("all-minilm-l6-v2", "antiberty", "smollm2-135m")
RI = {"random_init": {"value": 0.93, "interval": (0.92, 0.94)}}


@pytest.fixture(scope="module")
def stand_in_root(tmp_path_factory):
    """What the demo profile leaves: three trained stand-ins through 01 and 02, notebook 15 after them."""
    root = tmp_path_factory.mktemp("demo")
    for i, m in enumerate(STAND_INS):
        cv = 0.19 + 0.02 * i
        _write_job(root, "01_embedding_terrain", m,
                   {"pentachoron_cv": {"embedding": _h(cv, cv - .01, cv + .01, nulls={"gaussian": {"value": 0.4}})}})
        _write_job(root, "02_weight_topology", m,
                   {"q_sparsity": {"encoder/self": _h(0.80 + 0.05 * i, exact=True, nulls=RI)}})
    _write_job(root, sections.CLAIMS_NOTEBOOK, "all", headline={})
    for f in root.glob("*/*/metrics.json"):
        rec = json.loads(f.read_text())
        rec["provenance"] = {"models": [{"name": f.parent.name, "source": "package"}]}
        f.write_text(json.dumps(rec))
    (root / ".profile.json").write_text(json.dumps({"profile": "demo"}))
    report.build("demo", root, pdf=False)
    return root


def test_the_verdict_matrix_is_on_the_first_screen(stand_in_root):
    got = checks.page_width(stand_in_root / "index.html")["matrix"]
    assert got is not None, "the index has a verdict matrix"
    top, first_row = got
    assert 0 < top < first_row <= checks.FIRST_SCREEN_PX, got
    assert checks.below_first_screen(stand_in_root) == []
    index = (stand_in_root / "index.html").read_text(encoding="utf-8")
    assert index.index("<table class='matrix'>") < index.index("What this report tests")  # the account follows


def test_a_matrix_below_the_first_screen_is_one_line(tmp_path):
    page = tmp_path / "index.html"
    page.write_text("<html><body><div style='height:1000px'>the header</div><table class='matrix'><thead><tr>"
                    "<th>claim</th></tr></thead><tbody><tr><td>pentachoron CV</td></tr></tbody></table></body></html>")
    (line,) = checks.below_first_screen(tmp_path)
    assert "verdict matrix starts at y = 10" in line and "1280 x 800" in line
    page.write_text("<html><body><p>no claims ran</p></body></html>")
    assert checks.below_first_screen(tmp_path) == []  # no matrix: nothing to say


def test_a_claim_the_seeds_models_did_not_test_says_what_would(stand_in_root):
    m = claims_tables.matrix(claims.evaluate(stand_in_root))
    assert m["seed"] == [] and m["stand-ins"] == list(STAND_INS)
    html = sections.matrix_table(m)
    untested = [c for c in m["claims"] if m["verdict"][c.id] == claims.NOT_TESTED]
    assert len(untested) == len(m["claims"])  # no model of the seed's ran here
    assert html.count("tested by the paper profile") == len(untested)
    hint = sections.untested_hint(next(c for c in m["claims"] if c.id == "phase_boundary"))
    assert "10 on t5-small (hub, GPU box)" in hint and "PROFILE=paper" in hint
    cv = sections.untested_hint(next(c for c in m["claims"] if c.id == "pentachoron_cv"))
    assert "01 and 07 on 5 seed models" in cv and "qwen3.5-4b" in cv  # the tooltip names them all
    # a claim whose models have no params file (another paper's ELMo) says so; one the paper profile does not
    # run but whose params file exists (all-mpnet-base-v2) gets no hint
    def only(name):
        return dataclasses.replace(m["claims"][0], forms=tuple(dataclasses.replace(f, models=(name,))
                                                               for f in m["claims"][0].forms))
    assert ">not in this project's model set: elmo</span>" in sections.untested_hint(only("elmo"))
    assert sections.untested_hint(only("all-mpnet-base-v2")) == ""
    # a claim tested on a seed model has no hint
    m["verdict"] = {**m["verdict"], "phase_boundary": claims.HELD}
    assert sections.matrix_table(m).count("tested by the paper profile") == len(untested) - 1
