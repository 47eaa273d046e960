"""The streamed battery against independent computations on real and tiny checkpoints."""
import numpy as np
import pytest
import torch

from geolip_lib import models
from geolip_lib.families import catalog
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


def test_minilm_per_stack_sparsity_rank90_and_claims_independent(minilm):
    """What reviewers recompute on the MiniLM weights with numpy: per-(stack, attn) sparsity,
    rank_90 in both definitions (the seed-form QK balance: tests/unit/weights/test_qk_balance_statement.py),
    and the claims notebook 02 records from them."""
    from geolip_lib.checkpoints import MATRIX_ROLES
    from geolip_lib.weights import tables as T

    lm, store, cat = minilm
    P = {k: v.detach().float().numpy() for k, v in lm.model.named_parameters()}
    res = run_battery(store, cat=cat, device="cpu", svd_roles=MATRIX_ROLES)
    s = res.summary()
    for role, key in (("q", "query"), ("k", "key"), ("v", "value")):
        W = [np.abs(P[f"encoder.layer.{i}.attention.self.{key}.weight"]) for i in range(6)]
        frac = sum(int((w < np.float32(0.1)).sum()) for w in W) / sum(w.size for w in W)
        assert s["sparsity_by_stack_role"][f"encoder/self/{role}"]["<0.1"] == pytest.approx(frac, abs=1e-15)
    items = T.stack_items(res)
    assert list(items) == ["encoder/self"] and list(items["encoder/self"]) == ["q", "k", "v"]
    it = items["encoder/self"]["q"]
    assert len(it["num"]) == 6 and sum(it["num"]) / sum(it["den"]) == s["sparsity_by_stack_role"]["encoder/self/q"]["<0.1"]
    # rank_90: the seed's (cumsum of S) and the energy one (cumsum of S²), numpy SVD per matrix
    svd = res.svd.set_index("name")
    assert len(svd) == 36
    for name, r in svd.iterrows():
        S = np.linalg.svd(P[name].astype(np.float64), compute_uv=False)
        assert r["rank_90_seed"] == np.searchsorted(np.cumsum(S) / S.sum(), 0.90) + 1, name
        assert r["rank_90"] == np.searchsorted(np.cumsum(S ** 2) / (S ** 2).sum(), 0.90) + 1, name
    assert s["svd_by_role"]["q"]["rank_90_seed"] == pytest.approx(svd.loc[svd["role"] == "q", "rank_90_seed"].mean())
    # the claims: the same numbers, in the seed's definition, with the project's beside them
    c = T.battery_claims(s, T.headline_items(res), items, n_boot=200)
    assert set(c) == {"q_sparsity", "qk_self_balance", "cross_layer_corr"}  # no cross attention, no position bias
    assert c["q_sparsity"]["encoder/self"]["value"] == s["sparsity_by_stack_role"]["encoder/self/q"]["<0.1"]
    qk = c["qk_self_balance"]["encoder/self"]
    assert qk["per_layer"] == s["qk"]["encoder/self"]["seed_pos_frac"] and qk["value"] == pytest.approx(np.mean(qk["per_layer"]))
    assert qk["project"]["per_layer"] == s["qk"]["encoder/self"]["balance"]
    assert qk["interval"]["lo"] <= qk["value"] <= qk["interval"]["hi"] < 0.5  # trained MiniLM: below 0.5


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
    if name == "tiny-open-clip":  # the vision tower (seed §5) and the text tower, reported separately
        assert set(s["qk"]) == {"text/self", "vision/self"}
        assert {"vision/self/q", "text/self/q"} <= set(s["sparsity_by_stack_role"])


