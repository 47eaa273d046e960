"""Smoke tests of geolip_lib.probes.plots: every figure drawn from a small synthetic fixture."""
from __future__ import annotations

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from geolip_lib import metrics as M  # noqa: E402
from geolip_lib import results  # noqa: E402

from tests.figure_checks import check_figure  # noqa: E402
from geolip_lib.probes import plots  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    E = rng.standard_normal((200, 12))
    G = rng.standard_normal((200, 12))
    vols = {k: rng.gamma(4, 1, 120) for k in ("embedding", "gaussian", "sphere", "random_init", "random_init_gaussian")}
    vols["embedding"][3] = np.nan  # a degenerate simplex
    return {
        "norms": np.linalg.norm(E, axis=1),
        "cosines": {"embedding": M.pairwise_cosines(E[:40]), "gaussian": M.pairwise_cosines(G[:40])},
        "eigenvalues": {"embedding": M.covariance_eigenvalues(E), "gaussian": M.covariance_eigenvalues(G)},
        "volumes": vols,
        "cvs": {k: float(np.nanstd(v) / np.nanmean(v)) for k, v in vols.items()},
    }


def _titles(fig) -> list[str]:
    return [a.get_title() for a in fig.axes]


def test_terrain_map(data):
    fig = plots.terrain_map(data["norms"], data["cosines"], data["eigenvalues"], data["volumes"],
                            title="toy: embedding terrain", volume_ratio=0.9)
    assert len(fig.axes) == 4
    t = _titles(fig)
    assert t[0] == "Row-norm distribution" and t[1].startswith("Pairwise cosine") and t[2] == "Covariance eigenspectrum"
    assert "0.900" in t[3]
    assert [a.get_xlabel() for a in fig.axes] == ["L2 norm", "cosine", "component", "log10 volume"]
    assert fig.axes[2].get_ylabel() == "eigenvalue" and fig.axes[2].get_yscale() == "log"
    assert fig._suptitle.get_text() == "toy: embedding terrain"
    # the legend of the spectrum names the PR of each full spectrum
    labels = [t.get_text() for t in fig.axes[2].get_legend().get_texts()]
    pr = M.participation_ratio_from_eigenvalues(data["eigenvalues"]["embedding"])
    assert labels[0] == f"embedding (PR {pr:.1f})"
    check_figure(fig, close=False)


def test_terrain_map_without_volumes(data):
    fig = plots.terrain_map(data["norms"], data["cosines"], data["eigenvalues"], {"embedding": np.full(5, np.nan)})
    assert len(fig.axes) == 4 and "no non-degenerate" in fig.axes[3].texts[0].get_text()
    check_figure(fig, close=False)


def test_pentachoron_volumes(data):
    ivs = {k: M.intervals.bootstrap(v, M.intervals.cv, n_boot=200) for k, v in data["volumes"].items()}
    fig = plots.pentachoron_volumes(data["volumes"], data["cvs"], ivs, title="toy volumes")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_title() == "toy volumes" and ax.get_xlabel() == "volume / mean volume" and ax.get_ylabel() == "density"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [lab.split(":")[0] for lab in labels] == ["embedding", "gaussian", "sphere", "random_init"]
    assert all("[" in lab for lab in labels)  # CV with its interval
    check_figure(fig, close=False)


def test_digits_heatmap():
    C = np.corrcoef(np.random.default_rng(1).standard_normal((10, 30)))
    iv = M.intervals.Interval(-0.8, -0.2, "toy")
    fig = plots.digits_heatmap(C, -0.5, iv)
    assert len(fig.axes) == 2  # heatmap + colour bar
    ax = fig.axes[0]
    assert ax.get_title().startswith("Digit cosine (|i−j| corr") and "[" in ax.get_title()
    assert ax.get_xlabel() == "digit" and ax.get_ylabel() == "digit"
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(d) for d in range(10)]
    assert plots.digits_heatmap(C).axes[0].get_title() == "Digit cosine"
    check_figure(fig, close=False)


def test_categories_heatmap():
    C = np.array([[1.0, 0.2, -0.1], [0.2, 1.0, 0.4], [-0.1, 0.4, 1.0]])
    fig = plots.categories_heatmap(C, ["animals", "colors", "food"])
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert ax.get_title() == "Category-centroid cosine" and ax.get_xlabel() == "category"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["animals", "colors", "food"]
    assert len(ax.texts) == 9  # annotated cells
    check_figure(fig, close=False)


