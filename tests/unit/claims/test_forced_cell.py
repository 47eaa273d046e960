"""A stand-in whose QK balance the weight shapes force (SmolLM2-135M: grouped-
query attention, 192 positive, 192 negative and 192 zero eigenvalues per layer) showed ○ "not tested"
in the matrix and was left out of the bottom line's count, because ``fold_verdicts`` read its
generator twice. The cell must show ✚ "forced by shape", and the bottom line count it and name it."""
from __future__ import annotations

import pytest

from geolip_lib import claims
from geolip_lib.claims import tables as claims_tables
from geolip_lib.report import sections
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit

HELD_BY = ("bert-a", "gpt-b", "opt-c", "pythia-d", "llama-e")
FORCED_MODEL = "smollm2-135m"
RI = {"random_init": {"value": 0.7, "interval": (0.69, 0.71)}}  # separated: the five stand-ins hold


@pytest.fixture
def forced_root(tmp_path):
    """Five trained stand-ins whose QK balance holds, and one whose balance is forced by shape."""
    for m in HELD_BY:
        _write_job(tmp_path, "02_weight_topology", m, {"qk_self_balance": {
            "encoder/self": _h(0.5, exact=True, per_layer=[0.5, 0.5], nulls=RI)}})
    _write_job(tmp_path, "02_weight_topology", FORCED_MODEL, {"qk_self_balance": {"decoder/self": _h(
        0.5001, exact=True, per_layer=[0.5001] * 30,
        forced_by_shape="forced by shape (2·n_kv_heads·head_dim = 2·3·64 = 384 ≤ d = 576)")}})
    return tmp_path


def test_fold_verdicts_reads_a_generator_once():
    assert claims_tables.fold_verdicts(v for v in [claims.FORCED]) == claims.FORCED
    assert claims_tables.fold_verdicts(v for v in [claims.FORCED, claims.NOT_TESTED]) == claims.FORCED
    assert claims_tables.fold_verdicts(v for v in [claims.NOT_TESTED]) == claims.NOT_TESTED
    assert claims_tables.fold_verdicts(v for v in [claims.FORCED, claims.HELD]) == claims.HELD


def test_a_forced_cell_shows_forced_and_the_bottom_line_counts_and_names_it(forced_root):
    m = claims_tables.matrix(claims.evaluate(forced_root))
    assert m["stand-ins"] == sorted(HELD_BY + (FORCED_MODEL,))
    cell = m["cells"][("qk_cross_balance", FORCED_MODEL)]
    assert cell["verdict"] == claims.FORCED  # was "not tested on this profile" (○)
    for x in HELD_BY:
        assert m["cells"][("qk_cross_balance", x)]["verdict"] == claims.HELD
    line = m["bottom line"]["qk_cross_balance"]
    assert "on 6 trained stand-ins it is 0.5, inside the seed's value" in line, line  # was "on 5"
    assert f"(5 held, 1 forced by shape: {FORCED_MODEL})" in line, line
    html = sections.matrix_table(m)
    # the forced model's cell: the one whose tooltip names it
    cell_html = html[html.index(f"title='{FORCED_MODEL} · cross-attention QK balance"):].split("</td>")[0]
    assert f"{FORCED_MODEL} · cross-attention QK balance: forced by shape" in cell_html
    assert "<span class='glyph'>✚</span>" in cell_html and "○" not in cell_html


def test_a_forced_value_is_kept_out_of_the_stand_ins_range(forced_root):
    # a forced value unlike the measured ones: the range is the measured stand-ins' only
    _write_job(forced_root, "02_weight_topology", FORCED_MODEL, {"qk_self_balance": {"decoder/self": _h(
        0.52, exact=True, per_layer=[0.52] * 30, forced_by_shape="forced by shape (grouped-query attention)")}})
    m = claims_tables.matrix(claims.evaluate(forced_root))
    line = m["bottom line"]["qk_cross_balance"]
    assert "0.52" not in line and "on 6 trained stand-ins it is 0.5," in line, line


