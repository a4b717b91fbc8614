"""No module-level state that could hold user data, in metrics_core/ or dashboard/.

The dashboard serves many browser sessions from one process: anything a module keeps between
calls (a dict filled at run time, an ``lru_cache`` over arrays, a ``global`` rebound by a
function) can hand one session's uploaded data to another. This test reads the source of every
module (AST, nothing is imported or run) and fails on:

- a module-level or class-level assignment of a mutable container: a ``dict`` / ``list`` /
  ``set`` literal or comprehension, or a call of ``dict``, ``list``, ``set``, ``OrderedDict``,
  ``defaultdict``, ``deque``, ``Counter``, ``ChainMap``, ``bytearray``, ``WeakValueDictionary``
  or ``WeakKeyDictionary``; any call whose name contains ``cache`` or ``memo``; any target whose
  name contains ``cache`` or ``memo``;
- a function decorated with ``functools.cache`` / ``functools.lru_cache`` (or any decorator
  whose name contains ``memo``), or with Streamlit's ``st.cache_data`` / ``st.cache_resource``,
  which share their results between sessions;
- a ``global`` statement (a function rebinding module state).

Read-only tables are written as tuples or ``types.MappingProxyType`` and pass. What remains is
listed in :data:`ALLOWED` by module and name with the reason it holds no user data; those names
must never be mutated anywhere in the package (checked too). ``functools.cached_property`` is
per instance and is not flagged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("metrics_core", "dashboard")

_MUTABLE_CALLS = frozenset({
    "dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter", "ChainMap",
    "bytearray", "WeakValueDictionary", "WeakKeyDictionary",
})
_MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add",
    "discard", "remove", "sort", "reverse", "__setitem__", "__delitem__", "move_to_end",
})

#: Streamlit page scripts: Streamlit executes each one in a fresh namespace on every rerun of a
#: session, so their top-level names are per-run locals, not module state. Decorators and
#: ``global`` are still checked there.
PAGE_SCRIPTS = "dashboard.app_pages."

#: (module, name) -> why this module-level container or cache holds no user data.

ALLOWED: dict[tuple[str, str], str] = {
    # constant tables of modules that a pending rewrite owns (to become MappingProxyType/tuple)
    ("metrics_core.inputs.parquet", "ALIASES"): "constant column-name aliases",
    ("metrics_core.inputs.columns", "REQUIRED"): "constant required-column table",
    ("metrics_core.inputs.columns", "KIND_COLUMNS"): "constant columns per table kind",
    ("metrics_core.inputs.read", "_ALIAS_OWNER"): "constant inverse of ALIASES, built at import",
    ("metrics_core.metrics.uncertainty", "normal_quantile"): (
        "lru_cache of the normal quantile of a confidence level (a float option, no data)"),
    ("dashboard.display", "PLOTLY_CONFIG"): "constant plotly display options",
    ("dashboard.server_settings", "_parsed"): (
        "lru_cache of the server's own settings file parsed, keyed by its content (the "
        "deployment's settings, no user data)"),
    ("dashboard.display", "RECORD_COLUMN_CONFIG"): "constant column configuration",
    ("dashboard.display", "GATE_LABELS"): "constant labels of the gate states",
    ("dashboard.display", "_RECORD_COLUMNS"): "constant column order of the records table",
    ("dashboard.state", "_BY_KEY"): "constant index of the session-key definitions",
    # Streamlit caches shared between sessions: the synthetic demo only, never an upload
    ("dashboard.data", "_demo_parts"): (
        "st.cache_resource of the bundled synthetic demo's run (and its evaluator)"),
    ("dashboard.evaluations", "_shared_demo_evaluations"): (
        "st.cache_resource of the demos' evaluations (dashboard.evaluations.memo_of gives it "
        "demo sources only; test_an_uploads_evaluations_stay_in_its_session)"),
}


@dataclass(frozen=True)
class Finding:
    module: str
    name: str
    line: int
    rule: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} {self.name}: {self.rule}"


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _decorator_rule(decorator: ast.expr) -> str | None:
    """Why a decorator caches across calls (``None`` when it does not)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    dotted = ast.unparse(target)
    last = dotted.rsplit(".", 1)[-1]
    if last in {"cache", "lru_cache"}:
        return f"@{dotted}: a process-wide cache of its arguments and results"
    if last.startswith("cache_") and dotted.startswith(("st.", "streamlit.")):
        return f"@{dotted}: a Streamlit cache shared between sessions"
    if "memo" in last.lower():
        return f"@{dotted}: a memo shared between calls"
    return None


