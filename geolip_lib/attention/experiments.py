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

from ..metrics import effective_dimension, participation_ratio_from_eigenvalues, pentachoron_cv, singular_values
from ..validation import as_tensor, check_positive_int, fail
from .relay import HybridRelay, PureRelay, VanillaAttention
from .training import time_call

__all__ = ["run_stack", "mean_row_cosine", "row_cosines", "unit_rows", "causal_intervention", "forward_ms", "n_params",
           "singular_value_pr", "MIXERS", "build_mixer", "stack_geometry", "geometry_samples"]

#: the three token mixers of seed 000, in display order
MIXERS = ("vanilla_attn", "pure_relay", "hybrid")


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


def row_cosines(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity between corresponding rows of ``a`` and ``b`` (``(..., D)``), flattened."""
    a = as_tensor(a, "a", min_ndim=1)
    b = as_tensor(b, "b", min_ndim=1)
    if a.shape != b.shape:
        fail("b", f"shape {tuple(b.shape)} must equal a's shape {tuple(a.shape)}")
    return F.cosine_similarity(a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1]), dim=-1)


def mean_row_cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean cosine similarity between corresponding rows of ``a`` and ``b`` (``(..., D)``)."""
    return row_cosines(a, b).mean().item()


def unit_rows(z: torch.Tensor) -> torch.Tensor:
    """``(B, S, D)`` (or ``(n, D)``) -> ``(B*S, D)`` float32 rows on the unit sphere, on the CPU.

    Seed 000 measures its pentachoron ``CV_n`` on these normalized rows.
    """
    z = as_tensor(z, "z", min_ndim=2).detach()
    return F.normalize(z.reshape(-1, z.shape[-1]).float(), dim=-1).cpu()


def build_mixer(name: str, *, dim: int, patch_dim: int = 16, n_fixed: int = 8, n_dynamic: int = 8,
                n_anchors: int = 16, n_phases: int = 3, pw_hidden: int = 32, attn_heads: int = 8,
                device="cpu") -> nn.Module:
    """One token mixer of seed 000 at random init, in eval mode.

    Parameters
    ----------
    name : {"vanilla_attn", "pure_relay", "hybrid"}
        :class:`VanillaAttention` (``attn_heads``), :class:`PureRelay` (``n_anchors``) or
        :class:`HybridRelay` (``n_fixed`` anchors, top-``n_dynamic`` tokens).
    dim, patch_dim, n_phases, pw_hidden : int
        Width, features per patch, SLERP phases, hidden width of the per-patch MLPs.
    device : str or torch.device
    """
    if name == "vanilla_attn":
        m = VanillaAttention(dim, attn_heads)
    elif name == "pure_relay":
        m = PureRelay(dim, patch_dim, n_anchors, n_phases, pw_hidden)
    elif name == "hybrid":
        m = HybridRelay(dim, patch_dim, n_fixed, n_dynamic, n_phases, pw_hidden)
    else:
        fail("name", f"expected one of {list(MIXERS)}, got {name!r}")
    return m.to(device).eval()


def stack_geometry(z: torch.Tensor, x: torch.Tensor, n_cv: int, seed: int = 0) -> dict:
    """Seed 000's geometry of a mixer output ``z`` against its input ``x`` (both ``(B, S, D)``).

    Returns
    -------
    dict
        ``cv_n`` pentachoron CV of the unit rows (``n_cv`` pentachora, ``seed``),
        ``cos_to_input`` mean cosine of each output token to its input token,
        ``eff_dim_sv_pr`` (:func:`singular_value_pr`) and ``eff_dim_entropy``
        (:func:`geolip_lib.metrics.effective_dimension`) of the raw rows.
    """
    rows = z.detach().reshape(-1, z.shape[-1]).cpu()
    return {"cv_n": pentachoron_cv(unit_rows(z), n_simplices=n_cv, seed=seed).cv,
            "cos_to_input": mean_row_cosine(unit_rows(z), unit_rows(x)),
            "eff_dim_sv_pr": singular_value_pr(rows), "eff_dim_entropy": effective_dimension(rows)}


def geometry_samples(z: torch.Tensor, x: torch.Tensor, n_cv: int, seed: int = 0) -> dict:
    """The sampled items behind :func:`stack_geometry`, for bootstrap intervals.

    Returns
    -------
    dict
        ``volumes``: the valid pentachoron volumes of the unit rows (the same draws as
        ``cv_n``: ``M.intervals.cv`` of them equals it); ``cosines``: per-token cosine to
        the input (their mean is ``cos_to_input``). Both float64 NumPy arrays.
    """
    return {"volumes": pentachoron_cv(unit_rows(z), n_simplices=n_cv, seed=seed).volumes,
            "cosines": row_cosines(unit_rows(z), unit_rows(x)).double().numpy()}


@torch.no_grad()
def causal_intervention(layers: Sequence[nn.Module], x_a: torch.Tensor, token: int = 0,
                        generator: torch.Generator | None = None, replacement: torch.Tensor | None = None,
                        return_deltas: bool = False):
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
    return_deltas : bool
        Also return the per-token L2 changes of the other tokens (``(B*(S-1),)`` float64
        NumPy array, their mean is ``other_delta_norm``): the items a bootstrap resamples.

    Returns
    -------
    dict (and, with ``return_deltas``, the per-token changes)
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
    per_token = (da - db).norm(dim=-1)
    out = {
        "other_delta_norm": per_token.mean().item(),
        "other_delta_max": (da - db).abs().max().item(),
        "other_one_minus_cos": 1.0 - mean_row_cosine(da, db),
        "token_delta_norm": (za[:, token] - zb[:, token]).norm(dim=-1).mean().item(),
        "token_input_cos": mean_row_cosine(x_a[:, token], x_b[:, token]),
    }
    if return_deltas:
        return out, per_token.reshape(-1).double().cpu().numpy()
    return out


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
    x = as_tensor(x, "x", ndim=2, min_shape={0: 2}, dtype=torch.float64)
    return participation_ratio_from_eigenvalues(singular_values(x - x.mean(0, keepdim=True)).numpy())
