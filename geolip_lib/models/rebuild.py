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
  written as a ``save_pretrained`` folder (:mod:`.rebuild_write`; the candidate classes: :mod:`.rebuild_classes`).

Names. A key may carry a head's prefix or not, and may be spelled as transformers 4.x (and a 5.x
``save_pretrained``) writes it -- the checkpoint names -- or as a running 5.x model names it (DINOv2's
``attention.q_proj``, fused experts). Both are placed against every candidate class built on the meta device;
running names are turned into checkpoint names by transformers' own ``revert_weight_conversion``, so the
rename tables are transformers', not a copy (4.57's names equal 5.23's checkpoint names for every tiny
model_type: tests/unit/models/test_rebuild.py, marked external).

Notes. ``infer_config(...)[NOTES]`` (a private key :func:`write_folder` ignores) holds ``class`` (the class the
shapes fill), ``read`` (fields read from shapes) with ``sources`` (the key each came from), ``given`` and
``defaulted`` (fields a forward depends on that no shape shows and nobody gave: transformers' defaults), for a
note in the plan. Pop it before writing the config anywhere else (:class:`Header` does: it keeps it in
``facts["inferred"]`` and a note).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..families import family_of_model_type, spec
from ..families.shapes import ONLY_IF_KNOWN, Table, table_of
from .rebuild_classes import best_place, candidates, make_config, output_ties, refuse_misfit
from .rebuild_write import write_folder

__all__ = ["Header", "NOTES", "infer_config", "inferred_note", "write_folder"]

#: the private key of :func:`infer_config`'s result holding what was read, given and defaulted (for a note)
NOTES = "_inferred"


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

    def __post_init__(self) -> None:
        """``config`` is a plain transformers config (the preflight and the planner read it as one): what
        :func:`infer_config` says about it (its private :data:`NOTES` key) moves to ``facts["inferred"]`` and a
        note."""
        self.config = dict(self.config)
        inferred = self.config.pop(NOTES, None)
        for k in [k for k in self.config if str(k).startswith("_")]:
            self.config.pop(k)
        if inferred:
            self.facts = {**self.facts, "inferred": inferred}
            self.notes = list(self.notes) + [inferred_note(inferred)]


def inferred_note(inferred: Mapping[str, Any]) -> str:
    """One line for the plan: the class the shapes fill, the fields read from shapes, given and defaulted."""
    parts = [f"config of {inferred.get('class', '?')}: {len(inferred.get('read', []))} fields read from shapes"]
    if inferred.get("given"):
        parts.append(f"given: {', '.join(inferred['given'])}")
    if inferred.get("defaulted"):
        parts.append(f"transformers' defaults for {', '.join(inferred['defaulted'])}")
    return "; ".join(parts)


def _flat(d: Mapping[str, Any], pre: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, Mapping) and k.endswith("_config"):
            out.update(_flat(v, f"{pre}{k}."))
        else:
            out[pre + k] = v
    return out


def _nest(flat: Mapping[str, Any]) -> dict:
    out: dict = {}
    for k, v in flat.items():
        *path, last = k.split(".")
        d = out
        for p in path:
            d = d.setdefault(p, {})
        d[last] = v
    return out


def _clean_shapes(shapes: Mapping[str, tuple]) -> dict:
    """Key -> tuple of ints; a size that is not a non-negative whole number is a one-line ValueError."""
    out = {}
    for k, s in shapes.items():
        try:
            dims = tuple(s)
            ok = all(not isinstance(d, bool) and float(d) == int(d) and int(d) >= 0 for d in dims)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"tensor {k}: shape {s!r} is not a list of whole sizes; the reader gave a broken shape")
        out[str(k)] = tuple(int(d) for d in dims)
    return out


def _model_type(family: str, given: Mapping[str, Any]) -> str:
    fam = spec(family)
    mt = given.get("model_type")
    if mt:
        if fam.model_types and mt not in fam.model_types:
            raise ValueError(f"config: model_type {mt!r} is not one of family {family}'s "
                             f"({', '.join(fam.model_types)})")
        return str(mt)
    if len(fam.model_types) == 1:
        return fam.model_types[0]
    raise ValueError(f"family {family}: the shapes do not tell its model_type; add config: {{model_type: ...}} to "
                     f"the params file (one of {', '.join(fam.model_types)})")


