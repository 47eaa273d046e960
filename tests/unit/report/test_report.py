"""What a person sees: figures in executed notebooks, the index and the PDF; a clean Chromium
console; provenance that is true; --resume re-running exactly the stale jobs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import run_all
from geolip_lib import report

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]

FIG_NB = [
    "from geolip_lib import metrics as M, results, runtime\nimport numpy as np\nimport matplotlib.pyplot as plt\n"
    "job = runtime.start('fig', globals(), load_model=False)\n"
    "x = np.random.default_rng(SEED).gamma(4.0, size=N)",
    "fig, ax = plt.subplots()\nax.hist(x, bins=30)\nax.set(title='Gamma draws', xlabel='x')\n"
    "job.figure(fig, 'hist', key=True)",
    "job.table([{'stat': 'mean', 'value': float(x.mean()), 'note': ''}, "
    "{'stat': 'std', 'value': float(x.std()), 'note': None}], caption='Moments')",
    "print('a sentence')\nimport tqdm.auto\nfor _ in tqdm.auto.tqdm(range(3)): pass",
    "job.finish({'n': N}, {'cv': results.headline(float(M.intervals.cv(x)), "
    "interval=M.intervals.bootstrap(x, M.intervals.cv, seed=SEED, what='draws'), nulls={'exponential': 1.0}, "
    "label='CV of draws'), 'n': results.headline(N, interval='exact', label='draws')})",
]


def _notebook(path: Path, cells: list[str], params: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Figure notebook\n\n**Question.** Does $\\sum_i x_i$ show?"),
                nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two jobs of a runtime notebook, run through run_all's CLI, with the report and PDF."""
    tmp = tmp_path_factory.mktemp("report")
    nbdir = tmp / "notebooks"
    nbdir.mkdir()
    _notebook(nbdir / "fig.ipynb", FIG_NB, "OUT_DIR = None  # job dir\nSEED = 0  # seed\nN = 300  # draws")
    prof = tmp / "p.yaml"
    prof.write_text("name: p\ndescription: report test\nnotebooks:\n  fig:\n    per_model: false\n    jobs:\n"
                    "      - {id: a, parameters: {N: 300}}\n      - {id: b, parameters: {N: 500}}\n", encoding="utf-8")
    out = tmp / "out"
    env = {**__import__("os").environ, "GEOLIP_NOTEBOOKS": str(nbdir)}
    env.pop("TQDM_DISABLE", None)  # run_all itself must keep progress bars out of the notebooks
    r = subprocess.run([sys.executable, "run_all.py", "--profile", str(prof), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr
    return {"out": out, "nbdir": nbdir, "prof": prof, "stderr": r.stderr, "env": env}


def _outputs(job: Path) -> list[dict]:
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_executed_notebook_shows_figures_tables_and_no_warnings(built):
    outs = _outputs(built["out"] / "fig" / "a")
    assert sum("image/png" in o.get("data", {}) for o in outs) == 1
    assert sum("text/html" in o.get("data", {}) for o in outs) == 2  # the moments table + the headline table
    moments = next("".join(o["data"]["text/html"]) for o in outs if "Moments" in "".join(o.get("data", {}).get(
        "text/html", "")))
    assert ">value<" in moments and ">note<" not in moments  # a column empty in every row is dropped
    text = json.dumps(outs)
    assert ".partial" not in text and "PosixPath" not in text
    job = built["out"] / "fig" / "a"
    assert ".partial" not in (job / "executed.ipynb").read_text()  # the injected OUT_DIR names the final dir
    assert ".partial" not in (job / "executed.html").read_text()
    streams = [o for o in outs if o["output_type"] == "stream"]
    assert all(o["name"] == "stdout" for o in streams), streams  # no stderr blocks (TqdmWarning, progress bars)
    assert (built["out"] / "fig" / "a" / "hist.png").stat().st_size > 1000


def test_console_has_one_line_per_job_and_no_kernel_noise(built):
    lines = [ln for ln in built["stderr"].splitlines() if ln.strip()]
    job_lines = [ln for ln in lines if " fig / " in ln and " start " not in ln]  # parallel runs also say "start"
    assert len(job_lines) == 2 and all("ok" in ln for ln in job_lines), lines
    assert not any("IPKernelApp" in ln or "Unable to parse" in ln or "Executing" in ln for ln in lines), lines


def test_metrics_record_intervals_figures_and_true_provenance(built):
    m = json.loads((built["out"] / "fig" / "a" / "metrics.json").read_text())
    head = m["headline"]["cv"]
    assert head["interval"]["lo"] < head["value"] < head["interval"]["hi"]
    assert head["nulls"]["exponential"]["separated"] is True  # Gamma(4) CV = 0.5, far from 1
    assert m["figures"] == [{"file": "hist.png", "title": "Gamma draws", "key": True}]
    p = m["provenance"]
    head_sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    assert p["git"] == {"commit": head_sha, "dirty": dirty}
    import numpy
    import torch

    assert p["versions"]["torch"] == torch.__version__.split("+")[0] or p["versions"]["torch"] == torch.__version__
    assert p["versions"]["numpy"] == numpy.__version__ and p["versions"]["python"] == sys.version.split()[0]
    assert set(p["versions"]) >= {"python", "torch", "transformers", "open_clip", "numpy", "geolip"}
    assert p["parameters"] == {"SEED": 0, "N": 300} == m["parameters"]
    assert p["wall_time_s"] > 0 and p["device"]["kind"] in ("cpu", "cuda")
    assert len(p["library_hash"]) == 64


def test_index_leads_with_findings(built):
    index = (built["out"] / "index.html").read_text()
    assert "<img src='fig/a/hist.png'" in index and "href='fig/a/executed.html'" in index  # thumbnail -> notebook
    assert "CV of draws" in index and "exponential: 1" in index and report.SEPARATED in index
    assert "Question." in index and "Provenance" in index
    assert index.index("Question.") < index.index("<table class='composite'")
    a = json.loads((built["out"] / "fig" / "a" / "metrics.json").read_text())["headline"]["cv"]
    from geolip_lib.metrics.intervals import format_value

    assert format_value(a["value"], a["interval"]) in index


def test_the_built_report_passes_the_reader_checks(built):
    """The report run_all built: links resolve, nothing from the network, no live markup; and what a
    person sees: no wider than a 1280 px window, no empty section, no word of the PDF split."""
    assert report.checks.problems(built["out"]) == []
    assert report.checks.reader_view_problems(built["out"]) == []


def test_pdf_embeds_images_and_leaves_code_out(built):
    pdf = built["out"] / "report.pdf"
    assert report.pdf_image_count(pdf) >= 3  # the key-figure thumbnail + each job's figure
    text = report.pdf_text(pdf)
    assert "geolip findings report" in text and "Does" in text
    assert "runtime.start" not in text and "a sentence" not in text  # no code, no printed streams


@pytest.mark.parametrize("page", ["index.html", "fig/a/executed.html", "_static/report_document.html"])
def test_pages_load_in_chromium_without_console_errors(built, page):
    msgs = report.console_messages(built["out"] / page)
    assert msgs == [], msgs


def test_resume_reruns_exactly_the_stale_jobs(built):
    out, prof = built["out"], built["prof"]
    cmd = [sys.executable, "run_all.py", "--profile", str(prof), "--out", str(out), "--resume", "--no-pdf"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=built["env"])
    assert r.returncode == 0 and r.stderr.count("skip  fig") == 2, r.stderr
    prof.write_text(prof.read_text().replace("{N: 500}", "{N: 400}"), encoding="utf-8")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=built["env"])
    assert "skip  fig / a" in r.stderr and "rerun fig / b: parameters changed: N 500 -> 400" in r.stderr, r.stderr
    assert json.loads((out / "fig" / "b" / "metrics.json").read_text())["parameters"]["N"] == 400
    nb = nbformat.read(str(built["nbdir"] / "fig.ipynb"), as_version=4)
    nb.cells[0].source += "\n\nAn edited narrative."
    nbformat.write(nb, str(built["nbdir"] / "fig.ipynb"))
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=built["env"])
    assert r.stderr.count("notebook fig changed") == 2, r.stderr


