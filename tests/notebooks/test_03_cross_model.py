"""03_cross_model on the tiny profile: measured rows and seed-reported rows stay separate;
headlines are means over models with a bootstrap over models and the random-init null."""
import json
from pathlib import Path

import nbformat
import numpy as np
import pytest

pytestmark = pytest.mark.notebooks


def test_03_cross_model(run_notebook):
    m = run_notebook("03_cross_model")
    meas = m["metrics"]["measured"]
    assert {r["model"] for r in meas} == {"tiny-t5", "tiny-bert"}
    assert {r["weights"] for r in meas} == {"trained", "random init"}
    rep = m["metrics"]["reported_by_seed"]
    assert all(r["source"] == "reported by the seed" for r in rep)
    assert any(r["model"] == "t5-small" and r["Q sparsity"] == 0.937 for r in rep)
    assert m["metrics"]["n_models"] == 2
    assert m["metrics"]["source"] == "computed here" and m["metrics"]["source_jobs"] == []
    assert {x.get("name") for x in m["provenance"]["models"]} >= {"tiny-t5", "tiny-bert"}  # fallback loads


def test_03_headlines_are_means_over_models_with_random_init_nulls(run_notebook):
    m = run_notebook("03_cross_model")
    h, meas = m["headline"], m["metrics"]["measured"]
    assert h["n_models"]["value"] == 2 and h["n_models"]["interval"]["method"].startswith("exact")
    for key, col in (("q_sparsity_mean", "Q sparsity"), ("qk_pos_frac_first_mean", "QK pos first"),
                     ("mlp_dead_frac_mean", "dead MLP"), ("cross_layer_adj_mean", "adj-layer cos (attn)")):
        tr = [r[col] for r in meas if r["weights"] == "trained"]
        rn = [r[col] for r in meas if r["weights"] == "random init"]
        assert h[key]["value"] == pytest.approx(np.mean(tr)), key
        assert h[key]["nulls"]["random_init"]["value"] == pytest.approx(np.mean(rn)), key
        assert "resamples of 2 models" in h[key]["interval"]["method"], key
    # two models: the two-stage bootstrap resamples the matrices / layers / pairs within each model too
    for key, what in (("q_sparsity_mean", "Q matrices"), ("mlp_dead_frac_mean", "MLP layers"),
                      ("cross_layer_adj_mean", "adjacent layer pairs")):
        iv = h[key]["interval"]
        assert iv["method"].endswith(f"of 2 models and the {what} within each"), key
        assert iv["lo"] is not None and iv["lo"] <= h[key]["value"] <= iv["hi"], key
    assert h["qk_pos_frac_first_mean"]["interval"]["method"].endswith("of 2 models")


def test_03_executed_notebook_shows_the_figure_and_no_partial_paths(run_notebook):
    m = run_notebook("03_cross_model")
    nb = nbformat.read(str(Path(m["_job_dir"]) / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert [(f["file"], f["key"]) for f in m["figures"]] == [("cross_model.png", True)]
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= len(m["figures"])
    text = json.dumps([{k: v for k, v in o.get("data", {}).items() if not k.startswith("image/")} for o in outputs]
                      + [o.get("text", "") for o in outputs])
    assert ".partial" not in text and "Traceback" not in text
    assert all(e["interval"] is not None for e in m["headline"].values() if e["value"] is not None)

