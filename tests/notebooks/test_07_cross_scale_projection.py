"""Notebook 07 on the tiny profile: metrics read back and recomputed independently."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes

from geolip_lib import procrustes as al
from geolip_lib import models
from geolip_lib.metrics import intervals


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
    # the seed's map: the same rotation, scale 1
    al_seed = (P[test] - mp) @ R + mb
    cos_seed = (al_seed * EB[test]).sum(1) / np.linalg.norm(al_seed, axis=1) / np.linalg.norm(EB[test], axis=1)
    modes = m["procrustes_modes"]
    assert modes["seed"]["headlines"]["cos_heldout"]["value"] == pytest.approx(cos_seed.mean(), abs=1e-9)
    assert run["headline"]["cos_heldout_seed"]["value"] == pytest.approx(cos_seed.mean(), abs=1e-9)
    resid = lambda A: ((EB[test] - A) ** 2).sum() / ((EB[test] - mb) ** 2).sum()  # noqa: E731
    assert modes["seed"]["headlines"]["resid_frac"]["value"] == pytest.approx(resid(al_seed), rel=1e-9)
    assert modes["project"]["headlines"]["resid_frac"]["value"] == pytest.approx(resid(al_), rel=1e-9)
    assert modes["seed"]["singular_sum"] == pytest.approx(ssum, rel=1e-8)


def test_headlines_have_intervals_of_the_right_kind_and_shuffled_nulls(run):
    h = run["headline"]
    assert {"variance_retained", "cos_heldout", "relational_r", "volume_corr"} <= set(h)
    p = run["parameters"]
    methods = {k: e["interval"]["method"] for k, e in h.items()}
    assert f"of {p['N_TEST']} held-out tokens" in methods["cos_heldout"]
    assert f"of {p['N_REL']} held-out tokens" in methods["relational_r"]           # tokens, not pairs
    assert "simplices" in methods["volume_corr"]
    assert methods["variance_retained"].startswith("group bootstrap")
    for key in ("cos_heldout", "relational_r", "volume_corr"):
        e = h[key]
        assert e["interval"]["lo"] <= e["value"] <= e["interval"]["hi"], key
        null = e["nulls"]["shuffled"]
        assert null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"], key
    assert h["variance_retained"]["interval"]["lo"] < h["variance_retained"]["interval"]["hi"]
    # a row sample: the bias-corrected share (centre of the basic interval) inside it, the plug-in beside it
    vr, m = h["variance_retained"], run["metrics"]
    assert vr["kind"] == "sampled" and vr["plug_in"] == m["pca"]["variance_retained"]
    assert vr["value"] == pytest.approx((vr["interval"]["lo"] + vr["interval"]["hi"]) / 2, rel=1e-12)
    assert h["variance_retained"]["nulls"]["isotropic"]["value"] == pytest.approx(
        m["tables"]["d_small"] / m["tables"]["d_large"])
    assert h["relational_r"]["nulls"]["shuffled"]["value"] == pytest.approx(m["relational"]["r_shuffled"])


def test_executed_notebook_shows_every_figure_and_no_partial_paths(run):
    nb = nbformat.read(str(Path(run["_job_dir"]) / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= len(run["figures"]) == 2
    assert all(f["key"] for f in run["figures"])
    text = json.dumps([{k: v for k, v in o.get("data", {}).items() if not k.startswith("image/")} for o in outputs]
                      + [o.get("text", "") for o in outputs])
    assert ".partial" not in text
    assert all(e["interval"] is not None for e in run["headline"].values() if e["value"] is not None)
    names = {m.get("name") for m in run["provenance"]["models"]}
    assert {"tiny-qwen-wide", "tiny-qwen"} <= names                       # both models are in the provenance


def test_interval_statistics_equal_the_recorded_statistics():
    """The resampled statistics reduce to the point statistics on the unresampled data."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 6))
    B = A @ rng.normal(size=(6, 9)) + rng.normal(size=(40, 9))
    stat = al.weighted_relational_r(A, B)
    assert stat(np.ones((3, 40))) == pytest.approx(al.relational_correlation(A, B)["r"], abs=1e-12)
    a, b = rng.normal(size=200), rng.normal(size=200)
    assert al.paired_pearson(np.stack([a, b])) == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)
    X = rng.normal(size=(500, 8)) * np.arange(1, 9)
    iv = al.variance_retained_interval(X, 4, seed=0)
    assert isinstance(iv, intervals.Interval) and iv.lo < iv.hi
    assert abs((iv.lo + iv.hi) / 2 - al.pca_fit(X, 4).variance_retained) < 0.05
    assert al.variance_retained_interval(X, 8) == "exact"


