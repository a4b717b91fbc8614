"""The Cohorts page in headless Chromium: an upload whose queries table carries cohort columns
(site, with a planted disparity, and sex), chosen on the Data & audit page, then shown on the
Cohorts page with the disparity flagged; the choice in the page address, restored by opening
it in a new session; a posts table uploaded on the Data & audit page whose column is chosen and
shown (contract §9, cohorts)."""

from __future__ import annotations

import json
from pathlib import Path

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
    query,
    screenshot,
    upload_files,
    wait_idle,
    wait_page,
)


def _files(tmp_path, *, posts_table: bool = False):
    """Queries (with site and sex, or, with ``posts_table``, without them: site goes to a
    posts table keyed by post_id, as region) and candidates, as CSV."""
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
    candidates.to_csv(c_path, index=False)
    if posts_table:
        table = queries[["post_id", "site"]].drop_duplicates().rename(columns={"site": "region"})
        table.to_csv(tmp_path / "posts.csv", index=False)
        queries = queries.drop(columns=["site", "sex"])
    queries.to_csv(q_path, index=False)
    return q_path, c_path


def _choose(page, columns) -> None:
    """Choose cohort columns on the Data & audit page (typed, then the option of that exact
    name clicked: typing "site" also lists "site*sex")."""
    choose = page.locator(".st-key-cohort_columns input")
    for column in columns:
        choose.click()
        choose.fill(column)
        page.get_by_role("option", name=column, exact=True).click()
        wait_idle(page)
    page.keyboard.press("Escape")


def _uploaded(page, q_path, c_path):
    """``page`` with the two files uploaded and loaded, on the Data & audit page."""
    wait_page(page, "Overview")
    upload_files(page, q_path, c_path)
    page.locator(".st-key-load_upload button").click()
    expect(page.get_by_text("Data: Uploaded data: queries.csv, candidates.csv")
           ).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    go_to(page, "Data & audit", "Data & audit")
    return page


