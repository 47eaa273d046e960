"""Notebook 09 on the tiny profile: frozen base, gradients only in the modulator, alpha history,
CHECKPOINT_DIR / RESUME, headline intervals and nulls."""
import json
from pathlib import Path

import pytest

from tests.notebooks.test_08_modulator_pipeline import check_executed

pytestmark = pytest.mark.notebooks


def test_09_training_metrics(run_notebook):
    m = run_notebook("09_modulator_training", "tiny-t5")
    mt = m["metrics"]
    assert mt["gradient_check"]["base_params_with_grad"] == 0
    assert mt["gradient_check"]["modulator_params_with_grad"] == mt["gradient_check"]["n_modulator_params"]
    tr = mt["training"]
    assert tr["base_unchanged"] and tr["base_hash_before"] == tr["base_hash_after"]
    assert len(tr["epochs"]) == 2 and tr["steps"] == len(tr["loss_history"]) > 0
    hist = mt["alpha"]["history"]
    assert len(hist) == tr["steps"] + 1 and len(hist[0]) == 2  # one alpha per encoder block
    assert hist[0] == pytest.approx([0.01, 0.01], abs=1e-6)
    assert mt["alpha"]["final"] == pytest.approx(hist[-1])
    assert 0.9 < mt["preservation"]["mean"] <= 1.0 + 1e-9
    assert len(mt["generation"]) == 4 and all("token_diffs" in r for r in mt["generation"])
    assert any(r["prompt"].startswith("translate English to German") for r in mt["generation"])  # seed §9
    ck = Path(m["_job_dir"]) / "checkpoint"
    assert (ck / "modulator.safetensors").exists()
    saved = json.loads((ck / "history.json").read_text())
    assert saved["loss_history"] == pytest.approx(tr["loss_history"])


def test_09_headline_intervals_and_nulls(run_notebook):
    m = run_notebook("09_modulator_training", "tiny-t5")
    h, mt = m["headline"], m["metrics"]
    assert h["final_alpha_mean"]["interval"]["method"].startswith("exact")
    assert h["final_alpha_mean"]["value"] == pytest.approx(mt["alpha"]["mean"])
    assert h["final_alpha_mean"]["nulls"]["initial alpha"]["value"] == pytest.approx(0.01)
    vi = mt["val_items"]
    assert h["val_loss"]["value"] == pytest.approx(vi["trained_mean"])
    assert f"of {vi['n']} validation entries" in h["val_loss"]["interval"]["method"]
    assert h["val_loss"]["nulls"]["unmodulated"]["value"] == pytest.approx(vi["unmodulated_mean"])
    assert vi["trainer_val_loss"] == pytest.approx(mt["training"]["val_history"][-1]["loss"])
    assert "pairs" in h["trained_pearson"]["interval"]["method"]
    assert h["trained_pearson"]["nulls"]["original"]["value"] == pytest.approx(mt["relational"]["Original"]["pearson"])
    assert h["per_token_preservation"]["value"] == pytest.approx(mt["preservation"]["mean"], abs=1e-12)
    for key in ("val_loss", "trained_pearson", "per_token_preservation"):
        assert h[key]["interval"]["lo"] <= h[key]["value"] <= h[key]["interval"]["hi"], key
    check_executed(m, 3)


def test_09_resume_continues_from_checkpoint(run_notebook, tmp_path):
    first = run_notebook("09_modulator_training", "tiny-t5")  # the cached 2-epoch run
    import shutil

    ck = Path(first["_job_dir"]) / "checkpoint"
    shutil.copytree(ck, tmp_path / "checkpoint")
    second = run_notebook("09_modulator_training", "tiny-t5", N_EPOCHS=3, RESUME=True, SEED_MODE_TRAINING=False,
                          CHECKPOINT_DIR=str(tmp_path / "checkpoint"))
    tr1, tr2 = first["metrics"]["training"], second["metrics"]["training"]
    assert len(tr2["epochs"]) == 1 and tr2["epochs"][0]["epoch"] == 3  # only epoch 3 ran
    assert tr2["loss_history"][:len(tr1["loss_history"])] == pytest.approx(tr1["loss_history"])
    assert not (Path(second["_job_dir"]) / "checkpoint").exists()  # CHECKPOINT_DIR, not the job dir, was written
    assert json.loads((tmp_path / "checkpoint" / "history.json").read_text())["loss_history"] == pytest.approx(
        tr2["loss_history"])
    assert second["metrics"]["alpha"]["seed_mode"] is None and set(second["metrics"]["lift"]["runs"]) == {"project"}
    off = second["metrics"]["claims"]["modulator_lift"]["pearson"]
    assert off["as_seed_measured"] is False and "SEED_MODE_TRAINING = False" in off["note"]
    assert second["metrics"]["seed_mode"] == {"ran": False, "reason": "SEED_MODE_TRAINING = False in this profile"}


