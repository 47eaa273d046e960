"""Issue 36 §6: seed 004's question (do QK operators share their spectral shape across layers while their
eigenvectors differ?) as a claims file, ``params/claims/seed-004.yaml``, read from notebook 06's
``metrics.claims`` (``operators.tables.operator_claims``): the seed's model is "not tested" without the hub, a
trained stand-in gets verdicts beside its random-init null, cross-attention is not read, and the quantities
themselves are checked on operators built to share (or not share) their spectra."""
from __future__ import annotations

import html

import pytest
import torch

from geolip_lib import claims, operators
from geolip_lib.operators import tables
from geolip_lib.report import sections
from geolip_lib.report.records import JobRecord
from tests.unit.claims.conftest import _h, _write_job

pytestmark = pytest.mark.unit
NB06 = "06_qk_operators"


def _null(v, half=0.02):
    return {"random_init": {"value": v, "interval": (v - half, v + half)}}


def _records(spec, op, gap, null_spec, null_op, null_gap, group="decoder.self"):
    spectral = {group: {"spectral_cos_to_anchor": _h(spec, exact=True, nulls=_null(null_spec, 0.01)),
                        "operator_cos_to_anchor": _h(op, exact=True, nulls=_null(null_op)),
                        "spectral_minus_operator": _h(gap, exact=True, nulls=_null(null_gap)),
                        "operator_cos_adjacent": _h(0.5, exact=True)}}
    return tables.operator_claims(spectral)


def test_operator_claims_maps_each_record_and_group():
    rec = _records(0.99, 0.02, 0.97, 0.98, 0.0, 0.98)
    assert set(rec) == set(tables.OPERATOR_CLAIMS) == {"qk_operator_cos", "qk_spectral_cos", "qk_spectral_minus_operator"}
    assert rec["qk_spectral_cos"]["decoder.self"]["value"] == 0.99
    assert all(list(v) == ["decoder.self"] for v in rec.values())
    assert tables.operator_claims({"decoder.self": {}}) == {k: {} for k in tables.OPERATOR_CLAIMS}  # one layer
    from geolip_lib.claims.recorded import recorded_quantities
    assert set(tables.OPERATOR_CLAIMS) <= set(recorded_quantities())  # the claims file's record: names are known


def test_a_trained_stand_in_gets_verdicts_beside_its_null_and_the_seed_model_is_not_tested(tmp_path):
    # a stand-in whose spectra are as close as random init's (held, but the null gives it too), whose operators
    # are far from orthogonal (not held), and a model with its cross-attention read nowhere
    _write_job(tmp_path, NB06, "qwen2.5-coder-1.5b", _records(0.99, 0.30, 0.69, 0.985, 0.0, 0.985))
    cross = _records(0.5, 0.5, 0.0, 0.9, 0.0, 0.9, group="decoder.cross")
    _write_job(tmp_path, NB06, "whisper-base", cross)
    rows = claims.evaluate(tmp_path, "seed-004")
    got = {r["claim"]: r["verdict"] for r in rows if r["model"] == "qwen2.5-coder-1.5b"}
    assert got == {"spectral_shape_shared": claims.HELD_NULL, "eigenvectors_differ": claims.NOT_HELD,
                   "spectrum_beyond_operator": claims.NOT_HELD}
    assert not [r for r in rows if r["model"] == "whisper-base"], "cross-attention is not seed 004's question"
    seed = [r for r in rows if r["seed model"]]
    assert {r["model"] for r in seed} == {"qwen3-4b"} and all(r["verdict"] == claims.NOT_TESTED for r in seed)


