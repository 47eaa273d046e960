"""Smoke tests of geolip_lib.modulators.plots: every figure drawn from a small synthetic
fixture (no model loaded); axes, titles, labels and a non-empty PNG checked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from geolip_lib.modulators import plots
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit





@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(0)


def test_pipeline_summary(rng):
    G = rng.normal(size=(30, 4))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    S = np.clip(G @ G.T + 0.05 * rng.normal(size=(30, 30)), 0, 1)
    S = (S + S.T) / 2
    fig = plots.pipeline_summary(np.sort(rng.random(30))[::-1], 4, S, G, 0.9, rng.uniform(-1, 1, 30))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Wu–Palmer eigenvalues (anchors)", "reconstruction r = 0.900",
                      "Procrustes alignment cosine (anchors)"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["rank", "Wu–Palmer similarity", "cosine"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["eigenvalue", "cosine of eigen-embedding", "anchors"]
    assert fig.get_suptitle().startswith("Procrustes pipeline")
    check_figure(fig, 3)


def _relational():
    bands = [(0.0, 0.05), (0.05, 0.1), (0.1, 0.25), (0.25, 1.0)]
    return {"n_pairs": 500, **{k: {"bands": [{"lo": lo, "hi": hi, "n": 50, "mean_cos": 0.1 * i + off}
                                             for i, (lo, hi) in enumerate(bands)]}
                                for k, off in (("Original", 0.0), ("Procrustes", 0.02))}}


def test_distance_bands():
    fig = plots.distance_bands(_relational(), ["Original", "Procrustes"], "path")
    ax = fig.axes[0]
    assert ax.get_title() == "Mean cosine per WordNet path-similarity band (500 pairs)"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("path similarity band", "mean cosine")
    assert ax.get_legend().get_title().get_text() == "representation"
    check_figure(fig, 1)


def test_correlation_intervals():
    t = pd.DataFrame({"pearson": [0.2, 0.25, 0.1], "lo": [0.18, 0.22, 0.05], "hi": [0.22, 0.27, 0.15]},
                     index=["Original", "Procrustes", "Static"])
    fig = plots.correlation_intervals(t)
    ax = fig.axes[0]
    assert ax.get_title() == "Pearson r with WordNet path similarity (95 % intervals)"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Pearson r", "representation")
    assert [tk.get_text() for tk in ax.get_yticklabels()] == ["Static", "Procrustes", "Original"]
    assert ax.get_legend_handles_labels()[1] == ["Original"]
    check_figure(fig, 1)


def test_training_summary(rng):
    A = 0.01 + np.cumsum(rng.normal(0, 1e-4, size=(9, 2)), axis=0)
    fig = plots.training_summary(A, list(rng.random(8)), [{"step": 4, "loss": 0.5}, {"step": 8, "loss": 0.4}], A[-1])
    assert [ax.get_title() for ax in fig.axes] == ["alpha per layer", "loss", "final alpha per layer"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["step", "step", "layer"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["alpha", "loss", "alpha"]
    assert "L0" in fig.axes[0].get_legend_handles_labels()[1]
    check_figure(fig, 3)


def test_alpha_sweep():
    a = [0.0, 0.01, 0.29154, 0.5]
    sweep = pd.DataFrame({"pearson": [0.1, 0.11, 0.12, 0.1], "pearson_lo": [0.08] * 4, "pearson_hi": [0.14] * 4,
                          "gradient": [0.01, 0.012, 0.02, 0.03], "preservation": [1.0, 0.999, 0.97, 0.9],
                          "preservation_lo": [1.0, 0.998, 0.96, 0.88], "preservation_hi": [1.0, 1.0, 0.98, 0.92]},
                         index=pd.Index(a, name="alpha"))
    fig = plots.alpha_sweep(sweep)
    assert [ax.get_title() for ax in fig.axes] == ["pearson", "gradient", "preservation"]
    assert all(ax.get_xlabel() == "alpha" for ax in fig.axes)
    assert "95 % interval" in fig.axes[0].get_legend_handles_labels()[1]
    assert "95 % interval" not in fig.axes[1].get_legend_handles_labels()[1]  # no interval columns for gradient
    check_figure(fig, 3)


def test_field_summary(rng):
    cvh = [{"step": s, "cv": 0.2 + 0.01 * s, "in_band": True} for s in range(0, 8, 2)]
    fig = plots.field_summary(cvh, 0.21, 0.05, rng.uniform(0.001, 0.35, size=(2, 3)), [1, 2, 4], list(rng.random(8)))
    assert [ax.get_title() for ax in fig.axes] == ["pentachoron CV (active dims)", "final alpha (layer × expert)",
                                                   "training loss"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["step", "expert", "step"]
    assert [tk.get_text() for tk in fig.axes[1].get_xticklabels()] == ["k1", "k2", "k4"]
    check_figure(fig, 3)


def test_field_summary_without_cv_checks():
    fig = plots.field_summary([], 0.21, 0.05, np.full((1, 1), 0.01), [4], [])
    check_figure(fig, 3)


def test_lift_intervals():
    frame = pd.DataFrame({"training": ["project", "seed"], "pairs": ["all entries", "3000 subset"],
                          "pearson_lift": [0.5, 1.2], "pearson_lo": [0.2, 0.9], "pearson_hi": [0.8, 1.6],
                          "spearman_lift": [0.4, 1.0], "spearman_lo": [0.1, 0.7], "spearman_hi": [0.7, 1.4]})
    fig = plots.lift_intervals(frame, {"pearson": 1.52, "spearman": 1.89})
    assert len(fig.axes) == 2
    xs = [float(l.get_xdata()[0]) for l in fig.axes[0].lines if len(l.get_xdata()) == 2]
    assert 152.0 in xs and 0.0 in xs  # the seed's lift and zero as reference lines, in percent
    check_figure(fig, 2)


@pytest.mark.parametrize("found", [True, False])
def test_phase_boundary(found):
    from geolip_lib.metrics.intervals import Interval

    x = np.linspace(0, 0.5, 6)
    sweep = {"alphas": x, "seeds": [42, 1, 2], "pearson": np.tile(x, (3, 1)), "preservation": 1 - np.tile(x, (3, 1))}
    fit = {"x": x.tolist(), "mean": x.tolist(), "sem": [0.01] * 6, "curve_x": x.tolist(), "curve_y": x.tolist(),
           "breakpoint": 0.27, "null_fit": x.tolist(), "null": "quadratic"}
    res = {"found": found, "location": 0.27 if found else None, "p_value": 0.01 if found else 0.6,
           "interval": Interval(0.2, 0.3, "test") if found else None, "fit": fit}
    fig = plots.phase_boundary(sweep, res, "pearson")
    assert len(fig.axes) == 2
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert any("seed's constant 0.29154" in t for t in labels)
    assert any(("change point 0.270" in t) if found else ("not significant" in t) for t in labels)
    assert any("no-change fit (quadratic)" in t for t in labels)
    check_figure(fig, 2)
