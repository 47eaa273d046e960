"""A findings report read at a glance — the claims matrix and its bottom lines, tables
that fit a 1280 px window, no word split in the PDF, no empty section, a header that names the
run, trajectories as tables, sections not run said where their figures would be."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from geolip_lib import claims, results, trajectory
from geolip_lib.claims import tables as claims_tables
from geolip_lib.claims.plots import claims_matrix
from geolip_lib.metrics.intervals import format_value
from geolip_lib.report import checks, glossary, notebook_doc, pages, sections
from geolip_lib.report.records import JobRecord
from tests.figure_checks import check_figure, overlapping_texts
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit

RI = {"random_init": {"value": 0.999, "interval": (0.995, 1.0)}}


def _provenance(root: Path) -> None:
    """Each job's provenance names its model and source (tiny for the tiny models)."""
    for f in root.glob("*/*/metrics.json"):
        m = json.loads(f.read_text())
        name = f.parent.name
        m["provenance"] = {"models": [{"name": name, "source": "tiny" if name.startswith("tiny") else "hub"}]}
        f.write_text(json.dumps(m))


@pytest.fixture
def claims_root(tmp_path):
    """A seed model (t5-small), two trained stand-ins and a tiny random model."""
    for m, q in (("t5-small", 0.80), ("all-minilm-l6-v2", 0.43), ("my-model", 0.78), ("tiny-t5", 0.99)):
        _write_job(tmp_path, "02_weight_topology", m, {
            "q_sparsity": {"encoder+decoder/self": _h(q, q - .01, q + .01, nulls=RI),
                           "encoder/self": _h(q, exact=True, nulls=RI), "decoder/self": _h(q + .05, exact=True, nulls=RI)}})
    _provenance(tmp_path)
    return tmp_path


def test_the_matrix_has_the_seeds_models_then_trained_stand_ins_and_never_a_tiny_one(claims_root):
    rows = claims.evaluate(claims_root)
    m = claims_tables.matrix(rows, pipeline_checks=claims.evaluation.pipeline_checks(claims_root))
    assert m["seed"] == ["t5-small"] and m["stand-ins"] == ["all-minilm-l6-v2", "my-model"]
    assert m["pipeline checks"] == ["tiny-t5"]
    seed = m["cells"][("q_sparsity", "t5-small")]
    assert seed["verdict"] == claims.NOT_HELD and seed["text"] == "80.0 [79.0, 81.0] %"  # the seed's own pooled scope
    stand = m["cells"][("q_sparsity", "all-minilm-l6-v2")]
    assert stand["verdict"] == claims.NOT_HELD and stand["text"] == "43–48 % (3 scopes)"
    assert m["cells"][("pentachoron_cv", "t5-small")]["verdict"] == claims.NOT_TESTED
    line = m["bottom line"]["q_sparsity"]
    assert line.startswith("Q sparsity (|w| < 0.1): not held on the seed's models (80 %, below the seed's value (93.7 %")
    assert "on 2 trained stand-ins it is 43–83 %, below the seed's value" in line and "not held on both" in line
    assert "random init gives 99.9 %" in line
    assert m["bottom line"]["phase_boundary"] == ("phase boundary: not tested on the seed's models here; no trained "
                                                  "stand-in measured it.")
    html = sections.matrix_table(m)
    assert html.count("<tr>") == 2 + len(claims.CLAIMS) and "tiny-t5" not in html
    assert html.index(">t5-small<") < html.index(">all-minilm-l6-v2<")
    fig = claims_matrix(m)
    assert overlapping_texts(fig) == []
    check_figure(fig)


