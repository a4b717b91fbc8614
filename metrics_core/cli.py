"""Command line: ``metrics-core evaluate`` / ``triage`` / ``rag`` (also ``python -m metrics_core``).

The ``evaluate`` flags are generated from the metadata of the :class:`EvalConfig` fields, so a
new setting is one field in :mod:`metrics_core.config`. Bad input exits with status 2 and a
message naming file, column, rule and rows; never a traceback. All outputs of a run are written
to temporary files beside their targets and renamed into place together: a failed run leaves
the previous files as they were.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

from metrics_core import __version__
from metrics_core.config import (
    SCHEMA,
    SECTIONS,
    VARIANT_LABELS,
    VARIANTS,
    EvalConfig,
    FieldSchema,
    Filters,
    coerce_field,
    options,
)
from metrics_core.errors import InputError, SettingsError
from metrics_core.progress import StderrProgress
from metrics_core.settings_file import read_settings

__all__ = ["APP_PACKAGES", "app_server_options", "main", "needs_app_extra", "write_atomically"]

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_CANCELLED = 130


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


class FlagError(ValueError):
    """A command-line value that breaks its rule (the message names the flag)."""


def _setting(name: str, text, flag: str | None = None):
    """The value of the setting ``name`` from a flag's text, through the settings schema."""
    try:
        return coerce_field(name, text, text=True)
    except SettingsError as err:
        raise FlagError(err.render(flag or _flag(name))) from None


def _flag_value(schema: FieldSchema, text: str, flag: str):
    """A flag's value checked by a schema of its own (a flag that is no EvalConfig field)."""
    try:
        return schema.check(text, "text")
    except SettingsError as err:
        raise FlagError(err.render(flag)) from None


#: A timeout flag: seconds, finite and positive.
_TIMEOUT = FieldSchema("timeout", "float", 0.001, 86_400.0)
#: Latency quantiles of ``rag --quantiles``.
_QUANTILES = FieldSchema("quantiles", "floats", 0.0, 1.0, max_items=20)
#: Largest notes file of ``report --notes`` (bytes).
MAX_NOTES_BYTES = 64 * 1024


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


def _same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file: the same resolved path (symbolic links
    followed), or, both existing, the same device and inode (hard links)."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):  # (a loop of symbolic links)
        pass
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_outputs(inputs, outputs) -> None:
    """Refuse (ValueError naming both paths) an output that is an input, lies inside an
    input folder, or is another output. ``inputs`` / ``outputs``: ``(what, path)`` pairs,
    ``path`` None for an absent one. Called before anything is read or written."""
    inputs = [(what, Path(p)) for what, p in inputs if p is not None]
    outputs = [(what, Path(p)) for what, p in outputs if p is not None]
    for i, (what, out) in enumerate(outputs):
        for in_what, path in inputs:
            inside = False
            with contextlib.suppress(OSError, RuntimeError):
                inside = path.is_dir() and out.resolve().is_relative_to(path.resolve())
            if _same_file(out, path) or inside:
                where = "is inside" if inside and not _same_file(out, path) else "is"
                raise ValueError(f"{what} {out} {where} the input {in_what} {path}: an output "
                                 f"never overwrites an input; choose another path")
        for other_what, other in outputs[:i]:
            if _same_file(out, other):
                raise ValueError(f"{what} {out} and {other_what} {other} are the same file: "
                                 f"each output needs a path of its own")


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


#: Input limits and their flags (metrics_core.inputs.limits.Limits, also
#: metrics_core.inputs.loading.Limits).
_LIMIT_FLAGS = (("max_decompressed_bytes", "--max-bytes", "bytes of content after decompression"),
                ("max_rows", "--max-rows", "data rows of one file"),
                ("max_columns", "--max-columns", "columns of one file"),
                ("max_cell_bytes", "--max-cell-bytes", "bytes of one value"))


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    from metrics_core.inputs.limits import DEFAULT_LIMITS

    group = parser.add_argument_group(
        "input limits", "a file over a limit is refused (exit 2) before memory is committed")
    for name, flag, text in _LIMIT_FLAGS:
        default = getattr(DEFAULT_LIMITS, name)
        group.add_argument(flag, dest=name, type=int, default=default,
                           help=f"most {text} (default {default:,})")


