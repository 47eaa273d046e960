"""The report's first screen as a reader meets it: a root that holds no model of the seed's (one's own
model) opens with that model's headline numbers and its trajectory, the claims after; a demo-like root
opens with the verdict matrix, its legend above it; the page and the matrix figure colour a verdict alike;
a range with negative bounds reads "−0.535 to −0.204 %"; the PDF's page never says "hover"; the note
"notebook 15 did not run" stands only where it did not."""
from __future__ import annotations

import json
import re

import matplotlib
import pytest
from matplotlib.colors import to_hex

from geolip_lib import claims, plotting, report, results, trajectory
from geolip_lib.claims import tables as claims_tables
from geolip_lib.claims.plots import claims_matrix
from geolip_lib.metrics.intervals import format_value
from geolip_lib.report import checks, own_model, pages, sections
from geolip_lib.report.records import collect
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit

RI = {"random_init": {"value": 0.93, "interval": (0.92, 0.94)}}
STAND_INS = ("all-minilm-l6-v2", "antiberty", "smollm2-135m")
MINE = "my-llama"


def _provenance(root, source: str) -> None:
    for f in root.glob("*/*/metrics.json"):
        rec = json.loads(f.read_text())
        if rec.get("model"):
            rec["provenance"] = {"models": [{"name": rec["model"], "source": source}]}
        f.write_text(json.dumps(rec))


TRAJ = {"notebook": "01_embedding_terrain", "points": [
    {"label": "step0", "step": 0, "values": {"pentachoron_cv": 0.41}, "rss_mib": 100.0},
    {"label": "step1000", "step": 1000, "values": {"pentachoron_cv": 0.25}, "rss_mib": 101.0}]}
HEAD = {"pentachoron_cv": results.headline(0.25, interval=(0.24, 0.26), label="pentachoron CV",
                                           nulls={"random_init": {"value": 0.41, "interval": (0.40, 0.42)}})}


@pytest.fixture(scope="module")
def own_root(tmp_path_factory):
    """``run_all.py --models my-llama``: one's own model (a local folder) through 01 (with checkpoints) and
    02, notebook 15 after them; no model of the seed's."""
    root = tmp_path_factory.mktemp("own")
    _write_job(root, "01_embedding_terrain", MINE, {"pentachoron_cv": {"embedding": _h(0.25, 0.24, 0.26)}},
               headline=HEAD, trajectory=TRAJ)
    _write_job(root, "02_weight_topology", MINE, {"q_sparsity": {"encoder/self": _h(0.80, exact=True, nulls=RI)}},
               headline={"q_sparsity": results.headline(0.80, interval="exact", label="Q sparsity (|w| < 0.1)",
                                                        nulls=RI)})
    _write_job(root, sections.CLAIMS_NOTEBOOK, "all", headline={})
    _provenance(root, "local")
    job = root / "01_embedding_terrain" / MINE
    fig = trajectory.figure(TRAJ, HEAD, title="my-llama over training")
    (job / "trajectory.png").write_bytes(plotting.png_bytes(fig))
    matplotlib.pyplot.close(fig)
    rec = json.loads((job / "metrics.json").read_text())
    rec["figures"] = [{"file": "trajectory.png", "title": "my-llama over training", "key": True}]
    (job / "metrics.json").write_text(json.dumps(rec))
    (root / ".profile.json").write_text(json.dumps({"profile": "demo", "selection": {"models": [MINE]}}))
    report.build("demo", root, pdf=False)
    return root


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory):
    """What the demo profile leaves: its trained stand-ins through 01 and 02, one with two negative scopes of
    a claim (a range), notebook 15 after them."""
    root = tmp_path_factory.mktemp("demo")
    for i, m in enumerate(STAND_INS):
        cv = 0.19 + 0.02 * i
        _write_job(root, "01_embedding_terrain", m,
                   {"pentachoron_cv": {"embedding": _h(cv, cv - .01, cv + .01, nulls={"gaussian": {"value": 0.4}})}})
        q = {"encoder/self": _h(-0.00535, exact=True, nulls=RI), "decoder/self": _h(-0.00204, exact=True, nulls=RI)} \
            if m == "antiberty" else {"encoder/self": _h(0.80 + 0.05 * i, exact=True, nulls=RI)}
        _write_job(root, "02_weight_topology", m, {"q_sparsity": q})
    _write_job(root, sections.CLAIMS_NOTEBOOK, "all", headline={})
    _provenance(root, "package")
    (root / ".profile.json").write_text(json.dumps({"profile": "demo"}))
    report.build("demo", root, pdf=False)
    return root


