"""Geometric residual modulator: LERP of a per-token geometric target into the residual stream.

Seed 001 §7. For a block input ``h`` (batch, seq, d_model) and token ids ``t``::

    h' = (1 - a_l) * h + a_l * P(G[t])

with ``G`` (vocab, n_geo) the geometric embedding, ``P`` a bias-free linear map
n_geo -> d_model and ``a_l = sigmoid(logit_l)`` one alpha per layer stored as a logit.
``set_alpha(0)`` stores ``-inf`` so that ``a_l == 0`` exactly and the model is reproduced
bit for bit.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import as_tensor, check_positive_int, fail


def alpha_to_logit(alpha) -> torch.Tensor:
    """``logit(alpha)`` with ``0 -> -inf`` and ``1 -> +inf`` (exact endpoints).

    Parameters
    ----------
    alpha : float or array-like in [0, 1]

    Returns
    -------
    torch.Tensor (float32), same shape as ``alpha``.
    """
    a = torch.as_tensor(np.asarray(alpha, dtype=np.float64))
    if bool(((a < 0) | (a > 1) | ~torch.isfinite(a)).any()):
        fail("alpha", f"expected values in [0, 1], got {a.tolist()!r}")
    return torch.logit(a).to(torch.float32)  # logit(0) = -inf, logit(1) = inf


class GeometricResidualModulator(nn.Module):
    """LERP injection of a geometric token embedding into a transformer's residual stream.

    Parameters
    ----------
    d_model : int
        Width of the residual stream.
    vocab_size : int
        Number of token ids (rows of the geometric embedding).
    n_geometric_dims : int
        Width ``n_geo`` of the geometric embedding.
    n_layers : int
        Number of modulated layers (one alpha each when ``per_layer_alpha``).
    initial_alpha : float
        Starting alpha in [0, 1).
    learnable_alpha : bool
        Alpha logits are a ``Parameter`` (else a buffer).
    per_layer_alpha : bool
        One alpha per layer (else one shared alpha).
    proj_std : float
        Std of the normal initialisation of the projection (small: do not disrupt).
    seed : int, optional
        Seed of the random initialisation (embedding and projection).

    Notes
    -----
    Intervention point: the input of block ``l`` (see :func:`geolip_lib.modulators.attach`).
    """

    def __init__(self, d_model: int, vocab_size: int, n_geometric_dims: int = 64, n_layers: int = 6,
                 initial_alpha: float = 0.01, learnable_alpha: bool = True, per_layer_alpha: bool = True,
                 proj_std: float = 0.01, seed: int | None = 0):
        super().__init__()
        self.d_model = check_positive_int(d_model, "d_model")
        self.vocab_size = check_positive_int(vocab_size, "vocab_size")
        self.n_geometric_dims = check_positive_int(n_geometric_dims, "n_geometric_dims")
        self.n_layers = check_positive_int(n_layers, "n_layers")
        if not 0 <= initial_alpha < 1:
            fail("initial_alpha", f"expected a value in [0, 1), got {initial_alpha!r}")
        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        self.geometric_embed = nn.Embedding(vocab_size, n_geometric_dims)
        self.proj = nn.Linear(n_geometric_dims, d_model, bias=False)
        with torch.no_grad():
            self.geometric_embed.weight.copy_(torch.randn(vocab_size, n_geometric_dims, generator=gen))
            self.proj.weight.copy_(torch.randn(d_model, n_geometric_dims, generator=gen) * proj_std)
        logits = alpha_to_logit(initial_alpha).expand(n_layers if per_layer_alpha else ()).clone()
        if learnable_alpha:
            self.alpha = nn.Parameter(logits)
        else:
            self.register_buffer("alpha", logits)

    # ------------------------------------------------------------------ alpha
    @property
    def alphas(self) -> torch.Tensor:
        """(n_layers,) current alphas ``sigmoid(logit)`` (a shared alpha is broadcast)."""
        return torch.sigmoid(self.alpha).expand(self.n_layers)

    def set_alpha(self, alpha) -> None:
        """Set alpha (a scalar for every layer, or one value per layer) in [0, 1]."""
        logits = alpha_to_logit(alpha)
        with torch.no_grad():
            self.alpha.copy_(logits.expand_as(self.alpha) if logits.ndim == 0 else logits.reshape(self.alpha.shape))

    def alpha_at(self, layer_idx: int) -> torch.Tensor:
        """Scalar alpha used at ``layer_idx``."""
        if not 0 <= layer_idx < self.n_layers:
            fail("layer_idx", f"expected 0 <= layer_idx < {self.n_layers}, got {layer_idx}")
        return torch.sigmoid(self.alpha[layer_idx] if self.alpha.ndim else self.alpha)

    # ----------------------------------------------------------- initialisation
    def _write_rows(self, rows: torch.Tensor, token_ids, name: str) -> None:
        w = self.geometric_embed.weight
        rows = F.normalize(rows.to(device=w.device, dtype=w.dtype), dim=1, eps=1e-8)
        with torch.no_grad():
            if token_ids is None:
                if rows.shape[0] != self.vocab_size:
                    fail(name, f"expected {self.vocab_size} rows (vocab_size) or pass token_ids, got {rows.shape[0]}")
                self.geometric_embed.weight.copy_(rows)
            else:
                ids = torch.as_tensor(np.asarray(token_ids), dtype=torch.long).reshape(-1)
                if ids.numel() != rows.shape[0]:
                    fail("token_ids", f"expected {rows.shape[0]} ids (one per row), got {ids.numel()}")
                if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
                    fail("token_ids", f"ids must lie in [0, {self.vocab_size})")
                self.geometric_embed.weight[ids] = rows

    def init_from_cayley_menger(self, simplices, token_ids=None) -> None:
        """Initialise rows from simplex vertices: sum-pool the vertices, normalise to the unit sphere.

        Parameters
        ----------
        simplices : (n, n_vertices, n_geo) or (n, n_geo) array
            Per-token simplex vertices (or already pooled vectors).
        token_ids : (n,) ints, optional
            Rows to write; default: all ``vocab_size`` rows (then ``n == vocab_size``).
        """
        s = as_tensor(simplices, "simplices", ndim=(2, 3), dtype=torch.float64)
        if s.shape[-1] != self.n_geometric_dims:
            fail("simplices", f"last axis must be n_geometric_dims={self.n_geometric_dims}, got {s.shape[-1]}")
        self._write_rows(s.sum(dim=1) if s.ndim == 3 else s, token_ids, "simplices")

    def init_from_relational_target(self, target, token_ids=None, n_dims: int | None = None) -> float:
        """Initialise rows from a target similarity matrix by eigendecomposition.

        Rows ``U_k sqrt(max(lambda_k, 0))`` of the top ``n_geo`` eigenpairs, normalised.

        Parameters
        ----------
        target : (n, n) symmetric array
        token_ids : (n,) ints, optional
        n_dims : int, optional
            Eigenpairs kept (<= n_geometric_dims; the rest are zero).

        Returns
        -------
        float
            Reconstruction correlation between ``target`` and the rows' cosines (upper triangle).
        """
        emb, corr, _ = eigen_embedding(target, n_dims or self.n_geometric_dims)
        if emb.shape[1] < self.n_geometric_dims:
            emb = F.pad(emb, (0, self.n_geometric_dims - emb.shape[1]))
        self._write_rows(emb, token_ids, "target")
        return corr

    # ------------------------------------------------------------------ forward
    def geometric_target(self, token_ids: torch.Tensor) -> torch.Tensor:
        """(…, d_model) projected geometric target ``P(G[token_ids])``."""
        return self.proj(self.geometric_embed(token_ids))

    def forward(self, residual: torch.Tensor, token_ids: torch.Tensor, layer_idx: int = 0) -> torch.Tensor:
        """LERP the residual toward the geometric target.

        Parameters
        ----------
        residual : (batch, seq, d_model)
        token_ids : (batch, seq) long
        layer_idx : int

        Returns
        -------
        (batch, seq, d_model), same dtype as ``residual``.
        """
        if residual.shape[:-1] != token_ids.shape:
            fail("token_ids", f"shape {tuple(token_ids.shape)} does not match residual {tuple(residual.shape)}")
        if residual.shape[-1] != self.d_model:
            fail("residual", f"last axis must be d_model={self.d_model}, got {residual.shape[-1]}")
        a = self.alpha_at(layer_idx).to(residual.dtype)
        target = self.geometric_target(token_ids).to(residual.dtype)
        return (1 - a) * residual + a * target

    def hook_apply(self, hidden: torch.Tensor, token_ids: torch.Tensor | None, layer_idx: int) -> torch.Tensor:
        """Entry point used by the hooks (needs the token ids)."""
        if token_ids is None:
            fail("token_ids", "the residual modulator needs input_ids (the model was called with inputs_embeds)")
        return self(hidden, token_ids, layer_idx)

    def param_groups(self) -> dict:
        """``{name: (params, lr_scale)}`` for :class:`ModulatorTrainer`."""
        groups = {"embed_proj": ([self.geometric_embed.weight, self.proj.weight], 1.0)}
        if isinstance(self.alpha, nn.Parameter):
            groups["alpha"] = ([self.alpha], 1.0)
        return groups

    # ------------------------------------------------------------------ health
    @torch.no_grad()
    def geometric_residuals(self, n_sample: int = 5000, seed: int = 0) -> dict:
        """Health metrics of the geometric embedding (the seed's "PDE residuals").

        Cosine statistics on ``n_sample`` rows drawn from the WHOLE vocabulary (the seed drew
        a permutation of the first 5000 ids only), norm statistics, participation ratio of the
        covariance spectrum and the alphas.

        Returns
        -------
        dict of floats (``alpha`` is a list, one per layer).
        """
        W = self.geometric_embed.weight.detach().to(torch.float64)
        n = min(check_positive_int(n_sample, "n_sample", minimum=2), W.shape[0])
        idx = torch.randperm(W.shape[0], generator=torch.Generator().manual_seed(seed))[:n]
        Wn = F.normalize(W[idx], dim=1, eps=1e-12)
        iu = torch.triu_indices(n, n, offset=1, device=W.device)
        flat = (Wn @ Wn.T)[iu[0], iu[1]]
        norms = W.norm(dim=1)
        centered = W - W.mean(dim=0)
        ev = torch.linalg.eigvalsh(centered.T @ centered / W.shape[0]).clamp(min=0)
        pr = float(ev.sum() ** 2 / (ev ** 2).sum()) if float((ev ** 2).sum()) > 0 else float("nan")
        return {"cos_mean": float(flat.mean()), "cos_std": float(flat.std()),
                "norm_mean": float(norms.mean()), "norm_std": float(norms.std()),
                "participation_ratio": pr, "pr_over_dim": pr / self.n_geometric_dims,
                "alpha": self.alphas.detach().cpu().tolist()}


def eigen_embedding(similarity, n_dims: int) -> tuple[torch.Tensor, float, torch.Tensor]:
    """Embed items so that their cosines reproduce a similarity matrix (seed §8).

    Top-``n_dims`` eigenpairs of the symmetric matrix, rows ``U sqrt(max(lambda, 0))``
    normalised to unit length (float64).

    Parameters
    ----------
    similarity : (n, n) symmetric array
    n_dims : int
        Number of eigenpairs kept (``<= n``).

    Returns
    -------
    embeddings : (n, n_dims) float64 tensor, unit rows
    recon_corr : float
        Pearson correlation of the upper-triangle entries of ``similarity`` and of the
        embeddings' cosine matrix.
    eigenvalues : (n,) float64 tensor, descending
    """
    S = as_tensor(similarity, "similarity", ndim=2, dtype=torch.float64)
    n = S.shape[0]
    if S.shape[1] != n:
        fail("similarity", f"expected a square matrix, got shape {tuple(S.shape)}")
    if not torch.allclose(S, S.T, atol=1e-8):
        fail("similarity", "expected a symmetric matrix")
    k = check_positive_int(n_dims, "n_dims")
    if k > n:
        fail("n_dims", f"must be <= the number of items ({n}), got {k}")
    ev, U = torch.linalg.eigh(S)
    ev, U = ev.flip(0), U.flip(1)
    emb = U[:, :k] * ev[:k].clamp(min=0).sqrt()
    emb = F.normalize(emb, dim=1, eps=1e-12)
    corr = float("nan")
    if n >= 3:
        iu = torch.triu_indices(n, n, offset=1)
        a, b = S[iu[0], iu[1]], (emb @ emb.T)[iu[0], iu[1]]
        if float(a.std()) > 0 and float(b.std()) > 0:
            corr = float(torch.corrcoef(torch.stack([a, b]))[0, 1])
    return emb, corr, ev
