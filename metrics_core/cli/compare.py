"""``metrics-core compare``: runs on the same queries compared against a reference run (paired
tests, ablation table)."""

from __future__ import annotations

from pathlib import Path

from metrics_core.cli.flags import input_limits, setting
from metrics_core.cli.output import EXIT_OK, check_outputs, printable, write_atomically
from metrics_core.config import EvalConfig


def compare_command(args) -> int:
    """``metrics-core compare``: the comparisons written to ``--out``; the exit status."""
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
    config = EvalConfig(bootstrap=setting("bootstrap", args.bootstrap),
                        bootstrap_unit=args.bootstrap_unit, seed=setting("seed", args.seed))
    check_outputs([(f"--run {name}", p) for name, q, c in specs for p in (q, c)],
                  [("--out", args.out)])
    runs = compare.load_runs(specs, limits=input_limits(args))
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
            print(f"  {printable(r['run'])} − {printable(r['reference'])}  "
                  f"{r['metric']:<22}{diff}{p}")
        print(f"wrote {printable(args.out)}")
    return EXIT_OK
