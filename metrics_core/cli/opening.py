"""The inputs of a data command opened: the run (:func:`metrics_core.run.open_run`), its
per-criterion gates checked against the data, the reviewers' verdicts read."""

from __future__ import annotations

import sys

from metrics_core.cli.flags import input_limits
from metrics_core.config import EvalConfig


def open_inputs(args):
    """:func:`metrics_core.run.open_run` of the inputs; its evaluator reads a cohort filter
    and the declared cohorts from the queries table's columns (read when first asked for)."""
    from metrics_core.inputs.cohort_columns import CohortSource
    from metrics_core.run import open_run

    run = open_run(args.queries, args.candidates, limits=input_limits(args))
    tables = [(args.queries, args.queries.name)]
    if getattr(args, "posts", None) is not None:  # checked now, before anything is computed
        from metrics_core.inputs.cohort_columns import posts_table

        tables.append((posts_table(args.posts, run.loaded, name=args.posts.name,
                                   limits=input_limits(args)), args.posts.name))
    run.evaluator.cohorts = CohortSource(
        lambda names, bins: _read_cohorts(args, run, names, tables, bins), run.loaded)
    return run


def _read_cohorts(args, run, names, tables, bins) -> dict:
    """The cohort columns ``names`` of the queries file, else of ``--posts``, with the bins
    ``bins`` (``{column: spec}``: the command's ``--cohort-bins`` for its cohort tables, a
    cohort filter's own for the filter) and the command's ``--cohort-max-values``, where it
    has it."""
    from metrics_core.inputs.cohort_columns import MAX_COHORT_VALUES, read_cohorts

    options = cohort_options(args) if hasattr(args, "cohort_bins") else {
        "max_values": MAX_COHORT_VALUES}
    return read_cohorts(names, tables, run.loaded, bins=bins,
                        max_values=options["max_values"], limits=input_limits(args))


def cohort_options(args) -> dict:
    """The cohort flags checked: ``{"declared", "bins", "max_values", "min_size"}``."""
    bins = {}
    for item in args.cohort_bins:
        column, sep, value = item.partition("=")
        if not sep or not column.strip():
            raise ValueError(f"--cohort-bins {item!r}: write COLUMN=qN or COLUMN=40,65")
        bins[column.strip()] = value
    declared = {p.strip() for d in args.cohort for p in d.split("*")}
    for column in bins:
        if column not in declared:
            raise ValueError(f"--cohort-bins {column}: not a --cohort column")
    out = {"declared": list(args.cohort), "bins": bins}
    for key, flag, value, low in (("max_values", "--cohort-max-values",
                                   args.cohort_max_values, 2),
                                  ("min_size", "--cohort-min-segment",
                                   args.cohort_min_segment, 1)):
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < low:
            raise ValueError(f"{flag} {value!r}: must be a whole number of at least {low}")
        out[key] = number
    return out




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
