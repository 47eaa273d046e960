"""report.build on a small synthetic run root (no notebook is executed): the index shows every
job's section and its key figures (img tags whose files exist), the executed notebooks become
HTML, and nothing warns."""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import nbformat
import pytest

from geolip_lib import report, results

matplotlib.use("Agg")
pytestmark = pytest.mark.unit

JOBS = {"01_alpha": ["tiny-a", "tiny-b"], "02_beta": ["all"]}


def _png(path: Path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    ax.set_title(title)
    fig.savefig(path)
    plt.close(fig)


def _job(root: Path, notebook: str, job: str, k: int) -> None:
    d = root / notebook / job
    d.mkdir(parents=True)
    _png(d / "curve.png", f"curve {job}")
    _png(d / "extra.png", f"extra {job}")
    head = {"cv": results.headline(0.2 + k / 100, interval={"lo": 0.19 + k / 100, "hi": 0.21 + k / 100,
                                                          "level": 0.95, "method": "bootstrap"},
                                   nulls={"gaussian": 0.5}, label="CV", fmt=".3f"),
            "n": results.headline(100 + k, interval="exact", label="rows", fmt="d")}
    (d / "metrics.json").write_text(json.dumps({
        "headline": head, "parameters": {"SEED": k},
        "figures": [{"file": "curve.png", "title": f"curve {job}", "key": True},
                    {"file": "extra.png", "title": f"extra {job}"}],
        "provenance": {"git": {"commit": "0" * 40, "dirty": False}, "versions": {"python": "3"},
                       "device": {"kind": "cpu", "count": 1, "name": "cpu"}, "wall_time_s": 1.0 + k}}))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    png = base64.b64encode((d / "curve.png").read_bytes()).decode()
    cell = nbformat.v4.new_code_cell("job.figure(fig, 'curve')", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})]
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Notebook {notebook}\n\n**Question.** Does {notebook} hold?"),
                cell]
    nbformat.write(nb, str(d / "executed.ipynb"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("run_root")
    k = 0
    for nb, jobs in JOBS.items():
        for job in jobs:
            _job(root, nb, job, k)
            k += 1
    paths = report.build("synthetic", root, pdf=False)
    return root, paths


def test_build_writes_the_index_and_every_executed_html(built):
    root, paths = built
    assert paths == [root / "index.html"]
    for nb, jobs in JOBS.items():
        for job in jobs:
            page = (root / nb / job / "executed.html").read_text(encoding="utf-8")
            assert "data:image/png;base64," in page           # the figure output is in the page
            # no warning / stderr output block (the template's CSS names the mime type too)
            assert not re.search(r"<div[^>]*data-mime-type=.application/vnd\.jupyter\.stderr", page)


def test_index_has_every_jobs_section_and_its_figures(built):
    root, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    for nb, jobs in JOBS.items():
        assert f"<h2 id='{nb}'" in index and f"Notebook {nb}" in index and f"Does {nb} hold?" in index
        for job in jobs:
            assert f"href='{nb}/{job}/executed.html'" in index   # the job's row / thumbnail links its notebook
    srcs = re.findall(r"<img src='([^']+)'", index)
    assert srcs, "no figures in the index"
    for src in srcs:
        assert src.startswith("data:image/png;base64,") or (root / src).is_file(), src
    for nb in JOBS:  # the lead job's key figure (figures of the same name are shown once per notebook)
        assert f"{nb}/{JOBS[nb][0]}/curve.png" in srcs
    assert "CV" in index and "gaussian: 0.5" in index and "Provenance" in index
    assert (root / "_static" / "mathjax" / "MathJax.js").is_file()


def test_index_has_no_warning_or_failure_blocks(built, capsys):
    root, _ = built
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "class='fail'" not in index and "FAILED" not in index
    assert not re.search(r"warning", index, flags=re.I)
    assert "Traceback" not in index


def test_what_a_reader_meets_links_resolve_nothing_from_the_network(built):
    """Every relative href/src of every page resolves, no page fetches from the network, no live
    markup; each executed notebook carries its figure inline."""
    root, _ = built
    assert report.checks.problems(root) == []
    for page in report.checks.pages(root):
        if page.name == "executed.html":
            assert "data:image/png;base64," in page.read_text(encoding="utf-8")


def test_what_a_person_sees_fits_the_window_and_has_no_empty_section(built):
    """The index laid out in a 1280 px window is no wider than it; no section is empty."""
    root, _ = built
    assert report.checks.reader_view_problems(root) == []
    assert report.checks.page_width(root / "index.html")["width"] <= report.checks.WINDOW_PX
