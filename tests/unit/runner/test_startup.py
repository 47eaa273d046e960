"""The command line starts without torch: what ``run_all.py`` imports to parse its flags, to
refuse a bad flag or an unknown profile and to set up a run imports neither torch nor transformers (nor
papermill, pandas or scipy); they come when a model is sized or checked, or a job runs. A refusal of a bad
parameter, an undeclared one, a missing params file or claims file, and ``--plan`` of the tiny profile, once
the profile has been seen (the answers that need torch remembered: ``geolip_lib.runner.remembered``), import
neither. A property of the import graph, checked in a fresh interpreter (``benchmarks/bench_startup.py``
times it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("torch", "transformers", "papermill", "pandas", "scipy", "nbformat")

PROBE = """
import contextlib, io, json, sys
sys.path.insert(0, {root!r})
{body}
loaded = sorted(m for m in {heavy!r} if m in sys.modules)
from geolip_lib.provenance import library_hash
print(json.dumps({{"loaded": loaded, "rc": rc, "err": globals().get("err_text", ""), "library": library_hash()}}))
"""


def _loaded(body: str, env: dict | None = None) -> dict:
    code = PROBE.format(root=str(ROOT), body=body, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, **(env or {})})
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


def _main(argv) -> str:
    return (f"import run_all\nwith contextlib.redirect_stdout(io.StringIO()), "
            f"contextlib.redirect_stderr(io.StringIO()) as err:\n"
            f"    try:\n        rc = run_all.main({argv!r})\n    except SystemExit as e:\n        rc = e.code\n"
            f"err_text = err.getvalue()")


def _tiny(tmp_path, name: str, change) -> str:
    prof = yaml.safe_load((ROOT / "params" / "profiles" / "tiny.yaml").read_text(encoding="utf-8"))
    change(prof["notebooks"])
    f = tmp_path / f"tiny-{name}.yaml"
    f.write_text(yaml.safe_dump(prof, sort_keys=False), encoding="utf-8")
    return str(f)


def _twice(argv, env) -> tuple[dict, dict]:
    """``run_all.main(argv)`` twice in fresh interpreters, the library's code the same for both (a checkout being
    edited meanwhile is a new key for what is remembered: tried again)."""
    for _ in range(3):
        first, again = _loaded(_main(argv), env), _loaded(_main(argv), env)
        if first["library"] == again["library"]:
            break
    return first, again


#: what a check of a profile's jobs may import: nbformat reads each notebook's parameters cell (0.16 s here)
READS_NOTEBOOKS = {"nbformat"}
REFUSALS = {  # name -> (change of the tiny profile, what its one line says)
    "out-of-range": (lambda n: n["01_embedding_terrain"]["parameters"].update(N_COS_SAMPLE=-1),
                     "parameter N_COS_SAMPLE: -1 is outside its range"),
    "undeclared": (lambda n: n["01_embedding_terrain"]["parameters"].update(N_NO_SUCH=3), "has no parameter N_NO_SUCH"),
    "no-params-file": (lambda n: n["01_embedding_terrain"]["models"].append("no-such-model"),
                       "unknown model 'no-such-model'"),
    "no-claims-file": (lambda n: n["15_seed_claims"]["jobs"][0]["parameters"].update(CLAIMS="no-such-claims"),
                       "unknown claims file 'no-such-claims'"),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_a_refusal_of_a_profile_seen_before_imports_no_torch(name, tmp_path):
    """The second refusal (the first one computes and remembers what needs torch, in a cache of its own here)."""
    change, says = REFUSALS[name]
    argv = ["--profile", _tiny(tmp_path, name, change), "--out", str(tmp_path / "out")]
    env = {"GEOLIP_CACHE": str(tmp_path / "cache"), "GEOLIP_REMEMBER": "1"}
    first, again = _twice(argv, env)
    assert first["rc"] == again["rc"] == 2
    assert set(again["loaded"]) <= READS_NOTEBOOKS, f"a refusal seen before imported {again['loaded']}"
    assert not (tmp_path / "out").exists()
    assert says in first["err"] and first["err"] == again["err"]


def test_a_model_folder_checked_and_sized_before_imports_no_torch(tmp_path):
    """A model with files of its own (here a ``local_dir`` folder; the demo's PyPI packages and GGUF alike): its
    checks and size, remembered with the state of its folder, are read back in a fresh interpreter without torch."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    d = tmp_path / "own"
    GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=2, n_head=2, vocab_size=64, n_positions=32)).save_pretrained(d)
    y = tmp_path / "own.yaml"
    y.write_text(f"name: own\nfamily: gpt2\nsource: local\nlocal_dir: {d}\n", encoding="utf-8")
    body = ("from geolip_lib.runner import model_checks, model_sizes\n"
            f"err_text = repr((model_checks.model_problems({str(y)!r}), model_sizes.model_info({str(y)!r}).params))\n"
            "rc = 0")
    env = {"GEOLIP_CACHE": str(tmp_path / "cache"), "GEOLIP_REMEMBER": "1"}
    for _ in range(3):
        first, again = _loaded(body, env), _loaded(body, env)
        if first["library"] == again["library"]:
            break
    assert "torch" in first["loaded"] and again["loaded"] == [], again["loaded"]
    assert first["err"] == again["err"] and again["err"].startswith("([], ")


def test_the_plan_of_the_tiny_profile_seen_before_imports_no_torch():
    """``--plan --profile tiny`` twice: the second one sizes every model from what the first remembered (the
    project cache's tokenizers are there; a GPU box imports torch to count its GPUs)."""
    from geolip_lib.runner.box import gpu_here

    if gpu_here():
        pytest.skip("a GPU box: the plan asks torch for each GPU's free memory")
    argv = ["--plan", "--profile", "tiny"]
    _, again = _twice(argv, {"GEOLIP_REMEMBER": "1"})
    assert again["rc"] in (0, 2) and set(again["loaded"]) <= READS_NOTEBOOKS, f"the plan imported {again['loaded']}"


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
