"""Every command the documentation shows does what it says, as written.

The documents (README.md, docs/*.md, assets/README.md, benchmarks/README.md) mark each fenced
block: ``bash`` blocks hold commands that run as written from the project's folder on the demo
data, ``text`` blocks hold synopses (placeholders such as ``QUERIES``, ``[--opt]``), ``python``
blocks hold code that runs as written. Each ``bash`` command (and each example of
``metrics-core --help``) runs here in a temporary copy of the project's folder (the demo data,
``./dev``, ``pyproject.toml``) with the project's environment as the README's rule sets it up:
its ``.venv/bin`` first on PATH, as ``source .venv/bin/activate`` does. A command that cannot
run here (it starts a server, runs this suite, needs the network or takes minutes) is in
:data:`NOT_RUN` with the reason; a new command that is neither runnable nor listed fails, so a
document that drifts from the program fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metrics_core.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), ROOT / "assets" / "README.md",
                    ROOT / "benchmarks" / "README.md"])
#: The languages a fenced block may say it holds; an unmarked block could hide a command.
LANGUAGES = {"bash", "text", "python", "jsonl"}
#: Seconds a documented command may take here (the slowest, evaluate with its default 10,000
#: resamples on the demo, takes seconds on an idle machine; the bound is for a loaded CI one).
TIMEOUT = 600

#: Documented commands the test does not run, each with the reason.
NOT_RUN = {
    "./dev app": "starts the dashboard's server, which runs until stopped "
                 "(tests/test_browser.py drives the served app; tests/test_app_command.py "
                 "runs metrics-core app, which ./dev app calls)",
    "./dev test": "runs this test suite (CI runs it: .ci/run)",
    "metrics-core app": "starts the dashboard's server, which runs until stopped "
                        "(tests/test_app_command.py and tests/test_install_check.py start it)",
    'python -m pip install ".[app]"': "installs packages (tests/test_install_check.py installs "
                                      "the wheel with its app extra in a fresh venv)",
    "python -m pip wheel --no-deps --wheel-dir dist .": "builds the wheel "
                                                        "(tests/test_install_check.py does)",
    "./dev bench": "the benchmarks take about 10 minutes",
    "python benchmarks/run_all.py --quick": "about 3 minutes of benchmarks",
    "python benchmarks/bench_dask.py --queries 1000000 --compare-memory":
        "a Dask cluster on 20M generated candidates: minutes and GBs",
    "python benchmarks/bench_dask.py --queries 10000000 --queries-per-part 100000":
        "a Dask cluster on 200M generated candidates: minutes and 8 GB",
    "python benchmarks/bench_dask.py --queries 30000000 --write-only":
        "writes 600M generated candidates: ~20 minutes and 0.9 GB of disk",
    **{f"python benchmarks/bench_dask.py --queries {n} --reduced --bootstrap 200 "
       f"--results benchmarks/results/dask_reduced.jsonl":
       "a Dask cluster on 60M-600M generated candidates: tens of minutes"
       for n in (3000000, 10000000, 30000000)},
    'python -m pip install -e ".[rag]"': "installs packages (needs a package index)",
    'python -m pip install -e ".[rag-semantic]"': "installs packages (needs a package index)",
    "python -m metrics_core.demo": "rewrites the committed demo files in the package's assets/ "
                                   "(tests/test_demo.py checks them against a fresh generation)",
    "python -m metrics_core.rag.demo": "rewrites the committed assets/demo_rag.jsonl "
                                       "(tests/test_rag_loader.py checks it against "
                                       "make_rag_demo)",
}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of a Markdown text ("" when unmarked)."""
    blocks, language, body = [], None, []
    for line in text.splitlines():
        fence = re.match(r"^```(\S*)\s*$", line)
        if fence and language is None:
            language, body = fence.group(1), []
        elif line.startswith("```") and language is not None:
            blocks.append((language, "\n".join(body)))
            language = None
        elif language is not None:
            body.append(line)
    assert language is None, "a fenced block is not closed"
    return blocks


def shell_commands(body: str) -> list[str]:
    """The commands of a bash block: continued lines joined, comments and blank lines left
    out, runs of blanks as one (the key of :data:`NOT_RUN`)."""
    commands = []
    for line in re.sub(r"\\\n", " ", body).splitlines():
        command = " ".join(_without_comment(line).split())
        if command:
            commands.append(command)
    return commands


def _without_comment(line: str) -> str:
    """A shell line up to its comment: a ``#`` outside quotes, at the start or after a blank."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def help_examples() -> list[str]:
    """The example lines of ``metrics-core --help``."""
    text = build_parser().format_help()
    return [line.strip() for line in text.splitlines() if line.startswith("  metrics-core ")]


def documented() -> dict[str, list[tuple[str, str]]]:
    """Per language, ``(where, content)`` of every block: each bash command apart, and the
    ``--help`` examples as bash commands."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path in DOCUMENTS:
        where = str(path.relative_to(ROOT))
        for language, body in fenced_blocks(path.read_text(encoding="utf-8")):
            if language == "bash":
                found.setdefault("bash", []).extend((where, c) for c in shell_commands(body))
            else:
                found.setdefault(language, []).append((where, body))
    found["bash"].extend(("metrics-core --help", c) for c in help_examples())
    return found


