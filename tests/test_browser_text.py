"""Names from the data as Chromium draws them: a quote in a run name is a quote in the chart
(not ``&quot;``), and a right-to-left override is a visible code that reverses nothing (issue:
hostile names). The app runs as in tests/test_browser.py."""

from __future__ import annotations

import pytest

from tests.test_browser import (  # noqa: F401 (fixtures)
    CHROMIUM,
    TIMEOUT_MS,
    app_url,
    assert_no_failure,
    browser,
    expect,
    new_page,
    wait_idle,
)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium")]

RLO = "\u202e"


def test_run_names_are_drawn_as_written(new_page, app_url, tmp_path):  # noqa: F811
    import pandas as pd

    from metrics_core.demo import make_runs

    # One table with a run column (a browser would percent-encode a quote in a file name).
    names = ['base "A" & co', f"new{RLO}gnp"]
    runs = [frame.assign(run=name)
            for name, frame in zip(names, make_runs(80, seed=2).values(), strict=True)]
    paths = tmp_path / "runs.parquet"
    pd.concat(runs, ignore_index=True).to_parquet(paths)
    page = new_page(app_url + "/compare")
    expect(page.locator("h1").filter(has_text="Compare runs")).to_be_visible(
        timeout=TIMEOUT_MS)
    wait_idle(page)
    page.locator(".st-key-compare_files input[type=file]").set_input_files(paths)
    expect(page.locator(".st-key-ablation_table")).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    # The chart is drawn after the table (a loaded machine: seconds later): wait for it.
    legend_text = page.locator(".st-key-compare_roc_chart .legendtext")
    expect(legend_text.first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".st-key-forest_1 .gtitle")).to_be_visible(timeout=TIMEOUT_MS)
    assert_no_failure(page)
    legend = legend_text.all_text_contents()
    assert any(t.startswith('base "A" & co') for t in legend), legend  # before: &quot;
    assert any(t.startswith("new[U+202E]gnp") for t in legend), legend
    title = page.locator(".st-key-forest_1 .gtitle").text_content()
    assert title == 'AUROC difference by criterion: new[U+202E]gnp − base "A" & co'
    shown = page.get_by_test_id("stMain").inner_text()
    assert RLO not in shown and "&quot;" not in shown
