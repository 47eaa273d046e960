"""Smoke tests of geolip_lib.attention.plots: every figure of notebooks 12-14 drawn from a
small synthetic fixture (no model trained); axes, titles, labels and a non-empty PNG checked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from geolip_lib.attention import plots, resilience_table
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit

ARCHS = ["vanilla_attn", "pure_relay", "hybrid"]




@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(0)


# ------------------------------------------------------------------ notebook 12
@pytest.fixture(scope="module")
def depth_df(rng):
    return pd.DataFrame([{"arch": a, "depth": d, "cv_n": 0.2 + 0.01 * d * rng.random(),
                          "cos_to_input": 1 - 0.05 * d, "eff_dim_sv_pr": 20 - d}
                         for a in ARCHS for d in (1, 2, 4)])


@pytest.mark.parametrize("with_intervals", [False, True])
def test_depth_sweep(depth_df, with_intervals):
    ivs = depth_df.assign(lo=depth_df.cv_n - 0.01, hi=depth_df.cv_n + 0.01)[["arch", "depth", "lo", "hi"]]
    fig = plots.depth_sweep(depth_df, 0.21, cv_intervals=ivs if with_intervals else None)
    assert [ax.get_title() for ax in fig.axes] == ["pentachoron CV (unit rows)", "cosine to input",
                                                  "effective dim (singular-value PR)"]
    assert all(ax.get_xlabel() == "depth (layers)" for ax in fig.axes)
    assert [ax.get_ylabel() for ax in fig.axes] == ["cv_n", "cos_to_input", "eff_dim_sv_pr"]
    assert fig.get_suptitle().startswith("Stacked mixers at random init")
    assert ("95 %" in fig.get_suptitle()) is with_intervals
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert set(ARCHS) <= set(labels) and "Gaussian input" in labels
    check_figure(fig, 3)


def test_interleaved():
    df = pd.DataFrame({"step": [1, 2, 3, 4], "type": ["attn", "hybrid"] * 2, "cv_n": [0.2, 0.21, 0.22, 0.2],
                       "cos_to_input": [0.9, 0.8, 0.7, 0.6]})
    fig = plots.interleaved(df)
    assert [ax.get_title() for ax in fig.axes] == ["interleaved stack: cv_n", "interleaved stack: cos_to_input"]
    assert all(ax.get_xlabel() == "layer" for ax in fig.axes)
    check_figure(fig, 2)


@pytest.mark.parametrize("with_intervals", [False, True])
def test_causal_intervention(with_intervals):
    df = pd.DataFrame([{"arch": a, "layers": d, "other_delta_norm": 0.0 if a == "pure_relay" else 0.1 * d}
                       for d in (1, 4) for a in ARCHS])
    if with_intervals:
        df = df.assign(lo=df.other_delta_norm * 0.9, hi=df.other_delta_norm * 1.1)
    fig = plots.causal_intervention(df)
    ax = fig.axes[0]
    assert ax.get_title().startswith("causal intervention on token 0")
    assert ax.get_xlabel() == "mixer" and ax.get_ylabel() == "mean |Δ| of tokens 1..S-1"
    assert ax.get_yscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ARCHS
    assert len(ax.patches) == 6  # 3 mixers x 2 depths
    check_figure(fig, 1)


def test_throughput_and_seq_scaling():
    thr = pd.DataFrame({"ms": [0.5, 0.4, 0.9], "params": [4096, 3000, 9000]}, index=pd.Index(ARCHS, name="arch"))
    fig = plots.throughput(thr, batch=2, seq_len=64, device="cpu")
    assert [ax.get_title() for ax in fig.axes] == ["throughput, B=2 S=64 (cpu)", "parameters per layer"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["ms / forward (median)", "parameters"]
    check_figure(fig, 2)
    scale = pd.DataFrame({"hybrid_ms": [1.0, 2.0, 5.0], "attn_ms": [0.5, 1.5, 6.0]}, index=pd.Index([64, 128, 256], name="S"))
    fig = plots.seq_scaling(scale, device="cpu")
    ax = fig.axes[0]
    assert ax.get_title() == "sequence-length scaling (cpu)"
    assert ax.get_xlabel() == "sequence length S" and ax.get_ylabel() == "ms / forward"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["64", "128", "256"]
    check_figure(fig, 1)


# ------------------------------------------------------------------ notebook 13
@pytest.fixture(scope="module")
def head_mean(rng):
    rows = []
    for dim, heads in ((32, 1), (32, 4), (64, 2)):
        for seed in (0, 1, 2):
            for phase in ("pre", "mid", "post"):
                for g in ("Q_h*", "act_Q_h*", "act_headout_h*", "act_post_full"):
                    rows.append({"dim": dim, "heads": heads, "head_dim": dim // heads, "seed": seed, "phase": phase,
                                 "group": g, "cv": 0.2 + 0.05 * rng.random()})
    return pd.DataFrame(rows)


def test_cv_vs_head_dim(head_mean):
    post = head_mean[(head_mean.phase == "post") & head_mean.group.isin(["Q_h*", "act_Q_h*", "act_headout_h*"])]
    fig = plots.cv_vs_head_dim(post, col_wrap=2)
    assert [ax.get_title() for ax in fig.axes] == ["Q_h*", "act_Q_h*", "act_headout_h*"]  # the 4th panel removed
    assert all(ax.get_xlabel() == "head_dim" and ax.get_ylabel() == "CV" for ax in fig.axes)
    assert fig.axes[0].get_xscale() == "log"
    assert fig.get_suptitle().startswith("post-training CV vs head_dim")
    check_figure(fig, 3)


def test_cv_vs_head_dim_two_modes_and_labelled_bands(head_mean):
    post = head_mean[(head_mean.phase == "post") & head_mean.group.isin(["Q_h*", "act_Q_h*"])]
    both = pd.concat([post.assign(mode="varied"), post.assign(mode="fixed", cv=post.cv + 0.01)])
    bands = {"project": (0.20, 0.23), "seed 002": (0.13, 0.30)}
    fig = plots.cv_vs_head_dim(both, col_wrap=2, bands=bands)
    ax = fig.axes[0]
    assert len({p.get_facecolor()[:3] for p in ax.patches}) == 2  # both bands shaded, in two colours
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    assert names == ["project: 0.20–0.23", "seed 002: 0.13–0.30"]
    entries = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "varied" in entries and "fixed" in entries  # a line style per mode
    assert "bands shaded" in fig.get_suptitle() and "varied solid / fixed dashed" in fig.get_suptitle()
    varied = [ln for ln in ax.get_lines() if ln.get_label() == "varied"]
    assert varied and varied[0].get_linestyle() == "-"  # the project's mode draws solid
    check_figure(fig, 2)
    traj = head_mean[head_mean.group.isin(["act_Q_h*"])]
    fig = plots.cv_trajectory(traj, bands=bands)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == names
    check_figure(fig, 1)


def test_cv_trajectory(head_mean):
    traj = head_mean[head_mean.group.isin(["act_Q_h*", "act_headout_h*", "act_post_full"])]
    fig = plots.cv_trajectory(traj)
    assert [ax.get_title() for ax in fig.axes] == ["act_Q_h*", "act_headout_h*", "act_post_full"]
    assert all(ax.get_xlabel() == "training phase" and ax.get_ylabel() == "CV" for ax in fig.axes)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["pre", "mid", "post"]
    assert fig.get_suptitle().startswith("activation CV before / mid / after training")
    check_figure(fig, 3)


# ------------------------------------------------------------------ notebook 14
def test_resilience():
    fig = plots.resilience(resilience_table([1.0, 10.0, 100.0]))
    assert [ax.get_title() for ax in fig.axes] == ["dot-product score", "Gram score (true match: det G = 0)"]
    assert all(ax.get_xlabel() == "noise key magnitude m" for ax in fig.axes)
    assert [ax.get_ylabel() for ax in fig.axes] == ["q · k", "det G (= −score)"]
    check_figure(fig, 2)


@pytest.fixture(scope="module")
def final(rng):
    return pd.DataFrame([{"attention": a, "seed": s, "acc_copied": 0.6 + 0.1 * rng.random(),
                          "acc_copied_init": 0.12, "ms_per_step": 1.0, "memory_MiB": 0.1}
                         for a in ("standard", "triple") for s in (0, 1, 2)])


def test_loss_curves():
    curves = pd.DataFrame([{"attention": a, "seed": s, "step": st, "loss": 2.0 / st + 0.01 * s}
                           for a in ("standard", "triple") for s in (0, 1) for st in (1, 2, 3, 4)])
    fig = plots.loss_curves(curves, loss_floor=0.9, uniform=2.08)
    ax = fig.axes[0]
    assert ax.get_title() == "copy task: training loss (mean ± sd over 2 seeds)"
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == "cross-entropy (nats)"
    check_figure(fig, 1)


@pytest.mark.parametrize("with_intervals", [False, True])
def test_copy_accuracy(final, with_intervals):
    ivs = {"standard": (0.55, 0.75), "triple": (0.5, 0.8)} if with_intervals else None
    fig = plots.copy_accuracy(final, chance=0.125, intervals=ivs)
    ax = fig.axes[0]
    assert ax.get_title() == "after training"
    assert ax.get_xlabel() == "attention" and ax.get_ylabel() == "accuracy on the copied half"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["standard", "triple"]
    labels = set(ax.get_legend_handles_labels()[1])
    assert {"seed", "at init (mean)", "chance"} <= labels and ("95 % interval (seeds)" in labels) is with_intervals
    check_figure(fig, 1)


def test_cost_per_step():
    cost = pd.DataFrame({"ms_per_step": [1.0, 1.6], "memory_MiB": [0.2, 0.35]},
                        index=pd.Index(["standard", "triple"], name="attention"))
    fig = plots.cost_per_step(cost, device="cpu", memory_kind="autograd_saved")
    assert [ax.get_title() for ax in fig.axes] == ["time per step (cpu)", "memory per step (autograd_saved)"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["ms / step (median)", "MiB"]
    check_figure(fig, 2)


def test_every_plot_function_is_drawn_here():
    drawn = {"depth_sweep", "interleaved", "causal_intervention", "throughput", "seq_scaling", "cv_vs_head_dim",
             "cv_trajectory", "resilience", "loss_curves", "copy_accuracy", "cost_per_step"}
    assert {n for n in plots.__all__ if callable(getattr(plots, n))} == drawn
