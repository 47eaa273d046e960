"""Seed 004's verdict arithmetic on a worked example: three layers of two query heads that share one key head
(grouped-query attention), head_dim 1 and hidden 2, so that every cosine can be written down by hand.

With head_dim 1 each head's operator is ``g = qᵀk`` (q, k rows of W_Q and W_K), whose Frobenius product is
``⟨g_L, g_L'⟩ = (q_L·q_L')(k_L·k_L')``: the operator cosine is ``cos(q_L, q_a)·cos(k_L, k_a)``. The anchor is the
last layer (the seed's default, ``--anchor -1``).

    layer 0: q = (0, 1), (1, 1); k = (1, 1)  -> head 0: 0·(1/√2) = 0;    head 1: (1/√2)(1/√2) = 1/2;  mean  1/4
    layer 1: q = (3, 4), (0, −2); k = (2, 0) -> head 0: (3/5)·1 = 3/5;   head 1: (−1)·1 = −1;          mean −1/5
    layer 2: q = (1, 0), (0, 1); k = (1, 0)  -> the anchor with itself: 1, 1;                            mean  1

The seed's verdict line averages every layer: (1/4 − 1/5 + 1)/3 = 0.35, WEAK (> 0.1). The project's leaves the
anchor out: (1/4 − 1/5)/2 = 0.025, REJECTED. The cosine is signed: layer 1's head 1 counts −1, as in the seed.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from geolip_lib import operators
from geolip_lib.metrics import intervals
from geolip_lib.operators import tables

pytestmark = pytest.mark.unit

#: per layer: the query rows of heads 0 and 1, and the one key row both heads read
Q = [[(0, 1), (1, 1)], [(3, 4), (0, -2)], [(1, 0), (0, 1)]]
K = [[(1, 1)], [(2, 0)], [(1, 0)]]
#: the worked example's means, by hand (module docstring)
SEED_MEAN = (1 / 4 - 1 / 5 + 1) / 3      # 0.35, the anchor's cosine with itself included
PROJECT_MEAN = (1 / 4 - 1 / 5) / 2       # 0.025, the anchor left out


def _ops() -> operators.QKOperators:
    Wq, Wk = torch.tensor(Q, dtype=torch.float64), torch.tensor(K, dtype=torch.float64)
    return operators.measure_layers(Wq, Wk, n_heads=2, n_kv_heads=1, top_k=2)


def _seed_lines(q, k) -> float:
    """The seed's verdict cell, line for line, on a gram computed here from the rows (no library code)."""
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    num_layers, num_heads = q.shape[0], q.shape[1]
    gram = np.array([[[(q[L, h] @ q[Lp, h]) * (k[L, 0] @ k[Lp, 0]) for h in range(num_heads)]
                      for Lp in range(num_layers)] for L in range(num_layers)])
    diag_sq = np.array([[gram[L, L, h] for h in range(num_heads)] for L in range(num_layers)])
    diag = np.sqrt(np.maximum(diag_sq, 1e-20))
    anchor = num_layers - 1
    to_anchor_per_head = np.array([(gram[L, anchor] / np.maximum(diag[L] * diag[anchor], 1e-20)).mean()
                                   for L in range(num_layers)])
    return float(to_anchor_per_head.mean())


def test_the_hand_worked_means_are_the_seed_s_lines():
    assert SEED_MEAN == pytest.approx(0.35, abs=1e-15) and PROJECT_MEAN == pytest.approx(0.025, abs=1e-15)
    assert _seed_lines(Q, K) == pytest.approx(SEED_MEAN, abs=1e-12)


