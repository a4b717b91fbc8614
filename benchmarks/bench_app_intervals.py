"""Intervals on by default, at interactive speed: what a review meeting waits for.

On a fresh dashboard server (the bundled demo, 14,770 queries, intervals on as the app opens),
in headless Chromium:

- ``first view``: from opening the app until the Overview shows AUROC's bootstrap interval
  (the live pass) and until every interval is refined to the configured resamples (the script
  idle, no progress bar left);
- ``page switch``: opening each page whose evaluation is already computed, until idle;
- ``gate move``: one keyboard step of τ_neg on the Gate page until the NEG tile shows its new
  value, and until the page is idle again (the intervals of the new setting drawn);
- ``second session``: the same first view in a new browser session on the same server (the
  demo's evaluations are shared between sessions).

Targets (issue "meeting-grade trust"): first view complete ≤ 3 s, page switch ≤ 1 s, the
intervals of a move ≤ 2 s after its values. The move's own latency against a bare Streamlit
app is ``bench_app_latency.py``'s (it runs with the app's defaults, so intervals on).

Usage::

    python benchmarks/bench_app_intervals.py [--repeats N]

Writes ``benchmarks/results/app_intervals.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_load import ARGS, CHROMIUM, IDLE  # noqa: E402
from tests.app_server import running_app  # noqa: E402

#: The Overview's verdict line of AUROC carries its bootstrap interval ("AUROC 0.981 [0.97…").
AUROC_CI = "() => /AUROC 0\\.\\d+ \\[/.test(document.body.innerText)"
PAGES = ("Gate & thresholds", "Per criterion", "Calibration", "Decision support", "Overview",
         "Ranking", "Dynamic-K", "Meeting mode")
TIMEOUT_MS = 300_000


def _wait(page, js: str) -> None:
    page.wait_for_function(js, timeout=TIMEOUT_MS)


def first_view(browser, url: str) -> tuple[dict, object]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    t0 = time.perf_counter()
    page.goto(url)
    _wait(page, AUROC_CI)
    shown = time.perf_counter() - t0
    page.wait_for_timeout(200)
    _wait(page, IDLE)
    return {"intervals shown": shown, "every interval refined": time.perf_counter() - t0}, page


#: Per criterion draws its intervals from the live resamples at once and then computes the
#: configured number on the page (a progress bar): "shown" is its chart caption.
SHOWN = {"Per criterion": "() => /Dots: each criterion/.test(document.body.innerText)"}


def page_switches(page) -> tuple[dict, dict]:
    """Each page opened after the first view: ``(idle, shown)``, the seconds until the page
    is idle (every interval refined) and, for the pages of :data:`SHOWN`, until its
    intervals are first drawn."""
    out, shown = {}, {}
    for link in PAGES:
        t0 = time.perf_counter()
        page.get_by_test_id("stPageLink-NavLink").filter(
            has=page.get_by_test_id("stMarkdownContainer").get_by_text(
                link, exact=True)).click()
        page.wait_for_timeout(150)
        if link in SHOWN:
            _wait(page, SHOWN[link])
            shown[link] = time.perf_counter() - t0
        _wait(page, IDLE)
        out[link] = time.perf_counter() - t0
    return out, shown


def gate_moves(page, moves: int) -> list[dict]:
    page.get_by_test_id("stPageLink-NavLink").filter(
        has=page.get_by_test_id("stMarkdownContainer").get_by_text(
            "Gate & thresholds", exact=True)).click()
    page.wait_for_timeout(300)
    _wait(page, IDLE)
    thumb = page.locator('input[type="range"][aria-label="Gate thresholds (τ_neg, τ_pos) — '
                         'start"]')
    tile = page.get_by_test_id("stMetric").filter(has_text="NEG (auto-cleared)").get_by_test_id(
        "stMetricValue")
    out = []
    for _ in range(moves):
        before = tile.inner_text()
        thumb.focus()
        t0 = time.perf_counter()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([el, b]) => el.innerText !== b", arg=[tile.element_handle(),
                                                                       before],
                               timeout=TIMEOUT_MS)
        shown = time.perf_counter() - t0
        page.wait_for_timeout(100)
        _wait(page, IDLE)
        out.append({"values shown": shown, "intervals drawn": time.perf_counter() - t0})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=5)
    args = parser.parse_args(argv)
    import os

    from playwright.sync_api import sync_playwright

    results: dict = {"when": datetime.now(UTC).isoformat(timespec="seconds"),
                     "load average (1, 5, 15 min) at the start": os.getloadavg()}
    log = ROOT / "benchmarks" / "results" / "app_intervals_streamlit.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with running_app("dashboard/server.py", log) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        results["first view"], page = first_view(browser, url)
        results["page switch, first opening"], results["page shown, first opening"] = (
            page_switches(page))
        # Every page again: now computed for these settings.
        results["page switch"], _ = page_switches(page)
        moves = gate_moves(page, args.moves)
        results["gate move"] = {k: statistics.median(m[k] for m in moves) for k in moves[0]}
        page.close()
        results["second session"], page = first_view(browser, url)
        browser.close()
    switch = max(results["page switch"].values())
    first = results["page switch, first opening"]
    move = results["gate move"]
    rows = [
        ("first opening of Per criterion: live intervals shown",
         results["page shown, first opening"]["Per criterion"], ""),
        ("first opening of Per criterion: refined to the configured resamples",
         first["Per criterion"], ""),
        ("slowest first opening of another page",
         max(v for k, v in first.items() if k != "Per criterion"), ""),
        ("first view: intervals shown", results["first view"]["intervals shown"], "≤ 3 s"),
        ("first view: every interval refined", results["first view"]["every interval refined"],
         ""),
        ("slowest page switch (already computed)", switch, "≤ 1 s"),
        ("gate move: values shown (median)", move["values shown"], ""),
        ("gate move: intervals drawn after the values (median)",
         move["intervals drawn"] - move["values shown"], "≤ 2 s"),
        ("second session: intervals shown", results["second session"]["intervals shown"], ""),
    ]
    print(f"{'measure':58} {'seconds':>8}  target")
    for name, value, target in rows:
        print(f"{name:58} {value:8.2f}  {target}")
    print("first openings:", {k: round(v, 2) for k, v in first.items()})
    print("page switches:", {k: round(v, 2) for k, v in results["page switch"].items()})
    out = ROOT / "benchmarks" / "results" / "app_intervals.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