def test_a_status_folds_over_scopes_like_the_summary():
    f = claims_tables.fold_verdicts
    assert f([claims.HELD, claims.NOT_HELD, claims.UNDECIDED]) == claims.NOT_HELD
    assert f([claims.HELD, claims.UNDECIDED]) == claims.UNDECIDED
    assert f([claims.HELD, claims.HELD_NULL, claims.FORCED]) == claims.HELD_NULL
    assert f([claims.FORCED, claims.NOT_TESTED]) == claims.FORCED and f([]) == claims.NOT_TESTED
    assert set(claims_tables.VERDICT_GLYPHS) == set(claims.STATUSES) == set(claims_tables.VERDICT_MEANING)
    assert len(set(claims_tables.VERDICT_GLYPHS.values())) == len(claims.STATUSES)  # a shape each: greyscale reads


def test_many_models_transpose_the_matrix(claims_root):
    rows = claims.evaluate(claims_root)
    for i in range(sections.MATRIX_MAX_COLUMNS):
        rows += [{**r, "model": f"other-{i}"} for r in rows if r["model"] == "my-model"]
    m = claims_tables.matrix(rows)
    assert len(m["stand-ins"]) > sections.MATRIX_MAX_COLUMNS
    html = sections.matrix_table(m)
    assert html.count("<tr>") == 2 + len(m["seed"]) + len(m["stand-ins"])  # a row per model
    assert html.count("<th>") + html.count("<th ") == 1 + len(claims.CLAIMS)


def _rec(tmp_path, job, headline, **data) -> JobRecord:
    (tmp_path / job).mkdir(exist_ok=True)
    return JobRecord("01_x", job, tmp_path / job, {"headline": headline, **data})


def test_a_column_repeating_another_is_left_out_and_said(tmp_path):
    recs = []
    for i, job in enumerate(("a", "b")):
        cv = results.headline(0.2 + i / 10, interval=(0.15 + i / 10, 0.25 + i / 10), label="pentachoron CV",
                              nulls={"gaussian": {"value": 0.4}, "random_init": {"value": 0.41}})
        twin = {**cv, "label": "pentachoron CV vs init", "nulls": {"random_init": {"value": 0.41}}}
        recs.append(_rec(tmp_path, job, {"pentachoron_cv": cv, "pentachoron_cv_init": twin,
                                         "pr": results.headline(3.0 + i, interval="exact", label="PR / D")}))
    html = sections.composite_table(recs)
    assert html.count(">pentachoron CV<") == 1 and ">pentachoron CV vs init<" not in html
    assert "pentachoron CV vs init (= pentachoron CV)" in html
    assert "participation ratio" in html  # the header's tooltip says what PR is
    assert sections.duplicate_columns(recs, ["pentachoron_cv", "pr"]) == {}


def test_a_wide_table_is_transposed_or_split_to_fit(tmp_path):
    many = {f"k{i}": results.headline(float(i), interval="exact", label=f"metric {i}") for i in range(12)}
    html = sections.composite_table([_rec(tmp_path, "a", many), _rec(tmp_path, "b", many)])
    assert "composite transposed" in html and html.count("<th class='metric'") == 12
    jobs = [_rec(tmp_path, f"j{i}", many) for i in range(14)]  # 12 metrics x 14 jobs: split into tables
    html = sections.composite_table(jobs)
    widths = [t.split("</thead>")[0].count("<th") - 1 for t in html.split("<table")[1:]]
    assert len(widths) >= 2 and max(widths) <= sections.MAX_TABLE_COLUMNS


def test_the_header_names_the_run_not_the_profiles_description(tmp_path):
    rec = _rec(tmp_path, "my-phi3", {}, provenance={"models": [{"name": "my-phi3", "source": "local"}]})
    groups = {"01_embedding_terrain": [rec]}
    desc = "all-MiniLM-L6-v2 (real weights) plus one tiny model per family"
    narrowed = pages.run_description("demo", groups, {"description": desc, "selection": {"models": ["my-phi3"],
                                                                                         "notebooks": None},
                                                      "profile models": ["all-minilm-l6-v2", "tiny-bert"]})
    assert "narrowed by <code>--models my-phi3</code>" in narrowed and "my-phi3" in narrowed and desc not in narrowed
    outside = pages.run_description("demo", groups, {"description": desc, "profile models": ["tiny-bert"]})
    assert desc not in outside  # an older root without a recorded selection: its models decide
    full = pages.run_description("demo", groups, {"description": desc, "profile models": ["my-phi3"]})
    assert desc in full and "narrowed" not in full


