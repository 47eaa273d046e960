"""The weight battery's two engines give the same results (unit level, models built in memory):
"fused" (one read per stored tensor and block: BlockReader + FusedAccumulator) against
"reference" (one pass per analysis). The per-checkpoint versions are in
tests/integration/test_battery.py."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from geolip_lib.checkpoints import Catalog, Entry
from geolip_lib.weights import TensorStore, run_battery


def _assert_same(a, b):
    pd.testing.assert_frame_equal(a.svd, b.svd, rtol=1e-7)
    assert a.spectra.keys() == b.spectra.keys()
    for k in a.spectra:
        assert np.allclose(a.spectra[k], b.spectra[k], rtol=0, atol=1e-10 * b.spectra[k][0]), k
    for k in ("per_tensor", "by_role", "by_stack_role", "model", "hist"):
        pd.testing.assert_frame_equal(a.sparsity[k], b.sparsity[k], check_exact=True)
    qa, qb = a.qk["layers"], b.qk["layers"]
    assert list(qa.columns) == list(qb.columns) and len(qa) == len(qb) > 0
    for c in qa.columns:
        if c in ("top_eig", "bottom_eig"):
            assert np.allclose(np.stack(qa[c]), np.stack(qb[c]), rtol=1e-9, atol=1e-12), c
        elif qa[c].dtype.kind == "f":
            assert np.allclose(qa[c], qb[c], rtol=1e-9, atol=1e-12), c
        else:
            assert qa[c].tolist() == qb[c].tolist(), c
    pd.testing.assert_frame_equal(a.qk["heads"], b.qk["heads"], rtol=1e-9)
    assert a.qk["eigs"].keys() == b.qk["eigs"].keys()
    pd.testing.assert_frame_equal(a.mlp["layers"], b.mlp["layers"], rtol=1e-12)
    assert a.cross.keys() == b.cross.keys()
    pd.testing.assert_frame_equal(a.norms, b.norms)
    pd.testing.assert_frame_equal(a.pos_bias, b.pos_bias)
    sa, sb = a.summary(), b.summary()
    sa.pop("seconds"), sb.pop("seconds")
    assert sa.keys() == sb.keys()


def test_engines_equal_on_tiny_t5():
    """Encoder + decoder, self + cross attention, relative position bias, norms."""
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=2, num_decoder_layers=2, num_heads=4,
                   relative_attention_num_buckets=8, decoder_start_token_id=0)
    torch.manual_seed(0)
    sd = T5ForConditionalGeneration(cfg).state_dict()
    a, b = (run_battery(TensorStore(sd), config=cfg.to_dict(), family="t5", device="cpu", engine=e)
            for e in ("fused", "reference"))
    _assert_same(a, b)
    assert not a.pos_bias.empty and set(a.qk["layers"]["attn"]) == {"self", "cross"}


@pytest.mark.parametrize("seed", [0, 1])
def test_engines_equal_on_gqa_toy(seed):
    """Grouped-query attention (4 query heads, 2 kv heads), a gated MLP, two layers."""
    g = torch.Generator().manual_seed(seed)
    d, H, Hk, hd, ff = 12, 4, 2, 2, 20
    sd, ents = {}, []
    for i in range(2):
        shapes = {"q": (H * hd, d), "k": (Hk * hd, d), "v": (Hk * hd, d), "o": (d, H * hd),
                  "mlp_gate": (ff, d), "mlp_in": (ff, d), "mlp_out": (d, ff)}
        for role, shp in shapes.items():
            name = f"l{i}.{role}"
            sd[name] = torch.randn(*shp, generator=g)
            attn = "self" if role in ("q", "k", "v", "o") else None
            ents.append(Entry(name, role, "decoder", attn, i, shp, "float32",
                              **({"n_heads": H, "head_dim": hd, "n_kv_heads": Hk} if attn else {})))
    cat = Catalog(ents, family="toy", d_model=d)
    a, b = (run_battery(TensorStore(sd), cat=cat, device="cpu", engine=e) for e in ("fused", "reference"))
    _assert_same(a, b)
    assert a.qk["layers"]["n_kv_heads"].tolist() == [Hk, Hk] and len(a.qk["heads"]) == 2 * H
    assert a.mlp["layers"]["gated"].all()
