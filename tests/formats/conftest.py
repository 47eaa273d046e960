"""The recipes of params/README.md "Your model, in the format you keep", as the fixtures of this folder's tests:
the user's model folders (tiny random models of four families with their tokenizers) and every recipe run on them
as the page writes it (session-scoped: the exports take about a minute, and both test modules read them)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from geolip_lib.models.tiny import build_tiny
from geolip_lib.paths import ROOT
from tests.formats.recipes import ORIGINALS, as_llama, as_marian, in_workdir, recipes


@pytest.fixture(scope="session")
def work(tmp_path_factory) -> Path:
    """The user's model folders: tiny random models of four families, saved with their tokenizers."""
    d = tmp_path_factory.mktemp("recipes")
    for folder, (name, family, config) in ORIGINALS.items():
        shutil.copytree(build_tiny(name, family, config, None, 0), d / folder)
    as_llama(d / "my-llama")
    as_marian(d / "my-marian")
    return d


@pytest.fixture(scope="session")
def made(work) -> dict[str, float]:
    """Every recipe that writes a file run as written (seconds each); the params files written beside."""
    seconds = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, (lang, body) in recipes().items():
        if name in ("params", "run"):
            continue
        script = in_workdir(body, work)
        cmd = [sys.executable, "-c", script] if lang == "python" else ["bash", "-euo", "pipefail", "-c", script]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=ROOT if lang == "bash" else work, env=env, capture_output=True, text=True,
                           timeout=900)
        seconds[name] = round(time.perf_counter() - t0, 1)
        assert r.returncode == 0, f"recipe {name} failed:\n{r.stderr[-3000:]}"
    for doc in recipes()["params"][1].split("\n---\n"):
        fields = yaml.safe_load(doc)
        fields["local_dir"] = str(work / fields["local_dir"])
        (work / f"{fields['name']}.yaml").write_text(yaml.safe_dump(fields), encoding="utf-8")
    return seconds




@pytest.fixture
def plan(monkeypatch, capsys):
    """``run_all.py <args> --plan`` in-process (the heavy imports paid once for the folder's tests): (exit code, the
    lines printed). A params file given by path is loadable by name only for the call's own duration."""
    import run_all
    from geolip_lib.params import MODEL_FILES_ENV

    def run(*args: str) -> tuple[int, list[str]]:
        monkeypatch.delenv(MODEL_FILES_ENV, raising=False)
        capsys.readouterr()
        code = run_all.main([*args, "--plan"])
        out = capsys.readouterr()
        monkeypatch.delenv(MODEL_FILES_ENV, raising=False)
        return code, [ln for ln in (out.out + out.err).splitlines() if ln.strip()]

    return run
