"""The report keeps the provenance of a model loaded from GGUF or rounded to Q4_1:
its ``weights`` block carries flags and maps beside the file digests (provenance.model_info)."""
from __future__ import annotations

from pathlib import Path

import pytest

from geolip_lib.report.records import check_shape

pytestmark = pytest.mark.unit


def _model(weights):
    return {"name": "smollm2-135m", "source": "gguf", "dtype": "float32", "dequantized": True,
            "trained_weights": True, "weights": weights}


@pytest.mark.parametrize("weights", [
    {"dequantized": True, "quantization": {"blk.0.attn_q.weight": "Q4_1"}, "quantization_summary": {"Q4_1": 1},
     "gguf_file": {"name": "SmolLM2-135M-Instruct.Q4_1.gguf", "sha256": "ab" * 32, "bytes": 98}},
    {"dequantized": True, "simulated": True, "quantization": {"w": "Q4_1"}, "quantization_summary": {"Q4_1": 1},
     "gguf_file": None, "rounded_from": {"model.safetensors": {"sha256": "cd" * 32, "bytes": 1}}},
    {"model.safetensors": {"sha256": "ef" * 32, "bytes": 10}},
])
def test_a_dequantized_models_provenance_is_kept(weights):
    data = {"headline": {}, "provenance": {"models": [_model(weights)]}}
    assert check_shape(data, Path("m.json")) == []
    assert data["provenance"]["models"][0]["weights"] == weights


def test_a_weight_entry_of_the_wrong_type_is_still_dropped():
    data = {"headline": {}, "provenance": {"models": [_model({"model.safetensors": {"sha256": 5}})]}}
    problems = check_shape(data, Path("m.json"))
    assert len(problems) == 1 and "sha256" in problems[0]