def test_09_modulator_lift_claims_and_seed_mode(run_notebook):
    """The claims contract: the lift as the seed measured it (seed §9's training as written,
    the seed's 3000-entry subset) as the headline, the project's beside it, all four
    combinations under ``variants``; the seed-mode run starts from the same modulator and
    draws its split as §9 did; the CV and coherence parts of the claim are recorded."""
    import numpy as np

    m = run_notebook("09_modulator_training", "tiny-t5")
    mt, h = m["metrics"], m["headline"]
    runs = mt["lift"]["runs"]
    assert set(runs) == {"project", "seed"} and all(set(r) == {"project", "seed"} for r in runs.values())
    assert mt["lift"]["seed_subset_size"] == 72  # min(3000, entries used)
    cl = mt["claims"]["modulator_lift"]
    for kind in ("pearson", "spearman"):
        c = cl[kind]
        seed_def, proj_def = runs["seed"]["seed"][kind], runs["project"]["project"][kind]
        assert c["value"] == pytest.approx(seed_def["value"]) and c["project"]["value"] == pytest.approx(proj_def["value"])
        assert c["value"] == pytest.approx((c["modulated"] - c["original"]) / abs(c["original"]))
        assert c["as_seed_measured"] is True and (c["training"], c["pairs"]) == ("seed", "seed")
        assert "unshifted target" in c["note"]
        assert set(c["variants"]) == {f"{r}_training|{d}_pairs" for r in ("seed", "project") for d in ("seed", "project")}
        for name, v in c["variants"].items():
            r, d = (x.split("_")[0] for x in name.split("|"))
            assert v["value"] == pytest.approx(runs[r][d][kind]["value"])
        for x in (c, c["project"], *c["variants"].values()):
            assert x["interval"]["lo"] <= x["value"] <= x["interval"]["hi"] and "pairs" in x["interval"]["method"]
            assert x["nulls"]["no lift"]["value"] == 0.0
        assert h[f"{kind}_lift"]["value"] == pytest.approx(c["value"]) and "variants" not in h[f"{kind}_lift"]
    a, sm = mt["alpha"], mt["seed_mode"]
    assert a["seed_mode"]["history"][0] == pytest.approx(a["history"][0])  # same start
    assert sm["ran"] and len(sm["epochs"]) == 2
    assert (sm["n_train"], sm["n_val"]) == (int(72 * 0.9), 72 - int(72 * 0.9))  # §9: int(n * 0.9) train
    assert len(sm["loss_history"]) == 2 * -(-sm["n_train"] // 32)  # 2 epochs of ceil(n_train / 32) steps
    cv = mt["claims"]["modulator_lift_cv"]
    assert set(cv) == {"original", "project", "seed"}
    for k, x in cv.items():
        assert x["band"] == [0.20, 0.23] and x["in_band"] == (0.20 < x["value"] < 0.23)
        assert x["interval"]["lo"] <= x["value"] <= x["interval"]["hi"] and "simplices" in x["interval"]["method"]
    assert cv["project"]["nulls"]["unmodulated"]["value"] == pytest.approx(cv["original"]["value"])
    coh = mt["claims"]["modulator_lift_coherence"]
    assert coh["project_preservation"]["value"] == pytest.approx(mt["preservation"]["mean"], abs=1e-9)
    for run in ("project", "seed"):
        g = coh[f"{run}_generation_identical"]
        assert g["interval"]["method"] == "exact (all 4 prompts)" and 0 <= g["value"] <= 1
    assert coh["project_generation_identical"]["value"] == pytest.approx(np.mean([r["identical"] for r in mt["generation"]]))
    assert coh["generation"]["applies"] is True
    assert len([f for f in m["figures"] if f["file"] == "modulator_lift.png"]) == 1
