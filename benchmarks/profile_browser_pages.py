"""Where one browser's CPU goes per page open and per gate move: which Chromium process, and
which scripts of the page.

``bench_browser_cost.py`` says how much CPU a page open or a gate move costs the browser; this
says where it goes, to choose what to cut. The dashboard (``dashboard/server.py``, the bundled
demo) is served from ``--checkout`` and warmed up by one unmeasured session; then one headless
Chromium opens the Overview (a fresh tab's first view), switches to every page of
``bench_app_load.PAGES`` in turn (the Gate page last) and makes ``--moves`` one-step τ_neg
moves. For each step, until the page has been idle for 1.5 s:

- the CPU seconds (user + system) of each kind of Chromium process (``renderer``: the page's
  JavaScript, style, layout and painting; ``gpu``: compositing and rasterising, in software
  here; ``browser``, ``utility``), from psutil;
- a sampled JavaScript profile of the page's main thread (DevTools ``Profiler``, every
  0.5 ms), summed by script file and by function: ``(program)`` is the renderer's own work
  (style, layout, painting), ``(idle)`` its waits.

Usage::

    python benchmarks/profile_browser_pages.py [--checkout .] [--moves 5] [--top 12]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_app_load import ARGS, CHROMIUM, PAGES, POLL_MS, SHOWN, THUMB  # noqa: E402
from benchmarks.bench_browser_cost import TIMEOUT_MS, quiet  # noqa: E402
from tests.app_server import running_app  # noqa: E402


def cpu_by_kind() -> collections.Counter:
    """CPU seconds (user + system) of the Chromium processes under this one, by their kind."""
    import psutil

    out: collections.Counter = collections.Counter()
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if "chrom" not in proc.name().lower():
                continue
            kind = next((arg.split("=", 1)[1] for arg in proc.cmdline()
                         if arg.startswith("--type=")), "browser")
            times = proc.cpu_times()
            out[kind] += times.user + times.system
    return out


def by_script(profile: dict) -> tuple[collections.Counter, collections.Counter]:
    """Milliseconds of the samples of a DevTools CPU profile by script file and by function."""
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    files: collections.Counter = collections.Counter()
    functions: collections.Counter = collections.Counter()
    for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        frame = frames[sample]
        script = frame["url"].rsplit("/", 1)[-1] or frame["functionName"]
        files[script] += delta / 1000
        functions[f"{frame['functionName'] or '(anonymous)'} {script}"] += delta / 1000
    return files, functions


def steps(page, moves: int):
    """The steps measured: (name, what makes it happen)."""
    def first():
        page.goto(URL[0] + "/")
        page.wait_for_function(SHOWN, arg="/", timeout=TIMEOUT_MS, polling=POLL_MS)

    yield "Overview (first view)", first
    for name, path in PAGES:
        def switch(name=name, path=path):
            page.get_by_test_id("stPageLink-NavLink").filter(
                has=page.get_by_test_id("stMarkdownContainer").get_by_text(
                    name, exact=True)).click()
            page.wait_for_function(SHOWN, arg=path, timeout=TIMEOUT_MS, polling=POLL_MS)
        yield name, switch
    for i in range(moves):
        def move():
            page.wait_for_selector(THUMB, timeout=TIMEOUT_MS)
            page.focus(THUMB)
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(300)
        yield f"gate move {i + 1}", move


URL: list[str] = []


def session(p, url: str, moves: int, top: int, *, report: bool = True) -> None:
    browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(TIMEOUT_MS)
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 500})
        URL[:] = [url]
        for name, act in steps(page, moves):
            before = cpu_by_kind()
            cdp.send("Profiler.start")
            act()
            quiet(page)
            profile = cdp.send("Profiler.stop")["profile"]
            after = cpu_by_kind()
            if not report:
                continue
            cpu = {kind: round(after[kind] - before[kind], 2) for kind in after}
            print(f"{name}: CPU s {cpu}", flush=True)
            files, functions = by_script(profile)
            print("  by script (ms): " + ", ".join(f"{f} {ms:.0f}"
                                                   for f, ms in files.most_common(top)))
            print("  by function (ms): " + ", ".join(f"{f} {ms:.0f}"
                                                     for f, ms in functions.most_common(top)))
    finally:
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--moves", type=int, default=5)
    parser.add_argument("--top", type=int, default=12, help="scripts and functions listed")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    checkout = args.checkout.resolve()
    with sync_playwright() as p, running_app(
            "dashboard/server.py", ROOT / "benchmarks" / "data" / "logs" / "profile_pages.log",
            env={"PYTHONPATH": str(checkout)}, cwd=checkout, give_up_after=600) as url:
        session(p, url, 1, args.top, report=False)  # warm-up: the shared evaluations made
        session(p, url, args.moves, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
