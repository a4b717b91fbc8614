"""The import contracts of pyproject's ``[tool.importlinter]`` (docs/ARCHITECTURE.md, "Layers"):
they hold on this tree, and each one breaks on a copy of the tree given a wrong-way import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = ("from importlinter.cli import lint_imports; "
        "raise SystemExit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
        "no_logo=True))")


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_contracts_hold():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    ("metrics_core/metrics/classification.py", "from metrics_core.inputs import loading",
     "The kernels compute: they load, evaluate and draw nothing"),
    ("metrics_core/inputs/loading.py", "import dashboard.state",
     "The library never imports the app or Streamlit"),
    ("metrics_core/report/figures/gate.py", "import streamlit",
     "The library never imports the app or Streamlit"),
    ("metrics_core/evaluation/tables.py", "import plotly",
     "Only the figures and the decision record draw (plotly)"),
    ("metrics_core/evaluation/evaluator.py", "from metrics_core import run",
     "Evaluation reads no file: it takes a loaded data set"),
    ("metrics_core/registry.py", "from metrics_core.evaluation import evaluator",
     "The library's layers"),
    ("metrics_core/data/dataset.py", "from metrics_core.inputs import loading",
     "The kernels compute: they load, evaluate and draw nothing"),
    ("metrics_core/inputs/loading.py", "from metrics_core.metrics import ranking",
     "The library's layers"),
    ("metrics_core/engines/dask.py", "from metrics_core import compare",
     "The library's layers"),
    ("metrics_core/cli/parser.py", "from metrics_core import launcher",
     "The library's layers"),
    ("metrics_core/inputs/parquet.py", "from metrics_core.inputs import loading",
     "The reading's steps: audit, load, read Parquet, limits"),
    ("metrics_core/evaluation/result.py", "from metrics_core.evaluation import tables",
     "The evaluation's steps"),
    ("metrics_core/metrics/uncertainty.py", "from metrics_core.metrics import decision",
     "The kernels' order"),
    ("metrics_core/report/figures/curves.py", "from metrics_core.report import decision_record",
     "The report's order: the decision record, then what it gathers"),
    ("metrics_core/report/figures/style.py", "from metrics_core.report.figures import curves",
     "The figures: each kind of chart, then what they share"),
    ("dashboard/data.py", "from dashboard.app_pages import overview",
     "The app's layers: entry, pages, then the services pages use"),
])
def test_a_wrong_way_import_breaks_its_contract(tmp_path, module, line, broken):
    for package in ("metrics_core", "dashboard"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    path = tmp_path / module
    path.write_text(path.read_text() + f"\n{line}\n")
    result = lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{broken} BROKEN" in result.stdout
