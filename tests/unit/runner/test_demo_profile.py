"""The main job (``make report``, the demo profile) gives verdicts on at least three
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


def test_the_main_jobs_plan_says_every_job_finishes_within_its_limit(tmp_path):
    """The plan of the demo profile said 09 'may not finish' (50 min) and 10 'will not finish'
    (2.3 h against 30 min) from the paper-size rates of shapes-t5-small scaled by parameters; they
    take under a minute at the demo's sizes (measured: timings/demo-2026-12-05.json), and 08 and 16
    had no rate at all."""
    from geolip_lib.runner.local import plan_for
    from geolip_lib.runner.plan import target_box

    later = ("08_modulator_pipeline", "09_modulator_training", "10_alpha_sweep", "11_field_modulator",
             "16_contextual_geometry")
    jobs = [j for j in jobs_for_profile("demo", models=["all-minilm-l6-v2"], notebooks=list(later))]
    assert {j.notebook for j in jobs} == set(later)
    plan = plan_for(jobs, tmp_path, 1, target_box(0, None, 64, None))
    assert plan.time_lines() == []
    for r in plan.rows:
        assert r.seconds is not None and r.seconds < 600, (r.label, r.seconds, r.time_basis)
        # a change of the demo's parameters or of a job's drivers: measure the job again (--cold) and
        # write timings/demo-<date>.json with python -m geolip_lib.runner.calibration collect ROOT demo OUT
        assert "measured on the demo profile" in r.time_basis, r.time_basis
