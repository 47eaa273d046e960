"""Notebook 16 (Ethayarajh 2019's contextual geometry) on the tiny profile: the per-layer
measurements, the two nulls, and the claims records that params/claims/ethayarajh-2019.yaml reads."""
from __future__ import annotations

from pathlib import Path

import pytest

from geolip_lib import claims

pytestmark = pytest.mark.notebooks
NB = "16_contextual_geometry"


@pytest.fixture(scope="module")
def m16(run_notebook):
    return run_notebook(NB, "tiny-bert")


def test_layers_and_contexts(m16):
    m = m16["metrics"]
    ctx = m["contexts"]
    params = m16["parameters"]
    assert len(ctx["words"]) == params["N_WORDS"] and all(
        params["MIN_CONTEXTS"] <= c <= params["MAX_CONTEXTS"] for c in ctx["contexts_per_word"])
    assert set(m["layers"]) == {"tiny-bert", "isotropic Gaussian", "random init"}
    st = m["layers"]["tiny-bert"]
    assert st["layer"] == [0, 1, 2]  # tiny-bert: embedding output + 2 blocks
    for key in ("anisotropy", "self_similarity", "adjusted_self_similarity", "mev", "adjusted_mev"):
        for r in st[key]:
            assert r["lo"] <= r["value"] <= r["hi"]
    for r in st["mev"]:  # MEV lies in [1/n, 1] for n contexts
        assert 1 / params["MAX_CONTEXTS"] - 1e-9 <= r["value"] <= 1
    for r in m["layers"]["isotropic Gaussian"]["anisotropy"]:
        assert r["lo"] < 0.05 and r["hi"] > -0.05  # an isotropic space has no anisotropy


def test_claims_records_carry_both_nulls(m16):
    rec = m16["metrics"]["claims"]
    assert set(rec) == {"anisotropy", "self_similarity_drop", "mev", "adjusted_mev"}
    for name, r in rec.items():
        h = r["block outputs"]
        assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"], name
        assert set(h["nulls"]) == {"gaussian", "random_init"}, name
        assert len(h["nulls"]["random_init"]["per_seed"]) == m16["parameters"]["RANDOM_INIT_SEEDS"]
        assert len(h["per_layer"]) == 2  # the block outputs only
    a = rec["anisotropy"]["block outputs"]
    assert a["value"] == pytest.approx(min(a["per_layer"]))
    counts = m16["metrics"]["contexts"]["contexts_per_word"]  # no occurrence is cut off at 64 tokens here
    mev, adj = rec["mev"]["block outputs"], rec["adjusted_mev"]["block outputs"]
    assert mev["floor"]["value"] == pytest.approx(sum(1 / c for c in counts) / len(counts))
    assert mev["floor"]["value"] <= mev["value"]
    assert adj["floor"]["value"] <= min(0.0, adj["value"]) and "at least 21 contexts" in mev["floor"]["decide"]
    assert (Path(m16["_job_dir"]) / "contextual_layers.png").stat().st_size > 1000


def test_the_claims_file_reads_the_records(m16, tmp_path):
    """The claims file finds every record; tiny-bert is a pipeline check (no verdict), and the
    paper's models read 'not tested on this profile'."""
    import shutil

    shutil.copytree(m16["_job_dir"], tmp_path / NB / "tiny-bert")
    rows = claims.evaluate(tmp_path, "ethayarajh-2019")
    assert {r["model"] for r in rows} == {"bert-base-uncased", "gpt2", "elmo"}
    assert all(r["verdict"] == claims.NOT_TESTED for r in rows)
    assert claims.pipeline_checks(tmp_path, "ethayarajh-2019") == ["tiny-bert"]
