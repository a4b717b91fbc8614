"""``metrics-core triage``: the metrics of a triage classifier with abstention."""

from __future__ import annotations

from metrics_core.cli.output import EXIT_OK, check_outputs, printable, write_atomically


def triage_command(args) -> int:
    """``metrics-core triage``: the metrics written to ``--out``; the exit status."""
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
        print(f"wrote {printable(args.out)}")
    return EXIT_OK
