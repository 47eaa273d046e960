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
    p = P.pentachoron_probe(E, 200, seed=0, random_init=rng.standard_normal((400, 16)))
    assert p["embedding"]["cv"] == pytest.approx(M.pentachoron_cv(E, 200, seed=0).cv)
    # a Gaussian table is its own null: volume ratio close to 1
    assert 0.85 < p["volume_ratio_gaussian"] < 1.15
    assert set(p["_volumes"]) == {"embedding", "gaussian", "random_init"}
    assert math.isfinite(p["volume_ratio_random_init"])


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
    assert P.relative_position_bias(torch.nn.Linear(2, 2))["applicable"] is False


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


def test_strip_private():
    d = {"a": 1, "_b": np.zeros(3), "c": {"_d": 1, "e": [{"_f": 2, "g": 3}]}}
    assert P.strip_private(d) == {"a": 1, "c": {"e": [{"g": 3}]}}
