"""A rebuilt model's ``save_pretrained`` folder from named tensors (part of :mod:`.rebuild`; see its docstring).

The tensors are placed in the candidate class they fill (:mod:`.rebuild_classes`), turned into checkpoint names
(the names transformers 4.x and a 5.x ``save_pretrained`` write), written as a temporary checkpoint and loaded by
transformers' own ``from_pretrained`` -- so every rename or fusion transformers 5 applies on load is its own, not a
copy -- with the loading report checked strictly, then saved with ``save_pretrained``. The saved values are read
back and compared bit for bit with the given ones.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .common import quiet_transformers
from .rebuild_classes import best_place, candidates, make_config, output_ties, refuse_misfit, to_ckpt

__all__ = ["write_folder"]


def _torch(k: str, v: Any) -> torch.Tensor:
    if isinstance(v, torch.Tensor):
        t = v.detach()
    elif isinstance(v, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(v))
    else:
        raise ValueError(f"tensor {k}: a {type(v).__name__}, not an array; the reader must give numpy or torch")
    if t.device.type == "meta":
        raise ValueError(f"tensor {k}: has no data (meta); the reader must give the values")
    return t.contiguous()


def _tie(p, ck: dict, cfg: dict) -> tuple[bool | None, list]:
    """Whether the output table is tied (each of its tied targets absent or equal to its source: True; one that
    differs: False; the class has none: None) and the tied targets to drop (equal copies). A tie the class always
    makes (T5's encoder table is its shared table) must hold: an absent copy is fine, a different one an error."""
    drop, tied, out = [], None, output_ties(p.layout, cfg)
    for t, s in p.layout.tied.items():
        same = t in ck and s in ck and ck[t].shape == ck[s].shape and torch.equal(ck[t], ck[s])
        if same:
            drop.append(t)
        if t not in out:
            if t in ck and not same:
                raise ValueError(f"tensor {t} differs from {s}, but {p.layout.cls.__name__} always ties them")
            continue
        tied = (t not in ck or same) if tied is None else tied and (t not in ck or same)
    return tied, drop


def write_folder(config: Mapping[str, Any], tensors: Mapping[str, Any], out_dir: Path,
                 filled: Iterable[str] = ()) -> dict:
    """Build the class the tensors fill, load them strictly and ``save_pretrained`` into ``out_dir``.

    ``config``: a config dict with ``model_type`` (e.g. :func:`.rebuild.infer_config`'s; private ``_`` keys are
    ignored; a ``tie_word_embeddings`` it holds is obeyed -- false keeps an output table equal to the input one,
    since the flag can change the forward, e.g. T5's output scaling; absent, the values decide); ``tensors``:
    key -> numpy array / torch tensor, named as the readers name them (a head's prefix and 4.x or 5.x spellings
    are fine); ``filled``: keys the caller made up itself (recorded). Returns the record: ``class``,
    ``model_type``, ``tied``, ``dropped_tied``, ``renamed`` ({count, examples: [(given, placed)]}), ``filled``,
    ``dtypes`` (dtype -> count), ``saved_dtype``, ``buffers_left_out`` (given non-persistent buffers, which
    transformers computes itself), ``n_params``, ``config`` (the saved config as a dict), ``init_kwargs`` (the
    constructor keywords the class was built with: ``add_pooling_layer=False`` when the file holds no pooler;
    load the folder with them), ``from_twin`` (absent tie source -> the tied copy it was filled from), ``notes``.
    """
    cfg = {k: v for k, v in dict(config).items() if not str(k).startswith("_")}
    if not cfg.get("model_type"):
        raise ValueError("config: no model_type; write_folder needs infer_config's config (or a config.json)")
    mt = cfg["model_type"]
    given = {str(k): _torch(k, v) for k, v in tensors.items()}
    if not given:
        raise ValueError("no tensors to write: the reader placed none")
    filled = sorted(set(filled))
    stray = [k for k in filled if k not in given]
    if stray:
        raise ValueError(f"filled tensor {stray[0]} is not among the tensors; pass the values it was filled with")
    lays = candidates(cfg, mt)  # the shared candidate builder (ties on, so a tied table may be absent)
    best = best_place(given, lays, cfg.get("architectures"))
    lay, name = best.layout, best.layout.cls.__name__
    refuse_misfit(best, mt, "are missing")
    ck = {best.ckpt[k]: given[k] for k in best.ckpt}
    runtime = {best.runtime[k]: given[k] for k in best.runtime}
    if runtime:
        ck.update(to_ckpt(lay, runtime))
    notes = _twins(best, ck, cfg)
    if lay.kwargs.get("add_pooling_layer") is False:
        notes.append(f"no pooler in the file: rebuilt as {name}(add_pooling_layer=False), without one")
    bad = [(k, tuple(v.shape), lay.ckpt[k]) for k, v in ck.items() if tuple(v.shape) != lay.ckpt[k]]
    if bad:
        k, a, b = bad[0]
        raise ValueError(f"tensor {k} is {list(a)} but {name} of this config has {list(b)}"
                         + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "") + "; the config does not fit")
    tied, drop = _tie(best, ck, cfg)
    if tied is False and cfg.get("tie_word_embeddings") is True:
        t = next(t for t in output_ties(lay, cfg) if t in ck)
        raise ValueError(f"config: tie_word_embeddings is given as true but tensor {t} differs from "
                         f"{lay.tied[t]}; give tie_word_embeddings: false")
    for t in drop:
        del ck[t]
    if tied is not None and "tie_word_embeddings" not in cfg:
        cfg["tie_word_embeddings"] = tied
    if tied is False:
        missing = [t for t in lay.tied if t not in ck]
        if missing:
            raise ValueError(f"tensor {missing[0]} is missing: the output table differs from the input table "
                             f"elsewhere, so it cannot be tied")
    # transformers loads one float dtype: the given one, or (mixed) one every given value fits exactly --
    # float32 holds float16 and bfloat16 bit for bit, so a float32 tensor is never rounded
    floats = {v.dtype for v in ck.values() if v.is_floating_point()}
    dtype = next(iter(floats)) if len(floats) == 1 else (
        torch.float64 if torch.float64 in floats else torch.float32) if floats else None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".rebuild-", dir=out_dir.parent))
    try:
        save_file(ck, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        make_config(cfg).save_pretrained(tmp)
        with quiet_transformers():
            model, info = lay.cls.from_pretrained(tmp, output_loading_info=True, dtype=dtype, **lay.kwargs)
        problems = [(what, sorted(info.get(what) or [])) for what in ("missing_keys", "unexpected_keys",
                                                                       "mismatched_keys", "error_msgs")]
        problems = [(w, ks) for w, ks in problems if ks]
        if problems:
            w, ks = problems[0]
            raise ValueError(f"{name} (model_type {mt}) loaded with {len(ks)} {w.replace('_', ' ')}: "
                             f"{', '.join(map(str, ks[:5]))}")
        with quiet_transformers():
            model.save_pretrained(out_dir, safe_serialization=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _check_saved(out_dir, ck)
    renamed = [(k, best.runtime[k]) for k in best.runtime] + [(k, v) for k, v in best.ckpt.items() if k != v]
    counts: dict = {}
    for v in ck.values():
        counts[str(v.dtype).replace("torch.", "")] = counts.get(str(v.dtype).replace("torch.", ""), 0) + 1
    return {"class": name, "model_type": mt, "tied": bool(tied), "dropped_tied": drop,
            "saved_dtype": str(dtype).replace("torch.", "") if dtype else None, "buffers_left_out": best.buffers,
            "renamed": {"count": len(renamed), "examples": renamed[:3]}, "filled": filled, "dtypes": counts,
            "n_params": sum(p.numel() for p in model.parameters()), "config": model.config.to_dict(),
            "init_kwargs": dict(lay.kwargs), "from_twin": dict(best.twins), "notes": notes}


def _twins(best, ck: dict, cfg: dict) -> list:
    """Fill each absent tie source from its present tied copy (:attr:`Placement.twins`; dynamo's BART / Marian
    graphs hold the shared table once, as ``model.encoder.embed_tokens.weight`` or ``lm_head.weight``, each the
    same Parameter as ``model.shared.weight`` in the class, so the values are the file's own). A copy the class
    always ties is preferred to the output head, which only ``tie_word_embeddings`` ties: when the two differ the
    head is the untied one. The candidates are built with the config's flag (on unless given off), so a head the
    config unties is no twin. Returns the notes."""
    notes, lay = [], best.layout
    out = output_ties(lay, cfg) if best.twins else set()
    for s, t in best.twins.items():
        copies = [c for c, src in lay.tied.items() if src == s and c in ck]
        t = next((c for c in copies if c not in out), t)
        ck[s], best.twins[s] = ck[t], t
        notes.append(f"{s}: not in the file; the same Parameter as {t} in {lay.cls.__name__} (tied): filled from it")
    return notes


def _check_saved(out_dir: Path, ck: dict) -> None:
    """Every saved tensor equals the given one bit for bit (a tied copy the save dropped is not compared)."""
    seen = 0
    index = out_dir / "model.safetensors.index.json"  # the files this save wrote, not older ones beside them
    files = (sorted({out_dir / f for f in json.loads(index.read_text())["weight_map"].values()})
             if index.exists() else [out_dir / "model.safetensors"])
    for f in files:
        with safe_open(str(f), framework="pt") as h:
            for k in h.keys():
                if k in ck:
                    a, b = h.get_tensor(k), ck[k]
                    if a.dtype != b.dtype and b.is_floating_point():
                        b = b.to(a.dtype)
                        if not torch.equal(b.to(ck[k].dtype), ck[k]):
                            raise ValueError(f"tensor {k}: {ck[k].dtype} does not fit {a.dtype} exactly")
                    if a.shape != b.shape or not torch.equal(a.reshape(-1).view(torch.uint8),
                                                             b.reshape(-1).view(torch.uint8)):
                        raise ValueError(f"tensor {k}: the saved values differ from the given ones")
                    seen += 1
    if not seen:
        raise ValueError(f"{out_dir}: save_pretrained wrote none of the given tensors")
