"""Every option of every command says what it does, and its default where it has one; a
boolean setting is a pair of switches (--gate-aware / --no-gate-aware)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from metrics_core import cli
from metrics_core.cli.flags import config_from_flags
from metrics_core.cli.parser import build_parser
from metrics_core.config import EvalConfig


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_option_has_help_and_shows_its_default(command):
    parser = _commands()[command]
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, (command, action.dest)
        takes_value = action.nargs != 0 and not isinstance(
            action, argparse.BooleanOptionalAction)
        if action.option_strings and takes_value and action.default not in (None, [], ()):
            shown = action.help % {"default": action.default} if "%(" in action.help \
                else action.help
            assert "default" in shown, (command, action.dest, shown)
    assert "%(default)" not in text  # every placeholder filled in


def test_defaults_the_issue_names_are_in_the_help():
    commands = _commands()
    assert "(default: metrics_master.json)" in commands["evaluate"].format_help()
    compare = " ".join(commands["compare"].format_help().split())
    assert "(default: 2000)" in compare
    rag = " ".join(commands["rag"].format_help().split())
    assert "(default: judge)" in rag and "(default: 30.0)" in rag
    triage = " ".join(commands["triage"].format_help().split())
    assert "column of the gold label (default: the first column present of label" in triage


def test_gate_aware_is_a_pair_of_switches():
    parser = build_parser()
    base = ["evaluate", "q.csv", "c.csv"]
    assert config_from_flags(parser.parse_args(base)).gate_aware is True
    assert config_from_flags(parser.parse_args([*base, "--no-gate-aware"])).gate_aware is False
    assert config_from_flags(parser.parse_args([*base, "--gate-aware"])).gate_aware is True
    assert EvalConfig().gate_aware is True
    with pytest.raises(SystemExit):  # the old form took a value: now a usage error
        parser.parse_args([*base, "--gate-aware", "false"])
    help_text = " ".join(_commands()["evaluate"].format_help().split())
    assert "--gate-aware, --no-gate-aware Gate-aware policy" in help_text
    assert "(default: on)" in help_text


def test_version_is_the_packages_and_the_changelogs():
    """``metrics-core --version`` is metrics_core.__version__, which the wheel's metadata takes
    (pyproject: dynamic) and which CHANGELOG.md's newest entry names."""
    import tomllib

    import metrics_core

    root = Path(__file__).resolve().parent.parent
    help_run = subprocess.run([sys.executable, "-m", "metrics_core", "--version"],
                              capture_output=True, text=True, timeout=60, cwd=root)
    assert help_run.stdout == f"metrics-core {metrics_core.__version__}\n"
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "metrics_core/__init__.py"
    changelog = (root / "CHANGELOG.md").read_text()
    newest = re.search(r"^## (\S+) \(", changelog, re.MULTILINE).group(1)
    assert newest == metrics_core.__version__


def test_no_help_text_names_a_file_of_the_repository():
    """An installed metrics-core has no docs/ folder: the help points to the installed
    contract (`metrics-core contract`), never to a path of the repository."""
    texts = [build_parser().format_help(), *(p.format_help() for p in _commands().values())]
    for text in texts:
        assert not re.search(r"docs/|CONTRACT\.md|\.py\b|benchmarks/|\(README", text), text[:300]
    assert "`metrics-core contract` prints it" in texts[0]


def test_the_contract_command_prints_the_shipped_contract(capsys):
    from metrics_core.shipped import CONTRACT

    assert cli.main(["contract"]) == 0
    text = capsys.readouterr().out
    assert text == CONTRACT.read_text(encoding="utf-8") and text.startswith("# ")
    assert cli.main(["contract", "--path"]) == 0
    assert capsys.readouterr().out == f"{CONTRACT}\n"
    root = Path(__file__).resolve().parent.parent
    assert CONTRACT.read_bytes() == (root / "docs" / "CONTRACT.md").read_bytes()
