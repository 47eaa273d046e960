"""Notebook 17's measurements: do different models represent the same inputs alike?

Huh, Cheung, Wang and Isola (2024), "The Platonic Representation Hypothesis" (ICML): the same
inputs go through several models; each model's pooled representation of each input, at every
layer, is compared between models by mutual k-nearest-neighbour alignment (k = 10) and debiased
linear CKA (the math and what it follows of the paper's code: :mod:`geolip_lib.metrics.alignment`).

Here: the inputs are WordNet 3.0 definitions and example sentences (:func:`alignment_texts`, offline);
a representation is the mask-weighted mean of a layer's hidden states over the input's tokens, at
every layer ``lm.hidden_states`` returns (the paper's ``pool='avg'`` over ``hidden_states``); the
features of one model are clamped as the paper's ``prepare_features`` does (every layer at once).
Per pair of models: the layer pair with the best mutual k-NN (the paper keeps the best over every
layer pair) and the two last layers. Beside each value: its bootstrap interval over the inputs, the
chance level ``k / (N - 1)``, the shuffled-pairing null and the random-init null (the two models'
random-init twins, measured the same way, the best layer pair chosen again among the twins').

Bootstrap over inputs: the mutual k-NN interval resamples the inputs' per-input overlaps with each
input's neighbours found among all ``N`` inputs (a resample holding an input twice would make its
copies each other's nearest neighbours); the CKA interval resamples the inputs themselves (counts,
:func:`geolip_lib.metrics.alignment.weighted_cka`). The best layer pair's interval is conditional on
the pair chosen.
"""
from __future__ import annotations

import gc
from itertools import combinations
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
import torch
from scipy import stats

from .. import validation as V
from ..lexical import wordnet as lexwn
from ..metrics import alignment as AL
from ..metrics.intervals import N_BOOT, bootstrap, bootstrap_weighted, holding, null_over_seeds
from ..models import layered
from ..results import exact, headline
from .contextual import wordnet_examples

__all__ = ["OTHER_LANGUAGES", "language_problem", "alignment_texts", "pooled_features", "model_features",
           "measure_pair", "measure_pairs", "pair_frame", "competence_rho", "competence_interval", "alignment_claims",
           "competence_claims",
           "SCOPES",
           "WIT_NOTE", "release", "collect_features"]

#: models whose inputs are not English text, by name prefix, and what they read instead
OTHER_LANGUAGES = {"antiberty": "AntiBERTy reads antibody sequences (amino-acid letters), not English text",
                   "rxnfp": "rxnfp reads reaction SMILES, not English text"}
#: the two layer pairs of every model pair that the claims read
SCOPES = ("best layer pair", "last layers")
#: how the paper's public code reads its image-caption set (platonic-rep, extract_features.py)
WIT_NOTE = ("The paper's image-caption set is WIT, 1024 pairs: its code reads load_dataset('minhuh/prh', "
            "revision='wit_1024', split='train') from the Hugging Face hub (revision 'wit_1024_meta' for the "
            "captions alone), each caption x['text'][0], each image x['image']; the vision towers' feature is "
            "the class token of every block.")


def language_problem(model: str) -> Optional[str]:
    """Why ``model`` cannot read the English inputs (None: it can)."""
    return next((why for prefix, why in OTHER_LANGUAGES.items() if str(model).startswith(prefix)), None)


def alignment_texts(n: int, seed: int = 0, min_chars: int = 10) -> tuple[list[str], list[str]]:
    """``n`` distinct WordNet 3.0 texts drawn with ``default_rng(seed)``: half synset definitions
    (longer than ``min_chars``), half example sentences (:func:`geolip_lib.probes.contextual.wordnet_examples`).
    Returns ``(texts, kinds)``, each kind "definition" or "example"."""
    V.check_positive_int(n, "n", minimum=12)
    defs = sorted({d for d in lexwn.load_lexicon(progress=False).definitions if len(d) > min_chars})
    examples = sorted({e for sents in wordnet_examples().values() for e in sents if len(e) > min_chars} - set(defs))
    n_def = n // 2
    if n_def > len(defs) or n - n_def > len(examples):
        V.fail("n", f"{n} texts asked for, but WordNet has {len(defs)} definitions and {len(examples)} example "
                    "sentences; ask for fewer")
    rng = np.random.default_rng(seed)
    texts = [defs[i] for i in rng.choice(len(defs), n_def, replace=False)]
    texts += [examples[i] for i in rng.choice(len(examples), n - n_def, replace=False)]
    kinds = ["definition"] * n_def + ["example"] * (n - n_def)
    order = rng.permutation(n)
    return [texts[i] for i in order], [kinds[i] for i in order]