def test_cohorts_of_an_upload_with_cohort_columns(new_page, app_url, tmp_path):  # noqa: F811
    q_path, c_path = _files(tmp_path)
    page = _uploaded(new_page(app_url), q_path, c_path)
    _choose(page, ("site", "sex"))
    go_to(page, "Cohorts", "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".st-key-cohort_table")).to_be_visible()
    expect(page.locator(".st-key-weak_segments_table")).to_be_visible()
    flagged = page.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
    expect(flagged).to_be_visible()
    expect(flagged).to_contain_text("site = west")
    assert_no_failure(page)
    screenshot(page, "cohorts_upload")


def test_the_cohort_columns_are_in_the_address_and_a_new_session_restores_them(
        new_page, app_url):  # noqa: F811
    """On the demo (few resamples: the link sets them): a column and an intersection chosen,
    the address carries both, and a new session opened at that address shows the same
    Cohorts page, the same choice on the Data & audit page."""
    page = new_page(app_url + "/data?bootstrap=400")
    wait_page(page, "Data & audit")
    _choose(page, ("site", "site*sex"))
    go_to(page, "Cohorts", "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    flagged = page.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
    expect(flagged).to_contain_text("site = site_E")
    wait_idle(page)
    assert query(page)["cohort_columns"] == ["site", "site*sex"]
    table = page.locator(".st-key-cohort_table")
    shown = table.inner_text()
    again = new_page(page.url)
    wait_page(again, "Cohorts")
    expect(again.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    expect(again.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
           ).to_contain_text("site = site_E")
    assert again.locator(".st-key-cohort_table").inner_text() == shown
    go_to(again, "Data & audit", "Data & audit")
    chosen = again.locator(".st-key-cohort_columns")
    expect(chosen).to_contain_text("site*sex")
    assert_no_failure(again)


def test_a_posts_table_uploaded_on_the_data_page_gives_cohorts(
        new_page, app_url, tmp_path):  # noqa: F811
    """Queries without cohort columns, then a posts table (post_id, region) on the Data &
    audit page: region is offered, chosen, and the Cohorts page flags the planted disparity."""
    q_path, c_path = _files(tmp_path, posts_table=True)
    page = _uploaded(new_page(app_url), q_path, c_path)
    expect(page.get_by_text("add a posts table below")).to_be_visible()
    page.get_by_test_id("stExpander").filter(has_text="Posts table (optional)").locator(
        "summary").click()
    page.locator(".st-key-upload_posts input[type=file]").set_input_files(tmp_path / "posts.csv")
    expect(page.locator('.st-key-upload_posts [aria-label="Remove posts.csv"]')).to_be_visible()
    wait_idle(page)
    page.locator(".st-key-load_posts button").click()
    expect(page.get_by_text("In use: posts.csv")).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    _choose(page, ("region",))
    go_to(page, "Cohorts", "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator(".st-key-cohort_table")).to_be_visible()
    flagged = page.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
    expect(flagged).to_contain_text("region = west")
    assert_no_failure(page)
    screenshot(page, "cohorts_posts_table")


def test_cohort_columns_chosen_on_the_cohorts_page_reach_every_page_and_the_documents(
        new_page, app_url):  # noqa: F811
    """On the demo (few resamples: the link sets them): the Cohorts page's own chooser names
    the data's columns; site chosen there shows site_E flagged, stays chosen on the Gate page,
    is in the metrics_master.json downloaded there (the cohorts table, site_E flagged) and in
    the address, and a reload of the page shows the same choice and table."""
    page = new_page(app_url + "/cohorts?bootstrap=400")
    wait_page(page, "Cohorts")
    expect(page.get_by_text("Choose cohort columns above")).to_be_visible(timeout=TIMEOUT_MS)
    _choose(page, ("site",))
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stAlert").filter(has_text="disparity(ies) flagged")
           ).to_contain_text("site = site_E")
    wait_idle(page)
    shown = page.locator(".st-key-cohort_table").inner_text()
    assert query(page)["cohort_columns"] == ["site"]
    go_to(page, "Gate & thresholds", "Gate & thresholds")
    wait_idle(page)
    assert query(page)["cohort_columns"] == ["site"]
    with page.expect_download(timeout=TIMEOUT_MS) as download:
        page.get_by_role("button", name="metrics_master.json").click()
    master = json.loads(Path(download.value.path()).read_text())
    rows = master["cohorts"]
    assert {r["column"] for r in rows} == {"site"}
    assert any(r["value"] == "site_E" and r["flagged"] for r in rows)
    go_to(page, "Cohorts", "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    page.reload()
    wait_page(page, "Cohorts")
    expect(page.locator(".st-key-cohort_forest")).to_be_visible(timeout=TIMEOUT_MS)
    wait_idle(page)
    expect(page.locator(".st-key-cohort_columns")).to_contain_text("site")
    assert page.locator(".st-key-cohort_table").inner_text() == shown
    assert_no_failure(page)
    screenshot(page, "cohorts_chosen_on_the_page")


def test_the_sidebar_filter_offers_the_cohorts_of_the_chosen_bins(
        new_page, app_url, tmp_path):  # noqa: F811
    """Queries with a numeric age: chosen on the Data & audit page with bins 40,65, the
    sidebar's cohort filter offers ``age = [40, 65)`` (not a quartile), and choosing it shows
    the cohort's queries (counted here with pandas) with its bins in the Evaluated line and
    the address (contract §9, cohort filter)."""
    queries, candidates = make_synthetic(120, n_criteria=4, seed=7, with_text=False)
    posts = queries["post_id"].unique()
    age = dict(zip(posts, np.random.default_rng(3).integers(18, 78, posts.size), strict=True))
    queries["age"] = queries["post_id"].map(age)
    q_path, c_path = tmp_path / "queries.csv", tmp_path / "candidates.csv"
    queries.to_csv(q_path, index=False)
    candidates.to_csv(c_path, index=False)
    n = int(queries["age"].between(40, 65, inclusive="left").sum())
    page = _uploaded(new_page(app_url), q_path, c_path)
    _choose(page, ("age",))
    bins = page.locator(".st-key-cohort_bins_age input")
    bins.fill("40,65")
    bins.press("Enter")
    wait_idle(page)
    page.locator(".st-key-settings_section_filters summary").click()
    wait_idle(page)
    pick = page.locator(".st-key-cohort input")
    pick.click()
    options = page.get_by_role("option")
    expect(options.filter(has_text="age = [40, 65)")).to_have_count(1)
    assert options.filter(has_text="age = [").count() == 1  # the chosen bins', no quartile
    options.filter(has_text="age = [40, 65)").click()
    wait_idle(page)
    page.keyboard.press("Escape")
    go_to(page, "Overview", "Overview")
    expect(page.get_by_text("Evaluated: cohort age = [40, 65) (age binned 40,65)")
           ).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stMain")).to_contain_text(f"{n:,} queries")
    assert query(page)["cohort_bins"] == ["age=40,65"]
    assert query(page)["cohort"] == ["age=[40, 65)"]
    assert_no_failure(page)
    screenshot(page, "cohort_filter_bins")
