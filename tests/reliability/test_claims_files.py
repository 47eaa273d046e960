"""Probes of a hostile or careless claims file: a claims file is data. Every name
that becomes a path is a safe name, ``null_sentence`` is a checked template, numbers are
finite, ``record:`` names a quantity a notebook records, and notebook 15's ``CLAIMS`` typo is
one line, exit 2, before any kernel. Each bad file is one line naming the file and the key."""
from __future__ import annotations

import json

import pytest
import yaml

import run_all
from geolip_lib import claims
from geolip_lib.claims import HELD, NOT_TESTED
from geolip_lib.params import ParamsError

pytestmark = pytest.mark.unit

GOOD = {"name": "paper-x", "title": "Paper X", "source": "Paper X, table 2",
        "claims": [{"id": "cv", "title": "CV", "seed_value": "0.21", "seed_models_text": "T5",
                    "null_sentence": "The {null} gives {value} too.",
                    "forms": [{"reading": "both", "models": ["t5-small"], "notebook": "01_embedding_terrain",
                               "record": "pentachoron_cv", "rule": {"band": ["0.20", "0.23"]}}]}]}


def _file(tmp_path, edit=None):
    data = json.loads(json.dumps(GOOD))
    if edit:
        edit(data)
    p = tmp_path / "paper-x.yaml"
    p.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return p


def _one_line(tmp_path, edit) -> str:
    with pytest.raises(ParamsError) as exc:
        claims.load(_file(tmp_path, edit))
    msg = str(exc.value)
    assert "\n" not in msg and "paper-x.yaml" in msg, msg
    return msg


def _job(root, notebook, model, value):
    d = root / notebook / model
    d.mkdir(parents=True)
    h = {"value": value, "interval": {"lo": value - 0.001, "hi": value + 0.001, "method": "bootstrap",
                                      "level": 0.95, "kind": "sampled"}, "kind": "sampled", "nulls": {}}
    (d / "metrics.json").write_text(json.dumps({"notebook": notebook, "model": model, "headline": {},
                                                "metrics": {"claims": {"pentachoron_cv": {"embedding": h}}}}))


def test_a_notebook_path_out_of_the_root_is_refused_at_load_and_never_read(tmp_path):
    """``notebook: ../../../../tmp/x/evil/nb`` passed the load check when notebooks/<that>.ipynb
    existed, and evaluate read metrics.json outside the root, giving "held"."""
    evil = tmp_path / "evil"
    (evil / "notebooks").mkdir(parents=True)
    (evil / "notebooks" / "nb.ipynb").write_text("{}")
    _job(evil, "nb", "t5-small", 0.215)
    rel = "../" * 12 + str(evil / "nb").lstrip("/")
    msg = _one_line(tmp_path, lambda d: d["claims"][0]["forms"][0].update(notebook=rel))
    assert "key 'claims.0.forms.0.notebook'" in msg and "not a safe name" in msg
    # the same value through a root: nothing outside it decides a verdict
    root = tmp_path / "root"
    _job(root, "01_embedding_terrain", "t5-small", 0.30)
    row = next(r for r in claims.evaluate(root, _file(tmp_path)) if r["model"] == "t5-small")
    assert row["verdict"] != HELD and row["value"] == pytest.approx(0.30)


@pytest.mark.parametrize("sentence,words", [
    ("{value:>100000000}", "has a format spec"),                 # made 150 MB metrics.json / html (rc 0)
    ("{null.__class__.__mro__}", "is not allowed"),              # rendered Python internals
    ("{nope}", "is not allowed"),                                # failed inside the kernel
    ("{value!r}", "has a conversion"),
    ("{0} and {}", "is not allowed"),
    ("{null", "not a template"),
])
def test_null_sentence_is_a_checked_template(tmp_path, sentence, words):
    msg = _one_line(tmp_path, lambda d: d["claims"][0].update(null_sentence=sentence))
    assert "key 'claims.0.null_sentence'" in msg and words in msg, msg


@pytest.mark.parametrize("edit,key", [
    (lambda d: d["claims"][0].update(scale=float("nan")), "claims.0.scale"),
    (lambda d: d["claims"][0]["forms"][0].update(reference={"m": float("nan")}), "claims.0.forms.0.reference.m"),
    (lambda d: d["claims"][0]["forms"][0].update(rule={"band": [float("-inf"), "0.23"]}), "claims.0.forms.0.rule"),
])
def test_numbers_are_finite(tmp_path, edit, key):
    """``scale: .nan`` and ``reference: {m: .nan}`` gave "held"."""
    msg = _one_line(tmp_path, edit)
    assert f"key '{key}" in msg and "finite" in msg, msg


def test_a_record_typo_is_one_line_at_load_not_not_tested_everywhere(tmp_path):
    msg = _one_line(tmp_path, lambda d: d["claims"][0]["forms"][0].update(record="pentachoron_vc"))
    assert "key 'claims.0.forms.0.record': no notebook records metrics.claims.pentachoron_vc" in msg
    root = tmp_path / "root"
    _job(root, "01_embedding_terrain", "t5-small", 0.215)
    assert {r["verdict"] for r in claims.evaluate(root, _file(tmp_path))} - {NOT_TESTED}  # the good file: a verdict


def test_a_yaml_alias_bomb_is_refused_by_the_shared_loader(tmp_path):
    """The claims file goes through the project's YAML loader (params._load_yaml), which bounds
    size and aliases (H4): a billion-laughs file is one line, not minutes of work."""
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 10) + "]")
    p = tmp_path / "paper-x.yaml"
    p.write_text("\n".join(lines) + "\nname: paper-x\n", encoding="utf-8")
    with pytest.raises(ParamsError) as exc:
        claims.load(p)
    assert "\n" not in str(exc.value) and "paper-x.yaml" in str(exc.value)


def test_notebook_15s_claims_typo_is_one_line_before_a_kernel(tmp_path, capsys):
    """``CLAIMS: seed-0001`` in a profile: exit 2 with one line, no kernel (it failed inside the
    kernel, exit 1)."""
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\ndescription: probe\nnotebooks:\n  15_seed_claims:\n    per_model: false\n"
                       "    parameters: {CLAIMS: seed-0001}\n", encoding="utf-8")
    out = tmp_path / "out"
    code = run_all.main(["--profile", str(profile), "--out", str(out), "--no-pdf"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1, err
    assert "parameter CLAIMS: unknown claims file 'seed-0001'" in err[0] and "known: " in err[0]
    assert not (out / "15_seed_claims").exists()
