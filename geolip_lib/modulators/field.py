"""Geometric field modulator: k-simplex channel experts gating the residual stream (seed 001 §12).

Each expert maps the active residual dimensions of a position to a deformation of a
frozen regular k-simplex, measures it with the Cayley–Menger determinant (squared edge
lengths + squared volume), and projects those geometric features to a sigmoid gate over
the active dimensions. Gates are blended by a clamped alpha and multiplied::

    gate = prod_k ((1 - a_{l,k}) + a_{l,k} * g_k(x)),     x_active' = x_active * gate

Null-space dimensions (a tail fraction, or seeded random dimensions) are never touched.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Dict, NamedTuple, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..metrics import simplex_volume_cv
from ..validation import as_tensor, check_positive_int, fail


# --------------------------------------------------------------------------- config
@dataclass
class FieldModulatorConfig:
    """Configuration of :class:`GeometricFieldModulator` (validated on creation)."""

    d_model: int = 512
    n_layers: int = 6
    expert_ks: Tuple[int, ...] = (1, 2, 4)  # edge, triangle, pentachoron
    expert_edim: int = 8  # simplex embedding dimension (>= max k)
    initial_alpha: float = 0.01
    alpha_max: float = 0.35  # hard ceiling: the seed's choice (its 0.29154 "binding/separation" constant plus a
    # margin, seed 001 §12), kept as the default; not derived from a measurement (notebook 10 measures the boundary)
    alpha_min: float = 0.001  # floor; 0 allows an exact identity
    null_space_fraction: float = 0.25  # fraction of dims never touched
    null_space_position: str = "tail"  # "tail" | "random"
    null_space_seed: int = 42  # seed of the "random" null-space dims
    gradient_scale: float = 0.1  # LR scale of the expert (geometric) parameters
    alpha_lr_scale: float = 0.5  # LR scale of the alpha logits
    cv_target: float = 0.21  # pentachoron CV band centre
    cv_tolerance: float = 0.05  # band half-width
    deform_scale: float = 0.05  # simplex deformation magnitude
    track_validity: bool = True
    vocab_size: int | None = None  # unused (kept for the seed's signature)
    seed: int = 0  # seed of the parameter initialisation

    def __post_init__(self):
        check_positive_int(self.d_model, "d_model", minimum=1)
        check_positive_int(self.n_layers, "n_layers")
        self.expert_ks = tuple(int(check_positive_int(k, "expert_ks")) for k in self.expert_ks)
        if not self.expert_ks:
            fail("expert_ks", "expected at least one k")
        if len(set(self.expert_ks)) != len(self.expert_ks):
            fail("expert_ks", f"duplicate k in {self.expert_ks}")
        check_positive_int(self.expert_edim, "expert_edim")
        if self.expert_edim < max(self.expert_ks):
            fail("expert_edim", f"must be >= the largest k ({max(self.expert_ks)}), got {self.expert_edim}")
        if not 0 <= self.alpha_min <= self.alpha_max <= 1:
            fail("alpha_min", f"need 0 <= alpha_min <= alpha_max <= 1, got {self.alpha_min}, {self.alpha_max}")
        if not 0 < self.initial_alpha < 1:
            fail("initial_alpha", f"expected a value in (0, 1), got {self.initial_alpha}")
        if not 0 <= self.null_space_fraction < 1:
            fail("null_space_fraction", f"expected a value in [0, 1), got {self.null_space_fraction}")
        if self.null_space_position not in ("tail", "random"):
            fail("null_space_position", f"expected 'tail' or 'random', got {self.null_space_position!r}")


# --------------------------------------------------------------------------- geometry
def regular_simplex(k: int, edim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Regular k-simplex with unit edges, centred at the origin, embedded in ``edim`` dims.

    Built from the Helmert basis of the sum-zero subspace of R^{k+1}: the standard basis
    vectors ``e_0..e_k`` (pairwise distance sqrt 2) expressed in that orthonormal basis.
    (The seed's "diagonal formula" produced unequal edges.)

    Parameters
    ----------
    k : int >= 1
    edim : int >= k

    Returns
    -------
    (k + 1, edim) tensor
    """
    k = check_positive_int(k, "k")
    edim = check_positive_int(edim, "edim")
    if edim < k:
        fail("edim", f"must be >= k ({k}), got {edim}")
    j = torch.arange(1, k + 1, dtype=torch.float64)  # Helmert rows 1..k
    cols = torch.arange(k + 1, dtype=torch.float64)
    H = torch.where(cols[None, :] < j[:, None], 1.0, 0.0) - torch.where(cols[None, :] == j[:, None], j[:, None], 0.0)
    H = H / torch.sqrt(j * (j + 1))[:, None]  # (k, k+1), orthonormal rows orthogonal to ones
    verts = H.T / math.sqrt(2.0)  # (k+1, k), unit edges
    return F.pad(verts, (0, edim - k)).to(dtype)