def _index(root) -> str:
    return (root / "index.html").read_text(encoding="utf-8")


def test_a_root_without_a_seed_model_opens_with_that_models_numbers(own_root):
    assert own_model.own_models(collect(own_root)) == [MINE]
    page = _index(own_root)
    text = checks.html_text(own_root / "index.html")
    assert "Your model: my-llama" in text
    head = page.index("<section class='yours'")
    assert head < page.index("<table class='matrix'>") and head < page.index("What this report tests")
    lead = page[head:page.index("</section>", head)]
    # the headline numbers as a reader sees them: value [interval], the null below, the notebook named
    assert format_value(0.25, (0.24, 0.26)) in lead and f"random_init: {format_value(0.41, (0.40, 0.42))}" in lead
    assert "Q sparsity (|w| &lt; 0.1)" in lead and f"random_init: {format_value(0.93, (0.92, 0.94))}" in lead
    assert lead.index("pentachoron CV") < lead.index("Q sparsity")  # in notebook order
    # its trajectory: the figure beside the table, the table of checkpoints under it
    assert "<figure class='thumb traj'>" in lead and "trajectory.png" in lead
    assert "Geometry over training — my-llama" in lead and "step1000" in lead
    assert checks.problems(own_root) == []  # every link (the trajectory figure's too) resolves


def test_the_own_models_table_is_on_the_first_screen(own_root):
    got = checks.page_width(own_root / "index.html")
    assert got["leadkind"] == "yours" and got["lead"][1] <= checks.FIRST_SCREEN_PX, got
    assert checks.below_first_screen(own_root) == []
    line = checks._below_first_screen({"lead": [900, 990], "leadkind": "yours", "matrix": [1500, 1600]}, 1280, 800)
    assert line and "the headline table of your model starts at y = 900" in line[0]


def test_a_root_with_the_projects_models_opens_with_the_claims(demo_root):
    assert {"all-minilm-l6-v2", "t5-small"} <= own_model.seed_models()  # the paper profile and the claims files
    assert own_model.own_models(collect(demo_root)) == []
    page = _index(demo_root)
    assert "<section class='yours'" not in page and "Your model" not in page
    got = checks.page_width(demo_root / "index.html")
    assert got["leadkind"] == "matrix" and got["lead"] == got["matrix"] and got["matrix"][1] <= checks.FIRST_SCREEN_PX


def test_the_legend_stands_above_the_matrix(demo_root):
    page = _index(demo_root)
    section = page[page.index("<section class='claims' id='seed-claims'>"):]
    assert section.index("<ul class='legend'>") < section.index("<table class='matrix'>")


def _css_colour(page: str, cls: str) -> str:
    return re.search(r"\." + re.escape(cls) + r"\{color:(#[0-9a-f]{6})", page).group(1)


