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
    """Every headline is computed on all the weights: exact, "exact (all N …)"; the random-init
    null is a distribution over its 5 init seeds (the first seed is metrics["random_init"])."""
    m = run_notebook("02_weight_topology", "tiny-t5")
    h, b, n = m["headline"], m["metrics"]["battery"], m["metrics"]["random_init"]
    assert set(h) == set(HEADLINE)
    for k in HEADLINE:
        e = h[k]
        assert e["kind"] == "exact" and e["interval"]["lo"] == e["interval"]["hi"] == e["value"], k
        nul = e["nulls"]["random_init"]
        assert len(nul["per_seed"]) == 5 and nul["value"] == pytest.approx(sum(nul["per_seed"]) / 5), k
        assert nul["interval"]["kind"] == "over_seeds" and "5 random-init seeds" in nul["interval"]["method"], k
        assert nul["interval"]["lo"] <= nul["value"] <= nul["interval"]["hi"], k
    assert h["q_sparsity"]["interval"]["method"] == "exact (all 6 Q matrices)"          # 3 attention blocks x 2 layers
    assert h["mlp_dead_frac"]["interval"]["method"] == "exact (all 4 MLP layers)"
    assert h["cross_layer_adj"]["interval"]["method"] == "exact (all 12 adjacent layer pairs)"  # 12 groups x 1 pair
    assert h["q_stable_rank"]["value"] == b["svd_by_role"]["q"]["stable_rank"]
    assert h["q_stable_rank"]["nulls"]["random_init"]["per_seed"][0] == n["svd_by_role"]["q"]["stable_rank"]
    assert len(set(h["q_stable_rank"]["nulls"]["random_init"]["per_seed"])) == 5  # five different inits
    assert h["cross_layer_adj"]["value"] == b["cross_layer_attn_adj_mean"]
    items = m["metrics"]["headline_items"]
    assert set(items) == {"trained", "random_init"} and set(items["trained"]) == set(HEADLINE) - {"qk_pos_frac_first"}
    for k, it in items["trained"].items():
        assert sum(it["num"]) / sum(it["den"]) == pytest.approx(h[k]["value"], rel=1e-12), k
    assert h["qk_pos_frac_first"]["value"] == b["qk"]["decoder/self"]["pos_frac_first"]  # first self group, sorted
    assert "forced_by_shape" not in h["qk_pos_frac_first"]  # T5: full multi-head attention


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
    assert h["q_stable_rank"]["interval"]["method"] == "exact (all 2 Q matrices)"
    # grouped-query attention: tiny-qwen's 2·n_kv_heads·head_dim = 2·2·8 = 32 <= d = 32 forces the layer's
    # balance: equal counts in every layer, marked in the summary, the headline and the claims
    assert q["d_model"] == 32 and "2·2·8 = 32 ≤ d = 32" in q["forced_by_shape"]
    assert all(p == ng for p, ng in zip(q["n_pos"], q["n_neg"]))
    assert h["qk_pos_frac_first"]["forced_by_shape"] == q["forced_by_shape"]
    claim = m["metrics"]["claims"]["qk_self_balance"]["decoder/self"]
    assert claim["project"]["forced_by_shape"] == q["forced_by_shape"] and claim["forced_by_shape"]
    assert sum(1 for o in _outputs(m) if "image/png" in o.get("data", {})) >= len(m["figures"]) == 2


CLAIMS = {"q_sparsity", "qk_cross_balance", "qk_self_balance", "cross_layer_corr", "position_crystallization"}


def _tiny_t5_params():
    from geolip_lib import models

    return {k: v.detach().double().numpy() for k, v in models.load("tiny-t5").model.named_parameters()}


