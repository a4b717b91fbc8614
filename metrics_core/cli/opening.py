"""The inputs of a data command opened: the run (:func:`metrics_core.run.open_run`), its
per-criterion gates checked against the data, the reviewers' verdicts read."""

from __future__ import annotations

import sys

from metrics_core.cli.flags import input_limits
from metrics_core.config import EvalConfig


def open_inputs(args):
    """:func:`metrics_core.run.open_run` of the inputs."""
    from metrics_core.run import open_run

    return open_run(args.queries, args.candidates, limits=input_limits(args))


def gates_known(config: EvalConfig, dataset, *, given_by: str = "--criterion-gate") -> bool:
    """False (after saying why on stderr) when a per-criterion gate names an unknown one."""
    from metrics_core.run import check_criterion_gates

    try:
        check_criterion_gates(config, dataset, given_by=given_by)
    except ValueError as err:
        print(f"metrics-core: invalid option: {err}", file=sys.stderr)
        return False
    return True


def read_verdicts(args, loaded):
    """``--adjudications``' file read and checked against the data (None without it)."""
    if args.adjudications is None:
        return None
    from metrics_core.inputs.adjudications import read_adjudications

    return read_adjudications(args.adjudications, loaded.dataset, name=args.adjudications.name)
