"""One table of the speed targets: every target beside its measurement, baseline and ratio.

Reads the results the benchmark scripts wrote (``results/cli.json`` from ``bench_cli.py``,
``results/default_run.json`` from ``bench_default_run.py``, ``results/app_latency.json``
from ``bench_app_latency.py``), writes
``results/speed_targets.md`` and pastes the table into the README between the
``speed-targets`` markers. ``run_all.py`` calls it after the benchmarks, so the table always
shows the figures of the latest run of each script (with its date: a row whose script was not
rerun says so).

Usage::

    python benchmarks/speed_targets.py
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
MARKERS = ("<!-- speed-targets:start -->", "<!-- speed-targets:end -->")


def fmt_s(seconds: float) -> str:
    if seconds < 0.001:
        return "< 1 ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_ms(ms: float) -> str:
    return fmt_s(ms / 1000)


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "not measured"
    return "met" if ok else "**not met**"


def _load(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def cli_rows(res: dict) -> list[tuple]:
    """Rows of ``bench_cli.py``: (target, measured, baseline, ratio, target, verdict)."""
    small, large, imp = res["small"], res.get("large"), res["imports"]
    rows = [
        ("`import metrics_core`", fmt_s(imp["import_process"]), "–", "–", "≤ 0.3 s",
         verdict(imp["import_process"] <= 0.3)),
        ("CLI start (`metrics-core --help`)", fmt_s(imp["help_process"]), "–", "–", "≤ 0.3 s",
         verdict(imp["help_process"] <= 0.3)),
    ]
    n = f"{small['n_queries']:,} queries"
    ratio = small["cli"] / small["peer"]
    rows.append((f"whole `metrics-core evaluate`, {n}", fmt_s(small["cli"]),
                 f"scikit-learn + pytrec_eval {fmt_s(small['peer'])}", f"{ratio:.3f}x",
                 "≤ 0.25x", verdict(ratio <= 0.25)))
    ratio = small["load"] / small["read_table"]
    floor = small.get("floor")  # the least any loader does (bench_cli.FLOOR), for scale
    rows.append((f"loading (read + validate + build), {n}", fmt_s(small["load"]),
                 f"`pyarrow.parquet.read_table` {fmt_s(small['read_table'])}" + (
                     "" if floor is None else f" (the least a loader does, read and "
                     f"within-query sort only: {fmt_s(floor)}, "
                     f"{floor / small['read_table']:.2f}x)"),
                 f"{ratio:.2f}x", "≤ 1.3x", verdict(ratio <= 1.3)))
    if large is None:
        rows.append(("evaluate, 1,000,000 queries", "–", "–", "–", "≤ 1x the Parquet read",
                     verdict(None)))
        rows.append(("peak memory, 1,000,000 queries", "–", "–", "–", "≤ 3 GB", verdict(None)))
        return rows
    read = min(large["read_parquet"], large["read_table"])
    ratio = large["evaluate"] / read
    rows.append((f"evaluate, {large['n_queries']:,} queries", fmt_s(large["evaluate"]),
                 f"Parquet read of the candidates {fmt_s(read)}", f"{ratio:.2f}x", "≤ 1x",
                 verdict(ratio <= 1)))
    rows.append((f"peak memory of `metrics-core evaluate`, {large['n_queries']:,} queries",
                 f"{large['cli_peak_rss_mb'] / 1024:.2f} GB", "–", "–", "≤ 3 GB",
                 verdict(large["cli_peak_rss_mb"] <= 3 * 1024)))
    return rows


def default_rows(res: dict) -> list[tuple]:
    """The row of ``bench_default_run.py``: the README's example, default against
    ``--bootstrap 0``."""
    d = res["default_run"]
    return [("whole `metrics-core evaluate` on the demo, default 10,000 resamples (every "
             "interval)", fmt_s(d["default_median_s"]),
             f"same run `--bootstrap 0` {fmt_s(d['bootstrap0_median_s'])}",
             f"{d['ratio']:.2f}x", "≤ 5x", verdict(d["ratio"] <= 5))]


def app_rows(res: dict) -> list[tuple]:
    """Rows of ``bench_app_latency.py``."""
    by = {r["scenario"]: r for r in res.get("results", [])}
    bare = by.get("bare")
    rows = []

    def latency(scenario: str, title: str) -> None:
        r = by.get(scenario)
        if r is None or bare is None:
            rows.append((title, "–", "–", "–", "≤ 1.5x", verdict(None)))
            return
        ratio = r["median_ms"] / bare["median_ms"]
        rows.append((title, fmt_ms(r["median_ms"]), f"bare app {fmt_ms(bare['median_ms'])}",
                     f"{ratio:.2f}x", "≤ 1.5x", verdict(ratio <= 1.5)))

    latency("demo", "Gate move, whole (values and intervals drawn, run ended), demo")
    demo = by.get("demo")
    bursts = ((demo or {}).get("info") or {}).get("burst_ms")
    if bursts and demo is not None:
        settle = statistics.median(bursts)
        ratio = settle / demo["median_ms"]
        rows.append(("ten quick presses: settled after the last", fmt_ms(settle),
                     f"one move {fmt_ms(demo['median_ms'])}", f"{ratio:.2f}x", "≤ 1.5x",
                     verdict(ratio <= 1.5)))
    else:
        rows.append(("ten quick presses: settled after the last", "–", "–", "–", "≤ 1.5x",
                     verdict(None)))
    if demo is not None and bare is not None:
        shown = demo["chart_median_ms"]
        rows.append(("Gate move: its values shown (chart), intervals on", fmt_ms(shown),
                     f"bare app {fmt_ms(bare['median_ms'])}",
                     f"{shown / bare['median_ms']:.2f}x", "≤ 1.5x",
                     verdict(shown / bare["median_ms"] <= 1.5)))
        later = statistics.median(s["ms"] - s["chart_ms"] for s in demo["samples"]
                                  if not s["warmup"])
        rows.append(("Gate move: its intervals drawn after its values", fmt_ms(later), "–",
                     "–", "≤ 2 s", verdict(later <= 2000)))
    else:
        rows.append(("Gate move: its values shown (chart), intervals on", "–", "–", "–",
                     "≤ 1.5x", verdict(None)))
    off = by.get("demo_no_ci")
    if off is not None and demo is not None:
        ratio = demo["median_ms"] / off["median_ms"]
        rows.append(("Gate move with its intervals against intervals off",
                     fmt_ms(demo["median_ms"]), f"intervals off {fmt_ms(off['median_ms'])}",
                     f"{ratio:.2f}x", "≤ 2x", verdict(ratio <= 2)))
    big = by.get("1m")
    if big is None:
        rows.append(("Gate page slider → updated chart, 1,000,000 queries", "–", "–", "–",
                     "≤ 1 s", verdict(None)))
        rows.append(("upload + load of the 1M-query Parquet", "–", "–", "–", "≤ 6 s",
                     verdict(None)))
    else:
        rows.append(("Gate page slider → updated chart, 1,000,000 queries",
                     fmt_ms(big["median_ms"]), "–", "–", "≤ 1 s",
                     verdict(big["median_ms"] <= 1000)))
        info = big.get("info") or {}
        # The files sent through the uploader, then "Load" until the first page is drawn.
        parts = [info.get("upload_s"), info.get("load_and_overview_s")]
        upload = None if None in parts else sum(parts)
        rows.append(("upload + load of the 1M-query Parquet",
                     "–" if upload is None else fmt_s(upload), "–", "–", "≤ 6 s",
                     verdict(None if upload is None else upload <= 6)))
    return rows


def table() -> list[str]:
    cli, app = _load("cli.json"), _load("app_latency.json")
    lines = ["| target | measured | baseline (same run) | ratio | target | |",
             "|---|---:|---|---:|---|---|"]
    sources = []
    if cli is not None:
        lines += [f"| {' | '.join(row)} |" for row in cli_rows(cli)]
        sources.append(f"`bench_cli.py` {cli['environment']['date']}")
    default = _load("default_run.json")
    if default is not None and "default_run" in default:
        lines += [f"| {' | '.join(row)} |" for row in default_rows(default)]
        sources.append(f"`bench_default_run.py` {default['date']}")
    if app is not None:
        lines += [f"| {' | '.join(row)} |" for row in app_rows(app)]
        sources.append(f"`bench_app_latency.py` {app['meta']['date']} "
                       f"(`{app['meta'].get('command', '')}`)")
    lines += ["", "Runs: " + "; ".join(sources) + "."]
    return lines


def main() -> int:
    lines = table()
    (RESULTS / "speed_targets.md").write_text("# Speed targets\n\n" + "\n".join(lines) + "\n",
                                              encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    start, end = MARKERS
    if start in text and end in text:
        head, rest = text.split(start, 1)
        README.write_text(head + start + "\n" + "\n".join(lines) + "\n" + end
                          + rest.split(end, 1)[1], encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
