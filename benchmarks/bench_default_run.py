"""The README's own example with its default 10,000 resamples, against the same run without them.

Run: ``python benchmarks/bench_default_run.py [--repeats 5] [--live-moves 15]
[--source DIR]`` (writes ``benchmarks/results/default_run.{json,md}``; then
``benchmarks/speed_targets.py`` puts the figure into the README's speed table).

1. **The default run.** ``metrics-core evaluate assets/demo_queries.parquet
   assets/demo_candidates.parquet --out …`` (14,770 queries, every interval the JSON carries,
   10,000 resamples) and the same command with ``--bootstrap 0``, each a fresh process from
   start to exit, alternating (A, B, A, B, ...) so that both sides see the same machine load;
   the medians and their ratio (target: ≤ 5x). ``--quiet``: the printed summary is left out
   on both sides (its cost is the same).
2. **The live app's intervals.** In one process (the demo loaded, an evaluator warm with the
   first view's 2,000-resample evaluation, as the dashboard's live pass is), one setting change
   after another (τ_neg and τ_pos moves, a γ move): the time of ``Evaluator.evaluate`` with
   the 2,000 resamples minus the same move without resamples (a fresh evaluator each, warm
   the same way): the intervals' share of a move. Also the first 2,000-resample evaluation
   of a fresh evaluator (the first view with intervals), intervals' share likewise.

``--source DIR`` runs both parts against another checkout of the package (e.g. an older
commit exported with ``git archive``), for a before/after figure on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEMO = (ROOT / "assets" / "demo_queries.parquet", ROOT / "assets" / "demo_candidates.parquet")

LIVE = r'''
import json, statistics, sys, time
from metrics_core.inputs import loading
from metrics_core.config import EvalConfig
from metrics_core.evaluation.evaluator import Evaluator

queries, candidates, moves_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ds = loading.load(queries, candidates).dataset
LIVE = 2000
base = EvalConfig(bootstrap=LIVE)
moves = []
for i in range(moves_n):
    kind = i % 3
    if kind == 0:
        moves.append(dict(tau_neg=round(0.1 - 0.002 * (i + 1), 4)))
    elif kind == 1:
        moves.append(dict(tau_pos=round(0.6 + 0.003 * (i + 1), 4)))
    else:
        moves.append(dict(gamma=round(0.9 - 0.004 * (i + 1), 4)))


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def warm(bootstrap):
    ev = Evaluator(ds)
    first = timed(lambda: ev.evaluate(base.replace(bootstrap=bootstrap)).to_dict())
    return ev, first


with_ci, first_ci = warm(LIVE)
without, first_plain = warm(0)
rows = []
cfg = base
for move in moves:
    cfg = cfg.replace(**move)
    a = timed(lambda: with_ci.evaluate(cfg).records)
    b = timed(lambda: without.evaluate(cfg.replace(bootstrap=0)).records)
    rows.append((a, b))
print(json.dumps({"first_with": first_ci, "first_without": first_plain,
                  "moves_with": [a for a, _ in rows], "moves_without": [b for _, b in rows]}))
'''


def _env(source: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(source) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_cli(source: Path, out: Path, bootstrap: int | None) -> float:
    cmd = [sys.executable, "-m", "metrics_core", "evaluate", str(DEMO[0]), str(DEMO[1]),
           "--out", str(out), "--quiet"]
    if bootstrap is not None:
        cmd += ["--bootstrap", str(bootstrap)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=source, env=_env(source), capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return elapsed


def default_run(source: Path, repeats: int) -> dict:
    default, plain = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics_master.json"
        for i in range(repeats):
            default.append(run_cli(source, out, None))
            plain.append(run_cli(source, out, 0))
            print(f"  run {i + 1}/{repeats}: default {default[-1]:.2f} s, "
                  f"--bootstrap 0 {plain[-1]:.2f} s", flush=True)
    d, p = statistics.median(default), statistics.median(plain)
    return {"default_s": default, "bootstrap0_s": plain, "default_median_s": d,
            "bootstrap0_median_s": p, "ratio": d / p}


def live(source: Path, moves: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", LIVE, str(DEMO[0]), str(DEMO[1]), str(moves)],
                          cwd=source, env=_env(source), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"live-app measurement failed:\n{proc.stderr}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    share = [a - b for a, b in zip(res["moves_with"], res["moves_without"], strict=True)]
    res.update(move_with_median_s=statistics.median(res["moves_with"]),
               move_without_median_s=statistics.median(res["moves_without"]),
               intervals_per_move_median_s=statistics.median(share),
               first_intervals_s=res["first_with"] - res["first_without"])
    return res


def markdown(res: dict) -> str:
    d, lv = res.get("default_run"), res.get("live")
    lines = ["# The default run", "",
             f"{res['date']}, {res['machine']}, source `{res['source']}`.", "",
             "| measurement | median | runs |", "|---|---:|---|"]
    if d is not None:
        lines += [f"| `metrics-core evaluate` demo, default (10,000 resamples) | "
                  f"{d['default_median_s']:.2f} s | "
                  f"{', '.join(f'{x:.2f}' for x in d['default_s'])} |",
                  f"| same, `--bootstrap 0` | {d['bootstrap0_median_s']:.2f} s | "
                  f"{', '.join(f'{x:.2f}' for x in d['bootstrap0_s'])} |",
                  f"| ratio | {d['ratio']:.2f}x (target ≤ 5x) | |"]
    if lv is not None:
        lines += [f"| live app: a setting move, 2,000 resamples | "
                  f"{lv['move_with_median_s'] * 1000:.0f} ms | "
                  f"without resamples {lv['move_without_median_s'] * 1000:.0f} ms; the "
                  f"intervals' share {lv['intervals_per_move_median_s'] * 1000:.0f} ms |",
                  f"| live app: first view with 2,000 resamples | {lv['first_with']:.2f} s | "
                  f"without {lv['first_without']:.2f} s; the intervals' share "
                  f"{lv['first_intervals_s']:.2f} s |"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5,
                        help="alternating pairs of the default run (0: skip that part)")
    parser.add_argument("--live-moves", type=int, default=15,
                        help="setting moves timed in the live-app part (0: skip it)")
    parser.add_argument("--source", type=Path, default=ROOT,
                        help="checkout whose metrics_core is measured (default: this one)")
    parser.add_argument("--out", type=Path, default=RESULTS / "default_run.json")
    args = parser.parse_args(argv)
    source = args.source.resolve()
    res = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "source": str(source)}
    if args.repeats:
        print(f"default run, {args.repeats} alternating pairs of fresh processes ({source})")
        res["default_run"] = default_run(source, args.repeats)
    if args.live_moves:
        print(f"live app: {args.live_moves} setting moves at 2,000 resamples")
        res["live"] = live(source, args.live_moves)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2), encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(res), encoding="utf-8")
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