def test_02_claims_read_back_against_an_independent_computation(run_notebook, monkeypatch):
    """metrics["claims"] of tiny-t5 (the claims contract): structure, and values recomputed
    with numpy from the tiny-t5 weights (seed's definitions)."""
    import numpy as np

    m = run_notebook("02_weight_topology", "tiny-t5")
    c, b, n = m["metrics"]["claims"], m["metrics"]["battery"], m["metrics"]["random_init"]
    assert set(c) == CLAIMS
    P = _tiny_t5_params()
    blocks = {"encoder/self": ("encoder", "0.SelfAttention"), "decoder/self": ("decoder", "0.SelfAttention"),
              "decoder/cross": ("decoder", "1.EncDecAttention")}
    # Q sparsity per stack/attn: fraction |w| < 0.1 pooled over the scope's Q matrices
    assert set(c["q_sparsity"]) == set(blocks) | {"encoder+decoder/self"}
    W = [np.abs(P[f"{st}.block.{i}.layer.0.SelfAttention.q.weight"]).astype(np.float32)
         for st in ("encoder", "decoder") for i in range(2)]  # seed §4's pooling of self_attn_q
    assert c["q_sparsity"]["encoder+decoder/self"]["value"] == pytest.approx(
        sum(int((w < np.float32(0.1)).sum()) for w in W) / sum(w.size for w in W))
    for scope, (stack, mod) in blocks.items():
        W = [np.abs(P[f"{stack}.block.{i}.layer.{mod}.q.weight"]).astype(np.float32) for i in range(2)]
        h = c["q_sparsity"][scope]
        assert h["value"] == pytest.approx(sum(int((w < np.float32(0.1)).sum()) for w in W) / sum(w.size for w in W))
        assert h["value"] == b["sparsity_by_stack_role"][f"{scope}/q"]["<0.1"]
        assert h["kind"] == "exact" and h["interval"]["method"] == f"exact (all 2 Q matrices of {scope})"
        assert h["nulls"]["random init"]["per_seed"][0] == n["sparsity_by_stack_role"][f"{scope}/q"]["<0.1"]
    # QK balance, seed form: n_pos / inner of sym(W_q W_kᵀ) per layer (numpy), mean over layers
    assert set(c["qk_cross_balance"]) == {"decoder/cross"} and set(c["qk_self_balance"]) == {"encoder/self", "decoder/self"}
    for scope, (stack, mod) in blocks.items():
        h = c["qk_cross_balance" if scope.endswith("cross") else "qk_self_balance"][scope]
        ref = []
        for i in range(2):
            Wq, Wk = P[f"{stack}.block.{i}.layer.{mod}.q.weight"], P[f"{stack}.block.{i}.layer.{mod}.k.weight"]
            ev = np.linalg.eigvalsh((Wq @ Wk.T + Wk @ Wq.T) / 2)
            ref.append(float((ev > 0).sum() / len(ev)))
        assert h["per_layer"] == ref and h["value"] == pytest.approx(np.mean(ref)), scope
        assert h["project"]["per_layer"] == b["qk"][scope]["balance"]
        assert h["project"]["value"] == pytest.approx(np.mean(b["qk"][scope]["balance"]))
        assert h["nulls"]["random init"]["per_seed"][0] == pytest.approx(np.mean(n["qk"][scope]["seed_pos_frac"]))
        assert h["project"]["nulls"]["random init"]["per_seed"][0] == pytest.approx(np.mean(n["qk"][scope]["balance"]))
        assert h["kind"] == "exact" and h["interval"]["method"] == "exact (all 2 layers)"
    # cross-layer correlation: the headline's adjacent-layer cosine, same interval
    cl = c["cross_layer_corr"]["attention"]
    assert cl["value"] == m["headline"]["cross_layer_adj"]["value"]
    assert cl["interval"] == m["headline"]["cross_layer_adj"]["interval"]
    assert cl["nulls"]["random init"]["per_seed"][0] == n["cross_layer_attn_adj_mean"]
    # the seed's pooling (§5 cross_layer_correlation): adjacent-layer cosine of the flattened self-attention Q, K
    # and MLP up (wi) weights per stack, mean over those 6 groups; recomputed with numpy, read by claims.evaluate
    def adj(fmt):
        a, b = (P[fmt.format(i)].ravel() for i in range(2))
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    groups = [f"{st}.block.{{}}.layer.0.SelfAttention.{r}.weight" for st in ("encoder", "decoder") for r in "qk"] + \
        ["encoder.block.{}.layer.1.DenseReluDense.wi.weight", "decoder.block.{}.layer.2.DenseReluDense.wi.weight"]
    sc = c["cross_layer_corr"]["seed:q,k,qkv,mlp_up"]
    assert sc["value"] == pytest.approx(np.mean([adj(g) for g in groups]), abs=1e-9)
    assert sc["kind"] == "exact" and sc["interval"]["method"] == "exact (all 6 weight groups, 6 adjacent layer pairs)"
    assert len(sc["nulls"]["random init"]["per_seed"]) == 5
    from geolip_lib import claims
    from geolip_lib.claims import NOT_TESTED

    root = Path(m["_job_dir"]).parents[1]
    # a tiny random model is a pipeline check, never a stand-in ...
    assert "tiny-t5" in claims.pipeline_checks(root)
    assert not [r for r in claims.evaluate(root) if r["model"] == "tiny-t5"]
    # ... but what claims.evaluate reads from its job is the recorded value: read it as if it were trained
    monkeypatch.setattr(claims.evaluation, "trained", lambda model, data: True)
    rows = [r for r in claims.evaluate(root) if r["claim"] == "cross_layer_corr"
            and r["model"] == "tiny-t5" and r["scope"] == "seed:q,k,qkv,mlp_up"]
    assert len(rows) == 1 and rows[0]["verdict"] != NOT_TESTED and rows[0]["value"] == pytest.approx(sc["value"])
    # position crystallization: mixed heads by the seed's raw-bucket rule, counted from the bias tables
    pc = c["position_crystallization"]
    assert set(pc) == {"encoder", "decoder"}
    for stack in ("encoder", "decoder"):
        T = P[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]  # (buckets, heads)
        pk = T.argmax(axis=0)
        mixed = int(((pk > 2) & (pk < T.shape[0] - 3)).sum())
        assert pc[stack]["value"] == mixed and pc[stack]["n_heads"] == T.shape[1] == 4
        assert pc[stack]["interval"]["method"].startswith("exact") and pc[stack]["interval"]["lo"] == mixed
        assert pc[stack]["project"]["value"] == b["position_bias"][stack]["mixed"]
        assert pc[stack]["nulls"]["random init"]["per_seed"][0] == n["position_bias"][stack]["mixed_seed"]
    assert set(m["metrics"]["stack_items"]) == {"trained", "random_init"}


