"""Slider-to-updated-chart latency of the dashboard in a real browser (headless Chromium).

Scenarios, each its own ``streamlit run`` server (from the repository root, so
``.streamlit/config.toml`` applies) and a fresh browser context:

- ``bare``: ``benchmarks/bare_app.py``, one slider and one plotly chart (Streamlit's floor);
- ``demo``: the dashboard's Gate page on the bundled synthetic demo (14,770 queries), served
  as ``./dev app`` serves it (``dashboard/server.py``), with its defaults (intervals on);
- ``demo_no_ci``: the same with intervals switched off (``?ci=0``), what the intervals cost;
- ``1m``: the Gate page on 1,000,000 queries (``make_synthetic(100_000, seed=0,
  with_text=False)``, ~20 M candidate rows, written once as Parquet to ``benchmarks/data/``,
  gitignored) loaded through the app's file uploader, as a user would.

Method: the slider thumb (a visually hidden ``input[type=range]``) is focused and moved one step
with ArrowRight, always to a value not shown before (no memo hit). An in-page recorder notes the
key press (capture ``keydown`` listener, ``performance.now()``) and, through a MutationObserver,
the first moment the dependent chart text shows the new value (the plotly legend entry of the
bare app's marker / the legend entry of the dashboard's τ_neg operating point on its ROC chart,
a Vega-Lite chart drawn as SVG) and Streamlit's script state (``[data-testid=stApp][data-test-
script-state]``) is back to ``notRunning``; the latency is the time to the next animation frame
after that. Warm-up moves are dropped; median and p90 over the remaining moves; the ratio is the
scenario's median over the bare app's. Targets: the demo within 1.5x of the bare app; at 1M
queries a move within 1 s and the upload + load (the files sent, then "Load" until the first
page is drawn) within 6 s.

``--profile`` also runs the Gate page in ``streamlit.testing.v1.AppTest`` under cProfile for a
few τ_neg changes and prints where a rerun spends its time (project functions, cumulative).

Usage::

    python benchmarks/bench_app_latency.py [--quick] [--skip-1m] [--profile]

Writes ``benchmarks/results/app_latency.md`` and ``.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

from tests.app_server import running_app  # noqa: E402  (one way to start the app)

DATA_DIR = ROOT / "benchmarks" / "data"  # gitignored
RESULTS_DIR = ROOT / "benchmarks" / "results"
LOG_DIR = DATA_DIR / "logs"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
VIEWPORT = {"width": 1400, "height": 1000}
#: 1,000,000 queries: 100,000 posts x 10 criteria (as benchmarks/bench_metrics.py, seed 0).
POSTS_1M = 100_000
SEED = 0
#: Pause after a move has been drawn, so the page is quiet before the next key press.
SETTLE_MS = 400
#: Rapid moves: this many ArrowRight presses, this far apart (a user holding the key).
BURST_PRESSES = 10
BURST_GAP_MS = 60
GATE_LABEL = "Gate thresholds (τ_neg, τ_pos)"

#: The in-page recorder: arm(selector, text) before a key press; window.__lat holds the times.
RECORDER_JS = """([selector, text]) => {
  const lat = {t0: null, run: null, runEnd: null, chart: null, done: null};
  window.__lat = lat;
  const app = document.querySelector('[data-testid="stApp"]');
  const idle = () => app.getAttribute('data-test-script-state') === 'notRunning';
  const shown = () => Array.from(document.querySelectorAll(selector))
      .some(e => e.textContent === text);
  const check = () => {
    if (lat.t0 === null || lat.done !== null) return;
    const now = app.getAttribute('data-test-script-state');
    if (lat.run === null && now === 'running') lat.run = performance.now();
    if (lat.run !== null && lat.runEnd === null && now === 'notRunning') {
      lat.runEnd = performance.now();
    }
    if (lat.chart === null && shown()) lat.chart = performance.now();
    if (lat.chart !== null && idle()) {
      lat.done = -1;
      texts.disconnect(); scriptState.disconnect();
      requestAnimationFrame(() => { lat.done = performance.now(); });
    }
  };
  const texts = new MutationObserver(check);
  texts.observe(document.body, {subtree: true, childList: true, characterData: true});
  const scriptState = new MutationObserver(check);
  scriptState.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  window.addEventListener('keydown', () => { if (lat.t0 === null) lat.t0 = performance.now(); },
                          {capture: true, once: true});
}"""
IDLE_JS = ('() => document.querySelector(\'[data-testid="stApp"]\')'
           '?.getAttribute("data-test-script-state") === "notRunning"')


# ------------------------------------------------------------------------------ scenarios
@dataclass
class Scenario:
    """One app under test: where the slider is and which chart text shows its value."""

    name: str
    title: str
    script: str
    path: str
    thumb: str
    dependent: str
    text: Callable[[float], str]
    moves: int
    warmup: int
    prepare: Callable | None = None
    burst: bool = False
    samples: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)


def bare_scenario(moves: int, warmup: int) -> Scenario:
    return Scenario(
        "bare", "bare Streamlit app (1 slider + 1 plotly chart)", "benchmarks/bare_app.py", "/",
        thumb='input[type="range"][aria-label="Threshold"]',
        dependent=".st-key-chart .legendtext", text=lambda v: f"threshold {v:.2f}",
        moves=moves, warmup=warmup)


def gate_scenario(name: str, title: str, moves: int, warmup: int,
                  prepare: Callable | None = None, query: str = "") -> Scenario:
    return Scenario(
        name, title, "dashboard/server.py", ("/" if prepare else "/gate") + query,
        thumb=f'input[type="range"][aria-label="{GATE_LABEL} — start"]',
        dependent=".st-key-roc_chart text",
        text=lambda v: f"τ_neg (screened in) (p ≥ {v:g})",
        moves=moves, warmup=warmup, prepare=prepare, burst=name == "demo")


def data_1m() -> tuple[Path, Path]:
    """The 1,000,000-query Parquet files (generated on first use)."""
    q_path = DATA_DIR / f"app_1m_seed{SEED}_queries.parquet"
    c_path = DATA_DIR / f"app_1m_seed{SEED}_candidates.parquet"
    if not (q_path.exists() and c_path.exists()):
        from metrics_core.demo import make_synthetic

        print(f"generating {POSTS_1M * 10:,} queries -> {DATA_DIR}", flush=True)
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        queries, candidates = make_synthetic(POSTS_1M, seed=SEED, with_text=False)
        queries.to_parquet(q_path.with_suffix(".tmp"), compression="zstd", index=False)
        candidates.to_parquet(c_path.with_suffix(".tmp"), compression="zstd", index=False)
        q_path.with_suffix(".tmp").rename(q_path)
        c_path.with_suffix(".tmp").rename(c_path)
    return q_path, c_path


def upload_1m(page, sc: Scenario, timeout_ms: int) -> None:
    """Load the 1M files through the sidebar uploader, then open the Gate page."""
    from playwright.sync_api import expect

    q_path, c_path = data_1m()
    sc.info["upload_mb"] = round((q_path.stat().st_size + c_path.stat().st_size) / 1e6, 1)
    page.get_by_test_id("stExpander").filter(has_text="Upload your data").locator(
        "summary").click()
    t0 = time.perf_counter()
    for key, path in (("upload_queries", q_path), ("upload_candidates", c_path)):
        page.locator(f".st-key-{key} input[type=file]").set_input_files(path)
        expect(page.locator(f'.st-key-{key} [aria-label="Remove {path.name}"]')).to_be_visible(
            timeout=timeout_ms)
        page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    sc.info["upload_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    page.locator(".st-key-load_upload button").click()
    expect(page.get_by_text(f"Data: Uploaded data: {q_path.name}")).to_be_visible(
        timeout=timeout_ms)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    sc.info["load_and_overview_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    page.get_by_test_id("stPageLink-NavLink").filter(
        has=page.get_by_test_id("stMarkdownContainer").get_by_text(
            "Gate & thresholds", exact=True)).click()
    open_gate(page, timeout_ms)
    sc.info["gate_page_s"] = round(time.perf_counter() - t0, 1)


def open_gate(page, timeout_ms: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator("h1").filter(has_text="Gate & thresholds")).to_be_visible(
        timeout=timeout_ms)
    page.wait_for_function(IDLE_JS, timeout=timeout_ms)


# ------------------------------------------------------------------------------ running
def run_scenario(browser, sc: Scenario, *, timeout_ms: int) -> None:
    """Open the app, then time ``warmup + moves`` one-step moves of the slider."""
    with running_app(sc.script, LOG_DIR / f"app_latency_{sc.name}.log") as url:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(timeout_ms)
        try:
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(url + sc.path)
            thumb = page.locator(sc.thumb)
            thumb.wait_for(state="attached", timeout=timeout_ms)
            page.wait_for_function(IDLE_JS, timeout=timeout_ms)
            if sc.prepare is not None:
                sc.prepare(page, sc, timeout_ms)
                thumb.wait_for(state="attached", timeout=timeout_ms)
            sc.info["first_load_s"] = round(time.perf_counter() - t0, 1)
            page.wait_for_selector(sc.dependent, state="attached", timeout=timeout_ms)
            value = float(thumb.get_attribute("value"))
            for i in range(sc.warmup + sc.moves):
                value = round(value + 0.01, 2)
                page.evaluate(RECORDER_JS, [sc.dependent, sc.text(value)])
                thumb.focus()
                page.keyboard.press("ArrowRight")
                page.wait_for_function("() => window.__lat.done > 0", timeout=timeout_ms,
                                       polling=20)
                lat = page.evaluate("() => window.__lat")
                sample = {"value": value, "ms": lat["done"] - lat["t0"],
                          "chart_ms": lat["chart"] - lat["t0"],
                          "run_start_ms": _since(lat["run"], lat["t0"]),
                          "run_end_ms": _since(lat["runEnd"], lat["t0"]),
                          "warmup": i < sc.warmup}
                sc.samples.append(sample)
                print(f"  {sc.name}: -> {value:.2f}  {sample['ms']:8.1f} ms"
                      f"{'  (warm-up)' if sample['warmup'] else ''}", flush=True)
                page.wait_for_timeout(SETTLE_MS)
                page.wait_for_function(IDLE_JS, timeout=timeout_ms)
            if sc.burst:
                sc.info["burst_ms"] = _burst(page, sc, thumb, value, timeout_ms)
        finally:
            context.close()


def _burst(page, sc: Scenario, thumb, value: float, timeout_ms: int) -> list[float]:
    """Ten quick ArrowRight presses (``BURST_GAP_MS`` apart), three times: the time from the
    last press until the chart shows the final value and the run has finished."""
    out = []
    for _ in range(3):
        final = round(value + 0.01 * BURST_PRESSES, 2)
        thumb.focus()
        for i in range(BURST_PRESSES):
            if i == BURST_PRESSES - 1:  # time from the last press
                page.evaluate(RECORDER_JS, [sc.dependent, sc.text(final)])
            page.keyboard.press("ArrowRight")
            if i < BURST_PRESSES - 1:
                page.wait_for_timeout(BURST_GAP_MS)
        page.wait_for_function("() => window.__lat.done > 0", timeout=timeout_ms, polling=20)
        lat = page.evaluate("() => window.__lat")
        out.append(round(lat["done"] - lat["t0"], 1))
        print(f"  {sc.name}: burst of {BURST_PRESSES} -> {final:.2f}  {out[-1]:8.1f} ms after "
              f"the last press", flush=True)
        value = final
        page.wait_for_timeout(SETTLE_MS)
        page.wait_for_function(IDLE_JS, timeout=timeout_ms)
    return out


def _since(t, t0) -> float | None:
    return None if t is None else t - t0


def summary(sc: Scenario) -> dict:
    ms = sorted(s["ms"] for s in sc.samples if not s["warmup"])
    chart = sorted(s["chart_ms"] for s in sc.samples if not s["warmup"])
    timed = [s for s in sc.samples if not s["warmup"]]
    phases = {k: statistics.median(v) if (v := [s[k] for s in timed if s[k] is not None])
              else None for k in ("run_start_ms", "run_end_ms")}
    return {"scenario": sc.name, "title": sc.title, "moves": len(ms), **phases,
            "median_ms": statistics.median(ms), "p90_ms": _quantile(ms, 0.9),
            "chart_median_ms": statistics.median(chart), "min_ms": ms[0], "max_ms": ms[-1],
            "info": sc.info, "samples": sc.samples}


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of sorted values."""
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