def test_the_runner_records_the_selection_and_the_report_reads_it(tmp_path):
    from geolip_lib.report.builder import recorded_selection
    from geolip_lib.runner.jobs import claim_root, root_profile

    claim_root(tmp_path, "demo", {"models": ["my-phi3"], "notebooks": None})
    assert root_profile(tmp_path) == "demo"
    assert recorded_selection(tmp_path) == {"models": ["my-phi3"], "notebooks": None}
    claim_root(tmp_path, "demo", {"models": None, "notebooks": None})  # the next run: the whole profile
    assert recorded_selection(tmp_path) == {"models": None, "notebooks": None}


def test_sections_not_run_are_said_where_their_figures_would_be(tmp_path):
    why = "a text model: no vision tower"
    rec = _rec(tmp_path, "gpt2", {}, not_run={"13. Vision-tower embedding tables": why})
    html = sections.not_run_html([rec, _rec(tmp_path, "bert", {}, not_run={"13. Vision-tower embedding tables": why})])
    assert html.count("<li>") == 1 and "not run on gpt2, bert: a text model: no vision tower" in html
    nb = nbformat.v4.new_notebook()
    shown = nbformat.v4.new_code_cell("fig")
    shown.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "x"})]
    empty = nbformat.v4.new_code_cell("tables(lm)")
    empty.outputs = [nbformat.v4.new_output("stream", name="stdout", text="skipped\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_markdown_cell("## 12. Spectra"), shown,
                nbformat.v4.new_markdown_cell("## 13. Vision-tower embedding tables\n\nThe patch tables."), empty,
                nbformat.v4.new_markdown_cell("## 14. Summary"), nbformat.v4.new_markdown_cell("Words.")]
    nbformat.write(nb, str(rec.path / "executed.ipynb"))
    cells = notebook_doc.narrative_cells(rec)
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert "## 12. Spectra" in text and "## 14. Summary" in text and "The patch tables." not in text
    assert f"<b>13. Vision-tower embedding tables</b> — left out: {why}" in text
    rec.data["not_run"] = {}
    assert "left out: skipped" in "\n".join(c.source for c in notebook_doc.narrative_cells(rec)
                                           if c.cell_type == "markdown")  # else the line its cells printed


def test_a_trajectory_is_a_table_of_readable_names_kinds_and_its_null(tmp_path):
    traj = {"notebook": "01_embedding_terrain", "points": [
        {"label": "step0", "step": 0, "values": {"pentachoron_cv": 0.41, "pr_over_dim": 0.9}, "rss_mib": 100.0},
        {"label": "step1000", "step": 1000, "values": {"pentachoron_cv": 0.25, "pr_over_dim": 0.5}, "rss_mib": 101.0}]}
    head = {"pentachoron_cv": results.headline(0.25, interval=(0.24, 0.26), label="pentachoron CV",
                                               nulls={"random_init": {"value": 0.41, "interval": (0.40, 0.42)}}),
            "pr_over_dim": results.headline(0.5, interval="exact", label="PR / D")}
    frame = trajectory.table(traj, head)
    assert list(frame.columns) == ["checkpoint", "training step", "pentachoron CV (sampled)", "PR / D (exact)",
                                   "resident memory (MiB)"]
    assert frame.iloc[-1]["checkpoint"] == "random init (null)" and frame.iloc[-1]["pentachoron CV (sampled)"] == \
        format_value(0.41, (0.40, 0.42))  # the null's value [95 % prediction interval]
    assert list(trajectory.table(traj).columns)[2:4] == ["pentachoron CV", "PR / D"]  # readable without a headline
    rec = _rec(tmp_path, "tiny-gpt2-checkpoints", head, metrics={"trajectory": traj})
    html = sections.trajectory_html([rec])
    assert "pentachoron CV (sampled)" in html and "cosine_mean" not in html and "step1000" in html
    fig = trajectory.figure(traj, head, title="t")
    assert not any(ax.get_legend() for ax in fig.axes) and fig.legends  # one legend, off the panels
    assert fig.axes[0].get_xlabel() == "training step"
    check_figure(fig)


def test_checkpoints_without_steps_are_named_on_the_axis_and_the_null_stands_before_them():
    """rxnfp's pretrained -> fine-tuned folders carry no step: the x axis names them (prefix they
    share dropped), and the random-init null stands one place before the first checkpoint, not on it."""
    traj = {"notebook": "02_weight_topology", "points": [
        {"label": f"rxnfp-bert-{n}", "step": i, "values": {"q_sparsity": v}, "rss_mib": 1.0}
        for i, (n, v) in enumerate([("pretrained", 0.938), ("ft-10k-25s", 0.937), ("ft", 0.945)])]}
    head = {"q_sparsity": results.headline(0.945, interval="exact", label="Q |w|<0.1",
                                           nulls={"random_init": {"value": 0.99, "interval": (0.98, 1.0)}})}
    fig = trajectory.figure(traj, head, title="t")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["random init", "pretrained", "ft-10k-25s", "ft"]
    assert list(ax.get_xticks()) == [-1, 0, 1, 2] and ax.get_xlabel() == "checkpoint (params file's order)"
    null_x = [line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()) == 1]
    assert set(null_x) == {-1.0}  # the marker and its two caps
    check_figure(fig)


