"""Notebook 06 on the tiny profile: metrics read back and checked against the library."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from geolip_lib import models
from geolip_lib import operators as op


@pytest.fixture(scope="module")
def t5_run(run_notebook):
    return run_notebook("06_qk_operators", "tiny-t5")


def test_t5_groups_include_cross_attention_and_self_cosine_is_one(t5_run):
    m = t5_run["metrics"]
    groups = {r["group"] for r in m["measure"]["groups"]}
    assert groups == {"encoder.self", "decoder.self", "decoder.cross"}
    for g, entry in m["groups"].items():
        a = entry["analysis"]
        assert a["diag_cos_mean"] == pytest.approx(1.0, abs=1e-9)
        assert all(abs(x) <= 1 + 1e-9 for row in a["cos_matrix"] for x in row)
        # full-rank heads: exactly half of all eigenvalues positive (Sylvester inertia)
        assert all(f == pytest.approx(0.5) for f in a["frac_positive"])
        assert entry["random_init"] is not None
    h = t5_run["headline"]
    assert h["cos_to_anchor"]["baseline_kind"] == "random_init"
    assert h["cos_to_anchor"]["value"] == pytest.approx(m["groups"]["encoder.self"]["analysis"]["mean_cos_to_anchor"])


def test_saved_operator_files_match_an_independent_recomputation(t5_run):
    job = Path(t5_run["_job_dir"])
    ops = op.load(job / "qk_decoder.cross.json")
    assert json.loads((job / "qk_decoder.cross.json").read_text())["num_heads"] == ops.n_heads
    lm = models.load("tiny-t5")
    blocks = op.attention_groups(lm)["decoder.cross"]
    from geolip_lib.weights import TensorStore

    Wq, Wk = op.load_group_weights(TensorStore(lm), blocks)
    assert torch.allclose(ops.gram, op.dense_layer_gram(Wq, Wk, ops.n_heads), atol=1e-10 * ops.gram.abs().max())
    assert torch.allclose(ops.sym_eigs, op.dense_sym_eigvals(Wq, Wk, ops.n_heads), atol=1e-9 * ops.sym_eigs.abs().max())
    recorded = t5_run["metrics"]["groups"]["decoder.cross"]["analysis"]["mean_cos_to_anchor"]
    assert recorded == pytest.approx(op.analyse(ops)["mean_cos_to_anchor"], abs=1e-12)
    for png in ("cos_matrix.png", "sign_agreement.png", "principal_angles.png"):
        assert (job / png).stat().st_size > 1000

