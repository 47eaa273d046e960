"""A claims file's strings are drawn as text: a "$" in a title, a seed value or a model's name is no
mathtext, so notebook 15's figures are drawn whatever a paper's claims file holds."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from geolip_lib import claims
from geolip_lib.claims.plots import claims_forest, claims_matrix
from geolip_lib.claims.tables import matrix
from geolip_lib.plotting import png_bytes
from tests.unit.claims.conftest import _h as h
from tests.unit.claims.conftest import _write_job as write_job

pytestmark = pytest.mark.unit
NB = "02_weight_topology"


def test_dollar_signs_in_a_claims_file_are_drawn_literally(tmp_path):
    cf = tmp_path / "dollar-x.yaml"
    cf.write_text(f"""name: dollar-x
title: "Paper $x^{{2 costs$ 5"
source: "Paper X"
claims:
  - id: q
    title: "the $q_{{sparsity claim$"
    seed_value: "$0.9^{{$"
    seed_models_text: "X"
    forms:
      - reading: both
        models: [m-small]
        notebook: {NB}
        record: q_sparsity
        rule: {{at_least: 0.5}}
""")
    write_job(tmp_path, NB, "m-small", {"q_sparsity": {"all": h(0.9, 0.85, 0.95)}})
    rows = claims.evaluate(tmp_path, cf)
    for fig in (claims_forest(rows, claims=cf), claims_matrix(matrix(rows, claims=cf))):
        assert png_bytes(fig)[:4] == b"\x89PNG"  # mathtext would raise while the figure is drawn
        texts = [t.get_text() for t in fig.findobj(match=lambda o: hasattr(o, "get_text"))]
        assert any("$" in t for t in texts)
        plt.close(fig)


def test_a_claims_parameter_naming_a_pipe_says_it_is_no_regular_file(tmp_path, capsys):
    import os

    import run_all
    pipe = tmp_path / "claims.yaml"
    os.mkfifo(pipe)
    profile = tmp_path / "p.yaml"
    profile.write_text("name: p\ndescription: probe\nnotebooks:\n  15_seed_claims:\n    per_model: false\n"
                       f"    parameters: {{CLAIMS: '{pipe}'}}\n", encoding="utf-8")
    code = run_all.main(["--profile", str(profile), "--out", str(tmp_path / "out"), "--no-pdf"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "is not a regular file" in err[0] and "does not exist" not in err[0], err
