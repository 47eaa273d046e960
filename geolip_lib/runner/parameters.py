"""A notebook's parameters as its cell tagged ``parameters`` declares them: default, valid
range, description; and a profile's value checked against them before any kernel starts.

Each parameter is one assignment with a comment; a bracket at the start of the comment is
the parameter's valid range, a Python condition on ``x`` (the value)::

    N_SIMPLICES = 1000  # [2 ≤ x ≤ 10**6] pentachora drawn for the volume CV (seed: 1000)
    VAL_FRACTION = 0.1  # [0 < x < 1] held-out fraction
    MAX_ENTRIES = 600  # [x is None or x ≥ 1] matched entries kept; None for all
    POOLING = "mean"  # [x in ("mean", "last")] pooling over tokens
    SEEDS = [0, 1, 2]  # [len(x) ≥ 1 and all(s ≥ 0 for s in x)] training seeds
    DIM = 32  # [x ≥ 1 and not x % PATCH_DIM] model width, a multiple of PATCH_DIM
    ANCHOR = -1  # [any] layer position (any int; the bracket says there is no range on purpose)

``≤``, ``≥`` and ``≠`` are read as ``<=``, ``>=`` and ``!=``: a range is written with them (and
``not x % 2`` for "even") because papermill cannot read a parameter line holding a second
``=`` (it leaves it out of ``papermill --help-notebook``; ``tests/notebooks`` checks this).

A condition may use the other parameters of the notebook by name (their value in the job),
comparisons, ``and`` / ``or`` / ``not``, ``in``, ``is None``, numbers and strings, arithmetic
(``10**7``), indexing (``x[:5]``), ``len``, ``all``, ``any`` and a generator over ``x`` —
nothing else (checked on the parsed expression, then evaluated with no builtins). Beside the
range:

* the value has the type of the declared default (:func:`coerce_parameter`); a list's items
  have the type of the default's items;
* every float, also inside lists, is finite (``.inf``, ``.nan`` are refused);
* ``None`` passes a parameter without a range (notebooks read it as "not set"); with a
  range, only where the range says ``x is None``.

Errors name the notebook's own parameter (``EVAL_SIZE``), never an argument of a library
function it is passed to.
"""
from __future__ import annotations

import ast
import io
import math
import tokenize
from dataclasses import dataclass
from typing import Any, Optional

#: a declared default that is an expression (not a literal): not type-checked
EXPRESSION = object()

_TYPE_NAMES = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}
#: what a range condition may contain (hand-written whitelist: no library offers a safe
#: evaluator of a boolean condition; ast.literal_eval takes no names or comparisons)
_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.Compare,
          ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn, ast.Is, ast.IsNot, ast.Name,
          ast.Load, ast.Store, ast.Constant, ast.Tuple, ast.List, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div,
          ast.FloorDiv, ast.Mod, ast.Pow, ast.Call, ast.GeneratorExp, ast.comprehension, ast.Subscript, ast.Slice)
_FUNCTIONS = {"len": len, "all": all, "any": any}


@dataclass(frozen=True)
class Declared:
    """One parameter of a notebook's parameters cell."""

    name: str
    default: Any  # the literal default, or EXPRESSION
    range: Optional[str]  # the condition in the comment's leading bracket, e.g. "x ≥ 1"
    description: str
    line: int


class RangeSyntaxError(ValueError):
    """A range annotation that is not a condition this module evaluates (a notebook author's error)."""


#: the comparison signs a range is written with, as Python reads them
_SIGNS = str.maketrans({"≤": "<=", "≥": ">=", "≠": "!="})


def compile_range(text: str):
    """The code object of range condition ``text`` (one-line RangeSyntaxError naming what is not allowed)."""
    text = "True" if text == ANY else text.translate(_SIGNS)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise RangeSyntaxError(f"range [{text}] is not a Python condition ({exc.msg})") from None
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise RangeSyntaxError(f"range [{text}]: {type(node).__name__} is not allowed in a range")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS):
            raise RangeSyntaxError(f"range [{text}]: only {', '.join(_FUNCTIONS)} may be called")
    return compile(tree, "<range>", "eval")


#: the range that says "any value of the declared type"
ANY = "any"


def range_names(text: str) -> list[str]:
    """The other parameters a range condition reads (every name but ``x``, the functions and
    the variables of its generators)."""
    if text == ANY:
        return []
    tree = ast.parse(text.translate(_SIGNS), mode="eval")
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.comprehension)
             for t in ast.walk(node.target) if isinstance(t, ast.Name)}
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - bound - {"x"} - set(_FUNCTIONS))


def in_range(value: Any, text: str, others: Optional[dict] = None) -> bool:
    """Whether ``value`` satisfies range condition ``text``; ``others``: the other parameters'
    values (a comparison with the wrong type, ``None >= 1``, is False)."""
    if text == ANY:
        return True
    code = compile_range(text)
    missing = [n for n in range_names(text) if n not in (others or {})]
    if missing:
        raise RangeSyntaxError(f"range [{text}] reads {', '.join(missing)}, which is not a parameter of the notebook")
    try:
        return bool(eval(code, {"__builtins__": {}, **(others or {}), **_FUNCTIONS, "x": value}))  # noqa: S307
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError):
        return False  # None >= 1, "a" > 0, x[0] of []: outside the range


