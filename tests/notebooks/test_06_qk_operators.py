"""Notebook 06 on the tiny profile: metrics read back and checked against the library."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
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


def test_headlines_are_exact_means_and_the_random_init_null_is_over_its_seeds(t5_run):
    """Each headline is a mean over every (layer pair, head) cell of the group: exact, "exact (all
    4 (layer pair, head) cells …)"; the random-init null is a distribution over 5 init seeds."""
    h = t5_run["headline"]
    assert set(h) == {"cos_to_anchor", "cos_adjacent", "pa_deg", "sign_agree", "spec_cos_to_anchor", "spec_minus_op"}
    for key, e in h.items():
        iv = e["interval"]
        assert e["kind"] == "exact" and iv["lo"] == iv["hi"] == e["value"], key
        assert iv["method"].startswith("exact (all ") and "heads" in iv["method"], iv["method"]
        null = e["nulls"]["random_init"]
        assert len(null["per_seed"]) == 5 and len(set(null["per_seed"])) >= 2, key  # five inits (sign agreement is discrete)
        assert null["interval"]["kind"] == "over_seeds" and null["interval"]["lo"] <= null["value"] <= null["interval"]["hi"]
    assert h["sign_agree"]["nulls"]["chance"]["value"] == 0.5
    # the recorded items average to the headline value (layer pair x head cells here)
    ops = op.load(Path(t5_run["_job_dir"]) / "qk_encoder.self.json")
    p = t5_run["parameters"]
    s = op.headline_samples(ops, anchor=p["ANCHOR"], k=p["TOP_K"])
    assert np.mean(s["cos_to_anchor"]["values"]) == pytest.approx(h["cos_to_anchor"]["value"], abs=1e-12)
    assert "4 (layer pair, head) cells" in h["cos_to_anchor"]["interval"]["method"]
    # the first init seed is the twin whose operators are saved
    null0 = op.load(Path(t5_run["_job_dir"]) / "qk_encoder.self_random_init.json")
    s0 = op.headline_samples(null0, anchor=p["ANCHOR"], k=p["TOP_K"])
    assert h["cos_to_anchor"]["nulls"]["random_init"]["per_seed"][0] == pytest.approx(
        np.mean(s0["cos_to_anchor"]["values"]), abs=1e-12)


def test_executed_notebook_shows_every_figure_and_no_partial_paths(t5_run):
    job = Path(t5_run["_job_dir"])
    nb = nbformat.read(str(job / "executed.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    n_png = sum(1 for o in outputs if "image/png" in o.get("data", {}))
    assert n_png >= len(t5_run["figures"]) == 4
    assert {f["file"] for f in t5_run["figures"] if f["key"]} == {"cos_matrix.png", "principal_angles.png",
                                                                   "spectral_vs_operator.png"}
    text = json.dumps([{k: v for k, v in o.items() if k != "data"} | {"data": {k: v for k, v in o.get("data", {}).items()
                       if not k.startswith("image/")}} for o in outputs])
    assert ".partial" not in text
    assert all(e["interval"] is not None for e in t5_run["headline"].values() if e["value"] is not None)
    assert not any(k.startswith("_") for k in _all_keys(t5_run["metrics"]))


def _all_keys(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _all_keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _all_keys(v)


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
    for png in ("cos_matrix.png", "sign_agreement.png", "principal_angles.png", "spectral_vs_operator.png"):
        assert (job / png).stat().st_size > 1000



def test_spectral_cosine_recorded_matches_numpy_on_the_saved_spectra(t5_run):
    """Seed 004's question: the spectral cosine (sorted eigenvalues of the symmetric part)
    recomputed with numpy from the saved spectra, beside the operator cosine, per group."""
    job, m, p = Path(t5_run["_job_dir"]), t5_run["metrics"], t5_run["parameters"]
    for g in ("encoder.self", "decoder.cross"):
        ops = op.load(job / f"qk_{g}.json")
        lam = -np.sort(-ops.sym_eigs.numpy(), axis=-1)                    # (L, H, 2·head_dim), descending
        lam /= np.linalg.norm(lam, axis=-1, keepdims=True)
        a = p["ANCHOR"] % ops.n_layers
        others = [i for i in range(ops.n_layers) if i != a]
        spec = np.einsum("lhn,hn->lh", lam[others], lam[a]).mean()
        rec = m["spectral_vs_operator"][g]
        assert rec["spectral_cos_to_anchor"]["value"] == pytest.approx(spec, abs=1e-12)
        assert rec["operator_cos_to_anchor"]["value"] == pytest.approx(
            m["groups"][g]["analysis"]["mean_cos_to_anchor"], abs=1e-12)
        assert rec["spectral_minus_operator"]["value"] == pytest.approx(
            spec - rec["operator_cos_to_anchor"]["value"], abs=1e-12)
        for e in rec.values():
            assert e["kind"] == "exact" and e["interval"]["lo"] == e["value"]
            assert e["items_interval"]["lo"] <= e["items_interval"]["hi"]  # the bootstrap over the cells, kept
            assert len(e["nulls"]["random_init"]["per_seed"]) == 5
    h = t5_run["headline"]
    assert h["spec_cos_to_anchor"]["value"] == m["spectral_vs_operator"]["encoder.self"]["spectral_cos_to_anchor"]["value"]


def test_generated_twin_above_the_threshold(t5_run, run_notebook):
    """TWIN_MAX_PARAMS below the model's size: the saved random-init operators are those of
    the generated twin (geolip_lib.models.twin), the trained ones unchanged."""
    from geolip_lib.models.twin import RandomInitStore

    m = run_notebook("06_qk_operators", "tiny-t5", TWIN_MAX_PARAMS=0)
    job, base = Path(m["_job_dir"]), Path(t5_run["_job_dir"])
    lm = models.load("tiny-t5")
    twin = lm.random_init_weights(max_params=0)
    assert isinstance(twin, RandomInitStore)
    ref = op.measure_model(twin, top_k=m["parameters"]["TOP_K"])
    for g in ("encoder.self", "decoder.self", "decoder.cross"):
        got = op.load(job / f"qk_{g}_random_init.json")
        assert torch.equal(got.gram, ref[g].gram) and torch.equal(got.sym_eigs, ref[g].sym_eigs)
        assert not torch.equal(got.gram, op.load(base / f"qk_{g}_random_init.json").gram)
        assert torch.equal(op.load(job / f"qk_{g}.json").gram, op.load(base / f"qk_{g}.json").gram)