def _limits(args):
    from metrics_core.inputs.limits import Limits

    return Limits(**{name: getattr(args, name) for name, _, _ in _LIMIT_FLAGS})


def _inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queries", type=Path, help="queries table, or one long table")
    parser.add_argument("candidates", type=Path, nargs="?", help="candidates table")


def _cohort_flags(parser: argparse.ArgumentParser) -> None:
    """--cohort and its options (contract §9, cohorts)."""
    group = parser.add_argument_group("cohorts", "metrics per group of queries named by an "
                                      "extra column of the queries table (site, sex, age)")
    group.add_argument("--cohort", action="append", default=[], metavar="COLUMN",
                       help="a cohort column of the queries table (repeat for several; "
                            "'site*sex' is an intersection); writes the cohorts and "
                            "weak_segments tables")
    group.add_argument("--cohort-bins", action="append", default=[], metavar="COLUMN=BINS",
                       help="bins of a numeric cohort column: qN (N quantile bins, q4 by "
                            "default) or edges such as 40,65")
    group.add_argument("--cohort-max-values", default="20", metavar="N",
                       help="most distinct values a cohort column may have (default: "
                            "%(default)s)")
    group.add_argument("--cohort-min-segment", default="30", metavar="N",
                       help="smallest segment (queries) of the weak-segment search "
                            "(default: %(default)s)")


def _cohort_options(args) -> dict:
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


def _parser() -> argparse.ArgumentParser:
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
    ev.add_argument("--per-query", type=Path, help="also write the per-query table (CSV) here")
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
    co.add_argument("--bootstrap", default="2000",
                    help="paired resamples for the intervals of the differences (0: none; at "
                         f"most {SCHEMA['bootstrap'].high:,}) (default: %(default)s)")
    co.add_argument("--bootstrap-unit", choices=VARIANTS["bootstrap_unit"], default="query",
                    help="resampling unit: a query, or a post with all its queries "
                         "(default: %(default)s)")
    co.add_argument("--seed", default="0",
                    help="seed of the bootstrap resamples (default: %(default)s)")
    _outputs(co, "comparison.json")

    rp = sub.add_parser("report", help="the decision record: HTML, PDF or a zip of everything",
                        description="Write the decision record of a run (the same numbers and "
                                    "figures as the dashboard's export for the same settings).")
    _inputs(rp)
    rp.add_argument("--settings", type=Path, help="settings.json downloaded from the dashboard")
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


def _config(args) -> EvalConfig:
    """The run's configuration from its flags, each read through the settings schema; every
    bad flag is named at once (one :class:`FlagError`)."""
    values, problems = {}, []
    given = {f.name: getattr(args, f.name) for f in fields(EvalConfig)
             if options()[f.name].cli and getattr(args, f.name) is not None}
    if args.criterion_gate:
        given["criterion_gates"] = list(args.criterion_gate)
    if args.targets is not None:
        given["targets"] = args.targets
    for name, text in given.items():
        flag = {"criterion_gates": "--criterion-gate"}.get(name, _flag(name))
        try:
            values[name] = _setting(name, text, flag)
        except FlagError as err:
            problems.append(str(err))
    for flag, key in (("--fold", "fold"), ("--split", "split"), ("--criterion", "criteria")):
        value = getattr(args, "criterion" if key == "criteria" else key)
        try:
            Filters(**{key: tuple(value) if key == "criteria" else value})
        except SettingsError as err:
            problems.append(f"{flag}: {err.rule.split(' ', 1)[1]}; got {err.shown}")
    if not problems:
        try:
            values["filters"] = Filters(fold=args.fold, split=args.split,
                                        criteria=tuple(args.criterion))
            return EvalConfig(**values)
        except SettingsError as err:
            problems.extend(e.render(_flag(e.field) if e.field in SCHEMA else None)
                            .replace("at most tau_pos", "at most --tau-pos") for e in err.errors)
    raise FlagError("; ".join(problems) if len(problems) == 1
                    else f"{len(problems)} options are not valid:\n"
                    + "\n".join(f"- {p}" for p in problems))


