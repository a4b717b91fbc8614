"""Validity of the guaranteed thresholds by simulation (contract §6, "Thresholds with a
guarantee"; tests/test_risk_control.py runs a bounded version).

Scores from a known distribution: prevalence π, positives' scores Beta(a₁, b₁), negatives'
Beta(a₀, b₀), so at any τ the true sensitivity is 1 − F₁(τ) and the true alert precision
π S₁(τ) / (π S₁(τ) + (1 − π) S₀(τ)). For each setting, ``--draws`` calibration sets are drawn,
the guaranteed threshold is computed on each, and the share of draws whose threshold has a
true risk above the target is reported with its Monte Carlo standard error: Learn-then-Test
promises it is at most δ. The thresholds' mean against the oracle (the threshold with the
true metric exactly at the target; for τ_pos the smallest grid point that meets it) shows
they are not trivially safe.

Writes ``results/guarantee.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from metrics_core.metrics import risk_control as rc

RESULTS = Path(__file__).resolve().parent / "results"
#: Criteria of the per-criterion setting: (prevalence, positives' Beta, negatives' Beta).
MODELS = {"A": (0.3, (4.0, 2.0), (2.0, 4.0)), "B": (0.15, (5.0, 2.0), (2.0, 5.0)),
          "C": (0.45, (3.0, 2.0), (2.0, 3.0))}


def true_metric(g: rc.Guarantee, tau: float, model) -> float:
    pi, pos, neg = model
    if g.metric == "screening_sensitivity":
        return float(beta.sf(tau, *pos))
    s1, s0 = beta.sf(tau, *pos), beta.sf(tau, *neg)
    return float(pi * s1 / (pi * s1 + (1.0 - pi) * s0))


def oracle(g: rc.Guarantee, model) -> float:
    if g.metric == "screening_sensitivity":
        return float(beta.ppf(g.alpha, *model[1]))
    grid = rc.PRECISION_GRID
    ok = np.array([true_metric(g, t, model) >= g.value for t in grid])
    return float(grid[np.argmax(ok)])


def draw(rng, n, model):
    pi, pos, neg = model
    y = (rng.random(n) < pi).astype(np.float64)
    return y, np.where(y == 1, rng.beta(*pos, size=n), rng.beta(*neg, size=n))


def run(name, targets, criteria, n, draws, delta, seed) -> dict:
    """One setting: every target on every criterion, δ split over all of them."""
    rng = np.random.default_rng(seed)
    gs = [rc.Guarantee.parse(t) for t in targets]
    each = delta / (len(gs) * len(criteria))
    taus = {(c, str(g)): [] for c in criteria for g in gs}
    failed = 0
    start = time.perf_counter()
    for _ in range(draws):
        bad = False
        for c in criteria:
            y, p = draw(rng, n, MODELS[c])
            found = {str(g): rc.guaranteed_threshold(y, p, g, delta=each).value for g in gs}
            pos = [found[str(g)] for g in gs if g.parameter == "tau_pos"]
            for g in gs:
                tau = found[str(g)]
                if tau is not None and g.parameter == "tau_neg" and pos and pos[0] is not None:
                    tau = min(tau, pos[0])  # the gate: τ_neg ≤ τ_pos
                taus[(c, str(g))].append(math.nan if tau is None else tau)
                if tau is not None:
                    bad |= true_metric(g, tau, MODELS[c]) < g.value - 1e-12
        failed += bad
    share = failed / draws
    rows = []
    for (c, t), values in taus.items():
        g = rc.Guarantee.parse(t)
        v = np.array(values)
        ok = v[~np.isnan(v)]
        rows.append({"criterion": c, "target": t, "oracle": oracle(g, MODELS[c]),
                     "mean_threshold": float(ok.mean()) if ok.size else None,
                     "none_share": float(np.isnan(v).mean()),
                     "mean_true_metric": (float(np.mean([true_metric(g, x, MODELS[c])
                                                         for x in ok])) if ok.size else None)})
    return {"setting": name, "targets": list(targets), "criteria": list(criteria), "n": n,
            "draws": draws, "delta": delta, "failure_share": share,
            "mc_se": math.sqrt(delta * (1 - delta) / draws),
            "seconds": round(time.perf_counter() - start, 1), "rows": rows}


def table(results) -> str:
    lines = ["| setting | n per criterion | draws | δ | share of draws failing | ± MC s.e. | "
             "criterion | target | mean τ̂ | oracle τ | mean true metric at τ̂ | no τ̂ |",
             "|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for r in results:
        for i, row in enumerate(r["rows"]):
            head = (f"| {r['setting']} | {r['n']:,} | {r['draws']:,} | {r['delta']:g} | "
                    f"{r['failure_share']:.3f} | {r['mc_se']:.3f} |" if i == 0
                    else "| | | | | | |")
            mean = "–" if row["mean_threshold"] is None else f"{row['mean_threshold']:.4f}"
            true = "–" if row["mean_true_metric"] is None else f"{row['mean_true_metric']:.4f}"
            lines.append(f"{head} {row['criterion']} | `{row['target']}` | {mean} | "
                         f"{row['oracle']:.4f} | {true} | {row['none_share']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sens, prec = "screening_sensitivity>=0.9", "alert_precision>=0.75"
    settings = [(f"sensitivity, n={n}", [sens], "A", n) for n in (500, 2000, 10_000)]
    settings += [(f"precision, n={n}", [prec], "A", n) for n in (500, 2000, 10_000)]
    settings += [("gate (both), n=2000", [sens, prec], "A", 2000),
                 ("per criterion (both, 3 criteria)", [sens, prec], "ABC", 2000)]
    results = [run(name, t, c, n, args.draws, args.delta, args.seed + i)
               for i, (name, t, c, n) in enumerate(settings)]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "guarantee.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "guarantee.md").write_text(table(results))
    print(table(results))
    limit = [r for r in results if r["failure_share"] > r["delta"] + 3 * r["mc_se"]]
    for r in limit:
        print(f"INVALID: {r['setting']}: {r['failure_share']:.3f} > δ + 3 s.e.")
    return 1 if limit else 0


if __name__ == "__main__":
    raise SystemExit(main())