def test_a_forced_cell_prints_the_nonzero_balance_with_the_counts(forced_root):
    # SmolLM2: n_pos / inner = 0.5001 (192 forced positives plus the signs of round-off zeros) reads like
    # "locked at 0.500"; the cell prints the nonzero eigenvalues' balance (exactly 0.5) and the counts
    counts = {"n_pos": [192] * 30, "n_neg": [192] * 30, "n_zero": [192] * 30}
    _write_job(forced_root, "02_weight_topology", FORCED_MODEL, {"qk_self_balance": {"decoder/self": _h(
        0.5001, exact=True, per_layer=[0.5001] * 30, eigen_counts=counts,
        forced_by_shape="forced by shape (2·n_kv_heads·head_dim = 2·3·64 = 384 ≤ d = 576)")}})
    rows = claims.evaluate(forced_root)
    row = next(r for r in rows if r["claim"] == "qk_cross_balance" and r["model"] == FORCED_MODEL)
    assert row["forced"]["balance"] == 0.5 and row["forced"]["layers"] == 30
    assert "192 positive, 192 negative, 192 zero per layer" in row["reason"], row["reason"]
    cell = claims_tables.matrix(rows)["cells"][("qk_cross_balance", FORCED_MODEL)]
    assert cell["verdict"] == claims.FORCED
    assert cell["text"] == ("nonzero balance 0.5 (192+ / 192− / 192 zero per layer, 30 layers) · read on "
                            "self-attention"), cell["text"]
    assert "0.5001" not in cell["text"]


def test_forced_balance_reads_varying_counts_and_falls_back_to_the_project_form():
    from geolip_lib.claims.evaluation import forced_balance
    fb = forced_balance({"eigen_counts": {"n_pos": [3, 2], "n_neg": [1, 2], "n_zero": [0, 0]}})
    assert fb["balance"] == pytest.approx((0.75 + 0.5) / 2) and "averaged over 2 layers" in fb["text"]
    assert "2–3 positive" in fb["text"]
    fb = forced_balance({"project": {"value": 0.5}})
    assert fb["balance"] == 0.5 and "no per-layer counts" in fb["text"]
    assert forced_balance({"value": 0.5001}) is None


def test_the_battery_claim_carries_the_eigenvalue_counts_the_cell_prints():
    # grouped-query attention by construction (16 query heads over 4 key heads of 16 dims, d = 160): the
    # rank of W_Qᵀ W_K is at most 64, so sym(W_Qᵀ W_K) has 64 positive, 64 negative and 32 zero eigenvalues
    from tests.unit.weights.test_qk_forced import _aligned_gqa, _block
    from geolip_lib.weights.battery.qk import qk_block
    from geolip_lib.weights.tables.claims import _qk_claim
    from geolip_lib.claims.evaluation import forced_balance
    rows = [qk_block(_block(16, 4, 16), *_aligned_gqa(s))[0] for s in (0, 1)]
    summary = {"qk": {"decoder/self": {k: [r[k] for r in rows] for k in ("seed_pos_frac", "balance", "n_pos",
                                                                          "n_neg", "n_zero")}
                      | {"forced_by_shape": rows[0]["forced_by_shape"]}}}
    h = _qk_claim(summary, None, "decoder/self", seed=0, n_boot=10)
    assert h["eigen_counts"] == {"n_pos": [64, 64], "n_neg": [64, 64], "n_zero": [32, 32]}
    fb = forced_balance(h)
    assert fb["balance"] == 0.5 and "64 positive, 64 negative, 32 zero per layer" in fb["text"]


def test_a_stand_in_reading_of_self_attention_says_so_and_real_cross_attention_is_read(forced_root):
    # the claim is on cross-attention; an encoder's self-attention is a different attention
    _write_job(forced_root, "02_weight_topology", "whisper-tiny", {
        "qk_cross_balance": {"decoder/cross": _h(0.5, exact=True, per_layer=[0.5] * 4, nulls=RI)},
        "qk_self_balance": {"decoder/self": _h(0.4, exact=True, per_layer=[0.4] * 4, nulls=RI)}})
    rows = claims.evaluate(forced_root)
    m = claims_tables.matrix(rows)
    for x in HELD_BY:
        cell = m["cells"][("qk_cross_balance", x)]
        assert cell["text"].endswith("· read on self-attention") and "stand-in reading" in cell["reason"]
    real = m["cells"][("qk_cross_balance", "whisper-tiny")]
    assert real["verdict"] == claims.HELD and real["stand-in reading"] == "" and "self" not in real["text"]
    assert [r["scope"] for r in rows if r["model"] == "whisper-tiny" and r["claim"] == "qk_cross_balance"] == \
        ["decoder/cross"]
    line = m["bottom line"]["qk_cross_balance"]
    assert "6 of them: a stand-in reading of self-attention" in line and "whisper-tiny, " not in line, line


def test_a_range_with_a_negative_bound_is_written_with_to():
    """The demo's bottom line read "it is -0.535--0.204 %" (an en dash beside a minus sign): "to", and a true
    minus sign (U+2212)."""
    assert claims_tables._span([-0.00535, -0.00204], "") == "−0.00535 to −0.00204"
    assert claims_tables._span([-0.5, 0.25], "%") == "−0.5 to 0.25 %"
    assert claims_tables._span([0.2, 0.23], "") == "0.2–0.23"
    assert claims_tables._span([0.5, 0.5], "") == "0.5"
