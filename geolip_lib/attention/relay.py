"""Constellation relays (seed 000, "Constellation Core V11") and the vanilla attention baseline.

Three token mixers that all map ``(B, S, D) -> (B, S, D)`` with a residual connection:

* :class:`PureRelay` - per token, per patch of ``patch_dim`` features: cosine distances to
  a constellation of learnable anchors, read at ``n_phases`` points of the SLERP path from
  the frozen "home" anchors to the current anchors, go through a per-patch MLP and are
  gated against the identity. It never looks at another token, so changing token 0
  leaves every other token's output *exactly* unchanged.
* :class:`HybridRelay` - the same fixed path plus a dynamic cross-token path: per patch,
  each token selects its top-k other tokens by normalized ``Q.K`` relevance, gathers their
  value vectors (``V`` projection) with softmax weights over the selected relevances, and
  reads the concatenated weighted values through a second per-patch MLP. Split gates
  (fixed, dynamic) and the remainder on the identity.
* :class:`VanillaAttention` - pre-norm multi-head softmax attention (no mask).

Everything is batched over patches: per-patch weights are stacked tensors of shape
``(P, ...)`` applied with ``einsum``; the phases of the SLERP path are one batched
computation. The dynamic path gathers the ``k`` selected value vectors by index from the
``(B*P, S, d)`` value tensor, so its memory is ``O(P*S*k*d + P*S^2)`` (the relevance
matrix) instead of the seed's ``(B, P, S, S, d)`` expanded view, whose gradient
(``scatter_add`` into a dense ``(B, P, S, S, d)`` buffer) costs ``O(P*S^2*d)`` memory.

Seed notes (behaviour kept unless said otherwise):

* The seed takes a softmax over *all* keys, gathers the top-k weights and renormalizes
  them (``+1e-8``). Mathematically that is the softmax over the k selected relevances
  (the other keys cancel), which is what is computed here; the gradient does not "flow
  through the selection" as the seed's comment says - it did not in the seed either.
* The seed's comment says "weighted sum of top-k values", but it concatenates the k
  weighted values (``k*d`` features into the dynamic MLP). Kept: concatenation.
* The seed fills the self-relevance with ``-1e9``; with ``S <= n_dynamic`` its ``topk``
  fails or picks the token itself. Here ``S > n_dynamic`` is required (clear error).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import check_positive_int, fail

__all__ = [
    "HybridRelay",
    "PureRelay",
    "VanillaAttention",
    "slerp_anchors",
    "anchor_distances",
    "topk_gather",
    "patchwise_mlp",
]


# ---------------------------------------------------------------------------------------
# building blocks (pure functions)
# ---------------------------------------------------------------------------------------
def slerp_anchors(home: torch.Tensor, anchors: torch.Tensor, phases: torch.Tensor) -> torch.Tensor:
    """Anchors at several points of the SLERP path from ``home`` to ``anchors``.

    Parameters
    ----------
    home, anchors : torch.Tensor
        ``(P, A, d)``; both are normalized to the unit sphere first.
    phases : torch.Tensor
        ``(T,)`` path parameters in ``[0, 1]`` (0 = home, 1 = current anchors).

    Returns
    -------
    torch.Tensor
        ``(T, P, A, d)`` unit vectors. Where an anchor has not drifted the path is the
        home anchor itself (the seed's ``sin(omega)`` clamp keeps this finite).
    """
    h = F.normalize(home, dim=-1)
    c = F.normalize(anchors, dim=-1)
    cos = (h * c).sum(-1).clamp(-1 + 1e-7, 1 - 1e-7)
    omega = torch.acos(cos).unsqueeze(-1)  # (P, A, 1)
    sin_omega = omega.sin().clamp(min=1e-7)
    t = phases.to(h).view(-1, 1, 1, 1)
    path = torch.sin((1 - t) * omega) / sin_omega * h + torch.sin(t * omega) / sin_omega * c
    return F.normalize(path, dim=-1)


def anchor_distances(patches_n: torch.Tensor, anchors_t: torch.Tensor) -> torch.Tensor:
    """Cosine distances of unit patches to phase anchors, phases concatenated.

    Parameters
    ----------
    patches_n : torch.Tensor
        ``(..., P, d)`` unit vectors.
    anchors_t : torch.Tensor
        ``(T, P, A, d)`` unit anchors (:func:`slerp_anchors`).

    Returns
    -------
    torch.Tensor
        ``(..., P, T*A)``: ``1 - cos`` ordered phase-major (index ``t*A + a``), as the
        seed's ``torch.cat`` over phases.
    """
    cos = torch.einsum("...pd,tpad->...pta", patches_n, anchors_t)
    return (1.0 - cos).flatten(-2)


def patchwise_mlp(h: torch.Tensor, w1, b1, w2, b2) -> torch.Tensor:
    """Per-patch two-layer GELU MLP: ``(..., P, i) -> (..., P, o)``.

    ``w1`` is ``(P, i, hidden)``, ``b1`` ``(P, hidden)``, ``w2`` ``(P, hidden, o)``,
    ``b2`` ``(P, o)``.
    """
    z = F.gelu(torch.einsum("...pi,pih->...ph", h, w1) + b1)
    return torch.einsum("...ph,pho->...po", z, w2) + b2


def topk_gather(relevance: torch.Tensor, values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Select the top-k keys per query and gather their weighted values by index.

    Parameters
    ----------
    relevance : torch.Tensor
        ``(N, S, S)`` query-by-key scores (self already masked out by the caller).
    values : torch.Tensor
        ``(N, S, d)`` value vectors of the keys.
    k : int
        Number of keys each query selects (``k <= S``).

    Returns
    -------
    weighted : torch.Tensor
        ``(N, S, k, d)`` - value of the j-th selected key times its weight, the weights
        being the softmax over the k selected relevances.
    idx : torch.Tensor
        ``(N, S, k)`` selected key indices (descending relevance).
    top : torch.Tensor
        ``(N, S, k)`` the selected relevances.

    Notes
    -----
    Memory ``O(N*S*k*d)``: the index is expanded over ``d`` as a view and ``gather``
    reads ``values`` directly; its gradient scatters into an ``(N, S, d)`` buffer.
    """
    N, S, d = values.shape
    top, idx = relevance.topk(k, dim=-1)  # (N, S, k)
    w = top.softmax(dim=-1)
    gathered = values.gather(1, idx.reshape(N, S * k, 1).expand(N, S * k, d)).view(N, S, k, d)
    return w.unsqueeze(-1) * gathered, idx, top


def _xavier_normal_stack(*shape: int) -> torch.Tensor:
    """``(P, a, b)`` tensor with each ``(a, b)`` slice xavier-normal (std sqrt(2/(a+b)))."""
    t = torch.empty(*shape)
    a, b = shape[-2], shape[-1]
    return t.normal_(0.0, math.sqrt(2.0 / (a + b)))


def _home_constellation(P: int, A: int, d: int) -> torch.Tensor:
    home = torch.empty(P * A, d)
    nn.init.xavier_normal_(home)
    return F.normalize(home.view(P, A, d), dim=-1)


class _FixedPath(nn.Module):
    """Anchors (home buffer + learnable copy), phase distances, per-patch MLP, LayerNorm."""

    def __init__(self, P: int, A: int, d: int, n_phases: int, hidden: int):
        super().__init__()
        home = _home_constellation(P, A, d)
        self.register_buffer("home", home)
        self.anchors = nn.Parameter(home.clone())
        self.register_buffer("phases", torch.linspace(0, 1, n_phases))
        self.w1 = nn.Parameter(_xavier_normal_stack(P, n_phases * A, hidden))
        self.b1 = nn.Parameter(torch.zeros(P, hidden))
        self.w2 = nn.Parameter(_xavier_normal_stack(P, hidden, d))
        self.b2 = nn.Parameter(torch.zeros(P, d))
        self.norm = nn.LayerNorm(d)

    def drift(self) -> torch.Tensor:
        """``(P, A)`` angle between each anchor and its home."""
        h, c = F.normalize(self.home, dim=-1), F.normalize(self.anchors, dim=-1)
        return torch.acos((h * c).sum(-1).clamp(-1 + 1e-7, 1 - 1e-7))

    def forward(self, patches_n: torch.Tensor) -> torch.Tensor:
        tri = anchor_distances(patches_n, slerp_anchors(self.home, self.anchors, self.phases))
        return self.norm(patchwise_mlp(tri, self.w1, self.b1, self.w2, self.b2))


def _check_dims(input_dim: int, patch_dim: int) -> int:
    check_positive_int(input_dim, "input_dim")
    check_positive_int(patch_dim, "patch_dim")
    if input_dim % patch_dim:
        fail("patch_dim", f"must divide input_dim={input_dim}, got {patch_dim}")
    return input_dim // patch_dim


def _check_input(x: torch.Tensor, D: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.ndim != 3 or x.shape[-1] != D:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        fail("x", f"expected a (B, S, {D}) tensor, got {shape}")
    return x


# ---------------------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------------------
class PureRelay(nn.Module):
    """Per-token constellation relay (no cross-token path).

    Parameters
    ----------
    input_dim : int
        ``D``; split into ``P = D // patch_dim`` patches.
    patch_dim : int
        ``d``, features per patch.
    n_anchors : int
        Anchors per patch.
    n_phases : int
        Points on the SLERP path home -> anchors.
    pw_hidden : int
        Hidden width of the per-patch MLP.
    gate_init : float
        Initial gate logit (sigmoid(-3) ~ 0.047).

    Forward: ``x (B, S, D) -> x + g*MLP(anchor distances) + (1-g)*LN(x)`` per patch.
    """

    def __init__(self, input_dim: int, patch_dim: int = 16, n_anchors: int = 16, n_phases: int = 3,
                 pw_hidden: int = 32, gate_init: float = -3.0):
        super().__init__()
        P = _check_dims(input_dim, patch_dim)
        check_positive_int(n_anchors, "n_anchors")
        check_positive_int(n_phases, "n_phases")
        check_positive_int(pw_hidden, "pw_hidden")
        self.input_dim, self.patch_dim, self.n_patches = input_dim, patch_dim, P
        self.fixed = _FixedPath(P, n_anchors, patch_dim, n_phases, pw_hidden)
        self.gates = nn.Parameter(torch.full((P,), float(gate_init)))
        self.norm = nn.LayerNorm(input_dim)

    def drift(self) -> torch.Tensor:
        return self.fixed.drift()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if isinstance(x, torch.Tensor) and x.ndim == 2:
            x = x.unsqueeze(1)
        B, S, D = _check_input(x, self.input_dim).shape
        patches = self.norm(x).view(B, S, self.n_patches, self.patch_dim)
        pw = self.fixed(F.normalize(patches, dim=-1))
        g = self.gates.sigmoid().view(self.n_patches, 1)
        return x + (g * pw + (1 - g) * patches).reshape(B, S, D)


class HybridRelay(nn.Module):
    """Fixed constellation path + dynamic top-k cross-token path with V projection.

    Parameters
    ----------
    input_dim : int
        ``D``; ``P = D // patch_dim`` patches.
    patch_dim : int
        ``d``.
    n_fixed : int
        Fixed anchors per patch.
    n_dynamic : int
        ``k``: other tokens each token selects per patch (needs ``S > k``).
    n_phases : int
        SLERP phases of the fixed path.
    pw_hidden : int
        Hidden width of both per-patch MLPs.
    fixed_gate_init, dyn_gate_init : float
        Initial gate logits (sigmoid: 0.047 and 0.269).

    Forward, per patch: ``x + fg*fixed + dg*dynamic + clamp(1-fg-dg, 0)*LN(x)``.
    """

    def __init__(self, input_dim: int, patch_dim: int = 16, n_fixed: int = 8, n_dynamic: int = 8,
                 n_phases: int = 3, pw_hidden: int = 32, fixed_gate_init: float = -3.0,
                 dyn_gate_init: float = -1.0):
        super().__init__()
        P = _check_dims(input_dim, patch_dim)
        for v, n in ((n_fixed, "n_fixed"), (n_dynamic, "n_dynamic"), (n_phases, "n_phases"),
                     (pw_hidden, "pw_hidden")):
            check_positive_int(v, n)
        d = patch_dim
        self.input_dim, self.patch_dim, self.n_patches = input_dim, d, P
        self.n_fixed, self.n_dynamic = n_fixed, n_dynamic
        self.fixed = _FixedPath(P, n_fixed, d, n_phases, pw_hidden)
        self.q_proj = nn.Parameter(_xavier_normal_stack(P, d, d))
        self.k_proj = nn.Parameter(_xavier_normal_stack(P, d, d))
        self.v_proj = nn.Parameter(_xavier_normal_stack(P, d, d))
        self.dyn_w1 = nn.Parameter(_xavier_normal_stack(P, n_dynamic * d, pw_hidden))
        self.dyn_b1 = nn.Parameter(torch.zeros(P, pw_hidden))
        self.dyn_w2 = nn.Parameter(_xavier_normal_stack(P, pw_hidden, d))
        self.dyn_b2 = nn.Parameter(torch.zeros(P, d))
        self.dyn_norm = nn.LayerNorm(d)
        self.fixed_gate = nn.Parameter(torch.full((P,), float(fixed_gate_init)))
        self.dyn_gate = nn.Parameter(torch.full((P,), float(dyn_gate_init)))
        self.norm = nn.LayerNorm(input_dim)

    def drift(self) -> torch.Tensor:
        return self.fixed.drift()

    def qkv(self, patches: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(B, S, P, d)`` LayerNormed patches -> unit Q, unit K, raw V, each ``(B, P, S, d)``."""
        pn = F.normalize(patches, dim=-1)
        Q = F.normalize(torch.einsum("bspd,pde->bpse", pn, self.q_proj), dim=-1)
        K = F.normalize(torch.einsum("bspd,pde->bpse", pn, self.k_proj), dim=-1)
        V = torch.einsum("bspd,pde->bpse", patches, self.v_proj)
        return Q, K, V

    def dynamic_inputs(self, patches: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """The dynamic MLP's input ``(B, S, P, k*d)`` and the selection (idx, relevances)."""
        B, S, P, d = patches.shape
        k = self.n_dynamic
        if S <= k:
            fail("x", f"sequence length {S} must exceed n_dynamic={k} (each token selects k other tokens)")
        Q, K, V = self.qkv(patches)
        relevance = Q @ K.transpose(-1, -2)  # (B, P, S, S)
        eye = torch.eye(S, dtype=torch.bool, device=patches.device)
        relevance = relevance.masked_fill(eye, float("-inf"))
        weighted, idx, top = topk_gather(relevance.reshape(B * P, S, S), V.reshape(B * P, S, d), k)
        dyn_in = weighted.view(B, P, S, k * d).transpose(1, 2)  # (B, S, P, k*d)
        return dyn_in, {"idx": idx.view(B, P, S, k), "top": top.view(B, P, S, k)}

    def forward(self, x: torch.Tensor, return_diagnostics: bool = False):
        B, S, D = _check_input(x, self.input_dim).shape
        P, d = self.n_patches, self.patch_dim
        patches = self.norm(x).view(B, S, P, d)
        fixed_out = self.fixed(F.normalize(patches, dim=-1))
        dyn_in, sel = self.dynamic_inputs(patches)
        dyn_out = self.dyn_norm(patchwise_mlp(dyn_in, self.dyn_w1, self.dyn_b1, self.dyn_w2, self.dyn_b2))
        fg = self.fixed_gate.sigmoid().view(P, 1)
        dg = self.dyn_gate.sigmoid().view(P, 1)
        iw = (1.0 - fg - dg).clamp(min=0.0)
        out = x + (fg * fixed_out + dg * dyn_out + iw * patches).reshape(B, S, D)
        if not return_diagnostics:
            return out
        diag = {
            "drift_mean": self.drift().mean().item(),
            "fixed_gate": fg.mean().item(),
            "dyn_gate": dg.mean().item(),
            "identity_weight": iw.mean().item(),
            "topk_cos_mean": sel["top"].mean().item(),
            "topk_cos_max": sel["top"].max().item(),
        }
        return out, diag


class VanillaAttention(nn.Module):
    """Pre-norm multi-head softmax self-attention with residual: ``x + W_o attn(LN(x))``.

    Parameters
    ----------
    dim : int
        Model width ``D`` (divisible by ``n_heads``).
    n_heads : int
        Number of heads.
    """

    def __init__(self, dim: int, n_heads: int = 4):
        super().__init__()
        check_positive_int(dim, "dim")
        check_positive_int(n_heads, "n_heads")
        if dim % n_heads:
            fail("n_heads", f"must divide dim={dim}, got {n_heads}")
        self.dim, self.n_heads, self.head_dim = dim, n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, S, D = _check_input(x, self.dim).shape
        qkv = self.qkv(self.norm(x)).view(B, S, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = ((q @ k.transpose(-2, -1)) * self.head_dim ** -0.5).softmax(dim=-1)
        return x + self.out_proj((attn @ v).transpose(1, 2).reshape(B, S, D))
