"""02_weight_topology on the tiny profile: metrics read back and checked for consistency,
headline intervals and nulls, figures shown in the executed notebook."""
import json
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebooks

HEADLINE = ("q_sparsity", "k_sparsity", "q_stable_rank", "qk_pos_frac_first", "mlp_dead_frac", "cross_layer_adj")


def _outputs(m):
    nb = nbformat.read(str(Path(m["_job_dir"]) / "executed.ipynb"), as_version=4)
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def test_02_tiny_t5(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-t5")
    b, n = m["metrics"]["battery"], m["metrics"]["random_init"]
    assert b["family"] == "t5" and n["family"] == "t5"
    assert set(b["qk"]) == {"encoder/self", "decoder/self", "decoder/cross"}
    for k, q in b["qk"].items():
        assert all(p + ng + z == q["d_model"] for p, ng, z in zip(q["n_pos"], q["n_neg"], q["n_zero"]))
    for r in ("q", "k", "v"):
        assert 0 <= b["qkv_sparsity"][r] <= 1
    assert m["headline"]["q_sparsity"]["baseline_kind"] == "random_init"
    assert m["headline"]["q_sparsity"]["value"] == b["qkv_sparsity"]["q"]
    assert b["position_bias"]["encoder"]["n_heads"] == 4
    assert "seconds" not in b and "seconds" not in n
    assert set(m["parameters"]) >= {"MODEL", "SEED", "NULL_BASELINE", "SPARSITY_THRESHOLDS", "N_BOOT"}


def test_02_headline_intervals_and_random_init_nulls(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-t5")
    h, b, n = m["headline"], m["metrics"]["battery"], m["metrics"]["random_init"]
    assert set(h) == set(HEADLINE)
    for k in HEADLINE:
        e = h[k]
        assert e["value"] is not None and e["interval"] is not None, k
        nul = e["nulls"]["random_init"]
        assert nul["value"] is not None, k
        if e["interval"]["method"].startswith("exact"):
            assert k == "qk_pos_frac_first" and e["interval"]["lo"] == e["interval"]["hi"] == e["value"]
            continue
        iv = e["interval"]
        assert iv["lo"] <= e["value"] <= iv["hi"], k  # a mean of the pooled items lies inside its bootstrap
        assert nul["interval"]["lo"] <= nul["value"] <= nul["interval"]["hi"], k
    assert "6 Q matrices" in h["q_sparsity"]["interval"]["method"]          # 3 attention blocks x 2 layers
    assert "4 MLP layers" in h["mlp_dead_frac"]["interval"]["method"]
    assert "12 adjacent layer pairs" in h["cross_layer_adj"]["interval"]["method"]  # 12 attention groups x 1 pair
    assert h["q_stable_rank"]["value"] == b["svd_by_role"]["q"]["stable_rank"]
    assert h["q_stable_rank"]["nulls"]["random_init"]["value"] == n["svd_by_role"]["q"]["stable_rank"]
    assert h["cross_layer_adj"]["value"] == b["cross_layer_attn_adj_mean"]
    items = m["metrics"]["headline_items"]
    assert set(items) == {"trained", "random_init"} and set(items["trained"]) == set(HEADLINE) - {"qk_pos_frac_first"}
    for k, it in items["trained"].items():
        assert sum(it["num"]) / sum(it["den"]) == pytest.approx(h[k]["value"], rel=1e-12), k
    assert h["qk_pos_frac_first"]["value"] == b["qk"]["decoder/self"]["pos_frac_first"]  # first self group, sorted


def test_02_executed_notebook_shows_every_figure_and_no_partial_paths(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-t5")
    outputs = _outputs(m)
    names = [f["file"] for f in m["figures"]]
    assert names == ["weight_panel_encoder.png", "weight_panel_decoder.png", "random_init_comparison.png"]
    assert 1 <= sum(f["key"] for f in m["figures"]) <= 3
    assert all((Path(m["_job_dir"]) / f).stat().st_size > 10_000 for f in names)
    assert sum(1 for o in outputs if "image/png" in o.get("data", {})) >= len(names)
    text = json.dumps([{k: v for k, v in o.get("data", {}).items() if not k.startswith("image/")} for o in outputs]
                      + [o.get("text", "") for o in outputs])
    assert ".partial" not in text and "Traceback" not in text
    assert sum(1 for o in outputs if "text/html" in o.get("data", {})) >= 8  # formatted tables, not printouts
    assert all(e["interval"] is not None for e in m["headline"].values() if e["value"] is not None)


def test_02_tiny_qwen_gqa(run_notebook):
    m = run_notebook("02_weight_topology", "tiny-qwen")
    q = m["metrics"]["battery"]["qk"]["decoder/self"]
    assert q["layers"] == [1, 3] and q["qk_norm"]
    # per head (2·head_dim <= d_model) the sign balance is forced to 0.5 (inertia)
    assert all(abs(x - 0.5) < 1e-12 for x in q["head_balance_mean"])
    h = m["headline"]
    assert all(e["interval"] is not None for e in h.values() if e["value"] is not None)
    # two Q matrices only: the bootstrap cannot form an interval, and the note says so
    assert "2 Q matrices" in h["q_stable_rank"]["interval"]["method"]
    assert h["q_stable_rank"]["interval"]["lo"] is None and "No interval" in h["q_stable_rank"]["note"]
    assert sum(1 for o in _outputs(m) if "image/png" in o.get("data", {})) >= len(m["figures"]) == 2