def test_a_verdict_has_one_colour_on_the_page_and_in_its_figure(demo_root):
    page = _index(demo_root)
    m = claims_tables.matrix(claims.evaluate(demo_root))
    fig = claims_matrix(m)
    ax = fig.axes[0]
    cols = m["seed"] + m["stand-ins"]
    markers = [ln for ln in ax.lines if len(ln.get_xdata()) == 1]  # one per cell, claims down, models across
    seen = set()
    for k, (c, x) in enumerate((c, x) for c in m["claims"] for x in cols):
        v = m["cells"][(c.id, x)]["verdict"]
        cls = claims.VERDICT_CLASS[v]
        assert f"<td class='mx {cls}'" in page  # the page's cell has the verdict's class ...
        assert to_hex(markers[k].get_color()) == _css_colour(page, cls), (c.id, x, v)  # ... and its colour
        seen.add(v)
    assert {claims.NOT_HELD, claims.NOT_TESTED} <= seen
    for v, cls in claims.VERDICT_CLASS.items():  # the legend's colours are the figure legend's
        assert _css_colour(page, cls) == claims_tables.VERDICT_COLORS[v]
    matplotlib.pyplot.close(fig)


def test_a_range_with_negative_bounds_reads_to_with_minus_signs(demo_root):
    page = _index(demo_root)
    text = checks.html_text(demo_root / "index.html")
    assert "−0.535 to −0.204 % (2 scopes)" in text
    assert "--0." not in text and "–-0." not in text
    assert "it is −0.535 to 90 %" in page[page.index("<ul class='bottom'>"):]  # the bottom line's range too
    m = claims_tables.matrix(claims.evaluate(demo_root))
    fig = claims_matrix(m)
    assert "−0.535 to −0.204 %" in [t.get_text() for t in fig.axes[0].texts]  # and the figure's cell
    matplotlib.pyplot.close(fig)
    raw = json.loads((demo_root / "02_weight_topology" / "antiberty" / "metrics.json").read_text())
    assert raw["metrics"]["claims"]["q_sparsity"]["encoder/self"]["value"] == -0.00535  # the record is unchanged


def _visible(markup: str) -> str:
    return re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)\b.*?</\1>", "", markup, flags=re.S))


@pytest.mark.parametrize("root", ["demo_root", "own_root"])
def test_the_pdfs_page_never_says_hover(root, request):
    out = request.getfixturevalue(root)
    groups = collect(out)
    details: list[str] = []
    pdf_page = pages.findings_body("demo", groups, embed=True, prefix="../", out_root=out, details=details)
    assert "hover" not in _visible(pdf_page + "".join(details)).lower()
    assert "The glossary at the end says what each column measures." in pdf_page
    assert ("Your model: my-llama" in pdf_page) == (root == "own_root")  # the PDF leads as the page does
    assert "Hover a column header" in _index(out)  # the HTML keeps its tooltips and says so


def test_the_notebook_15_note_stands_only_where_it_did_not_run(demo_root, tmp_path):
    did_not_run = "did not run on this output root"
    assert did_not_run not in _index(demo_root)  # 15 ran: its matrix, no note
    _write_job(tmp_path, "02_weight_topology", "all-minilm-l6-v2",
               {"q_sparsity": {"encoder/self": _h(0.8, exact=True, nulls=RI)}})
    assert did_not_run in pages.findings_body("demo", collect(tmp_path), out_root=tmp_path)  # 15 did not run
    # 15 ran for another claims file only: its matrix, and a line that says so (not "did not run")
    _write_job(tmp_path, sections.CLAIMS_NOTEBOOK, "ethayarajh-2019", headline={},
               claims_file="params/claims/ethayarajh-2019.yaml")
    body = pages.findings_body("demo", collect(tmp_path), out_root=tmp_path)
    assert did_not_run not in body
    assert "Seed 001's claims were not evaluated on this root: notebook 15 ran here only for ethayarajh-2019" in body
    # the seed's job stopped: the line says so and points at its failure
    failed = tmp_path / sections.CLAIMS_NOTEBOOK / "all.failed"
    failed.mkdir(parents=True)
    (failed / "error.txt").write_text("KeyError: 'x'\n")
    body = pages.findings_body("demo", collect(tmp_path), out_root=tmp_path)
    assert did_not_run not in body and "notebook 15's job all did not finish" in body
    assert "FAILED all: KeyError: &#x27;x&#x27;" in body  # under notebook 15, where the line points
