"""Smoke tests of geolip_lib.weights.plots (and the display tables / intervals of
geolip_lib.weights.tables): every figure drawn from a small synthetic battery (a randomly
initialised two-layer T5 built in memory, no checkpoint loaded); axes, titles, labels and a
non-empty PNG checked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch

from geolip_lib.checkpoints import Catalog, Entry
from tests.figure_checks import check_figure
from geolip_lib.weights import TensorStore, plots, run_battery
from geolip_lib.weights import tables as T

pytestmark = pytest.mark.unit



def _t5(seed: int):
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=3, num_decoder_layers=2, num_heads=4,
                   relative_attention_num_buckets=8, decoder_start_token_id=0)
    torch.manual_seed(seed)
    sd = T5ForConditionalGeneration(cfg).state_dict()
    return run_battery(TensorStore(sd), config=cfg.to_dict(), family="t5", device="cpu")


@pytest.fixture(scope="module")
def batteries():
    return _t5(0), _t5(1)


@pytest.fixture(scope="module")
def mlp_only():
    """Three MLP layers, no attention, no norms: the panels the model lacks say so."""
    g = torch.Generator().manual_seed(0)
    sd = {f"l{i}.up": torch.randn(12, 6, generator=g) for i in range(3)}
    sd |= {f"l{i}.down": torch.randn(6, 12, generator=g) for i in range(3)}
    ents = [Entry(f"l{i}.up", "mlp_in", "encoder", None, i, (12, 6), "float32") for i in range(3)]
    ents += [Entry(f"l{i}.down", "mlp_out", "encoder", None, i, (6, 12), "float32") for i in range(3)]
    return run_battery(TensorStore(sd), cat=Catalog(ents, family="toy", d_model=6), device="cpu")




PANEL_TITLES = ["normalised singular values", "stable rank by layer", "log10 |w| (all tensors)",
                "eigenvalues of sym(W_Qᵀ W_K)", "MLP neuron importance", "cross-layer Q cosine", "norm scales",
                "position bias (heads × buckets)", "log10 condition number"]


def test_battery_panel(batteries):
    res, _ = batteries
    for stack in ("encoder", "decoder"):
        fig = plots.battery_panel(res, title="toy-t5", stack=stack)
        assert fig.get_suptitle() == f"toy-t5 — inactive weight geometry ({stack})"
        main = fig.axes[:9]
        assert [a.get_title() for a in main] == PANEL_TITLES
        assert [a.get_xlabel() for a in main[:5]] == ["index", "layer", "log10 |w|", "index (descending)",
                                                      "‖up_i‖·‖down_i‖"]
        assert main[0].get_ylabel() == "σ_i / σ_1" and main[7].get_ylabel() == "head"
        assert main[8].get_xlabel() == "layer" and main[8].get_ylabel() == "log10 σ_1 / σ_min"
        assert {"q", "k", "mlp_in"} <= set(main[1].get_legend_handles_labels()[1])
        check_figure(fig, 9 + 2)  # nine panels + colour bars of the two heat maps


def _has_data(ax) -> bool:
    """An axis draws data: a line with points, a filled collection, an image or bars."""
    return (any(len(l.get_xdata()) for l in ax.lines) or any(len(c.get_paths()) for c in ax.collections)
            or bool(ax.images) or bool(ax.patches))


def test_battery_panel_no_empty_axes(batteries):
    """The panel of a tiny T5's battery output: the nine expected panels (plus the two colour
    bars), each drawing data, none of them a 'no ...' placeholder."""
    res, _ = batteries
    fig = plots.battery_panel(res, title="toy-t5")
    main = fig.axes[:9]
    assert [a.get_title() for a in main] == PANEL_TITLES
    assert [a for a in main if not _has_data(a)] == []
    assert [t.get_text() for a in main for t in a.texts if t.get_text().startswith("no ")] == []
    check_figure(fig, 9 + 2)


def test_battery_panel_without_attention(mlp_only):
    fig = plots.battery_panel(mlp_only, title="toy")
    texts = [t.get_text() for a in fig.axes for t in a.texts]
    assert {"no self-attention Q/K", "fewer than 2 layers with Q", "no norm scales",
            "no relative position bias"} <= set(texts)
    check_figure(fig, 9)


def test_random_init_comparison(batteries):
    res, null = batteries
    fig = plots.random_init_comparison(res, null, title="toy-t5")
    assert fig.get_suptitle() == "toy-t5 — trained vs random init"
    a, b, c = fig.axes
    assert [x.get_title() for x in fig.axes] == ["fraction |w| <0.1 by role", "stable rank of every matrix",
                                                  "adjacent-layer cosine (q/k/v/o)"]
    assert (a.get_xlabel(), a.get_ylabel()) == ("role", "fraction of weights")
    assert (b.get_xlabel(), b.get_ylabel()) == ("role", "‖W‖²_F / ‖W‖²₂")
    assert (c.get_xlabel(), c.get_ylabel()) == ("weights", "cosine of flattened weights")
    for x in fig.axes:
        assert {"trained", "random init"} <= set(x.get_legend_handles_labels()[1])
    check_figure(fig, 3)


def test_random_init_comparison_trained_only(mlp_only):
    fig = plots.random_init_comparison(mlp_only)
    assert fig.get_suptitle() == "trained vs random init"
    assert fig.axes[2].texts[0].get_text() == "fewer than 2 layers per attention role"
    check_figure(fig, 3)


def test_cross_model(batteries):
    res, null = batteries
    measured = T.cross_model_frame({"toy-a": (res.summary(), null.summary()), "toy-b": (null.summary(), None)})
    assert list(measured["weights"]) == ["trained", "random init", "trained"]
    fig = plots.cross_model(measured)
    assert fig.get_suptitle() == "Frozen-weight topology across models"
    assert [a.get_title() for a in fig.axes] == ["Q/K/V sparsity (trained)",
                                                 "mean stable rank of Q/K/V/MLP-in (trained vs random)",
                                                 "QK positive-eigenvalue fraction (first / last layer)"]
    assert all(a.get_xlabel() == "model" for a in fig.axes)
    assert [a.get_ylabel() for a in fig.axes] == ["fraction |w| < 0.1", "stable rank", "positive eigenvalue fraction"]
    assert "trained, first" in fig.axes[2].get_legend_handles_labels()[1]
    check_figure(fig, 3)


def test_cross_model_empty_columns():
    measured = pd.DataFrame([{"model": "m", "weights": "trained", **{c: None for cs in T.CROSS_MODEL_COLUMNS.values()
                                                                       for c in cs}}])
    fig = plots.cross_model(measured)
    assert [a.texts[0].get_text() for a in fig.axes] == ["no Q/K/V measured", "no stable ranks",
                                                         "no self-attention QK"]
    check_figure(fig, 3)


# ---------------------------------------------------------------------------- tables and intervals
def test_headline_values_are_exact_over_what_they_pool_and_the_null_is_over_its_seeds(batteries):
    """Every notebook-02 headline is computed on all the model's weights: exact, "exact (all N …)"
    naming what it pools; the random-init null given as several seeds is a distribution over them."""
    res, null = batteries
    s, n = res.summary(), null.summary()
    items, null_items = T.headline_items(res), T.headline_items(null)
    h = T.battery_headline(s, items, [n, n], seed=0, n_boot=200)
    assert h["q_sparsity"]["value"] == s["qkv_sparsity"]["q"]
    assert h["q_stable_rank"]["value"] == s["svd_by_role"]["q"]["stable_rank"]
    assert h["mlp_dead_frac"]["value"] == s["mlp"]["dead_frac"]
    assert h["cross_layer_adj"]["value"] == s["cross_layer_attn_adj_mean"]
    assert all(e["kind"] == "exact" for e in h.values())
    assert h["qk_pos_frac_first"]["interval"]["method"].startswith("exact (all ")
    # 3 encoder + 2 decoder self + 2 decoder cross attention blocks = 7 Q matrices; 5 MLP layers
    assert h["q_sparsity"]["interval"]["method"] == "exact (all 7 Q matrices)"
    assert h["q_stable_rank"]["interval"]["method"] == "exact (all 7 Q matrices)"
    assert h["mlp_dead_frac"]["interval"]["method"] == "exact (all 5 MLP layers)"
    # adjacent pairs: encoder self q/k/v/o 4x2, decoder self and cross 8x1 = 16 pairs
    assert h["cross_layer_adj"]["interval"]["method"] == "exact (all 16 adjacent layer pairs)"
    nl = h["q_stable_rank"]["nulls"]["random_init"]
    assert nl["value"] == pytest.approx(n["svd_by_role"]["q"]["stable_rank"]) and nl["per_seed"] == [nl["value"]] * 2
    assert nl["interval"]["kind"] == "over_seeds" and "2 random-init seeds" in nl["interval"]["method"]
    # one null summary (older callers): its value with a bootstrap over its items
    h1 = T.battery_headline(s, items, n, null_items, seed=0, n_boot=200)
    assert "200 resamples of 7 Q matrices" in h1["q_sparsity"]["nulls"]["random_init"]["interval"]["method"]
    for k, e in h1.items():
        assert e["nulls"]["random_init"]["value"] is not None, k


def test_weighted_statistics_reduce_to_the_recorded_values(batteries):
    res, _ = batteries
    s = res.summary()
    h = T.battery_headline(s, T.headline_items(res))
    for k, it in T.headline_items(res).items():
        assert sum(it["num"]) / sum(it["den"]) == pytest.approx(h[k]["value"], rel=1e-12), k
    assert h["q_sparsity"]["nulls"] == {}
    c, w = T.adjacent_pairs(res)
    assert float(w @ c / w.sum()) == pytest.approx(s["cross_layer_attn_adj_mean"], abs=1e-12)
    per = res.sparsity["per_tensor"]
    q = per[per["role"] == "q"]
    assert float((q["n"] * q["<0.1"]).sum() / q["n"].sum()) == pytest.approx(s["qkv_sparsity"]["q"], abs=1e-12)
    ml = res.mlp["layers"]
    assert float(ml["dead"].sum() / ml["d_ff"].sum()) == s["mlp"]["dead_frac"]


def test_display_tables(batteries):
    res, null = batteries
    s, n = res.summary(), null.summary()
    assert list(T.qkv_sparsity(s, n).columns) == ["trained", "random init"]
    assert "stable_rank (random init)" in T.svd_by_stack_role(s, n).columns
    assert "<0.1 (random init)" in T.sparsity_by_role(s, n).columns
    assert list(T.sparsity_model(s, None).index) == ["trained"]
    assert set(T.qk_random_init(s, n).index) == {"encoder/self", "decoder/self", "decoder/cross"}
    assert len(T.qk_layers(res, 1)) == 3 and len(T.qk_layers(res, 6)) == 7
    assert list(T.mlp_overview(s, n).index) == ["trained", "random init"]
    assert "adj_mean (random init)" in T.cross_layer_overview(s, n).columns
    assert set(T.position_bias_overview(s).index) == {"encoder", "decoder"}
    assert "×" in T.catalog_summary(res.catalog)["shapes"].iloc[0]
    assert T.first_qk_group(s) == "decoder/self" and T.first_qk_group({"qk": {"x/cross": {}}}) is None
    assert T.first_qk_group({"qk": {"x/cross": {}}}, self_only=False) == "x/cross"


def test_cross_model_headline_bootstraps_over_models():
    rng = np.random.default_rng(0)
    rows = [{"model": f"m{i}", "weights": w, "Q sparsity": float(v)}
            for i in range(5) for w, v in (("trained", rng.uniform(0.8, 1.0)), ("random init", rng.uniform(0, 0.2)))]
    h = T.cross_model_headline(pd.DataFrame(rows), "Q sparsity", label="mean Q sparsity", seed=0, n_boot=500)
    assert h["interval"]["method"] == "two-stage bootstrap percentile, 500 resamples of 5 models"
    assert h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"]
    assert h["nulls"]["random_init"]["separated"] is True and h["note"] is None


def test_two_stage_interval_resamples_items_within_models(batteries):
    """Two models: resampling models alone cannot form a useful interval; the items within do."""
    res, null = batteries
    items = {"a": {"trained": T.headline_items(res), "random_init": T.headline_items(null)},
             "b": {"trained": T.headline_items(null), "random_init": T.headline_items(res)}}
    measured = T.cross_model_frame({"a": (res.summary(), null.summary()), "b": (null.summary(), res.summary())})
    h = T.cross_model_headline(measured, "SR Q", label="SR Q", items=items, key="q_stable_rank", n_boot=400)
    assert h["interval"]["method"] == "two-stage bootstrap percentile, 400 resamples of 2 models and the Q matrices " \
                                      "within each"
    assert h["interval"]["lo"] < h["value"] < h["interval"]["hi"]
    assert h["value"] == pytest.approx(np.mean([res.summary()["svd_by_role"]["q"]["stable_rank"],
                                                null.summary()["svd_by_role"]["q"]["stable_rank"]]))
    # a value that pools nothing keeps its value: identical models give a zero-width interval
    iv = T.two_stage_interval([0.5, 0.5], [None, None], n_boot=100)
    assert iv.lo == iv.hi == 0.5 and iv.method.endswith("of 2 models")
    assert T.two_stage_interval([], []) is None