def pooled_features(lm: Any, texts: Sequence[str], *, max_length: int = 64, batch_size: int = 32) -> np.ndarray:
    """``(N, L, D)`` float32: each text's mean hidden state over its tokens (the attention mask's
    weights), at every layer ``lm.hidden_states`` returns (0: the embedding output)."""
    V.check_positive_int(batch_size, "batch_size")
    out: list[np.ndarray] = []
    for s in range(0, len(texts), batch_size):
        chunk = list(texts[s:s + batch_size])
        hs = lm.hidden_states(chunk, max_length=max_length, batch_size=len(chunk))
        m = hs.mask.double().unsqueeze(-1)  # (B, S, 1)
        per = [((h.double() * m).sum(1) / m.sum(1).clamp_min(1)).numpy() for h in hs.layers]
        out.append(np.stack(per, axis=1).astype(np.float32))
    return np.concatenate(out)


def model_features(lm: Any, inputs: Sequence, *, random_init_seeds: int = 1, max_length: int = 64,
                   batch_size: int = 32, q: float = AL.OUTLIER_Q, read: Optional[Callable] = None) -> dict:
    """The trained model's clamped features (``read(lm, inputs)``, default :func:`pooled_features` of texts,
    then the paper's ``remove_outliers``) and those of ``random_init_seeds`` random-init twins (one at a
    time, each dropped after its forward passes: :func:`geolip_lib.models.layered.random_init_model`).
    Returns ``{"trained": (N, L, D), "random_init": [(N, L, D), ...], "params": parameter count}``."""
    if read is None:
        def read(m: Any, xs: Sequence) -> np.ndarray:
            return pooled_features(m, xs, max_length=max_length, batch_size=batch_size)
    feats = AL.remove_outliers(read(lm, inputs), q)
    twins = []
    for s in range(random_init_seeds):
        twin = layered.random_init_model(lm, seed=lm.params.seed + 1 + s)
        twins.append(AL.remove_outliers(read(twin, inputs), q).astype(np.float32))
        del twin
    return {"trained": feats.astype(np.float32), "random_init": twins,
            "params": int(sum(p.numel() for p in lm.model.parameters()))}


def measure_pair(fa: np.ndarray, fb: np.ndarray, *, k: int = AL.TOPK, n_boot: int = N_BOOT, seed: int = 0,
                 n_shuffles: int = 20, cka_boot: Optional[int] = None) -> dict:
    """Mutual k-NN of every layer pair of two ``(N, L, D)`` feature arrays of the same inputs, and at
    :data:`SCOPES` (the best layer pair, the last layers): the value, the per-input overlaps'
    bootstrap interval, debiased CKA with its bootstrap interval (``cka_boot`` resamples, default
    ``n_boot``; 0: no interval) and the shuffled-pairing null (``n_shuffles`` permutations)."""
    fa, fb = np.asarray(fa), np.asarray(fb)
    if fa.ndim != 3 or fb.ndim != 3 or fa.shape[0] != fb.shape[0]:
        V.fail("fb", f"needs two (N, L, D) arrays of the same N inputs, got {fa.shape} and {fb.shape}")
    n = fa.shape[0]
    M = AL.mutual_knn_matrix([fa[:, i] for i in range(fa.shape[1])], [fb[:, j] for j in range(fb.shape[1])], k)
    best = tuple(int(x) for x in np.unravel_index(int(np.argmax(M)), M.shape))
    at = {"best layer pair": best, "last layers": (fa.shape[1] - 1, fb.shape[1] - 1)}
    out: dict = {"matrix": M, "n": n, "k": k, "chance": AL.chance_level(n, k), "scopes": {}}
    nb = n_boot if cka_boot is None else cka_boot
    for scope, (i, j) in at.items():
        ov = AL.mutual_knn(fa[:, i], fb[:, j], k, per_input=True)
        rec = {"layers": (i, j), "value": float(ov.mean()), "overlaps": ov,
               "interval": bootstrap(ov, np.mean, n_boot=n_boot, seed=seed, what="inputs (per-input overlaps)"),
               "cka": AL.cka(fa[:, i], fb[:, j])}
        rec["cka_interval"] = (holding(rec["cka"], bootstrap_weighted(n, AL.weighted_cka(fa[:, i], fb[:, j]),
                                                                       n_boot=nb, seed=seed, what="inputs"))
                               if nb else None)
        rec["shuffled"] = (AL.shuffled_overlaps(fa[:, i], fb[:, j], k, n_shuffles=n_shuffles, seed=seed)
                           if n_shuffles else None)
        out["scopes"][scope] = rec
    return out


