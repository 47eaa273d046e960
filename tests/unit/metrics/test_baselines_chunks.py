"""The nulls drawn and measured in chunks are the numbers of the whole-table code: gaussian_like /
sphere_like draw whole rows DRAW_CHUNK values at a time, matched_scale of a large table reads
column blocks, the covariance spectrum scales and centres its own float64 copy in place."""
from __future__ import annotations

import numpy as np
import torch

from geolip_lib.metrics import baselines as B
from geolip_lib.metrics import spectral as S

X = torch.randn(1000, 1030, generator=torch.Generator().manual_seed(0)) * 0.02 + 0.01


def test_draws_in_chunks_equal_one_draw(monkeypatch):
    monkeypatch.setattr(B, "DRAW_CHUNK", 3 * 1030 + 7)  # three rows a chunk, and a last partial one
    s = B.matched_scale(X)
    g = torch.from_numpy(np.random.default_rng(3).standard_normal(X.shape) * s).to(X.dtype)
    u = np.random.default_rng(4).standard_normal(X.shape)
    u = torch.from_numpy(u / np.linalg.norm(u, axis=1, keepdims=True)).to(X.dtype)
    assert torch.equal(B.gaussian_like(X, seed=3, scale=s), g)
    assert torch.equal(B.sphere_like(X, seed=4), u)


def test_matched_scale_by_column_blocks_is_the_whole_tables(monkeypatch):
    whole = float(X.to(torch.float64).var(dim=0, unbiased=False).mean().sqrt())
    assert B.matched_scale(X) == whole
    monkeypatch.setattr(B, "SCALE_WHOLE_MAX", 0)  # the column blocks (256, 256, 256, 262 wide)
    assert B.matched_scale(X) == whole


def test_spectrum_in_place_leaves_the_input_and_the_numbers_as_they_were():
    Y = X[:200, :40].contiguous()
    for T in (Y, Y.double(), Y.numpy(), Y.double().numpy(), X[:30, :50].numpy()):
        before = T.clone() if isinstance(T, torch.Tensor) else T.copy()
        t = torch.as_tensor(np.asarray(T), dtype=torch.float64)
        s = float(t.abs().max())
        u = t / s
        u = u - u.mean(dim=0, keepdim=True)
        m = u.T @ u if u.shape[1] <= u.shape[0] else u @ u.T  # the smaller of covariance and Gram
        ref = torch.linalg.eigvalsh(m / u.shape[0]).flip(0).clamp_min(0).numpy()
        ev, got_s = S._unit_covariance_eigenvalues(T)
        assert got_s == s and np.array_equal(ev, ref)
        assert np.array_equal(np.asarray(T), np.asarray(before))
