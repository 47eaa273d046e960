"""The battery's fast paths against slow references: the |w| histogram kernel, chunked
float64 Grams, single-matrix spectra, the dense QK shortcut and the byte-range reader."""
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from geolip_lib.weights import TensorStore
from geolip_lib.weights import _kernels as K
from geolip_lib.metrics.factored_qk import FactoredQK
from geolip_lib.weights.spectral import gram64, spectrum_stats, svdvals

pytestmark = pytest.mark.unit


def _weights(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 1, n)).astype(np.float32)
    x[: n // 50] = 0.0
    x[n // 50: n // 40] = -0.0
    x[n // 40: n // 40 + 5] = np.nan
    x[n // 40 + 5: n // 40 + 10] = np.inf
    x[n // 40 + 10: n // 40 + 15] = 1e-42  # subnormal
    # values exactly at and next to a threshold
    t = np.float32(1e-2)
    x[-6:] = [t, -t, np.nextafter(t, 0), np.nextafter(t, 1), np.float32(1e-4), -np.float32(1e-4)]
    return rng.permutation(x)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_abs_hist_kernel_equals_reference(seed):
    x = _weights(seed, 200_003)
    th = (1e-6, 1e-4, 1e-3, 1e-2, 0.0100001, 1e-1)  # two thresholds share one bin
    h, b = K.abs_hist(x, th)
    h0, b0 = K.abs_hist_reference(x, th)
    assert np.array_equal(h, h0) and np.array_equal(b, b0)
    assert h.sum() == x.size
    a = np.abs(x)
    assert b.tolist() == [int((a < np.float32(t)).sum()) for t in sorted(th)]


def test_abs_hist_small_and_bf16_inputs():
    for n in (0, 1, 7):
        x = _weights(5, 64)[:n]
        assert [v.tolist() for v in K.abs_hist(x, (0.1,))] == [v.tolist() for v in K.abs_hist_reference(x, (0.1,))]
    x = torch.randn(4096, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16).float().numpy()
    h, b = K.abs_hist(x, (1e-2, 0.5))
    assert np.array_equal(h, K.abs_hist_reference(x, (1e-2, 0.5))[0])
    with pytest.raises(ValueError, match="thresholds"):
        K.abs_hist(x, (0.0, 0.1))
    # every bin edge is exactly representable and 8 bins span one octave
    e = K.bin_edges()
    assert e[K.INF_BIN] == np.inf and np.all(np.diff(e[1:K.INF_BIN]) > 0)
    b1 = int(np.float32(1.0).view(np.int32)) >> K.SHIFT
    assert e[b1] == 1.0 and e[b1 + 8] == 2.0 and e[b1 + 1] == 1.125


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", [(300, 40), (40, 300)])
def test_gram64_chunked_equals_one_product(seed, shape):
    W = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    W64 = W.double()
    ref = W64.mT @ W64 if shape[0] > shape[1] else W64 @ W64.mT
    got = gram64(W, chunk_bytes=8 * 40 * 7)  # 7 rows / columns per chunk
    assert got.dtype == torch.float64 and torch.allclose(got, ref, rtol=0, atol=1e-12 * float(ref.abs().max()))
    assert torch.equal(gram64(W), ref)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_single_matrix_svdvals_equals_full_svd(seed):
    g = torch.Generator().manual_seed(seed)
    for W in (torch.randn(50, 20, generator=g), torch.randn(20, 50, generator=g),
              torch.randn(30, 1, generator=g) @ torch.randn(1, 40, generator=g)):  # rank 1: exact fallback
        ref = torch.linalg.svdvals(W.double())
        got = svdvals(W, chunk_bytes=512)
        assert float((got - ref).abs().max() / ref[0]) < 1e-12
        assert torch.allclose(got, svdvals(W.double()[None])[0], rtol=0, atol=1e-12 * float(ref[0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dense_qk_singular_values_keep_stable_rank_and_pr(seed):
    # an ill-conditioned product (the dense path skips the SVD fallback): PR and stable
    # rank still agree with the exact SVD to < 1e-6 relative
    g = torch.Generator().manual_seed(seed)
    d = 64
    A = torch.randn(d, d, generator=g, dtype=torch.float64) * torch.logspace(0, -7, d, dtype=torch.float64)
    B = torch.randn(d, d, generator=g, dtype=torch.float64)
    f = FactoredQK(A, B).spectrum()  # r = d: dense path
    exact = spectrum_stats(torch.linalg.svdvals(A.mT @ B))
    got = spectrum_stats(f["svals"])
    for k in ("stable_rank", "pr"):
        assert float(got[k]) == pytest.approx(float(exact[k]), rel=1e-6)


def test_reader_equals_safetensors_for_every_dtype(tmp_path):
    g = torch.Generator().manual_seed(0)
    t = {"bf16": torch.randn(7, 5, generator=g).to(torch.bfloat16), "f16": torch.randn(3, 4, generator=g).half(),
         "f64": torch.randn(6, 2, generator=g, dtype=torch.float64), "i64": torch.arange(12).reshape(3, 4),
         "b": torch.tensor([True, False, True]), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
         "f32": torch.randn(9, 3, generator=g)}
    save_file(t, str(tmp_path / "m.safetensors"))
    ref = load_file(str(tmp_path / "m.safetensors"))
    st = TensorStore(tmp_path)
    for k, v in ref.items():
        got = st._read(k, None)
        assert got.dtype == v.dtype and torch.equal(got, v), k
    assert torch.equal(st.get("bf16", row_slice=(2, 5)), ref["bf16"][2:5].float())
    assert torch.equal(st.get("f64", torch.float64, row_slice=(1, 2)), ref["f64"][1:2])
    # a truncated file: one clear line, no partial tensor
    raw = (tmp_path / "m.safetensors").read_bytes()
    (tmp_path / "m.safetensors").write_bytes(raw[:-20])
    last = max(st._span, key=lambda k: st._span[k][1])
    with pytest.raises(ValueError, match="truncated"):
        TensorStore(tmp_path).get(last)
