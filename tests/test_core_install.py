"""The core install: the library and its command line without the app extra.

``pip install metrics-core`` installs numpy, pandas, pyarrow and scipy only; streamlit and
plotly come with the ``app`` extra. ``import metrics_core`` and every data command but
``report`` must work without them, and a command that needs them says which extra to
install. Each check runs in a fresh interpreter: this test process has imported them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "assets"
APP_ONLY = ("streamlit", "plotly")


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_the_core_dependencies_leave_out_the_app():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {d.split(">")[0].split("=")[0].split("[")[0] for d in project["dependencies"]}
    assert core == {"numpy", "pandas", "pyarrow", "scipy", "threadpoolctl"}
    extras = project["optional-dependencies"]
    assert {d.split(">")[0] for d in extras["app"]} == {"streamlit", "plotly", "Authlib"}
    assert "metrics-core[app]" in extras["dev"]


def test_import_metrics_core_imports_no_app_package(tmp_path):
    """Every public name of the package, and the command line's module, imported: no
    streamlit, no plotly."""
    done = _python("""
        import sys
        import metrics_core
        for name in metrics_core.__all__:
            getattr(metrics_core, name)
        import metrics_core.cli, metrics_core.run, metrics_core.evaluation.evaluator
        print(sorted({m.split(".")[0] for m in sys.modules} & {"streamlit", "plotly"}))
    """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


#: Runs the command line's main() with the app's packages made unimportable (as in an
#: install without the app extra), then says which of them anything tried to import.
_WITHOUT_APP = """
    import sys
    for name in {app}:
        sys.modules[name] = None  # import name raises ModuleNotFoundError
    from metrics_core.cli import main
    code = main({argv})
    print("exit", code)
"""


def _cli_without_app(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return _python(_WITHOUT_APP.format(app=APP_ONLY, argv=argv), cwd)


def test_the_data_commands_run_without_the_app_extra(tmp_path):
    q, c = str(DEMO / "demo_queries.parquet"), str(DEMO / "demo_candidates.parquet")
    for argv, out in (
            (["evaluate", q, c, "--bootstrap", "0", "--out", "m.json", "--quiet"], "m.json"),
            (["tune", q, c, "--target", "screening_sensitivity>=0.995", "--out", "t.json",
              "--quiet"], "t.json"),
            (["compare", "--run", f"a={q},{c}", "--run", f"b={q},{c}", "--bootstrap", "0",
              "--out", "cmp.json", "--quiet"], "cmp.json"),
            (["triage", str(DEMO / "demo_triage.csv"), "--out", "tr.json", "--quiet"],
             "tr.json")):
        done = _cli_without_app(argv, tmp_path)
        assert done.returncode == 0 and done.stdout.strip() == "exit 0", (argv, done.stderr)
        assert json.loads((tmp_path / out).read_text())
    record = json.loads((tmp_path / "m.json").read_text())
    auroc = next(r for r in record["metrics"] if r["name"] == "auroc")
    assert round(auroc["value"], 4) == 0.9806   # the README's figure on the demo


def test_report_without_the_app_extra_says_what_to_install(tmp_path):
    done = _cli_without_app(["report", str(DEMO / "demo_queries.parquet"),
                             str(DEMO / "demo_candidates.parquet"), "--out", "r.html"],
                            tmp_path)
    assert done.stdout.strip() == "exit 2", done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("metrics-core report: needs the app extra (package 'plotly')")
    assert "metrics-core[app]" in done.stderr and 'python -m pip install -e ".[app]"' \
        in done.stderr
    assert not (tmp_path / "r.html").exists()
