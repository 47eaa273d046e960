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
    assert all(r["stack/attn"] for r in rep)
    assert m["metrics"]["n_models"] == 2
    assert m["metrics"]["source"] == "computed here" and m["metrics"]["source_jobs"] == []
    assert {x.get("name") for x in m["provenance"]["models"]} >= {"tiny-t5", "tiny-bert"}  # fallback loads


def test_03_headlines_are_means_over_models_with_random_init_nulls(run_notebook):
    m = run_notebook("03_cross_model")
    h, meas = m["headline"], m["metrics"]["measured"]
    assert set(h) == {"n_models", "q_sparsity_mean", "qk_seed_balance_mean", "mlp_dead_frac_mean",
                      "cross_layer_adj_mean"}
    assert h["n_models"]["value"] == 2 and h["n_models"]["interval"]["method"].startswith("exact")
    for key, col in (("mlp_dead_frac_mean", "dead MLP"), ("cross_layer_adj_mean", "adj-layer cos (attn)")):
        tr = [r[col] for r in meas if r["weights"] == "trained"]
        rn = [r[col] for r in meas if r["weights"] == "random init"]
        assert h[key]["value"] == pytest.approx(np.mean(tr)), key
        assert h[key]["nulls"]["random_init"]["value"] == pytest.approx(np.mean(rn)), key
    # two models: the two-stage bootstrap resamples the MLP layers / layer pairs within each model too
    for key, what in (("mlp_dead_frac_mean", "MLP layers"), ("cross_layer_adj_mean", "adjacent layer pairs")):
        iv = h[key]["interval"]
        assert iv["method"].endswith(f"of 2 models and the {what} within each"), key
        assert iv["lo"] is not None and iv["lo"] <= h[key]["value"] <= iv["hi"], key


def test_03_compares_per_stack_rows_not_pooled_numbers(run_notebook):
    """Like with like: one row per model × stack/attn (tiny-t5: encoder self, decoder self,
    decoder cross; tiny-bert: encoder self), values equal to each model's per-stack battery numbers."""
    m = run_notebook("03_cross_model")
    rows, h = m["metrics"]["measured_by_stack"], m["headline"]
    keys = [(r["model"], r["weights"], r["stack/attn"]) for r in rows]
    assert len(keys) == len(set(keys)) == 8
    assert {(mo, s) for mo, w, s in keys if w == "trained"} == {
        ("tiny-t5", "encoder/self"), ("tiny-t5", "decoder/self"), ("tiny-t5", "decoder/cross"), ("tiny-bert", "encoder/self")}
    t5 = {r["stack/attn"]: r for r in rows if r["model"] == "tiny-t5" and r["weights"] == "trained"}
    assert [r["QK layers"] for r in t5.values()] == [2, 2, 2]
    assert all(0 <= r["QK seed min"] <= r["QK seed (mean)"] <= r["QK seed max"] <= 1 for r in rows)
    # full multi-head attention (tiny-t5, tiny-bert): nothing forced by shape, nothing left out of the QK mean
    assert all(r["QK seed forced"] is False and r["QK project forced"] is False for r in rows)
    assert h["qk_seed_balance_mean"]["excluded_forced_by_shape"] == []
    # the per-stack headlines: means over the trained (model, stack/attn) rows, two-stage bootstrap
    for key, col, what in (("q_sparsity_mean", "Q sparsity", "Q matrices"), ("qk_seed_balance_mean", "QK seed (mean)",
                                                                            "layers")):
        tr = [r[col] for r in rows if r["weights"] == "trained"]
        rn = [r[col] for r in rows if r["weights"] == "random init"]
        assert h[key]["value"] == pytest.approx(np.mean(tr)), key
        assert h[key]["nulls"]["random_init"]["value"] == pytest.approx(np.mean(rn)), key
        assert h[key]["interval"]["method"].endswith(f"of 4 model × stack/attn rows and the {what} within each"), key
    # the seed's reported rows on the same per-stack keys; no seed model in the tiny profile
    rep = m["metrics"]["reported_by_seed"]
    xxl_q = {r["stack/attn"]: r["Q sparsity"] for r in rep if r["model"] == "t5-v1_1-xxl" and r["Q sparsity"]}
    assert xxl_q == {"encoder/self": 1.0, "decoder/self": 1.0, "decoder/cross": 1.0}
    assert any(r["model"] == "t5-v1_1-xxl" and r["stack/attn"] == "decoder/cross" and r["QK seed (mean)"] == 0.5
               for r in rep)
    assert any(r["model"] == "t5-small" and r["stack/attn"] == "encoder+decoder/self" and r["Q sparsity"] == 0.937
               for r in rep)
    assert m["metrics"]["seed_vs_measured"] == []


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



def test_03_reads_the_02_jobs_of_its_root_and_never_a_linked_one(run_notebook, tmp_path):
    """Run in an output root (run_all sets REPORT_ROOT to it), 03 reads the finished 02 jobs through
    roots.finished_metrics: tiny-t5's job is read; a linked job folder (to a copy of it elsewhere)
    and a .failed one are not."""
    import shutil
    src = Path(run_notebook("02_weight_topology", "tiny-t5")["_job_dir"])
    root = tmp_path / "root"
    shutil.copytree(src, root / "02_weight_topology" / "tiny-t5")
    shutil.copytree(src, tmp_path / "elsewhere")
    (root / "02_weight_topology" / "t5-small").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    shutil.copytree(src, root / "02_weight_topology" / "tiny-t5.failed")
    from run_all import execute_job, jobs_for_profile
    res = execute_job(jobs_for_profile("tiny", notebooks=["03_cross_model"])[0], out_root=root)  # REPORT_ROOT = root
    assert res.ok, res.error
    m = json.loads((res.job_dir / "metrics.json").read_text(encoding="utf-8"))
    assert m["metrics"]["source"] == "02_weight_topology jobs"
    assert m["metrics"]["source_jobs"] == ["02_weight_topology/tiny-t5"]
    assert m["metrics"]["n_models"] == 1
    assert {r["model"] for r in m["metrics"]["measured"]} == {"tiny-t5"}
