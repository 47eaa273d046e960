"""The command line starts without torch (issue 38 §2): what ``run_all.py`` imports to parse its flags, to
refuse a bad flag or an unknown profile and to set up a run imports neither torch nor transformers (nor
papermill, pandas or scipy); they come when a model is sized or checked, or a job runs. A property of the
import graph, checked in a fresh interpreter (``benchmarks/bench_startup.py`` times it)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("torch", "transformers", "papermill", "pandas", "scipy", "nbformat")

PROBE = """
import contextlib, io, json, sys
sys.path.insert(0, {root!r})
{body}
print(json.dumps({{"loaded": sorted(m for m in {heavy!r} if m in sys.modules), "rc": rc}}))
"""


def _loaded(body: str) -> dict:
    code = PROBE.format(root=str(ROOT), body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_runner_imports_no_torch():
    got = _loaded("import geolip_lib.runner, geolip_lib.runner.local, geolip_lib.runner.plan, "
                  "geolip_lib.runner.estimate, geolip_lib.runner.execute, geolip_lib.runner.jobs, "
                  "geolip_lib.runner.ray_executor, geolip_lib.params, geolip_lib.families, run_all\nrc = 0")
    assert got["loaded"] == []


@pytest.mark.parametrize("argv, rc", [
    (["--help"], 0),
    (["--jobs", "0"], 2),  # a flag out of range
    (["--profile", "tiny", "--plan", "--resume"], 2),  # flags of two modes
    (["--profile", "no-such-profile", "--plan"], 2),  # a profile that is not there
])
def test_the_command_line_refuses_and_helps_without_torch(argv, rc):
    got = _loaded(f"import run_all\nwith contextlib.redirect_stdout(io.StringIO()), "
                  f"contextlib.redirect_stderr(io.StringIO()):\n"
                  f"    try:\n        rc = run_all.main({argv!r})\n    except SystemExit as e:\n        rc = e.code")
    assert got["rc"] == rc
    assert got["loaded"] == []


def test_a_lazy_module_imports_on_first_use_and_forwards():
    got = _loaded("from geolip_lib.lazy import lazy\nm = lazy('scipy')\nbefore = 'scipy' in sys.modules\n"
                  "assert not before, 'imported before use'\nv = m.__version__\n"
                  "import scipy\nassert v == scipy.__version__ and 'not imported' not in repr(m)\nrc = 0")
    assert got["rc"] == 0 and got["loaded"] == ["scipy"]


def test_a_lazy_module_name_must_be_absolute():
    from geolip_lib.lazy import lazy

    for bad in ("", ".relative", "torch..nn", 3):
        with pytest.raises(ValueError, match="absolute module name"):
            lazy(bad)