DOCUMENTED = documented()
#: Each command to run once, with every place that shows it.
RUN = [(", ".join(sorted({w for w, c in DOCUMENTED["bash"] if c == command})), command)
       for command in dict.fromkeys(c for _, c in DOCUMENTED["bash"]) if command not in NOT_RUN]


def test_every_block_says_what_it_holds():
    for path in DOCUMENTS:
        for language, body in fenced_blocks(path.read_text(encoding="utf-8")):
            assert language in LANGUAGES, (path.name, language, body[:80])


def test_the_extraction_reads_the_documents_as_written():
    assert shell_commands('a x \\\n  --t "s>=0.9" # note\n\n# only a comment\nb ".[rag]"\n') \
        == ['a x --t "s>=0.9"', 'b ".[rag]"']
    commands = [c for _, c in DOCUMENTED["bash"]]
    assert "./dev app" in commands and "./dev test" in commands   # the README's quick start
    assert ("metrics-core evaluate assets/demo_queries.parquet assets/demo_candidates.parquet "
            "--out metrics_master.json") in commands
    assert len(DOCUMENTED["python"]) >= 1


def test_every_command_not_run_is_still_documented():
    commands = {c for _, c in DOCUMENTED["bash"]}
    assert not set(NOT_RUN) - commands, set(NOT_RUN) - commands


def test_no_bash_command_is_a_synopsis():
    """Placeholders belong in text blocks: a bash command names real files and options."""
    for where, command in DOCUMENTED["bash"]:
        assert not re.search(r"\[--|\b(QUERIES|CANDIDATES|FILE|DIR|URL)\b|…|\.\.\.", command), \
            (where, command)


def test_the_readme_states_one_way_to_run_things():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and "./dev cli" in readme
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        # not the venv's programs by path, nor the system's pip
        assert ".venv/bin/metrics-core" not in text, path.name
        assert not re.search(r"(?<!-m )\bpip3? install", text), path.name


def test_the_programs_install_advice_is_the_readmes():
    """The messages of a missing RAG extra give the README's install commands."""
    from metrics_core.rag import generation_overlap, generation_semantic

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "dashboard" / "app_pages" / "rag.py").read_text(encoding="utf-8")
    for extra, advice in (("rag", generation_overlap._RAG_EXTRA),
                          ("rag-semantic", generation_semantic.SEMANTIC_MISSING)):
        command = f'python -m pip install -e ".[{extra}]"'
        assert command in readme and command in advice, (extra, advice)
    assert 'python -m pip install -e ".[rag-semantic]"' in page
    for text in (generation_overlap._RAG_EXTRA, generation_semantic.SEMANTIC_MISSING, page):
        assert "pip install '" not in text   # not the name of a package on an index


def _project_copy(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the project's folder as the documents use it, with a ``.venv`` whose
    programs are this test's environment's, and the environment of an activated shell."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(ROOT / "assets", project / "assets")
    for name in ("dev", "pyproject.toml"):
        shutil.copy2(ROOT / name, project / name)
    (project / "benchmarks").symlink_to(ROOT / "benchmarks")
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    here = Path(sys.executable).parent
    programs = {"python": f'exec "{sys.executable}" "$@"',
                "metrics-core": f'exec "{sys.executable}" -m metrics_core "$@"',
                # a stand-in server: says how it was started
                "streamlit": 'echo "streamlit $*"'}
    if (here / "metrics-core").exists():   # the installed entry point, as ./dev installs it
        programs["metrics-core"] = f'exec "{here / "metrics-core"}" "$@"'
    for name, body in programs.items():
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    stamp = hashlib.sha256((project / "pyproject.toml").read_bytes()).hexdigest()[:16]
    for extra in ("app", "dev"):   # set up: ./dev installs nothing
        (project / ".venv" / f".installed-{extra}-{stamp}").touch()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "VIRTUAL_ENV": str(project / ".venv"), "PYTHONPATH": str(ROOT),
           "GLIBC_TUNABLES": ""}
    return project, env


def _run(command: str, project: Path, env: dict[str, str], *, cwd: Path | None = None):
    return subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=cwd or project,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)


