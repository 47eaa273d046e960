"""Notebook 07 on the tiny profile: metrics read back and recomputed independently."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes

from geolip_lib import models


@pytest.fixture(scope="module")
def run(run_notebook):
    return run_notebook("07_cross_scale_projection", job_id="tiny-qwen-wide__tiny-qwen")


def test_roles_pca_and_heldout_split(run):
    m = run["metrics"]
    assert m["applicable"] is True
    t = m["tables"]
    assert (t["large"], t["small"]) == ("tiny-qwen-wide", "tiny-qwen") and t["d_large"] > t["d_small"]
    assert 0 < m["pca"]["variance_retained"] <= 1
    p = run["parameters"]
    assert m["procrustes"]["n_anchor"] == p["N_ANCHOR"] and m["procrustes"]["n_test"] == p["N_TEST"]
    c = m["heldout"]["cosine"]
    assert -1 <= c["min"] <= c["p1"] <= c["p50"] <= c["p99"] <= c["max"] <= 1
    assert m["pentachoron"]["n_valid"] <= m["pentachoron"]["n_sets"] == p["N_SIMPLICES"]
    assert run["headline"]["cos_heldout"]["baseline_kind"] == "shuffled"
    assert (Path(run["_job_dir"]) / "projection_2x3.png").stat().st_size > 10_000


def test_recorded_numbers_match_an_independent_recomputation(run):
    """Recompute PCA variance and the held-out cosine with plain numpy/scipy from the tables."""
    m, p = run["metrics"], run["parameters"]
    EA = models.load("tiny-qwen-wide").input_embeddings().double().numpy()
    EB = models.load("tiny-qwen").input_embeddings().double().numpy()
    rng = np.random.default_rng(p["SEED"])
    rows = rng.choice(EA.shape[0], size=min(p["N_PCA"], EA.shape[0]), replace=False)
    Xc = EA[rows] - EA[rows].mean(0)
    s = np.linalg.svd(Xc, compute_uv=False)
    d = EB.shape[1]
    assert m["pca"]["variance_retained"] == pytest.approx((s[:d] ** 2).sum() / (s ** 2).sum(), rel=1e-9)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = (EA - EA[rows].mean(0)) @ Vt[:d].T                      # PCA projection (signs free: absorbed by R)
    perm = np.random.default_rng(p["SEED"]).permutation(EA.shape[0])
    anc, test = perm[:p["N_ANCHOR"]], perm[p["N_ANCHOR"]:p["N_ANCHOR"] + p["N_TEST"]]
    mp, mb = P[anc].mean(0), EB[anc].mean(0)
    R, ssum = orthogonal_procrustes(P[anc] - mp, EB[anc] - mb)
    scale = ssum / ((P[anc] - mp) ** 2).sum()
    assert m["procrustes"]["scale"] == pytest.approx(scale, rel=1e-8)
    al_ = scale * (P[test] - mp) @ R + mb
    cos = (al_ * EB[test]).sum(1) / np.linalg.norm(al_, axis=1) / np.linalg.norm(EB[test], axis=1)
    assert m["heldout"]["cosine"]["mean"] == pytest.approx(cos.mean(), abs=1e-9)
    assert run["headline"]["cos_heldout"]["value"] == pytest.approx(cos.mean(), abs=1e-9)
