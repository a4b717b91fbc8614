"""Run every benchmark of the project in one go (``./dev bench`` calls this).

1. ``bench_metrics.py``: metrics_core against scikit-learn, pytrec_eval, ranx, scipy and the
   seeds' naive loops (writes ``benchmarks/results/metrics.{json,md}`` and the table of
   ``benchmarks/README.md``).
2. ``bench_app_latency.py``, if present: the dashboard latency benchmark, run with its own CLI
   (``--quick`` is passed on when given here).

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
    parser.add_argument("--only", choices=("metrics", "app"),
                        help="run only the metrics or only the dashboard latency benchmark")
    args, rest = parser.parse_known_args(argv)
    quick = ["--quick"] if args.quick else []
    failed = []

    if args.only in (None, "metrics"):
        cmd = [sys.executable, str(HERE / "bench_metrics.py"), *quick, *rest]
        if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
            failed.append("bench_metrics.py")

    if args.only in (None, "app"):
        app = HERE / "bench_app_latency.py"
        if app.exists():
            cmd = [sys.executable, str(app), *quick]
            if subprocess.run(cmd, cwd=HERE.parent, check=False).returncode != 0:
                failed.append(app.name)
        else:
            print(f"{app.name} not present: dashboard latency benchmark skipped")

    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
