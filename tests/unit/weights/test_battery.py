"""Unit tests of the weight battery's numerics (no model): fast == slow references."""
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from geolip_lib.checkpoints import Catalog, Entry, split_fused
from geolip_lib.weights import TensorStore
from geolip_lib.weights.battery import cross_layer, mlp_tables, sparsity_tables, svdvals
from geolip_lib.weights.spectral import spectrum_stats

pytestmark = pytest.mark.unit


def test_spectrum_stats_closed_forms():
    S = torch.tensor([[4.0, 2.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]], dtype=torch.float64)
    st = spectrum_stats(S)
    assert torch.allclose(st["stable_rank"], torch.tensor([21 / 16, 4.0], dtype=torch.float64))
    assert torch.allclose(st["pr"], torch.tensor([49 / 21, 4.0], dtype=torch.float64))
    assert st["active_frac"].tolist() == [0.75, 1.0]
    assert st["rank_energy"].tolist() == [2, 4]  # 16/21 < .9 <= 20/21 ; 3/4 < .9 <= 1
    assert st["condition"][0] == float("inf") and st["condition"][1] == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_rank_90_seed_and_energy_definitions_equal_numpy(seed):
    """rank_90 in both definitions against numpy on random matrices: the seed's
    np.searchsorted(np.cumsum(S)/S.sum(), 0.90)+1 (on S) and the energy rank (on S²)."""
    rng = np.random.default_rng(seed)
    Ws = [rng.standard_normal((40, 64)),  # flat Marchenko–Pastur spectrum
          rng.standard_normal((64, 64)) * np.logspace(0, -3, 64),  # decaying spectrum
          rng.standard_normal((30, 5)) @ rng.standard_normal((5, 50)) + 1e-3 * rng.standard_normal((30, 50))]
    differ = 0
    for W in Ws:
        S = np.linalg.svd(W, compute_uv=False)  # float64, descending
        seed_rank = int(np.searchsorted(np.cumsum(S) / S.sum(), 0.90) + 1)
        energy_rank = int(np.searchsorted(np.cumsum(S ** 2) / (S ** 2).sum(), 0.90) + 1)
        st = spectrum_stats(torch.from_numpy(S))
        assert int(st["rank_seed"]) == seed_rank and int(st["rank_energy"]) == energy_rank
        st_b = spectrum_stats(svdvals(torch.from_numpy(W)[None]))  # through the battery's singular values
        assert int(st_b["rank_seed"][0]) == seed_rank and int(st_b["rank_energy"][0]) == energy_rank
        assert seed_rank >= energy_rank  # Σσ reaches 90 % no sooner than Σσ²
        differ += seed_rank != energy_rank
    assert differ >= 2
    # closed forms: S = (4, 2, 1, 0): cumsum S / 7 = (.571, .857, 1, 1) -> 3; a zero spectrum -> 1
    st = spectrum_stats(torch.tensor([[4.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64))
    assert st["rank_seed"].tolist() == [3, 1]


@pytest.mark.parametrize("seed", [0, 1])
def test_gram_svdvals_equal_full_svd(seed):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(4, 30, 70, generator=g, dtype=torch.float64)
    W[1] = W[1, :, :1] @ W[1, :1, :]  # rank 1: falls back to the exact SVD
    W[2] = W[2].mT[:30].contiguous() if False else W[2]
    ref = torch.linalg.svdvals(W)
    got = svdvals(W)
    assert ((got - ref).abs().amax(-1) / ref[:, 0]).max() < 1e-12
    Wt = W.mT.contiguous()  # tall matrices use the other Gram side
    assert ((svdvals(Wt) - ref).abs().amax(-1) / ref[:, 0]).max() < 1e-12


def _toy(tmp_path, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    t = {f"l{i}.up": torch.randn(12, 6, generator=g).to(dtype) for i in range(3)}
    t |= {f"l{i}.down": torch.randn(6, 12, generator=g).to(dtype) for i in range(3)}
    t["l0.up"][3] = 0  # a dead neuron in layer 0
    t["fused"] = (torch.randn(18, 6, generator=g) * 0.1).to(dtype)
    save_file(t, str(tmp_path / "model.safetensors"))
    ents = [Entry(f"l{i}.up", "mlp_in", "encoder", None, i, (12, 6), str(dtype)[6:]) for i in range(3)]
    ents += [Entry(f"l{i}.down", "mlp_out", "encoder", None, i, (6, 12), str(dtype)[6:]) for i in range(3)]
    parent = Entry("fused", "qkv", "encoder", "self", 0, (18, 6), str(dtype)[6:], n_heads=2, head_dim=3)
    ents += [parent] + split_fused(parent)
    return t, Catalog(ents, family="toy", d_model=6)


def test_store_streams_rows_and_upcasts_bf16(tmp_path):
    t, cat = _toy(tmp_path, torch.bfloat16)
    st = TensorStore(tmp_path)
    assert st.dtype("l0.up") == "bfloat16" and st.shape("fused") == (18, 6)
    W = st.get("l1.up")
    assert W.dtype == torch.float32 and torch.equal(W, t["l1.up"].float())
    k = next(e for e in cat.entries if e.role == "k")
    assert torch.equal(st.get(k, torch.float64), t["fused"][6:12].double())
    assert torch.equal(st.get(k, row_slice=(1, 3)), t["fused"][7:9].float())
    with pytest.raises(ValueError, match="row_slice"):
        st.get(k, row_slice=(0, 7))
    with pytest.raises(ValueError, match="no tensor"):
        st.get("nope")


def test_sparsity_and_mlp_and_cross_layer_match_direct(tmp_path):
    t, cat = _toy(tmp_path)
    st = TensorStore(tmp_path)
    sp = sparsity_tables(st, cat, thresholds=(0.01, 0.1, 1.0))
    allv = torch.cat([v.abs().flatten() for v in t.values()])
    for th in (0.01, 0.1, 1.0):
        assert sp["model"][f"<{th:g}"].iloc[0] == pytest.approx(float((allv < th).double().mean()))
    q = sp["by_role"].set_index("role").loc["q", "<0.1"]
    assert q == pytest.approx(float((t["fused"][:6].abs() < 0.1).double().mean()))
    assert sp["hist"]["count"].sum() == allv.numel()
    ml = mlp_tables(st, cat)["layers"].set_index("layer")
    for i in range(3):
        c = t[f"l{i}.up"].double().norm(dim=1) * t[f"l{i}.down"].double().norm(dim=0)
        assert ml.loc[i, "dead"] == int((c < 0.01 * c.mean()).sum())
        assert ml.loc[i, "weak"] == int((c < 0.1 * c.mean()).sum())
    assert ml.loc[0, "dead"] >= 1
    cl = cross_layer(st, cat, roles=("mlp_in",), chunk_bytes=200)  # tiny chunks: several row passes
    C = cl[("encoder", None, "mlp_in")]["cos"]
    X = torch.stack([t[f"l{i}.up"].double().flatten() for i in range(3)])
    X = X / X.norm(dim=1, keepdim=True)
    assert np.allclose(C, (X @ X.T).numpy(), atol=1e-12)