def _container_rule(value: ast.expr | None, targets: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, _MUTABLE_NODES):
        return f"module-level mutable {type(value).__name__.lower()}"
    if isinstance(value, ast.Call):
        name = _call_name(value)
        if name in _MUTABLE_CALLS:
            return f"module-level mutable {name}()"
        if "cache" in name.lower() or "memo" in name.lower():
            return f"module-level {name}() (a cache)"
    if any("cache" in t.lower() or "memo" in t.lower() for t in targets):
        return "module-level name of a cache"
    return None


def scan_source(source: str, module: str) -> list[Finding]:
    """Every finding of the rules above in one module's source (nothing is allow-listed)."""
    tree = ast.parse(source)
    findings: list[Finding] = []
    script = module.startswith(PAGE_SCRIPTS)

    def walk_body(statements, owner: str) -> None:
        for st in statements:
            if isinstance(st, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                names = [ast.unparse(t) for t in targets]
                rule = _container_rule(st.value, names)
                if rule and not script and names != ["__all__"]:
                    findings.extend(Finding(module, owner + n, st.lineno, rule) for n in names)
            elif isinstance(st, ast.ClassDef):
                walk_body(st.body, f"{owner}{st.name}.")
            elif isinstance(st, ast.If | ast.With | ast.For | ast.While | ast.Try):
                for field in ("body", "orelse", "finalbody"):
                    walk_body(getattr(st, field, []), owner)
                for handler in getattr(st, "handlers", []):
                    walk_body(handler.body, owner)

    walk_body(tree.body, "")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                rule = _decorator_rule(decorator)
                if rule:
                    findings.append(Finding(module, node.name, node.lineno, rule))
        elif isinstance(node, ast.Global):
            findings.extend(Finding(module, name, node.lineno, "global statement: rebinds "
                                    "module state from a function") for name in node.names)
    return findings


def mutations_of(source: str, module: str, names: set[str]) -> list[Finding]:
    """Places where one of ``names`` (bare or as ``x.name``) is mutated in place."""
    tree = ast.parse(source)

    def named(node) -> str | None:
        if isinstance(node, ast.Name) and node.id in names:
            return node.id
        if isinstance(node, ast.Attribute) and node.attr in names:
            return node.attr
        return None

    out = []
    for node in ast.walk(tree):
        hit = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
            hit = named(node.value)
        elif isinstance(node, ast.AugAssign):
            hit = named(node.target)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _MUTATORS):
            hit = named(node.func.value)
        if hit:
            out.append(Finding(module, hit, node.lineno, "allow-listed table mutated"))
    return out


def package_modules() -> dict[str, str]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[module] = path.read_text(encoding="utf-8")
    return modules


# ------------------------------------------------------------------------------- the scan
def test_every_package_module_is_scanned():
    modules = package_modules()
    assert {"metrics_core.metrics.classification", "metrics_core.report.figures.gate",
            "dashboard.data", "dashboard.app", "dashboard.app_pages.gate"} <= set(modules)
    assert len(modules) >= 30


def test_no_module_level_state_that_could_hold_user_data():
    findings = [f for module, source in package_modules().items()
                for f in scan_source(source, module)
                if (f.module, f.name) not in ALLOWED]
    assert not findings, "module-level state (make it a tuple / MappingProxyType, keep it per " \
        "caller, or allow-list it with a reason):\n" + "\n".join(map(str, findings))


def test_allow_listed_tables_are_never_mutated():
    names = {name for _, name in ALLOWED}
    found = [f for module, source in package_modules().items()
             for f in mutations_of(source, module, names)]
    assert not found, "\n".join(map(str, found))


