"""``metrics-core report``: the decision record of a run (HTML, PDF or a zip of everything), with
the settings and the meeting's notes read from bounded files."""

from __future__ import annotations

import sys
from pathlib import Path

from metrics_core.cli.flags import MAX_NOTES_BYTES
from metrics_core.cli.opening import (
    cohort_options,
    gates_known,
    load_settings_marks,
    open_inputs,
    read_at_most,
    read_verdicts,
    thresholds_text,
)
from metrics_core.cli.output import (
    EXIT_INPUT,
    EXIT_OK,
    check_outputs,
    printable,
    with_progress,
    write_atomically,
)
from metrics_core.config import EvalConfig


def read_notes(path: Path) -> str:
    """The meeting's notes: UTF-8 text of at most :data:`MAX_NOTES_BYTES` bytes."""
    def too_large(size: str) -> ValueError:
        return ValueError(f"--notes {path}: is {size}; notes hold at most "
                          f"{MAX_NOTES_BYTES // 1024} KiB")

    data = read_at_most(path, MAX_NOTES_BYTES, too_large)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"--notes {path}: is not UTF-8 text (byte {err.start:,})") from None


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
                              thresholds=thresholds_text(config, marks, guarantees, args.settings),
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
