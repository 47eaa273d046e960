"""Reading a params, profile or claims YAML file as untrusted input, and validating it against its
pydantic schema with one line per problem (:class:`ParamsError`).

The reader is bounded: at most :data:`YAML_MAX_BYTES` bytes, a regular file only (a named pipe
is never opened blocking), and at most :data:`YAML_MAX_NODES` nodes once YAML aliases are
expanded. The validator names the file and the key of every problem, and a misspelt key with
the required key it hides is one line."""
from __future__ import annotations

import difflib
import os
import stat
import typing
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .paths import ROOT


class ParamsError(ValueError):
    """A params file is missing, malformed, or fails its schema.

    One problem per line: ``str(exc)`` joins :attr:`lines` with newlines, and the runner prints
    each as its own ``error:`` line (never "[+1 more]")."""

    def __init__(self, *lines: str):
        self.lines = [ln for line in lines for ln in str(line).splitlines() if ln.strip()]
        super().__init__("\n".join(self.lines))

    @classmethod
    def of(cls, problems: Iterable[str]) -> "ParamsError":
        """All ``problems`` (deduplicated, in order) in one error."""
        return cls(*dict.fromkeys(problems))



YAML_MAX_BYTES = 1024 * 1024
YAML_MAX_NODES = 100_000


def _expanded_nodes(root: yaml.Node, path: Path) -> int:
    """Nodes of the tree a composed YAML document makes once every alias is expanded, counted
    without expanding it (a shared node is sized once); stops past :data:`YAML_MAX_NODES`.
    Hand-written: PyYAML has no limit on alias expansion."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids = [c for kv in node.value for c in kv] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        if done:
            size[id(node)] = 1 + sum(size[id(c)] for c in kids)
            open_.discard(id(node))
            if size[id(node)] > YAML_MAX_NODES:
                return size[id(node)]
            continue
        if id(node) in open_:
            raise ParamsError(f"{_rel(path)}: a YAML alias refers to a node that contains it (a recursive "
                              "structure); write the values out")
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in kids if id(c) not in size)
    return size[id(root)]


def _load_yaml(path: Path) -> dict:
    """A YAML mapping from ``path``, bounded: at most :data:`YAML_MAX_BYTES` bytes and
    :data:`YAML_MAX_NODES` nodes after alias expansion (one-line ParamsError naming the limit)."""
    try:
        # non-blocking, then a regular file only: a named pipe would block open() and read() forever
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(mode):
                raise ParamsError(f"{_rel(path)}: not a regular file (a pipe, a device or a folder); not read: give "
                                  "the path of the .yaml file itself")
            raw = fh.read(YAML_MAX_BYTES + 1)
        if len(raw) > YAML_MAX_BYTES:
            raise ParamsError(f"{_rel(path)}: larger than {YAML_MAX_BYTES} bytes, the limit for a params, profile "
                              "or claims file; split it or remove what is not parameters")
        node = yaml.compose(raw.decode("utf-8"), Loader=yaml.SafeLoader)
        if node is not None and (n := _expanded_nodes(node, path)) > YAML_MAX_NODES:
            raise ParamsError(f"{_rel(path)}: its YAML aliases expand to more than {YAML_MAX_NODES} nodes (the limit "
                              f"for a params, profile or claims file; {n} counted so far); write the values out "
                              "instead of nesting aliases")
        data = yaml.SafeLoader("").construct_document(node) if node is not None else None
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ParamsError(f"{path}: is a directory, not a YAML file; give the path of the .yaml file") from None
    except RecursionError:
        raise ParamsError(f"{_rel(path)}: nested too deeply to read (Python's recursion limit); "
                          "flatten it") from None
    except UnicodeDecodeError as exc:
        raise ParamsError(f"{_rel(path)}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParamsError(f"{_rel(path)}: not valid YAML ({where}{what})") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _schema_at(schema: type[BaseModel], loc: tuple) -> Optional[type[BaseModel]]:
    """The schema (model class) that the pydantic error location ``loc`` points into, if any."""
    ann: Any = schema
    for part in loc:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if typing.get_origin(ann) is Union and args:  # Optional[X]
            ann, args = args[0], [a for a in typing.get_args(args[0]) if a is not type(None)]
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            field = ann.model_fields.get(str(part))
            if field is None:
                return None
            ann = field.annotation
        elif typing.get_origin(ann) in (dict, list) and args:  # a key of dict[str, X], an index of list[X]
            ann = args[-1]
        else:
            return None
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) is Union and args:
        ann = args[0]
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _validate(schema: type[BaseModel], data: dict, path: Path) -> BaseModel:
    """``schema`` validated; every problem one line (a misspelt key and the required key it hides
    are one line: ``key 'famly': unknown key (allowed: ...); did you mean 'family'?``)."""
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        missing = {tuple(e["loc"]) for e in errors if e["type"] == "missing"}
        explained: set = set()
        lines = []
        for err in sorted(errors, key=lambda e: e["type"] != "extra_forbidden"):
            loc = tuple(err["loc"])
            key = ".".join(str(p) for p in loc) or "<root>"
            if err["type"] == "extra_forbidden":
                inner = _schema_at(schema, loc[:-1])
                allowed = ", ".join(inner.model_fields) if inner is not None else "see the schema"
                siblings = [m[-1] for m in missing if m[:-1] == loc[:-1]]
                near = difflib.get_close_matches(str(loc[-1]), [str(s) for s in siblings], n=1)
                hint = ""
                if near:
                    hint = f"; did you mean '{near[0]}'?"
                    explained.add(loc[:-1] + (near[0],))
                msg = f"unknown key (allowed: {allowed}){hint}"
            elif err["type"] == "missing":
                if loc in explained:
                    continue
                msg = "required key is missing"
            elif err["type"] == "value_error":  # a validator's own one-line message
                msg = str(err["ctx"]["error"]) if "error" in err.get("ctx", {}) else err["msg"]
            else:
                msg = f"{err['msg']} (got {err.get('input')!r})"
            lines.append(f"{_rel(path)}: key '{key}': {msg}")
        raise ParamsError.of(lines) from None


class _Strict(BaseModel):
    """The base of every schema: an unknown key is refused (and named by :func:`_validate`)."""
    model_config = ConfigDict(extra="forbid", strict=False)
