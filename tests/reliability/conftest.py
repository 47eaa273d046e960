"""Reliability probes: a careless or unlucky user's inputs, each with its exact one-line outcome.

Most probes call ``run_all.main([...])`` in-process (no kernel starts: they fail in
preflight); the few that need a kernel run a throw-away notebook that finishes in seconds.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

import run_all

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

OK_NB = '''
from geolip_lib import results
import time
out = results.job_dir(OUT_DIR, "ok", None)
(out / "running").touch()  # the kernel is executing (a probe waits for this before Ctrl-C)
time.sleep(SLEEP)
if FAIL:
    raise OSError(28, "No space left on device") if FAIL == "disk" else RuntimeError("planted failure")
results.record(out, {"value": VALUE, "n": N, "flag": FLAG, "items": ITEMS}, notebook="ok", model=None,
               headline={"value": results.headline(VALUE, interval="exact", label="Value")})
'''
PARAMS = ("OUT_DIR = None\nREPORT_ROOT = None\nVALUE = 1.0  # a float\nN = 10  # an int\nFLAG = True  # a bool\n"
          "ITEMS = [1, 2]  # a list\nNAME = 'x'  # a str\nMAYBE = None  # anything\nSLEEP = 0.0\nFAIL = ''")


def write_notebook(path: Path, body: str = OK_NB, params: str = PARAMS) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Probe notebook"),
                nbformat.v4.new_code_cell(params, metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, str(path))


class Sandbox:
    """Throw-away notebooks ``ok`` (and ``agg``) and a profile file that a probe rewrites."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.nbdir = tmp / "notebooks"
        self.nbdir.mkdir()
        write_notebook(self.nbdir / "ok.ipynb")
        self.profile = tmp / "p.yaml"
        self.out = tmp / "out"
        self.write("  ok:\n    per_model: false\n    jobs:\n      - {id: a, parameters: {VALUE: 2.0}}\n")

    def write(self, notebooks_yaml: str, head: str = "name: p\ndescription: probe profile\n") -> Path:
        self.profile.write_text(head + "notebooks:\n" + notebooks_yaml, encoding="utf-8")
        return self.profile

    def main(self, *args: str, capsys=None, ours: bool = True) -> tuple[int, list[str]]:
        """``run_all.main`` in-process: (exit code, non-empty stderr lines). ``ours``: an output root the
        probe filled beforehand is a geolip root of profile p (its ``.profile.json`` is written when
        missing), so that the probe meets what it plants, not the refusal of a foreign folder."""
        marker = self.out / ".profile.json"
        if ours and self.out.is_dir() and not self.out.is_symlink() and not os.path.lexists(marker) \
                and any(True for _ in self.out.iterdir()):
            marker.write_text('{"profile": "p"}\n', encoding="utf-8")
        code = run_all.main(["--profile", str(self.profile), "--out", str(self.out), "--no-pdf", *args])
        err = capsys.readouterr().err if capsys else ""
        return code, [ln for ln in err.splitlines() if ln.strip()]


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    box = Sandbox(tmp_path)
    monkeypatch.setattr(run_all, "NOTEBOOKS", box.nbdir)
    monkeypatch.setenv("GEOLIP_NOTEBOOKS", str(box.nbdir))
    yield box


@pytest.fixture(autouse=True)
def _model_files_given_by_path(monkeypatch):
    """``--models path/to/x.yaml`` makes that file loadable by name through an environment variable
    (``params.add_model_file``): restored after each probe, so that a probe's params file (in its own
    tmp folder, gone afterwards) is not a "shipped" model of the next test in this process."""
    from geolip_lib.params import MODEL_FILES_ENV

    monkeypatch.delenv(MODEL_FILES_ENV, raising=False)


#: the GGUF file name of the reliability probes' 2-layer llama (:func:`gguf_bytes`)
GGUF = "tiny-llama.Q.gguf"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty project cache of the probe's own."""
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def gguf_bytes(tmp_path_factory) -> bytes:
    """A 2-layer llama GGUF (Q8_0 / Q4_1 / F32 tensors) by the GGUF source's unit tests' writer."""
    from tests.unit.models.test_gguf_source import source_model, write_gguf

    d = tmp_path_factory.mktemp("gguf")
    write_gguf(d / GGUF, source_model())
    return (d / GGUF).read_bytes()