def measure_pairs(features: Mapping[str, dict], *, k: int = AL.TOPK, n_boot: int = N_BOOT, seed: int = 0,
                  n_shuffles: int = 20, cka_boot: Optional[int] = None) -> tuple[dict, dict]:
    """Every unordered pair of ``features`` (model -> :func:`model_features`), trained and random-init.
    Returns ``(trained, twins)``: pair name (``"A × B"``, sorted) -> :func:`measure_pair`; ``twins``
    holds one entry per twin seed present in both models (no CKA interval, no shuffles)."""
    trained, twins = {}, {}
    for a, b in combinations(sorted(features), 2):
        name = AL.pair_name([a, b])
        trained[name] = measure_pair(features[a]["trained"], features[b]["trained"], k=k, n_boot=n_boot, seed=seed,
                                     n_shuffles=n_shuffles, cka_boot=cka_boot)
        twins[name] = [measure_pair(x, y, k=k, n_boot=n_boot, seed=seed, n_shuffles=0, cka_boot=0)
                       for x, y in zip(features[a]["random_init"], features[b]["random_init"])]
    return trained, twins


def pair_frame(trained: Mapping[str, dict], twins: Mapping[str, list]) -> pd.DataFrame:
    """One row per (pair, scope): layers, mutual k-NN [interval], chance, shuffled, random init, CKA [interval]."""
    rows = []
    for name, m in trained.items():
        for scope, s in m["scopes"].items():
            tw = [t["scopes"][scope]["value"] for t in twins.get(name, [])]
            sh = s["shuffled"]
            civ = s["cka_interval"]
            rows.append({"pair": name, "scope": scope, "layers": f"{s['layers'][0]}, {s['layers'][1]}",
                         "mutual kNN": f"{s['value']:.3f} [{s['interval'].lo:.3f}, {s['interval'].hi:.3f}]",
                         "chance k/(N-1)": f"{m['chance']:.4f}",
                         "shuffled pairing": "–" if sh is None else f"{sh.mean():.4f} (max {sh.max():.4f})",
                         "random init": f"{np.mean(tw):.3f}" if tw else "–",
                         "debiased CKA": f"{s['cka']:.3f}" + ("" if civ is None else f" [{civ.lo:.3f}, {civ.hi:.3f}]")})
    return pd.DataFrame(rows)


def competence_rho(values: Mapping[str, float], params: Mapping[str, int]) -> float:
    """Spearman's rank correlation, over pairs, between a pair's alignment and its competence: the
    geometric mean of its two models' parameter counts (no ties between pairs of distinct sizes)."""
    names = list(values)
    comp = [float(np.mean([np.log(params[m]) for m in n.split(AL.PAIR_SEP)])) for n in names]
    return float(stats.spearmanr(comp, [values[n] for n in names]).statistic)


