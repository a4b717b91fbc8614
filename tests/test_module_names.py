"""No module of the project shares its name with a standard-library module: ``from
metrics_core import io`` in a notebook used to hide the standard ``io`` (the loader is
``metrics_core.inputs.loading``; the RAG data model, the seed's ``types``, is
``metrics_core.rag.data_model``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def project_modules() -> list[tuple[str, ...]]:
    """The dotted name of every module and package of metrics_core and dashboard, as parts."""
    names = []
    for package in ("metrics_core", "dashboard"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(parts[:-1] if parts[-1] == "__init__" else parts)
    return names


def test_no_module_shares_a_standard_library_name():
    shadowing = [".".join(parts) for parts in project_modules()
                 if parts[-1] in sys.stdlib_module_names and parts[-1] != "__main__"]
    assert shadowing == []


def test_the_check_sees_the_modules():
    names = {".".join(parts) for parts in project_modules()}
    assert {"metrics_core.inputs.loading", "metrics_core.rag.data_model", "metrics_core.rag",
            "dashboard.app"} <= names
    assert "io" in sys.stdlib_module_names and "types" in sys.stdlib_module_names


def test_the_public_loader_is_importable_under_its_names():
    import metrics_core
    from metrics_core.inputs import loading

    assert metrics_core.load is loading.load and metrics_core.read_table is loading.read_table
    assert not (ROOT / "metrics_core" / "io.py").exists()


#: The layers issue's bound on a module's length: a longer one is split by what it holds.
MAX_MODULE_LINES = 800


def test_no_module_is_over_800_lines():
    long = {str(path.relative_to(ROOT)): n for package in ("metrics_core", "dashboard")
            for path in sorted((ROOT / package).rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
