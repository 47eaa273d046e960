"""nbval (the user's design card): re-execute each notebook executed on the tiny profile
and compare its outputs, sanitized (floats rounded to 4 decimals, paths, timings, dates)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from geolip_lib.runner.resources import kernel_threads
from run_all import jobs_for_profile

pytestmark = [pytest.mark.notebooks, pytest.mark.slow]
HERE = Path(__file__).resolve().parent
FIRST_JOBS = {}
for _job in jobs_for_profile("tiny"):
    FIRST_JOBS.setdefault(_job.notebook, _job)


@pytest.mark.parametrize("notebook", sorted(FIRST_JOBS))
def test_nbval_reexecution_matches(notebook, run_notebook, tmp_path):
    job = FIRST_JOBS[notebook]
    data = run_notebook(notebook, job.model, job_id=job.job_id)
    executed = Path(data["_job_dir"]) / "executed.ipynb"
    nb = nbformat.read(str(executed), as_version=4)
    new_out = tmp_path / "out"
    for cell in nb.cells:  # re-point the injected OUT_DIR at a fresh directory
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = "\n".join(f"OUT_DIR = {str(new_out)!r}" if ln.startswith("OUT_DIR =") else ln
                                    for ln in cell.source.splitlines())
    copy = tmp_path / f"{notebook}.ipynb"
    nbformat.write(nb, str(copy))
    # the runner's thread count (runner.resources.kernel_threads): training notebooks (13, 14)
    # diverge past nbval's 4 decimals when float reductions run on another number of threads
    env = dict(os.environ, TQDM_DISABLE="1", OMP_NUM_THREADS=str(kernel_threads()))
    r = subprocess.run([sys.executable, "-m", "pytest", "--nbval", str(copy), "--nbval-current-env",
                        "--nbval-sanitize-with", str(HERE / "nbval_sanitize.cfg"), "-p", "no:cacheprovider",
                        "--noconftest", "-q", "-o", "addopts=", "--rootdir", str(tmp_path)],
                       cwd=str(HERE.parents[1] / "notebooks"), capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:]
    assert (new_out / "metrics.json").exists()
