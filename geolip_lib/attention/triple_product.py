"""Triple-product attention (seed 003): attention scored by the Gram determinant of (Q, K, R).

For query position ``i`` and key position ``j`` (per head, after RoPE on Q, K and R) the
score is ``-det G(q_i, k_j, r_i) * scale``, where ``G`` is the 3x3 Gram matrix. The
determinant is the squared volume of the parallelepiped spanned by the three vectors,
so a key scores high when it lies in the plane of ``(q_i, r_i)``. It is computed in
closed form from six dot products (:func:`gram_det3`), batched over all ``(i, j)``
with two ``(T, T)`` matrix products, never as ``T^2`` 3x3 determinants.

Also here: :class:`RoPE` (rotary position embedding, norm-preserving),
:class:`StandardAttention` (causal softmax attention with RoPE, the baseline),
:class:`CopyModel` (embedding -> one attention layer -> unembedding, no positional
embedding: the seed's ``TestModel``), the copy (induction) task and the seed's
resilience table.

Seed notes:

* The seed's RoPE returns ``cat(rotated even, rotated odd)``: the same rotation with the
  output features permuted. Here the rotated pair stays in place (interleaved layout);
  every dot product and norm is identical.
* The seed's resilience interpretation says the dot-product score "increases linearly"
  with the noise magnitude, but its table keeps the leak fixed (``k = m*e + 0.1*q``), so
  the dot stays 0.1. :func:`resilience_table` reports both the seed's fixed leak and a
  leak that scales with the magnitude (``k = m*(e + 0.1*q)``), where the dot does grow
  linearly and the Gram score falls quadratically.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import as_tensor, check_positive_int, fail

__all__ = [
    "RoPE",
    "apply_rope",
    "gram_det3",
    "gram_det3_vectors",
    "TripleProductAttention",
    "StandardAttention",
    "CopyModel",
    "ATTENTION_TYPES",
    "copy_batch",
    "copied_half_mask",
    "resilience_table",
]


def apply_rope(x: torch.Tensor, base: float = 10000.0, offset: int = 0) -> torch.Tensor:
    """Rotary position embedding on the last axis (pairs ``(2i, 2i+1)`` rotated).

    Parameters
    ----------
    x : torch.Tensor
        ``(..., T, D)`` with even ``D``; axis ``-2`` is the position.
    base : float
        Frequency base (10000 as in the seed).
    offset : int
        Position of the first row.

    Returns
    -------
    torch.Tensor
        Same shape and dtype. Each pair is rotated by ``pos * base^(-2i/D)``, so norms are
        preserved and ``<rope(q)_m, rope(k)_n>`` depends on positions only through ``m-n``.
    """
    T, D = x.shape[-2], x.shape[-1]
    if D % 2:
        fail("x", f"RoPE needs an even feature dimension, got {D}")
    inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64, device=x.device) / D)
    pos = torch.arange(offset, offset + T, dtype=torch.float64, device=x.device)
    ang = torch.outer(pos, inv_freq)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class RoPE(nn.Module):
    """Module wrapper of :func:`apply_rope` for ``(B, H, T, D)`` tensors."""

    def __init__(self, dim: int, base: float = 10000.0):
        super().__init__()
        if dim % 2:
            fail("dim", f"RoPE needs an even head dimension, got {dim}")
        self.dim, self.base = dim, base

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return apply_rope(x, self.base)


def gram_det3(qq, kk, rr, qk, kr, qr):
    """Closed-form determinant of the symmetric 3x3 Gram matrix of ``(q, k, r)``.

    ``det = qq*kk*rr + 2*qk*kr*qr - qq*kr^2 - kk*qr^2 - rr*qk^2``; all arguments broadcast.
    """
    return qq * kk * rr + 2.0 * qk * kr * qr - qq * kr ** 2 - kk * qr ** 2 - rr * qk ** 2


def gram_det3_vectors(q: torch.Tensor, k: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Gram determinant (squared parallelepiped volume) of vector triples ``(..., D) -> (...)``."""
    q, k, r = (as_tensor(t, n, min_ndim=1) for t, n in ((q, "q"), (k, "k"), (r, "r")))
    dot = lambda a, b: (a * b).sum(-1)  # noqa: E731
    return gram_det3(dot(q, q), dot(k, k), dot(r, r), dot(q, k), dot(k, r), dot(q, r))


def _causal_mask(T: int, device) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)