def test_only_the_synthetic_demo_uses_a_streamlit_cache():
    streamlit = [f for module, source in package_modules().items()
                 for f in scan_source(source, module) if "Streamlit cache" in f.rule]
    assert {(f.module, f.name) for f in streamlit} == {
        ("dashboard.data", "_demo_parts"), ("dashboard.evaluations", "_shared_demo_evaluations")}


def test_an_uploads_evaluations_stay_in_its_session():
    """The demos' evaluations are shared between sessions; an upload's never are."""
    from dashboard import data, evaluations
    from tests.conftest import random_frames
    from tests.test_app import open_app, upload

    q, c = random_frames(n_posts=30, seed=7)
    at = upload(open_app(), ("queries.csv", q.to_csv(index=False).encode(), "text/csv"),
                ("candidates.csv", c.to_csv(index=False).encode(), "text/csv"))
    source = at.session_state[data.state.SOURCE]
    assert source.kind == "upload"
    view = at.session_state[data.state.VIEW]
    assert view.evaluation is not None
    mine = at.session_state[data.state.EVALUATIONS]
    assert any(token == source.token for token, _ in mine)
    shared = evaluations._shared_demo_evaluations()
    assert all(token in data.DEMOS for token, _ in shared)


# ------------------------------------------------------------------- the scanner can fail
BAD_SOURCE = '''
import functools
from collections import OrderedDict
import streamlit as st

_CACHE = OrderedDict()
_seen = {}
registry: list = []
_memo_table = make_memo()
results = defaultdict(list)
ids = {i for i in range(3)}

class Holder:
    shared = []

@functools.lru_cache(maxsize=8)
def sorted_scores(y, p):
    return sorted(p)

@functools.cache
def by_frame(frame):
    return frame

@st.cache_data
def load_upload(data: bytes):
    return data

def remember(x):
    global _LAST
    _LAST = x
'''

GOOD_SOURCE = '''
from types import MappingProxyType
from functools import cached_property

__all__ = ["f"]
KS = (1, 3, 5)
LABELS = MappingProxyType({"POS": "alert", "NEG": "cleared"})
N_BINS = 10

class Curve:
    @cached_property
    def points(self):
        return [1, 2]

def f(y):
    local = {}
    local["y"] = y
    return local
'''


def test_scanner_catches_every_kind_of_module_state():
    found = {(f.name, f.rule.split(":")[0]) for f in scan_source(BAD_SOURCE, "example")}
    names = {name for name, _ in found}
    assert names == {"_CACHE", "_seen", "registry", "_memo_table", "results", "ids",
                     "Holder.shared", "sorted_scores", "by_frame", "load_upload", "_LAST"}
    assert ("sorted_scores", "@functools.lru_cache") in found
    assert ("load_upload", "@st.cache_data") in found


def test_scanner_passes_read_only_tables_and_per_instance_caches():
    assert scan_source(GOOD_SOURCE, "example") == []


def test_page_scripts_may_bind_names_but_not_cache():
    source = "rows = [1, 2]\n\n@st.cache_resource\ndef shared(x):\n    return x\n"
    found = scan_source(source, PAGE_SCRIPTS + "example")
    assert [(f.name, f.rule.split(":")[0]) for f in found] == [("shared", "@st.cache_resource")]


@pytest.mark.parametrize("statement", [
    "TABLE['x'] = 1", "del TABLE['x']", "TABLE.update(a=1)", "mod.TABLE.append(2)",
    "TABLE += [1]", "TABLE.setdefault('k', [])",
])
def test_mutation_check_catches_writes_to_allow_listed_tables(statement):
    found = mutations_of(f"def f(mod):\n    {statement}\n", "example", {"TABLE"})
    assert [(f.name, f.line) for f in found] == [("TABLE", 2)]


def test_mutation_check_ignores_reads():
    source = "def f():\n    return TABLE['x'], list(TABLE), TABLE.get('y'), dict(TABLE)\n"
    assert mutations_of(source, "example", {"TABLE"}) == []
