"""Reliability probes of the report: a hostile colleague's job ids, notebooks and metrics.json, an
unlucky half-written root, a PDF step that cannot finish. The report is built from a synthetic
run root (no kernel starts); one build with the PDF is shared by the probes that read it.

What a person sees is checked on the built files: no live markup from the inputs, no file from
outside a job directory, nothing loaded from the network, every relative link resolving, one
line per thing left out, and the rest of the report intact.
"""
from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import time
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

import matplotlib
import matplotlib.pyplot as plt
import nbformat
import pytest

from geolip_lib import plotting, report, results
from geolip_lib.report import checks, printing
from geolip_lib.report.notebook_doc import clean_html

matplotlib.use("Agg")
pytestmark = pytest.mark.unit

EVIL_ID = "a'><img src=x onerror=alert(1)>"
EVIL_NB = "01_evil\"><svg onload=alert(3)>"  # one path component: no "/"
SCRIPT_MD = "**Question.** Is $h \\,/\\!/\\, (H/H_{kv})$ safe? <script>alert(2)</script> <img src=x onerror=alert(4)>"
HOSTILE_OUTPUT = "<b>bold</b><script>alert(5)</script><img src=x onerror=alert(6)><a href='javascript:alert(7)'>x</a>"


def _png(path: Path) -> None:
    fig, ax = plt.subplots(figsize=(1.5, 1.5))
    ax.plot([0, 1], [1, 0])
    fig.savefig(path)
    plt.close(fig)


def _metrics(figures: list, **extra) -> dict:
    head = {"cv": results.headline(0.2, interval={"lo": 0.19, "hi": 0.21, "level": 0.95, "method": "bootstrap"},
                                   nulls={"gaussian": 0.5}, label="CV", fmt=".3f"),
            "never": results.headline(None, label="never measured")}
    return {"headline": head, "figures": figures, "parameters": {},
            "provenance": {"git": {"commit": "0" * 40, "dirty": False}, "versions": {"python": "3"},
                           "device": {"kind": "cpu", "count": 1, "name": "cpu"}, "wall_time_s": 1.0}, **extra}


def _job(root: Path, notebook: str, job: str, metrics: dict, markdown: str = SCRIPT_MD) -> Path:
    d = root / notebook / job
    d.mkdir(parents=True)
    _png(d / "curve.png")
    (d / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                            "version_minor": 0}}
    png = base64.b64encode((d / "curve.png").read_bytes()).decode()
    figure = nbformat.v4.new_code_cell("job.figure(fig, 'curve')", execution_count=1)
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})]
    hostile = nbformat.v4.new_code_cell("display(HTML(...))", execution_count=2)
    hostile.outputs = [nbformat.v4.new_output("display_data", data={"text/html": HOSTILE_OUTPUT, "text/plain": "x"}),
                       nbformat.v4.new_output("display_data", data={"application/javascript": "alert(8)",
                                                                    "text/plain": "js"}),
                       # nbconvert writes width/height unquoted into <img> and a "filenames" entry as its src
                       nbformat.v4.new_output("display_data", data={"image/png": png}, metadata={
                           "image/png": {"width": "1 onerror=alert(9)"}, "height": "2 onload=alert(10)",
                           "filenames": {"image/png": "https://example.org/tracker.png"}})]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Notebook {notebook}\n\n{markdown}"), figure, hostile]
    nbformat.write(nb, str(d / "executed.ipynb"))
    return d


def hostile_root(root: Path) -> Path:
    """A run root with every kind of bad input the probes name."""
    ok_fig = {"file": "curve.png", "title": "a curve", "key": True}
    _job(root, "01_alpha", EVIL_ID, _metrics([ok_fig]))
    _job(root, EVIL_NB, "all", _metrics([ok_fig]))
    _job(root, "02_figs", "traversal", _metrics([ok_fig, {"file": "/etc/passwd", "title": "passwd"},
                                                {"file": "../../escape.png", "title": "up"},
                                                {"file": "kernel.log", "title": "a log"}]))
    (root / "escape.png").write_bytes(b"\x89PNG outside the job directory")
    untitled = _job(root, "02_figs", "untitled", _metrics([{"file": "plot.png", "key": True}]))
    _png(untitled / "plot.png")
    _job(root, "03_shape", "headline-list", {**_metrics([ok_fig]), "headline": [1, 2]})
    _job(root, "03_shape", "cell-int", {**_metrics([ok_fig]), "headline": {"cv": 5}})
    _job(root, "03_shape", "figures-str", {**_metrics([]), "figures": "curve.png",
                                           "provenance": {"git": "main", "models": [3]}})
    (root / "04_half" / "no-metrics").mkdir(parents=True)           # a job folder a run never finished
    (root / "04_half" / ".killed.partial").mkdir(parents=True)      # left by a killed run
    _job(root, "04_half", "done", _metrics([ok_fig]), markdown="**Question.** Fine.")
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = hostile_root(tmp_path_factory.mktemp("hostile"))
    t0 = time.perf_counter()
    paths = report.build("hostile", root, pdf=True)
    return root, paths, time.perf_counter() - t0