def _check_heads(d_model: int, n_head: int) -> int:
    check_positive_int(d_model, "d_model")
    check_positive_int(n_head, "n_head")
    if d_model % n_head:
        fail("n_head", f"must divide d_model={d_model}, got {n_head}")
    if (d_model // n_head) % 2:
        fail("n_head", f"head dimension d_model/n_head={d_model // n_head} must be even for RoPE")
    return d_model // n_head


class TripleProductAttention(nn.Module):
    """Causal attention scored by ``-det Gram(q_i, k_j, r_i) * d_head^-scale_power``.

    Parameters
    ----------
    d_model, n_head : int
        Width and heads (``d_head = d_model / n_head``, even).
    scale_power : float
        Score scale ``d_head ** -scale_power`` (seed: 1.5).

    Forward ``(B, T, C) -> (B, T, C)`` (no residual, as in the seed).
    """

    def __init__(self, d_model: int, n_head: int, scale_power: float = 1.5):
        super().__init__()
        self.d_head = _check_heads(d_model, n_head)
        self.n_head = n_head
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_r = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)
        self.scale = self.d_head ** -scale_power

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, self.n_head, self.d_head).transpose(1, 2)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, H, T, T)`` causal scores (``-inf`` above the diagonal)."""
        q = apply_rope(self._heads(self.W_q(x)))
        k = apply_rope(self._heads(self.W_k(x)))
        r = apply_rope(self._heads(self.W_r(x)))
        qq = (q * q).sum(-1, keepdim=True)
        rr = (r * r).sum(-1, keepdim=True)
        qr = (q * r).sum(-1, keepdim=True)
        kk = (k * k).sum(-1).unsqueeze(-2)
        kt = k.transpose(-2, -1)
        det = gram_det3(qq, kk, rr, q @ kt, r @ kt, qr)
        return (-det * self.scale).masked_fill(_causal_mask(x.shape[1], x.device), float("-inf"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        attn = self.scores(x).softmax(dim=-1)
        y = attn @ self._heads(self.W_v(x))
        return self.W_o(y.transpose(1, 2).reshape(B, T, C))


class StandardAttention(nn.Module):
    """Causal softmax attention with RoPE on Q and K (the seed's baseline).

    Parameters
    ----------
    d_model, n_head : int
        Width and heads (``d_head`` even).
    """

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.d_head = _check_heads(d_model, n_head)
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.scale = 1.0 / math.sqrt(self.d_head)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, _ = self.qkv(x).split(C, dim=-1)
        q = apply_rope(q.view(B, T, self.n_head, self.d_head).transpose(1, 2))
        k = apply_rope(k.view(B, T, self.n_head, self.d_head).transpose(1, 2))
        s = (q @ k.transpose(-2, -1)) * self.scale
        return s.masked_fill(_causal_mask(T, x.device), float("-inf"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        v = self.qkv(x)[..., 2 * C:].view(B, T, self.n_head, self.d_head).transpose(1, 2)
        y = self.scores(x).softmax(dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(B, T, C))


ATTENTION_TYPES = {"standard": StandardAttention, "triple": TripleProductAttention}


class CopyModel(nn.Module):
    """Embedding -> one causal attention layer -> unembedding (no positional embedding).

    Parameters
    ----------
    vocab, d_model, n_head : int
    attn_type : {"standard", "triple"}
    """

    def __init__(self, vocab: int, d_model: int, n_head: int, attn_type: str = "standard"):
        super().__init__()
        if attn_type not in ATTENTION_TYPES:
            fail("attn_type", f"expected one of {list(ATTENTION_TYPES)}, got {attn_type!r}")
        self.embed = nn.Embedding(vocab, d_model)
        self.attn = ATTENTION_TYPES[attn_type](d_model, n_head)
        self.unembed = nn.Linear(d_model, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.unembed(self.attn(self.embed(x)))


def copy_batch(batch_size: int, seq_len: int, vocab: int, generator: torch.Generator | None = None):
    """The copy (induction) task: the second half of each sequence repeats the first.

    Parameters
    ----------
    batch_size, seq_len, vocab : int
        ``seq_len`` must be even (the seed silently added one to odd lengths).
    generator : torch.Generator, optional

    Returns
    -------
    inputs, targets : torch.Tensor
        ``(B, seq_len-1)`` int64 each; ``targets`` is ``inputs`` shifted by one.
    """
    check_positive_int(batch_size, "batch_size")
    check_positive_int(vocab, "vocab", minimum=2)
    check_positive_int(seq_len, "seq_len", minimum=4)
    if seq_len % 2:
        fail("seq_len", f"must be even (the second half copies the first), got {seq_len}")
    half = seq_len // 2
    first = torch.randint(0, vocab, (batch_size, half), generator=generator)
    data = torch.cat([first, first], dim=1)
    return data[:, :-1], data[:, 1:]


def copied_half_mask(seq_len: int) -> torch.Tensor:
    """``(seq_len-1,)`` bool: target positions inside the copied half (predictable exactly)."""
    return torch.arange(1, seq_len) >= seq_len // 2


def resilience_table(magnitudes=(1.0, 5.0, 10.0, 50.0, 100.0), leak: float = 0.1, dim: int = 4) -> dict:
    """The seed's resilience analysis: dot product vs Gram score as a noise key grows.

    ``q = e1``, ``r = e2`` span the "concept plane"; the true match is the unit key
    ``(q + r)/sqrt 2``. A noise key points along ``e3`` with magnitude ``m`` plus a leak
    towards ``q``: the seed's fixed leak ``m*e3 + leak*q`` and the scaled leak
    ``m*(e3 + leak*q)``. Scores are ``q.k`` and ``-det Gram(q, k, r)``.

    Returns
    -------
    dict
        ``match`` (dot, gram) and ``rows``: one dict per magnitude with ``dot_fixed``,
        ``gram_fixed``, ``dot_scaled``, ``gram_scaled``.
    """
    check_positive_int(dim, "dim", minimum=3)
    eye = torch.eye(dim, dtype=torch.float64)
    q, r, e = eye[0], eye[1], eye[2]
    k_match = (q + r) / (q + r).norm()
    m = as_tensor(list(magnitudes), "magnitudes", ndim=1, dtype=torch.float64).unsqueeze(-1)
    k_fixed = m * e + leak * q
    k_scaled = m * (e + leak * q)
    gram = lambda k: -gram_det3_vectors(q.expand_as(k), k, r.expand_as(k))  # noqa: E731
    rows = [
        {"magnitude": float(mi), "dot_fixed": float(df), "gram_fixed": float(gf),
         "dot_scaled": float(ds), "gram_scaled": float(gs)}
        for mi, df, gf, ds, gs in zip(m.squeeze(-1), k_fixed @ q, gram(k_fixed), k_scaled @ q, gram(k_scaled))
    ]
    return {"match": {"dot": float(k_match @ q), "gram": float(gram(k_match[None])[0])}, "rows": rows}