def test_layers():
    g = {"layer": [0, 1, 2], "mean_norm": [1.0, 2.0, 3.0], "std_norm": [0.1, 0.2, 0.1],
         "mean_cos": [0.1, 0.3, 0.5], "std_cos": [0.05, 0.05, 0.1]}
    fig = plots.layers({"encoder": g, "decoder": g})
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title().startswith("Mean token norm by layer")
    assert fig.axes[1].get_title().startswith("Mean pairwise cosine by layer")
    assert [a.get_xlabel() for a in fig.axes] == ["layer", "layer"]
    assert [a.get_ylabel() for a in fig.axes] == ["norm", "cosine"]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["encoder", "decoder"]
    check_figure(fig, close=False)


def test_position_bias():
    rng = np.random.default_rng(2)
    w = {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias": rng.standard_normal((32, 4)),
         "decoder.block.0.layer.0.SelfAttention.relative_attention_bias": rng.standard_normal((32, 4))}
    fig = plots.position_bias(w)
    heat = [a for a in fig.axes if a.get_title()]
    assert len(fig.axes) == 4 and len(heat) == 2  # two heatmaps + two colour bars
    assert [a.get_title() for a in heat] == ["encoder bias (heads × buckets)", "decoder bias (heads × buckets)"]
    assert all(a.get_xlabel() == "bucket" and a.get_ylabel() == "head" for a in heat)
    check_figure(fig, close=False)
    with pytest.raises(ValueError, match="weights"):
        plots.position_bias({})


def test_headline_nulls():
    iv = M.intervals.Interval(0.40, 0.44, "toy")
    h = {"cv": results.headline(0.42, interval=iv, label="pentachoron CV",
                                nulls={"gaussian": {"value": 0.30, "interval": M.intervals.Interval(0.28, 0.32, "t")},
                                       "sphere": 0.1}),
         "ratio": results.headline(0.9, interval=(0.85, 0.95), nulls={"gaussian": 1.0}, label="volume ratio"),
         "none": results.headline(None, label="not applicable")}
    fig = plots.headline_nulls(h, title="toy headline")
    assert len(fig.axes) == 2  # the None entry is skipped
    assert [a.get_title(loc="left") for a in fig.axes] == ["pentachoron CV", "volume ratio"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["measured", "gaussian", "sphere"]
    assert fig._suptitle.get_text() == "toy headline"
    check_figure(fig, close=False)
    with pytest.raises(ValueError, match="headline"):
        plots.headline_nulls({"none": h["none"]})


def test_cumulative_variance(data):
    fig = plots.cumulative_variance(data["eigenvalues"], top=8, title="toy cumvar")
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and ax.get_title() == "toy cumvar" and ax.get_xlabel() == "components"
    lines = [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")]
    assert len(lines) == 2 and all(len(ln.get_xdata()) == 8 for ln in lines)  # the first `top` components
    y = lines[0].get_ydata()
    assert np.all(np.diff(y) >= 0) and 0 < y[0] and y[-1] <= 1
    full = plots.cumulative_variance(data["eigenvalues"])  # 12 components < 200: the curves end at 1
    assert [ln.get_ydata()[-1] for ln in full.axes[0].get_lines()[:2]] == [1.0, 1.0]
    k95 = M.dims_for_variance_from_eigenvalues(data["eigenvalues"]["embedding"], 0.95)
    assert lines[0].get_label() == f"embedding ({k95} components for 95%)"
    assert sorted(ln.get_ydata()[0] for ln in ax.get_lines()[2:]) == [0.95, 0.99]  # the seed's two lines
    check_figure(fig, close=False)


def test_encoder_decoder():
    res = {"applicable": True, "source_tokens": ["a", "b", "c", "d"], "target_tokens": ["x", "y", "z"],
           "by_layer": [{"layer": li, "cosine": [0.1 * li, -0.2, 0.3], "mean": (0.1 * li + 0.1) / 3, "n_positions": 3,
                         "seed_mean": (0.1 * li + 0.1) / 3} for li in (0, 1, 2)]}
    ivs = [M.intervals.Interval(-0.2, 0.3, "toy")] * 3
    null = {**res, "by_layer": [{**b, "mean": 0.0} for b in res["by_layer"]]}
    fig = plots.encoder_decoder(res, ivs, null, [{"lo": -0.1, "hi": 0.1}] * 3, title="toy enc-dec")
    a, b = fig.axes
    assert a.get_title() == "Encoder vs decoder: cosine per position" and fig._suptitle.get_text() == "toy enc-dec"
    assert [t.get_text() for t in a.get_xticklabels()] == ["a | x", "b | y", "c | z"]
    assert [t.get_text() for t in a.get_legend().get_texts()] == ["layer 0", "layer 1", "layer 2"]
    assert [t.get_text() for t in b.get_legend().get_texts()] == ["measured", "random init"]
    assert [t.get_text() for t in b.get_xticklabels()] == ["layer 0", "layer 1", "layer 2"]
    check_figure(fig, close=False)
    check_figure(plots.encoder_decoder(res), n_axes=2)  # without intervals or null