@pytest.mark.parametrize(("where", "command"), RUN, ids=[f"{w}: {c}" for w, c in RUN])
def test_documented_command_runs(where, command, tmp_path):
    project, env = _project_copy(tmp_path)
    done = _run(command, project, env)
    assert done.returncode == 0, (where, command, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, (where, command, done.stderr[-2000:])
    for out in re.findall(r"--out (\S+)", command) + re.findall(r"--per-query (\S+)", command):
        assert (project / out).exists(), (where, command, out)


@pytest.mark.parametrize("index", range(len(DOCUMENTED["python"])))
def test_documented_python_runs(index, tmp_path):
    where, code = DOCUMENTED["python"][index]
    project, env = _project_copy(tmp_path)
    done = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", code],
                          cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, (where, done.stdout[-2000:], done.stderr[-2000:])


def _readme_python(marker: str) -> str:
    """The README's python block that holds ``marker``."""
    (code,) = [c for w, c in DOCUMENTED["python"] if w == "README.md" and marker in c]
    return code


def test_readme_python_api_prints_what_its_comments_say(tmp_path):
    code = _readme_python("Evaluator(loaded.dataset)")
    project, env = _project_copy(tmp_path)
    done = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", code],
                          cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("0.9806") and lines[0].endswith(" 14770 None")
    assert lines[1].startswith("wilson (0.9857") and ", 0.9955" in lines[1]
    assert lines[-1].startswith("14770 ['post_id', 'criterion', ")


def test_readme_notebook_example_gives_the_clis_numbers(tmp_path):
    """The README's notebook example (metrics_core.evaluate) writes the document that
    ``metrics-core evaluate`` writes with the same settings, bootstrap intervals included
    (apart from the time it was made), and its figures."""
    code = _readme_python("evaluation = metrics_core.evaluate(")
    project, env = _project_copy(tmp_path)
    done = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c", code],
                          cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "[0.9806, 0.9771, 0.9837]"   # AUROC and its interval
    assert lines[1].split() == ["criterion", "n", "auroc"]
    cli_run = _run("metrics-core evaluate assets/demo_queries.parquet "
                   "assets/demo_candidates.parquet --bootstrap 200 --seed 0 --tau-neg 0.05 "
                   "--out cli.json --quiet", project, env)
    assert cli_run.returncode == 0, cli_run.stderr
    notebook = json.loads((project / "notebook.json").read_text())
    command_line = json.loads((project / "cli.json").read_text())
    for document in (notebook, command_line):
        del document["run"]["created"]
    assert notebook == command_line
    auroc = next(r for r in notebook["metrics"] if r["name"] == "auroc")
    assert auroc["ci_method"] == "bootstrap (query, 200 resamples, seed 0)"
    for name in ("roc.html", "reliability.html"):
        page = (project / name).read_text()
        assert "<html>" in page and "Plotly.newPlot" in page


def test_dev_is_strict_and_says_its_commands(tmp_path):
    dev = (ROOT / "dev").read_text()
    assert dev.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in dev
    assert subprocess.run(["bash", "-n", str(ROOT / "dev")]).returncode == 0
    project, env = _project_copy(tmp_path)
    done = _run("./dev", project, env)
    assert done.returncode == 2
    assert "usage: ./dev app [--share] | test | bench | cli COMMAND [OPTIONS]" in done.stderr


def test_dev_cli_reads_paths_from_where_it_is_run(tmp_path):
    """``./dev cli`` runs metrics-core in the caller's folder, not in the project's."""
    project, env = _project_copy(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy2(project / "assets" / "demo_triage.csv", elsewhere / "cases.csv")
    done = _run("../project/dev cli triage cases.csv --out triage.json --quiet", project, env,
                cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "triage.json").exists() and not (project / "triage.json").exists()
    done = _run("./dev cli --help", project, env)
    assert done.returncode == 0 and done.stdout.startswith("usage: metrics-core")


def test_interface_addresses_are_the_machines_not_loopback():
    import ipaddress

    from dashboard.addresses import interface_addresses, server_port

    addresses = interface_addresses()
    assert len(set(addresses)) == len(addresses)
    for address in addresses:
        assert not ipaddress.IPv4Address(address).is_loopback
    assert server_port(["--server.port", "1", "--server.port=2"]) == 2


def test_architecture_lists_every_subcommand():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    row = next(line for line in (ROOT / "docs" / "ARCHITECTURE.md").read_text().splitlines()
               if line.startswith("| `cli/` |"))
    for command in sub.choices:
        assert f"`{command}`" in row, command
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in sub.choices:
        assert f"metrics-core {command} " in readme, command


def test_a_python_without_the_projects_packages_is_told_how_to_run(tmp_path):
    """``python -m metrics_core evaluate …`` by a Python that lacks pandas (the system's, not
    the project's environment) says how to run it, with no traceback."""
    project, env = _project_copy(tmp_path)
    code = ("import sys; sys.modules['pandas'] = None  # as if it were not installed\n"
            "from metrics_core.cli import main\n"
            "sys.exit(main(['evaluate', 'assets/demo_queries.parquet', "
            "'assets/demo_candidates.parquet', '--out', 'm.json']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=project, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"this Python ({sys.executable}) has no package 'pandas'" in done.stderr
    assert "./dev cli COMMAND" in done.stderr and "source .venv/bin/activate" in done.stderr
    assert not (project / "m.json").exists()
