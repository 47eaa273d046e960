"""Round four (issue 39), the items left open after its first commits: derived copies and
``--resume`` keyed by the weights they hold, a ``config:`` that drops layers, named pipes among
the YAML inputs, a zip bomb and colliding destinations in a package, the lock of a live run and
``--report-only``, the words of a few refusals, an interrupted ``fetch_packaged.py``, the
WordNet lexicon cache keyed by the code that builds it.

Probes the runner can refuse before a kernel run ``run_all.main`` in-process (the ``box``
fixture of round two: exit 2, the output root not created, the sentinel beside it intact);
probes of a reader or a cache call it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

from geolip_lib import models, params
from geolip_lib.models import preflight
from geolip_lib.runner.jobs import Job
from geolip_lib.runner.resume import FINGERPRINT, fingerprint, stale_reasons

from .test_inputs_round2 import box, refused  # noqa: F401 - the fixture and helper of round two


def _gpt2(d: Path, seed: int = 0, n_embd: int = 32, n_layer: int = 2) -> Path:
    torch.manual_seed(seed)
    cfg = GPT2Config(n_embd=n_embd, n_layer=n_layer, n_head=2, vocab_size=64, n_positions=32)
    GPT2LMHeadModel(cfg).save_pretrained(d)
    return d


def _params_file(tmp: Path, name: str, local: Path, extra: str = "") -> Path:
    y = tmp / f"{name}.yaml"
    y.write_text(f"name: {name}\nfamily: gpt2\nsource: local\nlocal_dir: {local}\n{extra}")
    return y


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOLIP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# ------------------------------------------------------------------ 1. a config: that drops layers
def test_a_config_that_drops_layers_is_refused_before_a_kernel(box, capsys, tmp_path):
    """``n_layer: 1`` on a 2-layer folder loaded a 1-layer model, the 16 tensors of layer 1 ignored,
    while the provenance named the 2-layer file."""
    d = _gpt2(tmp_path / "two")
    y = _params_file(tmp_path, "drop", d, "config:\n  n_layer: 1\n")
    box.write("  rng:\n    per_model: true\n    models: []\n")
    (line,) = refused(box, capsys, "--models", str(y))
    assert line == (f"error: {params._rel(y)}: model 'drop': tensor transformer.h.1.attn.c_attn.bias in "
                    f"{d / 'model.safetensors'} has no place in the model {d / 'config.json'} with the config: of "
                    "params/models/drop.yaml makes (and 11 more tensor(s)): the weights hold more layers than the "
                    "config asks for, and those would be ignored while the provenance names the file; use the layer "
                    "count the weights were saved with")


def test_the_layer_count_the_weights_were_saved_with_passes(tmp_path):
    d = _gpt2(tmp_path / "two")
    for extra in ("", "config:\n  n_layer: 2\n"):
        p = params.load_model_params(_params_file(tmp_path, "same", d, extra))
        preflight.check_stored(p, d)  # no error: every stored tensor has its place
    n = sum(1 for k in load_file(str(d / "model.safetensors")) if ".h.1." in k)
    assert n == 12  # what the refusal above counts: the tensors of layer 1


# ------------------------------------------------------------------ 2. derived copies keyed by the weights
def _loaded_copy(y: Path) -> tuple[Path, dict]:
    lm = models.load(y)
    wd = lm.weights_dir
    return wd, {k: v.clone() for k, v in load_file(str(next(wd.glob("*.safetensors")))).items()}


def test_a_canonical_copy_follows_weights_resaved_in_place(tmp_path, cache):
    """GPT-2 re-saved in place (fine-tuned): notebooks 02 and 06 read the old canonical-layout copy
    in .cache/safetensors while the provenance recorded the new file's sha256."""
    d = _gpt2(tmp_path / "ft", seed=0)
    y = _params_file(tmp_path, "ft", d)
    wd0, w0 = _loaded_copy(y)
    assert wd0.parent == cache / "safetensors"
    _gpt2(d, seed=1)  # retrained, saved over the old files
    wd1, w1 = _loaded_copy(y)
    assert wd1 != wd0
    fresh = load_file(str(d / "model.safetensors"))
    key = "transformer.h.0.mlp.c_fc.weight"
    canon = next(k for k in w1 if k.endswith("h.0.mlp.c_fc.weight"))
    # the canonical copy holds the new weights (GPT-2's Conv1D stored transposed: nn.Linear layout)
    assert torch.equal(w1[canon], fresh[key].T) or torch.equal(w1[canon], fresh[key])
    assert not torch.equal(w1[canon], w0[canon])
    wd2, _ = _loaded_copy(y)
    assert wd2 == wd1  # unchanged weights: the same copy, not a new one per load


def test_a_q4_1_copy_follows_weights_resaved_in_place(tmp_path, cache):
    d = _gpt2(tmp_path / "q", seed=0)
    y = _params_file(tmp_path, "q", d, "quantize: q4_1\n")
    wd0, w0 = _loaded_copy(y)
    _gpt2(d, seed=1)
    wd1, w1 = _loaded_copy(y)
    assert wd1 != wd0
    k = next(k for k in w1 if k.endswith("h.0.mlp.c_fc.weight"))
    assert not torch.equal(w0[k], w1[k])


def test_resume_reruns_a_job_whose_weights_changed(box, tmp_path, cache, monkeypatch):
    """``--resume`` said "done, unchanged" after the weights were replaced."""
    d = _gpt2(tmp_path / "w", seed=0)
    y = _params_file(tmp_path, "w", d)
    monkeypatch.setenv(params.MODEL_FILES_ENV, str(y))
    job = Job("p", "ok", "w", "w")
    jd = box.out / "ok" / "w"
    jd.mkdir(parents=True)
    (jd / "metrics.json").write_text("{}")
    (jd / "executed.ipynb").write_text("{}")
    fp = fingerprint(job)
    assert set(fp["weights"]["w"]) == {"model.safetensors"}
    (jd / FINGERPRINT).write_text(json.dumps(fp))
    assert stale_reasons(job, box.out) == []
    _gpt2(d, seed=1)
    assert stale_reasons(job, box.out) == ["weights of w changed: model.safetensors"]
