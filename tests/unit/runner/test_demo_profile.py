"""Issue 38 §4: the main job (``make report``, the demo profile) gives verdicts on at least three
trained stand-ins: each runs the notebooks seed 001's claims read most (01, 02, 06), no tiny random
model is in it (they are left to the tests and never get a verdict), and the claims notebook runs last."""
from __future__ import annotations

import pytest

from geolip_lib.params import load_model_params
from geolip_lib.runner.jobs import jobs_for_profile

pytestmark = pytest.mark.unit


def test_the_main_job_runs_the_claims_on_three_trained_stand_ins_and_no_tiny_model():
    jobs = jobs_for_profile("demo")
    models = {j.model for j in jobs if j.model}
    assert not [m for m in models if load_model_params(m).source == "tiny"]
    core = ("01_embedding_terrain", "02_weight_topology", "06_qk_operators")
    on_all = [m for m in models if all(any(j.notebook == nb and j.model == m for j in jobs) for nb in core)]
    assert len(on_all) >= 3, on_all
    assert jobs[-1].notebook == "15_seed_claims" and jobs[-1].model is None