def _gates_known(config: EvalConfig, dataset, *, given_by: str = "--criterion-gate") -> bool:
    """False (after saying why on stderr) when a per-criterion gate names an unknown one."""
    from metrics_core.run import check_criterion_gates

    try:
        check_criterion_gates(config, dataset, given_by=given_by)
    except ValueError as err:
        print(f"metrics-core: invalid option: {err}", file=sys.stderr)
        return False
    return True


def write_atomically(outputs: dict[Path, bytes]) -> None:
    """Write every ``path -> bytes`` or none: temporary files beside each target, then renames.

    A failure while writing removes the temporary files and leaves the targets untouched; an
    :class:`OSError` names the path it concerns.
    """
    for path in outputs:
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory", str(path))
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in outputs.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            staged.append((tmp, path))
            os.chmod(tmp, _mode_for(path))
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as err:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        target = next((p for t, p in staged if t == err.filename), None)
        if target is None and staged:
            target = staged[-1][1]
        raise OSError(err.errno, err.strerror, str(target or err.filename)) from None


def _mode_for(path: Path) -> int:
    """The target's permissions if it exists, else what a plain ``open`` would give."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _csv_bytes(frame) -> bytes:
    from metrics_core.report.export import csv_bytes

    return csv_bytes(frame)


def _open_run(args):
    """:func:`metrics_core.run.open_run` of the inputs."""
    from metrics_core.run import open_run

    return open_run(args.queries, args.candidates, limits=_limits(args))


#: The tables of ``metrics_master.json`` built on a helper thread while the command line
#: writes the document from its start (it reaches these last).
_PREFETCHED_TABLES = ("smoothed_calibration", "per_criterion", "decision_curve", "gate_grid",
                      "gate_risk_coverage")


def _with_progress(command):
    """``command(args)`` with ``args.progress``, the progress line on stderr (off with
    ``--quiet``; :mod:`metrics_core.progress`), ended before an error is printed."""
    @functools.wraps(command)
    def run(args) -> int:
        with StderrProgress(enabled=not args.quiet) as args.progress:
            return command(args)

    return run


def _cohort_attributes(args, run, cohorts: dict) -> list:
    """The declared cohort columns of the queries file (none declared: ``[]``)."""
    if not cohorts["declared"]:
        return []
    from metrics_core.inputs.cohort_columns import cohort_attributes

    found = cohort_attributes(args.queries, run.loaded, cohorts["declared"],
                              name=args.queries.name, bins=cohorts["bins"],
                              max_values=cohorts["max_values"], limits=_limits(args))
    return list(found.values())


@_with_progress
def _evaluate(args) -> int:
    config = _config(args)
    connect_timeout = _flag_value(_TIMEOUT, args.connect_timeout, "--connect-timeout")
    if args.exclude_ambiguous and args.adjudications is None:
        raise ValueError("--exclude-ambiguous needs --adjudications")
    if args.adjudications is not None and args.engine == "dask":
        raise ValueError("--adjudications needs --engine memory (the default)")
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates),
                   ("--adjudications", args.adjudications)],
                  [("--out", args.out), ("--per-query", args.per_query),
                   ("--exclusions", args.exclusions)])
    cohorts = _cohort_options(args)
    if cohorts["declared"] and args.engine == "dask":
        raise ValueError("--cohort needs the in-memory engine (leave out --engine dask)")
    verdicts = None
    if args.engine == "dask":
        from metrics_core.engines import dask as dask_engine

        run = dask_engine.evaluate(args.queries, args.candidates, config,
                                   scheduler=args.scheduler, timeout=connect_timeout)
        evaluation, loaded, report = run.evaluation, run.loaded, run.audit
        if not _gates_known(config, loaded.dataset):
            return EXIT_INPUT
    else:
        if args.scheduler is not None:
            raise ValueError("--scheduler needs --engine dask")
        args.progress.stage("reading the inputs")
        run = _open_run(args)
        loaded, report = run.loaded, run.audit
        if not _gates_known(config, loaded.dataset):
            return EXIT_INPUT
        attributes = _cohort_attributes(args, run, cohorts)
        verdicts = _read_verdicts(args, loaded)  # (a bad file stops the run before computing)
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


def _printable(text) -> str:
    """Text safe for a terminal: bidirectional controls as ``[U+202E]`` (as the dashboard
    shows them), other control characters (escape codes) escaped."""
    from metrics_core.bidi import neutralise_bidi

    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1]
                   for c in neutralise_bidi(text))


def _print_cohorts(evaluation) -> None:
    """One line per flagged disparity, after the cohorts' count (nothing without cohorts)."""
    try:
        table = evaluation.table("cohorts")
    except KeyError:  # no cohort declared
        return
    columns = table["column"].unique().tolist()
    n = table[["column", "value"]].drop_duplicates().shape[0]
    flagged = table[table["flagged"]]
    print(f"cohorts: {n} in {len(columns)} column(s) ({_printable(', '.join(columns))}); "
          f"{len(flagged)} disparity(ies) flagged (Holm-adjusted p < 0.05, interval "
          f"excluding 0)")
    for row in flagged.itertuples(index=False):
        lo, hi = row.difference_ci95
        print(f"  {_printable(row.column)}={_printable(row.value)} {row.metric}: "
              f"{row.estimate:.4f} vs {row.rest_estimate:.4f} elsewhere, difference "
              f"{row.difference:+.4f} [{lo:+.4f}, {hi:+.4f}], p_adj={row.p_adjusted:.3g}")


