"""Issue 37 (referee): a stand-in whose QK balance the weight shapes force (SmolLM2-135M: grouped-
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
