"""``metrics-core evaluate``: every metric of the contract, written to metrics_master.json (with
the per-query table, the exclusions, the cohorts and the adjudicated gold on request), and its
summary on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from metrics_core.cli.flags import config_from_flags, flag_value
from metrics_core.cli.opening import cohort_options, gates_known, open_inputs, read_verdicts
from metrics_core.cli.output import (
    EXIT_INPUT,
    EXIT_OK,
    check_outputs,
    printable,
    with_progress,
    write_atomically,
)
from metrics_core.config import FieldSchema

#: A timeout flag: seconds, finite and positive.
_TIMEOUT = FieldSchema("timeout", "float", 0.001, 86_400.0)


def _csv_bytes(frame) -> bytes:
    from metrics_core.report.export import csv_bytes

    return csv_bytes(frame)


#: The tables of ``metrics_master.json`` built on a helper thread while the command line
#: writes the document from its start (it reaches these last).
_PREFETCHED_TABLES = ("smoothed_calibration", "per_criterion", "decision_curve", "gate_grid",
                      "gate_risk_coverage")


def _cohort_attributes(run, cohorts: dict) -> list:
    """The declared cohort columns of the queries file (none declared: ``[]``)."""
    if not cohorts["declared"]:
        return []
    return list(run.evaluator.cohorts.attributes(cohorts["declared"],
                                                  bins=cohorts["bins"]).values())


def _evaluate_reduced(args, config, connect_timeout) -> int:
    """``evaluate --engine dask --reduced``: the reduced records' document, nothing else."""
    if args.engine != "dask":
        raise ValueError("--reduced needs --engine dask")
    if args.exclusions is not None:
        raise ValueError("--exclusions needs the per-query values: leave out --reduced")
    if args.per_query is not None and args.out.resolve().is_relative_to(
            args.per_query.resolve()):
        raise ValueError(f"--out {args.out} is inside --per-query {args.per_query}: with "
                         f"--reduced --per-query names a folder of Parquet parts of its own; "
                         f"choose another path for either")
    from metrics_core.engines import dask as dask_engine

    document = dask_engine.evaluate_reduced(args.queries, args.candidates, config,
                                            scheduler=args.scheduler, timeout=connect_timeout,
                                            per_query=args.per_query)
    write_atomically({args.out: json.dumps(document, indent=2, allow_nan=False).encode()})
    args.progress.close()
    if not args.quiet:
        print(f"{document['dataset']['n_queries']:,} queries; wrote {args.out} "
              f"({len(document['metrics'])} records; not computed: "
              f"{', '.join(document['not_computed'])})")
        if "per_query" in document:
            table = document["per_query"]
            print(f"wrote {printable(table['path'])} (the per-query table: "
                  f"{table['n_rows']:,} rows in {len(table['parts'])} Parquet parts)")
        for finding in document["audit"]["findings"]:  # as the in-memory summary
            if finding["level"] != "info":
                print(f"audit {finding['level']}: {printable(finding['message'])}")
    return EXIT_OK


@with_progress
def evaluate_command(args) -> int:
    """``metrics-core evaluate``: the outputs written together, then the summary; the exit
    status."""
    config = config_from_flags(args)
    connect_timeout = flag_value(_TIMEOUT, args.connect_timeout, "--connect-timeout")
    if args.exclude_ambiguous and args.adjudications is None:
        raise ValueError("--exclude-ambiguous needs --adjudications")
    if args.adjudications is not None and args.engine == "dask":
        raise ValueError("--adjudications needs --engine memory (the default)")
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates),
                   ("--adjudications", args.adjudications), ("--posts", args.posts)],
                  [("--out", args.out), ("--per-query", args.per_query),
                   ("--exclusions", args.exclusions)])
    cohorts = cohort_options(args)
    # a cohort filter's numeric columns are cut by the command's bins (contract §9)
    config = config.replace(filters=config.filters.with_cohort_bins(cohorts["bins"]))
    if (cohorts["declared"] or args.posts is not None) and args.engine == "dask":
        raise ValueError("--cohort and --posts need the in-memory engine (leave out "
                         "--engine dask)")
    verdicts = None
    if args.reduced:
        return _evaluate_reduced(args, config, connect_timeout)
    if args.engine == "dask":
        from metrics_core.engines import dask as dask_engine

        run = dask_engine.evaluate(args.queries, args.candidates, config,
                                   scheduler=args.scheduler, timeout=connect_timeout)
        evaluation, loaded, report = run.evaluation, run.loaded, run.audit
        if not gates_known(config, loaded.dataset):
            return EXIT_INPUT
    else:
        if args.scheduler is not None:
            raise ValueError("--scheduler needs --engine dask")
        args.progress.stage("reading the inputs")
        run = open_inputs(args)
        loaded, report = run.loaded, run.audit
        if not gates_known(config, loaded.dataset):
            return EXIT_INPUT
        attributes = _cohort_attributes(run, cohorts)
        verdicts = read_verdicts(args, loaded)  # (a bad file stops the run before computing)
        args.progress.stage("computing the metrics")
        evaluation = run.evaluator.evaluate(config, progress=args.progress)
        if attributes:
            from metrics_core.evaluation import cohorts as cohort_tables

            args.progress.stage("computing the cohorts")
            cohort_tables.add_to(evaluation, run.evaluator, config, attributes,
                                 min_size=cohorts["min_size"])
            cohort_tables.evaluate_cohorts(run.evaluator, config, attributes,
                                           min_size=cohorts["min_size"],
                                           progress=args.progress)
    # The document's tables, on two threads: these from its end while it writes the rest.
    args.progress.stage("writing the outputs")
    evaluation.prefetch(*_PREFETCHED_TABLES)
    document = evaluation.to_json()
    adjudicated = None
    if verdicts is not None:
        from metrics_core.evaluation.adjudicated import evaluate_adjudicated, with_adjudication
        from metrics_core.run import fingerprint

        args.progress.stage("computing the metrics on the adjudicated gold")
        adjudicated = evaluate_adjudicated(
            run.evaluator, verdicts, exclude_ambiguous=args.exclude_ambiguous,
            original=evaluation, inputs=fingerprint(args.adjudications),
            progress=args.progress)
        document = with_adjudication(document, adjudicated)
    outputs = {args.out: document.encode("utf-8")}
    if args.per_query is not None:
        outputs[args.per_query] = _csv_bytes(evaluation.per_query)
    if args.exclusions is not None:
        outputs[args.exclusions] = _csv_bytes(loaded.exclusions)
    write_atomically(outputs)
    args.progress.close()
    if not args.quiet:
        _print_summary(evaluation, loaded, report, list(outputs), adjudicated)
    return EXIT_OK


