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
    assert "seed-mode training run was off" in second["metrics"]["claims"]["modulator_lift"]["pearson"]["note"]


def test_09_modulator_lift_claims_and_seed_mode(run_notebook):
    """The claims contract: the seed's definition of the lift (3000-entry subset, seed-mode
    training) as the headline, the project's beside it; the seed-mode run decays the alpha
    logits, pulling every alpha up toward 0.5 from the same start."""
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
        for x in (c, c["project"]):
            assert x["interval"]["lo"] <= x["value"] <= x["interval"]["hi"] and "pairs" in x["interval"]["method"]
            assert x["nulls"]["no lift"]["value"] == 0.0
        assert "seed's weight decay" in c["note"]
        assert h[f"{kind}_lift"]["value"] == pytest.approx(c["value"])
    a = mt["alpha"]
    assert a["seed_mode"]["history"][0] == pytest.approx(a["history"][0])  # same start
    assert all(s > p for s, p in zip(a["seed_mode"]["final"], a["final"]))  # decay pulls the logits toward 0
    assert len([f for f in m["figures"] if f["file"] == "modulator_lift.png"]) == 1
