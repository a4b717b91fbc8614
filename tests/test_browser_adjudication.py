"""Case review in headless Chromium: a case marked with the keyboard (a verdict, a note, Enter)
changes the numbers on the adjudicated gold to the library's; the adjudication file downloaded
and uploaded in a new session gives the same verdict and numbers."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard import display, state
from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.evaluation.adjudicated import evaluate_adjudicated
from metrics_core.inputs.adjudications import adjudications_of
from metrics_core.run import open_run
from tests.test_browser import (  # noqa: F401 (fixtures)
    app_url,
    assert_no_failure,
    browser,
    expect,
    go_to,
    new_page,
    pytestmark,
    wait_idle,
    wait_page,
)


@pytest.fixture(scope="module")
def expected_change():
    """Sensitivity before and after the first missed positive is made a label error."""
    paths = demo_paths()
    run = open_run(paths.queries, paths.candidates)
    cfg = EvalConfig(bootstrap=0)
    first = run.evaluator.case_review(cfg)["missed_positives"].iloc[0]
    adj = adjudications_of(pd.DataFrame({
        "post_id": [first["post_id"]], "criterion": [first["criterion"]],
        "verdict": ["label_error"], "corrected_has_evidence": ["0"]}), run.dataset)
    result = evaluate_adjudicated(run.evaluator, adj, cfg)
    name = "sensitivity"
    return (f"{registry.label(name)} "
            f"{display.fmt_metric(name, result.original.record(name).value)} → "
            f"{display.fmt_metric(name, result.adjudicated.record(name).value)}")


def test_a_case_marked_with_the_keyboard_changes_the_adjudicated_numbers(
        new_page, app_url, expected_change, tmp_path):  # noqa: F811
    page = new_page(app_url)
    wait_page(page, "Overview")
    go_to(page, "Case review", "Case review")
    page.locator(".st-key-verdict_choice").get_by_text("Label error").click()
    note = page.locator(".st-key-verdict_note input")
    note.fill("no evidence in this post")
    note.press("Enter")
    wait_idle(page)
    expect(page.locator(".st-key-adjudicated_changes")).to_contain_text(expected_change)
    expect(page.get_by_text("1 verdict in this session", exact=False)).to_be_visible()
    assert_no_failure(page)
    # The file downloaded, then uploaded in a new session: the same verdict, the same numbers.
    with page.expect_download() as download:
        page.locator(f".st-key-{state.ADJ_DOWNLOAD} button").click()
    saved = tmp_path / "adjudications.csv"
    download.value.save_as(saved)
    assert saved.read_text().splitlines()[1].split(",")[3:5] == ["label_error", "0"]
    again = new_page(app_url)
    wait_page(again, "Overview")
    go_to(again, "Case review", "Case review")
    again.locator(f".st-key-{state.ADJ_UPLOAD} input[type=file]").set_input_files(saved)
    expect(again.get_by_text("Read 1 verdicts from the file.")).to_be_visible()
    expect(again.locator(".st-key-adjudicated_changes")).to_contain_text(expected_change)
    assert_no_failure(again)
