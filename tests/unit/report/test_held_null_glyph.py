"""A referee found: "held, but the null gives it too" got the glyph ● and the tooltip of
"held" ("separated from every null") in the legend and the details, because ``_verdict``
matched the prefix "held". It has its own glyph ■ and meaning, wherever a person reads it."""
from __future__ import annotations

import pytest

from geolip_lib import claims
from geolip_lib.claims import tables as claims_tables
from geolip_lib.report import sections
from geolip_lib.report.records import JobRecord
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit

HELD_NULL = claims.HELD_NULL


def _span_of(html: str, word: str) -> str:
    """The ``<span ...>`` that shows the verdict ``word`` (its glyph and tooltip)."""
    end = html.index(f"{word}</span>")
    return html[html.rindex("<span", 0, end):end + len(word)]


def test_every_status_is_shown_with_its_own_glyph_and_meaning():
    for v in claims.STATUSES:
        s = sections._verdict(v)
        assert s.count(claims_tables.VERDICT_GLYPHS[v]) == 1
        assert sections.tip(claims_tables.VERDICT_MEANING[v]) in s
    s = sections._verdict(HELD_NULL)
    assert "■" in s and "●" not in s and "separated from every null" not in s
    assert "not evidence of learning" in s
    assert sections._verdict("held (3 scopes)").count("●") == 0  # exact match: no prefix gives a glyph


def test_the_legend_gives_held_but_the_null_too_its_own_square():
    legend = sections.verdict_legend()
    span = _span_of(legend, HELD_NULL)
    assert "■ " + HELD_NULL in span and "●" not in span and "separated from every null" not in span
    assert "● held</span>" in legend


@pytest.fixture
def held_null_root(tmp_path):
    """The seed's model holds only as its random-init twin does (held, but the null gives it too)."""
    _write_job(tmp_path, "02_weight_topology", "t5-v1_1-xxl", {"qk_cross_balance": {"decoder/cross": _h(
        0.5, exact=True, per_layer=[0.5] * 24, nulls={"random_init": {"value": 0.5, "interval": "exact"}})}})
    rec = tmp_path / claims_record_dir()
    rec.mkdir(parents=True)
    return tmp_path


def claims_record_dir() -> str:
    return f"{sections.CLAIMS_NOTEBOOK}/all"


def test_the_claims_section_shows_a_square_for_such_a_cell_in_matrix_legend_and_details(held_null_root):
    rows = claims.evaluate(held_null_root)
    m = claims_tables.matrix(rows)
    assert m["cells"][("qk_cross_balance", "t5-v1_1-xxl")]["verdict"] == HELD_NULL
    rec = JobRecord(sections.CLAIMS_NOTEBOOK, "all", held_null_root / claims_record_dir(), {})
    html = sections.seed_claims_section(held_null_root, {sections.CLAIMS_NOTEBOOK: [rec]}, embed=True)
    cell = html[html.index("title='t5-v1_1-xxl · cross-attention QK balance"):].split("</td>")[0]
    assert "<span class='glyph'>■</span>" in cell  # the matrix
    details = html[html.index("<details class='claims-details'>"):]
    spans = [_span_of(part + f"{HELD_NULL}</span>", HELD_NULL)
             for part in details.split(f"{HELD_NULL}</span>")[:-1]]
    assert spans, "the details show the verdict"
    for s in spans:  # the details' verdict column: the square and the held-null meaning, never the circle
        assert "■ " + HELD_NULL in s and "●" not in s and "separated from every null" not in s, s
    assert "■ " + HELD_NULL in html[:html.index("<details")]  # the legend