def _print_summary(evaluation, loaded, report, written: list[Path], adjudicated=None) -> None:
    from metrics_core import registry

    s = evaluation.summary
    print(f"{s['n_queries']} queries ({s['n_positive']} with evidence), "
          f"{s['n_candidates']} candidates, {len(s['criteria'])} criteria")
    if evaluation.config.filters.active:
        print(f"filtered: {printable(evaluation.config.filters.describe())}")
    if len(loaded.exclusions):
        print(f"excluded rows: {len(loaded.exclusions)} "
              f"({printable(', '.join(sorted(set(loaded.exclusions['reason']))))})")
    for warning in loaded.warnings:
        print(f"warning: {printable(warning)}")
    for finding in getattr(report, "findings", ()):
        if finding.level != "info":
            print(f"audit {finding.level}: {printable(finding.message)}")
    for name in registry.headline(r.name for r in evaluation.records):
        r = evaluation.record(name)
        value = "undefined" if not r.defined else f"{r.value:.4f}"
        ci = "" if r.ci95 is None else f"  [{r.ci95[0]:.4f}, {r.ci95[1]:.4f}]"
        print(f"  {name:<24}{value}{ci}  ({r.subset}, n={r.n})")
    if adjudicated is not None:
        _print_adjudicated(adjudicated, registry.headline(r.name for r in evaluation.records))
    _print_cohorts(evaluation)
    failed = [c.name for c in evaluation.checks if c.passed is False]
    print("consistency checks: " + ("all passed" if not failed
                                    else f"FAILED: {', '.join(failed)}"))
    for path in written:
        print(f"wrote {printable(path)}")


def _print_cohorts(evaluation) -> None:
    """One line per flagged disparity, after the cohorts' count (nothing without cohorts)."""
    try:
        table = evaluation.table("cohorts")
    except KeyError:  # no cohort declared
        return
    columns = table["column"].unique().tolist()
    n = table[["column", "value"]].drop_duplicates().shape[0]
    flagged = table[table["flagged"]]
    print(f"cohorts: {n} in {len(columns)} column(s) ({printable(', '.join(columns))}); "
          f"{len(flagged)} disparity(ies) flagged (Holm-adjusted p < 0.05, interval "
          f"excluding 0)")
    for row in flagged.itertuples(index=False):
        lo, hi = row.difference_ci95
        print(f"  {printable(row.column)}={printable(row.value)} {row.metric}: "
              f"{row.estimate:.4f} vs {row.rest_estimate:.4f} elsewhere, difference "
              f"{row.difference:+.4f} [{lo:+.4f}, {hi:+.4f}], p_adj={row.p_adjusted:.3g}"
              + (f" (small cell: n={row.n}, {row.n_positive} with evidence)" if row.small
                 else ""))


def _print_adjudicated(adjudicated, names) -> None:
    """The verdicts' counts and the headline numbers on the adjudicated gold that changed."""
    import pandas as pd

    counts = adjudicated.adjudications.counts()
    print("adjudicated gold: " + ", ".join(f"{n} {v}" for v, n in counts.items())
          + (" (ambiguous queries left out)" if adjudicated.exclude_ambiguous else ""))
    diff = adjudicated.differences().set_index("name")

    def shown(value) -> str:
        return "undefined" if pd.isna(value) else f"{value:.4f}"

    for name in names:
        before, after = diff.loc[name, "original"], diff.loc[name, "adjudicated"]
        if shown(before) != shown(after):
            print(f"  {name:<24}{shown(before)} -> {shown(after)} on the adjudicated gold")