def _print_summary(evaluation, loaded, report, written: list[Path], adjudicated=None) -> None:
    from metrics_core import registry

    s = evaluation.summary
    print(f"{s['n_queries']} queries ({s['n_positive']} with evidence), "
          f"{s['n_candidates']} candidates, {len(s['criteria'])} criteria")
    if evaluation.config.filters.active:
        print(f"filtered: {_printable(evaluation.config.filters.describe())}")
    if len(loaded.exclusions):
        print(f"excluded rows: {len(loaded.exclusions)} "
              f"({_printable(', '.join(sorted(set(loaded.exclusions['reason']))))})")
    for warning in loaded.warnings:
        print(f"warning: {_printable(warning)}")
    for finding in getattr(report, "findings", ()):
        if finding.level != "info":
            print(f"audit {finding.level}: {_printable(finding.message)}")
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
        print(f"wrote {_printable(path)}")


def _read_verdicts(args, loaded):
    """``--adjudications``' file read and checked against the data (None without it)."""
    if args.adjudications is None:
        return None
    from metrics_core.inputs.adjudications import read_adjudications

    return read_adjudications(args.adjudications, loaded.dataset, name=args.adjudications.name)


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


@_with_progress
def _tune(args) -> int:
    import json

    from metrics_core.metrics import decision, risk_control

    if not args.target and not args.guarantee:
        raise FlagError("tune needs --target (met on this data) or --guarantee (guaranteed "
                        "with probability 1 - delta), or both")
    targets = [decision.Target.parse(t) for t in args.target]
    guarantees = [risk_control.Guarantee.parse(t) for t in args.guarantee]
    delta = _delta(args.delta) if guarantees else None
    if not guarantees and args.calibrate_on is not None:
        raise FlagError("--calibrate-on: only with --guarantee")
    bootstrap = _setting("bootstrap", args.bootstrap)
    seed = _setting("seed", args.seed)
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates)],
                  [("--out", args.out)])
    args.progress.stage("reading the inputs")
    run = _open_run(args)
    args.progress.stage("choosing the thresholds")
    results = (decision.tune(run.dataset, targets, by=args.by, nested=args.nested,
                             bootstrap=bootstrap, seed=seed, progress=args.progress)
               if targets else [])
    try:
        found = (risk_control.guarantee(run.dataset, guarantees, delta=delta, by=args.by,
                                        calibrate_on=args.calibrate_on) if guarantees else [])
    except ValueError as err:  # name the flag a CLI user gives
        raise ValueError(str(err).replace("calibrate_on ", "--calibrate-on ", 1)) from None
    payload = {"inputs": list(run.inputs), "nested": args.nested, "bootstrap": bootstrap,
               "seed": seed, "results": [r.to_dict() for r in results]}
    if guarantees:
        payload.update(delta=delta, calibrate_on=args.calibrate_on,
                       guarantees=[g.to_dict() for g in found])
    write_atomically({args.out: json.dumps(payload, indent=2, allow_nan=False).encode()})
    args.progress.close()
    if not args.quiet:
        if results:
            _print_tune(results, held_out=args.nested is not None)
        _print_guarantees(found)
        print(f"wrote {_printable(args.out)}")
    return EXIT_OK