def test_the_library_gives_the_seed_s_mean_and_the_project_s_on_the_worked_example():
    ops = _ops()
    per_head = operators.seed_cos_to_anchor(ops.gram, -1).numpy()
    assert per_head == pytest.approx(np.array([[0, 0.5], [0.6, -1], [1, 1]]), abs=1e-12)
    a = operators.analyse(ops, anchor=-1, ks=(2,))
    assert abs(a["seed"]["mean_cos_to_anchor"] - SEED_MEAN) < 1e-12
    assert abs(a["mean_cos_to_anchor"] - PROJECT_MEAN) < 1e-12
    assert a["seed"]["verdict"].startswith("WEAK") and a["verdict"].startswith("REJECTED")
    # one identity ties them: seed = ((L − 1)·project + the anchor's self-cosine)/L
    assert a["seed"]["mean_cos_to_anchor"] == pytest.approx((2 * a["mean_cos_to_anchor"] + 1) / 3, abs=1e-12)
    assert a["seed"]["spectral_mean_cos_to_anchor"] == pytest.approx(
        (2 * a["spectral"]["mean_cos_to_anchor"] + 1) / 3, abs=1e-12)
    rows = tables.verdict_rows({"decoder.self": a}, {})
    assert rows[0][tables.SEED_MEAN] == pytest.approx(0.35, abs=1e-12) and rows[0]["seed's verdict"].startswith("WEAK")
    assert rows[0][tables.PROJECT_MEAN] == pytest.approx(0.025, abs=1e-12)


def worked_example_claims(null_seeds: int = 5) -> dict:
    """Notebook 06's claims records of the worked example, beside random operators of its shape as the
    random-init null (one whole set of three layers per init seed), the way the notebook builds them."""
    ops = {"decoder.self": _ops()}
    gen = torch.Generator().manual_seed(0)
    nulls = [operators.measure_layers(torch.randn(3, 2, 2, generator=gen, dtype=torch.float64),
                                      torch.randn(3, 1, 2, generator=gen, dtype=torch.float64),
                                      n_heads=2, n_kv_heads=1, top_k=2) for _ in range(null_seeds)]
    an = {g: operators.analyse(o, ks=(2,)) for g, o in ops.items()}
    null_an = {"decoder.self": operators.analyse(nulls[0], ks=(2,))}
    samples = {g: operators.headline_samples(o) for g, o in ops.items()}
    null_samples = {"decoder.self": [operators.headline_samples(o) for o in nulls]}
    ivs = {g: {k: intervals.bootstrap(s["values"], n_boot=200, what=s["what"]) for k, s in gs.items()}
           for g, gs in samples.items()}
    spectral = tables.spectral_records(an, null_an, ivs, {}, samples, null_samples)
    return tables.operator_claims(spectral, an, null_an)


def test_the_claims_record_holds_the_seed_s_arithmetic_and_the_project_s():
    rec = worked_example_claims()
    op = rec["qk_operator_cos"]["decoder.self"]
    assert abs(op["value"] - SEED_MEAN) < 1e-12 and abs(op["project"]["value"] - PROJECT_MEAN) < 1e-12
    assert op["kind"] == op["project"]["kind"] == "exact"
    assert "3 layers × 2 heads, the anchor's own layer included" in op["interval"]["method"]
    # the random-init null carried to the seed's arithmetic: ((L − 1)·x + 1)/L, value, seeds and interval alike
    n, pn = op["nulls"]["random_init"], op["project"]["nulls"]["random_init"]
    assert n["value"] == pytest.approx((2 * pn["value"] + 1) / 3, abs=1e-12)
    assert n["per_seed"] == pytest.approx([(2 * x + 1) / 3 for x in pn["per_seed"]], abs=1e-12)
    assert (n["interval"]["lo"], n["interval"]["hi"]) == pytest.approx(
        ((2 * pn["interval"]["lo"] + 1) / 3, (2 * pn["interval"]["hi"] + 1) / 3), abs=1e-12)
    assert "seed's arithmetic" in n["interval"]["method"]
    # the spectral records: the seed's arithmetic headline, the project's (anchor excluded) beside it
    sp = rec["qk_spectral_cos"]["decoder.self"]
    assert sp["value"] == pytest.approx((2 * sp["project"]["value"] + 1) / 3, abs=1e-12)
    gap = rec["qk_spectral_minus_operator"]["decoder.self"]
    assert gap["value"] == pytest.approx(sp["value"] - op["value"], abs=1e-12)
    assert gap["project"]["value"] == pytest.approx(sp["project"]["value"] - op["project"]["value"], abs=1e-12)