def _assert_same_battery(a, b):
    """Fused engine result ``a`` equals reference engine result ``b`` (round-off for spectra)."""
    import pandas as pd

    num = ["stable_rank", "pr", "active_frac", "condition", "max_sv", "min_sv"]
    assert len(a.svd) == len(b.svd) > 0
    pd.testing.assert_frame_equal(a.svd.drop(columns=num), b.svd.drop(columns=num))
    for c in num:
        assert np.allclose(a.svd[c], b.svd[c], rtol=1e-7, atol=0), c
    assert a.spectra.keys() == b.spectra.keys()
    for k in a.spectra:
        assert np.allclose(a.spectra[k], b.spectra[k], rtol=0, atol=1e-10 * b.spectra[k][0]), k
    for k in ("per_tensor", "by_role", "by_stack_role", "model", "hist"):
        pd.testing.assert_frame_equal(a.sparsity[k], b.sparsity[k], check_exact=True)
    qa, qb = a.qk["layers"], b.qk["layers"]
    assert len(qa) == len(qb)
    for c in qa.columns:
        if c in ("top_eig", "bottom_eig"):
            assert np.allclose(np.stack(qa[c]), np.stack(qb[c]), rtol=1e-9, atol=1e-12)
        elif qa[c].dtype.kind == "f":
            assert np.allclose(qa[c], qb[c], rtol=1e-9, atol=1e-12), c
        else:
            assert qa[c].tolist() == qb[c].tolist(), c
    pd.testing.assert_frame_equal(a.qk["heads"], b.qk["heads"], rtol=1e-9)
    pd.testing.assert_frame_equal(a.mlp["layers"], b.mlp["layers"], rtol=1e-12)
    assert a.cross.keys() == b.cross.keys()
    pd.testing.assert_frame_equal(a.norms, b.norms)
    pd.testing.assert_frame_equal(a.pos_bias, b.pos_bias)


@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "tiny-t5", "tiny-t5-v1_1", "tiny-bert", "tiny-dinov2",
                                  "tiny-open-clip", "tiny-qwen"])
def test_fused_engine_equals_reference_engine(name):
    lm = models.load(name)
    fused = run_battery(lm)
    ref = run_battery(lm, engine="reference")
    _assert_same_battery(fused, ref)
    assert {"read", "sparsity", "svd", "qk", "cross_layer"} <= set(fused.seconds)
    # embeddings get spectra too; every stored float tensor is counted once for the model
    assert "embed" in set(fused.svd["role"])
    n = sum(e.numel for e in fused.catalog.stored() if "float" in str(e.dtype))
    assert int(fused.sparsity["model"]["n"].iloc[0]) == n == int(fused.sparsity["hist"]["count"].sum())


def test_fused_engine_equals_reference_on_fused_qkv_bf16_and_f64(tmp_path):
    from safetensors.torch import save_file

    from geolip_lib.checkpoints import Catalog, Entry, split_fused

    g = torch.Generator().manual_seed(3)
    t = {"in_proj": torch.randn(24, 8, generator=g).to(torch.bfloat16), "out": torch.randn(8, 8, generator=g),
         "up": torch.randn(16, 8, generator=g, dtype=torch.float64), "down": torch.randn(8, 16, generator=g),
         "emb": torch.randn(40, 8, generator=g).half(), "ln": torch.ones(8) + 0.1 * torch.randn(8, generator=g)}
    save_file(t, str(tmp_path / "model.safetensors"))
    parent = Entry("in_proj", "qkv", "vision", "self", 0, (24, 8), "bfloat16", n_heads=2, head_dim=4)
    ents = [parent, *split_fused(parent),
            Entry("out", "o", "vision", "self", 0, (8, 8), "float32", n_heads=2, head_dim=4),
            Entry("up", "mlp_in", "vision", None, 0, (16, 8), "float64"),
            Entry("down", "mlp_out", "vision", None, 0, (8, 16), "float32"),
            Entry("emb", "embed", None, None, None, (40, 8), "float16"),
            Entry("ln", "norm", "vision", None, 0, (8,), "float32")]
    cat = Catalog(ents, family="toy", d_model=8)
    st = TensorStore(tmp_path)
    a, b = run_battery(st, cat=cat), run_battery(st, cat=cat, engine="reference")
    _assert_same_battery(a, b)
    assert set(a.svd["role"]) == {"q", "k", "v", "o", "mlp_in", "mlp_out", "embed"}
    assert int(a.sparsity["model"]["n"].iloc[0]) == sum(v.numel() for v in t.values())
    # a float64 tensor is analysed in float64 (not through float32)
    S = torch.linalg.svdvals(t["up"])
    assert np.allclose(a.spectra["up"], S.numpy(), rtol=0, atol=1e-13 * float(S[0]))
    # views whose stored tensor has no catalog entry: counted for their roles only, like the reference
    cat2 = Catalog([e for e in ents if e.role != "qkv"], family="toy", d_model=8)
    _assert_same_battery(run_battery(st, cat=cat2), run_battery(st, cat=cat2, engine="reference"))
    with pytest.raises(ValueError, match="engine"):
        run_battery(st, cat=cat, engine="fast")