def test_stale_reasons_cover_model_params_and_library(built, monkeypatch):
    monkeypatch.setattr(run_all, "NOTEBOOKS", built["nbdir"])
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(built["nbdir"]))
    job = run_all.jobs_for_profile(str(built["prof"]))[0]
    assert run_all.stale_reasons(job, built["out"]) == []
    import geolip_lib.provenance as prov
    from geolip_lib.runner import resume as runner_resume

    monkeypatch.setattr(prov, "library_hash", lambda: "0" * 64)
    monkeypatch.setattr(runner_resume, "library_hash", lambda: "0" * 64)  # imported by name at its top
    assert run_all.stale_reasons(job, built["out"]) == ["geolip_lib code changed"]
    monkeypatch.undo()
    monkeypatch.setattr(run_all, "NOTEBOOKS", built["nbdir"])
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(built["nbdir"]))
    fp = json.loads((built["out"] / "fig" / "a" / run_all.FINGERPRINT).read_text())
    job.model = "tiny-t5"  # a job naming a model depends on its params file
    assert "params/models/tiny-t5.yaml changed" in run_all.stale_reasons(job, built["out"])
    assert fp["model_params"] == {}
    (built["out"] / "fig" / "a" / "metrics.json").write_text("{truncated", encoding="utf-8")
    assert run_all.stale_reasons(job, built["out"]) == ["metrics.json or fingerprint.json is unreadable"]
    groups = report.collect(built["out"])  # the report names the broken file instead of crashing
    bad = [r for r in groups["fig"] if not r.ok]
    assert bad and "metrics.json" in bad[0].error and "not valid JSON" in bad[0].error  # roots.read_json's line


def test_a_cell_says_what_kind_of_number_it_shows():
    """An exact value says over what (no brackets), a bias-corrected estimate names its
    plug-in, and a value the weight shapes force is marked, in the index's and the PDF's tables."""
    from geolip_lib import results
    from geolip_lib.report.sections import _cell

    exact = results.headline(0.781, interval="exact", over="6 Q matrices", fmt=".3f")
    html_exact = _cell(exact)
    assert "exact (all 6 Q matrices)" in html_exact and "[" not in html_exact.split("</span>")[0]
    sampled = results.headline(204.9, interval=(203.0, 207.0), plug_in=201.5, fmt=".1f")
    assert "plug-in 201.5" in _cell(sampled) and "exact" not in _cell(sampled)
    forced = results.headline(0.5, interval="exact", over="64 eigenvalues",
                              forced_by_shape="2·n_kv·head_dim ≤ d (GQA)")
    assert "forced by shape" in _cell(forced) and "GQA" in _cell(forced)
