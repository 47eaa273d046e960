"""WordNet relational alignment battery (seed 001 §2) and its multi-seed form (§3).

Given, for ``M`` WordNet entries, static representations ``S`` (input-embedding rows of
the matched tokens) and encoder representations ``E`` (pooled definitions), measure how
the geometry of each agrees with WordNet's hypernym graph:

* relational correlation: Pearson / Spearman of pair cosines vs NLTK path similarity
  (exact fast engine) on random pairs of a random subset of entries;
* distance bands: mean cosine per path-similarity band;
* pentachoron geometry: CV of random 4-simplex volumes, and the per-simplex correlation
  of static vs encoder volumes on the *same* simplices;
* hypernym chains: mean cosine between an entry and its d-th matched ancestor;
* lexname clustering: mean intra-category cosine per lexicographer file.

Everything is vectorized (no loop over pairs); cosines come from one Gram matrix.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from ..metrics import pentachoron_cv
from ..metrics.cosine import mean_offdiag_cosine, normalize_rows, row_cosine
from ..metrics.sampling import random_pairs
from ..metrics.simplex import cayley_menger_volume_sq
from .battery_intervals import (pair_correlation_interval, pentachoron_intervals, relational_intervals,  # noqa: F401
                                seed_intervals, spread_interval, weighted_pair_correlation)
from .engine import SimilarityEngine, get_engine
from .wordnet import Lexicon, load_lexicon

#: the seed's path-similarity bands (lo, hi), used as a partition of [0, 1]: [lo, hi), the top
#: one closed [0.9, 1.0] (the seed's bands left 1.0 out and counted 0.05 in two bands)
BANDS = ((0.9, 1.0), (0.5, 0.9), (0.25, 0.5), (0.1, 0.25), (0.05, 0.1), (0.0, 0.05))
HIGH_BAND, LOW_BAND = 0.25, 0.10  # §3: "high" = sim >= 0.25, "low" = sim < 0.10


def normalize(X) -> np.ndarray:
    """Rows scaled to unit norm (``x / (|x| + 1e-8)``, as the seed) -> float64 (n, d)."""
    return normalize_rows(X, 1e-8, eps_mode="add", as_numpy=True)


def rowwise_cosine(A, B) -> np.ndarray:
    """Cosine between matching rows of ``A`` and ``B`` (n, d) -> (n,), each row normalised as
    :func:`normalize` first."""
    return row_cosine(A, B, 1e-8, eps_mode="add", normalize_each=True)


#: the random pairs of seed §2 (:func:`geolip_lib.metrics.sampling.random_pairs`), by their old name
sample_pairs = random_pairs


def correlations(x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson and Spearman correlation of two 1-D arrays (NaN when undefined)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": float("nan"), "spearman": float("nan")}
    return {"pearson": float(np.corrcoef(x, y)[0, 1]), "spearman": float(spearmanr(x, y)[0])}


def band_table(sims: np.ndarray, cos_static: np.ndarray, cos_enc: np.ndarray,
               bands=BANDS, min_count: int = 10) -> list[dict]:
    """Mean static / encoder cosine per path-similarity band (bands with < min_count pairs skipped).

    Bands are half-open ``[lo, hi)`` except the one ending at the top (``hi`` = max of all
    ``hi``), which is closed, so the bands partition the range.
    """
    rows = []
    top = max(hi for _, hi in bands)
    for lo, hi in bands:
        closed = hi == top
        m = (sims >= lo) & ((sims <= hi) if closed else (sims < hi))
        n = int(m.sum())
        if n < min_count:
            continue
        s, e = float(cos_static[m].mean()), float(cos_enc[m].mean())
        rows.append({"band": f"[{lo:.2f},{hi:.2f}{']' if closed else ')'}", "lo": lo, "hi": hi, "n": n,
                     "static_cos": s, "encoder_cos": e, "gap": e - s})
    return rows


@dataclass
class Chains:
    """Hypernym chains among matched entries.

    ``root``: (C,) entry index of each chain's start; ``anc``: (C, L) entry index of its
    d-th matched ancestor in column d-1 (-1 past the chain's end).
    """

    root: np.ndarray
    anc: np.ndarray

    def __len__(self) -> int:
        return len(self.root)

    def at_depth(self, d: int, subset: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(root, ancestor) entry indices of the chains that reach depth ``d``."""
        r, a = (self.root, self.anc) if subset is None else (self.root[subset], self.anc[subset])
        if d > a.shape[1]:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        keep = a[:, d - 1] >= 0
        return r[keep], a[keep, d - 1]


def hypernym_chains(synset_ids: np.ndarray, lexicon: Lexicon | None = None, *, max_steps: int = 10,
                    min_length: int = 3) -> Chains:
    """Chains of matched ancestors along each entry's first-hypernym path (seed §2).

    For each distinct matched synset (its first entry), walk up to ``max_steps`` steps
    through the first hypernym (by name: NLTK's own order is not reproducible between
    processes) and keep the matched synsets met on the way; chains with at least
    ``min_length`` members (start included) are kept. Depth ``d`` is the d-th matched
    ancestor, as in the seed.
    """
    lx = lexicon if lexicon is not None else load_lexicon()
    entry_of: dict = {}
    for k, s in enumerate(np.asarray(synset_ids).tolist()):
        entry_of.setdefault(s, k)
    first_hyper = np.full(len(lx), -1, dtype=np.int64)
    has = np.diff(lx.hyper_indptr) > 0
    first_hyper[has] = lx.hyper_ids[lx.hyper_indptr[:-1][has]]
    roots, ancs = [], []
    for s, k in entry_of.items():
        chain = []
        cur = s
        for _ in range(max_steps):
            cur = int(first_hyper[cur])
            if cur < 0:
                break
            if cur in entry_of:
                chain.append(entry_of[cur])
        if len(chain) + 1 >= min_length:
            roots.append(k)
            ancs.append(chain)
    width = max((len(c) for c in ancs), default=0)
    anc = np.full((len(ancs), width), -1, dtype=np.int64)
    for r, c in enumerate(ancs):
        anc[r, :len(c)] = c
    return Chains(np.asarray(roots, dtype=np.int64), anc)


def chain_decay(static_n: np.ndarray, enc_n: np.ndarray, chains: Chains, depths, subset=None) -> list[dict]:
    """Mean cosine between chain starts and their d-th ancestor, per depth (unit-norm inputs)."""
    rows = []
    for d in depths:
        r, a = chains.at_depth(int(d), subset)
        if len(r) == 0:
            continue
        rows.append({"depth": int(d), "n": int(len(r)),
                     "static_cos": float((static_n[r] * static_n[a]).sum(1).mean()),
                     "encoder_cos": float((enc_n[r] * enc_n[a]).sum(1).mean())})
    return rows


def lexname_table(synset_ids: np.ndarray, static_n: np.ndarray, enc_n: np.ndarray,
                  lexicon: Lexicon | None = None, *, min_size: int = 10, cap: int = 200) -> list[dict]:
    """Mean intra-category cosine per WordNet lexname (first ``cap`` members; seed §2).

    ``lift`` is encoder minus static (the seed's column); ``static_contrast`` and
    ``encoder_contrast`` subtract each space's mean cosine over all entries, which makes
    the two spaces comparable despite different anisotropy.
    """
    lx = lexicon if lexicon is not None else load_lexicon()
    lex = lx.lexname_id[np.asarray(synset_ids)]
    mean_s, mean_e = mean_offdiag_cosine(static_n), mean_offdiag_cosine(enc_n)
    ids, counts = np.unique(lex, return_counts=True)
    rows = []
    for c in ids[np.argsort(-counts, kind="stable")]:
        members = np.flatnonzero(lex == c)
        if len(members) < min_size:
            continue
        idx = members[:cap]
        n = len(idx)
        iu = np.triu_indices(n, 1)
        s = float((static_n[idx] @ static_n[idx].T)[iu].mean())
        e = float((enc_n[idx] @ enc_n[idx].T)[iu].mean())
        rows.append({"lexname": lx.lexnames[int(c)], "n": int(len(members)), "static_intra": s,
                     "encoder_intra": e, "lift": e - s, "static_contrast": s - mean_s,
                     "encoder_contrast": e - mean_e})
    return rows


def relational_pairs(synset_ids: np.ndarray, static_n: np.ndarray, enc_n: np.ndarray, rel_idx: np.ndarray,
                     n_pairs: int, rng: np.random.Generator, engine: SimilarityEngine | None = None) -> dict:
    """Path similarity and pair cosines for random pairs among the entries ``rel_idx``.

    Returns ``sims``, ``static_cos``, ``enc_cos`` (pairs where NLTK's path similarity is
    defined), ``pi`` and ``pj`` (the two entries of each kept pair, as positions in
    ``rel_idx``: what :func:`pair_correlation_interval` resamples), ``n_entries``
    (``len(rel_idx)``) and ``n_drawn``.
    """
    eng = engine or get_engine()
    pi, pj = random_pairs(len(rel_idx), n_pairs, rng)
    syn = np.asarray(synset_ids)[rel_idx]
    sims = eng.path_ids(syn[pi], syn[pj])
    ok = np.isfinite(sims) & (sims > 0)
    s_sub, e_sub = static_n[rel_idx], enc_n[rel_idx]
    Gs = s_sub @ s_sub.T
    Ge = e_sub @ e_sub.T
    return {"sims": sims[ok], "static_cos": Gs[pi[ok], pj[ok]], "enc_cos": Ge[pi[ok], pj[ok]],
            "pi": pi[ok], "pj": pj[ok], "n_entries": int(len(rel_idx)), "n_drawn": int(len(pi))}


def simplex_volumes(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Volumes of the simplices ``X[idx]`` (S, k+1) -> (S,), NaN where degenerate."""
    sq = np.asarray(cayley_menger_volume_sq(X[idx]), dtype=np.float64)
    return np.where(sq > 0, np.sqrt(np.maximum(sq, 0)), np.nan)


def pentachoron_pair(static: np.ndarray, enc: np.ndarray, n_simplices: int, seed: int, *,
                     return_volumes: bool = False):
    """Pentachoron CV of both spaces on the same random simplices + per-simplex volume correlation.

    ``seed`` must be an int: both spaces are sampled with ``default_rng(seed)``, i.e. on
    the same vertex sets (the seed correlated misaligned lists after dropping invalid
    simplices separately; here only simplices valid in both spaces are paired).

    With ``return_volumes=True`` the result is ``(summary, volumes)``: ``volumes`` holds
    ``"static"`` and ``"encoder"``, the ``(n_simplices,)`` volumes of each space (NaN where
    that space's simplex is degenerate), which the bootstrap intervals and the figures use.
    """
    if not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed: expected an int (both spaces must draw the same simplices), got {type(seed).__name__}")
    rs = pentachoron_cv(static, n_simplices=n_simplices, seed=seed)
    re = pentachoron_cv(enc, n_simplices=n_simplices, seed=seed)
    both = rs.valid & re.valid
    vs = np.full(n_simplices, np.nan)
    ve = np.full(n_simplices, np.nan)
    vs[rs.valid], ve[re.valid] = rs.volumes, re.volumes
    corr = float(np.corrcoef(vs[both], ve[both])[0, 1]) if both.sum() >= 3 else float("nan")
    summary = {"static_cv": rs.cv, "encoder_cv": re.cv, "static_vol_mean": rs.mean, "encoder_vol_mean": re.mean,
               "n_valid_static": rs.n_valid, "n_valid_encoder": re.n_valid, "n_valid_both": int(both.sum()),
               "volume_corr": corr}
    return (summary, {"static": vs, "encoder": ve}) if return_volumes else summary


def seed_battery(synset_ids: np.ndarray, static: np.ndarray, enc: np.ndarray, chains: Chains, seed: int, *,
                 n_rel: int = 2000, n_pairs: int = 200_000, n_simplices: int = 500, n_chains: int = 1000,
                 depths=(1, 3, 5), engine: SimilarityEngine | None = None, static_n=None, enc_n=None) -> dict:
    """One seed of the §3 stability test -> dict of scalar metrics.

    Draws (``default_rng(seed)``): ``n_rel`` entries, ``n_pairs`` pairs among them,
    ``n_simplices`` pentachora over all entries, ``n_chains`` hypernym chains.
    """
    rng = np.random.default_rng(seed)
    M = len(synset_ids)
    static_n = normalize(static) if static_n is None else static_n
    enc_n = normalize(enc) if enc_n is None else enc_n
    rel_idx = rng.choice(M, size=min(n_rel, M), replace=False)
    rp = relational_pairs(synset_ids, static_n, enc_n, rel_idx, n_pairs, rng, engine)
    out = {}
    for space, key in (("enc", "enc_cos"), ("static", "static_cos")):
        c = correlations(rp["sims"], rp[key])
        out[f"{space}_pearson"], out[f"{space}_spearman"] = c["pearson"], c["spearman"]
        high, low = rp["sims"] >= HIGH_BAND, rp["sims"] < LOW_BAND
        out[f"band_high_{space}"] = float(rp[key][high].mean()) if high.any() else float("nan")
        out[f"band_low_{space}"] = float(rp[key][low].mean()) if low.any() else float("nan")
        out[f"gradient_{space}"] = out[f"band_high_{space}"] - out[f"band_low_{space}"]
    pc = pentachoron_pair(static, enc, n_simplices, int(rng.integers(2**31)))
    out.update({"enc_cv": pc["encoder_cv"], "static_cv": pc["static_cv"], "volume_corr": pc["volume_corr"],
                "enc_vol_mean": pc["encoder_vol_mean"], "static_vol_mean": pc["static_vol_mean"]})
    sub = rng.choice(len(chains), size=min(n_chains, len(chains)), replace=False) if len(chains) else None
    by_depth = {r["depth"]: r for r in chain_decay(static_n, enc_n, chains, depths, sub)} if len(chains) else {}
    for d in depths:
        r = by_depth.get(d)
        out[f"hyp_depth{d}_enc"] = r["encoder_cos"] if r else float("nan")
        out[f"hyp_depth{d}_static"] = r["static_cos"] if r else float("nan")
    if len(depths) >= 2:
        d0, d1 = depths[0], depths[-1]
        out["hyp_decay_enc"] = out[f"hyp_depth{d0}_enc"] - out[f"hyp_depth{d1}_enc"]
        out["hyp_decay_static"] = out[f"hyp_depth{d0}_static"] - out[f"hyp_depth{d1}_static"]
    out["n_pairs_valid"] = int(len(rp["sims"]))
    return out


def summarize_seeds(per_seed: list[dict]) -> dict:
    """``{metric: {mean, std, min, max, n}}`` over seeds (NaNs ignored; population std)."""
    keys = [k for k, v in per_seed[0].items() if isinstance(v, (int, float, np.floating))]
    out = {}
    for k in keys:
        v = np.asarray([s[k] for s in per_seed], dtype=np.float64)
        v = v[np.isfinite(v)]
        out[k] = ({"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()),
                   "max": float(v.max()), "n": int(len(v))} if len(v) else
                  {"mean": None, "std": None, "min": None, "max": None, "n": 0})
    return out


#: metrics of :func:`seed_battery` that the shuffled-synset null changes (it permutes synsets only:
#: pentachora and hypernym chains are the model's own, so only relational metrics are a null)
RELATIONAL_KEYS = ("enc_pearson", "enc_spearman", "static_pearson", "static_spearman", "band_high_enc",
                   "band_low_enc", "band_high_static", "band_low_static", "gradient_enc", "gradient_static",
                   "n_pairs_valid")


def seed_invariants(per_seed: list[dict], per_seed_null: list[dict] | None = None) -> dict:
    """The §3 invariant checks: the CV across seeds (population std / |mean|, %) of the
    pentachoron CVs and the encoder Pearson r, and the fraction of seeds where the encoder
    beats the static embeddings, the distance gradient and the depth-1 − depth-5 decay are
    positive, and the encoder r beats its shuffled-synset null (None without a null)."""

    def cv_percent(key: str) -> float:
        v = np.asarray([r[key] for r in per_seed], dtype=np.float64)
        v = v[np.isfinite(v)]
        return float(100 * v.std() / abs(v.mean())) if len(v) and v.mean() != 0 else float("nan")

    def frac(flags) -> float:
        return float(np.mean([bool(f) for f in flags]))

    return {
        "enc_cv_cv_percent": cv_percent("enc_cv"),
        "static_cv_cv_percent": cv_percent("static_cv"),
        "enc_pearson_cv_percent": cv_percent("enc_pearson"),
        "frac_seeds_enc_pearson_gt_static": frac(r["enc_pearson"] > r["static_pearson"] for r in per_seed),
        "frac_seeds_enc_gradient_positive": frac(r["gradient_enc"] > 0 for r in per_seed),
        "frac_seeds_enc_hyp_decay_positive": frac(r.get("hyp_decay_enc", np.nan) > 0 for r in per_seed),
        "frac_seeds_enc_pearson_gt_null": (frac(a["enc_pearson"] > b["enc_pearson"]
                                                for a, b in zip(per_seed, per_seed_null)) if per_seed_null else None),
    }