def regular_simplex_volume(k: int, edge: float = 1.0) -> float:
    """Closed-form volume of a regular k-simplex: ``edge^k sqrt(k+1) / (k! 2^{k/2})``."""
    return edge ** k * math.sqrt(k + 1) / (math.factorial(k) * 2 ** (k / 2))


class CMValidator(nn.Module):
    """Batched, differentiable Cayley–Menger squared volume of k-simplices (any k).

    Input ``(..., k+1, D)`` vertices -> ``(d2_pairs (..., k(k+1)/2), vol2 (...))``.
    ``vol2 = (-1)^{k+1} / (2^k (k!)^2) * det(CM)`` with CM the bordered squared-distance matrix.
    """

    def __init__(self, k: int):
        super().__init__()
        self.k = check_positive_int(k, "k")
        pairs = list(combinations(range(k + 1), 2))
        self.register_buffer("_pi", torch.tensor([p[0] for p in pairs], dtype=torch.long), persistent=False)
        self.register_buffer("_pj", torch.tensor([p[1] for p in pairs], dtype=torch.long), persistent=False)
        self.prefactor = (-1.0) ** (k + 1) / (2.0 ** k * math.factorial(k) ** 2)

    @property
    def n_pairs(self) -> int:
        return self._pi.numel()

    @property
    def out_dim(self) -> int:
        return self.n_pairs + 1

    def forward(self, verts: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if verts.ndim < 2 or verts.shape[-2] != self.k + 1:
            fail("verts", f"expected shape (..., {self.k + 1}, D), got {tuple(verts.shape)}")
        # squared distances from differences (exact for large coordinates, unlike the Gram form)
        diff = verts.unsqueeze(-2) - verts.unsqueeze(-3)
        d2 = (diff * diff).sum(-1)
        d2_pairs = d2[..., self._pi, self._pj]
        n = self.k + 1
        corner = d2.new_zeros(n + 1, n + 1)
        corner[0, 0] = 1.0
        cm = F.pad(d2, (1, 0, 1, 0), value=1.0) - corner  # bordered matrix, CM[0, 0] = 0
        vol2 = self.prefactor * torch.linalg.det(cm)
        return d2_pairs, vol2


class KSimplexChannelExpert(nn.Module):
    """One geometric expert: input -> deformed regular k-simplex -> CM features -> validity.

    Parameters
    ----------
    k : int
    in_dim : int
    edim : int
    deform_scale : float
    """

    def __init__(self, k: int, in_dim: int, edim: int, deform_scale: float = 0.05):
        super().__init__()
        self.k, self.edim, self.deform_scale = k, edim, float(deform_scale)
        self.cm = CMValidator(k)
        self.register_buffer("template", regular_simplex(k, edim))
        self.to_deform = nn.Linear(in_dim, (k + 1) * edim)
        self.norm = nn.LayerNorm(self.cm.out_dim)
        self.validity_proj = nn.Linear(self.cm.out_dim, 1)

    @property
    def out_dim(self) -> int:
        return self.cm.out_dim

    def forward(self, x: torch.Tensor):
        """``x`` (..., in_dim) -> geo (..., out_dim), vol2 (...), validity (..., 1)."""
        verts = self.template + self.deform_scale * self.to_deform(x).unflatten(-1, (self.k + 1, self.edim))
        d2, vol2 = self.cm(verts)
        geo = self.norm(torch.cat([d2, vol2.unsqueeze(-1)], dim=-1))
        return geo, vol2, torch.sigmoid(self.validity_proj(geo))


class FieldModulatorOutput(NamedTuple):
    residual: torch.Tensor  # (B, S, D) modulated residual
    validity_map: torch.Tensor  # (B, S) mean combined gate over active dims
    expert_volumes: Dict[int, torch.Tensor]  # k -> (B, S) vol2 (detached)
    expert_validity: Dict[int, torch.Tensor]  # k -> (B, S) sigmoid validity head (detached)


class GeometricFieldModulator(nn.Module):
    """Multi-expert multiplicative gating of the residual stream's active dimensions.

    Parameters
    ----------
    config : FieldModulatorConfig
    """

    def __init__(self, config: FieldModulatorConfig):
        super().__init__()
        self.config = config
        d = config.d_model
        self.n_null = int(d * config.null_space_fraction)
        self.n_active = d - self.n_null
        if self.n_active < 1:
            fail("null_space_fraction", "leaves no active dimension")
        if config.null_space_position == "tail":
            active = torch.arange(self.n_active)
        else:
            perm = torch.randperm(d, generator=torch.Generator().manual_seed(config.null_space_seed))
            active = perm[self.n_null:].sort().values
        null = torch.ones(d, dtype=torch.bool)
        null[active] = False
        self.register_buffer("active_idx", active, persistent=False)
        self.register_buffer("null_mask", null, persistent=False)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            self.experts = nn.ModuleDict({f"k{k}": KSimplexChannelExpert(k, self.n_active, config.expert_edim,
                                                                          config.deform_scale)
                                          for k in config.expert_ks})
            self.gate_projs = nn.ModuleDict({f"k{k}": nn.Linear(self.experts[f"k{k}"].out_dim, self.n_active)
                                             for k in config.expert_ks})
        n_exp = len(config.expert_ks)
        self.alpha_logits = nn.Parameter(torch.full((config.n_layers, n_exp), math.log(
            config.initial_alpha / (1 - config.initial_alpha))))
        self.register_buffer("validity_ema", torch.zeros(config.n_layers, n_exp))
        self.register_buffer("validity_updates", torch.zeros(config.n_layers, n_exp))
        self.register_buffer("n_calls", torch.tensor(0, dtype=torch.long))

    # ------------------------------------------------------------------ alpha
    @property
    def alphas(self) -> torch.Tensor:
        """(n_layers, n_experts) ``clamp(sigmoid(logits), alpha_min, alpha_max)``."""
        return torch.clamp(torch.sigmoid(self.alpha_logits), self.config.alpha_min, self.config.alpha_max)

    def set_alpha(self, alpha) -> None:
        """Set every (layer, expert) alpha logit to ``logit(alpha)`` (clamping still applies)."""
        a = float(alpha)
        if not 0 <= a <= 1:
            fail("alpha", f"expected a value in [0, 1], got {alpha!r}")
        with torch.no_grad():
            self.alpha_logits.fill_(math.log(a / (1 - a)) if 0 < a < 1 else (-math.inf if a == 0 else math.inf))

    # ------------------------------------------------------------------ forward
    def forward(self, residual: torch.Tensor, layer_idx: int) -> FieldModulatorOutput:
        """Gate the active dims of ``residual`` (B, S, D) at layer ``layer_idx``."""
        if residual.shape[-1] != self.config.d_model:
            fail("residual", f"last axis must be d_model={self.config.d_model}, got {residual.shape[-1]}")
        if not 0 <= layer_idx < self.config.n_layers:
            fail("layer_idx", f"expected 0 <= layer_idx < {self.config.n_layers}, got {layer_idx}")
        alphas = self.alphas[layer_idx].to(residual.dtype)
        active = residual.index_select(-1, self.active_idx)
        gate = torch.ones_like(active)
        vols, vals = {}, {}
        for i, k in enumerate(self.config.expert_ks):
            geo, vol2, validity = self.experts[f"k{k}"](active)
            expert_gate = torch.sigmoid(self.gate_projs[f"k{k}"](geo))
            gate = gate * ((1 - alphas[i]) + alphas[i] * expert_gate)
            vols[k], vals[k] = vol2.detach(), validity.squeeze(-1).detach()
            if self.config.track_validity and self.training:
                with torch.no_grad():
                    frac = (vol2 > 0).to(self.validity_ema.dtype).mean()
                    self.validity_ema[layer_idx, i] = 0.99 * self.validity_ema[layer_idx, i] + 0.01 * frac
                    self.validity_updates[layer_idx, i] += 1
        if self.training:
            with torch.no_grad():
                self.n_calls += 1
        out = residual.index_copy(-1, self.active_idx, active * gate)
        return FieldModulatorOutput(out, gate.mean(-1).detach(), vols, vals)

    def hook_apply(self, hidden: torch.Tensor, token_ids, layer_idx: int) -> torch.Tensor:
        """Entry point used by the hooks (token ids are not needed)."""
        out = self(hidden, layer_idx)
        self.last_output = out
        return out.residual

    def param_groups(self) -> dict:
        """``{name: (params, lr_scale)}``: experts scaled by ``gradient_scale``, alpha by ``alpha_lr_scale``."""
        return {"geometric": (list(self.experts.parameters()), self.config.gradient_scale),
                "alpha": ([self.alpha_logits], self.config.alpha_lr_scale),
                "gates": (list(self.gate_projs.parameters()), 1.0)}

    # ------------------------------------------------------------------ health
    @torch.no_grad()
    def validity(self) -> torch.Tensor:
        """(n_layers, n_experts) bias-corrected EMA of the fraction of valid (vol2 > 0) simplices.

        (The seed's raw EMA started at 0 with decay 0.99 and so under-reported validity
        for the first few hundred steps.) NaN where never updated.
        """
        corr = 1 - 0.99 ** self.validity_updates
        return torch.where(self.validity_updates > 0, (self.validity_ema / corr.clamp(min=1e-12)).clamp(max=1.0),
                           torch.full_like(self.validity_ema, float("nan")))

    @torch.no_grad()
    def health_report(self) -> dict:
        """Health metrics read from the parameters (no inference): alphas, validity,
        template volumes (with their closed form), deformation norms, parameter count."""
        a = self.alphas.detach()
        rep = {"alpha_mean": float(a.mean()), "alpha_std": float(a.std()) if a.numel() > 1 else 0.0,
               "alpha_min": float(a.min()), "alpha_max": float(a.max()),
               "alpha_per_layer": a.mean(1).tolist()}
        if self.config.track_validity:
            v = self.validity()
            rep["validity_mean"] = float(v.nanmean()) if bool(torch.isfinite(v).any()) else float("nan")
            for i, k in enumerate(self.config.expert_ks):
                col = v[:, i]
                rep[f"validity_k{k}"] = float(col.nanmean()) if bool(torch.isfinite(col).any()) else float("nan")
        for k in self.config.expert_ks:
            e = self.experts[f"k{k}"]
            _, vol2 = e.cm(e.template.to(torch.float64))
            rep[f"template_vol2_k{k}"] = float(vol2)
            rep[f"template_vol2_k{k}_closed_form"] = regular_simplex_volume(k) ** 2
            rep[f"deform_norm_k{k}"] = float(e.to_deform.weight.norm())
        rep["total_params"] = sum(p.numel() for p in self.parameters())
        rep["n_active"], rep["n_null"] = self.n_active, self.n_null
        return rep

    @torch.no_grad()
    def cv_check(self, embeddings, n_simplices: int = 500, seed: int = 42) -> dict:
        """Pentachoron CV of ``embeddings`` restricted to the active dims.

        Draws ``n_simplices`` sets of 5 DISTINCT rows from the whole matrix and measures them
        in all active dimensions (the seed used only the first ``expert_edim`` coordinates
        and allowed repeated rows). Returns cv, mean_vol, valid_fraction, n_valid, in_band.
        """
        X = as_tensor(embeddings, "embeddings", ndim=2, dtype=torch.float64)
        if X.shape[1] != self.config.d_model:
            fail("embeddings", f"expected (N, d_model={self.config.d_model}), got {tuple(X.shape)}")
        return pentachoron_cv_check(X[:, self.active_idx.to(X.device)], n_simplices=n_simplices, seed=seed, cv_target=self.config.cv_target,
                                    cv_tolerance=self.config.cv_tolerance)


def pentachoron_cv_check(embeddings, n_simplices: int = 500, seed: int = 42, cv_target: float = 0.21,
                         cv_tolerance: float = 0.05, k: int = 4) -> dict:
    """CV (std/mean) of k-simplex volumes over random distinct row sets of the WHOLE matrix.

    Thin wrapper of :func:`geolip_lib.metrics.simplex_volume_cv` that adds the band test.

    Parameters
    ----------
    embeddings : (N, D) array, N >= k + 1
    n_simplices : int
    seed : int
    cv_target, cv_tolerance : float
        ``in_band = |cv - cv_target| < cv_tolerance``.
    k : int
        Simplex dimension (4: pentachoron).

    Returns
    -------
    dict with cv, mean_vol, valid_fraction, n_valid, in_band (False when cv is NaN).
    """
    X = as_tensor(embeddings, "embeddings", ndim=2, dtype=torch.float64)
    if X.shape[0] < k + 1:
        fail("embeddings", f"need at least {k + 1} rows, got {X.shape[0]}")
    r = simplex_volume_cv(X.detach().cpu(), n_simplices, seed, n_vertices=k + 1, min_valid=2)
    cv = float(r.cv)
    return {"cv": cv, "mean_vol": float(r.mean) if r.n_valid else 0.0,
            "valid_fraction": r.n_valid / r.n_sampled, "n_valid": r.n_valid,
            "in_band": bool(cv == cv and abs(cv - cv_target) < cv_tolerance)}
