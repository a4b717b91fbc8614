"""Run every benchmark of the project in one go (``./dev bench`` calls this).

1. ``bench_metrics.py``: metrics_core against scikit-learn, pytrec_eval, ranx, scipy and the
   seeds' naive loops (writes ``benchmarks/results/metrics.{json,md}`` and the table of
   ``benchmarks/README.md``).
2. ``bench_cli.py``: the whole ``metrics-core`` process (start, loading, the whole evaluate
   against scikit-learn + pytrec_eval, 1M queries and peak memory; ``--quick`` skips the 1M
   part);
3. ``bench_default_run.py``: the README's example with its default 10,000 resamples against
   the same run with ``--bootstrap 0`` (and the live app's intervals per setting move);
4. ``bench_app_latency.py``: the dashboard's slider-to-chart latency in headless Chromium
   (``--quick`` is passed on when given here);
5. ``speed_targets.py``: one table of every speed target beside its measurement and ratio
   (``benchmarks/results/speed_targets.md`` and the README).

Usage::

    python benchmarks/run_all.py            # both sizes (14,770 and 1,000,000 queries)
    python benchmarks/run_all.py --quick    # 14,770 queries only, a fast check

Options this script does not know are passed to ``bench_metrics.py`` (e.g. ``--repeats 7``).
The exit status is non-zero if any benchmark failed (including a result disagreement).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmark of the project.")
    parser.add_argument("--quick", action="store_true", help="small size only (fast check)")
    parser.add_argument("--only", choices=("metrics", "cli", "default", "app"),
                        help="run only the kernels, the whole-process, the default-run or "
                             "the dashboard latency benchmark")
    args, rest = parser.parse_known_args(argv)
    quick = ["--quick"] if args.quick else []
    failed = []

    if args.only in (None, "metrics"):
        cmd = [sys.executable, str(HERE / "bench_metrics.py"), *quick, *rest]
        if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
            failed.append("bench_metrics.py")

    if args.only in (None, "cli"):
        cmd = [sys.executable, str(HERE / "bench_cli.py"),
               *(["--skip-large"] if args.quick else [])]
        if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
            failed.append("bench_cli.py")

    if args.only in (None, "default"):
        cmd = [sys.executable, str(HERE / "bench_default_run.py"),
               *(["--repeats", "3"] if args.quick else [])]
        if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
            failed.append("bench_default_run.py")

    if args.only in (None, "app"):
        cmd = [sys.executable, str(HERE / "bench_app_latency.py"), *quick]
        if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
            failed.append("bench_app_latency.py")

    cmd = [sys.executable, str(HERE / "speed_targets.py")]
    if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
        failed.append("speed_targets.py")

    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
