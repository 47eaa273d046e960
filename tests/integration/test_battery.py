"""The streamed battery against independent computations on real and tiny checkpoints."""
import numpy as np
import pytest
import torch

from geolip_lib import models
from geolip_lib.models.adapters import catalog
from geolip_lib.weights import TensorStore, run_battery
from geolip_lib.weights.battery import qk_tables, sparsity_tables, svd_table

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def minilm():
    lm = models.load("all-minilm-l6-v2")
    store = TensorStore(lm.weights_dir)
    return lm, store, catalog(store, config=lm.config, family=lm.family)


def _params(lm):
    return {k: v.detach().double() for k, v in lm.model.named_parameters()}


def test_minilm_stable_ranks_and_sparsity_independent(minilm):
    lm, store, cat = minilm
    P = _params(lm)
    svd, spectra = svd_table(store, cat, roles=("q", "k", "v"))
    assert len(svd) == 18
    for _, r in svd.iterrows():
        S = torch.linalg.svdvals(P[r["name"]])  # independent: the in-memory model, full SVD
        assert np.allclose(spectra[r["name"]], S.numpy(), rtol=0, atol=1e-9 * float(S[0]))
        assert r["stable_rank"] == pytest.approx(float((S ** 2).sum() / S[0] ** 2), rel=1e-9)
    sp = sparsity_tables(store, cat, thresholds=(1e-2, 1e-1))["by_role"].set_index("role")
    for role, key in (("q", "query"), ("k", "key"), ("v", "value")):
        W = torch.cat([P[n].float().abs().flatten() for n in P if f"attention.self.{key}.weight" in n])
        assert sp.loc[role, "<0.1"] == pytest.approx(float((W < 0.1).double().mean()), abs=1e-12)


def test_minilm_qk_sign_counts_independent(minilm):
    lm, store, cat = minilm
    P = _params(lm)
    qk = qk_tables(store, cat)["layers"]
    assert len(qk) == 6
    for _, r in qk.iterrows():
        pre = f"encoder.layer.{r['layer']}.attention.self"
        M = P[f"{pre}.query.weight"].T @ P[f"{pre}.key.weight"]  # dense d×d reference
        ev = torch.linalg.eigvalsh((M + M.T) / 2)
        tol = 1e-9 * float(ev.abs().max())
        assert (r["n_pos"], r["n_neg"]) == (int((ev > tol).sum()), int((ev < -tol).sum()))
        sv = torch.linalg.svdvals(M)
        assert r["stable_rank"] == pytest.approx(float((sv ** 2).sum() / sv[0] ** 2), rel=1e-8)


@pytest.mark.parametrize("name", ["tiny-t5-v1_1", "tiny-open-clip", "tiny-qwen"])
def test_battery_runs_per_family_and_null_baseline(name):
    lm = models.load(name)
    s = run_battery(lm).summary()
    n = run_battery(TensorStore(lm.random_init().model.state_dict()), config=lm.config, family=lm.family).summary()
    for summ in (s, n):
        assert summ["qk"] and summ["svd_by_role"]["q"]["stable_rank"] >= 1
        assert 0 <= summ["sparsity_model"]["<0.1"] <= 1
        assert summ["mlp"]["neurons"] > 0
        assert not summ["unclassified_2d"]
    if name == "tiny-t5-v1_1":
        assert s["mlp"]["gated"] and "decoder/cross" in s["qk"] and s["position_bias"]
    if name == "tiny-open-clip":
        assert set(s["qk"]) == {"text/self", "vision/self"}
