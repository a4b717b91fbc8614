"""No private name is used across modules (docs/ARCHITECTURE.md, "Layers").

A name with a leading underscore belongs to the module that defines it. Another module of
``metrics_core`` or ``dashboard`` may not import it (``from m import _name``), read it from the
module (``m._name``), use a private attribute or method that only another module's classes
define (``evaluator._memo`` from outside the evaluator, or ``getattr(x, "_memo")``), or override
one in a subclass. Dunder
names are not private. A name two modules need is public in one of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("metrics_core", "dashboard")


#: A third-party library's private attribute read on purpose, by (module, attribute), with the
#: reason: the name is the library's, not one of this project's modules' (the check matches
#: names only, so it cannot tell them apart).
THIRD_PARTY_INTERNALS: dict[tuple[str, str], str] = {
    ("dashboard.idle", "_cache"): (
        "Streamlit's MemorySessionStorage's TTLCache, expired so that closed tabs' sessions "
        "past their time are dropped (dashboard.idle.session_count); the evaluator's own "
        "_cache is another object"),
    ("dashboard.reruns", "_lock"): (
        "Streamlit's ScriptRequests' and SafeSessionState's locks, held by "
        "dashboard.reruns.quiet_rerun while it reads the widget states and queues the rerun "
        "(tests/test_app_quiet_rerun.py pins them); the project's own _lock attributes are "
        "other objects"),
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def parse_modules(root: Path) -> dict[str, ast.Module]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return modules


def private_attributes(tree: ast.Module) -> set[str]:
    """Private attribute names a module defines on its objects: methods and class-level names of
    its classes, and every ``x._name = ...`` it stores."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if is_private(name)}


def dotted_name(node) -> str | None:
    """``a.b.c`` of an attribute chain of names (None for anything else)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def violations(modules: dict[str, ast.Module]) -> list[str]:
    owned = {name: private_attributes(tree) for name, tree in modules.items()}
    found = []
    for name, tree in modules.items():
        module_aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.split(".")[0] in PACKAGES:
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in modules:
                        module_aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    elif is_private(alias.name):
                        found.append(f"{name}:{node.lineno}: from {node.module} import "
                                     f"{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in PACKAGES and alias.asname:
                        module_aliases[alias.asname] = alias.name
        imported_classes = {
            alias.asname or alias.name: node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in modules
            for alias in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [imported_classes[b.id] for b in node.bases
                         if isinstance(b, ast.Name) and b.id in imported_classes]
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                            is_private(item.name):
                        for base in bases:
                            if item.name in owned[base]:
                                found.append(f"{name}:{item.lineno}: {node.name}.{item.name} "
                                             f"overrides {base}'s")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) and \
                    isinstance(node.args[1].value, str) and is_private(node.args[1].value):
                attr = node.args[1].value
                owners = sorted(other for other, names in owned.items()
                                if attr in names and other != name)
                if owners and attr not in owned[name] and \
                        (name, attr) not in THIRD_PARTY_INTERNALS:
                    found.append(f"{name}:{node.lineno}: {node.func.id}(…, {attr!r}) "
                                 f"(defined in {', '.join(owners)})")
                continue
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            base = node.value
            dotted = dotted_name(base)
            if dotted in modules and dotted != name:  # metrics_core.x._name
                found.append(f"{name}:{node.lineno}: {dotted}.{node.attr}")
            elif isinstance(base, ast.Name) and base.id in module_aliases:
                found.append(f"{name}:{node.lineno}: {base.id}.{node.attr} "
                             f"({module_aliases[base.id]})")
            elif isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            elif node.attr not in owned[name] and (name, node.attr) not in THIRD_PARTY_INTERNALS:
                owners = sorted(other for other, names in owned.items() if node.attr in names)
                if owners:
                    found.append(f"{name}:{node.lineno}: .{node.attr} (defined in "
                                 f"{', '.join(owners)})")
    return found


def test_no_private_name_is_used_across_modules():
    assert violations(parse_modules(ROOT)) == []


@pytest.mark.parametrize(("module", "source", "found"), [
    ("metrics_core/report/figures/curves.py", "from metrics_core.metrics.classification import _x",
     "from metrics_core.metrics.classification import _x"),
    ("dashboard/display.py", "from metrics_core.metrics import ranking\nranking._x",
     "ranking._x (metrics_core.metrics.ranking)"),
    ("metrics_core/evaluation/tables.py", "def f(ev):\n    return ev._probe_only",
     "._probe_only (defined in metrics_core.data.dataset)"),
    ("metrics_core/evaluation/tables.py", "def f(ev):\n    return ev.__class__",
     None),
    ("metrics_core/evaluation/tables.py", "def f(ev):\n    return getattr(ev, '_probe_only')",
     "getattr(…, '_probe_only') (defined in metrics_core.data.dataset)"),
    ("dashboard/display.py", "import metrics_core.metrics.ranking\nmetrics_core.metrics.ranking._x",
     "metrics_core.metrics.ranking._x"),
    ("metrics_core/engines/gathered.py",
     "class Probe(Dataset):\n    def _probe_only(self):\n        return 1",
     "Probe._probe_only overrides metrics_core.data.dataset's"),
])
def test_the_check_finds_each_kind(tmp_path, module, source, found):
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "metrics_core/data/dataset.py").write_text(
        (tmp_path / "metrics_core/data/dataset.py").read_text(encoding="utf-8")
        + "\n\nclass _Probe:\n    def _probe_only(self):\n        return 0\n", encoding="utf-8")
    path = tmp_path / module
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + source + "\n", encoding="utf-8")
    found_now = violations(parse_modules(tmp_path))
    if found is None:
        assert found_now == []
    else:
        assert [line.split(": ", 1)[1] for line in found_now] == [found]
