"""``metrics-core report``: the decision record of a run (HTML, PDF or a zip of everything), with
the settings and the meeting's notes read from bounded files."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from metrics_core.cli.flags import MAX_NOTES_BYTES
from metrics_core.cli.opening import cohort_options, gates_known, open_inputs, read_verdicts
from metrics_core.cli.output import (
    EXIT_INPUT,
    EXIT_OK,
    check_outputs,
    printable,
    with_progress,
    write_atomically,
)
from metrics_core.config import EvalConfig
from metrics_core.errors import SettingsError
from metrics_core.settings_file import read_settings


def _read_at_most(path: Path, limit: int, refusal) -> bytes:
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

    data = _read_at_most(path, MAX_SETTINGS_BYTES, too_large)
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


def read_notes(path: Path) -> str:
    """The meeting's notes: UTF-8 text of at most :data:`MAX_NOTES_BYTES` bytes."""
    def too_large(size: str) -> ValueError:
        return ValueError(f"--notes {path}: is {size}; notes hold at most "
                          f"{MAX_NOTES_BYTES // 1024} KiB")

    data = _read_at_most(path, MAX_NOTES_BYTES, too_large)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"--notes {path}: is not UTF-8 text (byte {err.start:,})") from None


def _thresholds(config: EvalConfig, marks: dict, guarantees: dict, settings: Path | None) -> str:
    """The record's thresholds line: every threshold pre-specified (the defaults, or loaded
    from ``settings``) unless the file marks it exploratory or guaranteed."""
    if not marks:
        return ("Thresholds: pre-specified (" + (f"loaded from {settings.name}" if settings
                                                 else "the defaults")
                + f"): {config.describe_gate()}, τ {config.threshold:g}, γ {config.gamma:g}.")
    from metrics_core.report.decision_record import thresholds_line

    return thresholds_line(config, marks, guarantees) + (
        f" (as {settings.name} records them)." if settings else ".")


@with_progress
def report_command(args) -> int:
    """``metrics-core report``: the decision record written to ``--out``; the exit status."""
    out = args.out or Path(f"decision_record.{args.format}")
    if args.exclude_ambiguous and args.adjudications is None:
        raise ValueError("--exclude-ambiguous needs --adjudications")
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates),
                   ("--settings", args.settings), ("--notes", args.notes),
                   ("--adjudications", args.adjudications), ("--posts", args.posts)],
                  [("--out", out)])
    config, marks, guarantees, chosen, bins = (load_settings_marks(args.settings)
                                               if args.settings
                                               else (EvalConfig(), {}, {}, (), ()))
    if not args.cohort:  # the cohort columns (and bins) the settings file chose (the app's)
        args.cohort, args.cohort_bins = list(chosen), [*bins, *args.cohort_bins]
    cohorts = cohort_options(args)
    # a cohort filter's numeric columns are cut by the run's bins (contract §9)
    config = config.replace(filters=config.filters.with_cohort_bins(cohorts["bins"]))
    notes = read_notes(args.notes) if args.notes else ""
    bins_of = dict(cohorts["bins"])  # the record's settings write them as settings.json does
    from metrics_core.report import decision_record as record

    args.progress.stage("reading the inputs")
    run = open_inputs(args)
    loaded = run.loaded
    if args.settings and not gates_known(config, loaded.dataset,
                                          given_by=f"{args.settings.name}: criterion_gates"):
        return EXIT_INPUT
    attributes = (list(run.evaluator.cohorts.attributes(
        cohorts["declared"], bins=cohorts["bins"]).values())
                  if cohorts["declared"] else [])
    verdicts = read_verdicts(args, loaded)
    args.progress.stage("computing the metrics")
    evaluation = run.evaluator.evaluate(config, progress=args.progress)
    cohort_result = None
    if attributes:  # the record's cohort section, and the zip's cohort tables
        from metrics_core.evaluation import cohorts as cohort_tables

        args.progress.stage("computing the cohorts")
        cohort_result = cohort_tables.evaluate_cohorts(
            run.evaluator, config, attributes, min_size=cohorts["min_size"],
            progress=args.progress)
        cohort_tables.add_to(evaluation, run.evaluator, config, attributes,
                             min_size=cohorts["min_size"])
    adjudicated = None
    if verdicts is not None:
        from metrics_core.evaluation.adjudicated import evaluate_adjudicated

        adjudicated = evaluate_adjudicated(
            run.evaluator, verdicts, exclude_ambiguous=args.exclude_ambiguous,
            original=evaluation, progress=args.progress)
    args.progress.stage(f"writing the {args.format} record")
    files = ", ".join(p.name for p in (args.queries, args.candidates) if p is not None)
    page = record.render_html(evaluation, title=args.title, notes=notes,
                              data_label=f"Data: {files}", exclusions=loaded.exclusions,
                              thresholds=_thresholds(config, marks, guarantees, args.settings),
                              marks=marks, guarantees=guarantees,
                              adjudication=adjudicated, cohorts=cohort_result,
                              cohort_columns=tuple(cohorts["declared"]), cohort_bins=bins_of)
    if args.format == "html":
        data = page.encode("utf-8")
    elif args.format == "pdf":
        data = record.render_pdf(page)
    else:
        try:
            pdf, missing = record.render_pdf(page), None
        except RuntimeError as err:  # no browser, or printing failed: the zip says so
            pdf, missing = None, str(err)
            print(f"metrics-core: note: the zip holds no PDF ({record.PDF_NOTE} says why): "
                  f"{printable(err)}", file=sys.stderr)
        data = record.render_zip(evaluation, html_text=page, pdf=pdf,
                                 exclusions=loaded.exclusions, pdf_missing=missing,
                                 marks=marks, guarantees=guarantees,
                                 adjudication=adjudicated,
                                 cohort_columns=tuple(cohorts["declared"]),
                                 cohort_bins=bins_of)
    write_atomically({out: data})
    args.progress.close()
    if not args.quiet:
        print(f"wrote {printable(out)}")
    return EXIT_OK