def competence_interval(trained: Mapping[str, dict], params: Mapping[str, int], scope: str, *, n_boot: int,
                seed: int) -> Optional[tuple[float, Any]]:
    """Spearman's rho between pair competence and mutual k-NN at ``scope``, with a bootstrap over the
    inputs (the same resampled inputs' overlaps in every pair; the layer pairs kept)."""
    names = list(trained)
    if len(names) < 3:
        return None
    per = np.stack([trained[n]["scopes"][scope]["overlaps"] for n in names])  # (pairs, N)
    comp = np.array([np.mean([np.log(params[m]) for m in n.split(AL.PAIR_SEP)]) for n in names])

    def stat(W: np.ndarray) -> np.ndarray:
        means = (W @ per.T) / W.sum(1, keepdims=True)  # (b, pairs)
        return np.array([stats.spearmanr(comp, row).statistic for row in means])

    rho = competence_rho({n: trained[n]["scopes"][scope]["value"] for n in names}, params)
    return rho, holding(rho, bootstrap_weighted(per.shape[1], stat, n_boot=n_boot, seed=seed, what="inputs"))


def alignment_claims(trained: Mapping[str, dict], twins: Mapping[str, list], *, params: Mapping[str, int],
                     set_name: str, not_run: Mapping[str, str], n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """``metrics["claims"]`` of notebook 17 (read by ``params/claims/huh-2024.yaml``), per pair name:

    - ``mutual_knn_alignment[pair][scope]``: mutual k-NN with its interval over inputs, nulls chance
      (exact ``k / (N - 1)``), shuffled pairing (over its permutations) and random init (the twins);
    - ``debiased_cka[pair][scope]``: debiased linear CKA with its interval, the random-init twins' beside it;
    - ``alignment_over_random_init[pair][scope]``: the mean over inputs of the trained pair's overlap minus
      the twins' (paired by input), with its bootstrap interval: what training adds to the architectures';
    - ``alignment_competence[set][scope]``: Spearman's rho between pair competence (the geometric
      mean of the two models' parameter counts) and mutual k-NN over every pair of the set, with a
      bootstrap over inputs and the same rho of the random-init twins beside it.

    ``set_name``: the name of the set of every model measured (``"A × B × C"``); ``not_run``: pair name ->
    why it was not measured (recorded as ``{"not_run": why}``)."""
    claims: dict = {"mutual_knn_alignment": {}, "debiased_cka": {}, "alignment_competence": {},
                    "alignment_over_random_init": {}}
    for name, m in trained.items():
        mk, ck, over = {}, {}, {}
        for scope in SCOPES:
            s = m["scopes"][scope]
            tw = [t["scopes"][scope] for t in twins.get(name, [])]
            nulls: dict = {"chance": {"value": m["chance"], "interval": exact(m["chance"], f"k = {m['k']}, "
                                                                                  f"N = {m['n']}")}}
            if s["shuffled"] is not None:
                nulls["shuffled pairing"] = null_over_seeds(s["shuffled"], what="permutations of the pairing", lower=0.0)
            cnull: dict = {}
            if tw:
                nulls["random_init"] = _twin_null([t["value"] for t in tw], tw[0]["interval"], lower=0.0)  # an overlap
                cnull["random_init"] = _twin_null([t["cka"] for t in tw], None)
            mk[scope] = headline(s["value"], interval=s["interval"], nulls=nulls, fmt=".3f",
                                 label=f"{name}: mutual k-NN (k = {m['k']}), {scope} {s['layers']}",
                                 note=f"layers {s['layers'][0]} and {s['layers'][1]} of {m['n']} inputs")
            if tw:  # paired by input: the trained pair's overlap minus the twins' (each at its own layer pair)
                d = s["overlaps"] - np.mean([t["overlaps"] for t in tw], axis=0)
                over[scope] = headline(float(d.mean()), interval=bootstrap(d, np.mean, n_boot=n_boot, seed=seed,
                                                                           what="inputs (paired differences)"),
                                       fmt=".3f", label=f"mutual k-NN, trained minus random-init twins, {scope}")
            civ = s["cka_interval"]
            ck[scope] = headline(s["cka"], interval=civ if civ is not None and civ.finite else "exact", nulls=cnull,
                                 fmt=".3f", label=f"debiased linear CKA, {scope} {s['layers']}")
        claims["mutual_knn_alignment"][name], claims["debiased_cka"][name] = mk, ck
        claims["alignment_over_random_init"][name] = over or {"not_run": "no random-init twins (RANDOM_INIT_SEEDS = 0)"}
    for name, why in not_run.items():
        for rec in ("mutual_knn_alignment", "debiased_cka", "alignment_over_random_init"):
            claims[rec][name] = {"not_run": why}
    comp = competence_claims(trained, twins, params=params, n_boot=n_boot, seed=seed)
    claims["alignment_competence"][set_name] = comp or {
        "not_run": f"{len(trained)} pair(s) of English models measured: a rank correlation over pairs needs at least 3"}
    return claims


def _twin_null(values: list, interval: Any, lower: Optional[float] = None) -> dict:
    """The random-init null of one pair: over its twin seeds (a prediction interval) from 2 seeds on,
    else the one twin pair's value with its interval over inputs."""
    if len(values) >= 2:
        return null_over_seeds(values, what="random-init twin pairs", lower=lower)
    return {"value": float(values[0]), "interval": interval if interval is not None else exact(values[0])}


def competence_claims(trained: Mapping[str, dict], twins: Mapping[str, list], *, params: Mapping[str, int],
                      n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """``alignment_competence`` for :func:`alignment_claims`' record, per scope (empty below 3 pairs)."""
    out: dict = {}
    for scope in SCOPES:
        got = competence_interval(trained, params, scope, n_boot=n_boot, seed=seed)
        if got is None:
            continue
        rho, iv = got
        nulls = {}
        tw = {n: t[0]["scopes"][scope]["value"] for n, t in twins.items() if t}
        if len(tw) == len(trained):
            nulls["random_init"] = {"value": competence_rho(tw, params), "interval": exact(competence_rho(tw, params))}
        out[scope] = headline(rho, interval=iv, nulls=nulls, fmt=".2f",
                              label=f"Spearman rho, competence vs mutual k-NN over {len(trained)} pairs ({scope})",
                              note="competence of a pair: the geometric mean of its two models' parameter counts")
    return out


def release(lm: Any) -> None:
    """Drop a model's weights once its features are taken, so the next model loads beside nothing: the
    module is replaced by an empty one on the same device (what the provenance block reads, name, params,
    files, dtype and device, stays), and a memory-mapped checkpoint's pages are handed back."""
    dev = lm.device
    lm.release_file_pages()
    empty = torch.nn.Module()
    empty.register_parameter("released", torch.nn.Parameter(torch.empty(0, device=dev), requires_grad=False))
    lm.model = empty


def collect_features(names: Sequence[str], inputs: Sequence, *, load: Callable[[str], Any],
                     random_init_seeds: int = 1, max_length: int = 64, batch_size: int = 32,
                     read: Optional[Callable] = None, problem: Optional[Callable[[Any], Optional[str]]] = None,
                     captions: Optional[Sequence[str]] = None) -> tuple[dict, dict]:
    """:func:`model_features` of each model in ``names``, one model at a time (``load(name)``: the notebook's
    ``job.load``, which records the provenance), each released (:func:`release`) before the next loads.

    ``inputs``: texts (the default ``read``, :func:`pooled_features`; a model that reads another language is
    skipped by name, :func:`language_problem`), or what ``read(lm, inputs)`` takes (images, say); ``problem(lm)``:
    why a loaded model cannot read them (None: it can). ``captions``: texts that each model also reads while
    it is loaded, kept as ``features[model]["captions"]`` (:func:`model_features` of them).
    Returns ``(features, not_run)``: model -> features, and model -> why it was not read."""
    features, skipped = {}, {}
    for name in names:
        why = language_problem(name) if read is None else None
        if why:
            skipped[name] = why
            print(f"{name}: not run — {why}")
            continue
        lm = load(name)
        why = problem(lm) if problem is not None else None
        if why:
            skipped[name] = why
            print(f"{name}: not run — {why}")
        else:
            kw = dict(random_init_seeds=random_init_seeds, max_length=max_length, batch_size=batch_size)
            features[name] = f = model_features(lm, inputs, read=read, **kw)
            if captions is not None:
                f["captions"] = model_features(lm, captions, **kw)
            print(f"{name}: {f['trained'].shape[1]} layers of width {f['trained'].shape[2]}, {f['params'] / 1e6:.1f}M "
                  f"parameters, {len(f['random_init'])} random-init twin(s)" + (", and the captions" if captions else ""))
        release(lm)
        del lm
        gc.collect()
    return features, skipped
