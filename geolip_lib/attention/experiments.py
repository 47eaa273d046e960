"""Measurement helpers for the constellation-relay notebook (seed 000's tests).

Small pure functions over stacks of ``(B, S, D) -> (B, S, D)`` token mixers: run a stack
and keep checkpoints, the causal-intervention test (change token 0, measure the others),
row-wise cosine to the input, and forward timing.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import as_tensor, check_positive_int, fail
from .training import time_call

__all__ = ["run_stack", "mean_row_cosine", "causal_intervention", "forward_ms", "n_params", "singular_value_pr"]


def n_params(module: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


@torch.no_grad()
def run_stack(layers: Sequence[nn.Module], x: torch.Tensor, checkpoints: Sequence[int] | None = None) -> dict[int, torch.Tensor]:
    """Apply ``layers`` in order; return ``{depth: output}`` at the requested depths.

    Parameters
    ----------
    layers : sequence of modules
    x : torch.Tensor
        ``(B, S, D)`` input.
    checkpoints : sequence of int, optional
        1-based depths to keep (default: every depth).
    """
    x = as_tensor(x, "x", ndim=3)
    keep = set(range(1, len(layers) + 1) if checkpoints is None else checkpoints)
    bad = [c for c in keep if not 1 <= c <= len(layers)]
    if bad:
        fail("checkpoints", f"depths must lie in 1..{len(layers)}, got {sorted(bad)}")
    out, z = {}, x
    for i, layer in enumerate(layers, start=1):
        z = layer(z)
        if i in keep:
            out[i] = z
    return out


def mean_row_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean cosine similarity between corresponding rows of ``a`` and ``b`` (``(..., D)``)."""
    a = as_tensor(a, "a", min_ndim=1)
    b = as_tensor(b, "b", min_ndim=1)
    if a.shape != b.shape:
        fail("b", f"shape {tuple(b.shape)} must equal a's shape {tuple(a.shape)}")
    return F.cosine_similarity(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1]), dim=-1).mean().item()


@torch.no_grad()
def causal_intervention(layers: Sequence[nn.Module], x_a: torch.Tensor, token: int = 0,
                        generator: torch.Generator | None = None, replacement: torch.Tensor | None = None) -> dict:
    """Seed 000 test 4: replace one token, measure how much every *other* token changes.

    Parameters
    ----------
    layers : sequence of modules
        Applied in order to both sequences (one layer or a stack).
    x_a : torch.Tensor
        ``(B, S, D)`` original sequence.
    token : int
        Position that is replaced.
    generator : torch.Generator, optional
        Draws the replacement token (standard normal) when ``replacement`` is None.
    replacement : torch.Tensor, optional
        ``(B, D)`` replacement vector.

    Returns
    -------
    dict
        ``other_delta_norm`` mean L2 change of the other tokens, ``other_delta_max`` the
        largest absolute element change among them (exactly 0 for per-token mixers),
        ``other_one_minus_cos`` mean ``1 - cos`` between old and new other tokens,
        ``token_delta_norm`` L2 change of the replaced token (sanity: large), and
        ``token_input_cos`` cosine between the old and new input token.
    """
    x_a = as_tensor(x_a, "x_a", ndim=3)
    B, S, D = x_a.shape
    if not 0 <= token < S:
        fail("token", f"expected a position in [0, {S}), got {token}")
    if replacement is None:
        replacement = torch.randn(B, D, generator=generator, dtype=x_a.dtype)
    x_b = x_a.clone()
    x_b[:, token] = replacement.to(x_a)
    za, zb = x_a, x_b
    for layer in layers:
        za, zb = layer(za), layer(zb)
    others = torch.ones(S, dtype=torch.bool)
    others[token] = False
    da, db = za[:, others], zb[:, others]
    return {
        "other_delta_norm": (da - db).norm(dim=-1).mean().item(),
        "other_delta_max": (da - db).abs().max().item(),
        "other_one_minus_cos": 1.0 - mean_row_cosine(da, db),
        "token_delta_norm": (za[:, token] - zb[:, token]).norm(dim=-1).mean().item(),
        "token_input_cos": mean_row_cosine(x_a[:, token], x_b[:, token]),
    }


def forward_ms(module: nn.Module, x: torch.Tensor, n_iter: int = 10, warmup: int = 2) -> float:
    """Median no-grad forward time of ``module(x)`` in milliseconds."""
    check_positive_int(n_iter, "n_iter")
    module.eval()

    def call():
        with torch.no_grad():
            module(x)

    return time_call(call, n_iter=n_iter, warmup=warmup, device=x.device)


def singular_value_pr(x: torch.Tensor) -> float:
    """Seed 000's ``eff_dim``: ``(sum s)^2 / sum s^2`` over the singular values of centred rows.

    A participation ratio of the *singular values* (not of the covariance eigenvalues
    ``s^2`` as :func:`geolip_lib.metrics.participation_ratio`), so it lies in ``[1, rank]``
    and is larger for the same spectrum. The seed used only the first 512 rows; every row
    is used here.

    Parameters
    ----------
    x : torch.Tensor
        ``(n, D)`` rows.
    """
    from ..metrics import participation_ratio_from_eigenvalues, singular_values

    x = as_tensor(x, "x", ndim=2, min_shape={0: 2}, dtype=torch.float64)
    return participation_ratio_from_eigenvalues(singular_values(x - x.mean(0, keepdim=True)).numpy())