class _Reader:
    """One table applied to one file's shapes: the values read, and the key each was read from."""

    def __init__(self, table: Table, shapes: dict, given: dict, base: dict):
        self.t, self.shapes, self.given, self.base = table, shapes, given, base
        self.values: dict = {}
        self.source: dict = {}

    def cur(self, f: str):
        for d in (self.given, self.values, self.base):
            if d.get(f) is not None:
                return d[f]
        return None

    def first(self, rx: str):
        r = re.compile(r"(?:^|\.)" + rx)
        return next((k for k in self.shapes if r.search(k)), None)

    def _div(self, n: int, by, key: str, what: str) -> int:
        if not isinstance(by, int) or isinstance(by, bool) or by <= 0 or n % by:
            raise ValueError(f"config: {what}={by!r} does not divide {key} (size {n}); give the model's true {what}")
        return n // by

    def _how(self, n: int, how, key: str, pre: str = "") -> int:
        if how is None:
            return n
        op = how[0]
        if op == "add":
            return n + how[1]
        if op == "div":
            return self._div(n, how[1], key, "a factor")
        if op == "per":
            return self._div(n, self.cur(how[1]), key, how[1])
        if op == "grid":
            side = math.isqrt(max(n - how[2], 0))
            if side * side != n - how[2]:
                raise ValueError(f"tensor {key}: {n} positions are not a square grid (+{how[2]}); give image_size")
            return side * self.cur(how[1])
        if op == "fused_kv":
            h = self.cur(how[1])
            d = self.cur(how[2]) if how[2] else None
            d = d or self._div(self.cur(pre + "hidden_size"), h, key, how[1])
            return self._div(self._div(n, d, key, "head width") - h, 2, key, "a factor")
        if op == "lin_k":
            nv, dv = self.cur(pre + "linear_num_value_heads"), self.cur(pre + "linear_value_head_dim")
            nk = self.cur(pre + "linear_num_key_heads")
            return self._div(n - how[1] * nv * dv, 2 * nk if isinstance(nk, int) else nk, key, "linear_num_key_heads")
        raise ValueError(f"shape table: unknown rule {how!r}")

    def read(self) -> None:
        for f, rx in self.t.layers:
            r = re.compile(r"(?:^|\.)" + rx)
            idx = [int(m.group(1)) for k in self.shapes for m in [r.search(k)] if m]
            if idx:
                self.values[f], self.source[f] = max(idx) + 1, f"{len(set(idx))} layer indices of {rx}"
        for f, rx, dim, how in self.t.rows:
            if f in self.values:
                continue
            k = self.first(rx)
            if k is not None and dim < len(self.shapes[k]):
                pre = f.rsplit(".", 1)[0] + "." if "." in f else ""
                self.values[f], self.source[f] = self._how(self.shapes[k][dim], how, k, pre), k
        for f, rx, yes, no in self.t.flags:
            self.values[f] = yes if self.first(rx) else no
            self.source[f] = f"presence of {rx}"
        if self.t.layer_types:
            f, rx, kinds = self.t.layer_types
            r, per = re.compile(r"(?:^|\.)" + rx), {}
            for k in self.shapes:
                m = r.search(k)
                if m:
                    for krx, kind in kinds:
                        if re.search(krx, m.group(2)):
                            per[int(m.group(1))] = kind
            if per and len(set(per.values())) > 1:
                self.values[f] = [per.get(i, kinds[-1][1]) for i in range(max(per) + 1)]
                self.source[f] = "which layers hold which attention"