# ------------------------------------------------------------------------------ stored XSS
def test_hostile_job_ids_and_notebook_names_are_text_not_markup(built):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    refs = checks.parse(root / "index.html")
    assert not refs.handlers, "an event handler reached the index"
    assert "<img src=x" not in index and "<script>alert" not in index
    assert html.escape(EVIL_ID) in index            # shown, as text
    links = [v for t, n, v in refs.refs if n == "href" and "onerror" in unquote(v)]
    assert links and all((root / unquote(urlsplit(v).path)).is_file() for v in links)  # one path step, resolving


def test_a_script_in_a_notebook_never_runs_in_any_page(built):
    root, _, _ = built
    assert checks.live_markup(root) == []
    for page in checks.pages(root):
        scripts = re.findall(r"<script[^>]*>(.*?)</script>", page.read_text(encoding="utf-8"), flags=re.S | re.I)
        assert not [js for js in scripts if "alert(" in js], (page, "a notebook's script is live")
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in index  # the question shows the text it had
    executed = (root / "01_alpha" / EVIL_ID / "executed.html").read_text(encoding="utf-8")
    assert "<b>bold</b>" in executed                          # harmless markup of an output stays


def test_clean_html_keeps_tables_and_inline_images_and_drops_remote_ones():
    kept = clean_html("<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
                      "<img src='data:image/png;base64,AAAA' alt='x'><img src='https://example.org/t.png'>"
                      "<h2 id='h'>H</h2><a href='https://example.org'>ref</a><iframe src='x'></iframe>")
    assert "<th>a</th>" in kept and "data:image/png;base64,AAAA" in kept and "<h2 id=\"h\">" in kept
    assert "example.org/t.png" not in kept and "<iframe" not in kept and 'href="https://example.org"' in kept


# ------------------------------------------------------------------------------ figures (item 3)
def test_a_figure_outside_its_job_directory_is_refused_with_one_line(built, capsys):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    doc = (root / "_static" / "report_document.html").read_text(encoding="utf-8")
    passwd = base64.b64encode(Path("/etc/passwd").read_bytes()[:30]).decode()[:24]
    outside = base64.b64encode((root / "escape.png").read_bytes()).decode()[:16]
    assert passwd not in doc and outside not in doc
    where = root / "02_figs" / "traversal" / "metrics.json"
    for i, name in ((1, "/etc/passwd"), (2, "../../escape.png")):
        line = (f"{where}: field 'figures[{i}].file' names {name!r}, outside its job directory; refused "
                f"(a figure is read only from inside {where.parent})")
        assert html.escape(line) in index
    assert html.escape(f"{where}: field 'figures[3].file' names 'kernel.log', not an image") in index
    assert "traversal/curve.png" in index  # the job's own figure is still shown


# ------------------------------------------------------------------------------ PDF (item 4)
def test_the_pdf_of_a_hostile_root_is_printed_within_its_budget(built):
    root, paths, seconds = built
    assert root / "report.pdf" in paths
    assert seconds < printing.PRINT_BASE_S + 60, f"the build took {seconds:.0f} s"
    assert report.pdf_image_count(root / "report.pdf") >= 1
    assert "a curve" in report.pdf_text(root / "report.pdf")


