"""Like-with-like tables of geolip_lib.weights.tables on a small synthetic T5 battery (built in
memory): per-(stack, attn) sparsity items and intervals, seed §6 table, the claims record,
notebook 03's per-stack rows and headlines, the seed-reported rows beside a measurement."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from geolip_lib.weights import TensorStore, plots, run_battery
from geolip_lib.weights import tables as T
from tests.figure_checks import check_figure

pytestmark = pytest.mark.unit


def _t5(seed: int):
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=64, d_model=16, d_kv=4, d_ff=32, num_layers=3, num_decoder_layers=3, num_heads=4,
                   relative_attention_num_buckets=8, decoder_start_token_id=0)
    torch.manual_seed(seed)
    sd = T5ForConditionalGeneration(cfg).state_dict()
    return run_battery(TensorStore(sd), config=cfg.to_dict(), family="t5", device="cpu"), sd


@pytest.fixture(scope="module")
def toy():
    (res, sd), (null, _) = _t5(0), _t5(1)
    return res, null, sd


def test_stack_items_sum_to_the_recorded_per_stack_sparsity(toy):
    res, _, sd = toy
    s, items = res.summary(), T.stack_items(res)
    assert list(items) == ["encoder/self", "decoder/self", "decoder/cross"]  # the seed's order
    for scope, roles in items.items():
        assert list(roles) == ["q", "k", "v"]
        for r, it in roles.items():
            assert len(it["num"]) == 3 and it["items"] == f"{r.upper()} matrices"
            assert sum(it["num"]) / sum(it["den"]) == s["sparsity_by_stack_role"][f"{scope}/{r}"]["<0.1"]
    mod = {"encoder/self": "encoder.block.{}.layer.0.SelfAttention", "decoder/cross": "decoder.block.{}.layer.1.EncDecAttention"}
    for scope, pat in mod.items():  # independent: the state dict
        W = [sd[f"{pat.format(i)}.q.weight"].abs() for i in range(3)]
        assert items[scope]["q"]["num"] == [float((w < 0.1).sum()) for w in W]


def test_sparsity_by_stack_and_seed_section_6_table(toy):
    res, null, _ = toy
    s, n = res.summary(), null.summary()
    tab = T.sparsity_by_stack(s, T.stack_items(res), n, T.stack_items(null), n_boot=200)
    assert len(tab) == 9 and list(tab["role"][:3]) == ["Q", "K", "V"]
    assert (tab["matrices"] == 3).all()
    assert ((tab["lo"] <= tab["trained"]) & (tab["trained"] <= tab["hi"])).all()  # 3 matrices: an interval forms
    assert ((tab["lo (random init)"] <= tab["random init"]) & (tab["random init"] <= tab["hi (random init)"])).all()
    six = T.stack_attn_table(s, n)
    assert list(six.index) == ["encoder/self", "decoder/self", "decoder/cross"]
    for scope, row in six.iterrows():
        q = s["qk"][scope]
        assert row["seed: n_pos/inner (mean)"] == pytest.approx(np.mean(q["seed_pos_frac"]))
        assert row["seed: min"] == min(q["seed_pos_frac"]) and row["QK layers"] == 3
        assert row["project: balance (mean)"] == pytest.approx(np.mean(q["balance"]))
        assert row["Q <0.1"] == s["sparsity_by_stack_role"][f"{scope}/q"]["<0.1"]
        assert row["seed: n_pos/inner (random init)"] == pytest.approx(np.mean(n["qk"][scope]["seed_pos_frac"]))
    ql = T.qk_layers(res, 6)
    assert list(ql["stack"] + "/" + ql["attn"])[::3] == ["encoder/self", "decoder/self", "decoder/cross"]
    assert {"seed: n_pos/inner", "project: balance"} <= set(ql.columns)


def test_battery_claims_record_the_seed_definition_with_the_project_beside_it(toy):
    res, null, _ = toy
    s, n = res.summary(), null.summary()
    c = T.battery_claims(s, T.headline_items(res), T.stack_items(res), n, T.headline_items(null), T.stack_items(null),
                         n_boot=200)
    assert set(c) == {"q_sparsity", "qk_cross_balance", "qk_self_balance", "cross_layer_corr", "position_crystallization"}
    h = c["qk_cross_balance"]["decoder/cross"]
    assert h["per_layer"] == s["qk"]["decoder/cross"]["seed_pos_frac"] and len(h["per_layer"]) == 3
    assert "3 layers" in h["interval"]["method"] and h["interval"]["lo"] <= h["value"] <= h["interval"]["hi"]
    assert set(h["nulls"]) == {"random init"} and set(h["project"]["nulls"]) == {"random init"}
    assert "3 Q matrices" in c["q_sparsity"]["encoder/self"]["interval"]["method"]
    pc = c["position_crystallization"]["decoder"]
    assert pc["value"] == s["position_bias"]["decoder"]["mixed_seed"] and pc["n_heads"] == 4
    pooled = c["q_sparsity"]["encoder+decoder/self"]  # seed §4 pooled the two stacks' self-attention Q
    it = T.stack_items(res)
    num = it["encoder/self"]["q"]["num"] + it["decoder/self"]["q"]["num"]
    den = it["encoder/self"]["q"]["den"] + it["decoder/self"]["q"]["den"]
    assert pooled["value"] == pytest.approx(sum(num) / sum(den)) and "6 self-attention Q matrices" in \
        pooled["interval"]["method"]
    # seed §5's pooling beside the project's: mean over groups of adj_mean of self-attention q, k and mlp_in
    sc = c["cross_layer_corr"]["seed:q,k,qkv,mlp_up"]
    want = [d["adj_mean"] for (_, a, r), d in res.cross.items() if r == "mlp_in" or (a == "self" and r in "qk")]
    assert len(want) == 2 * 2 + 2 and sc["value"] == pytest.approx(np.mean(want))  # 2 stacks × (q, k) + 2 mlp_in
    assert sc["nulls"]["random init"]["value"] == pytest.approx(T.claims.seed_cross_layer(n)[0])
    assert "6 weight groups, 12 adjacent layer pairs" in sc["interval"]["method"]
    # the project's Q, K, V, O groups as magnitudes, and the seed's attention types each
    att = [d["adj_mean"] for (_, a, r), d in res.cross.items() if r in ("q", "k", "v", "o")]
    assert c["cross_layer_corr"]["attention|abs"]["value"] == pytest.approx(np.mean(np.abs(att)))
    assert c["cross_layer_corr"]["attention"]["value"] == pytest.approx(np.mean(att))
    qk = [d["adj_mean"] for (_, a, r), d in res.cross.items() if a == "self" and r in "qk"]
    assert c["cross_layer_corr"]["seed:q,k,qkv|each"]["value"] == pytest.approx(np.max(np.abs(qk)))
    tab = T.claims_table(c)
    # q_sparsity 4 + 1 pooled, QK 2 + 2, cross-layer 4 (signed, |abs|, seed's pooling, seed's types each), position 2
    assert len(tab) == 4 + 1 + 2 + 2 + 4 and not tab["seed definition"].isna().any()
    # the claim is defined at |w| < 0.1: a battery without that threshold records no q_sparsity
    s2 = dict(s, qkv_sparsity_threshold="<0.01")
    assert "q_sparsity" not in T.battery_claims(s2, T.headline_items(res), T.stack_items(res))


def test_seed_cross_layer_pools_q_k_or_the_fused_qkv_and_mlp_up():
    layers3 = [0, 1, 2]
    cl = {"vision/self/q": {"adj_mean": 0.1, "layers": layers3},  # a view of the fused tensor: the qkv group counts
          "vision/self/qkv": {"adj_mean": 0.3, "layers": layers3},
          "vision/-/mlp_in": {"adj_mean": 0.5, "layers": layers3}, "vision/-/mlp_out": {"adj_mean": 0.7, "layers": layers3},
          "text/self/q": {"adj_mean": -0.2, "layers": [0, 1]}, "text/self/v": {"adj_mean": 0.8, "layers": [0, 1]},
          "decoder/cross/k": {"adj_mean": 0.9, "layers": layers3}}
    v, groups, pairs = T.claims.seed_cross_layer({"cross_layer": cl})
    assert (groups, pairs) == (3, 2 + 2 + 1) and v == pytest.approx((0.3 + 0.5 - 0.2) / 3)
    assert T.claims.seed_cross_layer({}) == (None, 0, 0)


def _cancelling_roles(signs=(1, -1, 1, -1), m=0.0006):
    """MiniLM-like: four attention roles, each beyond |x| = 0.0005, of alternating sign."""
    roles = ("q", "k", "v", "o")
    return {f"encoder/self/{r}": {"adj_mean": s * m, "layers": list(range(6))} for r, s in zip(roles, signs)} | \
        {"encoder/-/mlp_in": {"adj_mean": -0.0006, "layers": list(range(6))}}


def test_cancelling_roles_pool_to_zero_signed_but_not_as_magnitudes_or_each():
    """Four roles of ±0.0006 pool to 0 in the signed means (the project's Q, K, V, O and the
    seed's Q, K, mlp_up), which the rule '~0.000' reads as held; their magnitudes do not cancel, and
    the seed's attention types tested each have their largest |mean| 0.0006."""
    cl = _cancelling_roles()
    s = {"cross_layer": cl}
    assert abs(np.mean([d["adj_mean"] for k, d in cl.items() if "mlp" not in k])) < 1e-12  # signed: cancels
    v, groups, pairs = T.claims.abs_cross_layer(s)
    assert (groups, pairs) == (4, 20) and v == pytest.approx(0.0006)
    seed_v = T.claims.seed_cross_layer(s)[0]
    assert seed_v == pytest.approx((0.0006 - 0.0006 - 0.0006) / 3)  # q, k, mlp_in: signed
    each, g, p, worst = T.claims.seed_each_cross_layer(s)
    assert each == pytest.approx(0.0006) and (g, p) == (2, 10) and worst in ("encoder/self/q", "encoder/self/k")
    assert T.claims.seed_each_cross_layer({}) == (None, 0, 0, None) and T.claims.abs_cross_layer({})[0] is None
    # the largest magnitude decides: one type beyond the edge is enough
    one = {"cross_layer": {"text/self/q": {"adj_mean": 0.0001, "layers": [0, 1]},
                           "text/self/k": {"adj_mean": -0.0009, "layers": [0, 1]}}}
    assert T.claims.seed_each_cross_layer(one)[:2] == (pytest.approx(0.0009), 2)
    assert T.claims.seed_each_cross_layer(one)[3] == "text/self/k"


def test_battery_claims_record_the_magnitudes_and_each_group_beside_the_signed_poolings():
    """battery_claims: scopes attention (signed), attention|abs (magnitudes), seed:q,k,qkv,mlp_up (signed,
    with mlp_up) and seed:q,k,qkv|each (largest |mean|), each with its groups' own means; the random-init
    null of a magnitude is the magnitude of the null."""
    cl = _cancelling_roles()
    s = {"cross_layer": cl, "cross_layer_attn_adj_mean": 0.0}
    null = [{"cross_layer": _cancelling_roles((1, 1, 1, 1), 0.002), "cross_layer_attn_adj_mean": 0.002}] * 3
    c = T.battery_claims(s, {}, {}, null)["cross_layer_corr"]
    assert set(c) == {"attention", "attention|abs", "seed:q,k,qkv,mlp_up", "seed:q,k,qkv|each"}
    assert c["attention"]["value"] == 0.0 and "cancel" in c["attention"]["note"]
    a = c["attention|abs"]
    assert a["value"] == pytest.approx(0.0006) and a["kind"] == "exact"
    assert a["groups"] == {k: d["adj_mean"] for k, d in cl.items() if "mlp" not in k}
    assert a["nulls"]["random init"]["value"] == pytest.approx(0.002)
    e = c["seed:q,k,qkv|each"]
    assert e["value"] == pytest.approx(0.0006) and set(e["groups"]) == {"encoder/self/q", "encoder/self/k"}
    assert "mlp_up" in c["seed:q,k,qkv,mlp_up"]["note"] and "'Attention" in c["seed:q,k,qkv,mlp_up"]["note"]
    assert "encoder/-/mlp_in" in c["seed:q,k,qkv,mlp_up"]["groups"]


def test_a_sampled_null_of_a_magnitude_is_rescaled_to_one_whole_model():
    """A null seed that measured a fraction f of the adjacent pairs has a |mean| larger by 1/sqrt(f):
    rescaled, each seed's value is one whole model's."""
    from geolip_lib.metrics.sampled_null import SampledNull

    s = {"cross_layer": _cancelling_roles()}
    null = SampledNull([{"cross_layer": _cancelling_roles((1, 1, 1, 1), 0.004)}] * 3,
                       fractions={"layers": 0.5, "pairs": 0.25, "first": 1.0})
    a = T.battery_claims(s, {}, {}, null)["cross_layer_corr"]["attention|abs"]["nulls"]["random init"]
    assert a["value"] == pytest.approx(0.004 * 0.5) and "sqrt(0.25)" in a["rescaled"]


def test_cross_model_stack_rows_headlines_and_figure(toy):
    res, null, _ = toy
    s, n = res.summary(), null.summary()
    batteries = {"a": (s, n), "b": (n, None)}
    stack = {"a": {"trained": T.stack_items(res), "random_init": T.stack_items(null)},
             "b": {"trained": T.stack_items(null), "random_init": None}}
    st = T.cross_model_stack_frame(batteries, stack, n_boot=200)
    assert len(st) == 9 and list(st.columns[:3]) == ["model", "weights", "stack/attn"]
    a = st[(st["model"] == "a") & (st["weights"] == "trained")].set_index("stack/attn")
    assert a.loc["decoder/cross", "QK seed (mean)"] == s["qk"]["decoder/cross"]["seed_pos_frac_mean"]
    assert (a["Q lo"] <= a["Q sparsity"]).all() and (a["Q sparsity"] <= a["Q hi"]).all()
    h = T.cross_stack_headline(st, "Q sparsity", label="Q", stack=stack, n_boot=300)
    assert h["value"] == pytest.approx(st.loc[st["weights"] == "trained", "Q sparsity"].mean())
    assert h["interval"]["method"] == ("two-stage bootstrap percentile, 300 resamples of 6 model × stack/attn rows and "
                                       "the Q matrices within each")
    q = T.cross_stack_headline(st, "QK seed (mean)", label="QK", batteries=batteries, n_boot=300)
    assert q["interval"]["method"].endswith("and the layers within each")
    assert q["nulls"]["random_init"]["value"] == pytest.approx(st.loc[st["weights"] == "random init",
                                                                      "QK seed (mean)"].mean())
    fig = plots.cross_model(T.cross_model_frame(batteries), st)
    assert [x.get_title() for x in fig.axes[:3]] == ["Q/K/V sparsity per stack/attn (trained)",
                                                     "mean stable rank of Q/K/V/MLP-in (trained vs random)",
                                                     "QK sign balance per stack/attn (mean over layers)"]
    assert fig.axes[0].get_xlabel() == "model · stack/attn"
    assert "seed n_pos/inner, trained" in fig.axes[2].get_legend_handles_labels()[1]
    check_figure(fig, 3)


def test_seed_values_beside_a_measurement_on_the_same_key(toy):
    res, _, sd = toy
    s = res.summary()
    items = T.stack_items(res)
    v = T.seed_vs_measured({"t5-small": (s, None), "t5-v1_1-xxl": (s, None)}, {"t5-small": {"trained": items}})
    rows = {(r["model"], r["stack/attn"], r["quantity"]): r for r in v.to_dict(orient="records")}
    # the seed's T5-small rows pooled the encoder and decoder self-attention: measured pooled the same way
    W = [sd[f"{st}.block.{i}.layer.0.SelfAttention.q.weight"].abs() for st in ("encoder", "decoder") for i in range(3)]
    pooled = sum(int((w < 0.1).sum()) for w in W) / sum(w.numel() for w in W)
    r = rows[("t5-small", "encoder+decoder/self", "Q sparsity")]
    assert r["seed"] == 0.937 and r["measured"] == pytest.approx(pooled) and r["difference"] == pytest.approx(pooled - 0.937)
    for scope in ("encoder/self", "decoder/self", "decoder/cross"):
        assert rows[("t5-v1_1-xxl", scope, "Q sparsity")]["measured"] == s["sparsity_by_stack_role"][f"{scope}/q"]["<0.1"]
    assert rows[("t5-v1_1-xxl", "decoder/cross", "QK seed (mean)")]["measured"] == \
        s["qk"]["decoder/cross"]["seed_pos_frac_mean"]
    assert rows[("t5-small", "decoder", "mixed position heads")]["measured"] == s["position_bias"]["decoder"]["mixed_seed"]
    assert T.seed_vs_measured({"tiny-t5": (s, None)}).empty
    assert pd.api.types.is_string_dtype(T.seed_reported_stacks()["stack/attn"])


def test_seed_cross_layer_reads_the_fused_qkv_tensor_whole():
    """A fused-QKV model (GPT-NeoX): the battery's cross-layer cosine of the whole fused tensor is
    the seed's self_attn_qkv adjacent-layer cosine, recomputed here from the flattened weights."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    cfg = GPTNeoXConfig(vocab_size=64, hidden_size=16, num_hidden_layers=3, num_attention_heads=4,
                        intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    sd = GPTNeoXForCausalLM(cfg).state_dict()
    res = run_battery(TensorStore(sd), config=cfg.to_dict(), family="gpt_neox", device="cpu")
    W = [sd[f"gpt_neox.layers.{i}.attention.query_key_value.weight"].double().flatten() for i in range(3)]
    qkv = np.mean([float(W[i] @ W[i + 1] / W[i].norm() / W[i + 1].norm()) for i in range(2)])
    assert res.cross[("decoder", "self", "qkv")]["adj_mean"] == pytest.approx(qkv, abs=1e-12)
    v, groups, pairs = T.claims.seed_cross_layer(res.summary())  # the fused qkv and mlp_in, not the q/k views
    assert (groups, pairs) == (2, 4)
    assert v == pytest.approx((qkv + res.cross[("decoder", None, "mlp_in")]["adj_mean"]) / 2)


def test_a_per_stack_q_sparsity_null_near_one_stays_inside_0_1(toy):
    """Random-init Q |w| < 0.1 per stack is a fraction near 1 (MiniLM: 0.9999995): over seeds its
    null interval is taken on the logit scale, as the pooled one's is; it printed [0.9999977,
    1.0000014] on the raw scale."""
    res, null, _ = toy
    s = res.summary()
    nulls = []
    for k, v in enumerate([1.0, 0.9999995, 0.999999, 1.0, 0.9999990]):
        n = json.loads(json.dumps(null.summary(), default=float))
        for key in n["sparsity_by_stack_role"]:
            if key.endswith("/q"):
                n["sparsity_by_stack_role"][key]["<0.1"] = v
        nulls.append(n)
    c = T.battery_claims(s, T.headline_items(res), T.stack_items(res), nulls, n_boot=50)
    for scope, h in c["q_sparsity"].items():
        if scope == "encoder+decoder/self":
            continue
        iv = h["nulls"]["random init"]["interval"]
        assert 0.999 < iv["lo"] <= iv["hi"] <= 1.0, (scope, iv)
        assert "logit" in iv["method"], iv["method"]
