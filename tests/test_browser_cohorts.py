"""The Cohorts page in headless Chromium: an upload whose queries table carries cohort columns
(site, with a planted disparity, and sex), chosen on the Data & audit page, then shown on the
Cohorts page with the disparity flagged (contract §9, cohorts)."""

from __future__ import annotations

import numpy as np

from metrics_core.demo import make_synthetic
from tests.test_browser import (  # noqa: F401  (fixtures)
    TIMEOUT_MS,
    app_url,
    assert_no_failure,
    browser,
    expect,
    go_to,
    new_page,
    pytestmark,
    screenshot,
    upload_files,
    wait_idle,
    wait_page,
)


def _files(tmp_path):
    queries, candidates = make_synthetic(150, n_criteria=4, seed=3)
    rng = np.random.default_rng(1)
    posts = queries["post_id"].unique()
    site = dict(zip(posts, rng.choice(["north", "south", "west"], posts.size), strict=True))
    sex = dict(zip(posts, rng.choice(["F", "M"], posts.size), strict=True))
    queries["site"] = queries["post_id"].map(site)
    queries["sex"] = queries["post_id"].map(sex)
    west = queries["site"] == "west"  # a worse model at one site
    queries.loc[west, "p_has_evidence"] = (0.2 * queries.loc[west, "p_has_evidence"]
                                           + 0.8 * rng.random(int(west.sum()))).round(6)
    q_path, c_path = tmp_path / "queries.csv", tmp_path / "candidates.csv"
    queries.to_csv(q_path, index=False)
    candidates.to_csv(c_path, index=False)
    return q_path, c_path


def test_cohorts_of_an_upload_with_cohort_columns(new_page, app_url, tmp_path):  # noqa: F811
    q_path, c_path = _files(tmp_path)
    page = new_page(app_url)
    wait_page(page, "Overview")
    upload_files(page, q_path, c_path)
    page.locator(".st-key-load_upload button").click()
    expect(page.get_by_text("Data: Uploaded data: queries.csv, candidates.csv")
           ).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    go_to(page, "Data & audit", "Data & audit")
    choose = page.locator(".st-key-cohort_columns input")
    for column in ("site", "sex"):
        choose.click()
        choose.fill(column)
        choose.press("Enter")
        wait_idle(page)
    page.keyboard.press("Escape")
    go_to(page, "Cohorts", "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".st-key-cohort_table")).to_be_visible()
    expect(page.locator(".st-key-weak_segments_table")).to_be_visible()
    flagged = page.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
    expect(flagged).to_be_visible()
    expect(flagged).to_contain_text("site = west")
    assert_no_failure(page)
    screenshot(page, "cohorts_upload")
