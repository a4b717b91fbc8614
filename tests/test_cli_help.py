"""Every option of every command says what it does, and its default where it has one; a
boolean setting is a pair of switches (--gate-aware / --no-gate-aware)."""

from __future__ import annotations

import argparse

import pytest

from metrics_core import cli
from metrics_core.config import EvalConfig


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
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
    parser = cli._parser()
    base = ["evaluate", "q.csv", "c.csv"]
    assert cli._config(parser.parse_args(base)).gate_aware is True
    assert cli._config(parser.parse_args([*base, "--no-gate-aware"])).gate_aware is False
    assert cli._config(parser.parse_args([*base, "--gate-aware"])).gate_aware is True
    assert EvalConfig().gate_aware is True
    with pytest.raises(SystemExit):  # the old form took a value: now a usage error
        parser.parse_args([*base, "--gate-aware", "false"])
    help_text = " ".join(_commands()["evaluate"].format_help().split())
    assert "--gate-aware, --no-gate-aware Gate-aware policy" in help_text
    assert "(default: on)" in help_text
