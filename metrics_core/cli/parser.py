"""The command line's arguments: ``metrics-core``'s parser, its subcommands and their flags
(``evaluate``'s generated from the metadata of the :class:`EvalConfig` fields), the examples of
``--help``."""

from __future__ import annotations

import argparse
from pathlib import Path

from metrics_core import __version__
from metrics_core.cli.flags import LIMIT_FLAGS, MAX_NOTES_BYTES
from metrics_core.config import SCHEMA, SECTIONS, VARIANT_LABELS, VARIANTS, EvalConfig, options


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None


def _config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per :class:`EvalConfig` field, grouped by section, from the field metadata."""
    d = EvalConfig()
    groups = {key: parser.add_argument_group(title) for key, title in SECTIONS.items()}
    for name, opt in options().items():
        if not opt.cli:
            continue
        flag = f"--{name.replace('_', '-')}"
        default = getattr(d, name)
        if name in VARIANTS:
            help_ = "; ".join(f"{v}: {VARIANT_LABELS[name][v]}" for v in VARIANTS[name])
            groups[opt.section].add_argument(flag, choices=VARIANTS[name], default=default,
                                             help=f"{opt.label}. {help_} (default: {default})"
                                             .replace("%", "%%"))
            continue
        if isinstance(default, bool):  # a switch: --gate-aware / --no-gate-aware
            help_ = (f"{opt.label}. {opt.help} (default: {'on' if default else 'off'})"
                     .replace("%", "%%"))
            groups[opt.section].add_argument(flag, action=argparse.BooleanOptionalAction,
                                             default=default, help=help_)
            continue
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        bounds = SCHEMA[name].rule.removeprefix("must be ")
        help_ = f"{opt.label}. {opt.help} (default: {shown}; {bounds})".replace("%", "%%")
        groups[opt.section].add_argument(flag, default=None, metavar="VALUE", help=help_)
    groups["gate"].add_argument(
        "--criterion-gate", action="append", default=[],
        metavar="CRITERION=TAU_NEG:TAU_POS",
        help="own gate thresholds of one criterion, e.g. A.1=0.05:0.7 (repeat for several)")
    parser.add_argument(
        "--targets", default=None, metavar="METRIC>=VALUE,...",
        help="the run's targets, comma-separated (met only when the whole 95%% interval "
             "clears them); default: " + ",".join(d.targets))
    filters = groups["filters"]
    filters.add_argument("--fold", default=None, help="evaluate this fold only")
    filters.add_argument("--split", default=None, help="evaluate this split only")
    filters.add_argument("--criterion", action="append", default=[],
                         help="evaluate this criterion only (repeat for several)")
    filters.add_argument("--cohort-filter", action="append", default=[],
                         metavar="COLUMN=VALUE",
                         help="evaluate one cohort only: a value of a cohort column of the "
                              "queries table ('missing' for a missing value; repeat: values "
                              "of one column are alternatives, of two columns combined)")


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    from metrics_core.inputs.limits import DEFAULT_LIMITS

    group = parser.add_argument_group(
        "input limits", "a file over a limit is refused (exit 2) before memory is committed")
    for name, flag, text in LIMIT_FLAGS:
        default = getattr(DEFAULT_LIMITS, name)
        group.add_argument(flag, dest=name, type=int, default=default,
                           help=f"most {text} (default {default:,})")


def _inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queries", type=Path, help="queries table, or one long table")
    parser.add_argument("candidates", type=Path, nargs="?", help="candidates table")


def _cohort_flags(parser: argparse.ArgumentParser) -> None:
    """--cohort and its options (contract §9, cohorts)."""
    group = parser.add_argument_group("cohorts", "metrics per group of queries named by an "
                                      "extra column of the queries table or of a posts table "
                                      "(site, sex, age)")
    group.add_argument("--cohort", action="append", default=[], metavar="COLUMN",
                       help="a cohort column of the queries table or of --posts (repeat for "
                            "several; 'site*sex' is an intersection); writes the cohorts and "
                            "weak_segments tables")
    group.add_argument("--posts", type=Path, default=None, metavar="POSTS",
                       help="a posts table (CSV, TSV, Parquet or JSON Lines): one row per "
                            "post_id, its other columns cohort columns of every query of the "
                            "post (a post it does not list: the cohort 'missing')")
    group.add_argument("--cohort-bins", action="append", default=[], metavar="COLUMN=BINS",
                       help="bins of a numeric cohort column: qN (N quantile bins, q4 by "
                            "default) or edges such as 40,65")
    group.add_argument("--cohort-max-values", default="20", metavar="N",
                       help="most distinct values a cohort column may have (default: "
                            "%(default)s)")
    group.add_argument("--cohort-min-segment", default="30", metavar="N",
                       help="smallest segment (queries) of the weak-segment search "
                            "(default: %(default)s)")


def _outputs(parser: argparse.ArgumentParser, default: str) -> None:
    """--out, --quiet and the input limits, as every data command has them."""
    parser.add_argument("--out", type=Path, default=Path(default),
                        help="output file (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    _limit_flags(parser)


_DEMO = "assets/demo_queries.parquet assets/demo_candidates.parquet"


#: Examples on the demo data, as the README gives them (tests/test_documented_commands.py runs
#: each one).
EXAMPLES = (
    "metrics-core demo --out assets",
    f"metrics-core evaluate {_DEMO} --out metrics_master.json",
    f'metrics-core tune {_DEMO} --target "screening_sensitivity>=0.995" --out tune.json',
    f'metrics-core tune {_DEMO} --guarantee "screening_sensitivity>=0.99" --delta 0.1 '
    "--out guarantee.json",
    "metrics-core triage assets/demo_triage.csv --out triage.json",
    "metrics-core rag assets/demo_rag.jsonl --out rag.json --no-semantic",
    "metrics-core evaluate --help",
)


EPILOG = (
    "how to run: from the project's folder, ./dev cli COMMAND [OPTIONS] (sets up .venv, then\n"
    "runs metrics-core from it), or metrics-core COMMAND [OPTIONS] after\n"
    "`source .venv/bin/activate`; installed with pip, metrics-core COMMAND [OPTIONS].\n\n"
    "examples, on the synthetic demo data (in the project's folder, or anywhere after\n"
    "`metrics-core demo`, which writes it to assets/):\n"
    + "".join(f"  {example}\n" for example in EXAMPLES))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metrics-core",
        description="Evidence-retrieval and no-evidence-detection metrics. Every formula,\n"
                    "default and edge case is defined in the data and metric contract, which\n"
                    "ships with the package: `metrics-core contract` prints it.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"metrics-core {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="all metrics of a queries (+ candidates) file",
                        description="Compute every metric of the contract and write "
                                    "metrics_master.json.")
    _inputs(ev)
    ev.add_argument("--out", type=Path, default=Path("metrics_master.json"),
                    help="the metrics document (default: %(default)s)")
    ev.add_argument("--per-query", type=Path,
                    help="also write the per-query table (CSV) here; with --reduced a new or "
                         "empty folder the workers write it into as Parquet parts")
    ev.add_argument("--exclusions", type=Path, help="write excluded rows (CSV) here")
    ev.add_argument("--adjudications", type=Path, metavar="ADJ_CSV",
                    help="reviewers' verdicts (the adjudication file the dashboard downloads): "
                         "every metric is also computed on the corrected gold, beside the "
                         "original, in the document's 'adjudication' block")
    ev.add_argument("--exclude-ambiguous", action="store_true",
                    help="with --adjudications: leave the queries with an 'ambiguous' verdict "
                         "out of the adjudicated metrics")
    ev.add_argument("--quiet", action="store_true", help="print nothing but errors")
    ev.add_argument("--engine", choices=("memory", "dask"), default="memory",
                    help="memory: one process (default); dask: a distributed cluster, for "
                         "partitioned Parquet data (QUERIES and CANDIDATES may be folders or "
                         "globs; every post's rows in one file of each table)")
    ev.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="with --engine dask: the scheduler to use (e.g. tcp://host:8786); "
                         "default: a local cluster sized to this machine")
    ev.add_argument("--connect-timeout", default="10", metavar="SECONDS",
                    help="with --scheduler: seconds to wait for the scheduler (default 10)")
    ev.add_argument("--reduced", action="store_true",
                    help="with --engine dask: gather no per-query value (the client's memory "
                         "does not grow with the data)")
    _cohort_flags(ev)
    _config_flags(ev)
    _limit_flags(ev)

    tu = sub.add_parser("tune", help="thresholds that meet targets, overall or per criterion",
                        description="Find the thresholds that meet each target exactly "
                                    "(candidates: the observed probabilities, 0 and 1).")
    _inputs(tu)
    tu.add_argument("--target", action="append", default=[],
                    help='met on this data, e.g. "screening_sensitivity>=0.995" (repeat for '
                         "several; --target or --guarantee is needed)")
    tu.add_argument("--guarantee", action="append", default=[],
                    help='guaranteed for new queries with probability at least 1 - delta, e.g. '
                         '"screening_sensitivity>=0.99", "screening_fn_per_1000<=5" (tau_neg) '
                         'or "alert_precision>=0.9" (tau_pos) (Learn-then-Test; repeat for '
                         "several)")
    tu.add_argument("--delta", default="0.1",
                    help="with --guarantee: the probability, over the calibration data, that a "
                         "guarantee fails, within (0, 1); split evenly over the guarantees and "
                         "subsets (default: %(default)s)")
    tu.add_argument("--calibrate-on", default=None, metavar="split=NAME|fold=K",
                    help="with --guarantee: calibrate on these queries (e.g. split=TUNE or "
                         "fold=0) and report the metric on the others (default: all queries)")
    tu.add_argument("--by", choices=("criterion",), default=None,
                    help="also find the thresholds of each criterion")
    tu.add_argument("--nested", choices=("folds", "split"), default=None,
                    help="choose on the other folds (or TUNE) and evaluate on the held-out "
                         "fold (or TEST)")
    tu.add_argument("--bootstrap", default="0",
                    help="resamples for an interval that re-selects the thresholds each time "
                         "(with --nested: of the rows they are chosen on) (default: 0, none; "
                         f"at most {SCHEMA['bootstrap'].high:,})")
    tu.add_argument("--seed", default="0",
                    help="seed of the bootstrap resamples (default: %(default)s)")
    _outputs(tu, "tune.json")

    co = sub.add_parser("compare", help="compare runs on the same queries (paired tests)",
                        description="Ablation table and paired comparisons of several runs "
                                    "against a reference run.")
    co.add_argument("--run", action="append", required=True, metavar="NAME=QUERIES[,CANDIDATES]",
                    help="one run (repeat: at least two)")
    co.add_argument("--reference", default=None, help="the reference run (default: the first)")
    co.add_argument("--settings", type=Path,
                    help="settings.json downloaded from the dashboard: its thresholds and "
                         "metric options (and its resampling unit and seed unless given), as "
                         "the dashboard's Compare runs page uses them")
    co.add_argument("--bootstrap", default="2000",
                    help="paired resamples for the intervals of the differences (0: none; at "
                         f"most {SCHEMA['bootstrap'].high:,}) (default: %(default)s)")
    co.add_argument("--bootstrap-unit", choices=VARIANTS["bootstrap_unit"], default=None,
                    help="resampling unit: a query, or a post with all its queries "
                         "(default: --settings' or query)")
    co.add_argument("--seed", default=None,
                    help="seed of the bootstrap resamples (default: --settings' or 0)")
    _outputs(co, "comparison.json")

    rp = sub.add_parser("report", help="the decision record: HTML, PDF or a zip of everything",
                        description="Write the decision record of a run (the same numbers and "
                                    "figures as the dashboard's export for the same settings).")
    _inputs(rp)
    rp.add_argument("--settings", type=Path,
                    help="settings.json downloaded from the dashboard (its cohort columns "
                         "too, unless --cohort is given)")
    rp.add_argument("--format", choices=("html", "pdf", "zip"), default="html",
                    help="html, pdf (printed by Chromium) or a zip of the record, its data and "
                         "figures (default: %(default)s)")
    rp.add_argument("--title", default="Decision record",
                    help="title of the record (default: %(default)s)")
    rp.add_argument("--notes", type=Path,
                    help=f"a text file with the meeting's notes (UTF-8, at most "
                         f"{MAX_NOTES_BYTES // 1024} KiB)")
    rp.add_argument("--adjudications", type=Path, metavar="ADJ_CSV",
                    help="reviewers' verdicts (the adjudication file): the record adds what "
                         "was reviewed and the headline numbers on the corrected gold")
    rp.add_argument("--exclude-ambiguous", action="store_true",
                    help="with --adjudications: leave ambiguous queries out of the "
                         "adjudicated numbers")
    rp.add_argument("--out", type=Path, default=None,
                    help="output file (default decision_record.<format>)")
    rp.add_argument("--quiet", action="store_true", help="print nothing but errors")
    _cohort_flags(rp)
    _limit_flags(rp)

    from metrics_core.choices import (
        CONFIDENCE_ALIASES,
        LABEL_ALIASES,
        PREDICTION_ALIASES,
        TRIAL_ALIASES,
    )

    def found(aliases) -> str:
        return "default: the first column present of " + ", ".join(aliases)

    tr = sub.add_parser("triage", help="metrics of a triage classifier with abstention",
                        description="Coverage, slip and false-flag rates, per-class metrics "
                                    "and Wilson intervals of a classifier that may abstain.")
    tr.add_argument("file", type=Path, help="one row per case: gold label and verdict")
    tr.add_argument("--out", type=Path, default=Path("triage.json"),
                    help="output file (default: %(default)s)")
    tr.add_argument("--label-column", default=None, metavar="COLUMN",
                    help=f"column of the gold label ({found(LABEL_ALIASES)})")
    tr.add_argument("--prediction-column", default=None, metavar="COLUMN",
                    help="column of the verdict: positive, negative or the abstention "
                         f"({found(PREDICTION_ALIASES)})")
    tr.add_argument("--confidence-column", default=None, metavar="COLUMN",
                    help="column of the verdict's confidence in [0, 1], optional, for ECE and "
                         f"Brier ({found(CONFIDENCE_ALIASES)}; none: left out)")
    tr.add_argument("--trial-column", default=None, metavar="COLUMN",
                    help="column numbering repeated trials, optional, for mean ± std over "
                         f"trials ({found(TRIAL_ALIASES)}; none: one trial)")
    tr.add_argument("--positive", default=None,
                    help="name of the positive class (default: fake; also 1)")
    tr.add_argument("--negative", default=None,
                    help="name of the negative class (default: real; also 0)")
    tr.add_argument("--abstain", default=None,
                    help="name of the abstention (default: uncertain; also -1)")
    tr.add_argument("--quiet", action="store_true", help="print nothing but errors")

    rg = sub.add_parser("rag", help="RAG evaluation metrics of a JSON Lines file (seed 002)",
                        description="Retrieval, generation, faithfulness, robustness, latency "
                                    "and diversity metrics of a RAG system (contract §12).")
    rg.add_argument("file", type=Path, help="JSON Lines, one sample a line")
    rg.add_argument("--out", type=Path, default=Path("rag.json"),
                    help="output file (default: %(default)s)")
    rg.add_argument("--ks", default="1,3,5,10",
                    help="cut-offs of the retrieval metrics (default 1,3,5,10; at most 50, "
                         f"each within [1, {SCHEMA['ks'].high:,}])")
    rg.add_argument("--quantiles", type=_floats, default=(0.95,),
                    help="latency quantiles in (0, 1] (default 0.95)")
    rg.add_argument("--critic-url", default=None,
                    help="OpenAI-compatible endpoint of the LLM critic, e.g. "
                         "http://127.0.0.1:8000/v1 (without it, or when it gives no usable "
                         "reply, the LLM metrics are skipped with the reason)")
    rg.add_argument("--critic-model", default="judge",
                    help="model name sent to the critic (default: %(default)s)")
    rg.add_argument("--critic-timeout", type=float, default=30.0,
                    help="deadline of one critic request in seconds: connect and the whole "
                         "reply, however slowly it comes (default: %(default)s)")
    rg.add_argument("--critic-max-bytes", type=int, default=1024 * 1024,
                    help="largest critic reply read, in bytes (default: %(default)s)")
    rg.add_argument("--critic-retries", type=int, default=3,
                    help="retries of a critic request after a connection error, a passed "
                         "deadline, HTTP 429 or 5xx (default: %(default)s)")
    rg.add_argument("--no-semantic", action="store_true",
                    help="leave out BERTScore and embedding similarity (they load a model)")
    rg.add_argument("--quiet", action="store_true", help="print nothing but errors")

    de = sub.add_parser(
        "demo", help="write the synthetic demo files (the examples below use them)",
        description="Write the synthetic demo data, generated as the package's own copy was "
                    "(same generator, same seeds, same bytes): the evidence demo "
                    "(demo_queries.parquet, demo_candidates.parquet), the demo with data "
                    "problems planted for the audit (demo_problems_*.parquet), the triage "
                    "demo (demo_triage.csv), the RAG demo (demo_rag.jsonl) and README.md, "
                    "which says what each holds.")
    de.add_argument("--out", type=Path, default=Path("assets"),
                    help="folder to write them into, made if needed (default: %(default)s, "
                         "so that the examples run as written from the folder above it)")
    de.add_argument("--quiet", action="store_true", help="print nothing but errors")

    ct = sub.add_parser("contract", help="print the data and metric contract (Markdown)",
                        description="Print the data and metric contract, the definition of "
                                    "every input, formula, default, variant and edge case "
                                    "(the docstrings cite its sections as \"contract §N\").")
    ct.add_argument("--path", action="store_true",
                    help="print where the installed contract is instead of its text")

    ap = sub.add_parser(
        "app", help="start the dashboard (needs the app extra)",
        description="Start the dashboard, a Streamlit server with the project's settings "
                    "(security headers, upload limits, malloc settings); its sidebar offers "
                    "the demo data. It listens on 127.0.0.1 only unless told otherwise. "
                    "Options of Streamlit (--section.key VALUE, e.g. --secrets.files FILE) "
                    "given after these are passed on to it.")
    ap.add_argument("--port", default="8501", help="port to listen on (default: %(default)s)")
    ap.add_argument("--host", default=None,
                    help="address to listen on (default: 127.0.0.1, or every interface with "
                         "--share); an address other than loopback shares the app, as --share "
                         "does")
    ap.add_argument("--share", action="store_true",
                    help="listen on every network interface and print this machine's "
                         "addresses; starts only with sign-in configured ([auth] in "
                         ".streamlit/secrets.toml) or --no-auth")
    ap.add_argument("--no-auth", action="store_true",
                    help="share without sign-in: anyone who can reach this machine can open "
                         "the app and see or upload data")
    ap.add_argument("--invoked-as", default=None, help=argparse.SUPPRESS)  # (./dev app)
    return parser