def test_02_shows_seed_and_project_forms_and_the_statement(run_notebook):
    from geolip_lib.weights.spectral import QK_BALANCE_STATEMENT

    m = run_notebook("02_weight_topology", "tiny-t5")
    outputs = _outputs(m)
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    text = "".join(o.get("text", "") for o in outputs)
    assert QK_BALANCE_STATEMENT in text
    for caption in ("per (stack/attn, role), 95 % bootstrap", "Encoder/decoder × self/cross (seed §6)",
                    "seed = sym(W_q W_kᵀ)", "rank_90_seed on σ (seed 001)", "Seed claims"):
        assert caption in html, caption
    for col in ("seed: n_pos/inner", "project: balance", "rank_90_seed", "decoder/cross"):
        assert col in html, col
    b = m["metrics"]["battery"]
    assert all(isinstance(v["rank_90_seed"], float) for v in b["svd_by_role"].values())
    for scope in ("encoder/self", "decoder/self", "decoder/cross"):
        q = b["qk"][scope]
        assert q["seed_dim"] == q["inner"] == 32
        assert [p + ng for p, ng in zip(q["seed_n_pos"], q["seed_n_neg"])] == [32, 32]  # no exact zeros at full rank


def test_02_generated_twin_above_the_threshold(run_notebook):
    """With TWIN_MAX_PARAMS below the model's size the null is the generated twin
    (geolip_lib.models.twin), measured by the same battery call."""
    import math

    from geolip_lib import models
    from geolip_lib.models.twin import RandomInitStore
    from geolip_lib.weights import run_battery

    base = run_notebook("02_weight_topology", "tiny-t5")
    m = run_notebook("02_weight_topology", "tiny-t5", TWIN_MAX_PARAMS=0)
    p = m["parameters"]
    assert p["TWIN_MAX_PARAMS"] == 0 and base["parameters"]["TWIN_MAX_PARAMS"] == 1_000_000_000
    lm = models.load("tiny-t5")
    twin = lm.random_init_weights(seed=p["SEED"] + 1000, max_params=0)
    assert isinstance(twin, RandomInitStore)
    ref = run_battery(twin, config=lm.config, family=lm.family, device="cpu",
                      thresholds=p["SPARSITY_THRESHOLDS"]).summary()
    ref.pop("seconds", None)
    null = m["metrics"]["random_init"]
    assert null["qkv_sparsity"] == ref["qkv_sparsity"] != base["metrics"]["random_init"]["qkv_sparsity"]
    for role, row in ref["svd_by_role"].items():
        assert math.isclose(null["svd_by_role"][role]["stable_rank"], row["stable_rank"], rel_tol=1e-9), role
    assert m["metrics"]["battery"] == base["metrics"]["battery"]  # the trained side is untouched


def test_02_records_the_nulls_drivers(run_notebook):
    """metrics["random_init_null"]: 5 init seeds SEED + 1000 + k, the layers each measured
    (layer 0 always), the model's layer count and the cost in model-equivalents; no section
    of tiny-t5 is skipped, so no "not_run"."""
    m = run_notebook("02_weight_topology", "tiny-t5")
    d, seed = m["metrics"]["random_init_null"], m["parameters"]["SEED"]
    assert d["seeds"] == 5 and d["init_seeds"] == [seed + 1000 + k for k in range(5)]
    assert d["layers_in_model"] == 2 and d["layers_per_seed"] == 2 and d["layers_sampled"] == [[0, 1]] * 5
    assert d["model_equivalents"] == 5.0 and d["method"] == "every layer"  # 2 layers: nothing to sample
    assert "not_run" not in m
    per_seed = m["headline"]["q_stable_rank"]["nulls"]["random_init"]["per_seed"]
    assert len(per_seed) == 5 and "sampled_fraction" in m["headline"]["q_stable_rank"]["nulls"]["random_init"]
