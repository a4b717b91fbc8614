"""The Per criterion page opened after a gate move, A/B between two checkouts.

What the server and the browser pay for the page (the per-criterion intervals at the
configured 10,000 resamples of the thresholds just moved to) after a one-step τ_neg move on
the Gate page, the move's own work done. The dashboard (``dashboard/server.py``, the bundled
demo) is served from checkout A and from checkout B, both warmed up by one session (the Gate
page, then Per criterion, so the criteria's data intervals are made, as on a server in use);
then ``--rounds`` rounds, each on one headless Chromium per checkout (A then B, B then A in
the next round): on the Gate page, a move, the page left idle and the server's helper threads
quiet, then Per criterion opened until it has been idle for 1.5 s (its refinement and second
run, if any, counted with it), then back to the Gate page. Each round moves τ_neg one step
further, so every open is of new thresholds. Prints the medians of the server's CPU seconds
(user + system), the browser's and the websocket bytes, and the ratios B / A.

Usage::

    python benchmarks/bench_per_criterion_move.py --a /path/to/main-checkout --b . [--rounds 6]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_load import ARGS, CHROMIUM, THUMB  # noqa: E402
from benchmarks.bench_browser_cost import (  # noqa: E402
    TIMEOUT_MS,
    Meter,
    move,
    open_page,
    process_cpu,
    quiet,
)
from tests.app_server import running_app  # noqa: E402


def server_quiet(pid: int, step: float = 1.0, below: float = 0.05) -> None:
    """Until the server used less than ``below`` CPU seconds in ``step`` seconds (the work
    its helper threads compute ahead done)."""
    last = process_cpu(pid)
    while True:
        time.sleep(step)
        now = process_cpu(pid)
        if now - last < below:
            return
        last = now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="checkout A (e.g. main)")
    parser.add_argument("--b", type=Path, required=True, help="checkout B (the change)")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    logs = ROOT / "benchmarks" / "data" / "logs"
    from playwright.sync_api import sync_playwright

    runs: dict[str, list[dict]] = {"A": [], "B": []}
    with contextlib.ExitStack() as stack:
        p = stack.enter_context(sync_playwright())
        procs: dict[str, list] = {"A": [], "B": []}
        urls = {name: stack.enter_context(running_app(  # (stopped after the browser)
            "dashboard/server.py", logs / f"per_criterion_{name.lower()}.log",
            env={"PYTHONPATH": str(checkout.resolve())}, cwd=checkout.resolve(),
            process=procs[name], give_up_after=600))
            for name, checkout in (("A", args.a), ("B", args.b))}
        pids = {name: procs[name][0].pid for name in urls}
        browser = stack.enter_context(contextlib.closing(
            p.chromium.launch(executable_path=CHROMIUM, args=ARGS)))
        pages, meters = {}, {}
        for name in ("A", "B"):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.set_default_timeout(TIMEOUT_MS)
            page = pages[name] = context.new_page()
            meters[name] = Meter(page, pids[name])
            page.goto(urls[name] + "/gate")
            page.wait_for_selector(THUMB, timeout=TIMEOUT_MS)
            quiet(page)
            open_page(page, "Per criterion", "/per-criterion")
            open_page(page, "Gate & thresholds", "/gate")
            server_quiet(pids[name])
            print(f"{name}: warmed up", flush=True)
        for r in range(args.rounds):
            for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
                page = pages[name]
                page.wait_for_selector(THUMB, timeout=TIMEOUT_MS)
                move(page)
                server_quiet(pids[name])
                meter = meters[name]
                start = meter.reading()
                open_page(page, "Per criterion", "/per-criterion")
                got = meter.since(start)
                runs[name].append(got)
                print(f"round {r + 1} {name}: server CPU {got['server_cpu_s']:.2f} s, "
                      f"browser CPU {got['browser_cpu_s']:.2f} s", flush=True)
                open_page(page, "Gate & thresholds", "/gate")
                server_quiet(pids[name])

    print(f"\nPer criterion opened after a gate move: medians over {args.rounds} rounds")
    for key, unit in (("server_cpu_s", "s"), ("browser_cpu_s", "s"), ("ws_bytes", "B")):
        a = statistics.median(g[key] for g in runs["A"])
        b = statistics.median(g[key] for g in runs["B"])
        print(f"{key:14s} A {a:10.2f} {unit}  B {b:10.2f} {unit}  B/A "
              f"{b / a if a else float('nan'):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