def _delta(text: str) -> float:
    """``--delta``: a number within (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise FlagError(f"--delta {text!r}: not a number (expected a probability within "
                        "(0, 1), e.g. 0.1)") from None
    if not 0.0 < value < 1.0:
        raise FlagError(f"--delta {text}: must be within (0, 1), e.g. 0.1")
    return value


def _print_guarantees(found) -> None:
    """One line per guarantee: the threshold and its held-out value, or why there is none."""
    for g in found:
        head = f"  guarantee {g.target:<30}{_printable(g.subset)}: "
        if g.value is None:
            print(f"{head}none ({_printable(g.reason)})")
            continue
        held = ""
        if g.held_out is not None and g.held_out["defined"]:
            lo, hi = g.held_out["ci95"]
            held = (f"; held out ({_printable(g.held_out['subset'])}) "
                    f"{g.held_out['value']:.4g} [{lo:.4g}, {hi:.4g}]")
        print(f"{head}{g.parameter} = {g.value:.6g} (risk ≤ {g.risk_bound:g} with "
              f"probability ≥ {1 - g.delta_each:.4g}; n = {g.n_calibration}){held}")
        if g.note:
            print(f"      ({_printable(g.note)})")


def _print_tune(results, *, held_out: bool) -> None:
    """One line per result: the threshold (with its interval), the value it achieves (on the
    held-out rows when nested), a mark where that misses the target; then the count missed."""
    from metrics_core.metrics import decision

    for r in results:
        where = f" -> {r.evaluated_on}" if r.evaluated_on else ""
        head = f"  {r.target:<32}{_printable(r.subset)}{where}: "
        if r.value is None:
            print(f"{head}no threshold ({_printable(r.reason)})")
            continue
        ci = "" if r.ci95 is None else f" [{r.ci95[0]:.6g}, {r.ci95[1]:.6g}]"
        achieved = "undefined" if r.achieved is None or r.achieved != r.achieved \
            else f"{r.achieved:.4g}"
        goal = decision.Target.parse(r.target)
        mark = f"  MISSES its target ({goal.op} {goal.value:g})" if r.met is False else ""
        print(f"{head}{r.parameter} = {r.value:.6g}{ci}, "
              f"{'held-out ' if held_out else ''}{r.target.split('<')[0].split('>')[0]} "
              f"{achieved}{mark}")
        if r.note:
            print(f"      ({_printable(r.note)})")
    missed = [r for r in results if r.met is False]
    if held_out:
        print(f"held-out values missing their target: {len(missed)} of "
              f"{sum(r.value is not None for r in results)}")


def _compare(args) -> int:
    import json

    from metrics_core import compare
    from metrics_core.evaluation.result import clean, frame_records

    specs = []
    for text in args.run:
        name, sep, files = text.partition("=")
        paths = [Path(p) for p in files.split(",") if p]
        if not sep or not name or len(paths) not in (1, 2):
            raise ValueError(f"--run {text!r}: expected NAME=QUERIES[,CANDIDATES]")
        specs.append((name, paths[0], paths[1] if len(paths) == 2 else None))
    config = EvalConfig(bootstrap=_setting("bootstrap", args.bootstrap),
                        bootstrap_unit=args.bootstrap_unit, seed=_setting("seed", args.seed))
    check_outputs([(f"--run {name}", p) for name, q, c in specs for p in (q, c)],
                  [("--out", args.out)])
    runs = compare.load_runs(specs, limits=_limits(args))
    if args.reference is not None and args.reference not in {r.name for r in runs}:
        raise ValueError(f"--reference {args.reference!r} is not one of the runs")
    rows = compare.compare(runs, reference=args.reference, config=config)
    payload = {"inputs": [i for run in runs for i in run.inputs],
               "config": config.to_dict(), "comparisons": clean(rows),
               "ablation": frame_records(compare.ablation_table(runs, config))}
    write_atomically({args.out: json.dumps(payload, indent=2, allow_nan=False).encode()})
    if not args.quiet:
        for r in rows:
            if r["subset"].startswith("criterion"):
                continue
            diff = "undefined" if r["difference"] is None else f"{r['difference']:+.4f}"
            p = "" if r["p_value"] is None else f"  p = {r['p_value']:.3g} ({r['test']})"
            print(f"  {_printable(r['run'])} − {_printable(r['reference'])}  "
                  f"{r['metric']:<22}{diff}{p}")
        print(f"wrote {_printable(args.out)}")
    return EXIT_OK


def load_settings(path: Path) -> EvalConfig:
    """The :class:`EvalConfig` of a settings.json (as the dashboard writes it), read with
    :func:`metrics_core.settings_file.read_settings`: the dashboard's verdict on the same file."""
    from metrics_core.config import MAX_SETTINGS_BYTES

    def too_large(size: str) -> SettingsError:
        return SettingsError(None, f"is {size}; a settings file holds at most "
                             f"{MAX_SETTINGS_BYTES:,} bytes", source=path.name)

    data = _read_at_most(path, MAX_SETTINGS_BYTES, too_large)
    return EvalConfig(**read_settings(data, source=path.name))


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


