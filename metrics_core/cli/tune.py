"""``metrics-core tune``: the thresholds that meet targets on the data (``--target``) or are
guaranteed for new queries (``--guarantee``), overall or per criterion."""

from __future__ import annotations

from metrics_core.cli.flags import FlagError, setting
from metrics_core.cli.opening import open_inputs
from metrics_core.cli.output import (
    EXIT_OK,
    check_outputs,
    printable,
    with_progress,
    write_atomically,
)


@with_progress
def tune_command(args) -> int:
    """``metrics-core tune``: the thresholds written to ``--out``, then listed; the exit
    status."""
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
    bootstrap = setting("bootstrap", args.bootstrap)
    seed = setting("seed", args.seed)
    check_outputs([("QUERIES", args.queries), ("CANDIDATES", args.candidates)],
                  [("--out", args.out)])
    args.progress.stage("reading the inputs")
    run = open_inputs(args)
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
                       multiplicity=risk_control.multiplicity(found),
                       guarantees=[g.to_dict() for g in found])
    write_atomically({args.out: json.dumps(payload, indent=2, allow_nan=False).encode()})
    args.progress.close()
    if not args.quiet:
        if results:
            _print_tune(results, held_out=args.nested is not None)
        _print_guarantees(found)
        print(f"wrote {printable(args.out)}")
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
    """One line per guarantee: the threshold and its held-out value, or why there is none;
    then how δ was shared among them."""
    from metrics_core.metrics import risk_control

    for g in found:
        head = f"  guarantee {g.target:<30}{printable(g.subset)}: "
        if g.value is None:
            print(f"{head}none ({printable(g.reason)})")
            continue
        held = ""
        if g.held_out is not None and g.held_out["defined"]:
            lo, hi = g.held_out["ci95"]
            held = (f"; held out ({printable(g.held_out['subset'])}) "
                    f"{g.held_out['value']:.4g} [{lo:.4g}, {hi:.4g}]")
        print(f"{head}{g.parameter} = {g.value:.6g} (risk ≤ {g.risk_bound:g} with "
              f"probability ≥ {1 - g.delta_each:.4g}; n = {g.n_calibration}){held}")
        if g.note:
            print(f"      ({printable(g.note)})")
    if found:
        print(f"  {printable(risk_control.multiplicity(found)['statement'])}")


def _print_tune(results, *, held_out: bool) -> None:
    """One line per result: the threshold (with its interval), the value it achieves (on the
    held-out rows when nested), a mark where that misses the target; then the count missed."""
    from metrics_core.metrics import decision

    for r in results:
        where = f" -> {r.evaluated_on}" if r.evaluated_on else ""
        head = f"  {r.target:<32}{printable(r.subset)}{where}: "
        if r.value is None:
            print(f"{head}no threshold ({printable(r.reason)})")
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
            print(f"      ({printable(r.note)})")
    missed = [r for r in results if r.met is False]
    if held_out:
        print(f"held-out values missing their target: {len(missed)} of "
              f"{sum(r.value is not None for r in results)}")