def test_broken_words_are_found_and_breaks_between_parts_are_not():
    source = "the pentachoron CV of all-minilm-l6-v2 and the definition of metrics.claims.cross_layer_corr data set"
    pdf = "the pentacho\nron CV of all-minilm-\nl6-v2 and the definitio\nn of metrics.claims.\ncross_layer_corr data\nset"
    assert checks.broken_words(pdf, source) == ["definitio|n (definition)", "pentacho|ron (pentachoron)"]
    assert checks.broken_words(source, source) == []


def test_an_empty_section_is_found(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<h2>One</h2><p>text</p><h2>Two</h2><div> </div><h2>Three</h2><img src='x.png'>")
    assert checks.empty_sections(page) == ["p.html: section 'Two' is empty"]


def test_page_width_is_measured_as_laid_out(tmp_path):
    narrow = tmp_path / "index.html"
    narrow.write_text("<html><body><p>short</p></body></html>")
    assert checks.page_width(narrow)["width"] <= checks.WINDOW_PX
    (tmp_path / "wide.html").write_text("<html><body><div style='overflow-x:auto'><table><tr>"
                                        "<td style='min-width:2000px'>wide</td></tr></table></div></body></html>")
    got = checks.page_width(tmp_path / "wide.html")
    assert got["width"] > 2000 and got["wide"]  # a table inside a scrolling box counts with its full width
    assert not list(tmp_path.glob(".*measure*"))  # the measuring copy is removed


def test_every_glossary_term_and_seed_has_one_line():
    assert len(glossary.SEED_DOCUMENTS) == 5 and all(len(w) < 300 for _, _, w in glossary.SEED_DOCUMENTS)
    assert "participation ratio" in glossary.explain("PR / D") and glossary.explain("nothing known") == ""
    assert "stand-in" in glossary.explain("trained stand-in")


def test_each_stand_in_says_what_it_is_beside_the_matrix(claims_root):
    """A verdict on a stand-in says what the stand-in is ("a Q4_K_M Coder model", "possibly
    fine-tuned", "Whisper, not T5"): the description its job's provenance records (else its params file's),
    under the matrix and in the column's tooltip, escaped, cut at DESCRIPTION_CHARS; tiny models never."""
    f = claims_root / "02_weight_topology" / "my-model" / "metrics.json"
    m = json.loads(f.read_text())
    m["provenance"]["models"][0]["description"] = "A Q4_K_M <b onmouseover=x>Coder</b> model,\n not the seed's Qwen3.5."
    f.write_text(json.dumps(m))
    g = claims_root / "02_weight_topology" / "tiny-t5" / "metrics.json"
    m = json.loads(g.read_text())
    m["provenance"]["models"][0]["description"] = "TINY"
    g.write_text(json.dumps(m))
    what = claims.model_descriptions(claims_root)
    assert what["my-model"] == "A Q4_K_M <b onmouseover=x>Coder</b> model, not the seed's Qwen3.5."
    assert "tiny-t5" not in what
    assert what["all-minilm-l6-v2"].startswith("sentence-transformers/all-MiniLM-L6-v2")  # from its params file
    assert "t5-small" in what  # a seed model ran here too: it is described in its header's tooltip
    rows = claims.evaluate(claims_root)
    mx = claims_tables.matrix(rows, pipeline_checks=claims.evaluation.pipeline_checks(claims_root))
    mx["descriptions"] = what
    html = sections.matrix_table(mx)
    assert "<b>my-model</b>: A Q4_K_M &lt;b onmouseover=x&gt;Coder&lt;/b&gt; model, not the seed&#x27;s Qwen3.5." in html
    assert "onmouseover=x>" not in html and "TINY" not in html
    assert "title='trained stand-in: A Q4_K_M &lt;b onmouseover=x&gt;" in html
    assert claims.describe("my-model", {"provenance": {"model": {"name": "my-model", "description": "x" * 900}}}) \
        == "x" * (claims.evaluation.DESCRIPTION_CHARS - 1) + "…"


def test_the_matrix_figure_keeps_each_cells_text_inside_its_column():
    """A forced cell's "nonzero balance 0.5 (256+ / 256− / 1024 zero per layer, 28 layers) · read on
    self-attention" was printed whole under its marker and ran over the claim labels of the figure."""
    from geolip_lib.claims.plots import FIGURE_CELL_CHARS, short_cell_text

    long = "nonzero balance 0.5 (256+ / 256− / 1024 zero per layer, 28 layers) · read on self-attention"
    assert short_cell_text(long) == "nonzero balance 0.5"
    assert short_cell_text("0.324 [0.310, 0.342]") == "0.324 [0.310, 0.342]"  # short: whole
    assert short_cell_text("99.1–99.8 % (4 scopes) and more words") == "99.1–99.8 %"
    cut = short_cell_text("x" * 60)
    assert len(cut) == FIGURE_CELL_CHARS and cut.endswith("…")


@pytest.mark.parametrize("n_cols,deq", [(1, False), (2, True), (4, True)])
def test_the_matrix_figure_prints_no_text_over_text(n_cols, deq):
    """The Ethayarajh figure printed "0.039 [0.033, 0.047]" into "0.347 [0.330, 0.363] (deq.)" (a fixed 1.25 in
    per column) and its longest row label ran to the edge: column and label widths now follow the texts."""
    from types import SimpleNamespace

    rows = [SimpleNamespace(id="a", title="anisotropic in every layer",
                            seed_value="mean cosine of random words well above 0, every layer"),
            SimpleNamespace(id="b", title="self-similarity lower in upper layers",
                            seed_value="anisotropy-adjusted self-similarity much lower in upper layers")]
    cols = [f"stand-in-model-{j}" for j in range(n_cols)]
    cells = {(r.id, x): {"verdict": claims.NOT_HELD if j % 2 else claims.HELD, "text": "0.347 [0.330, 0.363]",
                         "dequantized": deq} for r in rows for j, x in enumerate(cols)}
    fig = claims_matrix({"seed": [], "stand-ins": cols, "claims": rows, "cells": cells, "whose": "the paper's"},
                        "a title")
    assert overlapping_texts(fig) == []
    assert [t.get_text().split("\n")[1].split(":")[0] for t in fig.axes[0].get_yticklabels()] == ["paper", "paper"]
    check_figure(fig)
