"""Known-answer tests of geolip_lib.metrics.factored_qk.FactoredQK (factored fast paths vs the
dense slow reference built from the d × d product)."""
import pytest
import torch

from geolip_lib.metrics.factored_qk import FactoredQK, inertia, kv_head_index

SEEDS = (0, 1, 2, 3)


def _rand(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _orth(seed, d):
    Q, _ = torch.linalg.qr(_rand(seed + 1000, d, d))
    return Q


def _known_form(seed, d=12, signs=(2.0, 1.0, -3.0, 0.0)):
    """A form whose symmetric part is Pᵀ diag(signs) P with P (r × d) of full row rank:
    A = P, B = diag(signs) P, so M = Pᵀ D P is symmetric with inertia (#>0, #<0, d-#nonzero)."""
    P = _rand(seed, len(signs), d)
    D = torch.diag(torch.tensor(signs, dtype=torch.float64))
    return FactoredQK(P, D @ P)


@pytest.mark.parametrize("seed", SEEDS)
def test_known_inertia(seed):
    f = _known_form(seed)
    for method in ("factored", "dense", "auto"):
        sc = f.inertia(method=method)
        assert (int(sc["n_pos"]), int(sc["n_neg"]), int(sc["n_zero"])) == (2, 1, 9)
        assert float(sc["balance"]) == pytest.approx(2 / 3)
    # sym_eig (seed 004's solver): 2r candidates, the nonzero ones carry the same signs
    ev, _ = f.sym_eig()
    nz = ev[ev.abs() > 1e-9 * ev.abs().max()]
    assert (int((nz > 0).sum()), int((nz < 0).sum())) == (2, 1)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("r,d", [(3, 16), (8, 16), (16, 16), (20, 12)])
def test_svals_fro_sym_equal_dense(seed, r, d):
    A, B = _rand(seed, r, d), _rand(seed + 50, r, d)
    f = FactoredQK(A, B)
    M = A.T @ B
    ref = torch.linalg.svdvals(M)[: min(r, d)]
    for method in ("factored", "dense", "auto"):
        sp = f.spectrum(method)
        assert torch.allclose(sp["svals"], ref, rtol=1e-9, atol=1e-9 * float(ref[0]))
        assert torch.allclose(f.svals(method), sp["svals"], rtol=0, atol=0)
        assert float(sp["fro"]) == pytest.approx(float(torch.linalg.norm(M)), rel=1e-10)
        assert float(sp["sym_dev"]) == pytest.approx(float(torch.linalg.norm(M - M.T) / torch.linalg.norm(M)),
                                                     rel=1e-8)
        ev = torch.linalg.eigvalsh(0.5 * (M + M.T)).flip(0)
        m2 = min(2 * r, d)
        big = ev[ev.abs().argsort(descending=True)[:m2]].sort(descending=True).values
        assert torch.allclose(sp["eig"], big, atol=1e-9 * float(ev.abs().max()))
    assert float(f.fro_sq()) == pytest.approx(float(torch.linalg.norm(M) ** 2), rel=1e-12)
    assert torch.equal(f.dense(), M)


@pytest.mark.parametrize("seed", SEEDS)
def test_orthogonal_change_of_basis(seed):
    """M → Oᵀ M O (both factors A → A O, B → B O): singular values, eigenvalues, inertia
    and norms unchanged."""
    r, d = 4, 10
    A, B = _rand(seed, r, d), _rand(seed + 7, r, d)
    O = _orth(seed, d)
    f, g = FactoredQK(A, B), FactoredQK(A @ O, B @ O)
    assert torch.allclose(f.svals(), g.svals(), atol=1e-10)
    assert torch.allclose(f.sym_eigvals(), g.sym_eigvals(), atol=1e-10)
    assert torch.allclose(f.sym_eig()[0], g.sym_eig()[0], atol=1e-10)
    assert float(f.fro_sq()) == pytest.approx(float(g.fro_sq()), rel=1e-12)
    a, b = f.inertia(), g.inertia()
    assert all(int(a[k]) == int(b[k]) for k in ("n_pos", "n_neg", "n_zero"))


@pytest.mark.parametrize("seed", SEEDS)
def test_top_directions(seed):
    r, d, k = 4, 12, 3
    A, B = _rand(seed, r, d), _rand(seed + 3, r, d)
    f = FactoredQK(A, B)
    M = f.dense()
    S, U, V = f.svd(k)
    Ud, Sd, Vhd = torch.linalg.svd(M)
    assert torch.allclose(S, Sd[:k], atol=1e-10)
    for i in range(k):  # same singular vectors up to a common sign
        assert float((U[i] @ Ud[:, i]).abs()) == pytest.approx(1.0, abs=1e-8)
        assert torch.allclose(U[i] @ M, S[i] * V[i], atol=1e-9)
    ev, dirs = f.sym_eig(top_k=k)
    Ssym = 0.5 * (M + M.T)
    for i in range(k):
        assert torch.allclose(Ssym @ dirs[i], ev[i] * dirs[i], atol=1e-9 * float(ev.abs().max()))
        assert float(dirs[i].norm()) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_heads_gqa_batched_equal_dense(seed):
    H, Hk, hd, d, L = 4, 2, 3, 16, 2
    Wq, Wk = _rand(seed, L, H * hd, d), _rand(seed + 9, L, Hk * hd, d)
    f = FactoredQK.from_heads(Wq, Wk, H, Hk)
    assert f.kv.tolist() == kv_head_index(H, Hk).tolist() == [0, 0, 1, 1]
    Q = Wq.reshape(L, H, hd, d)
    K = Wk.reshape(L, Hk, hd, d)[:, [0, 0, 1, 1]]
    M = Q.transpose(-1, -2) @ K
    assert torch.allclose(f.dense(), M)
    assert torch.allclose(f.fro_sq(), M.square().sum((-1, -2)), rtol=1e-12)
    assert torch.allclose(f.svals(), torch.linalg.svdvals(M)[..., :hd], atol=1e-10)
    ev, _ = f.sym_eig()
    lam = torch.linalg.eigvalsh(0.5 * (M + M.mT))
    ref = lam.gather(-1, lam.abs().argsort(dim=-1, descending=True, stable=True))[..., : 2 * hd]
    assert torch.allclose(ev.sort(-1).values, ref.sort(-1).values, atol=1e-10)
    assert torch.all(ev.abs()[..., :-1] >= ev.abs()[..., 1:])  # by decreasing magnitude
    # the two eigen-solvers agree (as sets, different orders)
    assert torch.allclose(ev.sort(-1, descending=True).values, f.sym_eigvals(), atol=1e-10)
    # per head of the layer form = from_heads
    lay = FactoredQK.from_layer(Wq[0], Wk[0], H, Hk)
    assert torch.allclose(lay.dense(), M[0].sum(0))
    assert torch.allclose(lay.per_head(H).dense(), M[0])


def test_inertia_tolerance_and_errors():
    eig = torch.tensor([[1.0, 1e-17, -0.5, 0.0]], dtype=torch.float64)
    sc = inertia(eig, 6)
    assert (int(sc["n_pos"]), int(sc["n_neg"]), int(sc["n_zero"])) == (1, 1, 4)
    assert float(sc["pos_frac"]) == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="^B"):
        FactoredQK(torch.zeros(2, 3), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="^method"):
        FactoredQK(torch.zeros(2, 3), torch.zeros(2, 3)).svals("qr")
    with pytest.raises(ValueError, match="^n_kv_heads"):
        FactoredQK.from_heads(torch.zeros(6, 3), torch.zeros(4, 3), 3, 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("r,d", [(4, 16), (8, 16), (12, 16), (16, 16), (20, 16)])
@pytest.mark.parametrize("method", ["auto", "factored", "dense"])
def test_spectrum_batched_equals_dense(seed, r, d, method):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(3, r, d, generator=g, dtype=torch.float64)
    B = torch.randn(3, r, d, generator=g, dtype=torch.float64)
    f = FactoredQK(A, B).spectrum(method)
    assert f["svals"].shape[-1] == min(r, d) and f["eig"].shape[-1] == min(2 * r, d)
    M = A.mT @ B
    sv = torch.linalg.svdvals(M)
    m = f["svals"].shape[-1]
    assert torch.allclose(f["svals"], sv[..., :m], atol=1e-10)
    assert torch.all(sv[..., m:] < 1e-10)
    ev = torch.linalg.eigvalsh((M + M.mT) / 2)
    full = torch.cat([f["eig"], torch.zeros(3, d - f["eig"].shape[-1], dtype=torch.float64)], -1)
    assert torch.allclose(full.sort(-1).values, ev, atol=1e-10)
    dev = torch.linalg.norm(M - M.mT, dim=(-2, -1)) / torch.linalg.norm(M, dim=(-2, -1))
    assert torch.allclose(f["sym_dev"], dev, atol=1e-10)


def test_inertia_follows_sylvester():
    # rank-r product with 2r <= d: exactly r positive and r negative eigenvalues (Sylvester)
    for seed in range(4):
        g = torch.Generator().manual_seed(seed)
        A, B = torch.randn(2, 5, 32, generator=g, dtype=torch.float64)
        sc = inertia(FactoredQK(A, B).spectrum()["eig"], 32)
        assert (int(sc["n_pos"]), int(sc["n_neg"]), int(sc["n_zero"])) == (5, 5, 22)
    # symmetric positive definite form A = B: all positive
    A = torch.randn(16, 16, dtype=torch.float64)
    sc = inertia(FactoredQK(A, A).spectrum()["eig"], 16)
    assert int(sc["n_pos"]) == 16


# ------------------------------------------------------------------ forced by shape
from geolip_lib.metrics.factored_qk import qk_balance_forced, qk_rank_bound  # noqa: E402


@pytest.mark.parametrize("name,d,n_heads,head_dim,forced", [
    ("T5-3B", 1024, 32, 128, True), ("d 512, 8 x 128", 512, 8, 128, True), ("T5-11B", 1024, 128, 128, True),
    ("T5-XXL (inner = d)", 4096, 64, 64, False), ("MiniLM", 384, 12, 32, False), ("T5-small", 512, 8, 64, False)])
def test_the_seed_form_is_forced_by_the_true_rank_bound(name, d, n_heads, head_dim, forced):
    """rank(W_q W_kᵀ) ≤ min(n_kv·head_dim, d): the seed's inner × inner form is forced when 2·d ≤ inner."""
    why = qk_balance_forced(d, n_heads, head_dim, form="seed")
    assert (why is not None) == forced, name
    if forced:
        r, inner = min(d, n_heads * head_dim), n_heads * head_dim
        assert f"{r}/{inner} = {r / inner:.4g}" in why and "round-off zeros" in why and "forced to 0.5" not in why


def _signs(ev):
    tol = 1e-9 * ev.abs().max()
    return int((ev > tol).sum()), int((ev < -tol).sum()), int((ev.abs() <= tol).sum())


def test_t5_3b_shaped_random_weights_count_1024_positive_1024_negative_2048_zero():
    """By construction: random Q and K of T5-3B's shapes (d 1024, 32 heads x 128). The seed's
    form sym(W_q W_kᵀ) is 4096 x 4096 of rank 2048: counted from its factors (FactoredQK of
    W_qᵀ, W_kᵀ, the same eigenvalues without the 4096² matrix)."""
    g = torch.Generator().manual_seed(0)
    Wq, Wk = (torch.randn(4096, 1024, generator=g, dtype=torch.float64) for _ in range(2))
    inn = FactoredQK(Wq.T, Wk.T).inertia()
    assert (int(inn["n_pos"]), int(inn["n_neg"]), int(inn["n_zero"])) == (1024, 1024, 2048)
    assert qk_rank_bound(1024, 32, 128, form="seed") == (1024, 4096)


@pytest.mark.parametrize("seed", [0, 1])
def test_dense_eigenvalue_signs_match_the_bound_and_the_per_head_form_is_forced(seed):
    g = torch.Generator().manual_seed(seed)
    d, n_heads, hd = 48, 8, 16                                           # inner 128 ≥ 2·48: forced, 32 zeros
    Wq, Wk = (torch.randn(n_heads * hd, d, generator=g, dtype=torch.float64) for _ in range(2))
    ev = torch.linalg.eigvalsh(0.5 * (Wq @ Wk.T + Wk @ Wq.T))
    assert _signs(ev) == (48, 48, 32) and qk_balance_forced(d, n_heads, hd, form="seed") is not None
    # per head (d x d, rank head_dim): exactly head_dim of each sign, whatever the weights
    for h in range(n_heads):
        A, B = Wq[h * hd:(h + 1) * hd], Wk[h * hd:(h + 1) * hd]
        assert _signs(torch.linalg.eigvalsh(0.5 * (A.T @ B + B.T @ A))) == (hd, hd, d - 2 * hd)
    assert qk_balance_forced(384, 12, 32, form="head") is not None  # MiniLM's per-head balance 0.5: forced
    # full multi-head attention at layer level (inner = d): not forced, and aligned weights show it
    assert qk_balance_forced(64, 4, 16) is None and qk_balance_forced(64, 4, 16, form="seed") is None


def test_a_factorised_projection_lowers_the_rank_bound():
    assert qk_balance_forced(64, 4, 16) is None
    why = qk_balance_forced(64, 4, 16, rank=16)  # W_Q = U V with rank 16: 2·16 ≤ 64
    assert why is not None and "factorised rank 16" in why
    g = torch.Generator().manual_seed(3)
    U, V = torch.randn(64, 16, generator=g, dtype=torch.float64), torch.randn(16, 64, generator=g, dtype=torch.float64)
    Wk = torch.randn(64, 64, generator=g, dtype=torch.float64)
    inn = FactoredQK.from_layer(U @ V, Wk, 4).inertia()
    assert (int(inn["n_pos"]), int(inn["n_neg"])) == (16, 16)