@_with_progress
def _report(args) -> int:
    out = args.out or Path(f"decision_record.{args.format}")
    if args.exclude_ambiguous and args.adjudications is None:
        raise ValueError("--exclude-ambiguous needs --adjudications")
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates),
                   ("--settings", args.settings), ("--notes", args.notes),
                   ("--adjudications", args.adjudications)], [("--out", out)])
    config = load_settings(args.settings) if args.settings else EvalConfig()
    notes = read_notes(args.notes) if args.notes else ""
    from metrics_core.report import decision_record as record

    args.progress.stage("reading the inputs")
    run = _open_run(args)
    loaded = run.loaded
    if args.settings and not _gates_known(config, loaded.dataset,
                                          given_by=f"{args.settings.name}: criterion_gates"):
        return EXIT_INPUT
    verdicts = _read_verdicts(args, loaded)
    args.progress.stage("computing the metrics")
    evaluation = run.evaluator.evaluate(config, progress=args.progress)
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
                              thresholds="Thresholds: pre-specified (" + (
                                  f"loaded from {args.settings.name}" if args.settings
                                  else "the defaults") + f"): {config.describe_gate()}, "
                              f"τ {config.threshold:g}, γ {config.gamma:g}.",
                              adjudication=adjudicated)
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
                  f"{_printable(err)}", file=sys.stderr)
        data = record.render_zip(evaluation, html_text=page, pdf=pdf,
                                 exclusions=loaded.exclusions, pdf_missing=missing,
                                 adjudication=adjudicated)
    write_atomically({out: data})
    args.progress.close()
    if not args.quiet:
        print(f"wrote {_printable(out)}")
    return EXIT_OK


def _triage(args) -> int:
    import json

    from metrics_core import triage

    overrides = {k: v for k, v in {
        "label_column": args.label_column, "prediction_column": args.prediction_column,
        "confidence_column": args.confidence_column, "trial_column": args.trial_column,
        "positive_name": args.positive, "negative_name": args.negative,
        "abstain_name": args.abstain}.items() if v is not None}
    config = triage.TriageConfig(**overrides)
    check_outputs([("FILE", args.file)], [("--out", args.out)])
    data = triage.load_triage(args.file, config=config)
    result = triage.triage_metrics(data)
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False)
    write_atomically({args.out: text.encode("utf-8")})
    if not args.quiet:
        print(f"wrote {_printable(args.out)}")
    return EXIT_OK


