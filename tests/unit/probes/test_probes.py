"""Unit tests of geolip_lib.probes on synthetic matrices, modules and a fake tokenizer."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import pdist

from geolip_lib import metrics as M
from geolip_lib import probes as P

pytestmark = pytest.mark.unit


class FakeTokenizer:
    """Whole-word vocabulary; ``pieces`` maps a word to a multi-piece encoding."""

    def __init__(self, words, pieces=None, specials=None):
        self.vocab = {w: i for i, w in enumerate(words)}
        self.inv = {i: w for w, i in self.vocab.items()}
        self.pieces = pieces or {}
        for name, tok in (specials or {}).items():
            setattr(self, f"{name}_token_id", self.vocab[tok])
        self.additional_special_tokens = []

    def encode(self, text, add_special_tokens=False):
        if text in self.pieces:
            return [self.vocab[p] for p in self.pieces[text]]
        return [self.vocab[text]] if text in self.vocab else [self.vocab["a"], self.vocab["b"]]

    def decode(self, ids):
        return "".join(self.inv[i].replace("▁", " ") for i in ids)

    def convert_tokens_to_ids(self, tok):
        return self.vocab.get(tok)


def test_parameter_census_sums_to_unique_total_with_tying():
    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(11, 4)
            self.body = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 4))
            self.head = torch.nn.Linear(4, 11, bias=False)
            self.head.weight = self.embed.weight  # tied

        def get_input_embeddings(self):
            return self.embed

        def get_output_embeddings(self):
            return self.head

    m = Tiny()
    c = P.parameter_census(m)
    assert sum(c["components"].values()) == c["total"] == sum(p.numel() for p in m.parameters())
    assert c["total"] == 11 * 4 + (4 * 6 + 6) + (6 * 4 + 4)  # the tied head counts once
    assert list(c["components"]) == ["embed.weight", "body.0", "body.1"]  # largest first (44, 30, 28)
    t = P.weight_tying(m)
    assert t["output_tied"] and t["output_equal"]
    assert set(t["shared_names"]) == {"embed.weight", "head.weight"}
    m.head.weight = torch.nn.Parameter(m.embed.weight.detach().clone() + 1)
    t2 = P.weight_tying(m)
    assert t2["output_tied"] is False and t2["output_equal"] is False
    assert t2["shared_names"] == ["embed.weight"]
    assert P.weight_tying(torch.nn.Linear(2, 2))["applicable"] is False


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_norm_stats_and_distances_against_direct(seed):
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((300, 12)) * rng.uniform(0.5, 2, 12)
    E[7] = 0
    s = P.norm_stats(E)
    n = np.linalg.norm(E, axis=1)
    assert s["norm"]["mean"] == pytest.approx(n.mean()) and s["norm"]["std"] == pytest.approx(n.std())
    assert s["norm"]["argmin"] == 7 and s["n_zero"] == 1
    assert s["norm"]["percentiles"]["95"] == pytest.approx(np.percentile(n, 95))
    assert s["per_dim"]["mean_of_stds"] == pytest.approx(E.std(0).mean())
    d = P.euclidean_distances(E, n_sample=100, seed=seed)
    idx = np.random.default_rng(seed).choice(300, 100, replace=False)
    ref = pdist(E[idx])
    assert d["n_pairs"] == ref.size
    assert d["mean"] == pytest.approx(ref.mean(), rel=1e-12)
    assert d["cv"] == pytest.approx(ref.std() / ref.mean(), rel=1e-10)
    assert d["mean_over_sqrt_dim"] == pytest.approx(ref.mean() / math.sqrt(12), rel=1e-12)


def test_eigenspectrum_matches_metrics():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((500, 20)) @ rng.standard_normal((20, 20))
    e = P.eigenspectrum(E, fractions=(0.5, 0.99))
    assert e["pr"] == pytest.approx(M.participation_ratio(E))
    assert e["pr_over_dim"] == pytest.approx(e["pr"] / 20)
    assert e["dims_for_variance"]["0.99"] == M.dims_for_variance(E, 0.99)
    assert e["n_rows_used"] == 500 and len(e["top_eigenvalues"]) == 20
    sub = P.eigenspectrum(E, max_rows=100, seed=3)
    idx = np.random.default_rng(3).choice(500, 100, replace=False)
    assert sub["pr"] == pytest.approx(M.participation_ratio(E[idx]))


def test_pentachoron_probe_baselines():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((400, 16)).astype(np.float32)
    p, vols = P.pentachoron_probe(E, 200, seed=0, random_init=rng.standard_normal((400, 16)), return_data=True)
    assert p["embedding"]["cv"] == pytest.approx(M.pentachoron_cv(E, 200, seed=0).cv)
    # a Gaussian table is its own null: volume ratio close to 1
    assert 0.85 < p["volume_ratio_gaussian"] < 1.15
    assert 0.85 < p["volume_ratio_gaussian_random_init"] < 1.15
    assert set(vols) == {"embedding", "gaussian", "sphere", "random_init", "random_init_gaussian"}
    assert all(v.shape == (200,) for v in vols.values())
    assert math.isfinite(p["volume_ratio_random_init"])
    # the per-simplex volumes are the probe's own: their CV is the recorded CV
    assert np.nanstd(vols["sphere"]) / np.nanmean(vols["sphere"]) == pytest.approx(p["sphere"]["cv"])
    # the sphere null has the same index draws on unit rows
    S = M.sphere_like(E, seed=2)
    assert p["sphere"]["cv"] == pytest.approx(M.pentachoron_cv(S, 200, seed=0).cv)
    # JSON summary only: no arrays, no private keys
    assert not any(isinstance(v, np.ndarray) or k.startswith("_") for k, v in p.items())
    assert set(P.pentachoron_probe(E, 50, seed=0, sphere=False)) == {"embedding", "gaussian", "volume_ratio_gaussian"}


def test_pentachoron_probe_marks_degenerate_simplices_nan():
    E = np.zeros((50, 8))
    E[:, 0] = np.arange(50)  # collinear rows: every simplex degenerate
    p, vols = P.pentachoron_probe(E, 30, seed=0, sphere=False, return_data=True)
    assert p["embedding"]["n_valid"] == 0 and np.isnan(vols["embedding"]).all()
    assert np.isfinite(vols["gaussian"]).all()


def test_sphere_like_is_unit_and_shaped_like_x():
    X = torch.randn(300, 7, dtype=torch.float32) * 5
    S = M.sphere_like(X, seed=3)
    assert isinstance(S, torch.Tensor) and S.shape == X.shape and S.dtype == torch.float32
    assert torch.allclose(S.norm(dim=1), torch.ones(300), atol=1e-6)
    assert torch.equal(S, M.sphere_like(X, seed=3))
    s = M.sphere_like(X.numpy(), seed=3, n_rows=20000)
    assert isinstance(s, np.ndarray) and s.shape == (20000, 7)
    # uniform on the sphere: mean ~ 0, second moment I / D
    assert np.abs(s.mean(0)).max() < 0.02
    np.testing.assert_allclose(s.T @ s / len(s), np.eye(7) / 7, atol=0.01)


def test_probes_return_figure_data_separately():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((120, 6))
    ns, norms = P.norm_stats(E, return_data=True)
    assert ns == P.norm_stats(E) and np.allclose(norms, np.linalg.norm(E, axis=1))
    eig, ev = P.eigenspectrum(E, return_data=True)
    assert eig == P.eigenspectrum(E) and np.allclose(ev, M.covariance_eigenvalues(E))
    dist, d = P.euclidean_distances(E, n_sample=50, seed=1, return_data=True)
    assert dist == P.euclidean_distances(E, n_sample=50, seed=1) and d.shape == (50 * 49 // 2,)
    evo, c = P.embed_vs_output(E, 2 * E, return_data=True)
    assert evo == P.embed_vs_output(E, 2 * E) and np.allclose(c, 1)
    for summary in (ns, eig, dist, evo):
        assert not any(str(k).startswith("_") for k in summary)
    assert not hasattr(P, "strip_private")


def _digit_table(monotone: bool):
    """Digits on a circle arc: cosine decreases with |i - j| when ``monotone``."""
    ang = np.linspace(0, 2.5, 10) if monotone else np.random.default_rng(0).uniform(0, 6, 10)
    E = np.zeros((14, 4))
    E[:10, 0], E[:10, 1] = np.cos(ang), np.sin(ang)
    E[10:] = np.random.default_rng(1).standard_normal((4, 4))
    return E


def test_digit_manifold_number_line_and_sentencepiece_pieces():
    words = [str(d) for d in range(10)] + ["a", "b", "▁", "x"]
    tok = FakeTokenizer(words)
    d = P.digit_manifold(_digit_table(True), tok)
    assert d["applicable"] and d["token_ids"] == list(range(10))
    assert d["corr_abs_diff"] < -0.9 and d["gap"] > 0
    c = np.asarray(d["cosine"])
    assert np.allclose(c, c.T) and np.allclose(np.diag(c), 1)
    # SentencePiece-style "▁", "3": the bare "▁" piece is skipped (the seed took it)
    sp = FakeTokenizer(words, pieces={str(k): ["▁", str(k)] for k in range(10)})
    assert P.digit_manifold(_digit_table(True), sp)["token_ids"] == list(range(10))
    # digits mapping to one shared token, and no tokenizer: not applicable, with a reason
    same = FakeTokenizer(words, pieces={str(k): ["x"] for k in range(10)})
    assert not P.digit_manifold(_digit_table(True), same)["applicable"]
    assert "tokenizer" in P.digit_manifold(_digit_table(True), None)["reason"]


def test_category_probe_lift_and_centroids():
    rng = np.random.default_rng(0)
    cats = {"warm": ["w1", "w2", "w3", "w4"], "cold": ["c1", "c2", "c3"], "rare": ["r1", "zzz"]}
    words = ["w1", "w2", "w3", "w4", "c1", "c2", "c3", "r1", "a", "b"]
    tok = FakeTokenizer(words)
    E = rng.standard_normal((10, 8)) * 0.1
    E[0:4] += np.eye(8)[0] * 3  # tight "warm" cluster
    E[4:7] += np.eye(8)[1] * 3  # tight "cold" cluster, orthogonal to warm
    r = P.category_probe(E, tok, cats, global_mean_cos=0.1)
    assert r["applicable"] and r["skipped"] == {"rare": 1}
    assert r["categories"]["warm"]["n"] == 4 and r["categories"]["warm"]["intra_cos"] > 0.9
    assert r["categories"]["cold"]["lift"] == pytest.approx(r["categories"]["cold"]["intra_cos"] - 0.1)
    cc = np.asarray(r["centroid_cosine"])
    assert cc.shape == (2, 2) and abs(cc[0, 1]) < 0.2 and r["centroid_names"] == ["warm", "cold"]
    assert P.category_probe(E, tok, {"rare": ["r1"]})["applicable"] is False


def test_special_tokens_and_embed_vs_output():
    words = ["<pad>", "</s>", "<unk>", "a", "b", "c"]
    tok = FakeTokenizer(words, specials={"pad": "<pad>", "eos": "</s>", "unk": "<unk>"})
    tok.additional_special_tokens = ["c"]
    E = np.random.default_rng(0).standard_normal((6, 5))
    s = P.special_tokens(E, tok)
    assert list(s["tokens"]) == ["pad", "eos", "unk", "c"]
    assert s["tokens"]["eos"]["norm"] == pytest.approx(np.linalg.norm(E[1]))
    assert len(s["pairwise"]) == 6
    cos01 = E[0] @ E[1] / np.linalg.norm(E[0]) / np.linalg.norm(E[1])
    assert s["pairwise"]["pad|eos"] == pytest.approx(cos01)
    same = P.embed_vs_output(E, E)
    assert same["per_token_cosine"]["mean"] == pytest.approx(1) and same["frobenius"]["relative"] == 0
    flipped = P.embed_vs_output(E, -2 * E)
    assert flipped["per_token_cosine"]["max"] == pytest.approx(-1)
    assert flipped["frobenius"]["relative"] == pytest.approx(3)
    with pytest.raises(ValueError, match="O"):
        P.embed_vs_output(E, E[:3])
    assert P.special_tokens(E, None)["applicable"] is False


def test_relative_position_bias_tables():
    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.relative_attention_bias = torch.nn.Embedding(32, 4)

    m = torch.nn.ModuleDict({"enc": Attn(), "dec": Attn(), "other": torch.nn.Linear(2, 2)})
    r = P.relative_position_bias(m)
    assert r["applicable"] and len(r["tables"]) == 2
    t = r["tables"]["enc.relative_attention_bias"]
    w = m["enc"].relative_attention_bias.weight.detach().double()
    assert t["shape"] == [32, 4] and len(t["per_head"]) == 4
    assert t["per_head"][2]["mean"] == pytest.approx(float(w[:, 2].mean()))
    r2, weights = P.relative_position_bias(m, return_data=True)
    assert r2 == r and set(weights) == set(r["tables"]) and np.allclose(weights["enc.relative_attention_bias"], w)
    assert P.relative_position_bias(torch.nn.Linear(2, 2))["applicable"] is False
    assert P.relative_position_bias(torch.nn.Linear(2, 2), return_data=True)[1] == {}


def test_layer_geometry_against_per_sequence_loop():
    rng = np.random.default_rng(0)
    B, S, D = 4, 6, 5
    lengths = [6, 3, 1, 4]  # one single-token sequence: no pairs, left out of the cosine
    mask = torch.zeros(B, S, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
    layers = [torch.from_numpy(rng.standard_normal((B, S, D))) for _ in range(3)]
    g = P.layer_geometry(layers, mask)
    for li, h in enumerate(layers):
        norms, sn, cm, cs = [], [], [], []
        for b, n in enumerate(lengths):
            x = h[b, :n].numpy()
            nn_ = np.linalg.norm(x, axis=1)
            norms.append(nn_.mean())
            sn.append(nn_.std())
            if n > 1:
                xn = x / nn_[:, None]
                pc = (xn @ xn.T)[np.triu_indices(n, 1)]
                cm.append(pc.mean())
                cs.append(pc.std())
        assert g["mean_norm"][li] == pytest.approx(np.mean(norms), rel=1e-10)
        assert g["std_norm"][li] == pytest.approx(np.mean(sn), rel=1e-10)
        assert g["mean_cos"][li] == pytest.approx(np.mean(cm), rel=1e-10)
        assert g["std_cos"][li] == pytest.approx(np.mean(cs), rel=1e-10)
    assert g["layer"] == [0, 1, 2] and g["n_sequences"] == 4
    with pytest.raises(ValueError, match="layers"):
        P.layer_geometry([torch.zeros(2, 3, 4)], mask)


def test_synthetic_images_deterministic_in_range():
    a = P.synthetic_images(5, 16, seed=3)
    assert a.shape == (5, 3, 16, 16) and a.dtype == torch.float32
    assert float(a.min()) >= 0 and float(a.max()) <= 1
    assert torch.equal(a, P.synthetic_images(5, 16, seed=3))
    assert not torch.equal(a, P.synthetic_images(5, 16, seed=4))


# ---------------------------------------------------------------- intervals of the headline numbers
def test_pr_interval_covers_the_gaussian_pr_and_uses_the_eigenspectrum_rows():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((3000, 10))
    iv = P.pr_interval(E, seed=0, n_boot=300)
    assert iv.lo < 10 < iv.hi + 1e-9 and "group bootstrap" in iv.method
    # with max_rows the rows are eigenspectrum's sample
    X = rng.standard_normal((3000, 10)) * np.linspace(1, 3, 10)
    sub = P.pr_interval(X, max_rows=500, seed=4, n_boot=200)
    assert "(500 rows)" in sub.method
    assert sub.lo - 0.5 < P.eigenspectrum(X, max_rows=500, seed=4)["pr"] < sub.hi + 0.5
    s = P.scale_interval(iv, 0.1, "divided by D")
    assert s.lo == pytest.approx(iv.lo / 10) and s.method.endswith("divided by D")
    with pytest.raises(ValueError, match="factor"):
        P.scale_interval(iv, 0)


def test_mean_cosine_interval_is_over_the_sampled_rows():
    rng = np.random.default_rng(1)
    E = rng.standard_normal((800, 16)) + 0.5  # a common direction: mean cosine > 0
    iv = P.mean_cosine_interval(E, n_sample=200, seed=2, n_boot=300)
    mean = M.cosine_stats(E, n_sample=200, seed=2)["mean"]
    assert iv.lo < mean < iv.hi and "200 sampled rows" in iv.method
    assert iv.hi - iv.lo < 0.1


def test_volume_ratio_interval_pairs_and_drops_degenerate():
    rng = np.random.default_rng(2)
    b = rng.gamma(4, 1, 500)
    a = 0.8 * b * rng.lognormal(0, 0.05, 500)
    a[7] = np.nan
    iv = P.volume_ratio_interval(a, b, seed=0)
    ok = np.isfinite(a)
    assert iv.lo < a[ok].mean() / b[ok].mean() < iv.hi
    assert iv.hi - iv.lo < 0.03  # pairing: tight (volumes of one simplex move together; unpaired would be ~0.1)
    assert "499 paired simplices" in iv.method
    with pytest.raises(ValueError, match="volumes"):
        P.volume_ratio_interval(a, b[:10])


def test_digit_corr_interval_and_weighted_statistic():
    C = np.corrcoef(np.random.default_rng(3).standard_normal((10, 20)))
    stat = P.uncertainty.weighted_digit_corr(C)
    i, j = np.triu_indices(10, 1)
    assert stat(np.ones((1, 10)))[0] == pytest.approx(np.corrcoef(np.abs(i - j), C[i, j])[0, 1])
    # counts 2 on one digit = that digit's pairs counted twice
    w = np.ones(10)
    w[4] = 2
    pw = w[i] * w[j]
    gap, val = np.repeat(np.abs(i - j), pw.astype(int)), np.repeat(C[i, j], pw.astype(int))
    assert stat(w[None])[0] == pytest.approx(np.corrcoef(gap, val)[0, 1])
    # a number line: strongly negative, interval below 0
    ang = np.linspace(0, 2.5, 10)
    U = np.stack([np.cos(ang), np.sin(ang)], 1)
    iv = P.digit_corr_interval(U @ U.T, seed=0)
    assert iv.hi < -0.5 and "10 digits" in iv.method


def test_dimension_note():
    iv = M.intervals.Interval(0.40, 0.44, "t")
    far = P.dimension_note("CV", 0.42, iv, {"sphere": (0.1, M.intervals.Interval(0.09, 0.11, "t"))}, 384)
    assert far is None
    near = P.dimension_note("CV", 0.42, iv, {"sphere": (0.1, None), "gaussian": (0.43, None)}, 384)
    assert "D = 384" in near and "gaussian 0.43" in near and "sphere" not in near
    # within 10 % counts as close even when the intervals separate
    assert P.dimension_note("CV", 0.42, iv, {"gaussian": (0.45, M.intervals.Interval(0.449, 0.451, "t"))}, 8)
    assert P.dimension_note("CV", None, None, {"gaussian": (0.4, None)}, 8) is None


def test_tables_frames():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((300, 8))
    cos = {"embedding": M.cosine_stats(E, 100, seed=0), "gaussian": M.cosine_stats(M.gaussian_like(E), 100, seed=0)}
    df = P.tables.cosine_frame(cos, {"embedding": M.intervals.Interval(-0.01, 0.01, "t")})
    assert list(df.index) == ["embedding", "gaussian"] and "[" in df.loc["embedding", "mean [95 % interval]"]
    assert df["std"].dtype.kind == "f"
    eig = {"embedding": P.eigenspectrum(E)}
    assert P.tables.eigen_frame(eig).loc["embedding", "dims 95%"] == eig["embedding"]["dims_for_variance"]["0.95"]
    pent = P.pentachoron_probe(E, 50, seed=0)
    pf = P.tables.pentachoron_frame(pent)
    assert list(pf.index) == ["embedding", "gaussian", "sphere"] and (pf["sampled"] == 50).all()
    census = {"components": {"a": 30, "b": 10}, "total": 40, "n_tensors": 2}
    cf = P.tables.census_frame(census)
    assert cf.loc["a", "share"] == pytest.approx(0.75) and cf["params"].dtype.kind == "i"
    g = {"layer": [0, 1], "mean_norm": [1.0, 2.0], "std_norm": [0.1, 0.1], "mean_cos": [0.2, 0.3], "std_cos": [0.0, 0.1]}
    lf = P.tables.layers_frame({"encoder": g, "decoder": g})
    assert len(lf) == 4 and list(lf.columns)[:2] == ["stack", "layer"]
    assert P.tables.norm_frame(P.norm_stats(E)).loc["row norm", "zero rows"] == 0


# ---------------------------------------------------------------- restored seed §1 / §13a measurements
class VocabTokenizer:
    """A vocabulary given as a list (id = index); ``lower`` lower-cases the text first
    (an uncased tokenizer); unknown text encodes to two pieces."""

    def __init__(self, tokens, lower=False):
        self.tokens = list(tokens)
        self.vocab = {t: i for i, t in enumerate(self.tokens)}
        self.lower = lower

    def __len__(self):
        return len(self.tokens)

    def encode(self, text, add_special_tokens=False):
        text = text.lower() if self.lower else text
        return [self.vocab[text]] if text in self.vocab else [0, 1]

    def decode(self, ids):
        return "".join(self.tokens[i] for i in ids)

    def convert_ids_to_tokens(self, ids):
        return [self.tokens[i] for i in ids]


def _byte_vocab(offset: int, n: int = 300) -> list[str]:
    """Token ``k`` is ``chr(k + offset)`` for the printable ASCII range, ``t<k>`` elsewhere;
    ``offset = 0`` is a byte-ordered vocabulary, ``offset = 33`` the GPT-2 byte-level order
    (id 0 = "!", so ids 48-57 are "Q".."Z")."""
    return [chr(k + offset) if 33 <= k + offset < 127 else f"t{k}" for k in range(n)]


def test_token_range_categories_known_ids():
    byte = VocabTokenizer(_byte_vocab(0))
    cats = P.token_range_categories(byte, 320)  # 20 table rows beyond the 300-token tokenizer
    assert cats["seed"]["ASCII digits"] == list(range(48, 58)) == cats["project"]["ASCII digits"]
    assert cats["seed"]["ASCII upper"] == list(range(65, 91)) == cats["project"]["ASCII upper"]
    assert cats["seed"]["ASCII lower"] == list(range(97, 123)) == cats["project"]["ASCII lower"]
    assert cats["seed"]["last 100 ids"] == cats["project"]["last 100 ids"] == list(range(220, 320))
    gpt2 = VocabTokenizer(_byte_vocab(33))  # "0" is id 15, "A" id 32, "a" id 64
    cats = P.token_range_categories(gpt2, 300)
    assert cats["seed"]["ASCII digits"] == list(range(48, 58))  # the seed's ranges do not move...
    assert cats["project"]["ASCII digits"] == list(range(15, 25))  # ...the characters do
    assert cats["project"]["ASCII upper"] == list(range(32, 58)) and cats["project"]["ASCII lower"] == list(range(64, 90))
    uncased = VocabTokenizer(_byte_vocab(0), lower=True)  # "A" encodes to the token "a": not an upper-case token
    cats = P.token_range_categories(uncased, 300)
    assert cats["project"]["ASCII upper"] == [] and cats["project"]["ASCII lower"] == list(range(97, 123))
    assert P.token_range_categories(gpt2, 60)["seed"]["ASCII digits"] == list(range(48, 58))
    assert P.token_range_categories(gpt2, 50)["seed"]["ASCII digits"] == [48, 49]  # ids inside the table only


def test_token_range_probe_known_cosines_and_named_chars():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((300, 16))
    E[15:25] = rng.standard_normal(16)  # the digit tokens of the GPT-2 order: one direction (cosine 1)
    E[48:58] = E[48:58] * 0 + rng.standard_normal(16)  # the seed's digit range: another direction
    E[50] *= -2.0  # one anti-parallel row: pairs with it have cosine -1
    tok = VocabTokenizer(_byte_vocab(33))
    r = P.token_range_probe(E, tok, global_mean_cos=0.1)
    seed, proj = r["definitions"]["seed"], r["definitions"]["project"]
    assert proj["ASCII digits"]["intra_cos"] == pytest.approx(1.0) and proj["ASCII digits"]["intra_std"] == pytest.approx(0, abs=1e-12)
    assert proj["ASCII digits"]["lift"] == pytest.approx(0.9)
    # 10 rows, one flipped: 36 pairs at +1, 9 at -1
    assert seed["ASCII digits"]["intra_cos"] == pytest.approx((36 - 9) / 45)
    assert seed["ASCII digits"]["named_chars"] == 0 and proj["ASCII digits"]["named_chars"] == 10
    assert seed["ASCII digits"]["tokens"][:3] == ["Q", "R", "S"]
    assert seed["last 100 ids"]["named_chars"] is None and seed["last 100 ids"]["n"] == 100
    byte = P.token_range_probe(E, VocabTokenizer(_byte_vocab(0)))
    assert byte["definitions"]["seed"]["ASCII lower"]["named_chars"] == 26
    unc = P.token_range_probe(E, VocabTokenizer(_byte_vocab(0), lower=True))
    up = unc["definitions"]["project"]["ASCII upper"]
    assert up["n"] == 0 and up["intra_cos"] is None and "uncased" in up["reason"]
    assert P.token_range_probe(E, None)["applicable"] is False
    wide = P.token_range_probe(np.vstack([E, E[:20]]), tok)  # 20 rows beyond the tokenizer
    assert wide["definitions"]["seed"]["last 100 ids"]["beyond_tokenizer"] == 20
    # intervals: tokens resampled; identical rows give [1, 1]
    ivs = P.uncertainty.token_range_intervals(E, r, seed=0, n_boot=200)
    assert ivs["project"]["ASCII digits"].lo == pytest.approx(1.0) and ivs["project"]["ASCII digits"].hi == pytest.approx(1.0)
    assert "of 10 tokens" in ivs["seed"]["ASCII digits"].method
    assert ivs["seed"]["ASCII lower"].lo <= seed["ASCII lower"]["intra_cos"] <= ivs["seed"]["ASCII lower"].hi
    df = P.tables.token_range_frame(unc, None, r)
    assert df.shape[0] == 8 and df.loc[("project", "ASCII upper"), "named chars"] == "0 of 0"
    assert df.loc[("seed", "ASCII digits"), "random init"] == pytest.approx(seed["ASCII digits"]["intra_cos"])


def test_cumulative_variance_is_pca():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 12)) * np.linspace(3, 0.1, 12)
    ev = M.covariance_eigenvalues(X)
    cum = P.cumulative_variance(ev)
    s = np.linalg.svd(X - X.mean(0), compute_uv=False)  # PCA: explained_variance_ratio_ = s^2 / sum s^2
    np.testing.assert_allclose(cum, np.cumsum(s ** 2) / (s ** 2).sum(), rtol=1e-10)
    assert np.all(np.diff(cum) >= 0) and cum[-1] == 1.0 and cum[0] > 0
    np.testing.assert_array_equal(P.cumulative_variance(ev[::-1]), cum)  # order of the input does not matter
    assert len(P.cumulative_variance(ev, top=5)) == 5
    for f, d in zip((0.8, 0.9, 0.95), M.dims_for_variance_from_eigenvalues(ev, [0.8, 0.9, 0.95])):
        assert np.searchsorted(cum, f - 1e-12) + 1 == d
    rank2 = P.cumulative_variance([2.0, 1.0, 0.0, -1e-17])  # rank-deficient: flat at 1 after the rank
    np.testing.assert_allclose(rank2, [2 / 3, 1, 1, 1])
    with pytest.raises(ValueError):
        P.cumulative_variance([1.0, -0.5])
    with pytest.raises(ValueError):
        P.cumulative_variance([0.0, 0.0])


def test_seed_layers_and_position_cosines():
    assert P.seed_layers(6) == [0, 3, 6] and P.seed_layers(2) == [0, 1, 2] and P.seed_layers(1) == [0, 1]
    rng = np.random.default_rng(2)
    enc = [torch.as_tensor(rng.standard_normal((9, 4))) for _ in range(3)]
    same = P.position_cosines(enc, enc, [0, 1, 2])
    for b in same:  # identical encoder and decoder states: cosine 1 at every position
        assert b["n_positions"] == 9 and np.allclose(b["cosine"], 1.0) and b["mean"] == pytest.approx(1.0)
    dec = [-2 * h[:6] for h in enc]  # anti-parallel, shorter decoder: cosine -1 at its 6 positions
    r = P.position_cosines(enc, dec, [2])[0]
    assert r["n_positions"] == 6 and np.allclose(r["cosine"], -1.0) and r["seed_mean"] == pytest.approx(-1.0)
    a = torch.tensor([[1.0, 0], [0, 1], [1, 0], [1, 1], [1, 0], [3, 0]])
    b = torch.tensor([[0.0, 1], [0, 1], [-1, 0], [1, 1], [1, 0], [0, 5]])
    r = P.position_cosines([a], [b], [0])[0]
    np.testing.assert_allclose(r["cosine"], [0, 1, -1, 1, 1, 0], atol=1e-12)
    assert r["seed_mean"] == pytest.approx(2 / 5) and r["mean"] == pytest.approx(2 / 6)  # seed: first 5 positions
    with pytest.raises(ValueError):
        P.position_cosines([a], [b], [1])
    iv = P.position_interval(r["cosine"], seed=0, n_boot=200)
    assert "of 6 positions" in iv.method and iv.lo <= r["mean"] <= iv.hi


def test_encoder_decoder_cosine_on_a_tiny_t5():
    from types import SimpleNamespace

    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    cfg = T5Config(vocab_size=40, d_model=16, d_kv=4, d_ff=32, num_layers=4, num_decoder_layers=4, num_heads=4,
                   decoder_start_token_id=0)
    model = T5ForConditionalGeneration(cfg).eval()
    words = [f"w{i}" for i in range(40)]

    class Tok(VocabTokenizer):
        def __call__(self, text, return_tensors="pt"):
            return SimpleNamespace(input_ids=torch.tensor([[self.vocab[w] for w in text.split()] + [1]]))

    lm = SimpleNamespace(model=model, tokenizer=Tok(words), config=cfg, family="t5")
    same = P.encoder_decoder_cosine(lm, "w5 w6 w7 w8 w9 w10", "w5 w6 w7 w8 w9 w10")
    assert same["applicable"] and same["layers"] == [0, 2, 4] and same["n_encoder_layers"] == 4
    b0 = same["by_layer"][0]  # the same tokens read from the one shared table: layer 0 is identical
    assert b0["n_positions"] == 7 and np.allclose(b0["cosine"], 1.0)
    assert not np.allclose(same["by_layer"][2]["cosine"], 1.0)  # the stacks differ after layer 0
    r = P.encoder_decoder_cosine(lm, "w5 w6 w7 w8 w9 w10 w11 w12", "w20 w21 w22")
    assert [b["n_positions"] for b in r["by_layer"]] == [4, 4, 4] and r["target_tokens"] == ["w20", "w21", "w22", "w1"]
    # against a direct call: the decoder reads the target ids unshifted, with the encoder output (seed §1)
    with torch.no_grad():
        src, tgt = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12, 1]]), torch.tensor([[20, 21, 22, 1]])
        e = model.encoder(input_ids=src, output_hidden_states=True)
        d = model.decoder(input_ids=tgt, encoder_hidden_states=e.last_hidden_state, output_hidden_states=True)
    want = torch.nn.functional.cosine_similarity(e.hidden_states[2][0, :4], d.hidden_states[2][0], dim=1)
    np.testing.assert_allclose(r["by_layer"][1]["cosine"], want.numpy(), rtol=1e-5, atol=1e-6)
    norms = e.last_hidden_state[0].norm(dim=1)
    assert r["final_norm"]["encoder"]["mean"] == pytest.approx(float(norms.mean()), rel=1e-5)
    bert = SimpleNamespace(model=torch.nn.Linear(2, 2), tokenizer=lm.tokenizer,
                           config=SimpleNamespace(is_encoder_decoder=False), family="bert")
    na = P.encoder_decoder_cosine(bert)
    assert na == {"applicable": False, "reason": "not an encoder–decoder model (bert): no decoder reads an encoder"}
    ivs = P.uncertainty.encoder_decoder_intervals(r, seed=0, n_boot=100)
    assert len(ivs) == 3 and all("positions" in iv.method for iv in ivs)
    summary = P.tables.encoder_decoder_frame(r, ivs, same, None)
    assert list(summary.index) == ["layer 0", "layer 2", "layer 4"] and "random init [95 % interval]" in summary
    pos = P.tables.encoder_decoder_positions_frame(r)
    assert list(pos["source token"]) == ["w5", "w6", "w7", "w8"] and pos.loc[0, "layer 4"] == r["by_layer"][2]["cosine"][0]


def test_claim_names_and_cv_definition_note():
    assert set(P.uncertainty.CLAIM_NULLS.values()) == {"gaussian", "unit sphere", "random init"}
    note = P.uncertainty.cv_definition_note({"n_valid": 998, "n_sampled": 1000})
    assert "998 of 1000" in note and "5-row subsets" in note
