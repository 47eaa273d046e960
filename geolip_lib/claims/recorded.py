"""The quantities notebooks record for the claims (``metrics["claims"][<record>]``), read from the code.

A claims file's ``record:`` must name one of them (checked when the file is loaded, before any
kernel): a typo would otherwise read "not tested on this profile" on every model. The list is
derived from the source, not kept by hand, so it cannot drift from what the notebooks write:
:func:`recorded_quantities` parses (``ast``) every notebook's ``.py`` and every library module
outside ``claims/`` and ``report/`` (the readers) that mentions ``claims``, and collects the
top-level keys written into a claims record:

- ``metrics["claims"] = {"<record>": ...}`` (a dict literal assigned to ``metrics["claims"]``);
- in a function that builds the record (its name ends in ``_claims``, or it assigns a dict to
  a variable named ``claims``): the keys of the dict literal it assigns to ``claims`` or
  returns, ``claims["<record>"] = ...``, ``claims.setdefault("<record>", ...)`` and
  ``claims[<a> if ... else <b>][...] = ...`` with string constants.

Hand-written with ``ast`` because the keys live in code (notebooks and the library functions
they call), not in any file a library could read; importing the producers would import torch,
transformers and the model stacks into the runner's pre-kernel checks.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from ..paths import ROOT

__all__ = ["recorded_quantities", "SOURCES"]

#: where the producers live (the readers, claims/ and report/, are left out)
SOURCES = (ROOT / "notebooks", ROOT / "geolip_lib")
_READERS = ("claims", "report")


def _strings(node: ast.AST) -> list[str]:
    """String constants a key expression can take: "x", or "a" if ... else "b"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def _dict_keys(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Dict):
        return [s for k in node.keys if k is not None for s in _strings(k)]
    return []


def _is_metrics_claims(t: ast.AST) -> bool:
    """``<x>["claims"]`` (e.g. metrics["claims"])."""
    return isinstance(t, ast.Subscript) and _strings(t.slice) == ["claims"]


def _is_claims_name(t: ast.AST) -> bool:
    return isinstance(t, ast.Name) and t.id == "claims"


def _root_subscript(t: ast.AST) -> ast.AST:
    """``claims["a"]["b"]`` -> the Subscript whose value is the name ``claims``."""
    while isinstance(t, ast.Subscript) and isinstance(t.value, ast.Subscript):
        t = t.value
    return t


def _from_function(fn: ast.AST) -> set[str]:
    out: set[str] = set()
    builds = fn.name.endswith("_claims")
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_claims_name(t) and node.value is not None:
                    builds = builds or isinstance(node.value, ast.Dict)
    if not builds:
        return out
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _is_claims_name(t) and node.value is not None:
                    out.update(_dict_keys(node.value))
                r = _root_subscript(t)
                if isinstance(r, ast.Subscript) and _is_claims_name(r.value):
                    out.update(_strings(r.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault" \
                and _is_claims_name(node.func.value) and node.args:
            out.update(_strings(node.args[0]))
        elif isinstance(node, ast.Return) and fn.name.endswith("_claims") and node.value is not None:
            out.update(_dict_keys(node.value))
    return out


def _from_tree(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(_is_metrics_claims(t) for t in node.targets):
            out.update(_dict_keys(node.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out |= _from_function(node)
    return out


def _files() -> list[Path]:
    files = sorted((ROOT / "notebooks").glob("*.py"))
    for p in sorted((ROOT / "geolip_lib").rglob("*.py")):
        rel = p.relative_to(ROOT / "geolip_lib").parts
        if rel[0] not in _READERS:
            files.append(p)
    return files


@lru_cache(maxsize=1)
def recorded_quantities() -> frozenset:
    """Every record name some notebook writes under ``metrics["claims"]`` (see the module docstring)."""
    out: set[str] = set()
    for p in _files():
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "claims" not in text:  # most modules: no parse needed
            continue
        try:
            out |= _from_tree(ast.parse(text))
        except SyntaxError:
            continue  # a broken module fails its own tests; it records nothing here
    return frozenset(out)