# ------------------------------------------------------------------------------ profile
def profile_gate(changes: int = 5, top: int = 25, *, files: tuple[Path, Path] | None = None,
                 label: str = "demo") -> str:
    """cProfile of Gate-page reruns in AppTest for ``changes`` new τ_neg values.

    AppTest runs the script in its own thread, so the profiler is switched on inside
    Streamlit's ``ScriptRunner._run_script`` (patched for the duration of the profile).
    ``files`` (queries, candidates): evaluate these instead of the demo, loaded the way the
    app loads an upload (``dashboard.data.load_upload``) and put in the session state.
    """
    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    # Loading the upload outside a script run makes Streamlit note the missing run context.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").setLevel(
        logging.ERROR)
    profiler = cProfile.Profile()
    active = False
    original = script_runner.ScriptRunner._run_script

    def run_script(self, rerun_data):
        if not active:
            return original(self, rerun_data)
        profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            profiler.disable()

    script_runner.ScriptRunner._run_script = run_script
    try:
        at = AppTest.from_file(str(ROOT / "dashboard" / "app.py"), default_timeout=1800)
        if files is not None:
            from dashboard import data

            q_path, c_path = files
            at.session_state["_source"] = data.load_upload(data.Upload(
                q_path.name, q_path.read_bytes(), c_path.name, c_path.read_bytes()))
        at.run()
        at.switch_page("app_pages/gate.py").run()
        lo, hi = at.slider(key="gate").value
        at.slider(key="gate").set_value((round(lo + 0.01, 2), hi)).run()  # warm-up
        walls = []
        for i in range(changes):
            at.slider(key="gate").set_value((round(lo + 0.02 + 0.01 * i, 2), hi))
            active = True
            t0 = time.perf_counter()
            at.run()
            walls.append((time.perf_counter() - t0) * 1000)
            active = False
            if at.exception:
                raise RuntimeError(f"the Gate page failed: {at.exception[0].value}")
    finally:
        script_runner.ScriptRunner._run_script = original
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"(dashboard|metrics_core)/", top)
    project = out.getvalue()
    out.seek(0)
    out.truncate()
    stats.sort_stats("tottime").print_stats(15)
    internal = out.getvalue()
    head = (f"AppTest Gate page ({label}), {changes} new τ_neg values: rerun wall time median "
            f"{statistics.median(walls):.0f} ms (each: {', '.join(f'{w:.0f}' for w in walls)}, "
            f"under cProfile). Seconds are totals over the {changes} reruns, except for "
            "dashboard/app.py and the page file, which run as fresh code each rerun and show "
            "one rerun.\n")

    def table(text: str) -> str:
        return text[text.find("   ncalls"):].rstrip().replace(str(ROOT) + "/", "").replace(
            str(Path(sys.prefix)), "<prefix>")

    return (head + "\nProject functions by cumulative time:\n" + table(project)
            + "\n\nAll functions by own time:\n" + table(internal) + "\n")


