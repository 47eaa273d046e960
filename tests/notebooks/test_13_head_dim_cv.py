"""Notebook 13 (head_dim vs pentachoron CV, seed 002) on the tiny profile."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import torch

from geolip_lib import metrics as gm
from geolip_lib.attention import MHAClassifier, noise_pattern_data

pytestmark = pytest.mark.notebooks
NB = "13_head_dim_cv"


@pytest.fixture(scope="module")
def m13(run_notebook):
    return run_notebook(NB)


def test_every_config_and_seed_has_three_profiles(m13):
    cfg = m13["metrics"]["config"]
    runs = m13["metrics"]["runs"]
    assert cfg["modes"] == ["varied", "fixed"]  # the default runs both, side by side
    assert len(runs) == len(cfg["configs"]) * len(cfg["seeds"]) * 2 and len(cfg["seeds"]) >= 3
    for r in runs:
        assert r["head_dim"] * r["n_heads"] == r["dim"]
        for phase in ("pre", "mid", "post"):
            prof = r[phase]
            heads = {k for k in prof if k.startswith("act_Q_h")}
            assert len(heads) == r["n_heads"]
            assert all(f"{n}_h{h}" in prof for n in "QKV" for h in range(r["n_heads"]))
            assert all(v is None or 0 < v < 3 for v in prof.values())
        if r["n_heads"] == 1:  # one head: the head is the whole matrix (same rows, same draws)
            assert r["post"]["Q_h0"] == r["post"]["Q_full"]
            assert r["post"]["act_post_h0"] == r["post"]["act_post_full"]
        assert r["pre"]["emb"] != r["post"]["emb"]  # training moved the embedding


def test_pre_training_cv_recomputed_independently(m13):
    cfg = m13["metrics"]["config"]
    r = m13["metrics"]["runs"][0]
    torch.manual_seed(r["seed"])
    model = MHAClassifier(cfg["vocab"], r["dim"], r["n_heads"], cfg["seq_len"], cfg["n_classes"])
    n = cfg["n_simplices"]
    assert r["pre"]["emb"] == pytest.approx(gm.pentachoron_cv(model.emb.weight.detach(), n, seed=r["seed"]).cv, rel=1e-12)
    wq = model.mha.in_proj_weight.detach()[: r["dim"]]
    assert r["pre"]["Q_full"] == pytest.approx(gm.pentachoron_cv(wq, n, seed=r["seed"]).cv, rel=1e-12)
    x, _ = noise_pattern_data(cfg["n_classes"], cfg["samples_per_class"], cfg["seq_len"], cfg["vocab"],
                              cfg["noise"], seed=r["seed"])
    emb = (model.emb(x) + model.pos).detach().reshape(-1, r["dim"])
    assert r["pre"]["act_emb"] == pytest.approx(gm.pentachoron_cv(emb, n, seed=r["seed"]).cv, rel=1e-9)


def test_fixed_mode_is_seed_002s_setting(m13):
    cfg = m13["metrics"]["config"]
    fixed = [r for r in m13["metrics"]["runs"] if r["mode"] == "fixed"]
    varied = [r for r in m13["metrics"]["runs"] if r["mode"] == "varied"]
    assert len(fixed) == len(varied) == len(cfg["configs"]) * len(cfg["seeds"])
    assert all(r["data_seed"] == r["init_seed"] == cfg["fixed_seed"] == 42 for r in fixed)
    assert all(r["data_seed"] == r["init_seed"] == r["seed"] for r in varied)
    for d, h in cfg["configs"]:
        same = [r for r in fixed if (r["dim"], r["n_heads"]) == (d, h)]
        assert len({r["acc"] for r in same}) == 1 and len({r["loss"]["last"] for r in same}) == 1  # one training
        assert len({r["post"]["emb"] for r in same}) == len(same)  # the CV draws differ per seed
    r = fixed[1]  # pre-training CV of the fixed mode: init from seed 42, simplex draws from the run's seed
    torch.manual_seed(42)
    model = MHAClassifier(cfg["vocab"], r["dim"], r["n_heads"], cfg["seq_len"], cfg["n_classes"])
    assert r["pre"]["emb"] == pytest.approx(gm.pentachoron_cv(model.emb.weight.detach(), cfg["n_simplices"],
                                                               seed=r["seed"]).cv, rel=1e-12)


def test_both_bands_counted_per_seed(m13):
    met, cfg = m13["metrics"], m13["metrics"]["config"]
    assert (cfg["band"], cfg["seed_band"]) == ([0.20, 0.23], [0.13, 0.30])
    bands = {"project": cfg["band"], "seed 002": cfg["seed_band"]}
    for mode in ("varied", "fixed"):
        for key in ("emb", "act_Q_h0", "act_post_full"):
            rec = met["band_counts"][mode][key]
            assert rec["n_configs"] == len(cfg["configs"])
            for name, (lo, hi) in bands.items():
                want = [sum(lo <= r["post"][key] <= hi for r in met["runs"] if r["mode"] == mode and r["seed"] == s)
                        for s in cfg["seeds"]]
                got = rec["in_band"][name]
                assert got["per_seed"] == want and got["value"] == pytest.approx(sum(want) / len(want))
                assert got["interval"]["lo"] <= got["value"] <= got["interval"]["hi"]
                assert got["interval"]["method"].startswith(f"t interval of the mean over {len(cfg['seeds'])} seeds")
                assert 0 <= got["interval"]["lo"] and got["interval"]["hi"] <= len(cfg["configs"])
            # nested bands: every configuration inside the project's band is inside seed 002's
            assert all(a <= b for a, b in zip(rec["in_band"]["project"]["per_seed"], rec["in_band"]["seed 002"]["per_seed"]))
    h = m13["headline"]
    assert h["fraction_in_seed_band"]["value"] == met["fraction_cells_in_seed_band"] >= met["fraction_cells_in_band"]
    assert "0.13–0.3" in h["fraction_in_seed_band"]["label"] and "0.2–0.23" in h["fraction_in_band"]["label"]
    fx = h["act_Q_cv_post_fixed"]
    post = list(met["per_seed_means_fixed"]["post"].values())
    assert fx["value"] == pytest.approx(sum(post) / len(post)) and fx["interval"]["lo"] <= fx["value"] <= fx["interval"]["hi"]
    nb = nbformat.read(str(Path(m13["_job_dir"]) / "executed.ipynb"), as_version=4)
    html = json.dumps([o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])])
    assert "Seed 002's setting (data and init fixed by seed 42)" in html and "configs in seed 002" in html


def test_tables_headline_and_figures(m13):
    t = m13["metrics"]["tables"]
    keys = {f"D{d}_H{h}" for d, h in m13["metrics"]["config"]["configs"]}
    for name in ("post_weights", "post_activations", "activation_delta"):
        assert set(t[name]) == keys
    for cell in t["post_weights"].values():
        assert set(cell) == {"emb", "Q_full", "K_full", "V_full", "out_proj"}
    assert 0 <= m13["metrics"]["fraction_cells_in_band"] <= 1
    h = m13["headline"]["act_Q_cv_post"]
    assert h["value"] > 0 and h["baseline"] > 0 and h["baseline_kind"] == "random_init"
    job = Path(m13["_job_dir"])
    assert (job / "cv_vs_head_dim.png").stat().st_size > 1000 and (job / "cv_trajectory.png").exists()


def test_headline_intervals(m13):
    n_seeds = len(m13["metrics"]["config"]["seeds"])
    per_seed = m13["metrics"]["per_seed_means"]
    for key, group in (("act_Q_cv_post", "act_Q_h*"), ("act_headout_cv_post", "act_headout_h*")):
        h = m13["headline"][key]
        assert h["interval"]["method"] == f"t interval of the mean over {n_seeds} seeds"
        assert h["interval"]["lo"] < h["value"] < h["interval"]["hi"]
        post = list(per_seed[f"post/{group}"].values())
        assert h["value"] == pytest.approx(sum(post) / len(post), rel=1e-9)  # balanced: mean of seed means
        null = h["nulls"]["random_init"]
        assert null["value"] == pytest.approx(m13["metrics"]["mean_over_configs"][f"pre/{group}"])
        assert null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"]
    ch = m13["headline"]["act_Q_cv_change"]
    diffs = [b - a for a, b in zip(per_seed["pre/act_Q_h*"].values(), per_seed["post/act_Q_h*"].values())]
    assert ch["value"] == pytest.approx(sum(diffs) / n_seeds) and ch["interval"]["lo"] < ch["value"] < ch["interval"]["hi"]
    f = m13["headline"]["fraction_in_band"]
    assert f["value"] == m13["metrics"]["fraction_cells_in_band"]
    assert f["interval"]["method"].startswith("Wilson score interval") and 0 <= f["interval"]["lo"] <= f["value"]
    assert f["nulls"]["random_init"]["value"] == m13["metrics"]["fraction_cells_in_band_pre"]


def test_executed_notebook_shows_every_figure(m13):
    job = Path(m13["_job_dir"])
    figs = m13["figures"]
    assert {f["file"] for f in figs if f["key"]} == {"cv_vs_head_dim.png", "cv_trajectory.png"}
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert sum("image/png" in o.get("data", {}) for o in outs) >= len(figs) == 2
    assert ".partial" not in json.dumps(outs)
