"""The inputs of a data command opened: the run (:func:`metrics_core.run.open_run`), its
per-criterion gates checked against the data, the reviewers' verdicts read, a settings.json
read back (``report`` and ``compare``)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from metrics_core.cli.flags import input_limits
from metrics_core.config import EvalConfig
from metrics_core.errors import SettingsError
from metrics_core.settings_file import read_settings


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


def read_at_most(path: Path, limit: int, refusal) -> bytes:
    """The bytes of ``path``, refused by ``refusal(size_text)`` (an exception) when larger
    than ``limit``: a regular file by its size before reading, anything else (a pipe, a
    device such as /dev/zero) after reading ``limit + 1`` bytes at most."""
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise refusal(f"{info.st_size:,} bytes")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise refusal(f"more than {limit:,} bytes")
    return data


def load_settings(path: Path) -> EvalConfig:
    """The :class:`EvalConfig` of a settings.json (as the dashboard writes it), read with
    :func:`metrics_core.settings_file.read_settings`: the dashboard's verdict on the same file."""
    return load_settings_marks(path)[0]


def load_settings_marks(path: Path) -> tuple[EvalConfig, dict, dict, tuple[str, ...], tuple]:
    """:func:`load_settings`, how the file says each threshold was chosen and the cohort
    columns it chooses with their bins: ``(config, marks, guarantees, cohort_columns,
    cohort_bins)`` (``COLUMN=SPEC`` items; field ->
    exploratory / guaranteed; field -> ThresholdGuarantee), contract §9: a record made from
    the file keeps them."""
    from metrics_core.config import EXPLORATORY, GUARANTEED, MAX_SETTINGS_BYTES
    from metrics_core.settings_file import (
        filter_bins_errors,
        read_settings_cohort_bins,
        read_settings_cohorts,
        read_settings_file,
    )

    def too_large(size: str) -> SettingsError:
        return SettingsError(None, f"is {size}; a settings file holds at most "
                             f"{MAX_SETTINGS_BYTES:,} bytes", source=path.name)

    data = read_at_most(path, MAX_SETTINGS_BYTES, too_large)
    config = EvalConfig(**read_settings(data, source=path.name))
    _, _, explored, guaranteed = read_settings_file(data, source=path.name)
    marks = {**dict.fromkeys(guaranteed, GUARANTEED), **dict.fromkeys(explored, EXPLORATORY)}
    columns, errors = read_settings_cohorts(data, source=path.name)
    bins, more = read_settings_cohort_bins(data, source=path.name)
    errors = [*errors, *(e for e in more if e.field is not None)]
    if not errors:
        errors = filter_bins_errors(config.filters, bins, source=path.name)
    if errors:
        raise SettingsError.combine(errors, source=path.name)
    return config, marks, guaranteed, columns, bins


def thresholds_text(config: EvalConfig, marks: dict, guarantees: dict,
                    settings: Path | None) -> str:
    """The thresholds line of a record or a comparison: every threshold pre-specified (the
    defaults, or loaded from ``settings``) unless the file marks it exploratory or
    guaranteed."""
    if not marks:
        return ("Thresholds: pre-specified (" + (f"loaded from {settings.name}" if settings
                                                 else "the defaults")
                + f"): {config.describe_gate()}, τ {config.threshold:g}, γ {config.gamma:g}.")
    from metrics_core.report.decision_record import thresholds_line

    return thresholds_line(config, marks, guarantees) + (
        f" (as {settings.name} records them)." if settings else ".")
