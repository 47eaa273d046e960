"""Notebooks 01, 02 and 06 end to end (papermill, warm kernels, two at a time) on a tiny random model
of every model_type of the family registry.

Marker ``families``: ``make test`` deselects it, ``make test-families`` (the second step of
``.ci/run``) runs it. ``-k gpt2`` runs the jobs of the selected model_types only: the jobs of every
selected test are run together, once, by the first test (the ``families`` profile's parameters), then
each test reads its three ``metrics.json``.
"""
from __future__ import annotations

import json
import sys

import pytest

from geolip_lib import families
from geolip_lib.runner.local import run_jobs
from geolip_lib.runner.jobs import jobs_for_profile

pytestmark = [pytest.mark.families, pytest.mark.slow]

NOTEBOOKS = ("01_embedding_terrain", "02_weight_topology", "06_qk_operators")
#: params/models/tiny-type-*.yaml (scripts/support_table.py --write): one tiny model per (family, model_type)
MODELS = families.tiny_type_models()
CASES = [(d["family"], d["config"].get("model_type", d["family"]), name) for name, d in MODELS.items()]
IDS = [name[len(families.TINY_TYPE_PREFIX):] for name in MODELS]
CASES.append(("any", "gpt_neo", "tiny-any"))  # a model_type no family knows (§3): 01 and the matrix battery
IDS.append("any-gpt_neo")


@pytest.fixture(scope="session")
def family_runs(request, tmp_path_factory) -> dict:
    """Run the three notebooks on every selected model_type at once: params name -> {notebook: result}."""
    selected = [item.callspec.params["name"] for item in request.session.items
                if getattr(item, "callspec", None) is not None and item.originalname == "test_notebooks_run"]
    jobs = jobs_for_profile("families", models=selected, notebooks=list(NOTEBOOKS))
    jobs = [j for j in jobs if j.model in selected]  # not the profile's own per-family models
    root = tmp_path_factory.mktemp("family_runs")
    by_model: dict = {}
    for r in run_jobs(jobs, root, jobs_at_once=2, warm=True, console=sys.stderr):
        by_model.setdefault(r.job.model, {})[r.job.notebook] = r
    return by_model


@pytest.mark.parametrize("fam,mt,name", CASES, ids=IDS)
def test_notebooks_run(fam, mt, name, family_runs):
    runs = family_runs.get(name, {})
    assert set(runs) == set(NOTEBOOKS)
    for nb, r in runs.items():
        assert r.ok, f"{nb} / {r.job.job_id}: {r.error}"
    m01 = json.loads((runs["01_embedding_terrain"].job_dir / "metrics.json").read_text())
    assert m01["metrics"]["model"]["family"] == fam
    assert m01["headline"], "notebook 01 gave no headline"
    m02 = json.loads((runs["02_weight_topology"].job_dir / "metrics.json").read_text())
    assert m02["metrics"]["battery"]["unclassified_2d"] == [], "notebook 02: weights the adapter left unclassified"
    m06 = json.loads((runs["06_qk_operators"].job_dir / "metrics.json").read_text())
    groups = {g["group"] for g in m06["metrics"]["measure"]["groups"]}
    if fam == "any":  # the attention sections are skipped, each naming the adapter that would enable it
        assert not groups and m02["metrics"]["battery"]["n_params"] > 0
        for nb in ("02_weight_topology", "06_qk_operators"):
            text = (runs[nb].job_dir / "executed.ipynb").read_text(encoding="utf-8")
            assert "would enable it" in text and "'gpt_neo'" in text, f"{nb}: no skip line naming the adapter"
    else:
        assert groups, "notebook 06 measured no attention group"