def _rag(args) -> int:
    import json

    from metrics_core.rag import loader, suite
    from metrics_core.rag.generation_llm_judge import OpenAICompatibleCritic
    from metrics_core.run import fingerprint

    if len(args.quantiles) > _QUANTILES.max_items or any(
            not 0 < q <= 1 for q in args.quantiles):
        raise FlagError(f"--quantiles must be in (0, 1] (at most {_QUANTILES.max_items}), got "
                        f"{args.quantiles}")
    given = [t for t in str(args.ks).split(",") if t.strip()]
    ks = tuple(_flag_value(SCHEMA["ks"], args.ks, "--ks"))
    if len(ks) != len(given):
        raise FlagError(f"--ks: must be distinct cut-offs; got {args.ks!r}")
    check_outputs([("FILE", args.file)], [("--out", args.out)])
    critic = None
    if args.critic_url is not None:
        try:
            critic = OpenAICompatibleCritic(args.critic_url, model=args.critic_model,
                                            timeout=args.critic_timeout,
                                            max_bytes=args.critic_max_bytes,
                                            max_retries=args.critic_retries)
        except ValueError as err:  # name the flags, not the constructor's arguments
            text = str(err)
            for word, flag in (("critic url", "--critic-url"),
                               ("critic timeout", "--critic-timeout"),
                               ("critic max_bytes", "--critic-max-bytes"),
                               ("critic max_retries", "--critic-retries")):
                text = text.replace(word, flag)
            raise ValueError(text) from None
    data = loader.load_rag(args.file)
    metrics = suite.default_metrics(ks=ks, quantiles=args.quantiles, critic=critic,
                                    semantic=not args.no_semantic)
    try:
        results = suite.evaluate(data.samples, data.outputs, metrics)
    except ImportError as err:  # an optional extra is missing: say which
        raise RuntimeError(str(err)) from None
    payload = {"input": {**fingerprint(args.file), "n_samples": len(data)},
               "config": {"ks": list(ks), "quantiles": list(args.quantiles),
                          "critic_url": args.critic_url, "semantic": not args.no_semantic},
               "metrics": [r.to_dict() for r in results]}
    text = json.dumps(payload, indent=2, allow_nan=False)
    write_atomically({args.out: text.encode("utf-8")})
    failed = [r for r in results if "critic_error" in r.details]
    if failed:  # the run goes on without them (contract §12): one line, even with --quiet
        print(f"metrics-core: warning: {', '.join(r.name for r in failed)} skipped: "
              f"{_printable(failed[0].details['critic_error'])}", file=sys.stderr)
    if not args.quiet:
        for r in results:
            value = f"{r.value:.4f}" if r.defined else "undefined"
            note = r.details.get("skipped_reason", "")
            if not note and "similarity" in r.details:
                note = f"answers compared by {r.details['similarity']}"
            print(_printable(f"{r.name:32s} {value:>10s}  n={r.details.get('num_samples', 0)}"
                             f"{'  ' + note if note else ''}"))
        print(f"wrote {_printable(args.out)}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, passthrough = parser.parse_known_args(argv)
    if passthrough and args.command != "app":   # only the app passes options on (Streamlit's)
        parser.error(f"unrecognized arguments: {' '.join(passthrough)}")
    args.passthrough = passthrough
    return _run(args)


def _contract(args) -> int:
    """``metrics-core contract``: the contract shipped in the package, or its path."""
    from metrics_core.shipped import CONTRACT

    if args.path:
        print(CONTRACT)
    else:
        sys.stdout.write(CONTRACT.read_text(encoding="utf-8"))
    return EXIT_OK


def _demo(args) -> int:
    """``metrics-core demo``: the demo files from their generators (:mod:`metrics_core.demo`,
    :mod:`metrics_core.rag.demo`), with the shipped README that describes them."""
    from metrics_core import demo
    from metrics_core.rag.demo import write_rag_demo
    from metrics_core.shipped import ASSETS

    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out}: is a file, not a folder")
    if args.out.resolve() == ASSETS.resolve():
        raise ValueError(f"--out {args.out}: is the package's own copy of the demo; choose "
                         "another folder")
    paths = demo.write_demo(args.out)
    rag = write_rag_demo(args.out / "demo_rag.jsonl")
    write_atomically({paths.readme: (ASSETS / "README.md").read_bytes()})
    if not args.quiet:
        for path in (paths.queries, paths.candidates, paths.problems_queries,
                     paths.problems_candidates, paths.triage, rag, paths.readme):
            print(f"wrote {_printable(path)}  ({path.stat().st_size:,} bytes)")
    return EXIT_OK


_LOOPBACK_NAMES = ("localhost",)


