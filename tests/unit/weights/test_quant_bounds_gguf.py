"""Quantization bounds of a model loaded from a GGUF file, end to end: the tiny llama file of
tests/unit/models/test_gguf_source.py (W_Q in Q8_0 with llama.cpp's row permutation, which transformers undoes:
the bound finds the row order; the MLP in Q4_1) against the fp32 model it was written from, and the tiny qwen2
Q4_K_M-like file of tests/unit/models/test_gguf_kquants.py (Q4_K / Q6_K: one step, end codes, the assumption
recorded). The claims records get their ``quantization_bound`` through ``quantization_effect.attach_bounds``."""
from __future__ import annotations

import numpy as np
import pytest

from geolip_lib import models
from geolip_lib import quantization_effect as QE
from geolip_lib.checkpoints import ATTN_ROLES, TensorStore
from geolip_lib.families import catalog
from geolip_lib.weights import quant_bounds as QB
from geolip_lib.weights.battery.cross_layer import cross_layer
from geolip_lib.weights.tables import claims as TC
from tests.unit.models import test_gguf_kquants as KQ
from tests.unit.models import test_gguf_source as GS

pytestmark = pytest.mark.unit


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _summary(store, cat) -> dict:
    """The battery summary's cross-layer part (``battery.summary``'s layout)."""
    cross = cross_layer(store, cat, TC.CLAIM_CROSS_LAYER_ROLES)
    cl = {f"{s}/{a or '-'}/{r}": {k: v for k, v in d.items() if k != "cos"} for (s, a, r), d in cross.items()}
    attn = [d["adj_mean"] for (s, a, r), d in cross.items() if r in ATTN_ROLES]
    return {"cross_layer": cl, "cross_layer_attn_adj_mean": float(np.mean(attn))}


def _pooled(summary) -> dict:
    return {"attention": summary["cross_layer_attn_adj_mean"], TC.ABS_CROSS_LAYER_SCOPE: TC.abs_cross_layer(summary)[0],
            TC.SEED_CROSS_LAYER_SCOPE: TC.seed_cross_layer(summary)[0],
            TC.SEED_EACH_CROSS_LAYER_SCOPE: TC.seed_each_cross_layer(summary)[0]}


def test_a_permuted_q8_0_gguf_bounds_the_fp32_model_it_was_written_from(tmp_path, cache):
    src = GS.source_model()
    GS.write_gguf(tmp_path / "tiny-llama.Q.gguf", src)
    lm = models.load(GS.params(tmp_path))
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    sd = {k: v.detach().numpy() for k, v in src.state_dict().items()}
    qs = [sd[f"model.layers.{i}.self_attn.q_proj.weight"] for i in range(GS.LAYERS)]
    for thr in (0.005, 0.02, 0.05):
        b = QE.q_sparsity_bounds(lm, store, cat, threshold=thr)["decoder/self"]
        true = sum(int((np.abs(q) < thr).sum()) for q in qs) / sum(q.size for q in qs)
        assert b["lo"] <= true <= b["hi"] and b["types"] == ["Q8_0"] and b["assumes"] is None
        assert b["text"] == "Q8_0: " + QB.rule_text("Q8_0") and "half a step" in b["text"]
    # the cross-layer bound holds the fp32 model's pooled cosines (every scope)
    summary = _summary(store, cat)
    bounds = QE.cross_layer_bounds(lm, store, cat, summary)
    truth = _pooled(_summary(TensorStore(src.state_dict()), cat))
    assert set(bounds) == set(truth)
    for scope, b in bounds.items():
        assert b["lo"] <= truth[scope] <= b["hi"], scope
        w = b["worst_case"]  # the high-probability range, with the worst case beside it
        assert w["lo"] <= b["lo"] <= b["hi"] <= w["hi"] and b["probability"]["delta"] == 1e-6
        assert "with probability ≥ 1 − 1e-06" in b["text"] and "unbiased" in b["assumes"]
    assert bounds["attention"]["types"] == ["F32", "Q8_0"]  # W_Q in Q8_0, K / V / O stored as F32
    assert "Q4_1" in bounds[TC.SEED_CROSS_LAYER_SCOPE]["types"]  # the seed's pooling has the MLP up (Q4_1)


def test_a_kquant_gguf_gets_one_step_bounds_with_the_assumption_recorded(tmp_path, cache):
    KQ.write_kquant_gguf(tmp_path / KQ.FILE)
    lm = models.load(KQ.params(tmp_path))
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    q = [e for e in cat.select(role="q")]
    r = QB.rounding_of(lm, store, q[0])
    assert r.qtype == "Q4_K" and r.source == "stored scales" and r.open_above is not None
    b = QE.q_sparsity_bounds(lm, store, cat, threshold=0.03)["decoder/self"]
    assert b["types"] == ["Q4_K"] and "one step" in b["text"] and "least squares" in b["assumes"]
    assert b["lo"] <= b["below"] / b["n"] <= b["hi"]
    ends = b["if_end_codes_unbounded"]
    assert ends["lo"] <= b["lo"] <= b["hi"] <= ends["hi"]
    summary = _summary(store, cat)
    b10 = QE.q_sparsity_bounds(lm, store, cat)["decoder/self"]  # the claim's threshold, 0.1
    claims = {"q_sparsity": {"decoder/self": {"value": b10["below"] / b10["n"]}},
              "cross_layer_corr": {scope: {"value": v} for scope, v in _pooled(summary).items()}}
    claims["cross_layer_corr"]["attention|abs"]["value"] = 5.0  # a value the bound cannot hold: left out, said
    table = QE.attach_bounds(claims, lm, store, cat, summary)
    assert claims["q_sparsity"]["decoder/self"]["quantization_bound"]["types"] == ["Q4_K"]
    att = claims["cross_layer_corr"]["attention"]["quantization_bound"]
    assert set(att["types"]) == {"Q4_K", "Q6_K"} and att["typical"]["sd"] > 0 and att["assumes"]
    assert att["worst_case"]["lo"] <= att["lo"] <= att["hi"] <= att["worst_case"]["hi"]
    assert "quantization_bound" not in claims["cross_layer_corr"]["attention|abs"]
    assert list(table.columns) == QE.BOUND_COLUMNS and len(table) == 5
    rows = table.set_index("scope")
    assert rows.loc["attention", "worst-case lo"] == att["worst_case"]["lo"]
    assert rows.loc["attention", "unquantized lo"] == att["lo"]
    assert table.set_index("scope")["recorded"].to_dict() == {"decoder/self": True, "attention": True,
                                                               "attention|abs": False, TC.SEED_CROSS_LAYER_SCOPE: True,
                                                               TC.SEED_EACH_CROSS_LAYER_SCOPE: True}


def test_an_unquantized_model_gets_no_bound(cache):
    lm = models.load("tiny-bert")
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    claims = {"q_sparsity": {"encoder/self": {"value": 0.5}}}
    assert QE.attach_bounds(claims, lm, store, cat, {}).empty
    assert "quantization_bound" not in claims["q_sparsity"]["encoder/self"]
    assert QE.cross_layer_bounds(lm, store, cat, {}) == {}
