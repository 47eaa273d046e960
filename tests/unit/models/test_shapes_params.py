"""params/models/shapes-*.yaml hold the real architectures: their parameter counts are the
published ones, and no tiny default (geolip_lib.models.tiny.TINY_DEFAULTS) leaks into them.

Built on the meta device (no memory, no weights), so the check takes seconds.
"""
from __future__ import annotations

import pytest
import torch

from geolip_lib.models.config_checks import check_config
from geolip_lib.models.tiny import resolve_config
from geolip_lib.params import load_model_params

# parameters of the real checkpoints (unique tensors; Qwen3.5-0.8B: its language model only,
# the decoder_lm family loads no vision tower)
COUNTS = {
    "shapes-t5-small": 60_506_624,
    "shapes-t5-base": 222_903_552,
    "shapes-bert-large-uncased": 335_141_888,
    "shapes-dinov2-large": 304_368_640,
    "shapes-clip-vit-b-16": 149_620_737,
    "shapes-qwen3.5-0.8b": 752_393_024,
}
# keys the params file may leave to the tiny default because the family's config class does
# not declare them (check_config rejects them), with the value the real model uses
ALLOWED_DEFAULTS = {"decoder_start_token_id": 0}


def _build_meta(family: str, cfg: dict) -> torch.nn.Module:
    with torch.device("meta"):
        if family == "open_clip":
            import open_clip

            return open_clip.CLIP(**cfg)
        from transformers import AutoConfig

        from geolip_lib.models.loading import model_class

        c = dict(cfg)
        return model_class(family).from_config(AutoConfig.for_model(c.pop("model_type"), **c))


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_shapes_model_is_the_real_architecture(name):
    p = load_model_params(name)
    assert p.source == "tiny"
    check_config(p.family, p.config, f"params/models/{name}.yaml")
    cfg = resolve_config(p.family, p.config, tokenizer_len=None)
    leaked = {k: v for k, v in cfg.items() if k not in p.config}
    assert leaked == {k: v for k, v in ALLOWED_DEFAULTS.items() if k in leaked}
    for k, v in cfg.items():  # nested open_clip dicts: every sub-key given too
        if isinstance(v, dict):
            assert v == p.config[k], f"{name}: config.{k} has tiny defaults merged in"
    model = _build_meta(p.family, cfg)
    assert sum(t.numel() for t in model.parameters()) == COUNTS[name]
