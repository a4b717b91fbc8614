"""What one browser pays per page open and per gate move, A/B between two checkouts.

Under load (``bench_app_load.py``) the browsers, not the server, take most of the two cores:
this measures the browser's share of one session. The dashboard (``dashboard/server.py``, the
bundled demo) is served from checkout A (e.g. a worktree at ``main``) and from checkout B (the
change), both started once and warmed up by one unmeasured session each; then ``--rounds``
rounds, each one fresh headless Chromium per checkout (A then B, B then A in the next round):
the session opens the Overview, switches to every page of ``bench_app_load.PAGES`` in turn
(the Gate page last), then makes ``--moves`` one-step τ_neg moves. Each page open and each
move lasts until the page has been idle (its runs done, no progress bar) for 1.5 s, so the
runs that follow a view (refined intervals) are counted with it. For each it records:

- the CPU seconds (user + system) of the Chromium process tree (psutil, the processes under
  this one) and of the server process;
- the bytes the browser received over the app's websocket (the page's elements, tables as
  Arrow, figures as JSON).

Prints the medians over the rounds per page and for a move, and the ratios B / A.

Usage::

    python benchmarks/bench_browser_cost.py --a /path/to/main-checkout --b . [--rounds 4]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_load import ARGS, CHROMIUM, IDLE, PAGES, POLL_MS, SHOWN, THUMB  # noqa: E402
from tests.app_server import running_app  # noqa: E402

TIMEOUT_MS = 300_000
#: The page's runs done and no progress bar, for ``ms`` milliseconds in a row.
QUIET = ("(ms) => { const idle = (" + IDLE + ")(); const now = performance.now();"
         " if (!idle) { window.__busy = now; return false; }"
         " if (window.__busy === undefined) window.__busy = now;"
         " return now - window.__busy >= ms; }")


def chromium_cpu() -> float:
    """CPU seconds (user + system) of the Chromium processes under this one, alive now."""
    import psutil

    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if "chrom" in proc.name().lower():
                times = proc.cpu_times()
                total += times.user + times.system
    return total


def process_cpu(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


class Meter:
    """Websocket bytes received by a page, and the CPU of the browser and of the server."""

    def __init__(self, page, server_pid: int):
        self.received, self.server_pid = 0, server_pid
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        self.received += len(payload)

    def reading(self) -> tuple[float, float, int]:
        return chromium_cpu(), process_cpu(self.server_pid), self.received

    def since(self, start: tuple[float, float, int]) -> dict:
        now = self.reading()
        return {"browser_cpu_s": now[0] - start[0], "server_cpu_s": now[1] - start[1],
                "ws_bytes": now[2] - start[2]}


def quiet(page, ms: int = 1500) -> None:
    page.wait_for_timeout(150)
    page.evaluate("() => { window.__busy = undefined; }")
    page.wait_for_function(QUIET, arg=ms, timeout=TIMEOUT_MS, polling=POLL_MS)


def open_page(page, name: str, path: str) -> None:
    """Click the page's link in the navigation; until it is shown and quiet."""
    page.get_by_test_id("stPageLink-NavLink").filter(
        has=page.get_by_test_id("stMarkdownContainer").get_by_text(name, exact=True)).click()
    page.wait_for_function(SHOWN, arg=path, timeout=TIMEOUT_MS, polling=POLL_MS)
    quiet(page)


def move(page) -> None:
    """One keyboard step of τ_neg on the Gate page; until the NEG tile shows its new value
    and the page is quiet."""
    tile = page.get_by_test_id("stMetric").filter(
        has_text="NEG (auto-cleared)").get_by_test_id("stMetricValue")
    before = tile.inner_text()
    page.focus(THUMB)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("([el, b]) => el.innerText !== b",
                           arg=[tile.element_handle(), before], timeout=TIMEOUT_MS,
                           polling=POLL_MS)
    quiet(page)


def session(p, url: str, server_pid: int, moves: int) -> dict:
    """One fresh Chromium: every page opened in turn, then ``moves`` gate moves."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        meter = Meter(page, server_pid)
        start = meter.reading()
        page.goto(url + "/")
        page.wait_for_function(SHOWN, arg="/", timeout=TIMEOUT_MS, polling=POLL_MS)
        quiet(page)
        out = {"pages": {"Overview (first view)": meter.since(start)}, "moves": []}
        for name, path in PAGES:
            start = meter.reading()
            open_page(page, name, path)
            out["pages"][name] = meter.since(start)
        page.wait_for_selector(THUMB, timeout=TIMEOUT_MS)
        for _ in range(moves):
            start = meter.reading()
            move(page)
            out["moves"].append(meter.since(start))
        failures = page.get_by_test_id("stException").count()
        out["errors"] = failures + page.inner_text("body").count("Something went wrong")
        return out
    finally:
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="checkout A (e.g. main)")
    parser.add_argument("--b", type=Path, required=True, help="checkout B (the change)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--moves", type=int, default=5, help="gate moves per session")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args(argv)
    logs = ROOT / "benchmarks" / "data" / "logs"
    from playwright.sync_api import sync_playwright

    runs: dict[str, list[dict]] = {"A": [], "B": []}
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        procs: dict[str, list] = {"A": [], "B": []}
        urls = {name: stack.enter_context(running_app(
            "dashboard/server.py", logs / f"browser_cost_{name.lower()}.log",
            env={"PYTHONPATH": str(checkout.resolve())}, cwd=checkout.resolve(),
            process=procs[name], give_up_after=600))
            for name, checkout in (("A", args.a), ("B", args.b))}
        pids = {name: procs[name][0].pid for name in urls}
        for name in ("A", "B"):  # warm-up: the demo's shared evaluations computed
            session(p, urls[name], pids[name], 1)
            print(f"{name}: warmed up", flush=True)
        for r in range(args.rounds):
            for name in (("A", "B") if r % 2 == 0 else ("B", "A")):
                got = session(p, urls[name], pids[name], args.moves)
                runs[name].append(got)
                print(f"round {r + 1} {name}: browser CPU " + ", ".join(
                    f"{k} {v['browser_cpu_s']:.2f}" for k, v in got["pages"].items())
                    + f"; errors {got['errors']}", flush=True)

    def med(name: str, page: str | None, key: str) -> float:
        if page is None:  # a move: the median over a session's moves, then over the rounds
            return statistics.median(statistics.median(m[key] for m in s["moves"])
                                     for s in runs[name])
        return statistics.median(s["pages"][page][key] for s in runs[name])

    rows = [*runs["A"][0]["pages"], None]
    print(f"\nmedians over {args.rounds} rounds (a move: median of {args.moves} per session)")
    print(f"{'':24s} {'browser CPU s A':>15s} {'B':>6s} {'B/A':>5s}   {'server CPU s A':>14s} "
          f"{'B':>6s} {'B/A':>5s}   {'ws kB A':>8s} {'B':>8s} {'B/A':>5s}")
    for page in rows:
        cells = []
        for key, scale in (("browser_cpu_s", 1), ("server_cpu_s", 1), ("ws_bytes", 1e-3)):
            a, b = med("A", page, key) * scale, med("B", page, key) * scale
            cells.append(f"{a:>8.2f} {b:>8.2f} {b / a if a else float('nan'):>5.2f}")
        print(f"{page or 'gate move':24s} " + "   ".join(cells))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
