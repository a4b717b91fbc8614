"""``metrics-core compare``: runs on the same queries compared against a reference run (paired
tests, ablation table)."""

from __future__ import annotations

from pathlib import Path

from metrics_core.cli.flags import input_limits, setting
from metrics_core.cli.opening import gates_known, load_settings_marks, thresholds_text
from metrics_core.cli.output import (
    EXIT_INPUT,
    EXIT_OK,
    check_outputs,
    printable,
    write_atomically,
)
from metrics_core.config import EvalConfig


def compare_command(args) -> int:
    """``metrics-core compare``: the comparisons written to ``--out``; the exit status."""
    import json

    from metrics_core import compare

    specs = []
    for text in args.run:
        name, sep, files = text.partition("=")
        paths = [Path(p) for p in files.split(",") if p]
        if not sep or not name or len(paths) not in (1, 2):
            raise ValueError(f"--run {text!r}: expected NAME=QUERIES[,CANDIDATES]")
        specs.append((name, paths[0], paths[1] if len(paths) == 2 else None))
    settings = getattr(args, "settings", None)
    check_outputs([(f"--run {name}", p) for name, q, c in specs for p in (q, c)]
                  + [("--settings", settings)], [("--out", args.out)])
    if settings is not None:  # the dashboard's thresholds, options and how each was chosen
        loaded, marks, guarantees, _, _ = load_settings_marks(settings)
    else:
        loaded, marks, guarantees = EvalConfig(), {}, {}
    config = loaded.replace(
        bootstrap=setting("bootstrap", args.bootstrap),
        bootstrap_unit=args.bootstrap_unit or loaded.bootstrap_unit,
        seed=loaded.seed if args.seed is None else setting("seed", args.seed))
    runs = compare.load_runs(specs, limits=input_limits(args))
    if settings is not None and not gates_known(  # the runs have the same criteria
            config, runs[0].dataset, given_by=f"{settings.name}: criterion_gates"):
        return EXIT_INPUT
    if args.reference is not None and args.reference not in {r.name for r in runs}:
        raise ValueError(f"--reference {args.reference!r} is not one of the runs")
    rows = compare.compare(runs, reference=args.reference, config=config)
    payload = compare.comparison_document(runs, rows, compare.ablation_table(runs, config),
                                          config, marks=marks, guarantees=guarantees)
    write_atomically({args.out: json.dumps(payload, indent=2, allow_nan=False).encode()})
    if not args.quiet:
        for r in rows:
            if r["subset"].startswith("criterion"):
                continue
            diff = "undefined" if r["difference"] is None else f"{r['difference']:+.4f}"
            ci = "" if r["ci95"] is None else f" [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}]"
            p = "" if r["p_value"] is None else f"  p = {r['p_value']:.3g} ({r['test']})"
            print(f"  {printable(r['run'])} − {printable(r['reference'])}  "
                  f"{r['metric']:<22}{diff}{ci}  n = {r['n']:,}{p}")
        print(printable(thresholds_text(config, marks, guarantees, settings)))
        print(f"wrote {printable(args.out)}")
    return EXIT_OK
