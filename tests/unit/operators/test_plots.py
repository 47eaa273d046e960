"""Smoke tests of geolip_lib.operators.plots (and .tables, .headline_samples): every figure
drawn from a small synthetic fixture (no model loaded); axes, titles, labels and a non-empty
PNG checked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from geolip_lib import operators as op
from geolip_lib.metrics import intervals
from geolip_lib.operators import plots, tables
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit



def _ops(L: int, seed: int, group: str = "decoder.self"):
    g = torch.Generator().manual_seed(seed)
    Wq, Wk = torch.randn(L, 4 * 4, 24, generator=g), torch.randn(L, 2 * 4, 24, generator=g)
    return op.measure_layers(Wq, Wk, 4, 2, top_k=3, layers=list(range(1, 2 * L, 2)), group=group)


@pytest.fixture(scope="module")
def analyses():
    """Two groups (5 and 2 layers); the random-init null covers only the first."""
    ops = {"decoder.self": _ops(5, 0), "decoder.cross": _ops(2, 1, "decoder.cross")}
    trained = {g: op.analyse(o, ks=(2, 4, 8)) for g, o in ops.items()}
    null = {"decoder.self": op.analyse(_ops(5, 7), ks=(2, 4, 8))}
    return ops, trained, null




def test_cosine_matrices(analyses):
    _, trained, null = analyses
    fig = plots.cosine_matrices(trained, null)
    heat = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in heat] == ["decoder.self · trained", "decoder.self · random init",
                                               "decoder.cross · trained", "decoder.cross · random init: not measured"]
    assert all(ax.get_xlabel() == ax.get_ylabel() == "layer" for ax in heat[:3])
    assert fig.get_suptitle().startswith("Operator cosine between layers")
    check_figure(fig, 4 + 3)  # four panels + three colour bars


def test_cosine_matrices_without_groups():
    fig = plots.cosine_matrices({}, {})
    assert fig.axes[0].get_title() == "no attention group measured"
    check_figure(fig, 1)


def test_sign_agreement(analyses):
    _, trained, null = analyses
    fig = plots.sign_agreement(trained, null, top_k=8)
    left, right = fig.axes
    assert left.get_title() == "sign agreement with anchor, by depth"
    assert right.get_title().startswith("fraction of positive eigenvalues")
    assert left.get_xlabel() == right.get_xlabel() == "layer"
    assert (left.get_ylabel(), right.get_ylabel()) == ("fraction agreeing", "fraction > 0")
    labels = left.get_legend_handles_labels()[1]
    assert "decoder.self (top-8)" in labels and "decoder.self random init" in labels
    check_figure(fig, 2)


def test_principal_angles(analyses):
    _, trained, null = analyses
    fig = plots.principal_angles(trained, null, top_k=3)
    ax = fig.axes[0]
    assert ax.get_title() == "top-3 eigen-subspace principal angles to the anchor"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("layer", "mean angle (deg)")
    assert "anchor (layer 9)" in ax.get_legend_handles_labels()[1]
    check_figure(fig, 1)


def test_heldout_cosine():
    rng = np.random.default_rng(0)
    cos, cos_null = np.tanh(rng.normal(0.5, 0.2, 300)), np.tanh(rng.normal(0, 0.2, 300))
    fig = plots.heldout_cosine(cos, cos_null, intervals.bootstrap(cos, what="tokens"))
    ax = fig.axes[0]
    assert ax.get_title() == "per-token cosine(native, projected), held-out tokens"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("cosine", "density")
    assert "95 % interval of the mean" in ax.get_legend_handles_labels()[1]
    check_figure(fig, 1)


@pytest.mark.parametrize("with_digits", [True, False])
def test_projection_summary(with_digits):
    rng = np.random.default_rng(1)
    a = rng.uniform(-0.5, 0.9, 400)
    va = rng.lognormal(0, 1, 50)
    fig = plots.projection_summary(
        name_large="big", name_small="small", cos=rng.uniform(-1, 1, 200), cos_null=rng.uniform(-1, 1, 200),
        rel_a=a, rel_b=a + rng.normal(0, 0.1, 400), rel_r=0.9, digit_diff=rng.normal(0, 0.1, (10, 10)) if with_digits
        else None, digit_r=0.5 if with_digits else None, vol_a=va, vol_b=va * 1.1, vol_corr=1.0, vol_ratio=1.1,
        all_cos=rng.uniform(-1, 1, 1000), residual_eigs=np.sort(rng.uniform(0, 1, 32))[::-1])
    assert fig.get_suptitle() == "big → small: PCA + Procrustes projection"
    panels = fig.axes[:6]
    assert panels[0].get_title() == "per-token cosine(native, projected)"
    assert panels[1].get_title() == "relational structure (r=0.9000)"
    assert panels[1].get_xlabel() == "native small pairwise cosine"
    assert panels[1].get_ylabel() == "projected big pairwise cosine"
    assert panels[2].get_title() == ("digit cosine diff, native − projected (r=0.500)" if with_digits
                                     else "digits: not single tokens")
    assert panels[3].get_title().startswith("pentachoron volumes") and panels[3].get_xscale() == "log"
    assert (panels[4].get_xlabel(), panels[4].get_ylabel()) == ("token id", "cosine alignment")
    assert panels[5].get_title() == "eigenspectrum of residual (native − projected)"
    check_figure(fig, 7 if with_digits else 6)  # the heatmap adds a colour bar


def test_tables_and_headline_samples(analyses):
    ops, trained, null = analyses
    assert [r["group"] for r in tables.group_rows(ops)] == ["decoder.self", "decoder.cross"]
    cos = tables.cosine_table(trained, null)
    assert np.isnan(cos.loc[1, "adjacent mean (random init)"]) and cos.loc[0, "diag (should be 1)"] == pytest.approx(1)
    assert len(tables.rescale_table(trained, null)) == len(tables.principal_angle_table(trained, null)) == 7
    assert set(tables.sign_table(trained, null)["k"]) == {2, 4, 8}
    rows = tables.verdict_rows(trained, null)
    assert [v["project's verdict (random init)"] == "" for v in rows] == [False, True]
    # the seed's arithmetic (every layer, anchor included) beside the project's (anchor excluded)
    a5 = trained["decoder.self"]
    assert rows[0][tables.SEED_MEAN] == pytest.approx(np.asarray(a5["cos_to_anchor"]).mean(), abs=1e-12)
    assert rows[0][tables.SEED_MEAN] == pytest.approx((4 * rows[0][tables.PROJECT_MEAN] + 1) / 5, abs=1e-12)
    # headline items: layer pairs for the 5-layer stack, (pair, head) cells for the 2-layer one
    s5 = op.headline_samples(ops["decoder.self"], k=4)
    s2 = op.headline_samples(ops["decoder.cross"], k=4)
    assert len(s5["cos_to_anchor"]["values"]) == 4 and "each the mean over 4 heads" in s5["cos_to_anchor"]["what"]
    assert len(s2["cos_to_anchor"]["values"]) == 4 and s2["cos_to_anchor"]["what"].startswith("(layer pair, head)")
    a5 = trained["decoder.self"]
    assert np.mean(s5["cos_to_anchor"]["values"]) == pytest.approx(a5["mean_cos_to_anchor"], abs=1e-12)
    assert np.mean(s5["cos_adjacent"]["values"]) == pytest.approx(a5["adjacent_mean"], abs=1e-12)
    assert np.mean(s5["sign_agree"]["values"]) == pytest.approx(a5["sign_agreement"][4]["mean"], abs=1e-12)
    assert np.mean(s5["pa_deg"]["values"]) == pytest.approx(np.asarray(a5["principal_angles"]["mean_deg"])[:-1].mean())


def test_spectral_vs_operator_figure_and_records(analyses):
    ops, trained, null = analyses
    fig = plots.spectral_vs_operator(trained, null)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["decoder.self · cosine to the anchor (layer 9)", "decoder.self · all layer pairs",
                      "decoder.cross · cosine to the anchor (layer 3)", "decoder.cross · all layer pairs"]
    assert fig.get_suptitle().startswith("Operator cosine vs spectral cosine")
    left, right = fig.axes[:2]
    assert (right.get_xlabel(), right.get_ylabel()) == ("operator cosine", "spectral cosine")
    assert {"operator, trained", "spectral, trained", "operator, random init", "spectral, random init"} <= set(
        left.get_legend_handles_labels()[1])
    # the scatter shows every distinct layer pair: 10 for the 5-layer stack, trained and null
    assert [len(c.get_offsets()) for c in right.collections] == [10, 10]
    check_figure(fig, 4)
    check_figure(plots.spectral_vs_operator({}, {}), 1)
    # records: value = mean of the bootstrapped items, random-init null attached where measured
    ivs = {g: {k: intervals.bootstrap(s["values"], n_boot=200, what=s["what"]) for k, s in op.headline_samples(o).items()}
           for g, o in ops.items()}
    nivs = {"decoder.self": {k: intervals.bootstrap(s["values"], n_boot=200, what=s["what"])
                             for k, s in op.headline_samples(_ops(5, 7)).items()}}
    rec = tables.spectral_records(trained, null, ivs, nivs)
    a5 = trained["decoder.self"]
    e = rec["decoder.self"]["spectral_cos_to_anchor"]
    assert e["value"] == pytest.approx(a5["spectral"]["mean_cos_to_anchor"])
    assert e["interval"]["lo"] <= e["value"] <= e["interval"]["hi"]
    assert e["nulls"]["random_init"]["value"] == pytest.approx(null["decoder.self"]["spectral"]["mean_cos_to_anchor"])
    d = rec["decoder.self"]["spectral_minus_operator"]["value"]
    assert d == pytest.approx(a5["spectral"]["mean_cos_to_anchor"] - a5["mean_cos_to_anchor"])
    assert rec["decoder.cross"]["operator_cos_to_anchor"]["nulls"] == {}
    table = tables.spectral_table(rec)
    assert list(table["group"]) == ["decoder.self"] * 5 + ["decoder.cross"] * 5
    assert list(table["quantity"][:2]) == ["operator cos→anchor", "spectral cos→anchor"]
    assert set(table["random init [95 % interval]"][5:]) == {"–"}
    assert all("[" in v for v in table["trained [95 % interval]"][:5])