def _comments(source: str) -> dict[int, str]:
    """Line number -> the comment on that line (tokenize: a ``#`` inside a string is not a comment)."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


def declared(source: str) -> dict[str, Declared]:
    """Every parameter assigned in a parameters cell's ``source`` (ast + tokenize)."""
    comments = _comments(source)
    out = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        try:
            default = ast.literal_eval(node.value)
        except ValueError:
            default = EXPRESSION
        comment, rng = comments.get(node.lineno, ""), None
        if comment.startswith("["):
            depth = 0
            for i, ch in enumerate(comment):  # the matching bracket (a range may hold a list: x in [1, 2])
                depth += {"[": 1, "]": -1}.get(ch, 0)
                if depth == 0:
                    rng, comment = comment[1:i].strip(), comment[i + 1:].strip()
                    break
        out[node.targets[0].id] = Declared(node.targets[0].id, default, rng, comment, node.lineno)
    return out


def _non_finite(value: Any) -> Optional[str]:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            bad = _non_finite(v)
            if bad:
                return f"{bad} (item {i})"
    if isinstance(value, dict):
        for k, v in value.items():
            bad = _non_finite(v)
            if bad:
                return f"{bad} (key {k!r})"
    return None


def _item_default(default: list) -> Any:
    """The default every item of a list parameter must look like (None: items of mixed types, not checked)."""
    kinds = {type(v) for v in default}
    if not default or type(None) in kinds or (bool in kinds and len(kinds) > 1):
        return None
    if kinds <= {int, float}:
        return 0.0 if float in kinds else 0
    if len(kinds) == 1:
        return default[0]
    return None


def coerce_parameter(name: str, value, default):
    """``value`` checked against the type of the notebook's declared ``default``.

    Returns the value to inject (YAML reads ``1e3`` as a string: a numeric string is
    accepted where an int or float is declared); raises ValueError naming the expected
    type. A declared ``None`` accepts anything; ``None`` is accepted for any declared type
    except bool (notebooks treat it as "not set"). A list's items are checked against the
    default's items; a float must be finite.
    """
    if default is None or default is EXPRESSION or (value is None and not isinstance(default, bool)):
        return value
    want = type(default)
    if want is bool:
        if isinstance(value, bool):
            return value
    elif want in (int, float):
        num = None
        if isinstance(value, str):
            try:
                num = float(value)
            except ValueError:
                num = None
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            num = value
        if isinstance(num, float) and not math.isfinite(num):
            raise ValueError(f"expected a finite {_TYPE_NAMES[want]}, got {value!r}")
        if num is not None and (want is float or float(num).is_integer()):
            return int(num) if want is int else float(num)
    elif want in (list, tuple):
        if isinstance(value, (list, tuple)):
            item = _item_default(list(default))
            if item is None:
                return list(value)
            out = []
            for i, v in enumerate(value):
                if v is None:
                    raise ValueError(f"item {i}: expected {_TYPE_NAMES.get(type(item), type(item).__name__)} like "
                                     f"the items of its default {default!r}, got None")
                try:
                    out.append(coerce_parameter(f"{name}[{i}]", v, item))
                except ValueError as exc:
                    raise ValueError(f"item {i}: " + str(exc).replace(f" like its default {item!r}",
                                                                       f" like the items of its default {default!r}"))
            return out
    elif isinstance(value, want):
        return value
    raise ValueError(f"expected {_TYPE_NAMES.get(want, want.__name__)} like its default {default!r}, "
                     f"got {type(value).__name__} {value!r}")


def check_value(decl: Declared, value: Any) -> Any:
    """``value`` for parameter ``decl``: its type (:func:`coerce_parameter`) and finite floats.
    ValueError with the one-line reason (the caller adds the parameter's name)."""
    value = coerce_parameter(decl.name, value, decl.default)
    bad = _non_finite(value)
    if bad:
        raise ValueError(f"expected finite numbers, got {bad}")
    return value


def range_problem(decl: Declared, values: dict) -> Optional[str]:
    """Why ``values[decl.name]`` is outside ``decl``'s range (``values``: every parameter of the
    job, defaults overlaid by the profile's); None when it is inside or there is no range."""
    if decl.range is None or decl.name not in values:
        return None
    value = values[decl.name]
    if in_range(value, decl.range, values):
        return None
    others = [f"{n} = {values[n]!r}" for n in range_names(decl.range)]
    given = "its default " if value is decl.default else ""
    return (f"{given}{value!r} is outside its range [{decl.range}]" + (f" with {', '.join(others)}" if others else "")
            + f" (declared beside its default {decl.default!r} in the notebook's parameters cell); "
              f"give a value in that range")
