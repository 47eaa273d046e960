"""The Procrustes-initialised modulator pipeline and its measurements (seed 001 §8–§11).

WordNet similarity over anchors -> eigen-embedding -> softmax-kNN projection of the other
matched tokens -> PCA of encoder representations -> orthogonal Procrustes -> projection
initialisation; then relational comparisons, per-token preservation, greedy generation
side by side, and the definition -> lemma training objective.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy.linalg import orthogonal_procrustes
from scipy.stats import spearmanr

from .. import progress as _progress
from ..validation import as_tensor, check_positive_int, fail

SEED_BANDS = ((0.5, 1.0), (0.25, 0.5), (0.10, 0.25), (0.05, 0.10), (0.0, 0.05))


# --------------------------------------------------------------------------- geometry init
def knn_project(static, anchor_idx, anchor_geo, k: int = 10, temperature: float = 10.0,
                batch: int = 1024) -> torch.Tensor:
    """Place non-anchor items in the geometric space by softmax-weighted kNN over anchors.

    Neighbours are the ``k`` anchors of highest cosine in the ``static`` space; weights are
    ``softmax(temperature * cos)``; the interpolated vector is normalised. Anchors keep
    their own geometric vector.

    Parameters
    ----------
    static : (N, D) array
        Proxy space where neighbours are found (e.g. static token embeddings).
    anchor_idx : (A,) int array
        Rows of ``static`` that are anchors (distinct).
    anchor_geo : (A, n_geo) array
        Geometric vectors of the anchors.
    k : int
        Neighbours (clipped to A).
    temperature : float
    batch : int

    Returns
    -------
    (N, n_geo) float64 tensor.
    """
    S = F.normalize(as_tensor(static, "static", ndim=2, dtype=torch.float64), dim=1, eps=1e-12)
    idx = torch.as_tensor(np.asarray(anchor_idx), dtype=torch.long).reshape(-1)
    G = as_tensor(anchor_geo, "anchor_geo", ndim=2, dtype=torch.float64)
    if G.shape[0] != idx.numel():
        fail("anchor_geo", f"expected {idx.numel()} rows (one per anchor), got {G.shape[0]}")
    if idx.unique().numel() != idx.numel() or int(idx.min()) < 0 or int(idx.max()) >= S.shape[0]:
        fail("anchor_idx", f"expected distinct indices in [0, {S.shape[0]})")
    k = min(check_positive_int(k, "k"), idx.numel())
    out = torch.zeros(S.shape[0], G.shape[1], dtype=torch.float64)
    out[idx] = G
    rest = torch.ones(S.shape[0], dtype=torch.bool)
    rest[idx] = False
    rest = torch.nonzero(rest).squeeze(1)
    A = S[idx]
    for s in range(0, rest.numel(), batch):
        rows = rest[s:s + batch]
        vals, nb = (S[rows] @ A.T).topk(k, dim=1)
        w = torch.softmax(vals * temperature, dim=1)
        out[rows] = F.normalize((G[nb] * w.unsqueeze(-1)).sum(1), dim=1, eps=1e-12)
    return out


def procrustes_projection(encoder_anchor, geo_anchor, scale_fraction: float = 0.1) -> dict:
    """Projection n_geo -> d_model aligning the geometric space with the encoder's PCA space.

    PCA (top ``n_geo`` components) of the centred encoder representations of the anchors;
    both point sets are row-normalised and centred; ``R = argmin ||G R - E||`` over
    orthogonal ``R`` (scipy); the projection is ``W = (R @ PCs).T * scale_fraction *
    mean ||enc||`` (d_model, n_geo), i.e. the seed's initialisation of ``proj.weight``.

    Parameters
    ----------
    encoder_anchor : (A, d_model) array
    geo_anchor : (A, n_geo) array, n_geo <= min(A, d_model)
    scale_fraction : float

    Returns
    -------
    dict with ``weight`` (d_model, n_geo) float64 tensor, ``rotation`` (n_geo, n_geo),
    ``alignment_cos`` (A,) cosines of the aligned geometric points with the encoder's
    PCA points, ``singular_value_sum`` (scipy's second output; not a scale factor),
    ``pca_components`` (n_geo, d_model), ``explained_variance`` (fraction kept by the PCA).
    """
    E = as_tensor(encoder_anchor, "encoder_anchor", ndim=2, dtype=torch.float64).numpy()
    Gm = as_tensor(geo_anchor, "geo_anchor", ndim=2, dtype=torch.float64).numpy()
    if E.shape[0] != Gm.shape[0]:
        fail("geo_anchor", f"expected {E.shape[0]} rows (one per encoder anchor), got {Gm.shape[0]}")
    n_geo = Gm.shape[1]
    if n_geo > min(E.shape):
        fail("geo_anchor", f"n_geo={n_geo} exceeds min(n_anchors, d_model)={min(E.shape)}; lower N_GEO")
    Ec = E - E.mean(0)
    _, sv, Vt = np.linalg.svd(Ec, full_matrices=False)
    pcs = Vt[:n_geo]
    Ep = Ec @ pcs.T
    Ep = Ep / (np.linalg.norm(Ep, axis=1, keepdims=True) + 1e-12)
    Gn = Gm / (np.linalg.norm(Gm, axis=1, keepdims=True) + 1e-12)
    e_mean, g_mean = Ep.mean(0), Gn.mean(0)
    R, svsum = orthogonal_procrustes(Gn - g_mean, Ep - e_mean)
    aligned = (Gn - g_mean) @ R + e_mean
    cos = (aligned * Ep).sum(1) / (np.linalg.norm(aligned, axis=1) * np.linalg.norm(Ep, axis=1) + 1e-12)
    W = (R @ pcs).T * (scale_fraction * np.linalg.norm(E, axis=1).mean())
    return {"weight": torch.from_numpy(W), "rotation": torch.from_numpy(R), "alignment_cos": cos,
            "singular_value_sum": float(svsum), "pca_components": pcs,
            "explained_variance": float((sv[:n_geo] ** 2).sum() / max((sv ** 2).sum(), 1e-300))}


def init_modulator_from_pipeline(modulator, token_ids, geo, proj_weight) -> None:
    """Write the pipeline's geometric rows (at ``token_ids``) and projection into a
    :class:`GeometricResidualModulator`."""
    W = as_tensor(proj_weight, "proj_weight", ndim=2)
    if tuple(W.shape) != tuple(modulator.proj.weight.shape):
        fail("proj_weight", f"expected shape {tuple(modulator.proj.weight.shape)}, got {tuple(W.shape)}")
    modulator.init_from_cayley_menger(as_tensor(geo, "geo", ndim=2), token_ids=token_ids)
    with torch.no_grad():
        modulator.proj.weight.copy_(W.to(modulator.proj.weight.dtype))


# --------------------------------------------------------------------------- encoding
def encoder_module(model: nn.Module, family: str | None = None) -> nn.Module:
    """The module whose ``last_hidden_state`` is the representation: T5's encoder, a
    decoder LM's base model, else the model itself."""
    if hasattr(model, "get_encoder") and getattr(model.config, "is_encoder_decoder", False):
        return model.get_encoder()
    if family == "decoder_lm" or (hasattr(model, "model") and hasattr(model.model, "layers")):
        return model.model
    return getattr(model, "bert", model)


@torch.no_grad()
def encode_mean_pooled(model: nn.Module, tokenizer, texts: Sequence[str], batch_size: int = 64,
                       max_length: int = 128, progress: bool = False) -> np.ndarray:
    """Mean-pooled last hidden state over non-padding tokens.

    Runs through ``encoder_module(model)``, so attached hooks apply.

    Returns
    -------
    (len(texts), d_model) float32 array.
    """
    from tqdm.auto import tqdm

    enc = encoder_module(model)
    out = []
    for s in tqdm(range(0, len(texts), batch_size), desc="encode", disable=_progress.disabled(progress), leave=False):
        b = tokenizer(list(texts[s:s + batch_size]), return_tensors="pt", padding=True, truncation=True,
                      max_length=max_length, return_token_type_ids=False)
        dev = next(enc.parameters()).device
        h = enc(input_ids=b["input_ids"].to(dev), attention_mask=b["attention_mask"].to(dev)).last_hidden_state
        m = b["attention_mask"].to(dev).unsqueeze(-1).to(h.dtype)
        out.append(((h * m).sum(1) / m.sum(1).clamp(min=1)).float().cpu().numpy())
    d = getattr(model.config, "d_model", None) or getattr(model.config, "hidden_size", 0)
    return np.concatenate(out) if out else np.zeros((0, d), np.float32)


# --------------------------------------------------------------------------- relational measures
def sample_pairs(n_items: int, n_pairs: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """``n_pairs`` random (i, j) index pairs with ``i != j`` (pairs with i == j are dropped,
    as in the seed, so slightly fewer may come back)."""
    check_positive_int(n_items, "n_items", minimum=2)
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n_items, size=n_pairs)
    j = rng.integers(0, n_items, size=n_pairs)
    keep = i != j
    return i[keep], j[keep]


SEED_N_REL = 3000  # entries of the seed's relational subset (seed 001 §8–§10: N_REL = min(3000, len(matched)))


def seed_relational_pairs(n_items: int, n_rel: int = SEED_N_REL, n_pairs: int = 50000,
                          seed: int = 42) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's relational sample (seed 001 §8, §9, §10), draw for draw.

    One generator ``default_rng(seed)`` draws the subset
    ``choice(n_items, min(n_rel, n_items), replace=False)``, then ``n_pairs`` first and
    ``n_pairs`` second members with ``choice(n_sub, n_pairs)`` each; pairs with equal
    members are dropped. With the seed's ``n_items`` (all matched entries) and defaults
    this is exactly the sample the seed scored; the project's definition
    (:func:`sample_pairs` over all entries) is the other one.

    Returns
    -------
    i, j : int arrays
        The pairs as indices of the ``n_items`` entries (not of the subset).
    subset : int array
        The subset's entries, in the order drawn.
    """
    check_positive_int(n_items, "n_items", minimum=2)
    rng = np.random.default_rng(seed)
    n_sub = min(check_positive_int(n_rel, "n_rel", minimum=2), n_items)
    subset = rng.choice(n_items, size=n_sub, replace=False)
    pi = rng.choice(n_sub, size=check_positive_int(n_pairs, "n_pairs"))
    pj = rng.choice(n_sub, size=n_pairs)
    keep = pi != pj
    return subset[pi[keep]], subset[pj[keep]], subset


def pair_cosines(X, i, j) -> np.ndarray:
    """Cosine of rows ``X[i]`` and ``X[j]`` (float64, batched)."""
    Xn = F.normalize(as_tensor(X, "X", ndim=2, dtype=torch.float64), dim=1, eps=1e-12)
    ii, jj = torch.as_tensor(np.asarray(i)), torch.as_tensor(np.asarray(j))
    return (Xn[ii] * Xn[jj]).sum(1).numpy()


def relational_pairs(similarity, i, j) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scored pairs of :func:`relational_comparison`: those with a finite, positive
    similarity (the seed kept ``sim > 0``); returns ``(similarity, i, j)`` of the kept pairs."""
    s = np.asarray(similarity, dtype=np.float64)
    i, j = np.asarray(i), np.asarray(j)
    if not (s.shape == i.shape == j.shape):
        fail("similarity", f"expected one value per pair ({i.shape}), got {s.shape}")
    keep = np.isfinite(s) & (s > 0)
    return s[keep], i[keep], j[keep]


def relational_comparison(similarity, reps: dict, i, j, reference: str = "Original",
                          bands=SEED_BANDS, high: float = 0.25, low: float = 0.10) -> dict:
    """Correlations of representation cosines with a WordNet similarity over pairs (seed §8).

    Pairs with a NaN or non-positive similarity are dropped (the seed kept ``sim > 0``).

    Parameters
    ----------
    similarity : (P,) array
        WordNet similarity of pair p = (i[p], j[p]).
    reps : dict name -> (N, D) array
    i, j : (P,) int arrays
    reference : str
        Name whose values the deltas are taken against.
    bands : sequence of (lo, hi)
        Similarity bands (the last band of the seed, [0.5, 1.0], is closed).
    high, low : float
        ``gradient = mean cos(sim >= high) - mean cos(sim < low)``.

    Returns
    -------
    dict: ``n_pairs`` and per name ``pearson``, ``spearman``, ``gradient``, ``bands``
    (list of {lo, hi, n, mean_cos}), plus ``delta_pearson`` / ``delta_spearman`` /
    ``delta_gradient`` against ``reference``.
    """
    s, i, j = relational_pairs(similarity, i, j)
    out: dict = {"n_pairs": int(s.size)}
    hi_m, lo_m = s >= high, s < low
    for name, X in reps.items():
        c = pair_cosines(X, i, j)
        ok = s.size > 2 and s.std() > 0 and c.std() > 0
        r = {"pearson": float(np.corrcoef(s, c)[0, 1]) if ok else float("nan"),
             "spearman": float(spearmanr(s, c).statistic) if ok else float("nan"),
             "gradient": float(c[hi_m].mean() - c[lo_m].mean()) if hi_m.any() and lo_m.any() else float("nan"),
             "bands": []}
        for lo, hi in bands:
            m = (s >= lo) & ((s <= hi) if hi >= 1.0 else (s < hi))
            r["bands"].append({"lo": lo, "hi": hi, "n": int(m.sum()),
                               "mean_cos": float(c[m].mean()) if m.sum() >= 5 else float("nan")})
        out[name] = r
    if reference in reps:
        ref = out[reference]
        for name in reps:
            for key in ("pearson", "spearman", "gradient"):
                out[name][f"delta_{key}"] = out[name][key] - ref[key]
    return out


def per_token_cosines(original, modulated) -> np.ndarray:
    """Row-wise cosine between original and modulated representations, shape (N,) float64
    (the items :func:`per_token_preservation` summarises and its interval resamples)."""
    a = as_tensor(original, "original", ndim=2, dtype=torch.float64)
    b = as_tensor(modulated, "modulated", ndim=2, dtype=torch.float64)
    if a.shape != b.shape:
        fail("modulated", f"shape {tuple(b.shape)} differs from original {tuple(a.shape)}")
    return F.cosine_similarity(a, b, dim=1, eps=1e-12).numpy()


def per_token_preservation(original, modulated) -> dict:
    """Row-wise cosine between original and modulated representations (mean, std, min)."""
    c = torch.as_tensor(per_token_cosines(original, modulated))
    return {"mean": float(c.mean()), "std": float(c.std()) if c.numel() > 1 else 0.0, "min": float(c.min())}


SEED_QUICK_TEST_SENTENCES = (  # seed 001 §7's quick test
    "summarize: The cat sat on the mat.",
    "summarize: Quantum mechanics describes particles at atomic scale.",
    "summarize: The derivative of x squared is two x.",
    "summarize: Love is patient, love is kind.",
    "summarize: Mount Everest is the tallest mountain.",
)


def impact_statistics(original, modulated) -> dict:
    """Seed §7's ``measure_modulator_impact`` on one sentence's token states.

    Parameters
    ----------
    original, modulated : (S, D) arrays
        Last hidden state of the S tokens without and with the modulator.

    Returns
    -------
    dict of float64 arrays: ``cos`` (S,) per-token cosine, ``norm_ratio`` (S,)
    ``|mod| / (|orig| + 1e-8)``, ``pairwise_shift`` (S(S−1)/2,) change of the cosine of every
    token pair (upper triangle, ``mod − orig``; empty for one token).
    """
    a = as_tensor(original, "original", ndim=2, dtype=torch.float64)
    b = as_tensor(modulated, "modulated", ndim=2, dtype=torch.float64)
    if a.shape != b.shape:
        fail("modulated", f"shape {tuple(b.shape)} differs from original {tuple(a.shape)}")
    an, bn = F.normalize(a, dim=1, eps=1e-12), F.normalize(b, dim=1, eps=1e-12)
    iu = torch.triu_indices(a.shape[0], a.shape[0], 1)
    return {"cos": (an * bn).sum(1).numpy(), "norm_ratio": (b.norm(dim=1) / (a.norm(dim=1) + 1e-8)).numpy(),
            "pairwise_shift": ((bn @ bn.T) - (an @ an.T))[iu[0], iu[1]].numpy()}


@torch.no_grad()
def modulator_impact(lm, modulator, sentences: Sequence[str] = SEED_QUICK_TEST_SENTENCES, *,
                     stack: str = "encoder") -> dict:
    """Seed §7's quick test: the last hidden state of each sentence with and without
    ``modulator`` attached to every block of ``stack``, compared token by token.

    Each sentence is encoded on its own (no padding), as in the seed. The summary keys are
    the seed's (means and population standard deviations over all tokens / token pairs of
    all sentences).

    Returns
    -------
    dict: ``cos``, ``norm_ratio``, ``pairwise_shift`` (arrays pooled over the sentences),
    ``n_tokens``, ``n_pairs``, ``per_sentence`` (``[{"sentence", "n_tokens", "cos_mean"}]``) and
    ``cos_mean``, ``cos_std``, ``norm_ratio_mean``, ``pairwise_shift_mean``,
    ``pairwise_shift_std``.
    """
    from .hooks import attach

    model = lm.model if hasattr(lm, "model") else lm
    enc = encoder_module(model, getattr(lm, "family", None))
    dev = next(model.parameters()).device
    parts, per = [], []
    for s in sentences:
        b = lm.tokenizer(s, return_tensors="pt", return_token_type_ids=False).to(dev)
        h0 = enc(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state[0]
        with attach(lm, modulator, stack=stack):
            h1 = enc(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state[0]
        st = impact_statistics(h0.float().cpu(), h1.float().cpu())
        parts.append(st)
        per.append({"sentence": s, "n_tokens": int(h0.shape[0]), "cos_mean": float(st["cos"].mean())})
    out = {k: np.concatenate([p[k] for p in parts]) for k in ("cos", "norm_ratio", "pairwise_shift")}
    out.update(n_tokens=int(out["cos"].size), n_pairs=int(out["pairwise_shift"].size), per_sentence=per,
               cos_mean=float(out["cos"].mean()), cos_std=float(out["cos"].std()),
               norm_ratio_mean=float(out["norm_ratio"].mean()),
               pairwise_shift_mean=float(out["pairwise_shift"].mean()) if out["pairwise_shift"].size else float("nan"),
               pairwise_shift_std=float(out["pairwise_shift"].std()) if out["pairwise_shift"].size else float("nan"))
    return out


# --------------------------------------------------------------------------- generation
def token_differences(a: Sequence[int], b: Sequence[int]) -> int:
    """Positional mismatches over the common length plus the length difference (seed §11)."""
    a, b = np.asarray(list(a)), np.asarray(list(b))
    n = min(a.size, b.size)
    return int((a[:n] != b[:n]).sum() + abs(a.size - b.size))


@torch.no_grad()
def greedy_generate(model: nn.Module, tokenizer, prompts: Sequence[str], max_new_tokens: int = 32) -> list[dict]:
    """Greedy generation, one prompt at a time; returns ``[{"prompt", "text", "ids"}]``.

    Attached hooks apply (T5: the encoder stack runs inside ``generate``).
    """
    out = []
    dev = next(model.parameters()).device
    for p in prompts:
        b = tokenizer(p, return_tensors="pt", return_token_type_ids=False).to(dev)
        g = model.generate(**b, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
        ids = g[0].tolist()
        if not getattr(model.config, "is_encoder_decoder", False):
            ids = ids[b["input_ids"].shape[1]:]
        out.append({"prompt": p, "text": tokenizer.decode(ids, skip_special_tokens=True), "ids": ids})
    return out


def compare_generations(original: list[dict], modulated: list[dict]) -> list[dict]:
    """Side-by-side rows: prompt, original text, modulated text, identical, token_diffs, n_tokens."""
    rows = []
    for o, m in zip(original, modulated):
        rows.append({"prompt": o["prompt"], "original": o["text"], "modulated": m["text"],
                     "identical": o["ids"] == m["ids"], "token_diffs": token_differences(o["ids"], m["ids"]),
                     "n_tokens": max(len(o["ids"]), len(m["ids"]))})
    return rows


# --------------------------------------------------------------------------- training objective
def split_indices(n: int, val_fraction: float = 0.1, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """Seeded permutation split into (train, val) index arrays (val at least 1 when n >= 2)."""
    check_positive_int(n, "n", minimum=2)
    perm = np.random.default_rng(seed).permutation(n)
    n_val = min(max(1, int(round(n * val_fraction))), n - 1)
    return perm[n_val:], perm[:n_val]


def batches(indices, batch_size: int, seed: int | None = None) -> list[np.ndarray]:
    """Split ``indices`` into batches (shuffled with ``seed`` when given)."""
    idx = np.asarray(indices)
    if seed is not None:
        idx = idx[np.random.default_rng(seed).permutation(idx.size)]
    bs = check_positive_int(batch_size, "batch_size")
    return [idx[s:s + bs] for s in range(0, idx.size, bs)]


def seq2seq_loss(model: nn.Module, tokenizer, inputs: Sequence[str], targets: Sequence[str],
                 max_input_len: int = 128, max_target_len: int = 16) -> torch.Tensor:
    """Cross-entropy of ``targets`` given ``inputs`` for an encoder–decoder model (T5).

    Uses ``model(labels=...)``, which shifts the labels right to build the decoder input.
    (The seed fed the unshifted target ids as decoder input, so each position could read
    the token it had to predict.) Padding positions are ignored (-100).
    """
    dev = next(model.parameters()).device
    enc = tokenizer(list(inputs), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_input_len, return_token_type_ids=False).to(dev)
    lab = tokenizer(list(targets), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_target_len, return_token_type_ids=False).to(dev)
    labels = lab["input_ids"].masked_fill(lab["attention_mask"] == 0, -100)
    return model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels).loss


def causal_completion_loss(model: nn.Module, tokenizer, inputs: Sequence[str], targets: Sequence[str],
                           max_input_len: int = 128, max_target_len: int = 16) -> torch.Tensor:
    """Decoder-LM alternative: CE on the target tokens of ``"{input} => {target}"`` only."""
    dev = next(model.parameters()).device
    ids, labels = [], []
    for x, y in zip(inputs, targets):
        a = tokenizer(f"{x} =>", add_special_tokens=False)["input_ids"][:max_input_len]
        t = tokenizer(f" {y}", add_special_tokens=False)["input_ids"][:max_target_len]
        ids.append(a + t)
        labels.append([-100] * len(a) + t)
    L = max(map(len, ids))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    x = torch.tensor([r + [pad] * (L - len(r)) for r in ids], device=dev)
    m = torch.tensor([[1] * len(r) + [0] * (L - len(r)) for r in ids], device=dev)
    y = torch.tensor([r + [-100] * (L - len(r)) for r in labels], device=dev)
    return model(input_ids=x, attention_mask=m, labels=y).loss


def embedding_regression_loss(model: nn.Module, tokenizer, inputs: Sequence[str], target_ids: Sequence[int],
                              max_input_len: int = 128) -> torch.Tensor:
    """Encoder-only alternative (BERT): ``1 - cos(mean-pooled modulated definition,
    frozen input embedding of the lemma token)``. Encoder-only models cannot emit the
    lemma, so the objective asks the pooled definition to point at the lemma's own
    embedding row."""
    dev = next(model.parameters()).device
    enc = tokenizer(list(inputs), return_tensors="pt", padding=True, truncation=True,
                    max_length=max_input_len, return_token_type_ids=False).to(dev)
    h = encoder_module(model)(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
    mk = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
    pooled = (h * mk).sum(1) / mk.sum(1)
    tgt = model.get_input_embeddings().weight[torch.as_tensor(list(target_ids), device=dev)].detach()
    return (1 - F.cosine_similarity(pooled, tgt, dim=-1)).mean()


OBJECTIVES: dict[str, Callable] = {"t5": seq2seq_loss, "t5_v1_1": seq2seq_loss,
                                   "decoder_lm": causal_completion_loss, "bert": embedding_regression_loss}


# --------------------------------------------------------------------------- one-call pipeline
def anchor_similarity(synset_ids, kind: str = "wup") -> np.ndarray:
    """Symmetric WordNet similarity matrix over anchors (seed §8).

    The upper triangle ``sim(a_r, a_c)`` for r < c is mirrored (NLTK's Wu–Palmer is not
    always symmetric; the seed filled both halves from r < c), the diagonal is 1 and
    pairs NLTK does not score (None/NaN) are 0, as in the seed.

    Returns
    -------
    (A, A) float64 array.
    """
    from ..lexical.engine import similarity_matrix

    M = np.asarray(similarity_matrix(np.asarray(synset_ids), kind), dtype=np.float64)
    M = np.nan_to_num(M, nan=0.0)
    U = np.triu(M, k=1)
    S = U + U.T
    np.fill_diagonal(S, 1.0)
    return S


def stack_size(model, stack: str = "encoder", family: str | None = None) -> int:
    """Number of blocks of ``stack`` (the modulator needs one alpha per block)."""
    from .hooks import locate_blocks

    return len(locate_blocks(model, stack, family)[1])


def build_procrustes_modulator(lm, matched, encoder_reps, static_reps, *, n_anchor: int = 3000, n_geo: int = 64,
                               k_neighbors: int = 10, temperature: float = 10.0, scale_fraction: float = 0.1,
                               initial_alpha: float = 0.01, seed: int = 42, similarity: str = "wup",
                               stack: str = "encoder"):
    """Seed §8 in one call: anchors -> WordNet matrix -> eigen-embedding -> kNN projection
    -> Procrustes -> an initialised :class:`GeometricResidualModulator`.

    Parameters
    ----------
    lm : LoadedModel
    matched : geolip_lib.lexical.matching.Matched
        M matched entries (synset_ids, token_ids).
    encoder_reps, static_reps : (M, d_model) arrays
        Encoder (definition) and static (token embedding) representations of the entries.
    n_anchor : int
        Anchors drawn at random (``default_rng(seed)``), clipped to M.
    n_geo : int
        Geometric dimensions (<= min(n_anchor, d_model)).
    k_neighbors, temperature : kNN projection settings.
    scale_fraction : float
        Projection scale as a fraction of the mean encoder norm (seed: 0.1).
    initial_alpha : float
    similarity : {"wup", "path"}
    stack : str

    Returns
    -------
    modulator : GeometricResidualModulator
    info : dict with anchor_idx, similarity (A, A), eigenvalues, recon_corr, geo (M, n_geo),
        alignment_cos, singular_value_sum, explained_variance, proj_norm
    """
    from .residual import GeometricResidualModulator

    M = len(matched)
    E = as_tensor(encoder_reps, "encoder_reps", ndim=2).numpy()
    St = as_tensor(static_reps, "static_reps", ndim=2).numpy()
    if E.shape[0] != M or St.shape[0] != M:
        fail("encoder_reps", f"expected {M} rows (one per matched entry), got {E.shape[0]} and {St.shape[0]}")
    n_anchor = min(check_positive_int(n_anchor, "n_anchor", minimum=2), M)
    if n_geo > min(n_anchor, E.shape[1]):
        fail("n_geo", f"must be <= min(n_anchor={n_anchor}, d_model={E.shape[1]}), got {n_geo}")
    rng = np.random.default_rng(seed)
    anchor_idx = np.sort(rng.choice(M, size=n_anchor, replace=False))
    S = anchor_similarity(np.asarray(matched.synset_ids)[anchor_idx], similarity)
    from .residual import eigen_embedding

    anchor_geo, recon, ev = eigen_embedding(S, n_geo)
    geo = knn_project(St, anchor_idx, anchor_geo, k=k_neighbors, temperature=temperature)
    pr = procrustes_projection(E[anchor_idx], geo[anchor_idx], scale_fraction=scale_fraction)
    model = lm.model if hasattr(lm, "model") else lm
    cfg = model.config
    d_model = getattr(cfg, "d_model", None) or cfg.hidden_size
    n_layers = stack_size(lm, stack)
    mod = GeometricResidualModulator(d_model, cfg.vocab_size, n_geometric_dims=n_geo, n_layers=n_layers,
                                     initial_alpha=initial_alpha, seed=seed)
    init_modulator_from_pipeline(mod, np.asarray(matched.token_ids), geo, pr["weight"])
    info = {"anchor_idx": anchor_idx, "similarity": S, "eigenvalues": ev.numpy(), "recon_corr": recon,
            "geo": geo, "alignment_cos": pr["alignment_cos"], "singular_value_sum": pr["singular_value_sum"],
            "explained_variance": pr["explained_variance"], "proj_norm": float(pr["weight"].norm())}
    return mod, info


def wordnet_pair_similarity(matched, i, j, kind: str = "path") -> np.ndarray:
    """WordNet similarity (NLTK-exact engine) of the matched entries' synsets for pairs (i, j)."""
    from ..lexical.engine import path_similarity_pairs, wup_similarity_pairs

    fn = {"path": path_similarity_pairs, "wup": wup_similarity_pairs}
    if kind not in fn:
        fail("kind", f"expected 'path' or 'wup', got {kind!r}")
    syn = np.asarray(matched.synset_ids)
    return fn[kind](syn[np.asarray(i)], syn[np.asarray(j)])


@torch.no_grad()
def per_item_losses(lm, matched, idx, **kwargs) -> np.ndarray:
    """:func:`definition_lemma_loss` of each entry of ``idx`` on its own, shape (len(idx),).

    The items a validation loss averages, so its interval can resample them (the trainer's
    ``evaluate`` averages per-batch losses, which weight the items by their target tokens).
    Attached modulators apply; call it in eval mode.
    """
    return np.array([float(definition_lemma_loss(lm, matched, [k], **kwargs)) for k in np.asarray(idx)],
                    dtype=np.float64)


def definition_lemma_loss(lm, matched, idx, *, prompt: str | None = None, max_input_len: int = 128,
                          max_target_len: int = 16) -> torch.Tensor:
    """The definition -> lemma objective for ``lm.family`` on entries ``idx``.

    T5: sequence-to-sequence CE of the lemma given ``"summarize: {definition}"``;
    decoder LMs: CE on the lemma after ``"{definition} =>"``; encoder-only (BERT):
    cosine regression of the pooled definition onto the lemma token's embedding row.
    """
    from ..lexical.representations import prompt_for

    fam = lm.family
    if fam not in OBJECTIVES:
        fail("lm", f"no definition -> lemma objective for family {fam!r} (have {sorted(OBJECTIVES)})")
    template = prompt or prompt_for(fam)
    idx = np.asarray(idx)
    inputs = [template.format(definition=matched.definitions[k]) for k in idx]
    if fam == "bert":
        return embedding_regression_loss(lm.model, lm.tokenizer, inputs, np.asarray(matched.token_ids)[idx],
                                         max_input_len=max_input_len)
    return OBJECTIVES[fam](lm.model, lm.tokenizer, inputs, [matched.lemmas[k] for k in idx],
                           max_input_len=max_input_len, max_target_len=max_target_len)
