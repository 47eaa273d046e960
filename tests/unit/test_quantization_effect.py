"""quantization_effect.table: pairs found by weight digests, differences in interval units."""
from __future__ import annotations

import json
import math

import pytest

from geolip_lib import quantization_effect as QE

pytestmark = pytest.mark.unit

FILES = {"model.safetensors": {"sha256": "a" * 64, "bytes": 10}}


def _h(value, lo=None, hi=None, label=None):
    return {"value": value, "interval": None if lo is None else {"lo": lo, "hi": hi}, "label": label, "fmt": ".4g"}


def _job(root, nb, job, headline, weights):
    d = root / nb / job
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps({
        "notebook": nb, "model": job, "headline": headline, "metrics": {},
        "provenance": {"models": [{"name": job, "weights": weights}]}}))


def _simulated(files=FILES):
    return {"dequantized": True, "simulated": True, "quantization": {"w": "Q4_1"},
            "quantization_summary": {"Q4_1": 1}, "gguf_file": None, "rounded_from": files}


@pytest.fixture
def root(tmp_path):
    nb = "01_embedding_terrain"
    _job(tmp_path, nb, "fp", {"pr": _h(10.0, 9.0, 11.0), "cv": _h(0.2, 0.1, 0.3), "n": _h(5, 5, 5),
                              "gone": _h(None), "same": _h(3, 3, 3)}, FILES)
    # named unlike the fp32 job on purpose: pairs come from the digests
    _job(tmp_path, nb, "zz-rounded", {"pr": _h(10.5, 9.4, 11.6, "PR"), "cv": _h(0.1, 0.0, 0.2), "n": _h(6, 6, 6),
                                      "gone": _h(1.0, 0.0, 2.0), "same": _h(3, 3, 3)}, _simulated())
    _job(tmp_path, nb, "other", {"pr": _h(1.0, 0.0, 2.0)}, {"model.safetensors": {"sha256": "b" * 64, "bytes": 1}})
    return tmp_path


def test_rows_and_differences(root):
    t = QE.table(root).set_index("headline")
    assert list(QE.table(root).columns) == QE.COLUMNS
    assert set(t.index) == {"pr", "cv", "n", "same"}  # 'gone' is no number on the fp32 side
    assert (t["fp32 model"] == "fp").all() and (t["quantized model"] == "zz-rounded").all()
    assert t.loc["pr", "difference"] == pytest.approx(0.5)
    assert t.loc["pr", "difference / half-width"] == pytest.approx(0.5)  # half-width of [9, 11] is 1
    assert t.loc["pr", "relative difference"] == pytest.approx(0.05)
    assert t.loc["same", "relative difference"] == 0.0
    assert t.loc["cv", "difference / half-width"] == pytest.approx(-1.0)
    assert t.loc["n", "difference / half-width"] == math.inf  # an exact count that moved
    assert math.isnan(t.loc["same", "difference / half-width"])  # exact and unmoved
    assert t.loc["pr", "fp32"].startswith("10") and "[" in t.loc["pr", "fp32"]
    assert (t["scheme"] == "Q4_1").all()


def test_no_pair_without_matching_files(tmp_path):
    nb = "06_qk_operators"
    _job(tmp_path, nb, "fp", {"x": _h(1.0, 0.0, 2.0)}, FILES)
    _job(tmp_path, nb, "q", {"x": _h(1.5, 0.5, 2.5)}, _simulated({"model.safetensors": {"sha256": "c" * 64}}))
    t = QE.table(tmp_path)
    assert t.empty and list(t.columns) == QE.COLUMNS


def test_failed_and_linked_jobs_are_not_read(root, tmp_path_factory):
    nb = root / "01_embedding_terrain"
    (nb / "fp").rename(nb / "fp.failed")
    assert QE.table(root).empty
    outside = tmp_path_factory.mktemp("outside")
    _job(outside, "x", "fp", {"pr": _h(10.0, 9.0, 11.0)}, FILES)
    (nb / "fp").symlink_to(outside / "x" / "fp")
    assert QE.table(root).empty  # a job folder that is a link is never followed


def test_other_notebooks_ignored_unless_asked(root):
    assert QE.table(root, notebooks=("02_weight_topology",)).empty
    assert len(QE.pairs(root)) == 1


def test_relative_root(root, monkeypatch):
    monkeypatch.chdir(root.parent)
    assert len(QE.table(root.name)) == 4


def test_the_report_section_says_an_exact_value_moved_in_words_not_inf(root):
    from geolip_lib.report.sections import quantization_html
    page = quantization_html(root)
    assert "How far quantization moves the headlines" in page
    assert "+moved (exact)" in page and ">inf<" not in page and ">-inf<" not in page
    assert "<td>–</td>" in page  # exact and unmoved: no ratio


def test_the_threshold_bound_from_the_dequantized_weights_holds_the_unquantized_fraction():
    """Q4_1 moves each weight at most half its block's step, so the fraction |w| < 0.1 of the
    fp32 weights lies within the bound computed from the dequantized weights alone."""
    import numpy as np
    from geolip_lib.models.quantize import round_trip
    from geolip_lib.quantization_effect import threshold_bound
    for seed, scale in ((0, 0.05), (1, 0.1), (2, 0.3)):
        w = np.random.default_rng(seed).normal(0, scale, (64, 128)).astype(np.float32)
        b = threshold_bound(round_trip(w))
        true = float((np.abs(w) < 0.1).mean())
        assert b["lo"] <= true <= b["hi"], (b, true)
        assert b["hi"] - b["lo"] < 0.5 and b["near"] > 0  # a real bound, not [0, 1]
    with pytest.raises(ValueError, match="rows divide into blocks of 32"):
        threshold_bound(np.zeros((4, 33)))


def test_q_sparsity_bounds_of_a_q4_1_copy_hold_the_fp32_fraction():
    """A simulated Q4_1 copy's bound, read from the dequantized blocks alone, holds the fp32 model's Q
    sparsity in every scope; an unquantized model has no bound (nothing is claimed for it)."""
    from geolip_lib import models
    from geolip_lib.families import catalog
    from geolip_lib.weights import TensorStore

    lm = models.load("tiny-bert")
    store = TensorStore(lm.weights_dir)
    cat = catalog(store, config=lm.config, family=lm.family)
    assert QE.q_sparsity_bounds(lm, store, cat) == {}
    qlm = models.load("tiny-bert", quantize="q4_1")
    qstore = TensorStore(qlm.weights_dir)
    qcat = catalog(qstore, config=qlm.config, family=qlm.family)
    bounds = QE.q_sparsity_bounds(qlm, qstore, qcat)
    assert bounds and QE.q4_1_rounded(qlm)
    for thr in (0.1, 0.05):
        bounds = QE.q_sparsity_bounds(qlm, qstore, qcat, threshold=thr)
        for scope, b in bounds.items():
            qs = [blk.q for blk in cat.attention_blocks() if f"{blk.stack}/{blk.attn}" == scope]
            below = sum(int((store.get(q).abs() < thr).sum()) for q in qs)
            n = sum(store.get(q).numel() for q in qs)
            assert b["n"] == n and b["lo"] <= below / n <= b["hi"], (scope, thr, b, below / n)