# ------------------------------------------------------------------------------ report
def markdown(rows: list[dict], meta: dict, profile: str | None) -> str:
    bare = next((r for r in rows if r["scenario"] == "bare"), None)
    lines = [
        "# Dashboard slider latency (headless Chromium)",
        "",
        f"Measured {meta['date']} on {meta['machine']}; Streamlit {meta['streamlit']}, "
        f"Playwright {meta['playwright']}, {meta['chromium']}; load average "
        f"{meta['load_average']} at the start (other processes share the CPUs). Generated by "
        f"`{meta['command']}`.",
        "",
        "Latency: from the ArrowRight key press on the slider thumb to the first frame after "
        "the dependent chart shows the new value and Streamlit's run has finished. "
        "The phases (medians, ms after the key press): the script run starts / ends "
        "(Streamlit's script state in the page) and the chart shows the new value. One step "
        "per move, always to a new value; warm-up moves dropped.",
        "",
        "| scenario | moves | median ms | p90 ms | ratio to bare (median) | run starts | "
        "chart shows | run ends |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = "1.00" if r is bare else (
            f"{r['median_ms'] / bare['median_ms']:.2f}" if bare else "n/a")
        lines.append(f"| {r['title']} | {r['moves']} | {r['median_ms']:.0f} | "
                     f"{r['p90_ms']:.0f} | {ratio} | {_ms(r['run_start_ms'])} | "
                     f"{r['chart_median_ms']:.0f} | {_ms(r['run_end_ms'])} |")
    demo = next((r for r in rows if r["scenario"] == "demo"), None)
    if bare and demo:
        ratio = demo["median_ms"] / bare["median_ms"]
        lines += ["", f"Target: demo within 1.5x of the bare app: **{ratio:.2f}x, "
                      f"{'met' if ratio <= 1.5 else 'not met'}**."]
    big = next((r for r in rows if r["scenario"] == "1m"), None)
    if big:
        upload = big["info"].get("upload_s", 0) + big["info"].get("load_and_overview_s", 0)
        lines += ["", f"1,000,000 queries: a move takes {big['median_ms']:.0f} ms (target ≤ 1 s: "
                      f"{'met' if big['median_ms'] <= 1000 else 'not met'}); the upload and "
                      f"load to the first page {upload:.1f} s (target ≤ 6 s: "
                      f"{'met' if upload <= 6 else 'not met'})."]
    if demo and demo["info"].get("burst_ms"):
        burst = statistics.median(demo["info"]["burst_ms"])
        ratio = burst / demo["median_ms"]
        lines += ["", f"Rapid moves ({BURST_PRESSES} ArrowRight presses {BURST_GAP_MS} ms apart, "
                      f"3 bursts): the view settles {burst:.0f} ms after the last press "
                      f"(median), {ratio:.2f}x the single-move latency (target ≤ 1.5x: "
                      f"{'met' if ratio <= 1.5 else 'not met'})."]
    if bare and demo:
        shown = demo["chart_median_ms"] / bare["median_ms"]
        later = statistics.median(s["ms"] - s["chart_ms"] for s in demo["samples"]
                                  if not s["warmup"])
        lines += ["", "Intervals are on by default: the values of a move and their intervals "
                      "(the configured 10,000 resamples, computed at once when only the "
                      "setting's own intervals are left) are drawn by one run. The values "
                      f"show after {demo['chart_median_ms']:.0f} ms: **{shown:.2f}x the bare "
                      f"app's move (target ≤ 1.5x: {'met' if shown <= 1.5 else 'not met'})**; "
                      f"the view has its intervals and its run has ended {later:.0f} ms later "
                      f"(median; target ≤ 2 s: {'met' if later <= 2000 else 'not met'})."]
    off = next((r for r in rows if r["scenario"] == "demo_no_ci"), None)
    if demo and off:
        ratio = demo["median_ms"] / off["median_ms"]
        lines += ["", f"What the intervals cost a move: {demo['median_ms']:.0f} ms with them "
                      f"against {off['median_ms']:.0f} ms with intervals switched off "
                      f"(`?ci=0`): {ratio:.2f}x (target ≤ 2x: "
                      f"{'met' if ratio <= 2 else 'not met'})."]
    for r in rows:
        if r["info"]:
            lines += ["", f"{r['title']}: " + ", ".join(f"{k} = {v}"
                                                        for k, v in r["info"].items()) + "."]
    for note in meta.get("notes", []):
        lines += ["", note]
    if profile:
        lines += ["", "## Where a Gate-page rerun spends its time", "", "```", profile.rstrip(),
                  "```"]
    return "\n".join(lines) + "\n"