def test_the_matrix_is_headed_as_a_seed_s_and_escapes_its_title(tmp_path):
    _write_job(tmp_path, NB06, "qwen2.5-coder-1.5b", _records(0.99, 0.02, 0.97, 0.5, 0.0, 0.5))
    d = tmp_path / sections.CLAIMS_NOTEBOOK / "seed-004"
    d.mkdir(parents=True)
    groups = {sections.CLAIMS_NOTEBOOK: [JobRecord(sections.CLAIMS_NOTEBOOK, "seed-004", d,
                                                   {"metrics": {"claims_file": "params/claims/seed-004.yaml"}})]}
    page = html.unescape(sections.seed_claims_section(tmp_path, groups, embed=True, claims_file="seed-004"))
    assert "Do Seed 004's claims hold?" in page and "the seed's own models" in page and "the paper's" not in page
    # spectra close, operators orthogonal, and random init far from both: held, separated from the null
    got = {r["claim"]: r["verdict"] for r in claims.evaluate(tmp_path, "seed-004") if not r["seed model"]}
    assert got == {"spectral_shape_shared": claims.HELD, "eigenvectors_differ": claims.HELD_NULL,
                   "spectrum_beyond_operator": claims.HELD}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_quantities_see_a_rotated_operator_as_the_same_spectrum_and_a_different_operator(seed):
    """Layers whose QK operators are one operator in rotated bases (g' = Rᵀ g R, R orthogonal): spectral cosine 1,
    operator cosine ~0 (what the seed's 'spectral shape converges while eigenvectors don't' means); the same
    operator rescaled: both 1."""
    g = torch.Generator().manual_seed(seed)
    d, h, hd, L = 48, 2, 8, 4
    wq, wk = torch.randn(h * hd, d, generator=g, dtype=torch.float64), torch.randn(h * hd, d, generator=g,
                                                                                   dtype=torch.float64)
    rot = [torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0] for _ in range(L)]
    for kind in ("rotated", "rescaled"):
        Wq = torch.stack([wq @ r if kind == "rotated" else wq * (1 + i) for i, r in enumerate(rot)])
        Wk = torch.stack([wk @ r if kind == "rotated" else wk for r in rot])
        ops = operators.measure_layers(Wq, Wk, n_heads=h, n_kv_heads=h, top_k=4)
        an = operators.analyse(ops, anchor=-1, ks=(4,))
        spec, op = an["spectral"]["mean_cos_to_anchor"], an["mean_cos_to_anchor"]
        assert spec == pytest.approx(1.0, abs=1e-9)
        if kind == "rotated":
            assert abs(op) < 0.2
        else:
            assert op == pytest.approx(1.0, abs=1e-9)


def test_another_files_matrix_has_that_files_claims_and_models(tmp_path):
    """The real profile's report showed seed 001's claims as the rows of the Ethayarajh (2019) and seed 004
    matrices, with the paper's models (bert-base-uncased, elmo, gpt2) as 'trained stand-ins': the report's matrix
    was built without its claims file (sections._claims_data)."""
    _write_job(tmp_path, NB06, "qwen2.5-coder-1.5b", _records(0.99, 0.02, 0.97, 0.5, 0.0, 0.5))
    _, _, m = sections._claims_data(tmp_path, "seed-004")
    assert [c.id for c in m["claims"]] == ["spectral_shape_shared", "eigenvectors_differ", "spectrum_beyond_operator"]
    assert m["stand-ins"] == ["qwen2.5-coder-1.5b"] and "qwen3-4b" not in m["stand-ins"]
    assert m["cells"][("spectral_shape_shared", "qwen2.5-coder-1.5b")]["verdict"] == claims.HELD
    d = tmp_path / sections.CLAIMS_NOTEBOOK / "seed-004"
    d.mkdir(parents=True)
    groups = {sections.CLAIMS_NOTEBOOK: [JobRecord(sections.CLAIMS_NOTEBOOK, "seed-004", d,
                                                   {"metrics": {"claims_file": "params/claims/seed-004.yaml"}})]}
    page = html.unescape(sections.seed_claims_section(tmp_path, groups, embed=True, claims_file="seed-004"))
    assert "spectral shape shared across layers" in page and "pentachoron CV" not in page


def test_a_papers_file_speaks_of_the_papers_models_and_value(tmp_path):
    """Ethayarajh (2019)'s bottom lines and figure title say 'the paper's', not 'the seed's'; seed 004 says 'the
    seed's' (claims.tables.owner: one home for the word)."""
    from geolip_lib.claims import tables as ct

    assert ct.owner(claims.load("ethayarajh-2019")) == "the paper's"
    assert ct.owner(claims.load("seed-004")) == ct.owner(claims.load("seed-001")) == "the seed's"
    _write_job(tmp_path, "16_contextual_geometry", "all-minilm-l6-v2", {
        "anisotropy": {"block outputs": _h(0.40, 0.35, 0.45)}})
    _, _, m = sections._claims_data(tmp_path, "ethayarajh-2019")
    line = m["bottom line"]["anisotropy"]
    assert "the paper's models" in line and "seed" not in line