def app_server_options(args) -> tuple[list[str], bool]:
    """Streamlit's options for ``metrics-core app``'s flags (``--port``, ``--host``,
    ``--share``; then the Streamlit options passed on), and whether the app is shared: it
    listens beyond this machine (``--share``, or a ``--host`` that is not loopback), which
    :func:`dashboard.addresses.share_check` allows only with sign-in or ``--no-auth``.

    >>> ns = argparse.Namespace(port="9000", host=None, share=True, passthrough=[])
    >>> app_server_options(ns)
    (['--server.port', '9000', '--server.address', '0.0.0.0'], True)
    """
    import ipaddress

    port = _flag_value(_PORT, args.port, "--port")
    host = args.host or ("0.0.0.0" if args.share else "127.0.0.1")
    try:
        shared = args.share or not ipaddress.ip_address(host).is_loopback
    except ValueError:   # a host name
        shared = args.share or host not in _LOOPBACK_NAMES
    return ["--server.port", str(port), "--server.address", host, *args.passthrough], shared


#: A port of ``metrics-core app``.
_PORT = FieldSchema("port", "int", 1, 65_535)


def _app(args) -> int:
    """``metrics-core app``: the dashboard's server from the installed package, with the
    malloc settings from its start (:func:`metrics_core.allocator.glibc_tunables`); its
    settings are the package's (``dashboard/.streamlit``, read by Streamlit beside the
    server's script)."""
    from importlib.util import find_spec

    from metrics_core.allocator import glibc_tunables

    for package in ("streamlit", "plotly", "dashboard"):
        if find_spec(package) is None:
            raise ModuleNotFoundError(name=package)
    server = Path(find_spec("dashboard").origin).parent / "server.py"
    if not server.exists():   # another package called dashboard
        raise ModuleNotFoundError(name="dashboard")
    options, shared = app_server_options(args)
    if args.no_auth and not shared:
        raise FlagError("--no-auth: only with --share (or a --host other than loopback)")
    if shared:
        # Sign-in configured or --no-auth, else refused (dashboard/addresses.py: the rule and
        # this machine's addresses; nothing is sent over the network).
        check = subprocess.run([sys.executable, "-m", "dashboard.addresses", "--command",
                                args.invoked_as or "metrics-core app",
                                *(["--no-auth"] if args.no_auth else []),
                                *options], stdout=2, check=False)
        if check.returncode != 0:
            return EXIT_INPUT
    env = {**os.environ, "GLIBC_TUNABLES": glibc_tunables(os.environ.get("GLIBC_TUNABLES"))}
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.execve(sys.executable, [sys.executable, "-m", "streamlit", "run", str(server),
                               *options], env)
    return EXIT_OK   # (not reached: the server replaces this process)


#: The packages of the app extra: the dashboard (streamlit) and the figures (plotly).
APP_PACKAGES = ("streamlit", "plotly")


def needs_app_extra(package: str) -> str:
    """What to say when the app extra's ``package`` is not installed."""
    return (f"needs the app extra (package {package.split('.')[0]!r}), which this installation "
            "lacks: install metrics-core[app] (from the project's folder: "
            'python -m pip install -e ".[app]"; ./dev cli installs it)')


def _run(args) -> int:
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        if args.command == "tune":
            return _tune(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "report":
            return _report(args)
        if args.command == "rag":
            return _rag(args)
        if args.command == "app":
            return _app(args)
        if args.command == "demo":
            return _demo(args)
        if args.command == "contract":
            return _contract(args)
        return _triage(args)
    except InputError as err:
        text = err.render()
        for name, flag, _ in _LIMIT_FLAGS:  # name the option a CLI user can change
            text = text.replace(f"Limits.{name}", flag)
        print(f"metrics-core: {_printable(text)}", file=sys.stderr)
        return EXIT_INPUT
    except FlagError as err:
        print(f"metrics-core: invalid option: {_printable(err)}", file=sys.stderr)
        return EXIT_INPUT
    except IsADirectoryError as err:
        print(f"metrics-core: {_printable(err.filename)} is a directory, not a file",
              file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:
        print(f"metrics-core: cannot read or write {_printable(err.filename)}: "
              f"{err.strerror}", file=sys.stderr)
        return EXIT_INPUT
    except ValueError as err:
        print(f"metrics-core: {_printable(err)}", file=sys.stderr)
        return EXIT_INPUT
    except RuntimeError as err:  # e.g. no browser to print a PDF with
        print(f"metrics-core: {_printable(err)}", file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
