"""What the report's words mean: the seed documents, the terms of its tables, one line each.

The HTML shows each explanation in place (a ``title`` tooltip on a column header or a verdict
word); the PDF, which has no tooltips, prints them as a glossary. :func:`explain` finds the
terms a column label uses (``"PR / D"`` -> participation ratio, divided by the dimension).
"""
from __future__ import annotations

import re

#: the seed documents the project was created from (``shared/seeds/INDEX.md``), one line each
SEED_DOCUMENTS = [
    ("000", "Constellation Core V11", "relay attention (fixed anchors plus a top-k cross-token path) against "
     "vanilla attention: pentachoron CV, depth, a causal-intervention test, throughput"),
    ("001", "Geometric Terrain Analysis", "13 sections over 9 models (T5, BERT, CLIP, DINOv2, Qwen): embedding "
     "and weight geometry, WordNet alignment, geometric modulators of T5; it ends with a table of "
     "\"universal constants\", the claims tested here"),
    ("002", "MHA CV Relational Test", "pentachoron CV of a tiny attention classifier's weights and heads over 12 "
     "(dim, heads) configurations, before and after training"),
    ("003", "Triple Product Attention", "attention scored by the Gram determinant of (Q, K, R) against standard "
     "attention on copy and induction tasks"),
    ("004", "QK operator alignment", "per-head QK operators of Qwen3-4B compared across layers (cosine, "
     "principal angles, curvature signs)"),
]

#: term -> one line; the keys are matched as whole words in column labels (case-sensitive for
#: abbreviations)
TERMS = {
    "stand-in": "a trained model the seed did not measure (here instead of the seed's models): whether the property "
                "holds on it, not a verdict on the seed's claim",
    "seed's models": "the models the seed's own cells measured for this claim; only they decide its verdict",
    "tiny random model": "a few-layer model with random weights built from a config: checks that the pipeline "
                         "runs, never given a verdict",
    "seed value": "the number the seed's summary table prints, read at its printed precision",
    "paper's value": "what the paper's claim says (its number or its words), read at its printed precision",
    "reading": "one way to read a claim: as the table says it, or as the seed's cells actually measured it "
               "(models, representation, pooling)",
    "null": "what the same measurement gives without training or structure (random init, a Gaussian, the unit "
            "sphere, shuffled pairs); a claim holds only if the value is separated from it",
    "null explains": "the null gives the claimed value too, so the value is not evidence of training",
    "random init": "the same architecture at random initialisation, 5 seeds (95 % prediction interval)",
    "random_init": "the same architecture at random initialisation, 5 seeds (95 % prediction interval)",
    "gaussian": "an isotropic Gaussian of the same shape and scale, 5 seeds",
    "sphere": "points uniform on the unit sphere of the same dimension",
    "shuffled": "the same values with their pairing destroyed",
    "forced by shape": "a value the weight shapes fix (grouped-query attention: 2·n_kv·head_dim ≤ d); kept out of "
                       "pooled means and verdicts",
    "exact": "computed on all of it (every row, weight or layer): no sampling, no interval",
    "sampled": "estimated from a sample (simplices, rows, pairs, prompts): value [95 % interval]",
    "over seeds": "the spread over repeated seeds: value [95 % interval]",
    "PR": "participation ratio (Σλ)²/Σλ² of the covariance eigenvalues: the number of dimensions the variance "
          "effectively uses",
    "D": "the embedding dimension",
    "CV": "coefficient of variation, std / mean",
    "pentachoron": "a 4-simplex (5 points); its volume by the Cayley–Menger determinant",
    "QK": "the attention score form W_Qᵀ W_K of a head or layer",
    "pos. eig. frac": "the fraction of positive eigenvalues of the symmetric part of W_Q W_Kᵀ (0.5: balanced)",
    "eig": "eigenvalue",
    "L0": "layer 0 (the first layer)",
    "SVD": "singular-value decomposition of a weight matrix",
    "stable rank": "‖W‖²_F / ‖W‖²₂: a smooth count of the large singular values",
    "Procrustes": "the orthogonal map (with a scale) that best aligns one set of points with another",
    "Spearman": "rank correlation",
    "Pearson": "linear correlation",
    "✱": "the value's 95 % interval excludes this null",
    "†": "a bias-corrected interval that the sample value lies outside (the estimator is biased; see the note)",
    "trajectory": "the notebook's headline numbers at each saved checkpoint of one training run",
}


def explain(label: str) -> str:
    """The explanations of the glossary terms a label uses, joined (``""``: none known)."""
    found = []
    for term, text in TERMS.items():
        if re.search(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", label) and text not in found:
            found.append(f"{term}: {text}")
    return "; ".join(found)


def seed_lines() -> list[str]:
    """``"seed 001 (Geometric Terrain Analysis): ..."`` for each seed document."""
    return [f"seed {n} ({name}): {what}" for n, name, what in SEED_DOCUMENTS]


__all__ = ["SEED_DOCUMENTS", "TERMS", "explain", "seed_lines"]
