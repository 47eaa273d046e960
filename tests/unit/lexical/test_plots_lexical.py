"""Smoke tests of geolip_lib.lexical.plots (and .tables): every figure drawn from a small
synthetic fixture (no model, no WordNet); axes, titles, labels and a non-empty PNG checked."""
from __future__ import annotations

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from geolip_lib.lexical import plots, tables  # noqa: E402
from geolip_lib.metrics.intervals import Interval, format_value  # noqa: E402
from tests.figure_checks import check_figure  # noqa: E402

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def battery():
    rng = np.random.default_rng(0)
    sims = rng.choice([0.05, 0.1, 0.2, 0.5, 1.0], 500)
    enc = sims + 0.1 * rng.normal(size=500)
    vols = rng.gamma(4, 1, (2, 80))
    vols[0, 3] = np.nan
    decay = [{"depth": d, "static_cos": 0.3 / d, "encoder_cos": 0.6 / d} for d in (1, 2, 3)]
    lex = [{"lexname": f"noun.cat{k}", "static_intra": 0.1 * k, "encoder_intra": 0.2 * k} for k in range(4)]
    bands = [{"band": "[0.50,1.00]", "n": 40, "static_cos": 0.2, "encoder_cos": 0.5},
             {"band": "[0.00,0.50)", "n": 400, "static_cos": 0.05, "encoder_cos": -0.1}]
    return {"sims": sims, "enc": enc, "static": rng.normal(size=500), "cse": rng.uniform(-1, 1, 60),
            "vols": vols, "decay": decay, "lex": lex, "bands": bands}


def _rows():
    values = {"model": ({"r": 0.3, "cv": 0.5}, {"r": Interval(0.25, 0.35, "t"), "cv": Interval(0.45, 0.55, "t")}),
              "shuffled": ({"r": 0.01}, {"r": Interval(-0.02, 0.04, "t")}),
              "random_init": ({"r": -0.1, "cv": 0.4}, {})}
    return tables.interval_rows(values, ["r", "cv"], labels={"r": "Pearson r"})


def test_wordnet_geometry(battery):
    b = battery
    fig = plots.wordnet_geometry(b["sims"], b["enc"], b["static"], r_enc=0.9, r_static=0.1,
                                 cos_static_encoder=b["cse"], vol_static=b["vols"][0], vol_enc=b["vols"][1],
                                 vol_corr=0.5, decay=b["decay"], lexnames=b["lex"], title="toy × WordNet", max_points=100)
    assert len(fig.axes) == 6 and fig.get_suptitle() == "toy × WordNet"
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0] == "Encoder vs WordNet (r=0.9000)" and titles[1] == "Static vs WordNet (r=0.1000)"
    assert titles[2].startswith("cosine(static, encoder), mean=") and titles[3] == "Pentachoron volumes (r=0.5000)"
    assert titles[4] == "Hypernym chain cosine decay" and titles[5] == "Intra-category cosine by WordNet lexname"
    assert fig.axes[0].get_xlabel() == "WordNet path similarity" and fig.axes[0].get_ylabel() == "encoder cosine"
    assert fig.axes[3].get_xlabel() == "static volume" and fig.axes[4].get_ylabel() == "mean cosine to start"
    assert len(fig.axes[0].collections[0].get_offsets()) == 100  # subsampled
    assert len(fig.axes[3].collections[0].get_offsets()) == 79  # the NaN simplex left out
    check_figure(fig, close=False)


def test_wordnet_geometry_different_widths_and_empty_rows(battery):
    b = battery
    fig = plots.wordnet_geometry(b["sims"], b["enc"], b["static"], r_enc=0.9, r_static=0.1,
                                 cos_static_encoder=np.full(60, np.nan), vol_static=b["vols"][0], vol_enc=b["vols"][1],
                                 vol_corr=float("nan"), decay=[], lexnames=[], title="t")
    assert fig.axes[2].get_title() == "cosine(static, encoder): not defined"
    check_figure(fig, close=False)


def test_interval_forest():
    rows = _rows()
    fig = plots.interval_forest(rows, title="model vs nulls", xlabel="value")
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and ax.get_title() == "model vs nulls"
    assert ax.get_xlabel() == "value" and ax.get_ylabel() == "metric"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Pearson r", "cv"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["model", "shuffled", "random_init"]
    check_figure(fig, close=False)


def test_distance_bands(battery):
    fig = plots.distance_bands(battery["bands"], title="bands")
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and ax.get_title() == "bands"
    assert ax.get_xlabel() == "WordNet path-similarity band" and ax.get_ylabel() == "mean pair cosine"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["[0.00,0.50)", "[0.50,1.00]"]
    check_figure(fig, close=False)


def test_seed_stability():
    rng = np.random.default_rng(1)
    per_seed = [{"enc_pearson": rng.normal(0.3, 0.01), "enc_cv": rng.normal(0.5, 0.02)} for _ in range(5)]
    null = [{"enc_pearson": rng.normal(0, 0.01)} for _ in range(5)]
    fig = plots.seed_stability(per_seed, null, ["enc_pearson", "enc_cv"], title="5 seeds")
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and ax.get_title() == "5 seeds"
    assert ax.get_xlabel() == "metric" and ax.get_ylabel() == "value per seed"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["enc_pearson", "enc_cv"]
    check_figure(fig, close=False)


def test_interval_rows_table_and_nulls():
    rows = _rows()
    assert list(rows["battery"]) == ["model", "shuffled", "random_init", "model", "random_init"]
    assert np.isnan(rows["lo"].iloc[2])  # random_init r has no interval
    wide = tables.interval_table(rows)
    assert list(wide.columns) == ["model", "shuffled", "random_init"] and list(wide.index) == ["Pearson r", "cv"]
    assert wide.loc["Pearson r", "model"] == "0.30 [0.25, 0.35]" and wide.loc["cv", "shuffled"] == "–"
    bat = {"shuffled": ({"r": 0.01, "cv": None}, {"r": Interval(-0.02, 0.04, "t")}), "random_init": ({"r": np.nan}, {})}
    n = tables.nulls("r", bat)
    assert list(n) == ["shuffled"] and n["shuffled"]["value"] == 0.01
    assert tables.nulls("cv", bat) == {}


def test_seed_summary():
    summ = {"r": {"mean": 0.3, "std": 0.01, "min": 0.29, "max": 0.31, "n": 4}}
    df = tables.seed_summary(summ, {"r": Interval(0.28, 0.32, "t")}, {}, {})
    assert df.loc["r", "mean [95 % interval]"] == format_value(0.3, Interval(0.28, 0.32, "t")).strip()
    assert df.loc["r", "mean [95 % interval]"].startswith("0.3")
    assert df.loc["r", "shuffled null: mean [95 % interval]"] == "–" and df.loc["r", "seeds"] == 4
