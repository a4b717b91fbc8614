"""A/B of a Gate-page move between two checkouts, against the bare app, in the same minutes.

A reduced form of ``bench_app_latency.py`` for judging a change on a shared machine: the bare
app (``benchmarks/bare_app.py``) and the dashboard's Gate page (demo, intervals on unless
``--query ?ci=0``) served from checkout A and from checkout B (e.g. a worktree at ``main`` and
one with the change), each its own ``streamlit run`` and browser page, all started once; then
``--rounds`` rounds, each ``--moves`` one-step τ_neg moves on every server in turn (so all
three see the same load). A move is timed as in ``bench_app_latency.py`` (its in-page
recorder): from the key press to the chart showing the new value ("values shown"), and to the
run's end. Prints per-round medians, then the medians over the rounds and the ratios to the
bare app's move.

Usage::

    python benchmarks/ab_gate_move.py --a /path/to/main-checkout --b . [--rounds 5] [--moves 4]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_latency import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    RECORDER_JS,
    SETTLE_MS,
    VIEWPORT,
    bare_scenario,
    gate_scenario,
)
from tests.app_server import running_app  # noqa: E402


def serving(checkout: Path, script: str, log: Path):
    """``streamlit run script`` from ``checkout`` (its own code on the path) on a free port."""
    return running_app(script, log, env={"PYTHONPATH": str(checkout)}, cwd=checkout,
                       give_up_after=120)


def quiet(page, timeout_ms: int, ms: int = 1500) -> None:
    """Until the page's script state has been idle for ``ms`` (the runs that follow a first
    view, e.g. refined intervals, have ended: a key press then is a move of its own)."""
    page.wait_for_function(
        """(ms) => { const s = document.querySelector('[data-testid="stApp"]')
                        ?.getAttribute('data-test-script-state');
                     const now = performance.now();
                     if (s !== 'notRunning') { window.__busy = now; return false; }
                     if (window.__busy === undefined) window.__busy = now;
                     return now - window.__busy >= ms; }""", arg=ms, timeout=timeout_ms,
        polling=100)


def move(page, sc, value: float, timeout_ms: int) -> dict:
    page.evaluate(RECORDER_JS, [sc.dependent, sc.text(value)])
    page.locator(sc.thumb).focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__lat.done > 0", timeout=timeout_ms, polling=20)
    lat = page.evaluate("() => window.__lat")
    page.wait_for_timeout(SETTLE_MS)
    quiet(page, timeout_ms, 600)
    return {"chart": lat["chart"] - lat["t0"], "done": lat["done"] - lat["t0"],
            "run": None if lat["run"] is None else lat["run"] - lat["t0"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="checkout A (e.g. main)")
    parser.add_argument("--b", type=Path, required=True, help="checkout B (the change)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--moves", type=int, default=4, help="timed moves per round and app")
    parser.add_argument("--query", default="", help="query string of the Gate page, e.g. ?ci=0")
    args = parser.parse_args(argv)
    logs = ROOT / "benchmarks" / "data" / "logs"
    timeout_ms = 600_000
    bare = bare_scenario(args.moves, 1)
    gates = {name: gate_scenario(name, name, args.moves, 1, query=args.query)
             for name in ("A", "B")}
    from playwright.sync_api import sync_playwright

    samples: dict[str, list[list[dict]]] = {"bare": [], "A": [], "B": []}
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        urls = {"bare": stack.enter_context(serving(args.a.resolve(), "benchmarks/bare_app.py",
                                                    logs / "ab_bare.log")),
                "A": stack.enter_context(serving(args.a.resolve(), "dashboard/server.py",
                                                 logs / "ab_a.log")),
                "B": stack.enter_context(serving(args.b.resolve(), "dashboard/server.py",
                                                 logs / "ab_b.log"))}
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        scenarios = {"bare": bare, **gates}
        pages, values = {}, {}
        for name, sc in scenarios.items():
            context = browser.new_context(viewport=VIEWPORT)
            context.set_default_timeout(timeout_ms)
            page = context.new_page()
            page.goto(urls[name] + sc.path)
            page.locator(sc.thumb).wait_for(state="attached", timeout=timeout_ms)
            quiet(page, timeout_ms, 3000)
            page.wait_for_selector(sc.dependent, state="attached", timeout=timeout_ms)
            values[name] = float(page.locator(sc.thumb).get_attribute("value"))
            for _ in range(2):  # warm-up moves
                values[name] = round(values[name] + 0.01, 2)
                move(page, sc, values[name], timeout_ms)
            pages[name] = page
            print(f"{name}: ready", flush=True)
        for r in range(args.rounds):
            order = ("bare", "A", "B") if r % 2 == 0 else ("bare", "B", "A")
            for name in order:
                got = []
                for _ in range(args.moves):
                    values[name] = round(values[name] + 0.01, 2)
                    got.append(move(pages[name], scenarios[name], values[name], timeout_ms))
                samples[name].append(got)
            print(f"round {r + 1}: " + "  ".join(
                f"{n} {statistics.median(s['chart'] for s in samples[n][-1]):.0f}"
                for n in ("bare", "A", "B")) + " ms (values shown, median)", flush=True)
        browser.close()

    def med(name: str, key: str) -> float:
        return statistics.median(statistics.median(s[key] for s in rnd if s[key] is not None)
                                 for rnd in samples[name])

    base = med("bare", "done")  # as bench_app_latency.py: the bare app's whole move
    print(f"\nmedian over {args.rounds} rounds of {args.moves} moves (ms after the key press):")
    for name in ("bare", "A", "B"):
        print(f"  {name:4s}: run starts {med(name, 'run'):5.0f}  values shown "
              f"{med(name, 'chart'):5.0f} ({med(name, 'chart') / base:.2f}x bare)  run ends "
              f"{med(name, 'done'):5.0f}")
    ratios = [statistics.median(s["chart"] for s in b) / statistics.median(s["chart"] for s in a)
              for a, b in zip(samples["A"], samples["B"], strict=True)]
    print(f"  B / A per round: {', '.join(f'{x:.2f}' for x in ratios)}; median "
          f"{statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
