"""Alignment battery helpers: closed forms, invariances and fast == slow references."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import lexical
from geolip_lib.lexical import relational_battery as A

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pool_hidden_matches_loops(seed):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(5, 7, 3, generator=g, dtype=torch.float64)
    mask = torch.zeros(5, 7, dtype=torch.long)
    lens = [7, 3, 1, 5, 2]
    for b, n in enumerate(lens):
        if b % 2:  # left padding
            mask[b, 7 - n:] = 1
        else:  # right padding
            mask[b, :n] = 1
    mean = lexical.pool_hidden(h, mask, "mean")
    last = lexical.pool_hidden(h, mask, "last")
    for b in range(5):
        idx = mask[b].nonzero().ravel()
        torch.testing.assert_close(mean[b], h[b, idx].mean(0))
        torch.testing.assert_close(last[b], h[b, idx[-1]])
    with pytest.raises(ValueError, match="pooling"):
        lexical.pool_hidden(h, mask, "max")


def test_correlations_closed_forms():
    x = np.linspace(0, 1, 50)
    c = A.correlations(x, 2 * x + 1)
    assert c["pearson"] == pytest.approx(1.0) and c["spearman"] == pytest.approx(1.0)
    c = A.correlations(x, np.exp(5 * x))
    assert c["spearman"] == pytest.approx(1.0) and c["pearson"] < 1
    assert np.isnan(A.correlations(x, np.ones_like(x))["pearson"])


def test_sample_pairs_has_no_self_pairs():
    rng = np.random.default_rng(0)
    pi, pj = A.sample_pairs(5, 1000, rng)
    assert (pi != pj).all() and len(pi) < 1000 and pi.max() < 5
    with pytest.raises(ValueError, match="n_items"):
        A.sample_pairs(1, 10, rng)


def test_band_table_boundaries():
    sims = np.array([0.95] * 10 + [1.0] * 10 + [0.5] * 10 + [0.05] * 10 + [0.01] * 10)
    s = np.arange(50, dtype=float)
    e = 2 * s
    rows = {r["band"]: r for r in A.band_table(sims, s, e)}
    assert rows["[0.90,1.00]"]["n"] == 20  # top band closed: 1.0 counted (the seed dropped it)
    assert rows["[0.50,0.90)"]["n"] == 10
    assert rows["[0.05,0.10)"]["n"] == 10 and rows["[0.00,0.05)"]["n"] == 10  # 0.05 counted once
    assert sum(r["n"] for r in rows.values()) == len(sims)
    r = rows["[0.50,0.90)"]
    assert r["static_cos"] == pytest.approx(s[20:30].mean()) and r["gap"] == pytest.approx(s[20:30].mean())


@pytest.mark.parametrize("seed", [0, 1])
def test_mean_offdiag_cosine_equals_brute_force(seed):
    X = A.normalize(np.random.default_rng(seed).normal(size=(40, 6)))
    G = X @ X.T
    brute = G[~np.eye(40, dtype=bool)].mean()
    assert A.mean_offdiag_cosine(X) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pentachoron_pair_scale_and_rotation(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 8))
    Q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    p = A.pentachoron_pair(X, 3.0 * X @ Q, 200, seed)
    assert p["volume_corr"] == pytest.approx(1.0, abs=1e-9)
    assert p["encoder_cv"] == pytest.approx(p["static_cv"], rel=1e-9)
    assert p["encoder_vol_mean"] == pytest.approx(81 * p["static_vol_mean"], rel=1e-9)  # 3^4
    with pytest.raises(ValueError, match="seed"):
        A.pentachoron_pair(X, X, 10, np.random.default_rng(0))


def test_hypernym_chains_follow_first_hypernym_and_depth_order():
    lx = lexical.load_lexicon()
    names = ["dog.n.01", "canine.n.02", "carnivore.n.01", "placental.n.01", "mammal.n.01",
             "vertebrate.n.01", "animal.n.01", "cat.n.01", "run.v.01"]
    ids = lx.ids(names)
    ch = A.hypernym_chains(ids, lx)
    row = {int(r): k for k, r in enumerate(ch.root)}
    dog = ch.anc[row[0]]
    assert [names[i] for i in dog[dog >= 0]] == names[1:7]
    # every chain member lies on the start's first-hypernym path (<= 10 steps), in path order
    for r, a in zip(ch.root, ch.anc):
        path, cur = [], int(ids[r])
        for _ in range(10):
            h = lx.hypernyms_of(cur)
            if len(h) == 0:
                break
            cur = int(h[0])
            path.append(cur)
        steps = [path.index(int(ids[x])) for x in a[a >= 0]]
        assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert int(np.flatnonzero(ids == lx.index["run.v.01"])[0]) not in row  # no chain of length >= 3


def test_lexname_table_on_category_indicator_embeddings():
    lx = lexical.load_lexicon()
    rng = np.random.default_rng(0)
    ids = rng.choice(np.flatnonzero(lx.pos == 0), 400, replace=False)
    lex = lx.lexname_id[ids]
    onehot = np.eye(len(lx.lexnames))[lex] + 0.01 * rng.normal(size=(400, len(lx.lexnames)))
    noise = rng.normal(size=(400, len(lx.lexnames)))
    rows = A.lexname_table(ids, A.normalize(noise), A.normalize(onehot), lx)
    assert rows and all(r["n"] >= 10 for r in rows)
    assert all(r["encoder_intra"] > 0.99 and r["lift"] > 0.5 and r["encoder_contrast"] > 0.5 for r in rows)
    assert [r["n"] for r in rows] == sorted((r["n"] for r in rows), reverse=True)


@pytest.fixture(scope="module")
def toy():
    lx = lexical.load_lexicon()
    rng = np.random.default_rng(1)
    nouns = rng.choice(np.flatnonzero(lx.pos == 0), 40, replace=False)
    closure = np.unique(np.concatenate([lx.anc_ids[lx.anc_indptr[s]:lx.anc_indptr[s + 1]] for s in nouns]))
    others = rng.choice(len(lx), 300 - len(closure), replace=False)
    ids = rng.permutation(np.concatenate([closure, others]).astype(np.int64))
    S = rng.normal(size=(300, 12)).astype(np.float32)
    return ids, S, A.hypernym_chains(ids, lx)


def test_relational_pairs_cosines_equal_direct_dots(toy):
    ids, S, _ = toy
    Sn = A.normalize(S)
    En = A.normalize(S ** 2)
    rel = np.arange(0, 300, 2)
    rp = A.relational_pairs(ids, Sn, En, rel, 3000, np.random.default_rng(4))
    pi, pj = A.sample_pairs(len(rel), 3000, np.random.default_rng(4))
    sims = lexical.path_similarity_pairs(ids[rel][pi], ids[rel][pj])
    ok = np.isfinite(sims)
    np.testing.assert_array_equal(rp["sims"], sims[ok])
    np.testing.assert_allclose(rp["static_cos"], (Sn[rel][pi] * Sn[rel][pj]).sum(1)[ok], atol=1e-12)
    np.testing.assert_allclose(rp["enc_cos"], (En[rel][pi] * En[rel][pj]).sum(1)[ok], atol=1e-12)


def test_seed_battery_identical_spaces_deterministic_and_seed_dependent(toy):
    ids, S, ch = toy
    kw = dict(n_rel=200, n_pairs=5000, n_simplices=100, n_chains=50)
    assert len(ch) > 10
    a = A.seed_battery(ids, S, S, ch, 0, **kw)
    np.testing.assert_equal(a, A.seed_battery(ids, S, S, ch, 0, **kw))
    assert a["enc_pearson"] == a["static_pearson"] and a["enc_cv"] == a["static_cv"]
    assert a["hyp_depth1_enc"] == a["hyp_depth1_static"] and np.isfinite(a["hyp_depth3_enc"])
    assert a["volume_corr"] == pytest.approx(1.0)
    b = A.seed_battery(ids, S, S, ch, 1, **kw)
    assert b["enc_pearson"] != a["enc_pearson"]
    summ = A.summarize_seeds([a, b])
    v = summ["enc_pearson"]
    assert v["n"] == 2 and v["min"] <= v["mean"] <= v["max"]
    assert v["std"] == pytest.approx(abs(a["enc_pearson"] - b["enc_pearson"]) / 2)


def _toy_pairs(seed: int, n: int = 40, n_pairs: int = 1500):
    rng = np.random.default_rng(seed)
    pi, pj = A.sample_pairs(n, n_pairs, rng)
    x = rng.choice([0.05, 0.1, 0.2, 1 / 3, 0.5, 1.0], len(pi))  # few distinct values: ties, as path similarity
    return rng, pi, pj, x, x + rng.normal(size=len(pi)), np.round(rng.normal(size=len(pi)), 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_pair_correlation_equals_resample(seed):
    """Counts w_i w_j on pairs == correlating the materialised resample (ties averaged)."""
    from scipy.stats import spearmanr

    rng, pi, pj, x, y, z = _toy_pairs(seed)
    for yy in (y, z):
        ones = np.ones((1, 40))
        assert A.weighted_pair_correlation(pi, pj, x, yy, "pearson")(ones)[0] == pytest.approx(
            A.correlations(x, yy)["pearson"], abs=1e-12)
        assert A.weighted_pair_correlation(pi, pj, x, yy, "spearman")(ones)[0] == pytest.approx(
            A.correlations(x, yy)["spearman"], abs=1e-12)
        W = rng.multinomial(40, np.full(40, 1 / 40), size=3).astype(float)
        got_p = A.weighted_pair_correlation(pi, pj, x, yy, "pearson")(W)
        got_s = A.weighted_pair_correlation(pi, pj, x, yy, "spearman")(W)
        for b, w in enumerate(W.astype(int)):
            c = w[pi] * w[pj]
            xr, yr = np.repeat(x, c), np.repeat(yy, c)
            assert got_p[b] == pytest.approx(np.corrcoef(xr, yr)[0, 1], abs=1e-10)
            assert got_s[b] == pytest.approx(spearmanr(xr, yr)[0], abs=1e-10)
    with pytest.raises(ValueError, match="method"):
        A.weighted_pair_correlation(pi, pj, x, y, "kendall")


def test_relational_intervals_equal_single_statistic_intervals():
    _, pi, pj, x, y, z = _toy_pairs(3)
    rp = {"pi": pi, "pj": pj, "sims": x, "enc_cos": y, "static_cos": z, "n_entries": 40}
    ivs = A.relational_intervals(rp, n_boot=200, seed=5)
    assert set(ivs) == {"static_pearson", "static_spearman", "encoder_pearson", "encoder_spearman"}
    for key, iv in ivs.items():
        space, method = key.split("_")
        one = A.pair_correlation_interval(rp, "enc_cos" if space == "encoder" else "static_cos", method,
                                          n_boot=200, seed=5)
        assert (iv.lo, iv.hi) == pytest.approx((one.lo, one.hi), abs=1e-12)
        assert iv.method == one.method and "40 entries" in iv.method
    r = A.correlations(x, y)["pearson"]
    assert ivs["encoder_pearson"].lo < r < ivs["encoder_pearson"].hi


@pytest.mark.filterwarnings("ignore:The BCa confidence interval")
@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_pentachoron_pair_volumes_and_intervals():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 8))
    summary, vols = A.pentachoron_pair(X, 2.0 * X, 150, 0, return_volumes=True)
    assert not any(k.startswith("_") for k in summary)
    assert summary == A.pentachoron_pair(X, 2.0 * X, 150, 0)
    np.testing.assert_allclose(vols["encoder"], 16 * vols["static"])
    ivs = A.pentachoron_intervals(vols, n_boot=200)
    assert ivs["static_cv"].contains(summary["static_cv"]) and ivs["encoder_cv"].contains(summary["encoder_cv"])
    assert ivs["volume_corr"].lo == pytest.approx(1.0)


def test_spread_interval_and_seed_invariants():
    from scipy import stats

    v = np.array([0.30, 0.32, 0.29, 0.31])
    iv = A.spread_interval(v)
    s = v.std(ddof=1)
    assert iv.lo == pytest.approx(s * np.sqrt(3 / stats.chi2.ppf(0.975, 3)))
    assert iv.hi == pytest.approx(s * np.sqrt(3 / stats.chi2.ppf(0.025, 3)))
    rel = A.spread_interval(v, relative=True)
    assert rel.lo == pytest.approx(100 * iv.lo / v.mean()) and np.isnan(A.spread_interval([1.0]).lo)
    per_seed = [{"enc_cv": c, "static_cv": 1.0, "enc_pearson": c, "static_pearson": 0.0, "gradient_enc": 1.0,
                 "hyp_decay_enc": -1.0} for c in v]
    inv = A.seed_invariants(per_seed, [{"enc_pearson": 0.31}] * 4)
    assert inv["enc_cv_cv_percent"] == pytest.approx(100 * v.std() / v.mean())
    assert inv["frac_seeds_enc_pearson_gt_static"] == 1.0 and inv["frac_seeds_enc_hyp_decay_positive"] == 0.0
    assert inv["frac_seeds_enc_pearson_gt_null"] == 0.25 and A.seed_invariants(per_seed)["frac_seeds_enc_pearson_gt_null"] is None
