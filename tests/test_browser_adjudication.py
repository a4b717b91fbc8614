"""Case review in headless Chromium (the issue's check): three cases marked with the keyboard
(the verdict chosen with Space and the arrow keys, the reviewer typed, Tab to the note, Enter
saves and moves on), the adjudication file downloaded, the app reloaded (a new session: no
verdict), the file uploaded: the same verdicts and the adjudicated numbers, the library's.
Then the Gold labels switch: every page says it, and the sidebar's metrics_master.json is the
document ``metrics-core evaluate --adjudications`` writes for the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dashboard import display, state
from metrics_core import registry
from metrics_core.cli import main
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

#: The verdicts given to the first three missed positives, in order (keyboard: Space picks the
#: first verdict, each ArrowRight the next one).
MARKS = ("label_error", "model_error", "ambiguous")
RESAMPLES = 300


@pytest.fixture(scope="module")
def expected():
    """The first three missed positives and the sensitivity line once they have MARKS."""
    paths = demo_paths()
    run = open_run(paths.queries, paths.candidates)
    cfg = EvalConfig(bootstrap=0)
    cases = run.evaluator.case_review(cfg)["missed_positives"].head(3)
    adj = adjudications_of(pd.DataFrame({
        "post_id": list(cases["post_id"]), "criterion": list(cases["criterion"]),
        "verdict": list(MARKS), "corrected_has_evidence": ["0", "", ""]}).astype(object),
        run.dataset)
    result = evaluate_adjudicated(run.evaluator, adj, cfg)
    name = "sensitivity"
    change = (f"{registry.label(name)} "
              f"{display.fmt_metric(name, result.original.record(name).value)} → "
              f"{display.fmt_metric(name, result.adjudicated.record(name).value)}")
    return cases, change


def mark_with_the_keyboard(page, verdict_index: int, note: str) -> None:
    page.locator(".st-key-verdict_choice input[type=radio]").first.focus()
    page.keyboard.press("Space")
    for _ in range(verdict_index):
        page.keyboard.press("ArrowRight")
    reviewer = page.locator(f".st-key-{state.VERDICT_REVIEWER} input")
    reviewer.focus()
    if reviewer.input_value() != "Dr K":  # kept from the case before
        page.keyboard.type("Dr K")
    page.keyboard.press("Tab")
    page.keyboard.type(note)
    page.keyboard.press("Enter")
    wait_idle(page)


def test_three_cases_marked_with_the_keyboard_survive_a_reload_through_the_file(
        new_page, app_url, expected, tmp_path):  # noqa: F811
    cases, change = expected
    page = new_page(f"{app_url}/case-review?bootstrap={RESAMPLES}")
    wait_page(page, "Case review")
    for i in range(len(MARKS)):
        mark_with_the_keyboard(page, i, f"case {i + 1}")
        expect(page.get_by_text(f"{i + 1} verdict{'s' if i else ''} in this session, kept",
                                exact=False)).to_be_visible()
    expect(page.locator(".st-key-adjudicated_changes")).to_contain_text(change)
    assert_no_failure(page)
    with page.expect_download() as download:
        page.locator(f".st-key-{state.ADJ_DOWNLOAD} button").click()
    saved = tmp_path / "adjudications.csv"
    download.value.save_as(saved)
    frame = pd.read_csv(saved, dtype=str, keep_default_na=False)
    assert frame[["post_id", "criterion", "verdict", "corrected_has_evidence", "reviewer",
                  "note"]].values.tolist() == [
        [p, c, v, "0" if v == "label_error" else "", "Dr K", f"case {i + 1}"]
        for i, (p, c, v) in enumerate(zip(cases["post_id"], cases["criterion"], MARKS,
                                          strict=True))]
    # A reload is a new session: nothing is kept on the server.
    page.reload()
    wait_page(page, "Case review")
    expect(page.get_by_text("No verdict yet: the numbers are those of the original gold.")
           ).to_be_visible()
    page.locator(f".st-key-{state.ADJ_UPLOAD} input[type=file]").set_input_files(saved)
    expect(page.get_by_text("Read 3 verdicts from the file.")).to_be_visible()
    expect(page.get_by_text("(3 with a verdict)", exact=False)).to_be_visible()
    expect(page.get_by_text("This query's verdict: Label error by Dr K.")).to_be_visible()
    expect(page.locator(".st-key-adjudicated_changes")).to_contain_text(change)
    assert_no_failure(page)

    # The Gold labels switch: the header says it, the link carries it, the Overview sets both
    # labelings side by side, and the downloaded document is the CLI's for the same file.
    page.locator(".st-key-gold").get_by_text("Adjudicated gold", exact=True).click()
    wait_idle(page)
    header = "Gold labels: adjudicated (3 verdicts, 1 label corrected)"
    expect(page.locator(".st-key-gold_header")).to_contain_text(header)
    assert "gold=adjudicated" in page.url
    go_to(page, "Overview", "Overview")
    expect(page.locator(".st-key-gold_header")).to_contain_text(header)
    expect(page.locator(".st-key-overview_gold_changes")).to_contain_text(change)
    wait_idle(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="metrics_master.json").click()
    master = json.loads(Path(download.value.path()).read_text())
    assert_no_failure(page)
    out = tmp_path / "cli.json"
    assert main(["evaluate", str(demo_paths().queries), str(demo_paths().candidates),
                 "--out", str(out), "--bootstrap", str(master["config"]["bootstrap"]),
                 "--adjudications", str(saved), "--quiet"]) == 0
    cli = json.loads(out.read_text())
    assert master["config"]["bootstrap"] == RESAMPLES
    assert master["metrics"] == cli["metrics"]  # the original numbers, unchanged
    assert master["adjudication"]["metrics"] == cli["adjudication"]["metrics"]
    assert master["adjudication"]["differences"] == cli["adjudication"]["differences"]
