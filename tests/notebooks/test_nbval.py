"""nbval (the user's design card): re-execute each notebook executed on the tiny profile
and compare its outputs, sanitized (floats rounded to 4 decimals, paths, timings, dates).

The runner executed each notebook on a warm kernel (the notebook tests' prefetch); nbval
re-executes it on a cold one, so this also compares warm with cold kernels. The
re-executions run two at a time (a 2-core machine, one thread per kernel): the first test
starts every collected notebook's nbval run and each test reads its own.
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from geolip_lib.runner.resources import default_jobs, kernel_threads, visible_gpus
from run_all import jobs_for_profile

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
FIRST_JOBS = {}
for _job in jobs_for_profile("tiny"):
    FIRST_JOBS.setdefault(_job.notebook, _job)
_RUNS: dict = {}  # notebook -> Future of (returncode, stdout, metrics path)


def _nbval(copy: Path, new_out: Path):
    # the runner's thread count (runner.resources.kernel_threads): training notebooks (13, 14)
    # diverge past nbval's 4 decimals when float reductions run on another number of threads
    env = dict(os.environ, TQDM_DISABLE="1", OMP_NUM_THREADS=str(kernel_threads()))
    r = subprocess.run([sys.executable, "-m", "pytest", "--nbval", str(copy), "--nbval-current-env",
                        "--nbval-sanitize-with", str(HERE / "nbval_sanitize.cfg"), "-p", "no:cacheprovider",
                        "--noconftest", "-q", "-o", "addopts=", "--rootdir", str(copy.parent)],
                       cwd=str(HERE.parents[1] / "notebooks"), capture_output=True, text=True, env=env, timeout=900)
    return r.returncode, r.stdout, new_out / "metrics.json"


def _prepare(notebook: str, run_notebook, tmp: Path) -> tuple[Path, Path]:
    """The runner's executed notebook, its injected OUT_DIR re-pointed at a fresh directory."""
    job = FIRST_JOBS[notebook]
    data = run_notebook(notebook, job.model, job_id=job.job_id)
    nb = nbformat.read(str(Path(data["_job_dir"]) / "executed.ipynb"), as_version=4)
    tmp.mkdir(parents=True, exist_ok=True)
    new_out = tmp / "out"
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = "\n".join(f"OUT_DIR = {str(new_out)!r}" if ln.startswith("OUT_DIR =") else ln
                                    for ln in cell.source.splitlines())
    copy = tmp / f"{notebook}.ipynb"
    nbformat.write(nb, str(copy))
    return copy, new_out


@pytest.fixture(scope="session")
def nbval_runs(request, run_notebook, tmp_path_factory):
    """Start the nbval re-execution of every collected notebook (the runner's jobs first, in
    this thread; then the re-executions, ``default_jobs`` at a time)."""
    if not _RUNS:
        wanted = [it.callspec.params["notebook"] for it in request.session.items
                  if getattr(it, "originalname", "") == "test_nbval_reexecution_matches"]
        root = tmp_path_factory.mktemp("nbval")
        prepared = {nb: _prepare(nb, run_notebook, root / nb) for nb in wanted}
        pool = ThreadPoolExecutor(max_workers=default_jobs(visible_gpus()))
        for nb, (copy, new_out) in prepared.items():
            _RUNS[nb] = pool.submit(_nbval, copy, new_out)
        pool.shutdown(wait=False)
    return _RUNS


@pytest.mark.parametrize("notebook", sorted(FIRST_JOBS))
def test_nbval_reexecution_matches(notebook, nbval_runs):
    code, stdout, metrics = nbval_runs[notebook].result()
    assert code == 0, stdout[-4000:]
    assert metrics.exists()
