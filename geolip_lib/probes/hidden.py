"""Hidden-state probes: layer-by-layer norm and pairwise-cosine evolution (seed 001 §1)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from .. import validation as V

#: the seed's ten probe sentences (seed 001 section 1)
SENTENCES: list[str] = [
    "The cat sat on the mat.",
    "Quantum mechanics describes the behavior of particles at the atomic scale.",
    "She quickly ran to the store before it closed.",
    "The derivative of x squared is two x.",
    "Red and blue make purple when mixed together.",
    "The president signed the new trade agreement yesterday.",
    "Three plus four equals seven.",
    "Love is patient, love is kind.",
    "The function returns a sorted list of integers.",
    "Mount Everest is the tallest mountain in the world.",
]


def layer_geometry(layers: Sequence[Any], mask: Any) -> dict:
    """Per-layer token-norm and within-sequence pairwise-cosine statistics.

    For each layer and each sequence ``b``: the valid positions (``mask[b] == 1``) give
    the mean and std of token norms, and the mean and std of cosines over position pairs
    ``i < j``; these per-sequence numbers are then averaged over sequences (the seed's
    aggregation). Sequences with a single valid token have no pairs and are left out of
    the cosine average (the seed counted them as cosine 0: a bias, fixed here).

    Parameters
    ----------
    layers : sequence of (B, S, D) tensors
        Embedding output first, then one per block (``LoadedModel.hidden_states``).
    mask : (B, S) tensor
        1 for real tokens, 0 for padding.

    Returns
    -------
    dict
        Lists over layers: ``layer``, ``mean_norm``, ``std_norm``, ``mean_cos``,
        ``std_cos``; plus ``n_sequences`` and ``mean_seq_len``.
    """
    if len(layers) == 0:
        V.fail("layers", "expected at least one layer")
    m = V.as_tensor(mask, "mask", ndim=2).to(torch.float64) > 0
    out: dict = {"layer": [], "mean_norm": [], "std_norm": [], "mean_cos": [], "std_cos": []}
    lengths = m.sum(1)
    n_pairs = lengths * (lengths - 1) / 2
    pair_mask = (m[:, :, None] & m[:, None, :]).triu(1)
    has_pairs = n_pairs > 0
    for li, h in enumerate(layers):
        x = V.as_tensor(h, f"layers[{li}]", ndim=3, dtype=torch.float64)
        if x.shape[:2] != m.shape:
            V.fail(f"layers[{li}]", f"expected leading shape {tuple(m.shape)} like mask, got {tuple(x.shape)}")
        norms = x.norm(dim=-1)
        w = m.to(torch.float64)
        mu = (norms * w).sum(1) / lengths
        sd = (((norms - mu[:, None]) ** 2 * w).sum(1) / lengths).sqrt()
        xn = x / norms.clamp_min(1e-8)[..., None]
        cos = xn @ xn.transpose(1, 2)
        pm = pair_mask.to(torch.float64)
        denom = n_pairs.clamp_min(1)
        cmu = (cos * pm).sum((1, 2)) / denom
        csd = ((((cos - cmu[:, None, None]) ** 2) * pm).sum((1, 2)) / denom).sqrt()
        out["layer"].append(li)
        out["mean_norm"].append(float(mu.mean()))
        out["std_norm"].append(float(sd.mean()))
        out["mean_cos"].append(float(cmu[has_pairs].mean()) if has_pairs.any() else float("nan"))
        out["std_cos"].append(float(csd[has_pairs].mean()) if has_pairs.any() else float("nan"))
    out["n_sequences"] = int(m.shape[0])
    out["mean_seq_len"] = float(lengths.to(torch.float64).mean())
    return out


def synthetic_images(n: int, size: int, seed: int = 0) -> torch.Tensor:
    """Deterministic probe images for vision stacks: ``(n, 3, size, size)`` in [0, 1].

    Half smooth colour gradients / sinusoidal gratings (structured), half uniform noise,
    from ``numpy.random.default_rng(seed)`` — no dataset download needed.
    """
    V.check_positive_int(n, "n")
    V.check_positive_int(size, "size")
    rng = np.random.default_rng(seed)
    yy, xx = np.meshgrid(np.linspace(0, 1, size), np.linspace(0, 1, size), indexing="ij")
    imgs = []
    for k in range(n):
        if k % 2 == 0:
            f = rng.uniform(1, 6, size=3)
            ph = rng.uniform(0, 2 * np.pi, size=3)
            ang = rng.uniform(0, np.pi, size=3)
            chans = [0.5 + 0.5 * np.sin(2 * np.pi * f[c] * (np.cos(ang[c]) * xx + np.sin(ang[c]) * yy) + ph[c])
                     for c in range(3)]
            imgs.append(np.stack(chans))
        else:
            imgs.append(rng.uniform(0, 1, size=(3, size, size)))
    return torch.from_numpy(np.stack(imgs)).to(torch.float32)