def test_seed_comparable_mode_is_labelled_and_agrees_with_the_project_sections(run):
    """§9: both fits on the same anchors; the project's column repeats §4-§8's numbers."""
    m, h = run["metrics"], run["headline"]
    modes = m["procrustes_modes"]
    assert (modes["seed"]["label"], modes["project"]["label"]) == ("seed: rotation only", "project: fitted scale")
    assert modes["seed"]["scale"] == 1.0 and modes["project"]["scale"] == pytest.approx(m["procrustes"]["scale"])
    hp, hs = modes["project"]["headlines"], modes["seed"]["headlines"]
    assert hp["cos_heldout"]["value"] == pytest.approx(h["cos_heldout"]["value"], abs=1e-12)
    for key in ("cos_heldout", "relational_r", "volume_corr"):                          # the same bootstraps
        assert [hp[key]["interval"][b] for b in ("lo", "hi")] == pytest.approx(
            [h[key]["interval"][b] for b in ("lo", "hi")], abs=1e-9), key
    assert hp["relational_r"]["value"] == pytest.approx(m["relational"]["r"], abs=1e-12)
    assert hp["volume_corr"]["value"] == pytest.approx(m["pentachoron"]["corr"], abs=1e-12)
    assert hp["volume_ratio"]["value"] == pytest.approx(m["pentachoron"]["ratio"], rel=1e-12)
    # volumes of the rotation-only map are those of the scaled map divided by s⁴
    assert hs["volume_ratio"]["value"] == pytest.approx(hp["volume_ratio"]["value"] / m["procrustes"]["scale"] ** 4,
                                                        rel=1e-9)
    for mode in (hs, hp):
        for key, e in mode.items():
            assert e["interval"]["lo"] <= e["value"] <= e["interval"]["hi"], key
    assert h["cos_heldout_seed"]["label"] == "held-out cosine (seed: rotation only)"


def test_pca_projected_pentachoron_cv_is_the_claims_record(run, monkeypatch):
    """metrics.claims.pentachoron_cv.pca_projected (seed §13b): the CV of the PCA projection equals
    that of the aligned projection on the same simplices (a CV ignores rotation, scale and shift),
    carries its dimension-only nulls, and claims.evaluate reads it as measured."""
    from geolip_lib import claims
    from geolip_lib.claims import NOT_TESTED

    m, p = run["metrics"], run["parameters"]
    h = m["claims"]["pentachoron_cv"]["pca_projected"]
    assert m["pentachoron"]["n_valid"] == p["N_SIMPLICES"]  # every set valid: the two CVs use the same sets
    assert h["value"] == pytest.approx(m["pentachoron"]["cv_b"], rel=1e-6)
    assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"] and h["kind"] == "sampled"
    assert set(h["nulls"]) == {"gaussian", "unit sphere"}
    assert all(len(nl["per_seed"]) == 5 for nl in h["nulls"].values())
    assert "fresh draws" in h["interval"]["method"] and h["redrawn"]["draws"] > 0  # drawn from the table
    t = m["tables"]  # a real projection (wider -> narrower): no rotation, a verdict of its own
    assert (h["rotation"], h["d_from"], h["d_to"]) == (False, t["d_large"], t["d_small"]) and "repeats" not in h
    assert m["pca"]["rotation"] is False
    root = Path(run["_job_dir"]).parents[1]
    # tiny random models are pipeline checks (no claims row); what evaluate reads is checked as if trained
    assert not [r for r in claims.evaluate(root) if r["model"] == run["model"]]
    monkeypatch.setattr(claims.evaluation, "trained", lambda model, data: True)
    rows = [r for r in claims.evaluate(root)
            if r["claim"] == "pentachoron_cv" and r["scope"] == "pca_projected"]
    assert len(rows) == 1 and rows[0]["verdict"] != NOT_TESTED and rows[0]["value"] == pytest.approx(h["value"])



def test_a_pca_to_the_tables_own_width_is_recorded_as_the_native_cv_again(run_notebook, monkeypatch):
    """A model against its random-init twin (one width, as SmolLM2 576 -> 576 d): the PCA keeps
    every dimension, a rotation; the CV is the native one on the same draws, recorded as a repeat, and
    the claims show it as not tested (no second verdict)."""
    from geolip_lib import claims
    from geolip_lib import metrics as M
    from geolip_lib.claims import NOT_TESTED

    res = run_notebook("07_cross_scale_projection", job_id="tiny-qwen-wide__tiny-qwen", MODEL_B="tiny-qwen-wide",
                       B_RANDOM_INIT=True)
    m, p = res["metrics"], res["parameters"]
    h = m["claims"]["pentachoron_cv"]["pca_projected"]
    assert m["pca"]["rotation"] is True and h["rotation"] is True and h["d_from"] == h["d_to"]
    assert h["repeats"].startswith(f"PCA to {h['d_to']} of {h['d_from']} d is a rotation")
    E = models.load("tiny-qwen-wide").input_embeddings()
    native = M.pentachoron_cv(E[:m["tables"]["vocab"]], p["N_SIMPLICES"], seed=p["SEED"]).cv
    assert h["value"] == pytest.approx(native, rel=1e-6)  # the native CV, the same draws
    monkeypatch.setattr(claims.evaluation, "trained", lambda model, data: True)
    rows = [r for r in claims.evaluate(Path(res["_job_dir"]).parents[1])
            if r["claim"] == "pentachoron_cv" and r["scope"] == "pca_projected" and r["model"] == res["model"]]
    assert rows and all(r["verdict"] == NOT_TESTED and "rotation" in r["reason"] for r in rows)


def test_the_digit_correlation_is_exact_as_in_notebook_01(run):
    """One quantity, one kind: computed on all ten digits, like 01's digit_corr."""
    h, digits = run["headline"], run["metrics"]["digits"]
    assert ("digit_r" in h) == (digits is not None)
    if digits is not None:
        assert h["digit_r"]["kind"] == "exact" and h["digit_r"]["interval"]["lo"] == h["digit_r"]["value"]
        assert "45 pairs" in h["digit_r"]["interval"]["method"]
        b = digits["r_bootstrap_over_digits"]
        assert {"lo", "hi", "method"} <= set(b) and "digits" in b["method"]
