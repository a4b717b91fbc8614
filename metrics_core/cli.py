"""Command line: ``metrics-core evaluate`` / ``triage`` (also ``python -m metrics_core``).

Bad input exits with status 2 and a message naming file, column, rule and rows; never a
traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from metrics_core.config import VARIANT_LABELS, VARIANTS, EvalConfig
from metrics_core.errors import InputError

__all__ = ["main"]

EXIT_OK = 0
EXIT_INPUT = 2


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}") from None


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _parser() -> argparse.ArgumentParser:
    d = EvalConfig()
    parser = argparse.ArgumentParser(
        prog="metrics-core",
        description="Evidence-retrieval and no-evidence-detection metrics (see CONTRACT.md).")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="all metrics of a queries (+ candidates) file",
                        description="Compute every metric of the contract and write "
                                    "metrics_master.json.")
    ev.add_argument("queries", type=Path, help="queries table, or one long table")
    ev.add_argument("candidates", type=Path, nargs="?", help="candidates table")
    ev.add_argument("--out", type=Path, default=Path("metrics_master.json"))
    ev.add_argument("--tau-neg", type=float, default=d.tau_neg)
    ev.add_argument("--tau-pos", type=float, default=d.tau_pos)
    ev.add_argument("--threshold", type=float, default=d.threshold,
                    help="τ for the confusion metrics (positive iff p ≥ τ)")
    ev.add_argument("--gamma", type=float, default=d.gamma)
    ev.add_argument("--gamma-uncertain", type=float, default=d.gamma_uncertain)
    ev.add_argument("--k-min", type=int, default=d.k_min)
    ev.add_argument("--hard-cap", type=int, default=d.hard_cap)
    ev.add_argument("--k-max-ratio", type=float, default=d.k_max_ratio)
    ev.add_argument("--gate-aware", type=_bool, default=d.gate_aware)
    ev.add_argument("--temperature", type=float, default=d.temperature)
    ev.add_argument("--ks", type=_ints, default=d.ks, help="cut-offs, e.g. 1,3,5,10,20")
    ev.add_argument("--tpr-fprs", type=_floats, default=d.tpr_fprs)
    ev.add_argument("--n-bins", type=int, default=d.n_bins)
    ev.add_argument("--bootstrap", type=int, default=d.bootstrap,
                    help="resamples for percentile CIs (0 turns them off)")
    ev.add_argument("--seed", type=int, default=d.seed)
    for name, allowed in VARIANTS.items():
        labels = "; ".join(f"{v}: {VARIANT_LABELS[name][v]}" for v in allowed)
        ev.add_argument(f"--{name.replace('_', '-')}", choices=allowed,
                        default=getattr(d, name), help=labels)
    ev.add_argument("--exclusions", type=Path, help="write excluded rows (CSV) here")
    ev.add_argument("--quiet", action="store_true", help="print nothing but errors")

    tr = sub.add_parser("triage", help="seed 004 metrics of a triage file")
    tr.add_argument("file", type=Path)
    tr.add_argument("--out", type=Path, default=Path("triage.json"))
    tr.add_argument("--label-column", default=None)
    tr.add_argument("--prediction-column", default=None)
    tr.add_argument("--confidence-column", default=None)
    tr.add_argument("--trial-column", default=None)
    tr.add_argument("--positive", default=None, help="name of the positive class, e.g. fake")
    tr.add_argument("--negative", default=None, help="name of the negative class, e.g. real")
    tr.add_argument("--abstain", default=None, help="name of the abstention, e.g. uncertain")
    tr.add_argument("--quiet", action="store_true")
    return parser


def _evaluate(args) -> int:
    from metrics_core import io
    from metrics_core.audit import audit
    from metrics_core.report import Evaluator

    fields = {f: getattr(args, f) for f in (
        "tau_neg", "tau_pos", "threshold", "gamma", "gamma_uncertain", "k_min", "hard_cap",
        "k_max_ratio", "gate_aware", "temperature", "ks", "tpr_fprs", "n_bins", "bootstrap",
        "seed", *VARIANTS)}
    try:
        config = EvalConfig(**fields)
    except ValueError as err:
        print(f"metrics-core: invalid option: {err}", file=sys.stderr)
        return EXIT_INPUT
    loaded = io.load(args.queries, args.candidates)
    report = audit(loaded.dataset, loaded=loaded)
    evaluation = Evaluator(loaded.dataset, audit=report).evaluate(config)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(evaluation.to_json(), encoding="utf-8")
    if args.exclusions is not None:
        loaded.exclusions.to_csv(args.exclusions, index=False)
    if not args.quiet:
        _print_summary(evaluation, loaded, report, args.out)
    return EXIT_OK


def _print_summary(evaluation, loaded, report, out: Path) -> None:
    s = evaluation.summary
    print(f"{s['n_queries']} queries ({s['n_positive']} with evidence), "
          f"{s['n_candidates']} candidates, {len(s['criteria'])} criteria")
    if len(loaded.exclusions):
        print(f"excluded rows: {len(loaded.exclusions)} "
              f"({', '.join(sorted(set(loaded.exclusions['reason'])))})")
    for warning in loaded.warnings:
        print(f"warning: {warning}")
    for finding in getattr(report, "findings", ()):
        if finding.level != "info":
            print(f"audit {finding.level}: {finding.message}")
    headline = ("auroc", "auprc", "ece", "screening_sensitivity", "alert_precision",
                "recall@10", "ndcg@10", "mrr", "evidence_recall", "mean_k")
    for name in headline:
        try:
            r = evaluation.record(name)
        except KeyError:
            continue
        value = "undefined" if not r.defined else f"{r.value:.4f}"
        ci = "" if r.ci95 is None else f"  [{r.ci95[0]:.4f}, {r.ci95[1]:.4f}]"
        print(f"  {name:<24}{value}{ci}  ({r.subset}, n={r.n})")
    failed = [c.name for c in evaluation.checks if c.passed is False]
    print("consistency checks: " + ("all passed" if not failed
                                    else f"FAILED: {', '.join(failed)}"))
    print(f"wrote {out}")


def _triage(args) -> int:
    import json

    from metrics_core import triage

    overrides = {k: v for k, v in {
        "label_column": args.label_column, "prediction_column": args.prediction_column,
        "confidence_column": args.confidence_column, "trial_column": args.trial_column,
        "positive_name": args.positive, "negative_name": args.negative,
        "abstain_name": args.abstain}.items() if v is not None}
    config = triage.TriageConfig(**overrides)
    data = triage.load_triage(args.file, config=config)
    result = triage.triage_metrics(data)
    payload = result.to_dict()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, allow_nan=False), encoding="utf-8")
    if not args.quiet:
        print(f"wrote {args.out}")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "evaluate":
            return _evaluate(args)
        return _triage(args)
    except InputError as err:
        print(f"metrics-core: {err.render()}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as err:
        print(f"metrics-core: cannot read or write {err.filename}: {err.strerror}",
              file=sys.stderr)
        return EXIT_INPUT
    except ValueError as err:
        print(f"metrics-core: {err}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