def test_an_alert_in_a_printed_page_does_not_stall_chromium(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>t</title></head><body><p>before</p><script>alert(1);confirm(2);"
                    "prompt(3);window.print()</script><img src=x onerror=alert(4)><p>after the dialogs</p>"
                    "</body></html>", encoding="utf-8")
    t0 = time.perf_counter()
    printing.print_pdf(page, tmp_path / "out.pdf", timeout=60)
    assert time.perf_counter() - t0 < 30
    assert "after the dialogs" in report.pdf_text(tmp_path / "out.pdf")
    assert not list(tmp_path.glob(".*"))  # the printed copy and the temporary PDF are gone


def test_the_print_budget_scales_with_the_pages_and_is_bounded():
    small = printing.print_budget("<p>x</p>")
    large = printing.print_budget("<p>" + "word " * 200_000 + "</p>" + "<img src=a>" * 400)
    assert printing.PRINT_BASE_S <= small < large <= printing.PRINT_MAX_S
    assert printing.print_budget("<tr>" * 100_000) == printing.PRINT_MAX_S


def test_a_pdf_that_cannot_be_made_is_one_line_and_the_old_pdf_is_removed(tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    _job(root, "01_alpha", "a", _metrics([{"file": "curve.png", "title": "a curve", "key": True}]),
         markdown="**Question.** Fine.")
    (root / "report.pdf").write_bytes(b"%PDF-1.4 an older run's report")
    monkeypatch.setattr(printing, "PRINT_BASE_S", 0)
    monkeypatch.setattr(printing, "PRINT_PER_PAGE_S", 0)
    paths = report.build("p", root, pdf=True)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert paths == [root / "index.html"] and not (root / "report.pdf").exists()
    pages = printing.estimated_pages((root / "_static" / "report_document.html").read_text(encoding="utf-8"))
    assert 1 <= pages <= 5
    assert err == ["warning: report.pdf not written: chromium did not finish printing report_document.html within "
                   f"0 s (the budget for ~{pages} pages); the HTML report is complete, rerun with --report-only to "
                   "try again (the report.pdf of an earlier run was removed)"], err
    assert not [p for p in root.rglob(".*") if p.is_file()]  # no temporary file left


def test_no_chromium_is_one_line_naming_the_package(tmp_path, monkeypatch, capsys):
    root = tmp_path / "root"
    _job(root, "01_alpha", "a", _metrics([]), markdown="**Question.** Fine.")
    monkeypatch.setattr(printing, "find_chromium", lambda: None)
    report.build("p", root, pdf=True)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err == ["warning: report.pdf not written: report.pdf needs Chromium: install Debian's 'chromium' "
                   "package (make setup does it as root), or rerun with --no-pdf"]


# ------------------------------------------------------------------------------ half-written root (item 8)
def test_a_half_written_root_lists_its_incomplete_jobs(built):
    root, _, _ = built
    recs = {r.job_id: r for r in report.collect(root)["04_half"]}
    assert {k: r.status for k, r in recs.items()} == {"done": "ok", "killed": "incomplete", "no-metrics": "incomplete"}
    index = (root / "index.html").read_text(encoding="utf-8")
    assert html.escape(f"INCOMPLETE no-metrics: incomplete: {root / '04_half' / 'no-metrics'} has no metrics.json "
                       "(the job did not finish); rerun with --resume") in index
    assert html.escape(f"INCOMPLETE killed: incomplete: a run stopped while writing it "
                       f"({root / '04_half' / '.killed.partial'} is left); rerun with --resume") in index
    assert re.search(r"\d+ completed job\(s\), 0 failed, 2 incomplete", index)


# ------------------------------------------------------------------------------ wrong shapes (item 12)
def test_a_metrics_json_of_the_wrong_shape_is_one_line_per_field(built):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    d = root / "03_shape"
    for line in (f"{d / 'headline-list' / 'metrics.json'}: field 'headline': [1, 2] is not of type 'object'",
                 f"{d / 'cell-int' / 'metrics.json'}: field 'headline.cv': 5 is not of type 'object', 'null'",
                 f"{d / 'figures-str' / 'metrics.json'}: field 'figures': 'curve.png' is not of type 'array'",
                 f"{d / 'figures-str' / 'metrics.json'}: field 'provenance.git': 'main' is not of type "
                 "'object', 'null'",
                 f"{d / 'figures-str' / 'metrics.json'}: field 'provenance.models[0]': 3 is not of type 'object'"):
        assert html.escape(line + "; left out of the report (rerun the job to rewrite its metrics.json)") in index
    for job in ("headline-list", "cell-int", "figures-str"):  # the rest of each job is reported
        assert f"03_shape/{job}/executed.html" in index


def test_a_figure_without_a_title_is_captioned_with_its_file_name(built):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    where = root / "02_figs" / "untitled" / "metrics.json"
    assert html.escape(f"{where}: field 'figures[0].title' is missing; 'plot.png' is captioned with its "
                       "file name") in index
    assert "alt='plot.png'" in index and (root / "report.pdf").is_file()


# ------------------------------------------------------------------------------ offline, links (15-16)
def test_no_page_loads_anything_from_the_network(built):
    root, _, _ = built
    assert checks.remote_loads(root) == []
    assert len(checks.pages(root)) == 10  # index, 8 executed notebooks, the PDF's document


def test_every_relative_link_of_every_page_resolves(built):
    root, _, _ = built
    assert checks.broken_links(root) == []


def test_the_claims_box_shows_only_when_notebook_15_ran(tmp_path):
    root = tmp_path / "root"
    _job(root, "01_alpha", "a", _metrics([{"file": "curve.png", "title": "a curve", "key": True}]),
         markdown="**Question.** Fine.")
    report.build("p", root, pdf=False)
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "Do the seed's claims hold?" not in index and "15_seed_claims/" not in index
    assert "notebook <code>15_seed_claims</code>, which did not run on this output root" in index
    _job(root, "15_seed_claims", "all", _metrics([{"file": "curve.png", "title": "claims", "key": True}]),
         markdown="**Question.** Do they?")
    report.build("p", root, pdf=False)
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "Do the seed's claims hold?" in index and "href='15_seed_claims/all/executed.html'>notebook 15</a>" in index
    assert checks.problems(root) == []


# ------------------------------------------------------------------------------ math, empty columns (17-18)
def test_tex_in_a_question_reaches_mathjax_intact(built):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "\\(h \\,/\\!/\\, (H/H_{kv})\\)" in index


def test_a_column_empty_in_every_row_is_dropped(built):
    root, _, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "never measured" not in index and re.search(r"<th( title='[^']*')?>CV</th>", index)  # the column's meaning as a tooltip
    rows = [{"a": 1, "b": None, "c": "–", "d": ""}, {"a": 2, "b": "", "c": None, "d": "x"}]
    assert report.sections.nonempty_columns(rows, ["a", "b", "c", "d"]) == ["a", "d"]


def test_cjk_tokens_have_a_font_in_every_page_and_in_figures(built):
    """Notebook 01's id-range table shows WordPiece tokens such as "##永": set-up installs Debian's
    fonts-droid-fallback, every page names it after its own fonts, and matplotlib falls back to it."""
    root, _, _ = built
    fonts = subprocess.run(["fc-list", ":charset=6c38", "family"], capture_output=True, text=True, timeout=30).stdout
    assert plotting.FALLBACK_FONT in fonts, "no font for CJK glyphs: run make setup (as root) for fonts-droid-fallback"
    for page in checks.pages(root):
        assert f"'{plotting.FALLBACK_FONT}'" in page.read_text(encoding="utf-8"), page
    with plt.rc_context(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plotting.setup()
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.set_title("##永 ##江 ##沢")
        plotting.png_bytes(fig)
        plt.close(fig)
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_a_claims_record_of_the_wrong_shape_leaves_one_line_and_the_rest(tmp_path, monkeypatch):
    """Notebook 15 ran, but evaluating the claims fails on a job's record: one line, the rest is built."""
    root = tmp_path / "root"
    _job(root, "01_alpha", "a", _metrics([{"file": "curve.png", "title": "a curve", "key": True}]),
         markdown="**Question.** Fine.")
    _job(root, "15_seed_claims", "all", _metrics([]), markdown="**Question.** Do they?")

    def broken(_root):
        raise AttributeError("'list' object has no attribute 'get'")

    monkeypatch.setattr(report.sections.claims, "evaluate", broken)
    report.build("p", root, pdf=False)
    index = (root / "index.html").read_text(encoding="utf-8")
    assert (f"The seed's claims could not be evaluated from {root} (AttributeError: &#x27;list&#x27; object has no "
            "attribute &#x27;get&#x27;); the rest of the report is built.") in index
    assert "id='01_alpha'" in index and "a curve" in index


def test_every_wrong_entry_is_left_out_and_only_it():
    """Eleven bad figures among good ones, a bad model among good ones: exactly those leave."""
    from geolip_lib.report.records import check_shape

    figs = [{"file": f"f{i}.png", "title": str(i)} if i % 3 else {"file": i} for i in range(14)]
    data = {"figures": figs, "provenance": {"models": [{"name": "x"}, 3, {"name": "y"}]},
            "headline": {"cv": {"interval": {"lo": "a"}}, "ok": {"value": 1.0}}}
    lines = check_shape(data, Path("m.json"))
    assert [f["title"] for f in data["figures"]] == [str(i) for i in range(14) if i % 3]
    assert data["provenance"]["models"] == [{"name": "x"}, {"name": "y"}] and list(data["headline"]) == ["ok"]
    assert len(lines) == 5 + 1 + 1 and lines[0].startswith("m.json: field 'figures[0].file': 0 is not of type")
    assert lines[1].startswith("m.json: field 'figures[3].file'") and lines[4].startswith("m.json: field 'figures[12]")


def test_a_symlinked_job_or_notebook_folder_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    _job(outside, "nb", "secret", _metrics([{"file": "curve.png", "title": "secret curve", "key": True}]))
    root = tmp_path / "root"
    _job(root, "01_alpha", "a", _metrics([{"file": "curve.png", "title": "a curve", "key": True}]),
         markdown="**Question.** Fine.")
    (root / "01_alpha" / "linked").symlink_to(outside / "nb" / "secret")
    (root / "02_linked").symlink_to(outside / "nb")
    assert {nb: [r.job_id for r in recs] for nb, recs in report.collect(root).items()} == {"01_alpha": ["a"]}


def test_report_only_on_a_half_written_root_says_so_on_the_console(tmp_path, capsys):
    root = tmp_path / "root"
    _job(root, "01_alpha", "done", _metrics([]), markdown="**Question.** Fine.")
    (root / "01_alpha" / "cut").mkdir()
    report.build("p", root, pdf=False)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert err == [f"warning: 01_alpha / cut: incomplete: {root / '01_alpha' / 'cut'} has no metrics.json (the job did "
                   "not finish); rerun with --resume"]


# ------------------------------------------------------------------------------ round four: executed.ipynb
def test_an_oversized_or_linked_executed_notebook_is_a_problem_line_and_the_rest_built(tmp_path, monkeypatch):
    """A 1.2 GB executed.ipynb reached nbconvert whole: now each job's notebook is read bounded
    (64 MB, no link, 64 levels); the one over the limit, and one that is a link, get no page and a
    problem line; the other job's page and the PDF's document are built."""
    from geolip_lib.report import notebook_doc
    root = tmp_path / "root"
    md = "**Question.** Fine."
    fig = _metrics([{"file": "curve.png", "title": "a curve", "key": True}])
    good = _job(root, "01_alpha", "a", fig, markdown=md)
    big = _job(root, "01_alpha", "b", fig, markdown=md + " " + "x" * 20_000)
    linked = _job(root, "01_alpha", "c", fig, markdown=md)
    (linked / "executed.ipynb").rename(tmp_path / "elsewhere.ipynb")
    (linked / "executed.ipynb").symlink_to(tmp_path / "elsewhere.ipynb")
    limit = (good / "executed.ipynb").stat().st_size + 1000
    assert (big / "executed.ipynb").stat().st_size > limit
    monkeypatch.setattr(notebook_doc, "MAX_NOTEBOOK_BYTES", limit)
    report.build("p", root, pdf=False)
    assert (good / "executed.html").is_file()
    assert not (big / "executed.html").exists() and not (linked / "executed.html").exists()
    index = (root / "index.html").read_text(encoding="utf-8")
    assert f"no page for this job: {big / 'executed.ipynb'}: " in index
    assert f"over the limit of {limit} for an executed notebook; not read (rerun the job)" in index
    assert f"no page for this job: {linked / 'executed.ipynb'}: cannot be read (Too many levels of symbolic links)" \
        in index
    nb, _ = notebook_doc.document_notebook("p", report.collect(root), "findings")
    assert len(nb.cells) > 2