def infer_config(family: str, shapes: Mapping[str, tuple], given: Mapping[str, Any]) -> dict:
    """The config dict of a ``family`` model whose state dict has these ``shapes`` (see the module docstring).

    Sizes come from ``families/shapes.py``'s table of the model_type; ``given`` wins and is checked against them;
    the head count is asked for, never guessed; the result is verified by building every candidate class on the
    meta device and comparing every shape. ``result[NOTES]`` says which fields were read, given and defaulted.
    """
    shapes = _clean_shapes(shapes)
    if not shapes:
        raise ValueError("the file holds no tensors: nothing to infer a config from")
    given = _flat(dict(given or {}))
    mt = _model_type(family, given)
    table = table_of(mt, family) or table_of(mt, family_of_model_type(mt) or "")
    if table is None:  # no table: a whole config (a config.json beside the file) is still checked on meta
        if len(given) <= 1:
            raise ValueError(f"model_type {mt}: no shape table in geolip_lib/families/shapes.py; give the whole "
                             f"config (a config.json beside the file)")
        table = Table()
    base_config = make_config({"model_type": mt})
    base = _flat(base_config.to_dict())
    r = _Reader(table, shapes, given, base)
    ask = list(table.ask) + [f for f, rx in table.ask_if if r.first(rx)]
    for f in ask:
        if given.get(f) is None:
            yaml = "".join(f"{{{p}: " for p in f.split(".")[:-1]) + f"{{{f.split('.')[-1]}: N}}" + "}" * f.count(".")
            raise ValueError(f"model_type {mt} needs {f}: the file does not say it; add config: {yaml} "
                             f"to the params file")
    r.read()
    for f, v in r.values.items():
        if f in given and given[f] is None:  # a config.json's null: "the default", which the shapes now tell
            del given[f]
        if f in given and given[f] != v and not (isinstance(v, int) and _num(given[f]) == v):
            raise ValueError(f"config: {f} is given as {given[f]!r} but the shapes say {v!r} ({r.source[f]})")
    amap = dict(getattr(base_config, "attribute_map", {}) or {})
    for alias, real in amap.items():  # one size read under both spellings (num_experts / num_local_experts)
        if alias in r.values and real in r.values and r.values[alias] == r.values[real]:
            del r.values[alias]
    known = set(base) | set(given) | set(amap)
    flat = {k: v for k, v in r.values.items() if k in known or k.rsplit(".", 1)[-1] not in ONLY_IF_KNOWN}
    flat.update({k: v for k, v in given.items() if not k.startswith("_")})
    flat["model_type"] = mt
    cfg = _nest(flat)
    tied, cls = _verify(cfg, shapes, mt, ask)
    if tied and "tie_word_embeddings" not in given:
        cfg["tie_word_embeddings"] = flat["tie_word_embeddings"] = r.values["tie_word_embeddings"] = tied
        r.source["tie_word_embeddings"] = "no output table among the shapes: it is the input table"
    read = sorted(k for k in flat if k in r.values and k not in given)
    cfg[NOTES] = {"class": cls, "read": read, "sources": {k: r.source[k] for k in read},
                  "given": sorted(k for k in given if k != "model_type"),
                  "defaulted": [f for f in table.forward if f not in given and f not in r.values]}
    return cfg


def _num(v):
    try:
        return int(v) if float(v) == int(v) else v
    except (TypeError, ValueError, OverflowError):
        return v


def _verify(cfg: dict, shapes: dict, mt: str, ask=()) -> tuple:
    """Build the candidates on meta and check ``shapes`` against the best; returns (the tie the shapes imply: True
    when the output head's tied tables are all absent, else None -- :func:`write_folder` decides from the values;
    the class name)."""
    lays = candidates(cfg, mt)
    best = best_place(shapes, lays, cfg.get("architectures"))
    name = best.layout.cls.__name__
    refuse_misfit(best, mt, "are not in the file")
    bad = [(k, s, best.layout.ckpt[best.ckpt[k]]) for k, s in shapes.items()
           if k in best.ckpt and best.layout.ckpt[best.ckpt[k]] != s]
    bad += [(k, s, best.layout.runtime[best.runtime[k]]) for k, s in shapes.items()
            if k in best.runtime and best.layout.runtime[best.runtime[k]] != s]
    if bad:
        raise ValueError(f"the shapes disagree with the inferred {mt} config ({name}): "
                         + "; ".join(f"{k} is {list(a)} in the file, {list(b)} by the config" for k, a, b in bad[:2])
                         + (f" (and {len(bad) - 2} more)" if len(bad) > 2 else "")
                         + (f"; check the given {', '.join(ask)}" if ask else ""))
    targets = output_ties(best.layout, cfg)
    return (True if targets and not any(t in best.ckpt.values() for t in targets) else None), name
