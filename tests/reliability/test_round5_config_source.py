"""A ``config:`` override in a params file is named as the params file's, not blamed on the folder's
config.json (which does not say it): the layer limit and a tensor shape the override makes wrong."""
from __future__ import annotations

import pytest

from geolip_lib import params

from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two
from .test_round4_open import _gpt2, _params_file

pytestmark = pytest.mark.unit
PER_MODEL = "  rng:\n    per_model: true\n    models: []\n"


def test_a_layer_count_from_config_is_named_as_the_params_files(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "big", d, "config:\n  n_layer: 5000\n")
    box.write(PER_MODEL)
    lines = refused(box, capsys, "--models", str(y))
    assert len(lines) == 1 and "config: of " in lines[0] and "n_layer is 5000" in lines[0], lines
    assert "config.json: n_layer" not in lines[0]


def test_a_width_from_config_that_the_weights_do_not_have_names_the_override(box, capsys, tmp_path):
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "wide", d, "config:\n  n_embd: 48\n")
    box.write(PER_MODEL)
    lines = refused(box, capsys, "--models", str(y))
    assert len(lines) == 1 and f"with the config: of {params.model_file_label('wide')}" in lines[0], lines
    assert "fix config: in" in lines[0]
