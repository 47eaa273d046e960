"""One type for a factored QK bilinear form ``M = Aᵀ B`` (in the spirit of TransformerLens's
``FactoredMatrix``).

``A`` and ``B`` are query and key weights with rows = head dimensions and columns = the
model dimension (HF ``(out, in)`` layout), so the attention score of residual vectors
x, y is ``xᵀ M y``. ``A``, ``B`` have shape ``(..., r, d)``: one form per leading index
(a batch of heads, of layers, ...). Under grouped-query attention the key factor can be
kept per kv head, ``B`` of shape ``(..., n_kv_heads, r, d)``, with ``kv`` the key head each
query head reads (:meth:`FactoredQK.from_heads`); it is gathered only where a quantity
needs it.

Nothing here forms the ``d × d`` product unless asked (:meth:`FactoredQK.dense`, or the
``"dense"`` / ``"auto"`` choice where it is no larger than the factored problem):

- singular values (:meth:`~FactoredQK.svals`): with ``Aᵀ = Q_a R_a``, ``Bᵀ = Q_b R_b``
  (reduced QR), ``M = Q_a (R_a R_bᵀ) Q_bᵀ``: the SVD of the small ``R_a R_bᵀ``;
  directions (:meth:`~FactoredQK.svd`) are ``Q_a U`` and ``Q_b V``;
- eigenvalues of the symmetric part ``(M + Mᵀ)/2 = Cᵀ J C`` with ``C = [A; B]`` and
  ``J = [[0, I/2], [I/2, 0]]``: either from the QR of ``Cᵀ`` (:meth:`~FactoredQK.sym_eigvals`,
  descending) or from the balanced Cholesky of ``C Cᵀ`` with eigen-directions
  (:meth:`~FactoredQK.sym_eig`, by decreasing magnitude; the ``sym_eig`` of seed 004);
- inertia (:meth:`~FactoredQK.inertia`, :func:`inertia`): positive, negative and zero
  eigenvalues out of ``d``, with ``|λ| <= 10·m·eps·max|λ|`` counted as zero;
- Frobenius norm (:meth:`~FactoredQK.fro_sq`: ``tr((A Aᵀ)(B Bᵀ))``), symmetry deviation
  (:meth:`~FactoredQK.spectrum`).

Sylvester's law of inertia: ``J`` has r eigenvalues +1/2 and r −1/2, so whenever ``C`` has
full rank 2r the symmetric part has exactly r positive and r negative eigenvalues
(what a QK sign balance of 0.5 means: ``geolip_lib.weights.spectral.QK_BALANCE_STATEMENT``).

The two eigen-solvers are kept as they were written (the weight battery uses the QR
one, the QK operators the Cholesky one): each keeps its own arithmetic so the recorded
numbers do not move; they agree to float64 round-off (tested).
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from ..validation import as_tensor, check_positive_int, fail
from .threads import one_torch_thread

__all__ = ["FactoredQK", "inertia", "kv_head_index", "qk_balance_forced", "qk_rank_bound"]


def kv_head_index(n_heads: int, n_kv_heads: int) -> torch.Tensor:
    """Key/value head read by each query head under grouped-query attention.

    ``n_heads`` must be a multiple of ``n_kv_heads``; returns the LongTensor (n_heads,)
    ``h // (n_heads // n_kv_heads)``.
    """
    n_heads = check_positive_int(n_heads, "n_heads")
    n_kv_heads = check_positive_int(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads:
        fail("n_kv_heads", f"n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}")
    return torch.arange(n_heads) // (n_heads // n_kv_heads)


def inertia(eig: torch.Tensor, d: int, rtol: float | None = None) -> dict:
    """Counts of positive / negative / zero eigenvalues out of ``d``.

    Parameters
    ----------
    eig : (..., m) tensor
        The nonzero-candidate eigenvalues of a symmetric ``d × d`` form (the remaining
        ``d - m`` are exactly zero).
    d : int
        Full dimension of the form (d_model).
    rtol : float, optional
        ``|λ| <= rtol · max|λ|`` counts as zero; default ``10 · m · eps(dtype)``.

    Returns
    -------
    dict of (...) tensors: n_pos, n_neg, n_zero, pos_frac (n_pos / d, the seed's
    convention), balance (n_pos / (n_pos + n_neg)).
    """
    m = eig.shape[-1]
    if rtol is None:
        rtol = 10 * m * torch.finfo(eig.dtype).eps
    scale = eig.abs().amax(-1, keepdim=True)
    tol = rtol * scale
    n_pos = (eig > tol).sum(-1)
    n_neg = (eig < -tol).sum(-1)
    n_zero = d - n_pos - n_neg
    nz = (n_pos + n_neg).clamp(min=1)
    return {"n_pos": n_pos, "n_neg": n_neg, "n_zero": n_zero, "pos_frac": n_pos.to(eig.dtype) / d,
            "balance": n_pos.to(eig.dtype) / nz}


def qk_rank_bound(d: int, n_heads: int, head_dim: int, n_kv_heads: int | None = None, form: str = "layer",
                  rank: int | None = None) -> tuple[int, int]:
    """(r, room): the largest rank each factor of the QK form can have, and the side of the
    square form it lives in, by ``form`` (see :func:`qk_balance_forced`). ``rank``: the actual
    rank of the projections where they are factorised (a low-rank W_Q = U V), else None."""
    n_kv = n_heads if n_kv_heads is None else int(n_kv_heads)
    d, n_heads, head_dim = int(d), int(n_heads), int(head_dim)
    inner = n_heads * head_dim
    if form == "head":
        r, room = min(head_dim, d), d
    elif form == "layer":
        r, room = min(n_kv * head_dim, d), d  # W_Qᵀ W_K = Pᵀ K: K has n_kv·head_dim rows of length d
    elif form == "seed":
        r, room = min(n_kv * head_dim, d, inner), inner  # W_q W_kᵀ: both factors have d columns
    else:
        fail("form", f"expected 'head', 'layer' or 'seed', got {form!r}")
    if rank is not None:
        r = min(r, int(check_positive_int(rank, "rank")))
    return r, room


def qk_balance_forced(d: int, n_heads: int, head_dim: int, n_kv_heads: int | None = None,
                      form: str = "layer", rank: int | None = None) -> str | None:
    """Why the weight shapes alone force the QK form's sign count, or ``None`` when they do not.

    The symmetric part of a QK form is ``Cᵀ J C`` with ``J`` of inertia (r, r) and ``C`` of
    2r rows, r the rank bound of each factor; for weights of full rank (all but a measure-zero
    set, aligned or not) Sylvester's law of inertia gives exactly r positive and r negative
    nonzero eigenvalues whatever the weights hold, and ``room - 2r`` zero ones. So the form is
    forced whenever ``2·r ≤ room``. By ``form``:

    - ``"head"``: one head's ``W_Q^hᵀ W_K^h`` (d × d), r = min(head_dim, d): forced when
      2·head_dim ≤ d (every head of every model here: the per-head balance is exactly 0.5);
    - ``"layer"``: the layer's ``W_Qᵀ W_K`` (d × d) with keys shared per group (GQA),
      r = min(n_kv_heads·head_dim, d) (``W_Qᵀ W_K = Pᵀ K`` with P the per-group sums of the
      query heads): forced when 2·n_kv_heads·head_dim ≤ d — never for full multi-head attention
      with n_heads·head_dim ≥ d;
    - ``"seed"``: the seed's ``sym(W_q W_kᵀ)`` (inner × inner, inner = n_heads·head_dim), whose
      factors have d columns: r = min(n_kv_heads·head_dim, d), forced when 2·r ≤ inner — under
      GQA, and also whenever inner ≥ 2·d (T5-3B: d 1024, 32 heads × 128, inner 4096: 1024
      positive, 1024 negative, 2048 zero eigenvalues; T5-11B; d 512 with 8 × 128 heads).

    ``rank``: the actual rank of the projections where they are factorised (it lowers r).
    What is forced: the balance of the nonzero eigenvalues, n_pos / (n_pos + n_neg) = 0.5
    exactly; the fraction over the whole form, n_pos / room, is r / room plus the round-off
    zeros that happen to fall positive — a number set by the shapes and the arithmetic, not
    "0.5" and not learned.
    """
    r, room = qk_rank_bound(d, n_heads, head_dim, n_kv_heads, form, rank)
    if 2 * r > room:
        return None
    n_kv = n_heads if n_kv_heads is None else int(n_kv_heads)
    if form == "head":
        where = f"per head: 2·head_dim = {2 * r} ≤ d = {room}"
    elif form == "layer":
        where = f"2·n_kv_heads·head_dim = 2·{n_kv}·{head_dim} = {2 * n_kv * head_dim} ≤ d = {room}"
    else:
        bound = (f"rank ≤ min(n_kv_heads·head_dim = {n_kv * int(head_dim)}, d = {int(d)}"
                 + (f", factorised rank {int(rank)}" if rank is not None else "") + f") = {r}")
        where = f"seed form, {bound}: 2·{r} = {2 * r} ≤ inner = n_heads·head_dim = {room}"
    if rank is not None and form != "seed":
        where += f"; factorised rank {int(rank)}"
    tail = ("" if 2 * r == room else f" and {room - 2 * r} zero ones")
    frac = f"; its n_pos / {room} is {r}/{room} = {r / room:.4g} plus the round-off zeros that fall positive"
    return (f"forced by shape ({where}): each factor has rank at most {r}, so an inertia-(r, r) form gives exactly "
            f"{r} positive and {r} negative nonzero eigenvalues{tail} for any weights of full rank (Sylvester's law "
            f"of inertia): the balance of the nonzero eigenvalues is exactly 0.5{frac}")


def _check_method(method: str) -> None:
    if method not in ("auto", "factored", "dense"):
        raise ValueError(f"method: expected 'auto', 'factored' or 'dense', got {method!r}")


class FactoredQK:
    """The bilinear form ``M = Aᵀ B`` kept as its factors (see the module docstring).

    Parameters
    ----------
    A : (..., r, d) tensor
        Left (query) factor.
    B : (..., r, d) tensor, or (..., n_kv, r, d) with ``kv``
        Right (key) factor.
    kv : LongTensor (n_heads,), optional
        Key head of each query head (axis -3 of ``A`` and ``B``); ``None``: ``B`` has
        the shape of ``A``.
    finite : bool
        Reject NaN/Inf entries on construction (``False``: the caller checks).
    """

    def __init__(self, A: Any, B: Any, kv: Optional[torch.Tensor] = None, *, finite: bool = True):
        A = as_tensor(A, "A", min_ndim=2, finite=finite)
        B = as_tensor(B, "B", min_ndim=2, finite=finite)
        if kv is None:
            if A.shape != B.shape:
                raise ValueError(f"B: expected the shape of A {tuple(A.shape)}, got {tuple(B.shape)}")
        else:
            if A.ndim < 3 or B.ndim != A.ndim or B.shape[-2:] != A.shape[-2:] or B.shape[:-3] != A.shape[:-3] \
                    or kv.numel() != A.shape[-3] or int(kv.max()) >= B.shape[-3]:
                raise ValueError(f"B: shape {tuple(B.shape)} does not match A {tuple(A.shape)} "
                                 f"with {kv.numel()} query heads")
        if kv is not None and kv.device != A.device:  # the index lives with the factors it gathers
            kv = kv.to(A.device)
        self.A, self.B, self.kv = A, B, kv

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_heads(cls, W_Q: Any, W_K: Any, n_heads: int, n_kv_heads: int | None = None,
                   dtype: torch.dtype = torch.float64, *, finite: bool = True) -> "FactoredQK":
        """Per-head forms ``W_Q^hᵀ W_K^{kv(h)}`` of projections ``W_Q`` (..., n_heads·head_dim,
        d) and ``W_K`` (..., n_kv_heads·head_dim, d) (leading batch dimensions must match);
        ``A`` is (..., n_heads, head_dim, d), ``B`` (..., n_kv_heads, head_dim, d)."""
        W_Q = as_tensor(W_Q, "W_Q", min_ndim=2, finite=finite)
        W_K = as_tensor(W_K, "W_K", min_ndim=2, finite=finite)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        idx = kv_head_index(n_heads, n_kv_heads)
        if W_Q.shape[-2] % n_heads:
            fail("W_Q", f"{W_Q.shape[-2]} rows are not divisible by n_heads={n_heads}")
        hd = W_Q.shape[-2] // n_heads
        if W_K.shape[-2] != n_kv_heads * hd:
            fail("W_K", f"expected n_kv_heads*head_dim = {n_kv_heads}*{hd} = {n_kv_heads * hd} rows, "
                        f"got shape {tuple(W_K.shape)}")
        if W_K.shape[-1] != W_Q.shape[-1]:
            fail("W_K", f"hidden size {W_K.shape[-1]} differs from W_Q's {W_Q.shape[-1]}")
        if W_K.shape[:-2] != W_Q.shape[:-2]:
            fail("W_K", f"leading (batch) shape {tuple(W_K.shape[:-2])} differs from W_Q's "
                        f"{tuple(W_Q.shape[:-2])}")
        n = W_Q.shape[-1]
        Q = W_Q.to(dtype).reshape(*W_Q.shape[:-2], n_heads, hd, n)
        K = W_K.to(dtype).reshape(*W_K.shape[:-2], n_kv_heads, hd, n)
        return cls(Q, K, idx, finite=False)

    @classmethod
    def from_layer(cls, W_Q: Any, W_K: Any, n_heads: int, n_kv_heads: int | None = None) -> "FactoredQK":
        """The layer's form (sum over heads) ``W_Qᵀ W_K`` with GQA keys repeated per query head."""
        W_Q = as_tensor(W_Q, "W_Q", min_ndim=2)
        W_K = as_tensor(W_K, "W_K", min_ndim=2)
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_kv_heads != n_heads:
            hd = W_Q.shape[-2] // n_heads
            W_K = W_K.reshape(*W_K.shape[:-2], n_kv_heads, hd, -1).repeat_interleave(
                n_heads // n_kv_heads, dim=-3).reshape(*W_K.shape[:-2], n_heads * hd, -1)
        return cls(W_Q, W_K)

    def per_head(self, n_heads: int) -> "FactoredQK":
        """This (layer) form split into ``n_heads`` head forms (batched on a new axis -3)."""
        if self.kv is not None:
            raise ValueError("per_head: the form is already per head")
        r, d = self.A.shape[-2:]
        if r % n_heads:
            fail("n_heads", f"{r} rows are not divisible by n_heads={n_heads}")
        shp = (*self.A.shape[:-2], n_heads, r // n_heads, d)
        return FactoredQK(self.A.reshape(shp), self.B.reshape(shp), finite=False)

    # ------------------------------------------------------------------ shapes
    @property
    def d(self) -> int:
        """Model dimension (M is d × d)."""
        return self.A.shape[-1]

    @property
    def r(self) -> int:
        """Rows of each factor (rank bound of M)."""
        return self.A.shape[-2]

    @property
    def B_full(self) -> torch.Tensor:
        """``B`` with one key factor per form (gathered per query head under GQA)."""
        return self.B if self.kv is None else self.B[..., self.kv, :, :]

    def dense(self) -> torch.Tensor:
        """The materialized (..., d, d) matrix ``Aᵀ B`` (references and tests)."""
        return self.A.transpose(-1, -2) @ self.B_full

    # ------------------------------------------------------------------ spectra
    def _uses_dense(self, method: str) -> tuple[bool, bool]:
        _check_method(method)
        r, d = self.r, self.d
        dense_sv = method == "dense" or (method == "auto" and r >= d)
        dense_eig = method == "dense" or (method == "auto" and 2 * r >= d)
        return dense_sv, dense_eig

    @staticmethod
    def _svals_dense(M: torch.Tensor, m: int) -> torch.Tensor:
        # Gram eigenvalues with no ill-conditioning fallback: M = AᵀB is often
        # ill-conditioned (cond(A)·cond(B)); the statistics taken from these values (stable
        # rank, PR) see the small ones only through sums (error ~sqrt(d·eps)·σ_max).
        Md = M.to(torch.float64)
        G = Md @ Md.mT
        return torch.linalg.eigvalsh(G).flip(-1).clamp_min(0).sqrt()[..., :m]

    def _svals_factored(self, B: torch.Tensor) -> torch.Tensor:
        Ra = torch.linalg.qr(self.A.transpose(-1, -2), mode="r").R  # (..., min(d,r), r)
        Rb = torch.linalg.qr(B.transpose(-1, -2), mode="r").R
        return torch.linalg.svdvals(Ra @ Rb.transpose(-1, -2))

    def svals(self, method: str = "auto") -> torch.Tensor:
        """Singular values of M, descending, (..., min(r, d)) (the other d - min(r, d) are zero).

        ``"factored"``: SVD of the r × r core ``R_a R_bᵀ``; ``"dense"``: square roots of
        the eigenvalues of M Mᵀ; ``"auto"``: factored when r < d.
        """
        dense_sv, _ = self._uses_dense(method)
        if dense_sv:
            return self._svals_dense(self.dense(), min(self.r, self.d))
        return self._svals_factored(self.B_full)

    def svd(self, k: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Top-``k`` singular triplets from the core: ``(S (..., k), U (..., k, d), V (..., k, d))``
        with ``M = Σ_i S_i U_iᵀ V_i`` over all i (rows of U and V are unit left / right
        singular vectors)."""
        Qa, Ra = torch.linalg.qr(self.A.transpose(-1, -2))
        Qb, Rb = torch.linalg.qr(self.B_full.transpose(-1, -2))
        U, S, Vh = torch.linalg.svd(Ra @ Rb.transpose(-1, -2))
        k = S.shape[-1] if k is None else int(k)
        return S[..., :k], (Qa @ U).transpose(-1, -2)[..., :k, :], (Qb @ Vh.mT).transpose(-1, -2)[..., :k, :]

    def _sym_eigvals(self, M: Optional[torch.Tensor], B: torch.Tensor, dense_eig: bool) -> torch.Tensor:
        r, d = self.r, self.d
        if dense_eig:
            S = 0.5 * (M + M.transpose(-1, -2))
            eig = torch.linalg.eigvalsh(S).flip(-1)
            if 2 * r < d:  # keep the 2r nonzero candidates (largest |λ|), descending
                idx = eig.abs().argsort(dim=-1, descending=True)[..., : 2 * r]
                eig = eig.gather(-1, idx).sort(dim=-1, descending=True).values
            return eig
        C = torch.cat([self.A, B], dim=-2)  # (..., 2r, d)
        R = torch.linalg.qr(C.transpose(-1, -2), mode="r").R  # (..., m2, 2r)
        RJ = torch.cat([R[..., r:], R[..., :r]], dim=-1) * 0.5  # R J  (J swaps the halves, / 2)
        S = RJ @ R.transpose(-1, -2)
        S = 0.5 * (S + S.transpose(-1, -2))
        return torch.linalg.eigvalsh(S).flip(-1)

    def sym_eigvals(self, method: str = "auto") -> torch.Tensor:
        """Eigenvalues of the symmetric part (M + Mᵀ)/2, descending, (..., min(2r, d)) (the
        other d - min(2r, d) are exactly zero). ``"factored"``: QR of [A; B]ᵀ and the
        (≤ 2r)-sized core; ``"dense"``: ``eigvalsh`` of the formed matrix; ``"auto"``:
        factored when 2r < d."""
        _, dense_eig = self._uses_dense(method)
        return self._sym_eigvals(self.dense() if dense_eig else None, self.B_full, dense_eig)

    def spectrum(self, method: str = "auto") -> dict:
        """Singular values, symmetric-part eigenvalues, Frobenius norm and symmetry deviation.

        Returns ``svals`` (:meth:`svals`), ``eig`` (:meth:`sym_eigvals`), ``fro`` (...) =
        ‖M‖_F (from the singular values), ``sym_dev`` (...) = ‖M − Mᵀ‖_F / ‖M‖_F (0 for
        M = 0), ``d``. Factored: ‖M − Mᵀ‖²_F = 2‖M‖²_F − 2 tr(M²) with tr(M²) = tr((B Aᵀ)²).
        """
        dense_sv, dense_eig = self._uses_dense(method)
        r, d = self.r, self.d
        B = self.B_full
        M = self.A.transpose(-1, -2) @ B if (dense_sv or dense_eig) else None
        svals = self._svals_dense(M, min(r, d)) if dense_sv else self._svals_factored(B)
        eig = self._sym_eigvals(M, B, dense_eig)
        fro2 = svals.square().sum(-1)
        if M is not None:
            dev2 = (M - M.transpose(-1, -2)).square().sum((-1, -2))
        else:
            N = B @ self.A.transpose(-1, -2)  # (..., r, r)
            tr_m2 = (N * N.transpose(-1, -2)).sum((-1, -2))
            dev2 = torch.clamp(2 * fro2 - 2 * tr_m2, min=0)
        fro = fro2.sqrt()
        sym_dev = torch.where(fro > 0, dev2.sqrt() / torch.where(fro > 0, fro, torch.ones_like(fro)),
                              torch.zeros_like(fro))
        return {"svals": svals, "eig": eig, "fro": fro, "sym_dev": sym_dev, "d": d}

    def inertia(self, rtol: float | None = None, method: str = "auto") -> dict:
        """Sign counts of the symmetric part out of d (:func:`inertia` of :meth:`sym_eigvals`)."""
        return inertia(self.sym_eigvals(method), self.d, rtol)

    def fro_sq(self) -> torch.Tensor:
        """‖M‖²_F = tr((A Aᵀ)(B Bᵀ)) from r × r Grams (key Grams once per kv head), (...)."""
        AA = self.A @ self.A.transpose(-1, -2)
        BB = self.B @ self.B.transpose(-1, -2)
        if self.kv is not None:
            BB = BB[..., self.kv, :, :]
        return (AA * BB).sum((-1, -2))  # both symmetric: tr(XY) = sum(X ⊙ Y)

    def fro(self) -> torch.Tensor:
        """‖M‖_F (square root of :meth:`fro_sq`)."""
        return self.fro_sq().sqrt()

    # ------------------------------------------------------------------ seed 004's sym_eig
    def sym_eig(self, top_k: int = 0, rel_tol: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor | None]:
        """All 2r candidate eigenvalues of the symmetric part, by decreasing magnitude, and the
        top-``top_k`` unit eigen-directions.

        Solved as a 2r problem in float64: ``G = N Nᵀ`` for ``N = [αA; B/α]`` (``α``
        balances the two norms; M is unchanged), ``G = C Cᵀ`` (Cholesky; an
        eigendecomposition with a pseudo-inverse where ``N`` is rank-deficient, e.g.
        2r > d: eigenvalues of ``G`` below ``rel_tol · max`` count as zero), eigenvalues
        of ``½ Cᵀ J C``, eigenvectors ``Nᵀ C⁻ᵀ y`` (sign: largest-magnitude component
        positive).

        Returns ``eigvals`` (..., 2r) float64 (exact zeros pad the rank-deficient case) and
        ``eigdirs`` (..., top_k, d) float64, or None when ``top_k`` is 0.
        """
        squeeze = self.kv is None
        if squeeze:
            Q, K = self.A.unsqueeze(-3).to(torch.float64), self.B.unsqueeze(-3).to(torch.float64)
            idx = torch.zeros(1, dtype=torch.long, device=self.A.device)
        else:
            Q, K, idx = self.A.to(torch.float64), self.B.to(torch.float64), self.kv
        H, d, n = Q.shape[-3:]
        Hk = K.shape[-3]
        top_k = int(top_k)
        if top_k < 0 or top_k > 2 * d:
            fail("top_k", f"expected 0 <= top_k <= 2*head_dim = {2 * d}, got {top_k}")
        # Grams with GQA sharing: K Kᵀ once per kv head.
        QQ = Q @ Q.transpose(-1, -2)                              # (..., H, d, d)
        KK = (K @ K.transpose(-1, -2))[..., idx, :, :]            # (..., H, d, d)
        # query heads of one kv group are contiguous: one (group·d × n)(n × d) product per group
        Qg = Q.reshape(*Q.shape[:-3], Hk, (H // Hk) * d, n)
        QK = (Qg @ K.transpose(-1, -2)).reshape(*Q.shape[:-3], H, d, d)
        if not (bool(torch.isfinite(QQ).all()) and bool(torch.isfinite(KK).all())):
            fail("W_Q" if not bool(torch.isfinite(QQ).all()) else "W_K", "contains NaN or Inf values")
        nq = QQ.diagonal(dim1=-2, dim2=-1).sum(-1).sqrt()
        nk = KK.diagonal(dim1=-2, dim2=-1).sum(-1).sqrt()
        alpha = torch.where((nq > 0) & (nk > 0), (nk / nq.clamp_min(1e-300)).sqrt(), torch.ones_like(nq))
        a2 = (alpha * alpha)[..., None, None]
        G = torch.cat([torch.cat([QQ * a2, QK], -1), torch.cat([QK.transpose(-1, -2), KK / a2], -1)], -2)
        G = 0.5 * (G + G.transpose(-1, -2))
        with one_torch_thread(G.device.type == "cpu"):  # batched small LAPACK calls
            ev, U = _sym_eig_from_gram(G, Q, K, idx, alpha, d, top_k, rel_tol)
        if squeeze:
            ev = ev.squeeze(-2)
            U = None if U is None else U.squeeze(-3)
        return ev, U


def _sym_eig_from_gram(G, Q, K, idx, alpha, d, top_k, rel_tol):
    """Eigen-solve of the 2·head_dim problem given the balanced Gram ``G`` (see FactoredQK.sym_eig)."""
    C, info = torch.linalg.cholesky_ex(G)
    Cinv_T = None
    bad = info != 0
    if bool(bad.any()):  # rank-deficient heads: C = V Λ^½ with a pseudo-inverse
        lam, V = torch.linalg.eigh(G[bad])
        keep = lam > rel_tol * lam.amax(-1, keepdim=True).clamp_min(1e-300)
        sq = torch.where(keep, lam.clamp_min(0).sqrt(), torch.zeros_like(lam))
        inv = torch.where(keep, 1.0 / sq.clamp_min(1e-300), torch.zeros_like(lam))
        C = C.clone()
        C[bad] = V * sq[..., None, :]
        if top_k:
            Cinv_T = torch.zeros_like(G)
            Cinv_T[bad] = V * inv[..., None, :]
    JC = torch.cat([C[..., d:, :], C[..., :d, :]], -2)       # J C: swap halves of rows
    T = C.transpose(-1, -2) @ JC
    T = 0.5 * (T + T.transpose(-1, -2))
    if top_k:
        lam_T, Y = torch.linalg.eigh(T)
    else:
        lam_T, Y = torch.linalg.eigvalsh(T), None
    order = lam_T.abs().argsort(dim=-1, descending=True, stable=True)
    eigvals = 0.5 * lam_T.gather(-1, order)
    if not top_k:
        return eigvals, None
    Y = Y.gather(-1, order[..., None, :].expand_as(Y))[..., :top_k]          # (..., H, 2d, k)
    # u = Nᵀ C⁻ᵀ y: solve Cᵀ z = y (triangular) or use the pseudo-inverse factor.
    Z = torch.linalg.solve_triangular(C.transpose(-1, -2), Y, upper=True) if Cinv_T is None else None
    if Cinv_T is not None:
        Z = torch.empty_like(Y)
        good = ~bad
        if bool(good.any()):
            Z[good] = torch.linalg.solve_triangular(C[good].transpose(-1, -2), Y[good], upper=True)
        Z[bad] = Cinv_T[bad] @ Y[bad]
    M = torch.cat([Q * alpha[..., None, None], K[..., idx, :, :] / alpha[..., None, None]], -2)  # (..., H, 2d, n)
    U = (M.transpose(-1, -2) @ Z).transpose(-1, -2)         # (..., H, k, n)
    U = U / U.norm(dim=-1, keepdim=True).clamp_min(1e-300)
    sgn = torch.sign(U.gather(-1, U.abs().argmax(-1, keepdim=True)))
    U = U * torch.where(sgn == 0, torch.ones_like(sgn), sgn)
    return eigvals, U
