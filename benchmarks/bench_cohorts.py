"""Speed of the cohort tables on the demo (a script, not a timed test).

The issue's target: per-cohort metrics with intervals for 3 cohort columns x about 5 values on
the demo in at most 2 s, one bootstrap shared by every cohort. Measured here: the
demo's ``site`` (5 values), ``sex`` (2) and ``age_band`` (5) columns (or, on a demo without
them, the same columns drawn per post), the run's default 10,000 resamples and the app's live
2,000; the post count matrix drawn beforehand (a run draws it for the multi-label metrics
anyway) and, separately, its draw; with and without the weak-segment search (the pairs of
columns too). Each figure is the best of ``--repeat`` runs, wall clock and process CPU time
(the CPU time is the fairer figure on a shared machine). The process has the settings of the
command line's (``metrics_core.launcher.process_settings``: OpenBLAS's spin, glibc malloc's),
which ``metrics-core evaluate --cohort`` runs with.

Usage::

    python benchmarks/bench_cohorts.py [--repeat 3] [--out benchmarks/results/cohorts.json]
"""

# ruff: noqa: E402 (the process settings come before numpy is imported)
from __future__ import annotations

from metrics_core.launcher import process_settings

process_settings()  # before numpy loads, as in the command line's process

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from metrics_core.config import EvalConfig
from metrics_core.evaluation.cohorts import cohort_tables
from metrics_core.evaluation.intervals import post_counts
from metrics_core.inputs.cohort_columns import cohort_attributes
from metrics_core.run import open_run
from metrics_core.shipped import ASSETS

COLUMNS = ("site", "sex", "age_band")


def _demo_with_cohorts() -> pd.DataFrame:
    queries = pd.read_parquet(Path(ASSETS) / "demo_queries.parquet")
    if set(COLUMNS) <= set(queries.columns):
        return queries
    rng = np.random.default_rng(27)
    posts = queries["post_id"].unique()
    draws = {"site": rng.choice([f"site_{i}" for i in "ABCDE"], posts.size),
             "sex": rng.choice(["F", "M"], posts.size),
             "age_band": rng.choice(["18-34", "35-49", "50-64", "65-79", "80+"], posts.size)}
    for name, values in draws.items():
        queries[name] = queries["post_id"].map(dict(zip(posts, values, strict=True)))
    return queries


def _best(fn, repeat: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    queries = _demo_with_cohorts()
    run = open_run(queries, Path(ASSETS) / "demo_candidates.parquet")
    attributes = list(cohort_attributes(queries, run.loaded, list(COLUMNS)).values())
    shape = {a.name: len(a.values) for a in attributes}
    ev = run.evaluator
    results = []
    for resamples in (10_000, 2_000):
        cfg = EvalConfig(bootstrap=resamples)
        inter = ev.intermediate(cfg)
        counts = post_counts(ev, cfg)
        draw = time.perf_counter()
        counts.array()
        drawn = time.perf_counter() - draw
        for weak in (False, True):
            wall, cpu = _best(lambda cfg=cfg, inter=inter, counts=counts, weak=weak:
                              cohort_tables(ev, inter, attributes, counts=counts, weak=weak),
                              args.repeat)
            results.append({"resamples": resamples, "weak_segments": weak,
                            "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                            "count_matrix_draw_s": round(drawn, 3)})
            print(f"{resamples:>6} resamples, weak segments {'on ' if weak else 'off'}: "
                  f"{wall:.2f} s wall, {cpu:.2f} s CPU (count matrix drawn in {drawn:.2f} s)")
    document = {"benchmark": "cohorts", "columns": shape, "queries": ev.ds.n_queries,
                "posts": int(ev.ds.posts.size), "target_s": 2.0, "results": results,
                "machine": {"python": platform.python_version(),
                            "processor": platform.machine()}}
    if args.out is not None:
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