def _ms(value) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def _meta(argv: list[str]) -> dict:
    try:
        chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip().splitlines()[-1]
    except (OSError, subprocess.SubprocessError, IndexError):
        chromium = "chromium (version unknown)"
    return {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                       f"{platform.python_version()}",
            "streamlit": metadata.version("streamlit"),
            "playwright": metadata.version("playwright"), "chromium": chromium,
            "load_average": ", ".join(f"{x:.1f}" for x in os.getloadavg()),
            "command": " ".join(["python benchmarks/bench_app_latency.py", *argv]),
            "notes": []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="5 timed moves per scenario (default 15), 1 warm-up (default 3)")
    parser.add_argument("--skip-1m", action="store_true",
                        help="leave out the 1,000,000-query scenario")
    parser.add_argument("--profile", action="store_true",
                        help="also profile Gate-page reruns (AppTest + cProfile)")
    parser.add_argument("--only", choices=("bare", "demo", "demo_no_ci", "1m"),
                        action="append",
                        help="run only this scenario (repeatable)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        parser.error(f"needs Debian's chromium at {CHROMIUM}")
    moves, warmup = (5, 1) if args.quick else (15, 3)
    scenarios = [bare_scenario(moves, warmup),
                 gate_scenario("demo", "dashboard Gate page, demo (14,770 queries), with its "
                               "intervals (the default)", moves, warmup),
                 gate_scenario("demo_no_ci", "dashboard Gate page, demo, intervals switched "
                               "off", moves, warmup, query="?ci=0")]
    if not args.skip_1m or (args.only and "1m" in args.only):
        scenarios.append(gate_scenario("1m", "dashboard Gate page, 1,000,000 queries (upload)",
                                       max(3, moves // 3), 1, prepare=upload_1m))
    if args.only:
        scenarios = [sc for sc in scenarios if sc.name in args.only]
    meta = _meta(argv)
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for sc in scenarios:
                print(f"{sc.title}:", flush=True)
                timeout_ms = 1_800_000 if sc.name == "1m" else 120_000
                try:
                    run_scenario(browser, sc, timeout_ms=timeout_ms)
                except Exception as exc:  # report what was measured; say what failed
                    meta["notes"].append(f"{sc.title}: not measured ({type(exc).__name__}: "
                                         f"{str(exc).splitlines()[0][:200]}).")
                    print(meta["notes"][-1], flush=True)
                    continue
                rows.append(summary(sc))
        finally:
            browser.close()
    profile = None
    if args.profile:
        profile = profile_gate()
        if any(sc.name == "1m" for sc in scenarios):
            profile += "\n" + profile_gate(3, files=data_1m(), label="1,000,000 queries")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    text = markdown(rows, meta, profile)
    (RESULTS_DIR / "app_latency.md").write_text(text)
    (RESULTS_DIR / "app_latency.json").write_text(
        json.dumps({"meta": meta, "results": rows, "profile": profile}, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
