"""A transformers model rebuilt from a file written in another format (ONNX, CTranslate2): the shared half.

Each format's reader (:mod:`.onnx_import`, :mod:`.ct2`) finds the file's tensors and names them with the
state-dict keys of the transformers class that was exported (``encoder.layer.0.attention.self.query.weight``,
or with a head's prefix: ``bert.``, ``transformer.``, ``model.``), in torch's layout. What is the same for every
format lives here:

* :class:`Header`: what a file says before any tensor data is read (its tensors' keys and shapes, the config
  inferred from them, facts for provenance and the plan);
* :func:`infer_config`: a family's config from the tensors' shapes (``families/shapes.py`` holds each family's
  table), checked against the fields given (the params file's ``config:``, a ``config.json`` beside the file);
  what shapes cannot tell (the head count) is asked for by name, never guessed;
* :func:`write_folder`: the transformers class whose state dict the tensors fill, built, loaded strictly and
  written as a ``save_pretrained`` folder.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = ["Header", "infer_config", "write_folder"]


@dataclass
class Header:
    """What a foreign file says before its tensor data is read.

    ``fmt``: "ONNX" | "CTranslate2"; ``tensors``: state-dict key -> shape (torch layout), every tensor the file
    stores that was placed; ``config``: the transformers config dict (with ``model_type``), inferred and checked;
    ``stored``: state-dict key -> the dtype as stored ("float32", "float16", "int8", ...); ``facts``: format facts
    for provenance and the plan (opset, graph inputs, files, spec name, revision, total bytes ...); ``notes``:
    one line per thing done that a reader should know (a transposition, a dequantization, a filled tensor).
    """

    fmt: str
    tensors: dict[str, tuple]
    config: dict[str, Any]
    stored: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def infer_config(family: str, shapes: Mapping[str, tuple], given: Mapping[str, Any]) -> dict:
    """The config dict of a ``family`` model whose state dict has these ``shapes`` (see the module docstring)."""
    raise NotImplementedError


def write_folder(config: Mapping[str, Any], tensors: Mapping[str, Any], out_dir: Path) -> dict:
    """Build the class the tensors fill, load them strictly and ``save_pretrained`` into ``out_dir``."""
    raise NotImplementedError
