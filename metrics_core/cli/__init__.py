"""Command line: ``metrics-core evaluate`` / ``tune`` / ``compare`` / ``report`` / ``triage`` /
``rag`` / ``demo`` / ``contract`` / ``app`` (also ``python -m metrics_core``).

:func:`main` parses the arguments (:mod:`~metrics_core.cli.parser`) and runs the subcommand's
module; every error a user can cause ends here, as exit status 2 and a plain message naming
file, column, rule and rows, never a traceback. All outputs of a run are written to temporary
files beside their targets and renamed into place together
(:func:`~metrics_core.cli.output.write_atomically`): a failed run leaves the previous files as
they were.
"""

from __future__ import annotations

import sys
from types import MappingProxyType

from metrics_core.cli.app import APP_PACKAGES, app_command, needs_app_extra
from metrics_core.cli.compare import compare_command
from metrics_core.cli.evaluate import evaluate_command
from metrics_core.cli.flags import LIMIT_FLAGS, FlagError
from metrics_core.cli.output import EXIT_CANCELLED, EXIT_INPUT, printable
from metrics_core.cli.parser import build_parser
from metrics_core.cli.rag import rag_command
from metrics_core.cli.report import report_command
from metrics_core.cli.shipped import contract_command, demo_command
from metrics_core.cli.triage import triage_command
from metrics_core.cli.tune import tune_command
from metrics_core.errors import InputError

__all__ = ["main"]


#: Each subcommand's function: ``command(args) -> exit status``.
COMMANDS = MappingProxyType({
    "evaluate": evaluate_command, "tune": tune_command, "compare": compare_command,
    "report": report_command, "triage": triage_command, "rag": rag_command,
    "demo": demo_command, "contract": contract_command, "app": app_command,
})


def main(argv: list[str] | None = None) -> int:
    """Run ``metrics-core`` with ``argv`` (default: the process's arguments); the exit status."""
    parser = build_parser()
    args, passthrough = parser.parse_known_args(argv)
    if passthrough and args.command != "app":   # only the app passes options on (Streamlit's)
        parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
    args.passthrough = passthrough
    return _run(args)


def _run(args) -> int:
    """The subcommand's exit status; an error a user can cause printed as one plain message."""
    try:
        return COMMANDS[args.command](args)
    except InputError as err:
        text = err.render()
        for name, flag, _ in LIMIT_FLAGS:  # name the option a CLI user can change
            text = text.replace(f"Limits.{name}", flag)
        print(f"metrics-core: {printable(text)}", file=sys.stderr)
        return EXIT_INPUT
    except FlagError as err:
        print(f"metrics-core: invalid option: {printable(err)}", file=sys.stderr)
        return EXIT_INPUT
    except IsADirectoryError as err:
        print(f"metrics-core: {printable(err.filename)} is a directory, not a file",
              file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:
        print(f"metrics-core: cannot read or write {printable(err.filename)}: "
              f"{err.strerror}", file=sys.stderr)
        return EXIT_INPUT
    except ValueError as err:
        print(f"metrics-core: {printable(err)}", file=sys.stderr)
        return EXIT_INPUT
    except RuntimeError as err:  # e.g. no browser to print a PDF with
        print(f"metrics-core: {printable(err)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("metrics-core: cancelled; no output was written", file=sys.stderr)
        return EXIT_CANCELLED
    except ModuleNotFoundError as err:  # run by a Python without the project's packages
        if (err.name or "").split(".")[0] in APP_PACKAGES:  # an install without the app extra
            print(f"metrics-core {args.command}: {needs_app_extra(err.name)}", file=sys.stderr)
            return EXIT_INPUT
        print(f"metrics-core: this Python ({sys.executable}) has no package {err.name!r}, "
              "which the project needs: run the command in the project's environment, "
              "./dev cli COMMAND … from the project's folder, or metrics-core COMMAND … after "
              "`source .venv/bin/activate` (README, \"How to run every other command\")",
              file=sys.stderr)
        return EXIT_INPUT
